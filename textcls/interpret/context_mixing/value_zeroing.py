"""Value zeroing (Mohebbi et al. 2023, "Quantifying Context Mixing in Transformers"; reference code
hmohebbi/ValueZeroing and inseq's value_zeroing op, followed here).

For layer l and each position j: run the layer on its actual input with position j's value vector set to zero
in every head (its residual stays), giving x~_i^(-j); C_ij = 1 - cos(x~_i^(-j), x_i), x_i the layer's actual
output (the whole layer: attention, residual, layer norms, feed-forward). Rows normalised to sum 1, rolled out
over the layers (R = C_L ... C_1, no identity added); the pooled row of R.

How it is computed: zeroing a value leaves the attention weights as they are, so it only takes j's term out of
the attention's output, Attn^(-j)(x)_i = Attn(x)_i - t_ij with t_ij = sum_h alpha^h_ij f^h(x_j) and
f^h(x_j) = (x_j W_V^h + b_V^h) W_O^h. The residual sum is z_ij = x_i + Attn(x)_i - t_ij; the feed-forward's input
is LN(z_ij) (LN1 post-LN, LN2 pre-LN), and since a layer norm is linear up to its row's scale s_ij,
W_1 LN(z_ij) + b_1 = (A_i - G_ij) / s_ij + W_1 beta + b_1 with A_i = W_1 (gamma * centred z_i) and
G_ij = W_1 (gamma * centred t_ij) = sum_h alpha^h_ij W_1 (gamma * centred f^h(x_j)): the first feed-forward
matrix runs on whichever is fewest rows (`w1_route`): the zeroings' terms t_ij, the H x T head vectors, or the d
rows of W_O (then each head's value). The attention runs once per text; the zeroings run as many at a time as
the explanation's memory budget holds (explain_max_memory_mb; at most `chunk`); the last layer computes only the
rows the classifier reads (the pooled row of R needs no other row of C_L). Checked against the zeroing run
through the whole block, position by position, in tests/test_context_mixing_speed_equivalence.py.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from textcls.interpret.context_mixing.trace import (FLOAT_BYTES, Block, Trace, attention_input,
    attention_output, attention_probs, head_value_vectors, pooled, rollout, row_normalise, row_slices, split_heads)

CHUNK_ROWS = 256   # zeroings of one text per batch at most (fewer where the memory budget says so)


def copy_bytes(T: int, d: int, d_ffn: int) -> int:
    """What one zeroing of T query positions costs while its layer runs: about 18 (T, d) float32 tensors (its
    term, the residual sum, layer norms, the output, the distance in float64) and three (T, d_ffn)."""
    return FLOAT_BYTES * T * (18 * d + 3 * d_ffn)


def _ffn_side(b: Block):
    """The layer norm before the feed-forward and W_1 (gamma * centred v) as a function of v (..., d)."""
    ln = b.ln2 if b.pre_ln else b.ln1

    def w1(v: torch.Tensor) -> torch.Tensor:
        return F.linear(ln.weight * (v - v.mean(-1, keepdim=True)), b.ffn_in.weight)   # (..., d_ffn)
    return ln, w1


def w1_route(heads: int, T: int, d: int, q: int, n: int) -> str:
    """How W_1 (gamma * centred t_ij) is made for q rows and n zeroings of a text of T positions, by the fewest
    rows W_1 runs on: "zeroings" (each t_ij, q x n rows), "heads" (the head vectors f^h(x_j), H x T rows,
    combined with the weights alpha^h_ij) or "weights" (W_O's d rows once, then each head's value: T rows)."""
    cost = {"zeroings": q * n, "heads": heads * T, "weights": d + T}
    return min(cost, key=cost.get)


def _head_w1(b: Block, h: torch.Tensor, f: torch.Tensor, route: str) -> torch.Tensor:
    """W_1 (gamma * centred f^h(x_j)) (T, H, d_ffn) for every position j and head h of one text (h: its
    attention input (1, T, d), f: (T, H, d)): on the head vectors ("heads") or through W_1 (gamma * centred
    W_O^h) and each head's value x_j W_V^h + b_V^h ("weights")."""
    T, H, d = f.shape
    _, w1 = _ffn_side(b)
    if route == "heads":
        return w1(f)
    wo = w1(b.o.weight.t()).view(H, -1, b.ffn_in.out_features)                  # (H, dh, d_ffn)
    return torch.einsum("thk,hkf->thf", split_heads(b.v(h), H)[0].transpose(0, 1), wo)


