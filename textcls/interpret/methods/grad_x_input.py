"""Gradient x input (Shrikumar et al. 2016) through Captum: e . dF/de per token, signed, baseline-free
(textcls.interpret.attributions)."""
from __future__ import annotations

from textcls.interpret.methods.registry import register_method


@register_method("grad_x_input", "Gradient x input", short="grad x input", kind="gradient",
                 signed=True, needs_gradients=True,
                 uses_baseline=False, uses_steps=False, cost="pass", aliases=('input_x_gradient', 'gradxinput'),
                 contrastive=True,
                 help="each word's embedding times its gradient (signed)")
def explain(model, instances, **options) -> list:
    from textcls.interpret.methods._captum import attribute
    return attribute(model, instances, "grad_x_input", **options)
