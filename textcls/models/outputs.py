"""Named outputs shared by every model: ClassifierOutput, MapSpec, the axis vocabulary and InterventionSpec.

A map is an interpretable tensor a model computes on the way to its logits (an attention matrix, a
feature map, a gate). `model.map_specs()` declares each one with named axes, so a UI can label any
model's maps without knowing the model (the LIT idea: models declare their outputs).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

# Axis vocabulary. An axis whose name ends in "token" lines up with Prediction.tokens
# (for hierarchical models, "word" lines up with the words of one sentence).
AXES = (
    "token", "query_token", "key_token",          # flat token positions
    "sentence", "query_sentence", "key_sentence",  # HCAN sentence level
    "word", "query_word", "key_word",              # HCAN word positions inside a sentence
    "head", "layer", "filter", "channel", "gate", "window", "feature",
    "entity",                                      # relation classification: entity 1, entity 2
)
# What a map's values mean.
KINDS = ("attention", "feature_map", "gate", "activation")


@dataclass(frozen=True)
class MapSpec:
    """One interpretable tensor: `maps[name]` has shape (B, *sizes of axes)."""

    name: str
    axes: tuple[str, ...]
    kind: str  # one of KINDS
    description: str = ""
    # "real" for ordinary values; "index" for integer positions (e.g. the max-pool argmax per filter,
    # a token index); "score" for unnormalised attention terms; "partial" for one block of a softmax whose
    # other entries sit in sibling maps (rows sum to <= 1; e.g. the Transformer's token x token attention
    # beside its cls-token maps).
    values: str = "real"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"MapSpec {self.name!r}: kind {self.kind!r} not in {KINDS}")
        for a in self.axes:
            if a not in AXES:
                raise ValueError(f"MapSpec {self.name!r}: axis {a!r} not in {AXES}")


@dataclass(frozen=True)
class InterventionSpec:
    """What a model lets a user change on the way to its logits, declared by its family as `map_specs()` declares
    its maps, so an interventions UI needs no knowledge of config field names (`TextClassifier.interventions()`)."""

    heads: int = 0                                # attention heads per layer a head ablation may pick (0: none)
    layers: int = 0                               # layers those heads sit in (0: one block, no layer to pick)
    filters: dict[str, int] = field(default_factory=dict)   # map with a filter axis -> its number of filters
    activation_field: str | None = None           # the config field a swapped activation replaces
    activations: tuple[str, ...] = ()             # what it may be swapped to


@dataclass
class ClassifierOutput:
    """What every model returns. `maps` is empty unless `return_maps=True` was passed."""

    logits: torch.Tensor                     # (B, num_labels)
    maps: dict[str, torch.Tensor] = field(default_factory=dict)
    features: torch.Tensor | None = None     # (B, F) penultimate representation (ACT's center loss uses it)
