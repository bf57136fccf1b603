"""A model config from a checkpoint's config.json, whatever textcls version wrote it: `config_from_dict` rebuilds
the config dataclass (lists back to tuples), reads fields under the names older versions gave them (`FIELD_ALIASES`)
and fills fields added since with the values that reproduce the old model (each config class's `LEGACY_DEFAULTS`).
No torch."""
from __future__ import annotations

import dataclasses
from typing import Any

from textcls.checkpoint.files import CheckpointError


# Old field name -> the name it has now, per config class (a subclass inherits its parents' rows). One name per idea
# across the families: heads are `n_heads` and the width of every layer is `d_model` (ACT, the Transformer, HCAN and
# CAN). LAMA keeps `hidden_dim`: it is the BiGRU's hidden size per direction, not the width of the layers (those are
# 2 x hidden_dim wide), a different quantity under a different name. Shipped checkpoints keep the old names in their
# config.json (they are not rewritten); these rows read them, and any older user folder, under the new ones.
FIELD_ALIASES: dict[str, dict[str, str]] = {
    "ConvAttentionConfig": {"attention_dim": "d_model", "heads": "n_heads"},        # HCAN, CAN
    "LAMAConfig": {"heads": "n_heads"},
}


def aliases_for(config_cls) -> dict[str, str]:
    """{old name: new name} of `config_cls` and the classes it derives from (FIELD_ALIASES)."""
    out: dict[str, str] = {}
    for klass in reversed(getattr(config_cls, "__mro__", (config_cls,))):
        out.update(FIELD_ALIASES.get(klass.__name__, {}))
    return out


def current_names(config_cls, values: dict[str, Any]) -> dict[str, Any]:
    """`values` (model config fields by name) with every old name of `config_cls` replaced by today's; a field
    given under both names is a CheckpointError."""
    aliases = aliases_for(config_cls)
    out: dict[str, Any] = {}
    for k, v in values.items():
        new = aliases.get(k, k)
        if new in out or (new != k and new in values):
            raise CheckpointError(f"model_config gives {new!r} twice (also as its old name {k!r}) for "
                                  f"{config_cls.__name__}")
        out[new] = v
    return out


def _tuplify(value):
    return tuple(_tuplify(v) for v in value) if isinstance(value, list) else value


def config_from_dict(config_cls, values: dict[str, Any]):
    """Rebuild a config dataclass from JSON: old field names read as today's (FIELD_ALIASES); lists become tuples
    where the field's default is a tuple; fields the file lacks take the class's LEGACY_DEFAULTS (what reproduces a
    model saved before they existed)."""
    fields = {f.name: f for f in dataclasses.fields(config_cls)}
    values = current_names(config_cls, values)
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


__all__ = ["FIELD_ALIASES", "aliases_for", "config_from_dict", "current_names"]
