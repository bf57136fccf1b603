"""Model look-ups (timm style): list, describe, configure and build the registered models. Models enrol with
`@register_model` (textcls.models.registration); tests enrol by registration; installed packages through the
entry-point group textcls.models (textcls.plugins)."""
from __future__ import annotations

import dataclasses
from typing import Any

from . import models  # noqa: F401  (importing the package registers every model)
from .models.registration import _REGISTRY, ModelEntry, register_model
from .plugins import load_plugins


def list_models() -> list[str]:
    load_plugins()                 # families of installed packages (entry-point group textcls.models)
    return sorted(_REGISTRY)


def get_entry(name: str) -> ModelEntry:
    if name not in _REGISTRY:
        load_plugins()
    if name not in _REGISTRY:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def make_config(name: str, *, preset: str | None = None, variant: str | None = None, **overrides: Any):
    """The config dataclass of `name`: paper defaults, then the preset, the variant, then overrides."""
    entry = get_entry(name)
    values: dict[str, Any] = {}
    for label, table, key in (("preset", entry.presets, preset), ("variant", entry.variants, variant)):
        if key is not None:
            if key not in table:
                raise KeyError(f"{name}: unknown {label} {key!r}; known: {', '.join(table) or 'none'}")
            values.update(table[key])
    values.update(overrides)
    known = {f.name for f in dataclasses.fields(entry.config_cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise TypeError(f"{name}: unknown config field(s) {unknown}; known: {sorted(known)}")
    return entry.config_cls(**values)


def create_model(name: str, vocab_size: int | None = None, num_labels: int | None = None, *,
                 preset: str | None = None, variant: str | None = None, embeddings=None, **overrides: Any):
    """Build a model. `embeddings` is an optional (vocab_size, dim) array/tensor of pretrained vectors."""
    if vocab_size is not None:
        overrides["vocab_size"] = vocab_size
    if num_labels is not None:
        overrides["num_labels"] = num_labels
    if embeddings is not None and "embed_dim" not in overrides:
        overrides["embed_dim"] = int(embeddings.shape[1])
    config = make_config(name, preset=preset, variant=variant, **overrides)
    return get_entry(name).cls(config, embeddings=embeddings)