def _outputs(b: Block, z: torch.Tensor, wz: torch.Tensor) -> torch.Tensor:
    """The block's outputs (k, q, d) from the residual sums z (k, q, d) and wz = W_1 (gamma * centred z)
    (k, q, d_ffn), which is overwritten."""
    ln, _ = _ffn_side(b)
    c = z - z.mean(-1, keepdim=True)                                             # (k, q, d) centred
    s = (c.square().mean(-1, keepdim=True) + ln.eps).sqrt()                      # (k, q, 1) (torch.var: 10x slower)
    pre = wz.div_(s).add_(b.ffn_in(ln.bias))                                     # (k, q, d_ffn) W_1 LN(z) + b_1
    f = b.ffn_out(b.act(pre))                                                    # (k, q, d)
    return f.add_(z) if b.pre_ln else b.ln2(f.add_(ln.weight * c / s + ln.bias))


def value_zeroing_matrix(t: Trace, layer: int, chunk: int = CHUNK_ROWS,
                         rows: torch.Tensor | None = None) -> torch.Tensor:
    """C^l (B, T, T): row i, column j = how far zeroing j's value moves i's output; rows normalised; `rows`:
    only these rows (the others 0). A text's attention weights, head vectors f^h(x_j) and attention output are
    computed once; its zeroings run `chunk` at a time at most, as many as the memory budget holds
    (trace.row_slices)."""
    b, x, out = t.blocks[layer], t.inputs[layer], t.inputs[layer + 1]
    B, T, d = x.shape
    _, w1 = _ffn_side(b)
    mats = []
    for i in range(B):
        n = int(t.real[i].sum())
        cols = torch.zeros(T, T, dtype=x.dtype)                                  # (T, T) [query i, zeroed j]
        q = torch.arange(n) if rows is None else rows[rows < n]                  # the rows computed
        xi, real = x[i:i + 1], t.real[i:i + 1]                                   # (1, T, d), (1, T)
        h = attention_input(b, xi)                                               # (1, T, d)
        P = attention_probs(b, h, real)                                          # (1, H, T, T)
        f = head_value_vectors(b, h)[0].transpose(0, 1).contiguous()             # (T, H, d) [j] f^h(x_j)
        Pj = P[0][:, q].permute(2, 1, 0).contiguous()                            # (T, q, H) [j] alpha^h_ij
        z = xi[0, q] + attention_output(b, h, P)[0, q]                           # (q, d) nothing zeroed
        route = w1_route(b.heads, T, d, len(q), n)
        heads = route != "zeroings"
        A, g = (w1(z), _head_w1(b, h, f, route)) if heads else (None, None)      # (q, d_ffn), (T, H, d_ffn)
        want = out[i, q].double()                                                # (q, d)
        norm = want.norm(dim=-1)                                                 # (q,)
        per = copy_bytes(len(q), d, b.ffn_in.out_features)
        fixed = (P.numel() + f.numel() + (g.numel() if heads else 0)) * FLOAT_BYTES
        for part in row_slices(n, per, fixed):
            for start in range(part.start, part.stop, chunk):
                js = slice(start, min(part.stop, start + chunk))                 # positions zeroed, one per copy
                zj = z - torch.bmm(Pj[js], f[js])                                # (k, q, d) z - t_ij
                wz = torch.baddbmm(A, Pj[js], g[js], alpha=-1) if heads else w1(zj)   # (k, q, d_ffn)
                y = _outputs(b, zj, wz)                                          # (k, q, d)
                # in float64: a far position's distance is ~1e-7, the size of float32's rounding of a cosine
                y = y.double()                                                   # (F.cosine_similarity: 10x slower)
                cos = torch.einsum("kqd,qd->kq", y, want) / (y.norm(dim=-1) * norm).clamp(min=1e-30)  # (k, q)
                dist = 1 - cos                                                   # (k, q)
                cols[q, js] = dist.t().to(cols.dtype)                            # (q, k) [query, zeroed]
        mats.append(cols * t.real[i][None, :] * t.real[i][:, None])
    return row_normalise(torch.stack(mats).clamp(min=0))                         # (B, T, T)


def value_zeroing(t: Trace) -> torch.Tensor:
    if not t.blocks:
        raise ValueError("value zeroing needs self-attention layers")
    last = t.n_layers - 1
    read = torch.nonzero(t.pool.ne(0).any(0))[:, 0]                              # the rows the classifier reads
    return pooled(t, rollout([value_zeroing_matrix(t, i, rows=read if i == last else None)
                              for i in range(t.n_layers)]))
