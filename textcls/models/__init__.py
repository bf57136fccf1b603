"""The models, one file per family; importing this package enrols every built-in family through its torch-free
config (textcls.models.configs), and a family's model file is imported when its class is first asked for
(`ModelEntry.cls`). Shared blocks are in `layers`, the base class and Probe in `base`; a model file never imports
another model family."""
from textcls.models import configs  # noqa: F401  (enrols every family, without torch)
