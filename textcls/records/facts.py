"""What the app's server knows of a model it does not load itself (textcls.serve), as plain frozen dataclasses
with no torch: `ModelFacts` (its maps' specs as `SpecRecord`s, what Inspect may show of it)
and `TextReading` (how it reads one text and what applies to it there)."""
from __future__ import annotations

from dataclasses import dataclass, field


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
    """What a page needs to know of a checkpoint's model without holding it: its maps' specs (`map_specs()` reads
    like a Predictor's `model.map_specs()`; its vocabulary stays in the worker, which counts a text's unknown words
    in its Prediction). For Inspect: `word_pieces` (a Hugging Face
    model whose piece attention can be shown), `attention_note` (the model's `attention_note`: why it has no
    editable attention) and `mixing` (the context-mixing methods that apply to it)."""
    specs: tuple[SpecRecord, ...] = ()
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


__all__ = ["ModelFacts", "SpecRecord", "TextReading"]
