"""LAMA: low-rank factorised multi-head attention over a BiGRU (Mehta, Rangwala & Ramakrishnan 2019).

The paper's equations are lost from its text; this follows the reconstruction in docs/models.md (its prose plus the
low-rank bilinear pooling it cites, Kim et al. 2016), with d the GRU hidden size per direction and m heads:

  x  = embeddings (fine-tuned)                               (B, L, E)
  H  = BiGRU(x), packed by length                            (B, L, 2d)   h_i = [fwd_i ; bwd_i]
  U  = tanh(W_w H + b_w)                                     (B, L, 2d)   eq. 7, 2d -> 2d
  f_i = (P^T u_i) (*) (Q^T c)                                (B, L, m)    eq. 11, rank-1, P, Q in R^{2d x m}
  f^_i = tanh(f_i)   (default; l2_heads: / ||tanh(f_i)||_2)  (B, L, m)
  A[j, :] = softmax over real tokens of f^[:, j]             (B, m, L)    eq. 12-13
  M  = A H                                                   (B, m, 2d)   eq. 15 (weights h_i, not u_i)
  logits = W_c flatten(M) + b_c                              (B, C)       eq. 16 (softmax in the loss)

Context vector c: "learned" (LAMA) is one learned vector shared by all texts; "mean" (LAMA + Ctx) is the masked
mean of the text's word embeddings. The paper needs E == 2d for that; when the embedding width differs, a
Linear(E -> 2d) projects the mean (our addition, counted in the attention parameters).

The score normalisation, and what we follow (issue 31). The paper (section 3.3) applies "the tanh nonlinearity to
f_i and a normalization layer across the dimension"; its equations are lost. The public PyTorch implementation
(JohnGiorgi/compact-multi-head-self-attention-pytorch, modules/lama.py and lama.py; "I am not one of the authors"),
read with the search tools: P, Q (input_dim x heads) and c (input_dim x 1) all Xavier-uniform; scores
tanh((P^T c) * (Q^T h)) straight into a masked softmax over the sequence, no norm ("TODO: Missing L2 norm" in its
source), no scale or temperature, and no W_w (it scores the encoder states). The other public file found
(xxsmario/pytorch-multihead-selfattention, modules/lama.py) has the same docstring and layer. We follow it in the one place that
decides how peaked the attention can be: the default `score_norm="tanh"` leaves each head's tanh(f) alone.
Our first reading (`score_norm="l2_heads"`, variant "l2"; the checkpoints before issue 31) divided the m = 10
heads' tanh(f) by their L2 norm at each token, which puts a typical |f^| near 1/sqrt(m) ~ 0.3: each head's scores
then span about +-0.3 to +-0.6, and the attention was near-uniform (median normalised entropy 0.988 on sst2, 0.991
on trec, docs/attention.md). With tanh alone a head can use the whole (-1, 1) range (weight ratio up to e^2 per
head) independently of the others. Measured on the retrained checkpoints (scripts/make_checkpoints.py, GloVe
50-d, seed 0; docs/attention.md's measure over 200 test texts, before -> after): lama-sst2 median normalised
entropy 0.988 -> 0.877, median peak 1.5 -> 3.3, test accuracy 83.4 -> 84.2 %; lama-trec (its old size class:
--tuning '{"extra_vocab": 0, "epochs": 10, "patience": 3}') 0.991 -> 0.839, peak 1.3 -> 2.8, 87.8 -> 90.6 %
(with the trec tuning of today's recipe, 30k extra GloVe words: 0.794, 89.2 %, but 3.7 MB instead of 1.0). We keep W_w (eq. 7, the paper's text), our N(0, 1/(2d)) c and no
temperature (the public code has none).

Choices and deviations (the paper's numbers for them are lost from its text):
- dropout (default 0.3, ours) on the flattened M before the classifier ("dropout on the hidden layer");
- W_w, b_w use PyTorch's Linear init; P, Q Xavier-uniform; the learned c ~ N(0, 1/(2d));
- l2_heads: f^ uses an eps (1e-12) in the norm, so an all-zero f (all-pad text, c = 0) gives f^ = 0, not NaN;
- optional learnable temperature T (off by default, init 1): A = softmax(f^ / T). Because f^ lies in [-1, 1],
  without it a head's largest/smallest weight ratio is at most e^2 ~ 7.4 - attention is diffuse on long texts,
  faithful to the design;
- `score_norm="layernorm_heads"` (variant "layernorm") is the other reading of the paper's "normalization layer
  across the dimension": a LayerNorm across the m heads, with learned gain and bias, in place of tanh and the
  unit L2 norm - no e^2 bound. Measured (sst2, GloVe 50-d, 4 epochs, seed 0, 300 test texts; docs/attention.md's
  measure): median normalised entropy 0.992 -> 0.930, median peak 1.4 -> 2.6, test accuracy 81.6 -> 81.9 %
  (the temperature variant: 0.980, 1.7, 81.8 %). Sharper, still far from ACT's 0.60; the default stays the
  reconstruction, as the paper's equations are lost;
- l2_heads with m = 1: the norm across heads makes f^ = sign(tanh f) in {-1, 0, 1}: the single head can only give two
  weight levels and P, Q, c, W_w get zero gradient. That is what the reconstruction implies; the paper sweeps
  m = 1..20 and reports m = 1 as its weakest setting.
- Masked tokens are treated as absent: the GRU reads a text's real tokens in order (pack_padded_sequence with
  enforce_sorted=False, after moving real tokens to the front, so masks with holes also work); pad positions
  get H = 0, f^ = 0, A = 0. A text with no real token runs the GRU on length 1 (packing rejects 0) and is
  masked, so its attention rows and M are 0.

Maps (`values` "real" unless said):
  hidden     (B, token, feature)  H, the BiGRU states (0 at pads)                      feature_map
  context    (B, feature)         c, the context vector each text used                 feature_map
  scores     (B, token, head)     f^ (tanh f, or unit L2 norm across heads), 0 at pads   attention, "score"
  attention  (B, head, token)     A, rows sum to 1 over real tokens, exactly 0 at pads    attention
  pooled     (B, head, feature)   M = A H, one sentence embedding per head              feature_map

`attention_parameter_count(m, d, model=...)` gives the attention-layer parameter counts of LAMA, SAN (Lin et al.
2017) and the Transformer's multi-head attention for the paper's Fig. 4 (LAMA-F4); see its docstring.
"""
from __future__ import annotations

