"""DecompX (Modarressi et al. 2023, "DecompX: Explaining Transformers Decisions by Propagating Token
Decomposition"; reference code mohsenfayyaz/DecompX, its default configuration followed here).

Every position's vector is carried as a sum of one vector per input position, x_i = sum_k x_{i<-k}
(start: x_{i<-k} = [i = k] x_i, the embedding output), through every operation of the model:
- linear maps act on each part; a bias b is split over the parts in proportion to |x_{i<-k} . b| ("absdot");
- attention: the weights alpha are taken as given, so z_{i<-k} = sum_h sum_j alpha^h_ij x_{j<-k} W_V^h W_O^h;
- layer norm: gamma * (x_{i<-k} - mean(x_{i<-k})) / s_i with s_i the actual input's deviation, beta split;
- a nonlinearity f (the FFN's GELU/ReLU, the pooler's tanh): each part times the slope f(a)/a at the actual
  pre-activation a (the zero-origin approximation, "GeLU_ZO" / "ZO"), which is exact for the whole;
- pooling (the [CLS]/cls position, the mean, or the global attention's alpha, taken as given) and the
  classifier head (BERT's pooler and classifier; the Transformer's optional hidden layer and output).
The explanation of class c is the logit's part from each position: sum_k of it is the logit exactly (tested).
Applies to textcls' Transformer and to BERT-family checkpoints with a pooler (BertForSequenceClassification);
not to RoBERTa/DistilBERT heads (their classifier heads differ; not wired) nor ACT (no self-attention).
"""
from __future__ import annotations

import torch

from textcls.interpret.context_mixing.trace import Block, Trace, attention_input, attention_probs


def split_bias(parts: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """parts (B, T, K, d) + bias (d,) split over k in proportion to |parts_k . bias| (DecompX "absdot")."""
    if bias is None:
        return parts
    w = torch.einsum("btkd,d->btk", parts, bias).abs()                          # (B, T, K)
    w = w / w.sum(-1, keepdim=True).clamp(min=1e-12)
    return parts + w.unsqueeze(-1) * bias


def linear(parts: torch.Tensor, lin) -> torch.Tensor:
    return split_bias(parts @ lin.weight.t(), lin.bias)                          # (..., out)


def layer_norm(parts: torch.Tensor, ln, total: torch.Tensor) -> torch.Tensor:
    """parts (B, T, K, d) of `total` (B, T, d) through ln as a linear map of each part; beta split."""
    s = (total.var(-1, unbiased=False, keepdim=True) + ln.eps).sqrt()           # (B, T, 1)
    out = ln.weight * (parts - parts.mean(-1, keepdim=True)) / s.unsqueeze(2)   # (B, T, K, d)
    return split_bias(out, ln.bias)


def slope(fn, a: torch.Tensor) -> torch.Tensor:
    """f(a) / a elementwise; at a = 0 the derivative there (a central difference)."""
    eps = 1e-4
    small = a.abs() < eps
    safe = torch.where(small, torch.ones_like(a), a)
    d0 = (fn(torch.full_like(a, eps)) - fn(torch.full_like(a, -eps))) / (2 * eps)
    return torch.where(small, d0, fn(safe) / safe)


def nonlinear(parts: torch.Tensor, fn) -> torch.Tensor:
    total = parts.sum(-2)                                                        # (..., d)
    return parts * slope(fn, total).unsqueeze(-2)


def attention(parts: torch.Tensor, b: Block, h: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """The attention sub-layer's output, split: parts of its input h (B, T, K, d) -> (B, T, K, d)."""
    P = attention_probs(b, h, real)                                              # (B, H, T, T)
    B, T, K, d = parts.shape
    v = (parts @ b.v.weight.t()).view(B, T, K, b.heads, -1)                      # (B, T, K, H, dh) no bias
    mixed = torch.einsum("bhij,bjkhe->bikhe", P, v).reshape(B, T, K, d)          # (B, T, K, d)
    out = mixed @ b.o.weight.t()                                                 # (B, T, K, d)
    bias = b.o.bias + b.v.bias @ b.o.weight.t() if b.v.bias is not None else b.o.bias  # rows of P sum to 1
    return split_bias(out, bias)


def ffn(parts: torch.Tensor, b: Block) -> torch.Tensor:
    return linear(nonlinear(linear(parts, b.ffn_in), b.act), b.ffn_out)


def block(parts: torch.Tensor, b: Block, x: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """Parts of a block's input x (B, T, d) -> parts of its output."""
    if b.pre_ln:
        h_parts = layer_norm(parts, b.ln1, x)
        parts = parts + attention(h_parts, b, attention_input(b, x), real)
        x1 = parts.sum(2)
        return parts + ffn(layer_norm(parts, b.ln2, x1), b)
    pre1 = parts + attention(parts, b, x, real)
    x1_parts = layer_norm(pre1, b.ln1, pre1.sum(2))
    pre2 = x1_parts + ffn(x1_parts, b)
    return layer_norm(pre2, b.ln2, pre2.sum(2))


def decompose(t: Trace) -> torch.Tensor:
    """(B, K, C): each input position's part of each class logit."""
    if not t.blocks or t.head is None:
        raise ValueError("DecompX needs self-attention layers and a classifier head it can follow "
                         "(textcls' Transformer, BERT with a pooler)")
    x0 = t.inputs[0]                                                             # (B, T, d)
    parts = torch.diag_embed(x0.transpose(1, 2)).permute(0, 2, 3, 1)             # (B, T, K, d) [i = k] x_i
    parts = parts * t.real[:, None, :, None]
    for b, x in zip(t.blocks, t.inputs):
        parts = block(parts, b, x, t.real)
    if t.head.final_ln is not None:
        parts = layer_norm(parts, t.head.final_ln, parts.sum(2))
    v = torch.einsum("bt,btkd->bkd", t.pool.to(parts.dtype), parts).unsqueeze(1)  # (B, 1, K, d) pooled
    for kind, op in t.head.layers:
        v = linear(v, op) if kind == "linear" else nonlinear(v, op)
    return v[:, 0]                                                               # (B, K, C)


def decompx(t: Trace, target: torch.Tensor | None = None) -> torch.Tensor:
    """(B, T): each position's part of the target class's logit (default: the predicted class)."""
    parts = decompose(t)                                                         # (B, K, C)
    target = t.logits.argmax(-1) if target is None else target
    return parts.gather(2, target.view(-1, 1, 1).expand(-1, parts.shape[1], 1))[..., 0]
