"""Transformer encoder classifier (Matton, "Adapting Transformers to Text Classification"), per docs/models.md.

Emb * sqrt(d) + sinusoidal positions -> dropout -> [initial convolutions] -> N pre-LN layers
(x += Dropout(MHA(LN(x))); x += Dropout(FFN(LN(x))), FFN = Linear-ReLU-Dropout-Linear) -> final LN ->
pooling -> [hidden layer] -> Linear. Paper word-level config: N = 6, h = 8, d = 512, d_ff = 2048.

Pooling (`pooling`):
- "cls": the paper's "new token": a constant first token (all ones, as in the reference code
  Nutemm/OpenNMT-py transformer_1st_elt), not masked, no position, not learned; its final vector is pooled.
- "max": masked max over time per dimension (map `max_argmax`: the winning token per dimension).
- "mean": masked mean over time.
- "global": ACT's global attention (the very module of act.py, so ACT and this baseline are compared on equal
  terms), with g = masked max over time of the top layer's outputs: the parameter-free counterpart of ACT's
  max-pooled global representation (the ACT paper does not say what g is for its baseline).
- "decoder": the paper's "vanilla" model, which decodes the category as a one-token output. Only the first
  decoding step is classification: from a learned <s> vector (standing for Emb(<s>) * sqrt(d) + PE(0)), run
  `decoder_layers` pre-LN decoder layers (self-attention, cross-attention to the encoder output, FFN), final
  LN, Linear over the categories. The end-of-sentence step that follows is trivial and omitted. Self-attention
  over the single <s> token has weight exactly 1, so it reduces to W_O W_V LN(y): W_Q and W_K would be dead
  weights and are not created. Map `decoder_attention` (B, decoder layer, head, key_token).

Local attention (`local_window` w > 0): tokens attend only within chunks of w consecutive tokens (paper: 50
characters on AG News, 30 on SST); `local_shift` moves the chunk grid by ceil(w/2) on odd layers (layers 1, 3,
...), as the reference code does. Choices: the grid is anchored at the first token (the reference anchors it
at the end of the batch's padded length, which makes outputs depend on padding); with cls pooling the cls
token is a global token (it attends to all tokens and every token attends to it) - otherwise it would only
ever see the first chunk. The fast path computes chunk by chunk (O(L w)); when maps or edits are asked for,
the full L x L block-diagonal matrix is built and used, so an edit of it takes effect as given.

Character level: the tokeniser does the characters; `init_convs` = k > 0 adds, after the embedding, one
Conv1d(d, d, 3, pad 1) then k x [Conv1d(d, d, 3, pad 1) + ReLU] (paper: k = 6), pads re-zeroed before each,
all in a ModuleList (the reference forgot to register six of them); no batch norm (the paper found it hurt).

Relation classification (`relative_positions`, global pooling only; models/relation.py): the global
attention's W_p p_j uses ACT's two concatenated relative-position embeddings (to entity 1, to entity 2) instead
of the absolute table; preset "relation" = the ACT baseline with one layer and these positions. The encoder
keeps its sinusoidal positions (with `markers_as_words` off they still count the masked tag positions).

Other choices: attention-weight dropout `attention_dropout` (OpenNMT's default 0.1) and dropout after the FFN
activation (as OpenNMT); LayerNorm eps 1e-6 (OpenNMT); token embeddings without pretrained vectors start as
N(0, 1/embed_dim) so that Emb * sqrt(d) has about unit scale, like the positions; `pre_ln=False` gives the
original post-LN layers (no final LN). If the embedding dimension differs from d_model, one Linear projects it.

Maps. Token axes are the real input tokens only:
  attention        (B, layer, head, query_token, key_token)  self-attention; rows at pad queries are 0; with
                   local attention the full L x L (block-diagonal) matrix.
  With cls pooling the cls token takes part in every softmax, so the token x token block is a part of each
  row ("partial" values), and the rest is exposed:
  attention_to_cls (B, layer, head, query_token)  weight each token gives the cls token
  cls_attention    (B, layer, head, key_token)    the cls token's row over the input tokens
  cls_self         (B, layer, head)               the cls token's weight on itself
  (attention.sum(-1) + attention_to_cls = 1 and cls_attention.sum(-1) + cls_self = 1 on real rows.)
  max_argmax (max pooling), decoder_attention (decoder), alpha / score_context / score_global / global_rep
  (global pooling, as in ACT).
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from textcls.models.outputs import ClassifierOutput, InterventionSpec, MapSpec
from textcls.models.base import Probe, TextClassifier
from textcls.models.layers import (CenterLoss, GlobalAttention, WordEmbedding, check_input,
    make_activation, masked_max, masked_mean, masked_softmax, rezero)
from textcls.models.configs.transformer import POOLINGS, TransformerConfig
from textcls.models.registration import model_class
from textcls.models.relation import RelativePositions

LN_EPS = 1e-6


def sinusoidal_positions(L: int, d: int, device=None, dtype=torch.float32) -> torch.Tensor:
    """(L, d) sinusoidal position encodings (Vaswani et al. 2017)."""
    pos = torch.arange(L, device=device, dtype=torch.float32).unsqueeze(1)              # (L, 1)
    div = torch.exp(torch.arange(0, d, 2, device=device, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(L, d, device=device)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)[:, : d // 2]
    return pe.to(dtype)                                                                  # (L, d)


def local_block_mask(L: int, window: int, offset: int, n_special: int, device=None) -> torch.Tensor:
    """(T, T) bool, T = n_special + L: True where attention is allowed. Token j is in chunk (j + offset) // w;
    special (cls) rows and columns are all True (a global token)."""
    cid = (torch.arange(L, device=device) + offset) // window                           # (L,)
    blk = cid.unsqueeze(1) == cid.unsqueeze(0)                                           # (L, L)
    if not n_special:
        return blk
    full = torch.ones(L + n_special, L + n_special, dtype=torch.bool, device=device)
    full[n_special:, n_special:] = blk
    return full


class MultiHeadAttention(nn.Module):
    """Projections of scaled dot-product multi-head attention; the attention itself is computed by callers."""

    def __init__(self, d: int, h: int, attention_dropout: float):
        super().__init__()
        self.h, self.dh = h, d // h
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.drop = nn.Dropout(attention_dropout)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.h, self.dh).transpose(1, 2)                            # (B, h, T, dh)

    def merge(self, x: torch.Tensor) -> torch.Tensor:
        return self.o(x.transpose(1, 2).flatten(2))                                      # (B, T, d)


class FeedForward(nn.Module):
    def __init__(self, d: int, d_ff: int, activation: str, dropout: float):
        super().__init__()
        self.w1, self.w2 = nn.Linear(d, d_ff), nn.Linear(d_ff, d)
        self.act = make_activation(activation)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(self.drop(self.act(self.w1(x))))


class EncoderLayer(nn.Module):
    def __init__(self, c: TransformerConfig):
        super().__init__()
        self.pre_ln = c.pre_ln
        self.attn = MultiHeadAttention(c.d_model, c.n_heads, c.attention_dropout)
        self.ffn = FeedForward(c.d_model, c.d_ff, c.ffn_activation, c.dropout)
        self.norm1 = nn.LayerNorm(c.d_model, eps=LN_EPS)
        self.norm2 = nn.LayerNorm(c.d_model, eps=LN_EPS)
        self.dropout = nn.Dropout(c.dropout)

    def forward(self, x, mask, n_special: int, window: int, offset: int, probe: Probe, layer: int):
        h = self.norm1(x) if self.pre_ln else x
        x = x + self.dropout(self.self_attention(h, mask, n_special, window, offset, probe, layer))
        if not self.pre_ln:
            x = self.norm1(x)
        h = self.norm2(x) if self.pre_ln else x
        x = x + self.dropout(self.ffn(h))
        return x if self.pre_ln else self.norm2(x)                                      # (B, T, d)

    def self_attention(self, h, mask, s: int, window: int, offset: int, probe: Probe, layer: int):
        """h (B, T, d), T = s + L (s = 1 with a cls token in front); mask (B, L) of the input tokens."""
        a = self.attn
        q, k, v = a.split(a.q(h)), a.split(a.k(h)), a.split(a.v(h))                      # (B, h, T, dh)
        scale = 1.0 / math.sqrt(a.dh)
        if window and not probe.active:
            return a.merge(self._chunked(q, k, v, mask, s, window, offset, scale))
        B, T = h.shape[:2]
        real = torch.cat([mask.new_ones(B, s), mask], dim=1)                           # (B, T)
        allowed = real.unsqueeze(2) & real.unsqueeze(1)                                  # (B, T, T)
        if window:
            allowed = allowed & local_block_mask(T - s, window, offset, s, h.device)
        P = masked_softmax(q @ k.transpose(-1, -2) * scale, allowed.unsqueeze(1))        # (B, h, T, T)
        if probe.active:
            P = self._probe(P, probe, layer, mask, s)
        return a.merge(a.drop(P) @ v)                                                    # (B, T, d)

    @staticmethod
    def _probe(P, probe: Probe, layer: int, mask, s: int):
        """Record/edit the attention over the real tokens; the cls row and column as separate maps."""
        if not s:
            return probe("attention", P, layer=layer, mask=mask)                        # (B, h, L, L)
        tok = probe("attention", P[:, :, 1:, 1:], layer=layer, mask=mask)              # (B, h, L, L)
        to_cls = probe("attention_to_cls", P[:, :, 1:, 0], layer=layer, mask=mask)     # (B, h, L)
        cls_row = probe("cls_attention", P[:, :, 0, 1:], layer=layer, mask=mask)       # (B, h, L)
        cls_self = probe("cls_self", P[:, :, 0, 0], layer=layer, mask=mask)            # (B, h)
        top = torch.cat([cls_self[..., None, None], cls_row.unsqueeze(2)], dim=-1)      # (B, h, 1, T)
        rest = torch.cat([to_cls.unsqueeze(-1), tok], dim=-1)                          # (B, h, L, T)
        return torch.cat([top, rest], dim=2)                                            # (B, h, T, T)

    def _chunked(self, q, k, v, mask, s: int, w: int, offset: int, scale: float):
        """Local attention chunk by chunk: O(L w) instead of O(L^2). Returns (B, h, T, dh)."""
        a = self.attn
        B, H, T, dh = q.shape
        L = T - s
        n_chunks = -(-(offset + L) // w)
        back = n_chunks * w - offset - L

        def chunk(t):                                                                    # (B, h, nC, w, dh)
            return F.pad(t[:, :, s:], (0, 0, offset, back)).view(B, H, n_chunks, w, dh)

        qc, kc, vc = chunk(q), chunk(k), chunk(v)
        mc = F.pad(mask.to(q.dtype), (offset, back)).view(B, 1, n_chunks, w).bool()    # (B, 1, nC, w)
        kmask = mc.unsqueeze(3)                                                          # (B, 1, nC, 1, w)
        if s:                                                                            # cls key in each chunk
            kc = torch.cat([k[:, :, None, :s].expand(B, H, n_chunks, s, dh), kc], dim=3)  # (B, h, nC, s+w, dh)
            vc = torch.cat([v[:, :, None, :s].expand(B, H, n_chunks, s, dh), vc], dim=3)
            kmask = torch.cat([kmask.new_ones(B, 1, n_chunks, 1, s), kmask], dim=-1)    # (B, 1, nC, 1, s+w)
        P = masked_softmax(qc @ kc.transpose(-1, -2) * scale, kmask)                    # (B, h, nC, w, s+w)
        P = P * mc.unsqueeze(-1).to(P.dtype)                                             # pad queries: 0
        out = (a.drop(P) @ vc).view(B, H, n_chunks * w, dh)[:, :, offset:offset + L]    # (B, h, L, dh)
        if s:                                                                            # cls row: global
            real = torch.cat([mask.new_ones(B, s), mask], dim=1)                       # (B, T)
            Pc = masked_softmax(q[:, :, :s] @ k.transpose(-1, -2) * scale, real[:, None, None, :])  # (B,h,s,T)
            out = torch.cat([a.drop(Pc) @ v, out], dim=2)                               # (B, h, T, dh)
        return out


class DecoderLayer(nn.Module):
    """One pre-LN (or post-LN) decoder layer for the single <s> query (see the module docstring)."""

    def __init__(self, c: TransformerConfig):
        super().__init__()
        d = c.d_model
        self.pre_ln = c.pre_ln
        self.self_v, self.self_o = nn.Linear(d, d), nn.Linear(d, d)  # self-attention over one token
        self.cross = MultiHeadAttention(d, c.n_heads, c.attention_dropout)
        self.ffn = FeedForward(d, c.d_ff, c.ffn_activation, c.dropout)
        self.norms = nn.ModuleList(nn.LayerNorm(d, eps=LN_EPS) for _ in range(3))
        self.dropout = nn.Dropout(c.dropout)

    def _sub(self, y, i, fn):
        if self.pre_ln:
            return y + self.dropout(fn(self.norms[i](y)))
        return self.norms[i](y + self.dropout(fn(y)))

    def _cross(self, y, memory, mask, probe: Probe, layer: int):
        a = self.cross
        q, k, v = a.split(a.q(y)), a.split(a.k(memory)), a.split(a.v(memory))          # (B,h,1,dh),(B,h,L,dh)
        P = masked_softmax(q @ k.transpose(-1, -2) / math.sqrt(a.dh), mask[:, None, None, :])  # (B, h, 1, L)
        if probe.active:
            P = probe("decoder_attention", P.squeeze(2), layer=layer, mask=mask).unsqueeze(2)
        return a.merge(a.drop(P) @ v)                                                    # (B, 1, d)

    def forward(self, y, memory, mask, probe: Probe, layer: int):
        y = self._sub(y, 0, lambda t: self.self_o(self.self_v(t)))                      # (B, 1, d)
        y = self._sub(y, 1, lambda t: self._cross(t, memory, mask, probe, layer))
        return self._sub(y, 2, self.ffn)


class ClassDecoder(nn.Module):
    def __init__(self, c: TransformerConfig):
        super().__init__()
        self.bos = nn.Parameter(torch.randn(c.d_model))                                 # Emb(<s>) sqrt(d) + PE(0)
        self.layers = nn.ModuleList(DecoderLayer(c) for _ in range(c.decoder_layers))
        self.norm = nn.LayerNorm(c.d_model, eps=LN_EPS) if c.pre_ln else None
        self.dropout = nn.Dropout(c.dropout)

    def forward(self, memory, mask, probe: Probe) -> torch.Tensor:
        y = self.dropout(self.bos.expand(memory.shape[0], 1, -1))                       # (B, 1, d)
        for i, layer in enumerate(self.layers):
            y = layer(y, memory, mask, probe, i)
        if self.norm is not None:
            y = self.norm(y)
        return y.squeeze(1)                                                              # (B, d)


@model_class('transformer')
class Transformer(TextClassifier):
    context_mixing = "transformer"

    def __init__(self, config: TransformerConfig, embeddings=None):
        super().__init__(config)
        c = config
        if c.pooling not in POOLINGS:
            raise ValueError(f"unknown pooling {c.pooling!r}; known: {POOLINGS}")
        if c.n_heads < 1 or c.d_model % c.n_heads:
            raise ValueError(f"d_model ({c.d_model}) must be a multiple of n_heads ({c.n_heads})")
        if c.local_window < 0 or c.init_convs < 0 or c.fc_dim < 0:
            raise ValueError("local_window, init_convs and fc_dim must be >= 0")
        if c.n_layers < 1 or (c.pooling == "decoder" and c.decoder_layers < 1):
            raise ValueError("n_layers (and decoder_layers with decoder pooling) must be >= 1")
        if c.local_shift and not c.local_window:
            raise ValueError("local_shift needs local_window > 0")
        if c.relative_positions and c.pooling != "global":
            raise ValueError("relative_positions feed the global attention: they need pooling='global'")
        make_activation(c.ffn_activation), make_activation(c.fc_activation)  # validate names
        self.embed = WordEmbedding(c.vocab_size, c.embed_dim, c.embedding_mode, c.channels, embeddings, c.pad_id)
        if embeddings is None:
            with torch.no_grad():
                for t in self.embed.tables:
                    t.weight.normal_(0.0, c.embed_dim ** -0.5)
                    t.weight[c.pad_id].zero_()
        self.proj = nn.Linear(self.embed.out_dim, c.d_model) if self.embed.out_dim != c.d_model else None
        self.dropout = nn.Dropout(c.dropout)
        n_convs = 1 + c.init_convs if c.init_convs else 0
        self.convs = nn.ModuleList(nn.Conv1d(c.d_model, c.d_model, 3, padding=1) for _ in range(n_convs))
        self.layers = nn.ModuleList(EncoderLayer(c) for _ in range(c.n_layers))
        self.norm = nn.LayerNorm(c.d_model, eps=LN_EPS) if c.pre_ln else None
        if c.pooling == "global":
            self.global_attention = GlobalAttention(c.d_model, c.d_attn, c.d_pos, c.max_positions,
                                                    c.position_embed, c.global_rep,
                                                    table=not c.relative_positions)
        # relation classification: the same relative positions as ACT (models/relation.py)
        self.relative = RelativePositions(c, c.d_pos, c.position_embed) if c.relative_positions else None
        if c.pooling == "decoder":
            self.decoder = ClassDecoder(c)
        self.fc = nn.Linear(c.d_model, c.fc_dim) if c.fc_dim else None
        self.fc_act = make_activation(c.fc_activation)
        self.out = nn.Linear(c.fc_dim or c.d_model, c.num_labels)
        if c.center_loss_weight:
            self.center_loss = CenterLoss(c.num_labels, c.fc_dim or c.d_model, c.center_loss_weight,
                                          c.center_loss_rate)

    @property
    def n_special(self) -> int:
        return 1 if self.config.pooling == "cls" else 0

    def interventions(self) -> InterventionSpec:
        c = self.config
        return InterventionSpec(heads=c.n_heads, layers=c.n_layers)

    def map_specs(self) -> list[MapSpec]:
        c = self.config
        local = f" (local: chunks of {c.local_window} tokens, block diagonal)" if c.local_window else ""
        if self.n_special:
            specs = [
                MapSpec("attention", ("layer", "head", "query_token", "key_token"), "attention",
                        "self-attention among the input tokens" + local + "; the rest of each row is on the "
                        "cls token (attention_to_cls)", values="partial"),
                MapSpec("attention_to_cls", ("layer", "head", "query_token"), "attention",
                        "weight each token gives the cls token", values="partial"),
                MapSpec("cls_attention", ("layer", "head", "key_token"), "attention",
                        "the cls token's attention row over the input tokens (the rest is cls_self)",
                        values="partial"),
                MapSpec("cls_self", ("layer", "head"), "attention", "the cls token's weight on itself",
                        values="partial"),
            ]
        else:
            specs = [MapSpec("attention", ("layer", "head", "query_token", "key_token"), "attention",
                             "self-attention" + local)]
        if c.pooling == "max":
            specs.append(MapSpec("max_argmax", ("feature",), "feature_map",
                                 "token whose vector won the max-pool, per dimension", values="index"))
        elif c.pooling == "global":
            specs += self.global_attention.map_specs()
            specs += self.relative.map_specs() if self.relative is not None else []
        elif c.pooling == "decoder":
            specs.append(MapSpec("decoder_attention", ("layer", "head", "key_token"), "attention",
                                 "cross-attention of the <s> query over the tokens, per decoder layer"))
        return specs

    def _encode(self, token_ids, mask, probe: Probe) -> torch.Tensor:
        """Token ids (B, L) -> the encoder's output at the input tokens and the cls token (B, s + L, d)."""
        c = self.config
        B, L = token_ids.shape
        x = self.embed(token_ids)                                                        # (B, L, E)
        if self.proj is not None:
            x = self.proj(x)                                                             # (B, L, d)
        if c.scale_embedding:
            x = x * math.sqrt(c.d_model)
        x = x + sinusoidal_positions(L, c.d_model, x.device, x.dtype)                    # (B, L, d)
        x = rezero(self.dropout(x), mask)
        for i, conv in enumerate(self.convs):                                            # initial convolutions
            x = conv(x.transpose(1, 2)).transpose(1, 2)                                  # (B, L, d)
            x = rezero(F.relu(x) if i > 0 else x, mask)
        if self.n_special:
            x = torch.cat([x.new_ones(B, 1, c.d_model), x], dim=1)                      # (B, 1 + L, d) cls first
        w = c.local_window
        for i, layer in enumerate(self.layers):
            offset = -(-w // 2) if (w and c.local_shift and i % 2 == 1) else 0          # ceil(w / 2)
            window = w if (w and offset + L > w) else 0                                  # else: one chunk = full
            x = layer(x, mask, self.n_special, window, offset, probe, i)                 # (B, T, d)
        return self.norm(x) if self.norm is not None else x

    def _forward(self, token_ids, mask, probe: Probe):
        check_input(token_ids, mask, self.config.vocab_size)
        c = self.config
        pos = None
        if self.relative is not None:
            pos = self.relative(token_ids, mask, probe)                                  # (B, L, d_p)
            mask = self.relative.read_mask(token_ids, mask)                              # tags out unless words
        x = self._encode(token_ids, mask, probe)                                         # (B, T, d)
        s = self.n_special
        tok = x[:, s:]                                                                   # (B, L, d)
        if c.pooling == "cls":
            pooled = x[:, 0]                                                             # (B, d)
        elif c.pooling == "max":
            pooled, index = masked_max(tok, mask.unsqueeze(-1), dim=1)                   # (B, d)
            probe("max_argmax", index, mask=mask)
        elif c.pooling == "mean":
            pooled = masked_mean(tok, mask)                                              # (B, d)
        elif c.pooling == "global":
            g = masked_max(tok, mask.unsqueeze(-1), dim=1)[0] if c.global_rep else None  # (B, d)
            pooled = self.global_attention(tok, mask, g, probe, pos)                     # (B, d)
        else:
            pooled = self.decoder(tok, mask, probe)                                      # (B, d)
        h = self.dropout(pooled)
        if self.fc is None:
            return self.out(h), pooled
        z = self.fc_act(self.fc(h))                                                      # (B, fc)
        return self.out(self.dropout(z)), z

    def extra_loss(self, out: ClassifierOutput, labels: torch.Tensor) -> torch.Tensor | None:
        """ACT's center loss on the features when center_loss_weight > 0 (the act_baseline preset)."""
        if not self.config.center_loss_weight:
            return None
        if out.features is None:
            raise ValueError("extra_loss needs the features of the model's output")
        return self.center_loss(out.features, labels, update=self.training)
