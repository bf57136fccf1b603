"""Model look-ups (timm style): list, describe, configure and build the registered models. Models enrol with
`@register_model` (textcls.models.registration); tests enrol by registration; installed packages through the
entry-point group textcls.models (textcls.models.plugins)."""
from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any

from textcls import models  # noqa: F401  (importing the package registers every model)
from textcls.models.plugins import load_plugins
from textcls.models.registration import ModelEntry, lookup, register_model, registered_names

def list_models() -> list[str]:
    load_plugins()                 # families of installed packages (entry-point group textcls.models)
    return registered_names()


def get_entry(name: str) -> ModelEntry:
    entry = lookup(name)
    if entry is None:
        load_plugins()
        entry = lookup(name)
    if entry is None:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(registered_names())}")
    return entry


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
                 preset: str | None = None, variant: str | None = None, embeddings=None, limits=None,
                 **overrides: Any):
    """Build a model. `embeddings` is an optional (vocab_size, dim) array/tensor of pretrained vectors. The config
    is checked first (`check_config`: field types, a build on the meta device, the parameter limit of `limits`,
    default the limits in force), so a model too big for the machine raises LimitError before it is allocated."""
    if vocab_size is not None:
        overrides["vocab_size"] = vocab_size
    if num_labels is not None:
        overrides["num_labels"] = num_labels
    if embeddings is not None and "embed_dim" not in overrides:
        overrides["embed_dim"] = int(embeddings.shape[1])
    config = make_config(name, preset=preset, variant=variant, **overrides)
    check_config(name, config, limits)             # the parameter limit, before any memory is allocated
    return get_entry(name).cls(config, embeddings=embeddings)


def _field_problem(value, default) -> str | None:
    """Why `value` cannot stand where the config's default is `default` (None when it can)."""
    if default is None or isinstance(default, str):
        return None if default is None or isinstance(value, str) else "a string expected"
    if isinstance(default, bool):
        return None if isinstance(value, bool) else "true or false expected"
    if isinstance(default, (int, float)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return "a number expected"
        if isinstance(default, int) and not isinstance(value, int):
            return "a whole number expected"
        if not math.isfinite(value):
            return "a finite number expected"
        return "must be >= 0" if value < 0 <= default else None
    if isinstance(default, tuple):
        if not isinstance(value, (tuple, list)) or not value:
            return "a non-empty list expected"
        return next((p for p in (_field_problem(v, default[0]) for v in value) if p), None) if default else None
    return None


def config_problem(config) -> str | None:
    """What is wrong with a config dataclass's field values (None when nothing): each field must be of the type
    of its default - a finite number (>= 0 where the default is), a whole number, true/false, a non-empty list;
    a dropout a probability in [0, 1]."""
    for f in dataclasses.fields(config):
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)  # type: ignore[misc]
        problem = _field_problem(getattr(config, f.name), default)
        value = getattr(config, f.name)
        if not problem and "dropout" in f.name and isinstance(value, (int, float)) and not 0 <= value <= 1:
            problem = "a probability in [0, 1] expected"
        if problem:
            return f"config field {f.name}={getattr(config, f.name)!r}: {problem}"
    return None


def check_config(name: str, config, limits=None) -> int:
    """Check a model config before anything is allocated: every field of the type of its default (a finite
    number, a whole number, a non-empty list, ...), the model built on torch's meta device (shapes only; a
    negative size or an empty window list fails here), and its parameter count against `limits.max_parameters`.
    Raises ValueError (LimitError for the limit) naming the field; returns the parameter count."""
    from textcls.runtime.limits import check_parameters
    from textcls.runtime.sizing import meta_model

    entry = get_entry(name)
    problem = config_problem(config)
    if problem:
        raise ValueError(f"{name}: {problem}")
    try:
        with warnings.catch_warnings():             # e.g. "Initializing zero-element tensors is a no-op"
            warnings.simplefilter("ignore")
            params = list(meta_model(entry.cls, config).parameters())
        n = sum(p.numel() for p in params)
    except Exception as e:  # noqa: BLE001 - whatever the model's constructor rejects is a bad config
        msg = " ".join(str(e).split()) or type(e).__name__
        raise ValueError(f"{name}: the model cannot be built from this config ({msg})") from None
    empty = next((tuple(p.shape) for p in params if p.numel() == 0), None)
    if empty is not None:
        raise ValueError(f"{name}: this config gives the model an empty weight of shape {list(empty)} (a size of 0)")
    check_parameters(n, limits, f"{name} with this config")
    return n
