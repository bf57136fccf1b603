"""DecompX (Modarressi et al. 2023, "DecompX: Explaining Transformers Decisions by Propagating Token
Decomposition"; reference code mohsenfayyaz/DecompX, its demo's default configuration - absdot bias split,
GeLU_ZO, tanh ZO, vector aggregation, pooler and classifier included - followed exactly for BERT and held to it
by tests/test_context_mixing_reference.py).

Every position's vector is carried as a sum of one vector per input position, x_i = sum_k x_{i<-k}
(start: x_{i<-k} = [i = k] x_i, the embedding output), through every operation of the model:
- linear maps act on each part; a bias b is split over the parts in proportion to |x_{i<-k} . b| ("absdot");
- attention: the weights alpha are taken as given, so a_{i<-k} = sum_h sum_j alpha^h_ij x_{j<-k} W_V^h W_O^h.
  Its biases as the authors': in the first layer the value bias goes with its own token through the weights
  (a_{i<-k} += sum_h alpha^h_ik b_V^h W_O^h), in later layers W_O b_V joins b_O; that bias is split over the
  parts of the residual plus the attention, x_{i<-k} + a_{i<-k} (what enters LN1 in BERT; the residual stream
  in a pre-LN layer), not over the attention's parts alone;
- layer norm: gamma * (x_{i<-k} - mean(x_{i<-k})) / s_i with s_i the actual input's deviation, beta split;
- the FFN: W_1 with b_1 split over its parts, the activation, W_2 with b_2 split over its parts (the residual
  is added after);
- a nonlinearity f (the FFN's GELU/ReLU, the pooler's tanh): each part times the slope f(a)/a at the actual
  pre-activation a (the zero-origin approximation, "GeLU_ZO" / "ZO"), which is exact for the whole;
- pooling (the [CLS]/cls position, the mean, or the global attention's alpha, taken as given) and the
  classifier head (BERT's pooler and classifier; the Transformer's optional hidden layer and output).
The explanation of class c is the logit's part from each position: sum_k of it is the logit exactly (tested).
Applies to textcls' Transformer (pre-LN or post-LN: the pre-LN path, LN1 before the attention and no LN on the
residual stream, is textcls' extension of the same rules; the authors cover post-LN BERT and RoBERTa) and to
BERT-family checkpoints with a pooler (BertForSequenceClassification); not to RoBERTa/DistilBERT heads (their
classifier heads differ; not wired) nor ACT (no self-attention).
Memory: a layer holds every position's parts of every position and their value vectors (2 x T x T x d floats per
text) and works through the positions in chunks sized to the explanation's limit (explain_max_memory_mb); a text
whose parts alone exceed the limit is refused in one line naming the most positions that fit (`check_memory`).
Work skipped, the numbers kept up to float32 rounding (`attention`; tests/test_context_mixing_speed_equivalence.py):
the first layer maps only each token's own part through W_V and W_O (the others are 0), and the last layer,
which computes only the pooled rows, mixes the parts before mapping them.
"""
from __future__ import annotations

import torch

from textcls.interpret.context_mixing.trace import (FLOAT_BYTES, Block, Trace, attention_input, attention_probs,
    budget_bytes, mixed_vectors, row_slices, split_heads)


def split_bias(parts: torch.Tensor, bias: torch.Tensor | None, inplace: bool = False) -> torch.Tensor:
    """parts (B, T, K, d) + bias (d,) split over k in proportion to |parts_k . bias| (DecompX "absdot");
    `inplace`: added to `parts` itself."""
    if bias is None:
        return parts
    w = (parts @ bias).abs_()                                                    # (B, T, K)
    w /= w.sum(-1, keepdim=True).clamp(min=1e-12)
    return parts.addcmul_(w.unsqueeze(-1), bias) if inplace else torch.addcmul(parts, w.unsqueeze(-1), bias)


def linear(parts: torch.Tensor, lin) -> torch.Tensor:
    return split_bias(parts @ lin.weight.t(), lin.bias, inplace=True)            # (..., out)


def layer_norm(parts: torch.Tensor, ln, total: torch.Tensor) -> torch.Tensor:
    """parts (B, T, K, d) of `total` (B, T, d) through ln as a linear map of each part; beta split."""
    c = total - total.mean(-1, keepdim=True)                                     # (B, T, d)
    s = (c.square().mean(-1, keepdim=True) + ln.eps).sqrt()                     # (B, T, 1) (torch.var: slower)
    out = parts - parts.mean(-1, keepdim=True)                                   # (B, T, K, d)
    return split_bias(out.mul_(ln.weight / s.unsqueeze(2)), ln.bias, inplace=True)


def slope(fn, a: torch.Tensor) -> torch.Tensor:
    """f(a) / a elementwise; at a = 0 the derivative there (a central difference)."""
    eps = 1e-4
    small = a.abs() < eps
    safe = torch.where(small, torch.ones_like(a), a)
    ends = fn(torch.tensor([eps, -eps], dtype=a.dtype))                          # (2,)
    d0 = (ends[0] - ends[1]) / (2 * eps)
    return torch.where(small, d0, fn(safe) / safe)


