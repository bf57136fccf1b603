"""Value zeroing (Mohebbi et al. 2023, "Quantifying Context Mixing in Transformers"; reference code
hmohebbi/ValueZeroing and inseq's value_zeroing op, followed here).

For layer l and each position j: run the layer on its actual input with position j's value vector set to zero
in every head (its residual stays), giving x~_i^(-j); C_ij = 1 - cos(x~_i^(-j), x_i), x_i the layer's actual
output (the whole layer: attention, residual, layer norms, feed-forward). Rows normalised to sum 1, rolled out
over the layers (R = C_L ... C_1, no identity added); the pooled row of R. The T zeroings of a layer run as
batches of copies, as many at a time as the explanation's memory budget holds (explain_max_memory_mb; at most
`chunk`), over the text's one set of attention weights.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from textcls.interpret.context_mixing.trace import (FLOAT_BYTES, Trace, attention_input, attention_probs,
    block_rest, pooled, rollout, row_normalise, row_slices, split_heads)

CHUNK_ROWS = 256   # copies of one text per batch at most (fewer where the memory budget says so)


def copy_bytes(T: int, d: int, d_ffn: int) -> int:
    """What one zeroed copy of a text of T positions costs while its layer runs: about 18 (T, d) float32 tensors
    (the values, their mix, the attention's output, the residual, layer norms, the distance in float64) and two
    (T, d_ffn)."""
    return FLOAT_BYTES * T * (18 * d + 2 * d_ffn)


def value_zeroing_matrix(t: Trace, layer: int, chunk: int = CHUNK_ROWS) -> torch.Tensor:
    """C^l (B, T, T): row i, column j = how far zeroing j's value moves i's output; rows normalised. A text's
    attention weights are computed once (zeroing a value does not change them) and its copies run `chunk` at a
    time at most, as many as the memory budget holds (trace.row_slices); the weights are never copied per
    copy."""
    b, x, out = t.blocks[layer], t.inputs[layer], t.inputs[layer + 1]
    B, T, d = x.shape
    rows = []
    for i in range(B):
        n = int(t.real[i].sum())
        cols = torch.zeros(T, T, dtype=x.dtype)                                  # (T, T) [query i, zeroed j]
        xi, real = x[i:i + 1], t.real[i:i + 1]                                   # (1, T, d), (1, T)
        P = attention_probs(b, attention_input(b, xi), real)[0]                  # (H, T, T), shared by the copies
        v = split_heads(b.v(attention_input(b, xi)), b.heads)[0]                 # (H, T, dh)
        H, _, dh = v.shape
        per = copy_bytes(T, d, b.ffn_in.out_features)
        for part in row_slices(n, per, fixed=P.numel() * FLOAT_BYTES):
            for start in range(part.start, part.stop, chunk):
                js = torch.arange(start, min(part.stop, start + chunk))          # positions zeroed, one per copy
                k = len(js)
                vk = v.unsqueeze(2).repeat(1, 1, k, 1)                           # (H, T, k, dh)
                vk[:, js, torch.arange(k)] = 0                                   # copy c: position js[c]'s value 0
                mixed = (P @ vk.reshape(H, T, k * dh)).view(H, T, k, dh)         # (H, T, k, dh)
                a = b.o(mixed.permute(2, 1, 0, 3).reshape(k, T, d))              # (k, T, d) heads merged
                y = block_rest(b, xi, a)                                         # (k, T, d)
                # in float64: a far position's distance is ~1e-7, the size of float32's rounding of a cosine
                dist = 1 - F.cosine_similarity(y.double(), out[i:i + 1].double().expand(k, T, d), dim=-1)
                cols[:, js] = dist.t().to(cols.dtype)                            # (T, k) [query, copy]
        rows.append(cols * t.real[i][None, :] * t.real[i][:, None])
    return row_normalise(torch.stack(rows).clamp(min=0))                         # (B, T, T)


def value_zeroing(t: Trace) -> torch.Tensor:
    if not t.blocks:
        raise ValueError("value zeroing needs self-attention layers")
    return pooled(t, rollout([value_zeroing_matrix(t, i) for i in range(t.n_layers)]))
