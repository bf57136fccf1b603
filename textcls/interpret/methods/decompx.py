"""DecompX (Modarressi et al. 2023): each layer's output decomposed into one part per input token, pushed
through attention, the feed-forward layers and the classifier head: the predicted class's logit per token
(textcls.interpret.context_mixing.decompx)."""
from __future__ import annotations

from textcls.interpret.methods.registry import register_method


def _applies(model) -> str | None:
    from textcls.interpret.context_mixing import applicable
    return applicable(model)["decompx"]


@register_method("decompx", "DecompX", short="DecompX", kind="context mixing",
                 signed=True, needs_gradients=False, uses_baseline=False,
                 cost="pass", applies=_applies, bucketed=False,
                 help="each token's part of the logit through attention, FFN and head (Modarressi et al. 2023)")
def explain(model, instances, **options) -> list:
    from textcls.interpret.context_mixing import explain_instances
    return explain_instances(model, instances, "decompx")
