"""Model families from installed packages: the entry-point group `textcls.models` (importlib.metadata).

A package declares, in its pyproject.toml,

    [project.entry-points."textcls.models"]
    bagpool = "textcls_bagpool"            # a module (or module:function) that registers its models

and loading the entry point registers its families with `textcls.register_model`, as the six do: a config
dataclass (fields with `param(default, help)` - the Train page's form), `map_specs()` (named axes and kinds - what
every page draws) and the input kind ("tokens" or "sentences": the textcls tokenizer it is trained and saved
with). The registry loads entry points the first time it lists models or misses a name (`load_plugins`); a
package that fails to load - any exception, SystemExit and KeyboardInterrupt included - is skipped with a
warning and its error kept in `plugin_errors()` (one line each: `plugin_problems()`, which Home shows), so one
broken package never breaks the app or a command. `plugin_of(family)` names the package that registered a
family, so an error of its model at run time names the package (`textcls.inference`). See docs/your_model.md for
a complete example.
"""
from __future__ import annotations

import warnings

GROUP = "textcls.models"
_seen: set[str] = set()
_errors: dict[str, str] = {}
_owners: dict[str, str] = {}               # model family -> the entry point that registered it


def load_plugins() -> list[str]:
    """Load every entry point of GROUP not loaded yet (a function value is called); returns the names loaded."""
    from importlib.metadata import entry_points

    from textcls.models.registration import registered_names
    done = []
    for ep in entry_points(group=GROUP):
        key = f"{ep.name}={ep.value}"
        if key in _seen:
            continue
        _seen.add(key)
        before = set(registered_names())
        try:
            obj = ep.load()
            if callable(obj) and not isinstance(obj, type):
                obj()
            done.append(ep.name)
        except BaseException as e:  # noqa: BLE001 - a package's bug (even sys.exit) must not end the app or a command
            _errors[ep.name] = _line(f"{type(e).__name__}: {e}")
            warnings.warn(f"textcls: the model package {_line(ep.name)!r} ({_line(ep.value)}) failed to load: "
                          f"{_errors[ep.name]}", RuntimeWarning, stacklevel=2)
        for family in set(registered_names()) - before:
            _owners[family] = ep.name
    return done


def _line(text: str, limit: int = 300) -> str:
    """One printable line: control characters escaped, whitespace runs as one space, at most `limit` characters."""
    import re
    s = re.sub(r"[\x00-\x1f\x7f-\x9f]", lambda m: f"\\x{ord(m.group()):02x}", " ".join(str(text).split()))
    return s if len(s) <= limit else s[:limit] + "..."


def plugin_of(family: str) -> str | None:
    """The entry point (model package) that registered the model family `family`; None for the built-in ones."""
    return _owners.get(family)


def plugin_problems() -> list[str]:
    """One printable line per model package that failed to load (what Home shows)."""
    return [f"the model package {_line(name)!r} failed to load and was skipped: {err}" for name, err in
            sorted(_errors.items())]


def plugin_errors() -> dict[str, str]:
    """{entry point name: its load error} for the packages that were skipped."""
    return dict(_errors)


__all__ = ["GROUP", "load_plugins", "plugin_errors", "plugin_of", "plugin_problems"]
