"""textcls: small interpretable text classifiers and the library behind the dashboard.

Public contract (see docs/architecture.md): list_models, create_model, ClassifierOutput, MapSpec,
load_checkpoint, Predictor, Prediction.
"""
from .outputs import AXES, KINDS, ClassifierOutput, MapSpec
from .registry import create_model, get_entry, list_models, make_config, register_model

__version__ = "0.1.0"

from .checkpoint import CheckpointError, CheckpointInfo, list_checkpoints, load_checkpoint, save_checkpoint  # noqa: E402
from .inference import Prediction, Predictor  # noqa: E402
from .metrics import classification_report, evaluate  # noqa: E402
from .training import EpochEvent, History, StepEvent, TrainConfig, fit, train_from_spec  # noqa: E402

__all__ = ["AXES", "KINDS", "ClassifierOutput", "MapSpec", "create_model", "get_entry", "list_models",
           "make_config", "register_model", "__version__",
           "CheckpointError", "CheckpointInfo", "list_checkpoints", "load_checkpoint", "save_checkpoint",
           "Prediction", "Predictor", "classification_report", "evaluate",
           "EpochEvent", "History", "StepEvent", "TrainConfig", "fit", "train_from_spec"]
