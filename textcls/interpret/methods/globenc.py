"""GlobEnc (Modarressi et al. 2022): the norm of each token's share after attention, the residual and the layer
norm, rolled out over the layers (textcls.interpret.context_mixing.globenc)."""
from __future__ import annotations

from textcls.interpret.methods.registry import register_method


def _applies(model) -> str | None:
    from textcls.interpret.context_mixing import applicable
    return applicable(model)["globenc"]


@register_method("globenc", "GlobEnc", short="GlobEnc", kind="context mixing",
                 signed=False, needs_gradients=False, uses_baseline=False,
                 cost="pass", applies=_applies, bucketed=False,
                 help="norms through the residual and the layer norm, rolled out (Modarressi et al. 2022)")
def explain(model, instances, **options) -> list:
    from textcls.interpret.context_mixing import explain_instances
    return explain_instances(model, instances, "globenc")
