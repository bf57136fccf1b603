"""GlobEnc (Modarressi et al. 2022, "GlobEnc: Quantifying Global Token Attribution by Incorporating the Whole
Encoder Layer in Transformers"; reference code mohsenfayyaz/GlobEnc, followed exactly for BERT and held to it by
tests/test_context_mixing_reference.py).

Per layer, the vector position i takes from position j through attention and the first residual,
z_ij + [i = j] x_i (z_ij = sum_h alpha^h_ij f^h(x_j), f^h(x) = (x W_V^h + b_V^h) W_O^h: Kobayashi's vectors, the
output bias b_O left out), pushed through the layer norms as linear maps of their actual input:
LN(sum_j u_j) ~ sum_j gamma * (u_j - mean(u_j)) / s, s the standard deviation of the whole actual input (beta
left out). Post-LN (BERT): through LN1, then through LN2 with the feed-forward left out of the decomposition (its
output only enters LN2's s), as GlobEnc does ("N-Enc"; the DecompX paper's "GlobEnc+FFN" decomposes the FFN).
Pre-LN (textcls' Transformer, an extension: the authors cover post-LN encoders only): the residual stream has no
LN between layers, so the vector is z_ij + [i = j] x_i itself. N_ij = ||that vector|| (pad sources 0), rolled out
over the layers as the authors do, with no normalisation of any kind: R = N_L ... N_1 (no identity added: the
residual is inside N); GlobEnc is the pooled row of R ([CLS] for BERT). The values are not shares: their scale
grows with depth (the rollout is done in float64); textcls' word weights renormalise them (words.py).
`globenc(t, normalise_rows=True)` normalises each N's rows to sum 1 before the rollout (textcls' GlobEnc before
it was matched to the authors' code; not the published method).
"""
from __future__ import annotations

import torch

from textcls.interpret.context_mixing.trace import (FLOAT_BYTES, Trace, attention_input, attention_output,
    attention_probs, ffn, head_value_vectors, mixed_vectors, pooled, rollout, row_normalise, row_slices)


def ln_linear(u: torch.Tensor, ln, total: torch.Tensor) -> torch.Tensor:
    """The layer norm as a linear map of one part u (..., d) of its input `total` (B, T, d), bias left out:
    gamma * (u - mean(u)) / std(total). u is (B, T, T, d) (position i, source j)."""
    s = (total.var(-1, unbiased=False, keepdim=True) + ln.eps).sqrt()           # (B, T, 1)
    return ln.weight * (u - u.mean(-1, keepdim=True)) / s.unsqueeze(2)          # (B, T, T, d)


class LayerVectors:
    """One layer's pieces of the vectors z_ij + [i = j] x_i, made a chunk of rows i at a time (`rows`) so that
    the (B, T, T, d) whole is never held: the attention weights P, each head's value vectors f, the layer's input
    x and the attention sub-layer's pre-LN total x + Attn (B, T, d)."""

    PER_ROW_COPIES = 8           # (B, T, d) tensors a row's vectors cost at once (z, LN's centring, scale, norm)

    def __init__(self, t: Trace, layer: int):
        self.block, self.x = t.blocks[layer], t.inputs[layer]
        h = attention_input(self.block, self.x)
        self.P = attention_probs(self.block, h, t.real)                           # (B, H, T, T)
        self.f = head_value_vectors(self.block, h)                                # (B, H, T, d)
        self.total = self.x + attention_output(self.block, h, self.P)              # (B, T, d)

    def slices(self) -> list[slice]:
        B, T, d = self.x.shape
        return row_slices(T, self.PER_ROW_COPIES * B * T * d * FLOAT_BYTES)

    def rows(self, r: slice) -> torch.Tensor:
        """z_ij + [i = j] x_i for the rows i in r: (B, rows, T, d)."""
        z = mixed_vectors(self.P[:, :, r], self.f)                                # (B, q, T, d)
        i = torch.arange(r.start, r.start + z.shape[1])
        z[:, torch.arange(len(i)), i] += self.x[:, i]                             # + the residual at j = i
        return z


def residual_vectors(t: Trace, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(z_ij + [i = j] x_i (B, T, T, d), the attention sub-layer's pre-LN total x + Attn (B, T, d)), whole (the
    methods here use LayerVectors' chunks)."""
    lv = LayerVectors(t, layer)
    return lv.rows(slice(0, lv.x.shape[1])), lv.total


def globenc_matrix(t: Trace, layer: int, normalise_rows: bool = False) -> torch.Tensor:
    """N^l (B, T, T): ||the vector i takes from j|| after LN1 and LN2 (post-LN), pad sources 0; as the authors'
    N-Enc (GlobEnc src/modeling/modeling_bert.py, BertNormOutput and BertLayer: `post_ln2_norm`), unnormalised
    unless `normalise_rows`. Computed a chunk of rows at a time (LayerVectors)."""
    lv = LayerVectors(t, layer)
    b, total = lv.block, lv.total
    if not b.pre_ln:
        x1 = b.ln1(total)
        total2 = x1 + ffn(b, x1)                                                 # LN2's input: its deviation
    B, T, _ = total.shape
    n = total.new_zeros(B, T, T)
    for r in lv.slices():
        u = lv.rows(r)                                                           # (B, q, T, d)
        if not b.pre_ln:
            u = ln_linear(u, b.ln1, total[:, r])                                 # through LN1
            u = ln_linear(u, b.ln2, total2[:, r])                                # through LN2, FFN left out
        n[:, r] = u.norm(dim=-1)
    n = n * t.real[:, None, :]                                                   # (B, T, T)
    return row_normalise(n) if normalise_rows else n


def globenc(t: Trace, normalise_rows: bool = False) -> torch.Tensor:
    """(B, T) float64: the pooled row of the rollout R = N_L ... N_1 (the authors' AttentionRollout,
    GlobEnc src/attention_rollout.py). `normalise_rows`: each N's rows normalised to sum 1 first (not the
    authors')."""
    if not t.blocks:
        raise ValueError("GlobEnc needs self-attention layers")
    mats = [globenc_matrix(t, i, normalise_rows).double() for i in range(t.n_layers)]
    return pooled(t, rollout(mats))
