"""A model's own attention as an explanation: one importance value per real token, from the model's maps.

What each model's importance is (`how="auto"`), in order of preference:
1. A pooling attention over tokens - a normalised attention map whose last axis is "token"/"key_token" and that
   has no query axis: ACT `alpha`; LAMA `attention` (mean over heads); CAN `beta` (mean over heads);
   Transformer `alpha` (global pooling), `cls_attention` (cls pooling: the cls token's row, mean over heads, last
   layer, renormalised over the input tokens) or `decoder_attention` (decoder pooling, last layer). When several
   qualify the one with the fewest axes wins (the final pooling, not the self-attention).
2. HCAN: beta (word weight inside its sentence, mean over heads) times gamma (sentence weight, mean over heads),
   flattened sentence by sentence - the paper's Fig. 4 read as one vector.
3. Self-attention only (Transformer with max/mean pooling, HCAN/CAN with max-pool): `how="rollout"` (Abnar &
   Zuidema 2020: per layer A' = (mean_heads A + I) / 2 renormalised, multiplied from the first layer up; the
   cls row with cls pooling, else the mean over real query rows) for flat models with a layer axis, otherwise
   the attention each token receives in the last layer (mean over heads and real query rows).
4. CNNs (Kim CNN, AGCNN): the max-pool picks. Every filter's max-pool chose one n-gram (its `argmax_*` map);
   `how="activation"` (default) adds the pooled activation value to each token of that n-gram,
   `how="coverage"` adds 1 (the number of filters whose chosen n-gram covers the token). AGCNN reads the gated
   maps m (what is pooled), Kim CNN the ReLU maps. Filters whose maximum is 0 chose nothing and add nothing.
Scores are normalised to sum to 1 over the real tokens (when not all zero), so models compare on one scale.
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np
import torch

from ..threads import for_texts
from ._common import as_batch, Instance, check_model, stack
from .attributions import Attribution

HOWS = ("auto", "rollout", "received", "activation", "coverage")
_KEY_AXES = ("token", "key_token")


def _specs(model) -> dict:
    return {s.name: s for s in model.map_specs()}


def _pooling_maps(specs: dict) -> list:
    out = [s for s in specs.values() if s.kind == "attention" and s.values in ("real", "partial")
           and s.axes and s.axes[-1] in _KEY_AXES and not any(a.startswith("query") for a in s.axes)]
    return sorted(out, key=lambda s: (len(s.axes), s.name))


def _self_maps(specs: dict) -> list:
    return [s for s in specs.values() if s.kind == "attention" and s.values in ("real", "partial")
            and len(s.axes) >= 2 and s.axes[-2].startswith("query") and s.axes[-1].startswith("key")]


def _argmax_maps(specs: dict) -> list:
    return [s for s in specs.values() if s.values == "index" and s.axes == ("filter",)
            and s.name.startswith("argmax_") and re.search(r"h(\d+)", s.name)]


def explanation_source(model, how: str = "auto") -> str:
    """A one-line description of what `attention_importance(model, how=...)` reads (for captions)."""
    kind, detail = _plan(model, how)
    return detail


def _plan(model, how: str) -> tuple[str, str]:
    if how not in HOWS:
        raise ValueError(f"unknown attention explanation {how!r}; choose one of {HOWS}")
    specs = _specs(model)
    selfs = [s for s in _self_maps(specs) if "sentence" not in s.axes[-1]]
    if how in ("activation", "coverage"):
        if not _argmax_maps(specs):
            raise ValueError(f"{type(model).__name__} has no max-pool argmax maps for how={how!r}")
        return "cnn", f"max-pool picks: {how} of the n-grams each filter chose"
    if how == "rollout":
        flat = [s for s in selfs if s.axes[-1] == "key_token" and "layer" in s.axes]
        if not flat:
            raise ValueError(f"{type(model).__name__} has no layered token self-attention for rollout")
        return "rollout", f"attention rollout over the layers of '{flat[0].name}'"
    if how == "received":
        if not selfs:
            raise ValueError(f"{type(model).__name__} has no self-attention map")
        return "received", f"attention received in the last layer of '{selfs[0].name}' (mean over heads, queries)"
    pooled = _pooling_maps(specs)
    if pooled:
        s = pooled[0]
        return "pooled", f"'{s.name}'" + (" mean over heads" if "head" in s.axes else "") + \
            (", last layer" if "layer" in s.axes else "")
    if "beta" in specs and "gamma" in specs and specs["beta"].axes == ("sentence", "head", "word"):
        return "hier", "beta (word in sentence) x gamma (sentence in document), mean over heads"
    if selfs:
        if any(s.axes[-1] == "key_token" and "layer" in s.axes for s in selfs):
            return _plan(model, "rollout")
        return _plan(model, "received")
    if _argmax_maps(specs):
        return _plan(model, "activation")
    raise ValueError(f"{type(model).__name__} exposes no attention or max-pool map to explain with")


def _mean_heads_last_layer(t: torch.Tensor, axes: tuple[str, ...]) -> tuple[torch.Tensor, tuple[str, ...]]:
    """Reduce a (B, *axes) map: last layer, mean over heads."""
    axes = list(axes)
    if "layer" in axes:
        i = axes.index("layer")
        t = t.select(i + 1, t.shape[i + 1] - 1)
        axes.pop(i)
    if "head" in axes:
        i = axes.index("head")
        t = t.mean(i + 1)
        axes.pop(i)
    return t, tuple(axes)


def _received(att: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """att (..., Q, K), query mask (..., Q) -> mean over real queries (..., K)."""
    q = mask.to(att.dtype).unsqueeze(-1)
    return (att * q).sum(-2) / q.sum(-2).clamp(min=1.0)


def _rollout(maps: dict, mask: torch.Tensor, cls: bool) -> torch.Tensor:
    att = maps["attention"].float().mean(2)                                   # (B, N, L, L)
    B, N, L, _ = att.shape
    real = mask.float()
    if cls:
        to_cls = maps["attention_to_cls"].float().mean(2)                     # (B, N, L)
        cls_row = maps["cls_attention"].float().mean(2)                       # (B, N, L)
        cls_self = maps["cls_self"].float().mean(2)                           # (B, N)
        top = torch.cat([cls_self[..., None, None], cls_row.unsqueeze(2)], dim=-1)   # (B, N, 1, T)
        rest = torch.cat([to_cls.unsqueeze(-1), att], dim=-1)                 # (B, N, L, T)
        att = torch.cat([top, rest], dim=2)                                   # (B, N, T, T)
        real = torch.cat([real.new_ones(B, 1), real], dim=1)                  # (B, T)
    T = att.shape[-1]
    eye = torch.diag_embed(real)                                              # (B, T, T) identity on real rows
    R = eye.clone()
    for n in range(N):
        A = 0.5 * att[:, n] + 0.5 * eye
        A = A / A.sum(-1, keepdim=True).clamp(min=1e-12)
        R = A @ R
    if cls:
        return R[:, 0, 1:]                                                    # (B, L)
    return _received(R, mask)


def _cnn(maps: dict, specs: dict, mask: torch.Tensor, how: str) -> torch.Tensor:
    B, L = mask.shape
    out = torch.zeros(B, L, dtype=torch.float64)
    for s in _argmax_maps(specs):
        h = int(re.search(r"h(\d+)", s.name).group(1))
        src = next((n for n in (s.name.replace("argmax_", "gated_"), s.name.replace("argmax_", "conv_"))
                    if n in maps), None)
        if src is None:
            continue
        idx = maps[s.name].long()                                             # (B, F)
        val = maps[src].double().gather(2, idx.unsqueeze(-1)).squeeze(-1)    # (B, F)
        w = (val > 0).double() if how == "coverage" else val.clamp(min=0)
        for off in range(h):
            pos = (idx + off).clamp(max=L - 1)
            inside = (idx + off) < L
            out.scatter_add_(1, pos, w * inside.double())
    return out * mask.double()


def attention_importance_instances(model, instances: Sequence[Instance], how: str = "auto",
                                   edits: dict | None = None, labels: Sequence[str] | None = None
                                   ) -> list[Attribution]:
    """The model's own per-token importance for each instance, as Attribution objects (method "attention")."""
    with for_texts(len(instances)):  # thread policy (textcls.threads): a few texts are interactive work
        return _attention_importance_instances(model, instances, how, edits, labels)


