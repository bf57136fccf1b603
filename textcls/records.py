"""What a training run reports, as plain dataclasses with no torch: `StepEvent` after every optimiser step,
`EpochEvent` after every epoch (what callbacks receive), and the run's `History` (saved as history.json)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


@dataclass
class StepEvent:
    epoch: int           # 1-based
    step: int            # optimiser steps done so far (1-based)
    total_steps: int
    loss: float          # this step's training loss (cross-entropy + extra loss)
    lr: float
    elapsed: float       # seconds since fit started


@dataclass
class EpochEvent:
    epoch: int
    epochs: int
    step: int
    total_steps: int
    train_loss: float
    train_accuracy: float
    dev: dict[str, float] | None  # {"accuracy", "macro_f1", "loss"} or None without a dev split
    lr: float
    elapsed: float
    best_epoch: int | None
    improved: bool

    @property
    def dev_accuracy(self) -> float | None:
        return None if self.dev is None else self.dev["accuracy"]


@dataclass
class History:
    epochs: list[dict[str, Any]] = field(default_factory=list)
    step_losses: list[float] = field(default_factory=list)
    best_epoch: int | None = None
    best_dev_accuracy: float | None = None
    stopped_reason: str = ""
    diverged: bool = False
    stopped_by_user: bool = False
    steps: int = 0
    elapsed: float = 0.0
    device: str = "cpu"
    config: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "History":
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})
