"""Leave-one-out: how far the class distribution moves (total variation) when one word is removed (deleted, or
replaced by the pad or unknown id: `removal`); the reference the other methods' rankings are compared with.
With `contrast` (a foil label), the signed drop of logit(label) - logit(foil) when the word is removed
(textcls.interpret.contrastive.leave_one_out)."""
from __future__ import annotations

from textcls.interpret.methods.registry import register_method


@register_method("leave_one_out", "Leave-one-out", short="leave-one-out", kind="perturbation",
                 signed=False, needs_gradients=False,
                 uses_baseline=False, uses_removal=True, cost="per word", aliases=("loo",), bucketed=False,
                 contrastive=True,
                 help="how far the prediction moves when the word is removed")
def explain(model, instances, *, removal: str = "delete", contrast=None, labels=None, target=None,
            **options) -> list:
    if contrast is not None:
        from textcls.interpret.contrastive import leave_one_out as contrastive
        return [contrastive(model, inst, contrast, removal, target, labels) for inst in instances]
    from textcls.interpret.faithfulness import leave_one_out
    return [leave_one_out(model, inst, removal) for inst in instances]
