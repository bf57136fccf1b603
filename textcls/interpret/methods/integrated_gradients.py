"""Integrated gradients (Sundararajan et al. 2017) on the embedding layer through Captum: the path integral of
the gradient from a baseline (pad / unk / zero) to the text, Gauss-Legendre steps doubled until the convergence
delta sum(scores) - (F(x) - F(baseline)) is within tolerance (textcls.interpret.attributions)."""
from __future__ import annotations

from textcls.interpret.methods.registry import register_method


@register_method("integrated_gradients", "Integrated gradients", short="IG", kind="gradient",
                 signed=True, needs_gradients=True,
                 uses_baseline=True, uses_steps=True, cost="steps", aliases=('ig',),
                 contrastive=True,
                 help="the gradient integrated along the path from a baseline to the text; sums to F(x) - F(baseline)")
def explain(model, instances, **options) -> list:
    from textcls.interpret.methods._captum import attribute
    return attribute(model, instances, "integrated_gradients", **options)
