"""Norm-based attention (Kobayashi et al. 2020): || sum_h alpha^h_ij f^h(x_j) ||, the pooled position's row of
the last layer (textcls.interpret.context_mixing.norm)."""
from __future__ import annotations

from textcls.interpret.methods.registry import register_method


def _applies(model) -> str | None:
    from textcls.interpret.context_mixing import applicable
    return applicable(model)["norm"]


@register_method("norm", "Norm-based attention (Kobayashi)", short="norm", kind="context mixing",
                 signed=False, needs_gradients=False, uses_baseline=False,
                 cost="pass", applies=_applies, bucketed=False,
                 help="the attention weight times the size of the value it moves (Kobayashi et al. 2020)")
def explain(model, instances, **options) -> list:
    from textcls.interpret.context_mixing import explain_instances
    return explain_instances(model, instances, "norm")
