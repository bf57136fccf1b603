"""textcls: small interpretable text classifiers and the library behind the dashboard.

Public contract (see docs/architecture.md): list_models, create_model, ClassifierOutput, MapSpec,
load_checkpoint, Predictor, Prediction.
"""
from .outputs import AXES, KINDS, ClassifierOutput, MapSpec
from .registry import create_model, get_entry, list_models, make_config, register_model

__version__ = "0.1.0"

__all__ = ["AXES", "KINDS", "ClassifierOutput", "MapSpec", "create_model", "get_entry", "list_models",
           "make_config", "register_model", "__version__"]
