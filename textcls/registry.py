"""Model registry (timm style): models enrol themselves with @register_model; tests enrol by registration."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

_REGISTRY: dict[str, "ModelEntry"] = {}


@dataclass
class ModelEntry:
    name: str
    cls: type
    config_cls: type
    description: str = ""
    # named override sets: "small" is the test/laptop size; the config defaults are the paper's.
    presets: dict[str, dict[str, Any]] = field(default_factory=dict)
    # named variants the paper evaluates (config switches); tests run each at the small preset.
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)
    # "tokens": input (B, L); "sentences": input (B, S, W) (HCAN hierarchical).
    input_kind: str = "tokens"


def register_model(name: str, config_cls: type, *, description: str = "", presets: dict | None = None,
                   variants: dict | None = None, input_kind: str = "tokens") -> Callable[[type], type]:
    def deco(cls: type) -> type:
        if name in _REGISTRY:
            raise ValueError(f"model {name!r} registered twice")
        _REGISTRY[name] = ModelEntry(name, cls, config_cls, description, dict(presets or {}),
                                     dict(variants or {}), input_kind)
        cls.registry_name = name
        return cls
    return deco


def _ensure_loaded() -> None:
    from . import models  # noqa: F401  (importing the package registers every model)


def list_models() -> list[str]:
    _ensure_loaded()
    return sorted(_REGISTRY)


def get_entry(name: str) -> ModelEntry:
    _ensure_loaded()
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


def model_from_config(name: str, config_dict: dict[str, Any]):
    """Rebuild a model from a saved config dict (checkpoint loading). Unknown keys are an error."""
    entry = get_entry(name)
    return entry.cls(entry.config_cls(**config_dict))
