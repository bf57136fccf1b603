"""One forward pass of a self-attention classifier, read into a form every context-mixing method shares.

A `Trace` holds, for a batch: each encoder block's modules (`Block`: the attention's q/k/v/o projections, the
two layer norms, the feed-forward), the input each block received in the model's own forward (read with
forward pre-hooks, never by re-running the encoder), which positions are real, which word owns each position,
and the pooling weights over positions (what the classifier reads: the [CLS]/cls position one-hot, the mean,
or ACT's global-attention alpha). Nothing in the models is rewritten: the trace reads modules and hooks.

Families (`trace(model, ids, mask)` picks by the model's class):
- Transformer (textcls.models.transformer), pre-LN or post-LN, pooling cls / mean / global (full attention
  only: local attention and the decoder's cross-attention are not a token x token mixing the methods assume);
- Hugging Face BERT-style encoders (BERT, MiniLM, RoBERTa, ELECTRA: `encoder.layer[i].attention.self.query` ...)
  and DistilBERT, post-LN, [CLS] (position 0) pooled;
- ACT: no self-attention between tokens (attentive convolutions mix neighbours), only the global attention:
  its blocks are empty and only `norm` applies, on the pooling attention itself (value = identity).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn as nn

from textcls.models.layers import masked_softmax


@dataclass
class Block:
    """One encoder layer. pre_ln: h = ln1(x); x1 = x + Attn(h); x2 = x1 + FFN(ln2(x1)).
    post-LN: x1 = ln1(x + Attn(x)); x2 = ln2(x1 + FFN(x1))."""

    q: nn.Linear
    k: nn.Linear
    v: nn.Linear
    o: nn.Linear
    heads: int
    ln1: nn.LayerNorm
    ln2: nn.LayerNorm
    ffn_in: nn.Linear
    ffn_out: nn.Linear
    act: Callable[[torch.Tensor], torch.Tensor]
    pre_ln: bool


@dataclass
class Head:
    """What follows the encoder: an optional final LN (per position), then pooling, then `layers`: a list of
    ("linear", nn.Linear) / ("act", fn) applied to the pooled vector; the last linear gives the logits."""

    final_ln: nn.LayerNorm | None
    layers: list = field(default_factory=list)


@dataclass
class Trace:
    blocks: list[Block]
    inputs: list[torch.Tensor]      # each block's input (B, T, d), then the last block's output
    real: torch.Tensor              # (B, T) bool: positions that exist ([CLS]/[SEP]/cls included)
    owner: torch.Tensor             # (B, T, W) 1 where position t is a piece of word w (specials: all 0)
    pool: torch.Tensor              # (B, T) weights the classifier reads the last layer's positions with
    head: Head | None               # None where the method cannot follow the classifier (DecompX)
    logits: torch.Tensor            # (B, C) the model's own logits on this batch
    family: str

    @property
    def n_layers(self) -> int:
        return len(self.blocks)


# ---------------------------------------------------------------- the shared block maths

def split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    B, T, d = x.shape
    return x.view(B, T, heads, d // heads).transpose(1, 2)                      # (B, H, T, dh)


def attention_input(b: Block, x: torch.Tensor) -> torch.Tensor:
    return b.ln1(x) if b.pre_ln else x


def attention_probs(b: Block, h: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """Softmax(q k^T / sqrt(dh)) over real keys; rows at pad queries are 0. (B, H, T, T)"""
    q, k = split_heads(b.q(h), b.heads), split_heads(b.k(h), b.heads)           # (B, H, T, dh)
    allowed = (real.unsqueeze(2) & real.unsqueeze(1)).unsqueeze(1)              # (B, 1, T, T)
    return masked_softmax(q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5, allowed)


def head_value_vectors(b: Block, h: torch.Tensor) -> torch.Tensor:
    """f^h(x_j) = (h_j W_V^h + b_V^h) W_O^h: each head's value through its slice of the output projection,
    without the output bias. (B, H, T, d)"""
    v = split_heads(b.v(h), b.heads)                                            # (B, H, T, dh)
    d = b.o.weight.shape[0]
    wo = b.o.weight.t().reshape(b.heads, -1, d)                                 # (H, dh, d)
    return torch.einsum("bhtk,hkd->bhtd", v, wo)                                # (B, H, T, d)


def mixed_vectors(P: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    """z_ij = sum_h alpha^h_ij f^h(x_j). (B, T, T, d)"""
    return torch.einsum("bhij,bhjd->bijd", P, f)


def attention_output(b: Block, h: torch.Tensor, P: torch.Tensor) -> torch.Tensor:
    """Attn(h) with the weights P: the heads merged through the output projection, its bias included. (B, T, d)"""
    v = split_heads(b.v(h), b.heads)                                            # (B, H, T, dh)
    return b.o((P @ v).transpose(1, 2).flatten(2))                              # (B, T, d)


def ffn(b: Block, x: torch.Tensor) -> torch.Tensor:
    return b.ffn_out(b.act(b.ffn_in(x)))


def block_forward(b: Block, x: torch.Tensor, real: torch.Tensor, zero_value: torch.Tensor | None = None):
    """The block's output (B, T, d) from its input, computed from its modules; `zero_value` (B, T) 0/1 zeroes
    those positions' value vectors in every head (value zeroing). Equal to the model's own block (tested)."""
    h = attention_input(b, x)
    P = attention_probs(b, h, real)                                             # (B, H, T, T)
    v = split_heads(b.v(h), b.heads)                                            # (B, H, T, dh)
    if zero_value is not None:
        v = v * (1 - zero_value.to(v.dtype))[:, None, :, None]
    return block_rest(b, x, b.o((P @ v).transpose(1, 2).flatten(2)))


def block_rest(b: Block, x: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """The block's output from its input x and its attention's output a (both (..., T, d)): the residual, the
    layer norms and the feed-forward."""
    if b.pre_ln:
        x1 = x + a
        return x1 + ffn(b, b.ln2(x1))
    x1 = b.ln1(x + a)
    return b.ln2(x1 + ffn(b, x1))


# ---------------------------------------------------------------- bounded working memory

FLOAT_BYTES = 4


def budget_bytes() -> int:
    """The working memory one explanation may use (textcls.runtime.limits: explain_max_memory_mb, env
    TEXTCLS_EXPLAIN_MAX_MEMORY_MB)."""
    from textcls.runtime.limits import current
    return int(current().explain_max_memory_mb) * 2**20


def row_slices(n: int, per_row: int, fixed: int = 0) -> list[slice]:
    """Slices of range(n) whose rows each cost `per_row` bytes, as many per slice as fit in the budget left once
    `fixed` bytes are held (at least one row per slice)."""
    step = max(1, (budget_bytes() - int(fixed)) // max(1, int(per_row)))
    return [slice(s, min(n, s + step)) for s in range(0, n, step)]


def rollout(mats: list[torch.Tensor]) -> torch.Tensor:
    """Product of per-layer contribution matrices from the first layer up (no identity added: the residual is
    inside each matrix): R = C_L ... C_1. (B, T, T)"""
    r = mats[0]
    for c in mats[1:]:
        r = c @ r
    return r


def row_normalise(c: torch.Tensor) -> torch.Tensor:
    return c / c.sum(-1, keepdim=True).clamp(min=1e-12)


def pooled(t: Trace, matrix: torch.Tensor) -> torch.Tensor:
    """The classifier's row of a (B, T, T) matrix: pool @ matrix. (B, T)"""
    return torch.einsum("bi,bij->bj", t.pool.to(matrix.dtype), matrix)


