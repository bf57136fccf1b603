"""Value zeroing (Mohebbi et al. 2023, "Quantifying Context Mixing in Transformers"; reference code
hmohebbi/ValueZeroing and inseq's value_zeroing op, followed here).

For layer l and each position j: run the layer on its actual input with position j's value vector set to zero
in every head (its residual stays), giving x~_i^(-j); C_ij = 1 - cos(x~_i^(-j), x_i), x_i the layer's actual
output (the whole layer: attention, residual, layer norms, feed-forward). Rows normalised to sum 1, rolled out
over the layers (R = C_L ... C_1, no identity added); the pooled row of R. The T zeroings of a layer run as
one batch of T copies (`chunk` copies at a time).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from textcls.interpret.context_mixing.trace import Trace, block_forward, pooled, rollout, row_normalise

CHUNK_ROWS = 256   # copies of one text per batch


def value_zeroing_matrix(t: Trace, layer: int, chunk: int = CHUNK_ROWS) -> torch.Tensor:
    """C^l (B, T, T): row i, column j = how far zeroing j's value moves i's output; rows normalised."""
    b, x, out = t.blocks[layer], t.inputs[layer], t.inputs[layer + 1]
    B, T, d = x.shape
    rows = []
    for i in range(B):
        n = int(t.real[i].sum())
        cols = torch.zeros(T, T, dtype=x.dtype)                                  # (T, T) [query i, zeroed j]
        for start in range(0, n, chunk):
            js = torch.arange(start, min(n, start + chunk))                      # positions zeroed, one per copy
            k = len(js)
            zero = torch.zeros(k, T, dtype=x.dtype)
            zero[torch.arange(k), js] = 1.0                                      # (k, T)
            y = block_forward(b, x[i:i + 1].expand(k, T, d), t.real[i:i + 1].expand(k, T), zero)  # (k, T, d)
            dist = 1 - F.cosine_similarity(y, out[i:i + 1].expand(k, T, d), dim=-1)  # (k, T) [copy, query]
            cols[:, js] = dist.t()
        rows.append(cols * t.real[i][None, :] * t.real[i][:, None])
    return row_normalise(torch.stack(rows).clamp(min=0))                         # (B, T, T)


def value_zeroing(t: Trace) -> torch.Tensor:
    if not t.blocks:
        raise ValueError("value zeroing needs self-attention layers")
    return pooled(t, rollout([value_zeroing_matrix(t, i) for i in range(t.n_layers)]))