def _attention_importance_instances(model, instances, how, edits, labels) -> list[Attribution]:
    check_model(model)
    if not instances:
        return []
    kind, detail = _plan(model, how)
    specs = _specs(model)
    ids, mask = stack(instances)
    with torch.no_grad():
        out = model(ids, mask, return_maps=True, edits=edits)
    maps = out.maps
    probs = torch.softmax(out.logits.float(), -1)
    if kind == "pooled":
        s = _pooling_maps(specs)[0]
        imp, _ = _mean_heads_last_layer(maps[s.name].double(), s.axes)       # (B, L)
    elif kind == "hier":
        beta = maps["beta"].double().mean(2)                                  # (B, S, W)
        gamma = maps["gamma"].double().mean(1)                                # (B, S)
        imp = beta * gamma.unsqueeze(-1)                                      # (B, S, W)
    elif kind == "rollout":
        imp = _rollout(maps, mask, "cls_attention" in maps).double()
    elif kind == "received":
        s = [x for x in _self_maps(specs) if "sentence" not in x.axes[-1]][0]
        att, axes = _mean_heads_last_layer(maps[s.name].double(), s.axes)    # (B, [S,] Q, K)
        imp = _received(att, mask)
    else:
        imp = _cnn(maps, specs, mask, how if how in ("activation", "coverage") else "activation")
    imp = imp.reshape(mask.shape) * mask.double()
    results = []
    for b, inst in enumerate(instances):
        sl = (b,) + tuple(slice(0, n) for n in inst.ids.shape)
        v = imp[sl][inst.mask].numpy().astype(np.float64)
        total = v.sum()
        if total > 0:
            v = v / total
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
