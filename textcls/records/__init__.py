"""Plain records with no torch, one module per kind: what a training run reports (`training`: StepEvent,
EpochEvent, EpochRecord, History), what a prediction is (`prediction`: Prediction), and what the app's server
knows of a model it does not load itself (`facts`: ModelFacts, SpecRecord, TextReading). Every name is
re-exported here: `from textcls.records import X` reads any of them."""
from __future__ import annotations

from textcls.records.facts import ModelFacts, SpecRecord, TextReading
from textcls.records.prediction import Prediction
from textcls.records.training import EpochEvent, EpochRecord, History, StepEvent

__all__ = ["EpochEvent", "EpochRecord", "History", "StepEvent", "Prediction", "ModelFacts", "SpecRecord",
           "TextReading"]
