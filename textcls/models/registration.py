"""Where models enrol (timm style). A built-in family is declared without torch by its config module
(`declare_model(name, ConfigClass, module=..., ...)` in textcls.models.configs) and its class binds itself to that
entry when its module is imported (`@model_class(name)`); `ModelEntry.cls` imports that module the first time it
is read. A plugin or a test enrols a class and its config in one step with `@register_model(name, ConfigClass, ...)`.
The look-ups (`list_models`, `create_model`, ...) are in `textcls.models.registry`."""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

_REGISTRY: dict[str, "ModelEntry"] = {}


@dataclass
class ModelEntry:
    name: str
    config_cls: type
    description: str = ""
    # named override sets: "small" is the test/laptop size; the config defaults are the paper's.
    presets: dict[str, dict[str, Any]] = field(default_factory=dict)
    # named variants the paper evaluates (config switches); tests run each at the small preset.
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)
    # "tokens": input (B, L); "sentences": input (B, S, W) (HCAN hierarchical).
    input_kind: str = "tokens"
    module: str = ""                       # where the model class is defined (a declared family)
    model_cls: type | None = None          # the class, once bound (`model_class`) or registered with it

    @property
    def cls(self) -> type:
        """The model class; a declared family's module (and torch) is imported the first time this is read."""
        if self.model_cls is None and self.module:
            importlib.import_module(self.module)        # its @model_class(name) binds the class
        if self.model_cls is None:
            raise LookupError(f"model {self.name!r}: {self.module or 'its module'} defines no class for it "
                              f"(@model_class({self.name!r}))")
        return self.model_cls


def _enrol(entry: ModelEntry) -> None:
    if entry.name in _REGISTRY:
        raise ValueError(f"model {entry.name!r} registered twice")
    _REGISTRY[entry.name] = entry


def declare_model(name: str, config_cls: type, *, module: str, description: str = "", presets: dict | None = None,
                  variants: dict | None = None, input_kind: str = "tokens") -> ModelEntry:
    """Enrol the family `name` by its config alone; its class, in `module`, binds itself with `@model_class`."""
    entry = ModelEntry(name, config_cls, description, dict(presets or {}), dict(variants or {}), input_kind, module)
    _enrol(entry)
    return entry


def model_class(name: str) -> Callable[[type], type]:
    """Bind the decorated class to the family `name` that its config module declared (`declare_model`)."""
    def deco(cls: type) -> type:
        entry = _REGISTRY.get(name)
        if entry is None or entry.module != cls.__module__:
            raise ValueError(f"model {name!r} was not declared for {cls.__module__} (textcls.models.configs)")
        if entry.model_cls is not None:
            raise ValueError(f"model {name!r} registered twice")
        entry.model_cls = cls
        cls.registry_name = name
        return cls
    return deco


def register_model(name: str, config_cls: type, *, description: str = "", presets: dict | None = None,
                   variants: dict | None = None, input_kind: str = "tokens") -> Callable[[type], type]:
    """Enrol the decorated class and its config in one step (plugins, tests)."""
    def deco(cls: type) -> type:
        _enrol(ModelEntry(name, config_cls, description, dict(presets or {}), dict(variants or {}), input_kind,
                          cls.__module__, cls))
        cls.registry_name = name
        return cls
    return deco


def registered_names() -> list[str]:
    """Every registered model name, sorted."""
    return sorted(_REGISTRY)


def lookup(name: str) -> "ModelEntry | None":
    """The entry registered under `name`, or None."""
    return _REGISTRY.get(name)
