"""Leave-one-out: how far the class distribution moves (total variation) when one word is removed (deleted, or
replaced by the pad or unknown id: `removal`); the reference the other methods' rankings are compared with."""
from __future__ import annotations

from textcls.interpret.methods.registry import register_method


@register_method("leave_one_out", "Leave-one-out", short="leave-one-out", kind="perturbation",
                 signed=False, needs_gradients=False,
                 uses_baseline=False, uses_removal=True, cost="per word", aliases=("loo",), bucketed=False,
                 help="how far the prediction moves when the word is removed")
def explain(model, instances, *, removal: str = "delete", **options) -> list:
    from textcls.interpret.faithfulness import leave_one_out
    return [leave_one_out(model, inst, removal) for inst in instances]