# ---------------------------------------------------------------- readers per family

class _Inputs:
    """Forward pre-hooks that keep each module's first positional input."""

    def __init__(self, modules):
        self.seen: list[torch.Tensor] = []
        self.handles = [m.register_forward_pre_hook(self._hook, with_kwargs=True) for m in modules]

    def _hook(self, module, args, kwargs):
        x = args[0] if args else kwargs.get("hidden_states", kwargs.get("x"))
        self.seen.append(x.detach())

    def close(self) -> None:
        for h in self.handles:
            h.remove()


class _Output:
    def __init__(self, module):
        self.value = None
        self.handle = module.register_forward_hook(self._hook)

    def _hook(self, module, args, out):
        self.value = (out[0] if isinstance(out, tuple) else out).detach()

    def close(self) -> None:
        self.handle.remove()


def _transformer(model, ids, mask) -> Trace:
    c = model.config
    if c.local_window:
        raise ValueError("context mixing needs full attention; this Transformer uses local attention "
                         f"(chunks of {c.local_window} tokens)")
    if c.pooling in ("max", "decoder"):
        raise ValueError(f"context mixing reads the pooled position's row; {c.pooling} pooling has none "
                         "(max picks dimensions, the decoder cross-attends)")
    if c.relative_positions:
        raise ValueError("context mixing does not cover relation classification (relative positions)")
    blocks = [Block(l.attn.q, l.attn.k, l.attn.v, l.attn.o, c.n_heads, l.norm1, l.norm2, l.ffn.w1, l.ffn.w2,
                    l.ffn.act, c.pre_ln) for l in model.layers]
    hooks = _Inputs(list(model.layers))
    last = _Output(model.layers[-1])
    try:
        out = model(ids, mask, return_maps=c.pooling == "global")
    finally:
        hooks.close()
        last.close()
    s = model.n_special
    B, L = ids.shape
    real = torch.cat([mask.new_ones(B, s), mask], dim=1).bool()                  # (B, T)
    owner = torch.zeros(B, s + L, L, dtype=torch.float32)
    owner[:, s:, :] = torch.diag_embed(mask.float())                             # (B, T, L) token t = word t
    if c.pooling == "cls":
        pool = torch.zeros(B, s + L)
        pool[:, 0] = 1.0
    elif c.pooling == "mean":
        pool = mask.float() / mask.float().sum(1, keepdim=True).clamp(min=1)
    else:
        pool = out.maps["alpha"].detach().float()                                # (B, L)
    head_layers = ([("linear", model.fc), ("act", model.fc_act)] if model.fc is not None else []) + \
        [("linear", model.out)]
    return Trace(blocks, hooks.seen + [last.value], real, owner, pool, Head(model.norm, head_layers),
                 out.logits.detach(), "transformer")


