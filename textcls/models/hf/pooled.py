"""What a plain prediction of a BERT-like encoder needs, and no more: the last layer for the pooled position only,
and texts of mixed length packed side by side instead of padded to the longest.

- **The last layer for [CLS] only** (`forward_first`). A BERT-like classifier (BERT, RoBERTa, XLM-R, ELECTRA,
  MiniLM, ...) reads only the first position of its last layer. That layer's keys and values need every
  position, but its query, attention output, residual, layer norms and feed-forward - about 10 of the layer's
  12 d^2 per position - only the first one. `HFClassifier` binds its own forward to such a layer as a method (a
  deep copy of the model - the randomisation check's - binds it to the copy) and takes this path when the call
  allows it (`_CallState.pooled_only`: not training, no maps recorded, no edits, no forward hook anywhere in the
  model that could read another row). The layer then returns (B, 1, d): the head reads position 0 of each row.
  For MiniLM (6 layers) about a seventh of every forward and backward pass.
- **Packing** (`pack`, `position_table`). Texts of mixed length in one batch (an erasure curve's variants: the
  whole text beside its top word alone) go side by side into rows of at most PACK_POSITIONS positions (first
  fit, longest first), each with its own position ids (read once from the model's embeddings: BERT counts from
  0, RoBERTa from 2) and an attention mask that keeps every position to its own text; the last layer computes
  each text's first position. Only where it saves a fifth of the padded positions.

A layer is recognised by its parts, not its class: `attention.self` with `query`, `key`, `value`,
`attention_head_size` and `scaling`; `attention.output(context, input)`; `feed_forward_chunk`; no cross-attention
and not a decoder. Anything else keeps its own forward. `tests/test_hf_pooled.py` holds both to the full model
(logits and input gradients to 1e-5) on a tiny model of every family.
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn as nn

PACK_POSITIONS = 64        # positions per row of packed texts at least (the mask makes attention cost the row's length
                           # squared: 64 scored sst2 erasure curves fastest on MiniLM, 128 14 % and 256 27 % slower)
PACK_SLACK = 4             # row lengths tried beyond the longest text (see `pack`)
PACK_WHEN = 0.8            # pack a batch when that leaves at most this share of its padded positions
PACK_MAX_TEXTS = 512       # texts per batch packed at most
PACK_MAX_LENGTH = 512      # longest text packed (its position ids are read up to this)


def last_layer(hf_model: nn.Module) -> nn.Module | None:
    """The last encoder layer of a BERT-like sequence classifier whose head reads the first position, or None."""
    layers = getattr(getattr(getattr(hf_model, "base_model", None), "encoder", None), "layer", None)
    if not isinstance(layers, nn.ModuleList) or not len(layers):
        return None
    layer = layers[-1]
    att = getattr(layer, "attention", None)
    sa = getattr(att, "self", None)
    if sa is None or getattr(layer, "is_decoder", False) or hasattr(layer, "crossattention") or \
            getattr(sa, "is_cross_attention", False):
        return None
    if not all(isinstance(getattr(sa, n, None), nn.Linear) for n in ("query", "key", "value")) or \
            not isinstance(getattr(sa, "attention_head_size", None), int) or getattr(sa, "scaling", None) is None:
        return None
    if not callable(getattr(att, "output", None)) or not callable(getattr(layer, "feed_forward_chunk", None)):
        return None
    return layer


def forward_first(layer: nn.Module, hidden_states: torch.Tensor, attention_mask: torch.Tensor | None,
                  attention: Callable, rows: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
    """`layer`'s output at each text's first position only, (B, 1, d): the head reads position 0 of each row.
    `rows` (batch index, position), each (B,): where each text's first position is in `hidden_states` (P, T, d)
    when texts are packed side by side (`pack`); None: position 0 of each row. `attention(module, q, k, v, mask,
    scaling=)` is the model's attention function (-> (B, 1, H, dh), weights)."""
    sa = layer.attention.self
    P, T, _ = hidden_states.shape
    dh = sa.attention_head_size
    k = sa.key(hidden_states).view(P, T, -1, dh).transpose(1, 2)               # (P, H, T, dh)
    v = sa.value(hidden_states).view(P, T, -1, dh).transpose(1, 2)             # (P, H, T, dh)
    mask = attention_mask
    if rows is None:
        first = hidden_states[:, :1]                                           # (B, 1, d)
        if mask is not None and mask.dim() == 4 and mask.shape[-2] == T:
            mask = mask[..., :1, :]                                            # (B, 1, 1, T) the first query's row
    else:
        b, t = rows
        first = hidden_states[b, t][:, None]                                   # (B, 1, d)
        k, v = k[b], v[b]                                                      # (B, H, T, dh) each text's pack
        mask = mask[b, :, t][:, :, None]                                       # (B, 1, 1, T) its own segment
    B = first.shape[0]
    q = sa.query(first).view(B, 1, -1, dh).transpose(1, 2)                    # (B, H, 1, dh)
    ctx, _ = attention(sa, q, k, v, mask, scaling=sa.scaling)                  # (B, 1, H, dh)
    ctx = ctx.reshape(B, 1, -1)                                                # (B, 1, d)
    return layer.feed_forward_chunk(layer.attention.output(ctx, first))        # (B, 1, d)