import math
from typing import Iterable

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from textcls.models.outputs import InterventionSpec, MapSpec
from textcls.models.base import Probe, TextClassifier
from textcls.models.layers import WordEmbedding, masked_mean, masked_softmax, rezero
from textcls.models.configs.lama import CONTEXTS, SCORE_NORMS, LAMAConfig
from textcls.models.registration import model_class

class LowRankAttention(nn.Module):
    """The attention layer: W_w, b_w (eq. 7), P, Q (eq. 11), the learned c or the context projection, and the
    optional temperature. Every parameter here is an attention-layer parameter (see attention_parameter_count)."""

    def __init__(self, width: int, heads: int, context: str, embed_width: int, learn_temperature: bool,
                 score_norm: str = "l2_heads", temperature_init: float = 1.0):
        super().__init__()
        self.w = nn.Linear(width, width)                                  # W_w, b_w: 2d -> 2d
        self.P = nn.Parameter(torch.empty(width, heads))                  # column j = head j's p_j
        self.Q = nn.Parameter(torch.empty(width, heads))
        nn.init.xavier_uniform_(self.P)
        nn.init.xavier_uniform_(self.Q)
        if context == "learned":
            self.c = nn.Parameter(torch.randn(width) / width ** 0.5)      # (2d,)
        else:
            self.register_parameter("c", None)
        # LAMA + Ctx needs E == 2d; otherwise project the mean embedding (our addition)
        self.ctx_proj = nn.Linear(embed_width, width) if context == "mean" and embed_width != width else None
        if learn_temperature:
            self.log_temperature = nn.Parameter(torch.tensor(math.log(temperature_init)))  # T at init
        else:
            self.register_parameter("log_temperature", None)
        self.norm = nn.LayerNorm(heads) if score_norm == "layernorm_heads" else None   # across the m heads

    def temperature(self) -> torch.Tensor | None:
        return None if self.log_temperature is None else self.log_temperature.exp()


