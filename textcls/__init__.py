"""textcls: small interpretable text classifiers and the library behind the dashboard.

Public contract (see docs/architecture.md): list_models, create_model, ClassifierOutput, MapSpec,
load_checkpoint, Predictor, Prediction; data: load_data, list_datasets; training: fit, TrainSpec, run_training /
train_from_spec; a notebook's figures and numbers: paper_figures, explanation_figure, evaluate_slice
(docs/notebook.md).

The public names are resolved lazily (PEP 562): `import textcls` does not import torch, so torch-free code
(listing checkpoints, the dashboard's Home page) starts fast. The first access to a name imports its module.
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> submodule that defines it
_LAZY = {
    **dict.fromkeys(("AXES", "KINDS", "ClassifierOutput", "MapSpec"), "models.outputs"),
    **dict.fromkeys(("create_model", "get_entry", "list_models", "make_config", "register_model"), "models.registry"),
    **dict.fromkeys(("CheckpointError", "CheckpointInfo", "list_checkpoints", "load_checkpoint", "save_checkpoint"),
                    "checkpoint"),
    **dict.fromkeys(("Prediction", "Predictor"), "inference"),
    **dict.fromkeys(("classification_report", "evaluate"), "analysis.metrics"),
    **dict.fromkeys(("EpochEvent", "EpochRecord", "History", "StepEvent"), "records"),
    **dict.fromkeys(("TrainConfig",), "train.config"),
    **dict.fromkeys(("fit",), "train.fit"),
    **dict.fromkeys(("TrainSpec", "run_training", "train_from_spec"), "train.pipeline"),
    **dict.fromkeys(("DataBundle", "Split", "list_datasets", "load_data"), "data.datasets"),
    **dict.fromkeys(("explanation_figure", "paper_figures"), "viz.notebook"),
    **dict.fromkeys(("evaluate_slice",), "interpret.batched"),
}

__all__ = ["AXES", "KINDS", "ClassifierOutput", "MapSpec", "create_model", "get_entry", "list_models",
           "make_config", "register_model", "__version__",
           "CheckpointError", "CheckpointInfo", "list_checkpoints", "load_checkpoint", "save_checkpoint",
           "Prediction", "Predictor", "classification_report", "evaluate",
           "EpochEvent", "EpochRecord", "History", "StepEvent", "TrainConfig", "TrainSpec", "fit", "run_training",
           "train_from_spec", "DataBundle", "Split", "list_datasets", "load_data", "explanation_figure",
           "paper_figures", "evaluate_slice"]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # cache: later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
