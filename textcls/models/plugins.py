"""Model families from installed packages: the entry-point group `textcls.models` (importlib.metadata).

A package declares, in its pyproject.toml,

    [project.entry-points."textcls.models"]
    bagpool = "textcls_bagpool"            # a module (or module:function) that registers its models

and loading the entry point registers its families with `textcls.register_model`, as the six do: a config
dataclass (fields with `param(default, help)` - the Train page's form), `map_specs()` (named axes and kinds - what
every page draws) and the input kind ("tokens" or "sentences": the textcls tokenizer it is trained and saved
with). The registry loads entry points the first time it lists models or misses a name (`load_plugins`); a
package that fails to load is skipped with a warning and its error kept in `plugin_errors()`, so one broken
package never breaks the app. See docs/your_model.md for a complete example.
"""
from __future__ import annotations

import warnings

GROUP = "textcls.models"
_seen: set[str] = set()
_errors: dict[str, str] = {}


def load_plugins() -> list[str]:
    """Load every entry point of GROUP not loaded yet (a function value is called); returns the names loaded."""
    from importlib.metadata import entry_points
    done = []
    for ep in entry_points(group=GROUP):
        key = f"{ep.name}={ep.value}"
        if key in _seen:
            continue
        _seen.add(key)
        try:
            obj = ep.load()
            if callable(obj) and not isinstance(obj, type):
                obj()
            done.append(ep.name)
        except Exception as e:  # noqa: BLE001 - an installed package's bug must not break the app
            _errors[ep.name] = f"{type(e).__name__}: {e}"
            warnings.warn(f"textcls: the model package {ep.name!r} ({ep.value}) failed to load: {_errors[ep.name]}",
                          RuntimeWarning, stacklevel=2)
    return done


def plugin_errors() -> dict[str, str]:
    """{entry point name: its load error} for the packages that were skipped."""
    return dict(_errors)


__all__ = ["GROUP", "load_plugins", "plugin_errors"]