@model_class('lama')
class LAMA(TextClassifier):
    def __init__(self, config: LAMAConfig, embeddings=None):
        super().__init__(config)
        c = config
        if c.context not in CONTEXTS:
            raise ValueError(f"lama: unknown context {c.context!r}; known: {CONTEXTS}")
        for field in ("hidden_dim", "n_heads", "embed_dim"):
            if int(getattr(c, field)) < 1:
                raise ValueError(f"lama: {field} must be >= 1, got {getattr(c, field)}")
        if not 0.0 <= c.dropout < 1.0:
            raise ValueError(f"lama: dropout must be in [0, 1), got {c.dropout}")
        if c.score_norm not in SCORE_NORMS:
            raise ValueError(f"lama: unknown score_norm {c.score_norm!r}; known: {', '.join(SCORE_NORMS)}")
        if not (c.temperature_init > 0 and math.isfinite(c.temperature_init)):
            raise ValueError(f"lama: temperature_init must be a positive number, got {c.temperature_init}")
        self.embed = WordEmbedding(c.vocab_size, c.embed_dim, c.embedding_mode, c.channels, embeddings, c.pad_id)
        self.width = 2 * c.hidden_dim
        self.gru = nn.GRU(self.embed.out_dim, c.hidden_dim, batch_first=True, bidirectional=True)
        self.attn = LowRankAttention(self.width, c.n_heads, c.context, self.embed.out_dim, c.learn_temperature,
                                     c.score_norm, c.temperature_init)
        self.dropout = nn.Dropout(c.dropout)
        self.fc = nn.Linear(c.n_heads * self.width, c.num_labels)

    def interventions(self) -> InterventionSpec:
        c = self.config
        return InterventionSpec(heads=c.n_heads)

    def map_specs(self) -> list[MapSpec]:
        return [
            MapSpec("hidden", ("token", "feature"), "feature_map", "BiGRU states H = [forward ; backward]"),
            MapSpec("context", ("feature",), "feature_map",
                    "context vector c (learned, or the masked mean of the embeddings for LAMA + Ctx)"),
            MapSpec("scores", ("token", "head"), "attention",
                    "f^ = LayerNorm across heads of f, f = (P^T u) * (Q^T c)" if self.attn.norm is not None else
                    "f^ = tanh(f), f = (P^T u) * (Q^T c); no norm" if self.config.score_norm == "tanh" else
                    "f^ = tanh(f)/||tanh(f)||, f = (P^T u) * (Q^T c); unit norm across heads", values="score"),
            MapSpec("attention", ("head", "token"), "attention", "A: per head, softmax over tokens of f^"),
            MapSpec("pooled", ("head", "feature"), "feature_map", "M = A H: one sentence embedding per head"),
        ]

    # ------------------------------------------------------------ pieces (also used by tests)

    def encode(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """BiGRU over the real tokens of x (B, L, E) in order; returns H (B, L, 2d), 0 at masked positions."""
        B, L, E = x.shape
        lengths = mask.sum(dim=1)                                               # (B,)
        # real tokens to the front, in order (stable sort), so any mask packs; a no-op for right-padded masks
        order = torch.sort((~mask).to(torch.uint8), dim=1, stable=True).indices  # (B, L)
        xc = x.gather(1, order.unsqueeze(-1).expand(B, L, E))                   # (B, L, E)
        packed = pack_padded_sequence(xc, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.gru(packed)
        hc, _ = pad_packed_sequence(out, batch_first=True, total_length=L)      # (B, L, 2d) 0 past length
        h = torch.zeros_like(hc).scatter(1, order.unsqueeze(-1).expand(B, L, self.width), hc)  # back in place
        return rezero(h, mask)                                                  # (B, L, 2d) all-pad rows too

    def context_vector(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """c (B, 2d): the learned vector, or the masked mean of the embeddings x (B, L, E) (projected if E != 2d)."""
        if self.attn.c is not None:
            return self.attn.c.unsqueeze(0).expand(x.shape[0], -1)             # (B, 2d)
        c = masked_mean(x, mask, dim=1)                                         # (B, E)
        return self.attn.ctx_proj(c) if self.attn.ctx_proj is not None else c  # (B, 2d)

    def head_scores(self, h: torch.Tensor, c: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """f^ (B, L, m) from H (B, L, 2d) and c (B, 2d); unit L2 norm across heads at real tokens, 0 at pads."""
        u = torch.tanh(self.attn.w(h))                                          # (B, L, 2d) eq. 7
        f = (u @ self.attn.P) * (c @ self.attn.Q).unsqueeze(1)                  # (B, L, m)  eq. 11
        if self.attn.norm is not None:                                          # the LayerNorm reading
            f_hat = self.attn.norm(f)                                           # (B, L, m)
        elif self.config.score_norm == "tanh":                                  # the public implementation
            f_hat = torch.tanh(f)                                               # (B, L, m)
        else:
            f_hat = F.normalize(torch.tanh(f), p=2.0, dim=-1, eps=1e-12)        # (B, L, m)
        return f_hat * mask.unsqueeze(-1).to(f_hat.dtype)                       # (B, L, m) pads 0

    # ------------------------------------------------------------ forward

    def _forward(self, token_ids, mask, probe: Probe):
        if token_ids.dim() != 2:
            raise ValueError(f"lama: token_ids must be (B, L), got shape {tuple(token_ids.shape)}")
        if mask.shape != token_ids.shape:
            raise ValueError(f"lama: mask shape {tuple(mask.shape)} != token_ids shape {tuple(token_ids.shape)}")
        if token_ids.shape[1] == 0:
            raise ValueError("lama: token_ids has no positions (L = 0); pass at least one (padded) position")
        x = rezero(self.embed(token_ids), mask)                                 # (B, L, E)
        h = probe("hidden", self.encode(x, mask), mask=mask)                    # (B, L, 2d)
        c = probe("context", self.context_vector(x, mask), mask=mask)          # (B, 2d)
        f_hat = probe("scores", self.head_scores(h, c, mask), mask=mask)       # (B, L, m)
        s = f_hat.transpose(1, 2)                                               # (B, m, L)
        t = self.attn.temperature()
        if t is not None:
            s = s / t                                                           # (B, m, L)
        a = probe("attention", masked_softmax(s, mask.unsqueeze(1)), mask=mask)  # (B, m, L)
        m = probe("pooled", a @ h, mask=mask)                                   # (B, m, 2d) eq. 15
        features = m.flatten(1)                                                 # (B, m * 2d)
        return self.fc(self.dropout(features)), features


# ---------------------------------------------------------------- attention-layer parameter counts (LAMA-F4)

def lama_attention_parameters(m: int, d: int, *, context: str = "learned", include_mlp: bool = True,
                              embed_dim: int | None = None, learn_temperature: bool = False) -> int:
    """LAMA's attention-layer parameters with m heads and GRU size d per direction (H is 2d wide).

    Paper §3.3.2 counts P, Q (2d x m each) and c (2d): 2d(2m + 1). `include_mlp` adds W_w, b_w (2d x 2d + 2d),
    which the module has (eq. 7); LAMA + Ctx has no learned c, but a Linear(E -> 2d) when E != 2d."""
    w = 2 * d
    n = 2 * w * m                                           # P, Q
    if context == "learned":
        n += w                                              # c
    elif context == "mean":
        if embed_dim is not None and embed_dim != w:
            n += embed_dim * w + w                          # our projection of the mean embedding
    else:
        raise ValueError(f"unknown context {context!r}; known: {CONTEXTS}")
    if include_mlp:
        n += w * w + w                                      # W_w, b_w
    if learn_temperature:
        n += 1
    return n


def san_attention_parameters(m: int, d: int, *, d_a: int = 350) -> int:
    """Self-attentive network (Lin et al. 2017): A = softmax(W_s2 tanh(W_s1 H^T)), W_s1 (d_a x 2u), W_s2 (r x d_a),
    no biases; with u = d and r = m heads: d_a (2d + m). d_a = 350 is Lin et al.'s value."""
    return d_a * (2 * d + m)


def transformer_attention_parameters(m: int, d_model: int, *, d_k: int | None = None, bias: bool = False) -> int:
    """Transformer multi-head attention (Vaswani et al. 2017, eq. 20): per head W^Q, W^K, W^V (d_model x d_k),
    plus W^O (m d_k x d_model): 4 m d_model d_k (+ 3 m d_k + d_model biases if `bias`).
    d_k = None uses Vaswani's d_k = d_model / m (then the count hardly depends on m); a fixed d_k grows with m."""
    if d_k is None:
        if d_model % m:
            raise ValueError(f"d_model {d_model} is not divisible by {m} heads; pass d_k")
        d_k = d_model // m
    n = 4 * m * d_model * d_k
    if bias:
        n += 3 * m * d_k + d_model
    return n


def attention_parameter_count(m: int, d: int, model: str = "lama", **kw) -> int:
    """Attention-layer parameters with m heads over BiGRU states of width 2d (LAMA-F4).

    model: "lama" (kw: context, include_mlp, embed_dim, learn_temperature), "san" (kw: d_a) or "transformer"
    (d_model = 2d; kw: d_k, bias). Matches `sum(p.numel() for p in LAMA(...).attn.parameters())` for "lama"."""
    if m < 1 or d < 1:
        raise ValueError(f"heads and d must be >= 1, got m={m}, d={d}")
    if model == "lama":
        return lama_attention_parameters(m, d, **kw)
    if model == "san":
        return san_attention_parameters(m, d, **kw)
    if model == "transformer":
        return transformer_attention_parameters(m, 2 * d, **kw)
    raise ValueError(f"unknown model {model!r}; known: lama, san, transformer")


def attention_parameter_table(heads: Iterable[int] = range(1, 41), d: int = 50, *, d_a: int = 350,
                              d_k: int | None = 64, include_mlp: bool = False) -> dict[str, list[int]]:
    """Fig. 4 data: {"heads": [...], "lama": [...], "san": [...], "transformer": [...]}. Defaults: the paper's
    d = 50, Lin et al.'s d_a = 350, a fixed per-head d_k = 64 for the Transformer, and LAMA counted as in the
    paper's §3.3.2 (P, Q, c; `include_mlp=True` adds W_w)."""
    hs = [int(h) for h in heads]
    return {
        "heads": hs,
        "lama": [attention_parameter_count(h, d, "lama", include_mlp=include_mlp) for h in hs],
        "san": [attention_parameter_count(h, d, "san", d_a=d_a) for h in hs],
        "transformer": [attention_parameter_count(h, d, "transformer", d_k=d_k) for h in hs],
    }
