"""LIME (Ribeiro et al. 2016) through Captum: Bernoulli(0.5) token subsets, Captum's cosine kernel and a
closed-form weighted ridge fit (textcls.interpret.attributions.WeightedRidge)."""
from __future__ import annotations

from textcls.interpret.methods.registry import Option, register_method


@register_method("lime", "LIME", short="LIME", kind="perturbation",
                 signed=True, needs_gradients=False,
                 uses_baseline=True, uses_steps=False, cost="samples", aliases=(),
                 contrastive=True,
                 options=(Option("n_samples", 200, "random word subsets the linear model is fitted on (more: slower, less "
                                 "noise)", low=10, high=5000, label="LIME samples"),),
                 help="a weighted linear fit of the label's probability on random word subsets")
def explain(model, instances, **options) -> list:
    from textcls.interpret.methods._captum import attribute
    return attribute(model, instances, "lime", **options)
