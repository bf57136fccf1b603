"""What the five context-mixing methods share as registered methods: whether one applies (a model declares it
through its family: textcls.interpret.context_mixing.applicable) and the batched run that computes it."""
from __future__ import annotations

from typing import Callable


def applies(name: str) -> Callable:
    def why_not(model) -> str | None:
        from textcls.interpret.context_mixing import applicable
        return applicable(model)[name]
    return why_not


def explainer(name: str) -> Callable:
    def explain(model, instances, **options) -> list:
        from textcls.interpret.context_mixing import explain_instances
        return explain_instances(model, instances, name)
    return explain
