"""A seeded random weight per token: the floor every explanation should beat (not an explanation to show)."""
from __future__ import annotations

import numpy as np

from textcls.interpret.methods.registry import register_method


@register_method("random", "Random ranking", short="random", kind="reference",
                 signed=False, needs_gradients=False,
                 uses_baseline=False, cost="free", bucketed=False, reference_only=True,
                 help="a seeded random ranking of the words: the floor to beat")
def explain(model, instances, *, seed: int = 0, **options) -> list:
    rng = np.random.default_rng(seed)
    return [rng.random(inst.n) for inst in instances]
