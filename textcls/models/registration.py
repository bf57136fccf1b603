"""Where models enrol (timm style): `@register_model(name, ConfigClass, ...)` on each model class. The look-ups
(`list_models`, `create_model`, ...) are in `textcls.models.registry`, which imports the models so they are all here."""
from __future__ import annotations

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


def registered_names() -> list[str]:
    """Every registered model name, sorted."""
    return sorted(_REGISTRY)


def lookup(name: str) -> "ModelEntry | None":
    """The entry registered under `name`, or None."""
    return _REGISTRY.get(name)
