"""What a training run reports, as plain dataclasses (no torch): `StepEvent` after every optimiser step and
`EpochEvent` after every epoch (what callbacks receive), and the run's `History` (saved as history.json), whose
epochs are `EpochRecord`s: one flat shape for every model (older files with a nested "dev" table still read;
`History.from_json` checks a parsed file against the schema first)."""
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
class EpochRecord:
    """One epoch of a run, the same fields for every model (None where a run did not measure it: no dev split,
    or an older history file). `steps` are the epoch's own optimiser steps, `seconds` the epoch's wall-clock time
    (its dev evaluation included), `elapsed` the seconds since the run started, `lr` the rate after the epoch."""
    epoch: int
    steps: int | None = None
    train_loss: float | None = None
    train_accuracy: float | None = None
    dev_loss: float | None = None
    dev_accuracy: float | None = None
    dev_macro_f1: float | None = None
    lr: float | None = None
    seconds: float | None = None
    elapsed: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def dev(self) -> dict[str, float] | None:
        """The dev figures as EpochEvent.dev has them ({"accuracy", "loss", "macro_f1"}), None without dev."""
        if self.dev_accuracy is None:
            return None
        return {"accuracy": self.dev_accuracy, "loss": self.dev_loss, "macro_f1": self.dev_macro_f1}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EpochRecord":
        """From a history.json epoch table: the flat shape, or the nested one fine-tuning runs wrote before
        (`"dev": {"accuracy", "loss", "macro_f1"}`; its `steps` counted from the start of the run - History
        turns them into per-epoch counts). Unknown keys are dropped."""
        d = dict(d)
        dev = d.pop("dev", None)
        if isinstance(dev, dict):
            for k in ("accuracy", "loss", "macro_f1"):
                d.setdefault(f"dev_{k}", dev.get(k))
        return cls(**{k: v for k, v in d.items() if k in _EPOCH_FIELDS})


_EPOCH_FIELDS = {f.name for f in dataclasses.fields(EpochRecord)}


def _epoch_records(epochs: list) -> list[EpochRecord]:
    """History.epochs as EpochRecords; the old nested fine-tuning shape gets per-epoch steps and seconds (from
    its run totals) like the flat one."""
    out: list[EpochRecord] = []
    prev_steps, prev_elapsed = 0, 0.0
    for k, e in enumerate(epochs):
        if isinstance(e, EpochRecord):
            out.append(e)
            continue
        rec = EpochRecord.from_dict({"epoch": k + 1, **e})
        if "dev" in e:                                  # the old fine-tuning shape: totals since the start
            if rec.steps is not None:
                rec.steps, prev_steps = rec.steps - prev_steps, rec.steps
            if rec.seconds is None and rec.elapsed is not None:
                rec.seconds, prev_elapsed = rec.elapsed - prev_elapsed, rec.elapsed
        out.append(rec)
    return out


@dataclass
class History:
    epochs: list[EpochRecord] = field(default_factory=list)
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

    def __post_init__(self) -> None:
        self.epochs = _epoch_records(list(self.epochs))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def epoch_rows(self) -> list[dict[str, Any]]:
        """The epochs as plain dicts (one flat shape: what the training-curve figures read)."""
        return [e.to_dict() for e in self.epochs]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "History":
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    @classmethod
    def from_json(cls, d: Any) -> "History":
        """A History from a parsed history.json, checked against the schema first: every field of its type, each
        epoch a table whose numbers are numbers (a nested "dev" table too). ValueError saying what is wrong
        otherwise."""
        if not isinstance(d, dict):
            raise ValueError("is not an object")
        for key, kind in _TYPES.items():
            kinds = kind if isinstance(kind, tuple) else (kind,)
            if key in d and (not isinstance(d[key], kinds) or isinstance(d[key], bool) and bool not in kinds):
                raise ValueError(f"field {key!r} has the wrong type ({type(d[key]).__name__})")
        for k, e in enumerate(d.get("epochs", [])):
            if not isinstance(e, dict):
                raise ValueError(f"epoch {k + 1} is a {type(e).__name__}, not a table")
            for name in _EPOCH_NUMBERS:
                if name in e and not _number_or_none(e[name]):
                    raise ValueError(f"epoch {k + 1}: {name!r} is not a number")
            dev = e.get("dev")
            if dev is not None and not (isinstance(dev, dict) and all(_number_or_none(dev.get(n))
                                                                     for n in ("accuracy", "loss", "macro_f1"))):
                raise ValueError(f"epoch {k + 1}: 'dev' is not a table of numbers")
        if not all(_number_or_none(v) for v in d.get("step_losses", [])):
            raise ValueError("'step_losses' must be numbers")
        return cls.from_dict(d)


_TYPES = {"epochs": list, "step_losses": list, "best_epoch": (int, type(None)),
          "best_dev_accuracy": (int, float, type(None)), "stopped_reason": str, "diverged": bool,
          "stopped_by_user": bool, "steps": int, "elapsed": (int, float), "device": str, "config": dict}
_EPOCH_NUMBERS = ("epoch", "steps", "train_loss", "train_accuracy", "dev_accuracy", "dev_loss", "dev_macro_f1",
                  "elapsed", "seconds", "lr")


def _number_or_none(v) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


__all__ = ["EpochEvent", "EpochRecord", "History", "StepEvent"]
