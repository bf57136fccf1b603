"""Value zeroing (Mohebbi et al. 2023): the cosine distance of each position's layer output when one token's
value vector is zeroed, rolled out over the layers; one layer pass per token, batched
(textcls.interpret.context_mixing.value_zeroing)."""
from __future__ import annotations

from textcls.interpret.methods.registry import register_method


def _applies(model) -> str | None:
    from textcls.interpret.context_mixing import applicable
    return applicable(model)["value_zeroing"]


@register_method("value_zeroing", "Value zeroing", short="value zeroing", kind="context mixing",
                 signed=False, needs_gradients=False, uses_baseline=False,
                 cost="per word", applies=_applies, bucketed=False,
                 help="how far the outputs move when a token's value is zeroed, rolled out (Mohebbi et al. 2023)")
def explain(model, instances, **options) -> list:
    from textcls.interpret.context_mixing import explain_instances
    return explain_instances(model, instances, "value_zeroing")
