"""The training settings (`TrainConfig`), the optimisers `fit` knows (`OPTIMIZERS`) and the papers' own settings
(`PAPER_TRAINING`), without torch: the Train page's form checks its values here before a run starts (the loop
itself is textcls.train.fit)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from textcls.runtime.limits import check_count


OPTIMIZERS = ("adam", "sgd", "noam", "adadelta")


@dataclass
class TrainConfig:
    epochs: int | float = 10         # a fraction: that share of one epoch's steps (fine-tuning: 0.5)
    batch_size: int = 32
    lr: float = 1e-3
    optimizer: str = "adam"          # adam | sgd | noam | adadelta (Kim 2014: lr 1.0, rho 0.95, eps 1e-6)
    seed: int = 0
    patience: int | None = None      # early stopping: epochs without dev-accuracy improvement; None = off
    restore_best: bool = True        # end with the weights of the best dev epoch
    weight_decay: float = 0.0
    momentum: float = 0.9            # sgd
    betas: tuple[float, float] | None = None  # adam/noam; None: (0.9, 0.999) adam, (0.9, 0.998) noam
    warmup_steps: int | None = None  # noam; None = 10% of the run's steps
    lr_decay: float = 0.9            # multiply the lr by this ...
    lr_decay_patience: int | None = None  # ... after this many epochs without dev improvement (ACT: 10)
    clip_norm: float | None = None   # gradient clipping (max global L2 norm); None = off
    max_norm: float | None = None    # Kim 2014: rescale each class's output weight vector to L2 norm <= this
    max_steps: int | None = None     # stop after this many optimiser steps in all (quick runs)
    bucket: bool = True              # length-bucketed batches
    eval_batch_size: int = 128
    device: str = "auto"             # auto | cpu | cuda | cuda:N | mps
    amp: str | None = None           # mixed precision on CUDA: None/"off" | "auto" | "bf16" | "fp16"
    workers: int | None = None       # batch-padding worker processes; None: 2 on CUDA, 0 elsewhere
    pin_memory: bool | None = None   # pinned host memory for batches; None: on CUDA only
    frozen: tuple[str, ...] = ()     # parameters (or modules) not trained, by name: requires_grad is turned off

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {self.optimizer!r}; known: {', '.join(OPTIMIZERS)}")
        if isinstance(self.epochs, bool) or not (float(self.epochs) > 0 and math.isfinite(self.epochs)):
            raise ValueError(f"epochs must be a number > 0, got {self.epochs}")
        for name in ("batch_size", "eval_batch_size"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"lr must be a positive number, got {self.lr}")
        for name in ("patience", "lr_decay_patience", "max_steps", "warmup_steps"):
            v = getattr(self, name)
            if v is not None and int(v) < 1:
                raise ValueError(f"{name} must be >= 1 or None, got {v}")
        for name in ("clip_norm", "max_norm"):
            v = getattr(self, name)
            if v is not None and not v > 0:
                raise ValueError(f"{name} must be > 0 or None, got {v}")
        self.frozen = tuple(str(n) for n in self.frozen)
        if self.betas is not None:
            self.betas = tuple(float(b) for b in self.betas)
        if self.amp is not None:
            from textcls.runtime.devices import AMP_CHOICES     # torch: only when a precision is asked for
            if str(self.amp).lower() not in AMP_CHOICES:
                raise ValueError(f"amp must be one of {', '.join(AMP_CHOICES)}, got {self.amp!r}")
        if self.workers is not None:
            check_count("workers", self.workers)


# Training settings the papers report, for `train_from_spec(paper_training=True)` / the CLI's --paper-training.
PAPER_TRAINING: dict[str, dict[str, Any]] = {
    "act": dict(optimizer="sgd", lr=0.01, momentum=0.9, lr_decay=0.9, lr_decay_patience=10, batch_size=100),
    "transformer": dict(optimizer="noam", lr=1e-3, warmup_steps=8000),
    "agcnn": dict(optimizer="adam", batch_size=50),
    "kim_cnn": dict(optimizer="adam", batch_size=50),
    "hcan": dict(optimizer="adam", lr=2e-5),
}