def _act(model, ids, mask) -> Trace:
    if model.relative is not None:
        raise ValueError("context mixing does not cover relation classification (relative positions)")
    hook = _Inputs([model.global_attention])
    try:
        out = model(ids, mask, return_maps=True)
    finally:
        hook.close()
    B, L = ids.shape
    owner = torch.diag_embed(mask.float())                                       # (B, L, L)
    return Trace([], [hook.seen[0]], mask.bool(), owner, out.maps["alpha"].detach().float(), None,
                 out.logits.detach(), "act")


_HF_NAMES = {  # model_type family -> (encoder layers path, q, k, v, o, ln1, ffn_in, ffn_out, ln2, act)
    "bert": ("encoder.layer", "attention.self.query", "attention.self.key", "attention.self.value",
             "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense", "output.dense",
             "output.LayerNorm", "intermediate.intermediate_act_fn"),
    "distilbert": ("transformer.layer", "attention.q_lin", "attention.k_lin", "attention.v_lin",
                   "attention.out_lin", "sa_layer_norm", "ffn.lin1", "ffn.lin2", "output_layer_norm",
                   "ffn.activation"),
}
_HF_FAMILY = {"bert": "bert", "roberta": "bert", "electra": "bert", "xlm-roberta": "bert", "camembert": "bert",
              "distilbert": "distilbert"}


def _get(module, path: str):
    for part in path.split("."):
        module = getattr(module, part)
    return module


def hf_family(model) -> str:
    mt = model.hf.config.model_type
    fam = _HF_FAMILY.get(mt)
    if fam is None:
        raise ValueError(f"context mixing reads BERT-style and DistilBERT encoders; {mt!r} is not one of "
                         f"{', '.join(sorted(_HF_FAMILY))}")
    return fam


def _hf(model, ids, mask) -> Trace:
    fam = hf_family(model)
    names = _HF_NAMES[fam]
    base = model.hf.base_model
    layers = list(_get(base, names[0]))
    H = int(model.hf.config.num_attention_heads)
    blocks = [Block(*(_get(l, n) for n in names[1:5]), H, _get(l, names[5]), _get(l, names[8]),
                    _get(l, names[6]), _get(l, names[7]), _get(l, names[9]), False) for l in layers]
    hooks = _Inputs(layers)
    last = _Output(layers[-1])
    try:
        logits, _, lay = model._run(ids, mask.bool(), False, None)
    finally:
        hooks.close()
        last.close()
    B = ids.shape[0]
    pos, valid, W, L = lay.pos, lay.valid, lay.W, lay.L
    real = lay.real                                                              # (B, L) specials included
    owner = torch.zeros(B, L, W)
    bidx = torch.arange(B)[:, None, None].expand_as(pos)
    widx = torch.arange(W)[None, :, None].expand_as(pos)
    owner[bidx[valid], pos[valid], widx[valid]] = 1.0                            # (B, L, W)
    pool = torch.zeros(B, L)
    pool[:, 0] = 1.0
    head = None
    if model.hf.config.model_type == "bert" and getattr(base, "pooler", None) is not None:
        head = Head(None, [("linear", base.pooler.dense), ("act", torch.tanh), ("linear", model.hf.classifier)])
    return Trace(blocks, hooks.seen + [last.value], real, owner, pool, head, logits.detach(), fam)


READERS = {"transformer": _transformer, "hf": _hf, "act": _act}   # capability -> reader(model, ids, mask) -> Trace


def trace(model, ids: torch.Tensor, mask: torch.Tensor) -> Trace:
    """Run `model` once on (B, L) word ids and read it (no gradient), with the reader its family declares
    (`model.context_mixing`: READERS, or one registered with context_mixing.register_family)."""
    reader = READERS.get(getattr(model, "context_mixing", None))
    if reader is None:
        raise ValueError(f"context mixing needs a model with self-attention (Transformer, ACT's global attention, "
                         f"a Hugging Face encoder); {type(model).__name__} has none")
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            return reader(model, ids, mask)
    finally:
        model.train(was)
