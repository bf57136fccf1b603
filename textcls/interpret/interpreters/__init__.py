"""Interpreters: the registered kinds of model work beyond per-token explanation methods (the contract is in
`registry`). Every module of this package registers one or more when imported; importing the package imports them
all, in name order, so adding one is adding a module here (and its test). Imports no torch."""
from __future__ import annotations

import importlib
import pkgutil

from textcls.interpret.interpreters.registry import (COSTS, INPUTS, OUTPUTS, REGISTRY, Interpreter, InterpreterError,
    Option, for_model, get, names, register_interpreter, run, unregister_interpreter, why_not)

for _m in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _m != "registry" and not _m.startswith("_"):
        importlib.import_module(f"{__name__}.{_m}")

__all__ = ["COSTS", "INPUTS", "OUTPUTS", "Interpreter", "InterpreterError", "Option", "REGISTRY", "for_model", "get",
           "names", "register_interpreter", "run", "unregister_interpreter", "why_not"]
