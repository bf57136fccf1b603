"""The Captum methods' one call into the engine (textcls.interpret.attributions), with the options it reads."""
from __future__ import annotations

ENGINE_OPTIONS = ("labels", "baseline", "n_steps", "seed", "target", "output", "tolerance", "atol", "max_steps",
                  "window", "n_samples", "internal_batch_size", "edits", "contrast")


def attribute(model, instances, method: str, **options) -> list:
    from textcls.interpret.attributions import attribute_instances
    return attribute_instances(model, instances, method, **{k: v for k, v in options.items() if k in ENGINE_OPTIONS})
