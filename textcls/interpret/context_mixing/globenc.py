"""GlobEnc (Modarressi et al. 2022, "GlobEnc: Quantifying Global Token Attribution by Incorporating the Whole
Encoder Layer in Transformers").

Per layer, the vector position i takes from position j through attention and the first residual,
z_ij + [i = j] x_i (z_ij = sum_h alpha^h_ij f^h(x_j), Kobayashi's vectors), pushed through the layer norms
as linear maps of their actual input: LN(sum_j u_j) = sum_j gamma * (u_j - mean(u_j)) / s + beta, s the
standard deviation of the whole input. Post-LN (BERT): through LN1, then through LN2 with the feed-forward left
out of the decomposition (its output only enters LN2's s), as GlobEnc does (it does not decompose the FFN; the
DecompX paper's "GlobEnc+FFN" does). Pre-LN (textcls' Transformer): the residual stream has no LN between
layers, so the vector is z_ij + [i = j] x_i itself. N_ij = ||that vector||, rows normalised to sum 1, rolled
out over the layers (R = N_L ... N_1, no identity added: the residual is inside N); the pooled row of R.
"""
from __future__ import annotations

import torch

from textcls.interpret.context_mixing.trace import (Trace, attention_input, attention_output, attention_probs,
    ffn, head_value_vectors, mixed_vectors, pooled, rollout, row_normalise)


def ln_linear(u: torch.Tensor, ln, total: torch.Tensor) -> torch.Tensor:
    """The layer norm as a linear map of one part u (..., d) of its input `total` (B, T, d), bias left out:
    gamma * (u - mean(u)) / std(total). u is (B, T, T, d) (position i, source j)."""
    s = (total.var(-1, unbiased=False, keepdim=True) + ln.eps).sqrt()           # (B, T, 1)
    return ln.weight * (u - u.mean(-1, keepdim=True)) / s.unsqueeze(2)          # (B, T, T, d)


def residual_vectors(t: Trace, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(z_ij + [i = j] x_i (B, T, T, d), the attention sub-layer's pre-LN total x + Attn (B, T, d))."""
    b, x = t.blocks[layer], t.inputs[layer]
    h = attention_input(b, x)
    P = attention_probs(b, h, t.real)                                            # (B, H, T, T)
    z = mixed_vectors(P, head_value_vectors(b, h))                               # (B, T, T, d)
    z = z + torch.diag_embed(x.transpose(1, 2)).permute(0, 2, 3, 1)              # (B, T, T, d) + residual
    return z, x + attention_output(b, h, P)


def globenc_matrix(t: Trace, layer: int) -> torch.Tensor:
    """N^l (B, T, T), rows normalised over real sources."""
    b = t.blocks[layer]
    u, total = residual_vectors(t, layer)
    if not b.pre_ln:
        u = ln_linear(u, b.ln1, total)                                           # through LN1
        x1 = b.ln1(total)
        u = ln_linear(u, b.ln2, x1 + ffn(b, x1))                                 # through LN2, FFN left out
    return row_normalise(u.norm(dim=-1) * t.real[:, None, :])                    # (B, T, T)


def globenc(t: Trace) -> torch.Tensor:
    """(B, T) the pooled row of the rollout."""
    if not t.blocks:
        raise ValueError("GlobEnc needs self-attention layers")
    return pooled(t, rollout([globenc_matrix(t, i) for i in range(t.n_layers)]))
