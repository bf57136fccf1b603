"""A model's own attention as an explanation: one importance value per real token, from the model's maps.

The rule - which map each model's importance is read from, and how - is `textcls.interpret.importance` (documented
there), the same one Compare, Inspect and the paper views shade words with. This module runs the model on a
batch of instances (with optional map edits) and applies that rule to each instance's cropped maps.
Scores are normalised to sum to 1 over the real tokens (when not all zero), so models compare on one scale.
"""
from __future__ import annotations

from typing import Sequence

import torch

from textcls.interpret import importance
from textcls.interpret.importance import HOWS
from textcls.runtime.threads import for_texts
from textcls.interpret.instances import as_batch, Instance, stack
from textcls.interpret.probabilities import check_model
from textcls.interpret.attributions import Attribution

def _specs(model) -> dict:
    return {s.name: s for s in model.map_specs()}


def _plan(model, how: str) -> tuple[str, str]:
    return importance.plan(_specs(model), how, type(model).__name__)


def explanation_source(model, how: str = "auto") -> str:
    """A one-line description of what `attention_importance(model, how=...)` reads (for captions)."""
    return _plan(model, how)[1]


def attention_importance_instances(model, instances: Sequence[Instance], how: str = "auto",
                                   edits: dict | None = None, labels: Sequence[str] | None = None
                                   ) -> list[Attribution]:
    """The model's own per-token importance for each instance, as Attribution objects (method "attention")."""
    with for_texts(len(instances)):  # thread policy (textcls.runtime.threads): a few texts are interactive work
        return _attention_importance_instances(model, instances, how, edits, labels)


def _attention_importance_instances(model, instances, how, edits, labels) -> list[Attribution]:
    check_model(model)
    if not instances:
        return []
    _, detail = _plan(model, how)
    specs = _specs(model)
    ids, mask = stack(instances)
    with torch.no_grad():
        out = model(ids, mask, return_maps=True, edits=edits)
    maps = {k: v.detach().cpu().numpy() for k, v in out.maps.items()}
    probs = torch.softmax(out.logits.float(), -1)
    results = []
    for b, inst in enumerate(instances):
        shape = tuple(inst.ids.shape)                   # (L,) or (S, W): this instance's grid inside the batch
        n_tok = shape[-1] if len(shape) == 1 else 0
        one = {k: importance.crop_map(specs.get(k), m[b], n_tok, *(shape if len(shape) == 2 else (None, None)))
               for k, m in maps.items()}
        real = inst.mask.numpy()
        v = importance.normalise(importance.importance_grid(specs, one, real, how)[real])
        target = int(probs[b].argmax())
        a = Attribution("attention", v, inst.grid(v), target, float(probs[b, target]), "prob",
                        tokens=inst.tokens, extras={"how": how, "source": detail})
        if labels is not None:
            a.label = str(labels[target])
        results.append(a)
    return results


def attention_importance(model, ids: torch.Tensor, mask: torch.Tensor | None = None, how: str = "auto",
                         *, tokens=None, edits: dict | None = None) -> list[Attribution]:
    """Per-token importance from the model's own maps for a batch of ids (B, L) or (B, S, W)."""
    pad_id = getattr(getattr(model, "config", None), "pad_id", 0)
    ids, mask = as_batch(model, ids, mask)
    return attention_importance_instances(model, Instance.from_batch(ids, mask, tokens, pad_id=pad_id), how,
                                          edits)


__all__ = ["HOWS", "attention_importance", "attention_importance_instances", "explanation_source"]
