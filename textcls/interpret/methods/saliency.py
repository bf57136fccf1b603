"""Saliency (Simonyan et al. 2014) through Captum: |dF/de| summed over each token's embedding dimensions
(unsigned; textcls.interpret.attributions)."""
from __future__ import annotations

from textcls.interpret.methods.registry import register_method


@register_method("saliency", "Saliency", short="saliency", kind="gradient",
                 signed=False, needs_gradients=True,
                 uses_baseline=False, uses_steps=False, cost="pass", aliases=(),
                 contrastive=True,
                 help="the size of the gradient at each word's embedding (unsigned)")
def explain(model, instances, **options) -> list:
    from textcls.interpret.methods._captum import attribute
    return attribute(model, instances, "saliency", **options)