def nonlinear(parts: torch.Tensor, fn) -> torch.Tensor:
    """parts (..., K, d) through fn: each part times the slope at their sum (in place: `parts` is overwritten)."""
    return parts.mul_(slope(fn, parts.sum(-2)).unsqueeze(-2))


def ffn(parts: torch.Tensor, b: Block) -> torch.Tensor:
    return linear(nonlinear(linear(parts, b.ffn_in), b.act), b.ffn_out)


def row_bytes(K: int, d: int, d_ffn: int) -> int:
    """What one position's row of parts (K, d) costs while a block works on it: about 10 (K, d) and 4 (K, d_ffn)
    tensors at once (the mix, the attention's output, bias splits, layer norms, the feed-forward)."""
    return FLOAT_BYTES * K * (10 * d + 4 * d_ffn)


def held_bytes(B: int, T: int, d: int, heads: int) -> int:
    """What DecompX holds for a whole layer: every position's parts and their value vectors (2 x B x T x T x d)
    and the attention weights (B x heads x T x T)."""
    return FLOAT_BYTES * B * T * T * (2 * d + heads)


def max_positions(d: int, d_ffn: int, heads: int, budget: int) -> int:
    """The most positions one text may have for DecompX to fit in `budget` bytes."""
    T = 1
    while held_bytes(1, T + 1, d, heads) + row_bytes(T + 1, d, d_ffn) <= budget:
        T += 1
    return T


def check_memory(t: Trace) -> None:
    """LimitError (a ValueError, one line) when the parts of a batch alone would not fit the explanation's memory
    budget (explain_max_memory_mb), with the most positions that fit."""
    from textcls.runtime.limits import LimitError, current, fmt_mb
    B, T, d = t.inputs[0].shape
    b = t.blocks[0]
    need = held_bytes(B, T, d, b.heads) + row_bytes(T, d, b.ffn_in.out_features) * B
    budget = budget_bytes()
    if need > budget:
        top = max_positions(d, b.ffn_in.out_features, b.heads, budget)
        raise LimitError(f"DecompX would hold {fmt_mb(need)} for {B if B > 1 else 'this'} text{'s' if B > 1 else ''} "
                         f"of {T:,} positions (every position's part of every position: {T:,} x {T:,} x {d:,} "
                         f"floats, twice), over the limit of {current().explain_max_memory_mb:,} MB per "
                         f"explanation (explain_max_memory_mb, env TEXTCLS_EXPLAIN_MAX_MEMORY_MB); at most "
                         f"{top:,} positions ([CLS]/[SEP] included) fit: explain a shorter text")


def _chunks(rows: torch.Tensor, per_row: int, fixed: int) -> list[torch.Tensor]:
    return [rows[s] for s in row_slices(len(rows), per_row, fixed)]


