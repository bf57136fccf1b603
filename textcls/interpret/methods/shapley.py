"""Shapley value sampling (Castro et al. 2009) through Captum, one feature per token: random token orders;
the scores sum exactly to F(x) - F(baseline) (textcls.interpret.attributions)."""
from __future__ import annotations

from textcls.interpret.methods.registry import Option, register_method


@register_method("shapley", "Shapley sampling", short="Shapley", kind="perturbation",
                 signed=True, needs_gradients=False,
                 uses_baseline=True, uses_steps=False, cost="samples", aliases=('shapley_value_sampling', 'svs'),
                 contrastive=True,
                 options=(Option("n_samples", 25, "random word orders averaged over (more: slower, less noise)", low=1,
                                 high=1000, label="Shapley samples"),),
                 help="each word's average marginal contribution over random word orders")
def explain(model, instances, **options) -> list:
    from textcls.interpret.methods._captum import attribute
    return attribute(model, instances, "shapley", **options)
