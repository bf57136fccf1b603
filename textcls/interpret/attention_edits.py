"""Helpers of the attention edits (permuted, uniform): the real keys of a map, a row spread uniformly, a row permuted
among its real keys."""
from __future__ import annotations

import torch


def key_mask(t: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Bool mask broadcastable to t marking the real positions of t's last (key) axis.

    Uses the mask the probe passes (its leading axes match t's leading axes, its last axis t's last axis),
    else falls back to t's non-zero entries (masked softmax gives exactly 0 at pads)."""
    if mask is not None:
        m = mask.bool()
        lead = m.dim() - 1
        if m.dim() <= t.dim() and m.shape[-1] == t.shape[-1] and tuple(m.shape[:lead]) == tuple(t.shape[:lead]):
            view = tuple(m.shape[:lead]) + (1,) * (t.dim() - m.dim()) + (m.shape[-1],)
            return m.reshape(view)
    return t != 0


def uniform_like(t: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Each row's mass spread uniformly over its real keys: rows summing to 1 become uniform, padded rows (sum 0)
    stay 0, and a "partial" row (the rest on a cls token) keeps its mass, so the full row still sums to 1."""
    km = key_mask(t, mask).expand_as(t).to(t.dtype)
    return km / km.sum(-1, keepdim=True).clamp(min=1.0) * t.sum(-1, keepdim=True)


def permute_rows(t: torch.Tensor, mask: torch.Tensor | None, generator: torch.Generator | None,
                 rand: torch.Tensor | None = None) -> torch.Tensor:
    """Randomly permute each row's weights among its real key positions (each row its own permutation).
    The sort keys are uniform draws from `generator`, or `rand` (shaped like t) when given: the batched data-set
    path draws each text's block from that text's own generator (textcls.interpret.batched)."""
    km = key_mask(t, mask).expand_as(t)
    keys = (torch.rand(t.shape, generator=generator) if rand is None else rand).to(t.device)
    keys = torch.where(km, keys, torch.full_like(keys, 2.0) + torch.arange(t.shape[-1], device=t.device) * 1e-3)
    perm = keys.argsort(dim=-1, stable=True)                                # real positions first, in random order
    real = km.to(torch.int64)
    n_real = real.sum(-1, keepdim=True)
    # each position's rank when real positions come first, in order (pads after them, in order)
    rank = torch.where(km, real.cumsum(-1) - 1, n_real + (1 - real).cumsum(-1) - 1)
    return t.gather(-1, perm).gather(-1, rank)                              # real slot j gets the j-th drawn weight


__all__ = ["key_mask", "permute_rows", "uniform_like"]
