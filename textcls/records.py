"""Plain dataclasses with no torch. What a training run reports: `StepEvent` after every optimiser step,
`EpochEvent` after every epoch (what callbacks receive), and the run's `History` (saved as history.json), whose
epochs are `EpochRecord`s: one flat shape for every model (older files with a nested "dev" table still read). What a
prediction is: `Prediction` (textcls.inference makes it; numpy maps). What the app's server needs to know of a
model it does not load itself (textcls.serve): `ModelFacts`, with its maps' specs as `SpecRecord`, and how it reads one
text and what applies to it there (`TextReading`)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np


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


@dataclass
class Prediction:
    label: str
    probabilities: dict[str, float]
    tokens: list[str]                                     # what the model saw, in order (after truncation)
    maps: dict[str, np.ndarray] = field(default_factory=dict)  # batch axis removed, cropped to true length
    truncated: bool = False                               # the text was cut to the tokenizer's max length
    sentences: list[list[str]] | None = None              # hierarchical models: the sentences' words
    label_index: int = -1

    def to_dict(self, include_maps: bool = False) -> dict[str, Any]:
        d = {"label": self.label, "label_index": self.label_index, "probabilities": self.probabilities,
             "tokens": self.tokens, "truncated": self.truncated}
        if self.sentences is not None:
            d["sentences"] = self.sentences
        if include_maps:
            d["maps"] = {k: v.tolist() for k, v in self.maps.items()}
        return d


@dataclass(frozen=True)
class SpecRecord:
    """A `textcls.models.outputs.MapSpec` as plain data (the same fields, no validation, no torch): what the
    figures read of a map spec (name, axes, kind, values)."""
    name: str
    axes: tuple[str, ...]
    kind: str
    description: str = ""
    values: str = "real"


@dataclass(frozen=True)
class ModelFacts:
    """What a page needs to know of a checkpoint's model without holding it: its maps' specs and, for a word
    vocabulary, the token -> id map (None for word pieces and models without one). `map_specs()` and `stoi` read
    like a Predictor's `model.map_specs()` and `tokenizer.vocab.stoi`. For Inspect: `word_pieces` (a Hugging Face
    model whose piece attention can be shown), `attention_note` (the model's `attention_note`: why it has no
    editable attention) and `mixing` (the context-mixing methods that apply to it)."""
    specs: tuple[SpecRecord, ...] = ()
    stoi: dict[str, int] | None = None
    labels: tuple[str, ...] = ()
    word_pieces: bool = False
    attention_note: str | None = None
    mixing: tuple[str, ...] = ()

    def map_specs(self) -> list[SpecRecord]:
        return list(self.specs)


@dataclass(frozen=True)
class TextReading:
    """How one checkpoint reads one text, and what applies to it there (textcls.serve.work.reading): what the
    Attribute page lays out before it computes an explanation, without holding the model."""
    tokens: tuple[str, ...]                       # the tokens the model reads (one per real position)
    n: int                                        # how many
    unknown: int | None                           # how many its word vocabulary does not know (None: no vocabulary)
    not_applicable: dict[str, str]                # explanation method -> why it does not apply to this model
    attention_source: str | None                  # what its own attention importance reads (None: it has none)
    labels: tuple[str, ...]
    interventions: tuple[str, ...]                # the kinds it offers (textcls.interpret.records), in the UI's order
    heads: int = 0                                # what they may pick (the model's InterventionSpec): heads per layer,
    layers: int = 0                               # layers (0: one block),
    filters: dict[str, int] = field(default_factory=dict)   # map with a filter axis -> its number of filters,
    activations: tuple[str, ...] = ()             # activations the swap may pick,
    activation: str | None = None                 # and the one it replaces (its config's value)
    word_level: bool = True                       # whether its tokens are words (not characters or pieces)
