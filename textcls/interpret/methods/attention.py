"""The model's own attention as an explanation: the attention the classifier reads, one weight per token (each
family's map and rule: textcls.interpret.attention.explanation_source)."""
from __future__ import annotations

from textcls.interpret.methods.registry import register_method


def _applies(model) -> str | None:
    from textcls.interpret.attention import explanation_source
    try:
        explanation_source(model)
    except ValueError as e:
        return str(e)
    return None


@register_method("attention", "Own attention", short="attention", kind="attention",
                 signed=False, needs_gradients=False,
                 uses_baseline=False, cost="pass", applies=_applies, aliases=("own_attention",),
                 help="the attention weights the model's classifier reads")
def explain(model, instances, *, labels=None, **options) -> list:
    from textcls.interpret.attention import attention_importance_instances
    return attention_importance_instances(model, instances, labels=labels)
