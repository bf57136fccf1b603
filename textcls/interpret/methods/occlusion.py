"""Occlusion (Zeiler & Fergus 2014) through Captum: each window of tokens replaced by the baseline; a token's
score is F(x) - F(occluded), averaged over the windows that cover it (textcls.interpret.attributions)."""
from __future__ import annotations

from textcls.interpret.methods.registry import Option, register_method


@register_method("occlusion", "Occlusion", short="occlusion", kind="perturbation",
                 signed=True, needs_gradients=False,
                 uses_baseline=True, uses_steps=False, cost="per word", aliases=(),
                 contrastive=True,
                 options=(Option("window", 1, "words hidden at once: a window slides over the text and a word's "
                                 "score averages the windows that cover it (1: one word at a time)", low=1, high=8,
                                 label="Occlusion window"),),
                 help="the drop in the label's probability when the word is replaced by the baseline")
def explain(model, instances, **options) -> list:
    from textcls.interpret.methods._captum import attribute
    return attribute(model, instances, "occlusion", **options)
