"""Explanation methods, one module each, registered once (`registry`): the model's own attention, the Captum
methods (integrated gradients, saliency, gradient x input, occlusion, Shapley sampling, LIME), leave-one-out,
the context-mixing methods (norm, GlobEnc, ALTI, value zeroing, DecompX) and the random floor.

Importing this package registers them all; it imports neither torch nor Captum (each method imports its engine
when it first runs), so a page can list the methods and their labels cheaply.

Add a method: a module here with one `@register_method(...)` function (with `options=` for typed options of its
own), imported below, and its test; the CLI, the pages, the cache, faithfulness and the lessons offer it from the
registry.
"""
from __future__ import annotations

from textcls.interpret.methods.registry import (COSTS, KINDS, REGISTRY, STANDARD_OPTIONS, Method, Option, OptionError,
    canonical, explain, explanation, get, labels, methods_for, names, options_used, own_options, parse, register_method,
    unregister_method, why_not)
# registration order = the order the CLI and the pages list them
from textcls.interpret.methods import (attention, integrated_gradients, grad_x_input, saliency,  # noqa: E402,F401
    occlusion, shapley, lime, leave_one_out, norm, globenc, alti, value_zeroing, decompx, random_ranking)

__all__ = ["COSTS", "KINDS", "STANDARD_OPTIONS", "Method", "Option", "OptionError", "REGISTRY", "canonical", "explain",
           "explanation", "get", "labels", "methods_for", "names", "options_used", "own_options", "parse",
           "register_method", "unregister_method", "why_not"]
