"""A model's own per-token importance: the one rule every page, view and faithfulness metric uses.

Input: one text's maps as `Predictor.predict(..., return_maps=True)` returns them (numpy, batch axis removed,
cropped to the text with `crop_map`) and the model's `map_specs()`. What each model's importance is
(`how="auto"`), in order of preference:

1. A pooling attention over tokens - an attention map whose last axis is "token"/"key_token" and that has no
   query axis: ACT `alpha`; LAMA `attention` (mean over heads); CAN `beta` (mean over heads); Transformer
   `alpha` (ACT pooling), `cls_attention` (cls pooling: the cls token's row, last layer, mean over heads) or
   `decoder_attention` (decoder pooling, last layer). When several qualify, the one with the fewest axes wins
   (the final pooling, not a self-attention).
2. HCAN: beta (a word's weight inside its sentence, mean over heads) times gamma (the sentence's weight, mean
   over heads) - the paper's Fig. 4 read as one vector, sentence by sentence.
3. Self-attention only (Transformer with max/mean pooling): attention rollout (Abnar & Zuidema 2020; per layer
   A' = (mean_heads A + I) / 2 renormalised, multiplied from the first layer up; the cls row with cls pooling,
   else the mean over query rows). `how="received"`: the attention each token receives in the last layer.
4. CNNs (Kim CNN, AGCNN): the max-pool picks. Every filter's max-pool chose one n-gram (its `argmax_*` map);
   `how="activation"` (the default) adds the pooled activation to each token of that n-gram, `how="coverage"`
   adds 1. AGCNN reads its gated maps (what is pooled), Kim CNN its ReLU maps. A filter whose maximum is <= 0
   fired nowhere and adds nothing.

The weights are normalised to sum to 1 over the text's tokens (when not all zero), so models compare on one
scale. numpy only (no torch import): the app's figures use it without torch, and `textcls.interpret.attention` applies it to
every text of a batch.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:  # outputs imports torch; this module reads MapSpec's fields only
    from textcls.models.outputs import MapSpec

HOWS = ("auto", "rollout", "received", "activation", "coverage")
_KEY_AXES = ("token", "key_token")


# ---------------------------------------------------------------- which maps a model's rule reads

def _pooling_maps(specs: dict[str, MapSpec]) -> list[MapSpec]:
    out = [s for s in specs.values() if s.kind == "attention" and s.values in ("real", "partial")
           and s.axes and s.axes[-1] in _KEY_AXES and not any(a.startswith("query") for a in s.axes)]
    return sorted(out, key=lambda s: (len(s.axes), s.name))


def _self_maps(specs: dict[str, MapSpec]) -> list[MapSpec]:
    return [s for s in specs.values() if s.kind == "attention" and s.values in ("real", "partial")
            and len(s.axes) >= 2 and s.axes[-2].startswith("query") and s.axes[-1].startswith("key")
            and "sentence" not in s.axes[-1]]


def _argmax_maps(specs: dict[str, MapSpec]) -> list[MapSpec]:
    return [s for s in specs.values() if s.values == "index" and tuple(s.axes) == ("filter",)
            and s.name.startswith("argmax_") and re.search(r"h(\d+)", s.name)]


def plan(specs: dict[str, MapSpec], how: str = "auto", model: str = "this model") -> tuple[str, str]:
    """(kind, a one-line description of what is read) for a model with these map specs. kind is one of
    pooled, hier, rollout, received, cnn. ValueError (naming `model`) when the model exposes nothing to read
    for `how`."""
    if how not in HOWS:
        raise ValueError(f"unknown attention explanation {how!r}; choose one of {HOWS}")
    selfs = _self_maps(specs)
    if how in ("activation", "coverage"):
        if not _argmax_maps(specs):
            raise ValueError(f"{model} has no max-pool argmax maps for how={how!r}")
        return "cnn", ("max-pool picks: the pooled activation of each filter added to the n-gram it chose"
                       if how == "activation" else "max-pool picks: how many filters chose an n-gram covering "
                                                   "the token")
    if how == "rollout":
        flat = [s for s in selfs if s.axes[-1] == "key_token" and "layer" in s.axes]
        if not flat:
            raise ValueError(f"{model} has no layered token self-attention for rollout")
        return "rollout", f"attention rollout over the layers of '{flat[0].name}'"
    if how == "received":
        if not selfs:
            raise ValueError(f"{model} has no self-attention map")
        return "received", f"attention received in the last layer of '{selfs[0].name}' (mean over heads, queries)"
    pooled = _pooling_maps(specs)
    if pooled:
        s = pooled[0]
        return "pooled", f"'{s.name}'" + (", mean over heads" if "head" in s.axes else "") + \
            (", last layer" if "layer" in s.axes else "")
    if "beta" in specs and "gamma" in specs and tuple(specs["beta"].axes) == ("sentence", "head", "word"):
        return "hier", "beta (word in sentence) x gamma (sentence in document), mean over heads"
    if selfs:
        if any(s.axes[-1] == "key_token" and "layer" in s.axes for s in selfs):
            return plan(specs, "rollout", model)
        return plan(specs, "received", model)
    if _argmax_maps(specs):
        return plan(specs, "activation")
    raise ValueError(f"{model} exposes no attention or max-pool map to explain with")


# ---------------------------------------------------------------- one text's maps

def crop_map(spec: MapSpec | None, m: np.ndarray, n_tokens: int, n_sentences: int | None = None,
             n_words: int | None = None) -> np.ndarray:
    """One text's map (batch axis removed) cropped along its sequence axes: token axes to n_tokens, sentence
    and word axes (hierarchical inputs) to n_sentences / n_words. A copy."""
    if spec is None or len(spec.axes) != m.ndim:
        return np.array(m, copy=True)
    index = []
    for axis in spec.axes:
        if axis.endswith("token"):
            index.append(slice(0, n_tokens))
        elif axis.endswith("sentence") and n_sentences is not None:
            index.append(slice(0, n_sentences))
        elif axis.endswith("word") and n_words is not None:
            index.append(slice(0, n_words))
        else:
            index.append(slice(None))
    return np.array(m[tuple(index)], copy=True)


def _last_layer_mean_heads(m: np.ndarray, axes: Sequence[str]) -> np.ndarray:
    axes = list(axes)
    if "layer" in axes:
        m = np.take(m, m.shape[axes.index("layer")] - 1, axis=axes.index("layer"))
        axes.remove("layer")
    if "head" in axes:
        m = m.mean(axis=axes.index("head"))
    return m


def _received(att: np.ndarray, real: np.ndarray) -> np.ndarray:
    """att (..., Q, K), real queries (..., Q) -> mean over the real queries (..., K)."""
    q = real.astype(np.float64)[..., None]
    return (att * q).sum(-2) / np.clip(q.sum(-2), 1.0, None)


def _rollout(maps: dict[str, np.ndarray], real: np.ndarray) -> np.ndarray:
    att = np.asarray(maps["attention"], dtype=np.float64).mean(axis=1)          # (N, L, L)
    cls = "cls_attention" in maps
    if cls:
        to_cls = np.asarray(maps["attention_to_cls"], dtype=np.float64).mean(axis=1)   # (N, L)
        row = np.asarray(maps["cls_attention"], dtype=np.float64).mean(axis=1)         # (N, L)
        self_ = np.asarray(maps["cls_self"], dtype=np.float64).mean(axis=1)            # (N,)
        top = np.concatenate([self_[:, None, None], row[:, None, :]], axis=-1)         # (N, 1, T)
        rest = np.concatenate([to_cls[:, :, None], att], axis=-1)                      # (N, L, T)
        att = np.concatenate([top, rest], axis=1)                                      # (N, T, T)
        real = np.concatenate([[True], real])
    eye = np.diag(real.astype(np.float64))                                      # identity on real rows
    R = eye.copy()
    for a in att:                                                               # first layer up
        A = 0.5 * a + 0.5 * eye
        A = A / np.clip(A.sum(-1, keepdims=True), 1e-12, None)
        R = A @ R
    return R[0, 1:] if cls else _received(R, real)                              # (L,)


def _cnn(specs: dict[str, MapSpec], maps: dict[str, np.ndarray], n: int, how: str) -> np.ndarray:
    out = np.zeros(n)
    for s in _argmax_maps(specs):
        if s.name not in maps:
            continue
        h = int(re.search(r"h(\d+)", s.name).group(1))
        src = next((k for k in (s.name.replace("argmax_", "gated_"), s.name.replace("argmax_", "conv_"))
                    if k in maps), None)
        if src is None:
            continue
        pooled = np.asarray(maps[src], dtype=np.float64)                         # (F, positions)
        j = np.asarray(maps[s.name]).reshape(-1).astype(int)                     # (F,) each filter's pick
        f = np.flatnonzero((j >= 0) & (j < min(n, pooled.shape[1])))            # picks on padding skipped
        v = pooled[f, j[f]]                                                      # (F',)
        w = (v > 0).astype(np.float64) if how == "coverage" else np.maximum(v, 0.0)
        cols = j[f, None] + np.arange(h)                                         # (F', h) the h-gram's words
        ok = cols < n
        np.add.at(out, cols[ok], np.broadcast_to(w[:, None], cols.shape)[ok])   # filter by filter, in order
    return out


def importance_grid(specs: dict[str, MapSpec], maps: dict[str, np.ndarray], real: np.ndarray,
                    how: str = "auto") -> np.ndarray:
    """Unnormalised importance over one text's input grid, zero off `real`: (L,) for flat models, (S, W) for
    HCAN (sentence x word). `maps` are cropped to the grid (`crop_map`); `real` (bool, the grid's shape) marks
    the real tokens (a text cropped from a batch may keep padding inside HCAN's sentences). ValueError as
    `plan`."""
    kind, _ = plan(specs, how)
    real = np.asarray(real, dtype=bool)
    if kind == "pooled":
        s = _pooling_maps(specs)[0]
        grid = _last_layer_mean_heads(np.asarray(maps[s.name], dtype=np.float64), s.axes)
    elif kind == "hier":
        beta = np.asarray(maps["beta"], dtype=np.float64).mean(axis=1)              # (S, W)
        gamma = np.asarray(maps["gamma"], dtype=np.float64).mean(axis=0)            # (S,)
        grid = beta * gamma[:, None]
    elif kind == "rollout":
        grid = _rollout(maps, real)
    elif kind == "received":
        s = _self_maps(specs)[0]
        att = _last_layer_mean_heads(np.asarray(maps[s.name], dtype=np.float64), s.axes)   # (..., Q, K)
        grid = _received(att, real)
    else:
        grid = _cnn(specs, maps, real.shape[-1], how if how in ("activation", "coverage") else "activation")
    return grid.reshape(real.shape) * real


def normalise(v: np.ndarray) -> np.ndarray:
    """v / v.sum() when the sum is positive, else v (float64)."""
    v = np.asarray(v, dtype=np.float64)
    total = v.sum()
    return v / total if total > 0 else v


def token_weights(specs: dict[str, MapSpec], maps: dict[str, np.ndarray], tokens: Sequence[str],
                  sentences: Sequence[Sequence[str]] | None = None, how: str = "auto"
                  ) -> tuple[np.ndarray, str] | None:
    """(one weight per token of `tokens`, summing to 1; where it comes from) for one `Prediction`'s maps, or
    None when the model exposes nothing token-level or the text has no tokens."""
    n = len(tokens)
    if n == 0:
        return None
    try:
        _, source = plan(specs, how)
        if "beta" in maps and np.ndim(maps["beta"]) == 3:                       # HCAN: (S, W), sentence by sentence
            lengths = [len(s) for s in sentences] if sentences else [n]
            S, W = np.shape(maps["beta"])[0], np.shape(maps["beta"])[2]
            real = np.arange(W)[None, :] < np.array([lengths[i] if i < len(lengths) else 0 for i in range(S)])[:, None]
        else:
            real = np.ones(n, dtype=bool)
        grid = importance_grid(specs, maps, real, how)
    except (ValueError, KeyError, IndexError):
        return None
    v = grid[real] if grid.ndim == 2 else grid.reshape(-1)[:n]
    v = np.pad(v, (0, n - v.shape[0])) if v.shape[0] < n else v
    return normalise(v), source


__all__ = ["HOWS", "crop_map", "importance_grid", "normalise", "plan", "token_weights"]