def position_table(hf_model: nn.Module, limit: int = PACK_MAX_LENGTH) -> torch.Tensor | None:
    """(n,) the position ids the model's embeddings give positions 0..n-1 of a text on its own (BERT: 0, 1, ...;
    RoBERTa: 2, 3, ...), read once from the embeddings with a hook; None where that cannot be read."""
    emb = getattr(getattr(hf_model, "base_model", None), "embeddings", None)
    table = getattr(emb, "position_embeddings", None)
    if not isinstance(table, nn.Embedding):
        return None
    dim = getattr(getattr(emb, "word_embeddings", None), "embedding_dim", None)
    if not dim:
        return None
    pad = getattr(table, "padding_idx", None)
    for n in dict.fromkeys((int(table.num_embeddings), int(table.num_embeddings) - (pad or 0) - 1)):
        n = min(n, limit)                     # RoBERTa's ids start after its padding index: 2 fewer positions
        seen: list = []
        h = table.register_forward_pre_hook(lambda m, a: seen.append(a[0]))
        try:
            with torch.no_grad():
                emb(inputs_embeds=torch.zeros(1, n, dim, device=table.weight.device))
        except Exception:  # noqa: BLE001 - an embeddings module this cannot call at this length
            continue
        finally:
            h.remove()
        if len(seen) == 1 and seen[0].numel() == n and int(seen[0].max()) < table.num_embeddings:
            return seen[0].reshape(-1).detach().clone()
    return None


def _first_fit(sizes: list[int], order: list[int], cap: int) -> tuple[list[int], list[int], list[int]]:
    """First fit of texts of `sizes` taken in `order` into rows of `cap` positions: (each row's fill, each text's
    row, its first position there)."""
    fills: list[int] = []
    row, start = [0] * len(sizes), [0] * len(sizes)
    for b in order:
        for p, f in enumerate(fills):
            if f + sizes[b] <= cap:
                break
        else:
            p = len(fills)
            fills.append(0)
        row[b], start[b] = p, fills[p]
        fills[p] += sizes[b]
    return fills, row, start


def pack(used: torch.Tensor, width: int = 384) -> tuple[int, int, torch.Tensor, torch.Tensor] | None:
    """Where texts of `used` (B,) positions go when packed side by side into rows (first fit, longest first):
    (rows P, their length T, each text's row (B,), its first position there (B,)). The row length is the cheapest
    of PACK_POSITIONS and the longest text plus 0 to PACK_SLACK positions, costed P T (1 + T / (2 `width`)): each
    position's layers, plus attention, which the mask makes grow with the row's length (`width`: the model's
    hidden size). An erasure curve fills rows exactly at its text's length plus 2: the variant without the top k
    words beside the one with only them. None when packing would not save a fifth of the padded positions (a
    batch of texts of near length) or the batch is large (first fit costs B x P steps)."""
    B = used.numel()
    longest = int(used.max()) if B else 0
    if B < 2 or B > PACK_MAX_TEXTS or int(used.sum()) > PACK_WHEN * B * longest:
        return None
    sizes = used.tolist()
    order = sorted(range(B), key=lambda i: -sizes[i])
    best = None
    for cap in sorted({max(longest, PACK_POSITIONS)} | {longest + k for k in range(PACK_SLACK + 1)}):
        fills, row, start = _first_fit(sizes, order, cap)
        P, T = len(fills), max(fills)
        cost = P * T * (1 + T / (2 * width))
        if best is None or cost < best[0]:
            best = (cost, P, T, row, start)
    _, P, T, row, start = best
    if P * T > PACK_WHEN * B * longest:
        return None
    return P, T, torch.tensor(row), torch.tensor(start)


def packed_inputs(used: torch.Tensor, packing: tuple, positions: torch.Tensor, dtype: torch.dtype,
                  device: torch.device) -> dict[str, torch.Tensor]:
    """The attention mask (P, 1, T, T) (a position sees its own text only; a pad position itself), position ids
    (P, T) (each text's own: `positions`, from `position_table`) and token types (P, T) of texts of `used` (B,)
    positions packed by `pack`."""
    P, T, prow, pstart = packing
    B = used.numel()
    text = torch.repeat_interleave(torch.arange(B), used)                        # (N,) each position's text
    at = torch.arange(text.numel()) - torch.repeat_interleave(used.cumsum(0) - used, used)   # (N,) place in it
    flat = prow[text] * T + pstart[text] + at                                    # (N,) where it goes
    seg = torch.full((P * T,), -1, dtype=torch.long).index_put_((flat,), text).view(P, T)         # (P, T)
    ids = positions.cpu()
    position = torch.full((P * T,), int(ids[0])).index_put_((flat,), ids[at]).view(P, T)          # (P, T)
    same = (seg[:, :, None] == seg[:, None, :]) & (seg[:, :, None] >= 0)        # (P, T, T)
    same |= torch.eye(T, dtype=torch.bool)[None]                                 # no pad row without a key
    mask = torch.zeros(P, 1, T, T, dtype=dtype).masked_fill(~same[:, None], torch.finfo(dtype).min)
    return {"attention_mask": mask.to(device), "position_ids": position.to(device),
            "token_type_ids": torch.zeros(P, T, dtype=torch.long, device=device)}


def hooked(model: nn.Module) -> bool:
    """Whether a forward hook anywhere in `model` (or a global one) could read a row the short path does not
    compute (patching, the lens, TCAV and context-mixing traces hook the layers)."""
    from torch.nn.modules import module as nn_module
    if nn_module._global_forward_hooks or nn_module._global_forward_pre_hooks:
        return True
    return any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())


__all__ = ["PACK_POSITIONS", "PACK_SLACK", "PACK_WHEN", "forward_first", "hooked", "last_layer", "pack",
           "packed_inputs", "position_table"]
