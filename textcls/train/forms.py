"""A model's hyper-parameter form, generated from its config dataclass: each field's kind, its default (preset and
variant applied), the paper's value, and the help and options its `field(metadata=...)` declares (see
`models.base.param`). Also turning form values back into config overrides, with clear errors."""
from __future__ import annotations

import dataclasses
import re
import typing
from dataclasses import dataclass
from typing import Any, Sequence

from textcls.models.registry import get_entry, make_config

# fields a training form sets itself (data, vocabulary, embeddings) rather than in the hyper-parameter form; the
# relation models' entity-marker ids are set from the vocabulary when training (-1 = unset until then)
FORM_SKIP = ("vocab_size", "num_labels", "pad_id", "embedding_mode", "channels",
             "e1_start_id", "e1_end_id", "e2_start_id", "e2_end_id")


@dataclass
class ConfigField:
    """One field of a model's config dataclass, described for a generated form."""

    name: str
    kind: str                      # "int" | "float" | "bool" | "str" | "ints" (tuple of ints) | "floats" | "other"
    default: Any                   # the value with the chosen preset / variant applied
    paper: Any                     # the config class's own default (the paper's value)
    help: str = ""                 # metadata["help"]
    choices: tuple[str, ...] = ()  # metadata["choices"], for str fields with known options


def _kind(value: Any, hint: Any) -> str:
    text = str(hint)
    if isinstance(value, bool) or hint is bool:
        return "bool"
    if isinstance(value, tuple) or "tuple" in text:
        if all(isinstance(v, int) and not isinstance(v, bool) for v in (value or ())) and "float" not in text:
            return "ints"
        return "floats"
    if isinstance(value, int) and "float" not in text:
        return "int"
    if isinstance(value, float) or "float" in text:
        return "float"
    if isinstance(value, str):
        return "str"
    return "other"


def config_fields(model: str, preset: str | None = None, variant: str | None = None,
                  skip: Sequence[str] = FORM_SKIP) -> list[ConfigField]:
    """The fields of `model`'s config, with the preset/variant values as defaults, the paper's value, and the
    help and options declared in each field's metadata."""
    entry = get_entry(model)
    cfg = make_config(model, preset=preset, variant=variant)
    paper = entry.config_cls()
    try:
        hints = typing.get_type_hints(entry.config_cls)
    except Exception:  # noqa: BLE001 - fall back to the values' types
        hints = {}
    out = []
    for f in dataclasses.fields(entry.config_cls):
        if f.name in skip or f.name.startswith("_"):
            continue
        value = getattr(cfg, f.name)
        out.append(ConfigField(f.name, _kind(value, hints.get(f.name)), value, getattr(paper, f.name),
                               str(f.metadata.get("help", "")), tuple(f.metadata.get("choices", ()))))
    return out


def parse_field(field_: ConfigField, raw: Any) -> Any:
    """A form value -> the config value (tuples from "3, 4, 5"); ValueError naming the field when invalid."""
    if field_.kind in ("ints", "floats"):
        if isinstance(raw, (tuple, list)):
            items = list(raw)
        else:
            items = [x for x in re.split(r"[,\s]+", str(raw).strip().strip("()[]")) if x]
        try:
            vals = tuple(int(x) if field_.kind == "ints" else float(x) for x in items)
        except ValueError:
            raise ValueError(f"{field_.name}: expected numbers separated by commas, got {raw!r}") from None
        if not vals:
            raise ValueError(f"{field_.name}: give at least one value")
        return vals
    if field_.kind == "int":
        return int(raw)
    if field_.kind == "float":
        return float(raw)
    if field_.kind == "bool":
        return bool(raw)
    if field_.choices and raw not in field_.choices:
        raise ValueError(f"{field_.name}: {raw!r} is not one of {', '.join(field_.choices)}")
    return raw


def changed_overrides(fields_: Sequence[ConfigField], values: dict[str, Any]) -> dict[str, Any]:
    """The parsed form values that differ from the fields' defaults (the overrides to pass on)."""
    out = {}
    for f in fields_:
        if f.name in values:
            v = parse_field(f, values[f.name])
            if v != f.default:
                out[f.name] = v
    return out


def size_problems(fields_: Sequence[ConfigField], values: dict[str, Any]) -> list[str]:
    """Integer sizes/counts that cannot work: below 1 where the paper's value is a positive size, below 0 where
    the paper's value is 0 ("0 = off" switches such as local_window). A field whose paper value or default is
    negative (a "-1 = unset" sentinel such as an id set later) is no size and is not checked. One sentence per
    problem."""
    out = []
    for f in fields_:
        if f.name not in values or f.kind not in ("int", "ints"):
            continue
        ref = [f.paper, f.default] if f.kind == "int" else [*(f.paper or ()), *(f.default or ())]
        if any(isinstance(x, int) and x < 0 for x in ref):
            continue                # a sentinel ("-1: none"), not a size
        lowest = 1 if any(isinstance(x, int) and x >= 1 for x in ref) else 0
        raw = values[f.name]
        if f.kind == "int":
            vals = [raw]
        else:
            try:
                vals = list(parse_field(f, raw))
            except ValueError:
                continue            # reported by changed_overrides
        bad = [v for v in vals if isinstance(v, (int, float)) and v < lowest]
        if bad:
            need = "at least 1" if lowest == 1 else "0 or more"
            shown = ", ".join(str(int(v)) for v in bad)
            out.append(f"{f.name} must be {need} (got {shown if len(shown) <= 40 else shown[:39] + '…'}).")
    return out