def attention(parts: torch.Tensor, b: Block, x: torch.Tensor, real: torch.Tensor, first: bool, P: torch.Tensor,
              rows: torch.Tensor | None, chunks):
    """(mix, bias): mix(r) gives the attention's output parts of positions r (B, q, K, d) without the bias; the
    bias is what is left to split. As the authors (DecompX src/modeling_bert.py BertLayer.forward, lines
    761-793): in the first layer every position is still its own token alone and the value bias goes with it
    through the weights (a_{i<-k} = sum_h alpha^h_ik (x_k W_V^h + b_V^h) W_O^h: their `value_layer` holds b_V),
    leaving b_O; later layers map the parts without b_V and leave b_O + W_O b_V (their `accumulated_bias`).
    The value parts (the parts themselves; LN1 of them in a pre-LN block), per head, are made a chunk of
    positions at a time; in the first layer only each token's own part is mapped (the others are 0), and where
    only a few rows are asked for (the last layer's pooled ones) the parts are mixed first and mapped after."""
    B, T, K, d = parts.shape
    H = b.heads
    wo = b.o.weight.t()                                                          # (d, d)
    if first:                                                                    # parts[:, j, k] = [j = k] x_j
        own = parts[:, torch.arange(T), torch.arange(T)].unsqueeze(2)            # (B, T, 1, d)
        src = (layer_norm(own, b.ln1, x) if b.pre_ln else own)[:, :, 0]          # (B, T, d)
        v = src @ b.v.weight.t()                                                 # (B, T, d)
        if b.v.bias is not None:
            v = v + real[..., None].to(v.dtype) * b.v.bias
        f = torch.einsum("bhtk,hkd->bhtd", split_heads(v, H), wo.reshape(H, -1, d))   # (B, H, T, d)
        return (lambda r: mixed_vectors(P[:, :, r], f)), b.o.bias
    bias = b.o.bias
    if b.v.bias is not None:
        carried = b.o.weight @ b.v.bias                                          # W_O b_V (d,)
        bias = carried if bias is None else bias + carried
    if rows is not None and H * len(rows) <= min(T, d):                          # a few rows: mix, then map
        src = layer_norm(parts, b.ln1, x) if b.pre_ln else parts                 # (B, T, K, d)
        wv = b.v.weight.view(H, -1, d)                                           # (H, dh, d)

        def mix_first(r):
            m = torch.einsum("bhqj,bjkd->bhqkd", P[:, :, r], src)                # (B, H, q, K, d)
            return torch.einsum("bhqkd,hed->bqkhe", m, wv).reshape(B, m.shape[2], K, d) @ wo
        return mix_first, bias
    v = parts.new_empty(B, H, T, K, d // H)                                      # (B, H, T, K, dh)
    for r in chunks:
        src = layer_norm(parts[:, r], b.ln1, x[:, r]) if b.pre_ln else parts[:, r]
        v[:, :, r] = (src @ b.v.weight.t()).view(B, src.shape[1], K, H, -1).permute(0, 3, 1, 2, 4)
    flat = v.view(B, H, T, -1)                                                   # (B, H, T, K * dh)

    def mix(r):
        Pr = P[:, :, r]                                                          # (B, H, q, T)
        q = Pr.shape[2]
        mixed = (Pr @ flat).view(B, H, q, K, -1).permute(0, 2, 3, 1, 4).reshape(B, q, K, d)
        return mixed @ wo                                                        # (B, q, K, d)
    return mix, bias


def block(parts: torch.Tensor, b: Block, x: torch.Tensor, real: torch.Tensor, first: bool = False,
          rows: torch.Tensor | None = None) -> torch.Tensor:
    """Parts of a block's input x (B, T, d) -> parts of its output, written over `parts` (B, T, K, d) in place a
    chunk of positions at a time (a position's output parts need every position's value parts, made first, and
    its own input parts only), so the layer holds the parts, their values and one chunk's work; `rows`: only
    these positions' outputs (the last layer: the pooled ones). The attention sub-layer's bias is split over the
    residual plus attention parts together (the authors' `bias_decomposer(accumulated_bias,
    residual_weighted_layer)`), the FFN's two biases over the FFN's own parts (their `ffn_decomposer`)."""
    B, T, K, d = parts.shape
    per_row = B * row_bytes(K, d, b.ffn_in.out_features)
    fixed = held_bytes(B, T, d, b.heads)
    P = attention_probs(b, attention_input(b, x), real)                          # (B, H, T, T)
    every = row_slices(T, per_row, fixed)                                        # chunks of positions
    mix, bias = attention(parts, b, x, real, first, P, rows, every)
    for r in every if rows is None else _chunks(rows, per_row, fixed):
        p = split_bias(mix(r).add_(parts[:, r]), bias, inplace=True)             # (B, q, K, d) residual + attention
        if b.pre_ln:
            new = ffn(layer_norm(p, b.ln2, p.sum(2)), b).add_(p)
        else:
            x1_parts = layer_norm(p, b.ln1, p.sum(2))
            pre2 = ffn(x1_parts, b).add_(x1_parts)
            new = layer_norm(pre2, b.ln2, pre2.sum(2))
        parts[:, r] = new
    return parts


def decompose(t: Trace) -> torch.Tensor:
    """(B, K, C): each input position's part of each class logit. Refused (LimitError, one line) when the parts
    would not fit the explanation's memory budget (check_memory)."""
    if not t.blocks or t.head is None:
        raise ValueError("DecompX needs self-attention layers and a classifier head it can follow "
                         "(textcls' Transformer, BERT with a pooler)")
    check_memory(t)
    x0 = t.inputs[0]                                                             # (B, T, d)
    B, T, d = x0.shape
    parts = x0.new_zeros(B, T, T, d)                                             # (B, T, K, d) [i = k] x_i
    i = torch.arange(T)
    parts[:, i, i] = x0 * t.real[:, :, None].to(x0.dtype)
    pool = t.pool.to(parts.dtype)                                                # (B, T)
    pooled_rows = torch.nonzero(pool.ne(0).any(0))[:, 0]                         # what the classifier reads
    last = t.n_layers - 1
    for n, (b, x) in enumerate(zip(t.blocks, t.inputs)):
        parts = block(parts, b, x, t.real, first=n == 0, rows=pooled_rows if n == last else None)
    v = parts.new_zeros(B, T, d)                                                 # (B, K, d) pooled
    for r in _chunks(pooled_rows, B * row_bytes(T, d, 0), held_bytes(B, T, d, 0) // 2):
        p = parts[:, r]
        if t.head.final_ln is not None:
            p = layer_norm(p, t.head.final_ln, p.sum(2))
        v += torch.einsum("bt,btkd->bkd", pool[:, r], p)
    v = v.unsqueeze(1)                                                           # (B, 1, K, d)
    for kind, op in t.head.layers:
        v = linear(v, op) if kind == "linear" else nonlinear(v, op)
    return v[:, 0]                                                               # (B, K, C)


def decompx(t: Trace, target: torch.Tensor | None = None) -> torch.Tensor:
    """(B, T): each position's part of the target class's logit (default: the predicted class)."""
    parts = decompose(t)                                                         # (B, K, C)
    target = t.logits.argmax(-1) if target is None else target
    return parts.gather(2, target.view(-1, 1, 1).expand(-1, parts.shape[1], 1))[..., 0]
