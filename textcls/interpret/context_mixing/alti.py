"""ALTI, Aggregation of Layer-wise Token-to-token Interactions (Ferrando et al. 2022, "Measuring the Mixing of
Contextual Information in the Transformer"; reference code mt-upc/transformer-contributions,
src/contributions.py, followed here).

Per layer, T_i(x_j) is what position j gives position i's output of the attention sub-layer:
post-LN (BERT) T_i(x_j) = gamma * (u_ij - mean(u_ij)) / s_i with u_ij = z_ij + [i = j] x_i and s_i the
standard deviation of LN1's actual input; y_i is LN1's actual output (biases included). Pre-LN (textcls'
Transformer: no LN after the residual) T_i(x_j) = u_ij and y_i = x_i + Attn_i. Contribution
c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1) (Manhattan distance, as the authors), rows normalised to sum 1,
rolled out over the layers (R = C_L ... C_1); the pooled row of R.
"""
from __future__ import annotations

import torch

from textcls.interpret.context_mixing.globenc import LayerVectors, ln_linear
from textcls.interpret.context_mixing.trace import Trace, pooled, rollout, row_normalise


def alti_matrix(t: Trace, layer: int) -> torch.Tensor:
    """C^l (B, T, T), rows normalised over real sources; computed a chunk of rows at a time (LayerVectors)."""
    lv = LayerVectors(t, layer)
    b, total = lv.block, lv.total
    y_all = total if b.pre_ln else b.ln1(total)                                  # (B, T, d)
    B, T, _ = total.shape
    c = total.new_zeros(B, T, T)
    for r in lv.slices():
        u = lv.rows(r)                                                           # (B, q, T, d)
        if not b.pre_ln:
            u = ln_linear(u, b.ln1, total[:, r])
        y = y_all[:, r]                                                          # (B, q, d)
        dist = (y.unsqueeze(2) - u).abs().sum(-1)                                # (B, q, T) ||y_i - T_i(x_j)||_1
        c[:, r] = (y.abs().sum(-1, keepdim=True) - dist).clamp(min=0)
    return row_normalise(c * t.real[:, None, :])


def alti(t: Trace) -> torch.Tensor:
    if not t.blocks:
        raise ValueError("ALTI needs self-attention layers")
    return pooled(t, rollout([alti_matrix(t, i) for i in range(t.n_layers)]))
