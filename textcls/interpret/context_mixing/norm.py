"""Norm-based attention (Kobayashi et al. 2020, "Attention is not only a weight"; reference code
gorokoba560/norm-analysis-of-transformer).

N^l_ij = || sum_h alpha^h_ij f^h(x_j) ||, f^h(x) = (x W_V^h + b_V^h) W_O^h (the head's slice of the output
projection, without its bias; x the attention's input: the layer-normed state in a pre-LN layer). The
explanation is the last layer's row of the pooled position (pool @ N^L: the [CLS]/cls row, the mean row, or
the rows weighted by the global attention); `per_layer=True` gives every layer's row.

ACT has no token x token attention: its only attention is the global pooling r = sum_j alpha_j o_j, whose
value transform is the identity, so N_j = alpha_j ||o_j||.
"""
from __future__ import annotations

import torch

from textcls.interpret.context_mixing.trace import (FLOAT_BYTES, Trace, attention_input, attention_probs,
    head_value_vectors, mixed_vectors, pooled, row_slices)


def norm_matrix(t: Trace, layer: int) -> torch.Tensor:
    """N^l (B, T, T): the norm of what each position i takes from each position j in layer `layer`. The vectors
    (B, T, T, d) are made a chunk of rows i at a time, as many as the memory budget holds (trace.row_slices)."""
    b, x = t.blocks[layer], t.inputs[layer]
    h = attention_input(b, x)
    P, f = attention_probs(b, h, t.real), head_value_vectors(b, h)              # (B, H, T, T), (B, H, T, d)
    B, T, d = x.shape
    out = x.new_zeros(B, T, T)
    for r in row_slices(T, 3 * B * T * d * FLOAT_BYTES):
        out[:, r] = mixed_vectors(P[:, :, r], f).norm(dim=-1)                    # (B, rows, T)
    return out


def norm(t: Trace, per_layer: bool = False) -> torch.Tensor:
    """(B, T) the pooled position's row of the last layer; per_layer: (B, layers, T)."""
    if not t.blocks:                                                             # ACT: the pooling attention
        return t.pool * t.inputs[-1].norm(dim=-1)                                # (B, T)
    if per_layer:
        return torch.stack([pooled(t, norm_matrix(t, i)) for i in range(t.n_layers)], dim=1)
    return pooled(t, norm_matrix(t, t.n_layers - 1))                             # (B, T)
