"""A model (or a hand-made function) as a probability function over batches of instances, and the distance
between two predictions (total variation). A model is never mutated, and must be in eval mode."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import torch

from textcls.interpret.instances import Instance, stack
from textcls.interpret.rankings import tvd  # noqa: F401  (re-exported: numpy only)

ProbFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def check_model(model: Any) -> None:
    if isinstance(model, torch.nn.Module) and model.training:
        raise ValueError("the model is in training mode (dropout makes every number random); pass model.eval() "
                         "- or a copy of it - to textcls.interpret")


def is_model(obj: Any) -> bool:
    return isinstance(obj, torch.nn.Module)


def prob_fn(model_or_fn: Any, edits: dict | None = None) -> ProbFn:
    """A function (ids (N, ...), mask) -> probabilities (N, C) without gradient.

    `model_or_fn` is a TextClassifier (softmax of its logits, with optional edits) or already such a function
    (tests use small hand-made ones)."""
    if is_model(model_or_fn):
        model = model_or_fn
        check_model(model)

        def fn(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            with torch.no_grad():
                return torch.softmax(model(ids, mask, edits=edits).logits.float(), dim=-1)
        return fn
    if edits:
        raise ValueError("edits need a model, not a probability function")
    if not callable(model_or_fn):
        raise TypeError(f"expected a TextClassifier or a callable (ids, mask) -> probabilities, got "
                        f"{type(model_or_fn).__name__}")
    return model_or_fn


def score(fn: ProbFn, instances: Sequence[Instance], batch_size: int = 64) -> np.ndarray:
    """Probabilities (N, C) of each instance, batched."""
    out = []
    for i in range(0, len(instances), batch_size):
        ids, mask = stack(instances[i:i + batch_size])
        p = fn(ids, mask)
        out.append(torch.as_tensor(p).detach().double().numpy())
    return np.concatenate(out, axis=0)


__all__ = ["ProbFn", "check_model", "is_model", "prob_fn", "score", "tvd"]
