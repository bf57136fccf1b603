"""The model work of the app in a process of its own: `client.ModelWorker` (the server's side: start, call,
restart, stop; standard library only, never torch) and `worker` (the functions that run in that process: load
checkpoints, bounded least recently used, and answer predictions, maps and the facts pages need about a model).
What crosses the boundary is plain picklable data: `textcls.records.Prediction`, `CheckpointInfo`, `ModelFacts`.
"""
