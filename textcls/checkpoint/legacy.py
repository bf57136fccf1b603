"""A model config from a checkpoint's config.json, whatever textcls version wrote it: `config_from_dict` rebuilds
the config dataclass (lists back to tuples), filling fields added since with the values that reproduce the old
model (each config class's `LEGACY_DEFAULTS`). No torch."""
from __future__ import annotations

import dataclasses
from typing import Any

from textcls.checkpoint.files import CheckpointError


def _tuplify(value):
    return tuple(_tuplify(v) for v in value) if isinstance(value, list) else value


def config_from_dict(config_cls, values: dict[str, Any]):
    """Rebuild a config dataclass from JSON: lists become tuples where the field's default is a tuple; fields the
    file lacks take the class's LEGACY_DEFAULTS (what reproduces a model saved before they existed)."""
    fields = {f.name: f for f in dataclasses.fields(config_cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise CheckpointError(f"unknown field(s) {unknown} in model_config for {config_cls.__name__}")
    # fields added after a checkpoint was written take the value that reproduces the old model, not the new default
    values = {**getattr(config_cls, "LEGACY_DEFAULTS", {}), **values}
    fixed = {}
    for k, v in values.items():
        f = fields[k]
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)  # type: ignore
        fixed[k] = _tuplify(v) if isinstance(default, tuple) or "tuple" in str(f.type) else v
    return config_cls(**fixed)


__all__ = ["config_from_dict"]
