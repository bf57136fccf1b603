"""Typed options: what an interpreter (textcls.interpret.interpreters) or an explanation method
(textcls.interpret.methods) declares it reads beyond its inputs. From one declaration the CLI builds a flag (its
type, default, choices and help), a page a widget, and a request its cache key; a value is checked and coerced in
one place (`Option.check`, `resolve_options`). Imports nothing of textcls.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence


class OptionError(ValueError):
    """A bad option: a value of the wrong type or out of range, or a name the owner does not declare (one line;
    exit 2 in the CLI, a message on a page)."""


@dataclass(frozen=True)
class Option:
    """One option of an interpreter or an explanation method: its type is its default's (bool, int, float or
    str)."""

    name: str                          # a Python identifier; the CLI flag is --name with _ as -
    default: Any
    help: str
    choices: tuple = ()                # allowed values (empty: any value of the type)
    low: float | None = None           # inclusive bounds for numbers
    high: float | None = None
    label: str = ""                    # on screen (default: the name, capitalised)

    @property
    def type(self) -> type:
        return type(self.default)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def title(self) -> str:
        return self.label or self.name.replace("_", " ").capitalize()

    def check(self, value: Any) -> Any:
        """`value` coerced to the option's type; OptionError (one line) when it is not one."""
        t = self.type
        try:
            if t is bool:
                if isinstance(value, str):
                    if value.strip().lower() not in ("1", "0", "true", "false", "yes", "no"):
                        raise ValueError(value)
                    value = value.strip().lower() in ("1", "true", "yes")
                v = bool(value)
            elif t is int:
                if isinstance(value, float) and not value.is_integer():
                    raise ValueError(value)
                v = int(value)
            elif t is float:
                v = float(value)
                if not math.isfinite(v):
                    raise ValueError(value)
            else:
                v = str(value)
        except (TypeError, ValueError):
            raise OptionError(f"{self.flag}: expected {t.__name__}, got {value!r}") from None
        if self.choices and v not in self.choices:
            raise OptionError(f"{self.flag}: choose one of {', '.join(map(str, self.choices))}, got {v!r}")
        if self.low is not None and v < self.low or self.high is not None and v > self.high:
            raise OptionError(f"{self.flag}: must be between {self.low} and {self.high}, got {v}")
        return v


def find_option(options: Sequence[Option], name: str, owner: str) -> Option:
    for o in options:
        if o.name == name:
            return o
    raise OptionError(f"{owner} has no option {name!r}; its options: {', '.join(o.name for o in options) or 'none'}")


def resolve_options(options: Sequence[Option], given: dict | None, owner: str) -> dict[str, Any]:
    """Every option's value: `given` checked and coerced, the defaults for the rest; OptionError for an unknown
    option or a bad value."""
    given = dict(given or {})
    out = {o.name: o.check(given.pop(o.name)) if o.name in given else o.default for o in options}
    if given:
        find_option(options, next(iter(given)), owner)         # raises, naming the options
    return out


__all__ = ["Option", "OptionError", "find_option", "resolve_options"]
