"""Teaching: the guided lessons of the Lessons page (content in lessons.py, each kind of step computed and drawn in
steps.py). The Lab's demos are library functions in textcls.interpret.lab."""
