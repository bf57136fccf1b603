"""HCAN: Hierarchical Convolutional Attention Network (Gao et al. 2018), and its flat form CAN.

One *level* (the same block at word and at sentence level, docs/models.md):
  E = Dropout(X + P) re-zeroed at pads (positions are added to real positions only; the reference code
      also adds them to pads - we do not);
  branch a: Q, K, V = ELU(Conv1d(E, kernel 3, same padding)); branch b: the same but V_b = tanh(Conv1d(E));
      heads = channel split (no extra projection); A = masked softmax(Q K^T / sqrt(d_h)) (pad query rows are
      0); H = Dropout(A) V, heads concatenated;
  Z = LayerNorm(H_a * H_b) (per-position LayerNorm over d), re-zeroed at pads; no residual, no FFN;
  pooling: target attention K_t = ELU(Conv1d(Z, 3)), beta = masked softmax_w(T_h . K_t,h / sqrt(d_h)) with a
      learnable target T (d), vector = concat_h sum_w Dropout(beta)_hw Z_w,h (the reference code's values Z;
      `target_value_conv=True` gives eq. 5's V = ELU(Conv1d(Z, 3))), or masked max over positions.
HCAN: word level on the B*S sentences -> sentence vectors (+ sentence positions) -> sentence level ->
document vector -> Dropout -> Linear. CAN ("can", Table 2's flat rows): the word level on (B, L) tokens only.

Choices where the paper and docs/models.md are silent (written here as the spec asks):
- Every convolution's input is re-zeroed at pads first, so pads never leak into a window; ELU/tanh outputs at
  pads need no re-zeroing because attention gives pads zero weight.
- Empty sentences (no real word) do not exist for the model: the word level runs only on non-empty sentences,
  and at sentence level the non-empty sentences are packed to the front (in order) before sentence positions
  are added. So an empty sentence anywhere (middle or end) never changes the logits; its map rows are 0.
  The batch is also cropped to its last real word / sentence (exact, since pads are masked everywhere).
- Position tables have `max_words` / `max_sentences` (CAN: `max_positions`) rows; a longer real input is an error
  that names the field (truncate in the tokenizer, or raise the field).
- Dropout (0.1) on E after positions at both levels, on every attention's weights (self and target), and on
  the document vector before the classifier - as the reference code. Maps are recorded before dropout.
- "One self-attention" (Table 2) keeps branch a: Z = LayerNorm(H_a). "Maxpool" replaces target attention by a
  masked max over positions at both levels (its maps beta/gamma are then not listed).
- Init: PyTorch defaults for convolutions and the classifier (the reference uses orthogonal init); positions
  ~ N(0, 0.1^2) as the reference; targets and their scale: see "Target attention" below.
- The embedding (`self.embed`) is looked up on the full (B, S, W) ids, so attribution methods that hook it
  see a tensor aligned with the input; the word level then takes only the non-empty sentences.

Target attention: the reference code, and what we follow (issue 31). Two public TensorFlow codes by the paper's
first author (iamshang1/Projects, read with the search tools):
- Papers/HCAN/tf_hcan.py (this paper's code, TF1): one target per level, `word_Q` / `sent_Q` of shape
  (1, 1, attention_size) with `tf.orthogonal_initializer` (a single unit-norm row), split into the h heads;
  scores Q K^T / sqrt(d_h); dropout (keep 0.9) on the softmax weights; values Z; attention_size 512, 8 heads;
  Adam(2e-5, 0.9, 0.99) on one document per step. Our first implementation was this: T ~ N(0, 1/d) (unit norm in
  expectation), / sqrt(d_h) - now the variant `normal_target` (config target_init="normal", target_scale="head").
- Papers/HiSAN/tf2_hisan.py and tf2_mthisan.py (the same author's TF2 hierarchical attention networks, whose
  word/line target attention is this one with dense instead of convolutional projections): per-head targets
  `tf.Variable(tf.random.uniform([1, heads, 1, d / heads]))` - U[0, 1), all positive, |T_h| ~ sqrt(d_h / 3), about
  3x the norm of a unit row at d = 96, h = 4 - scored by Keras `layers.Attention(use_scale=True)`: Q K^T times
  ONE LEARNED SCALAR initialised to 1, no 1/sqrt(d); later versions of those files use `scaled_attention(
  use_scale=1/np.sqrt(attention_size))` (Papers/HiSAN/dense_attention.py: the same Keras layer with the learned
  scalar initialised to 1/sqrt(d) of the whole attention size); dropout 0.1 on the weights; Adam(1e-4, 0.9,
  0.99), batches of 128 documents; attention_size 400, 8 heads.
The default now follows the second (target_init="uniform", target_scale="keras"): the attention the paper's
figures show (Fig. 4, appendix B Figs. 7-8: particular words and sentences weighed higher) needs scores that vary
by more than about +-1 between words, and only this parametrisation gives them without a schedule of its own.
`target_scale="learned"` (variant `scaled_target`) is the later 1/sqrt(d) initialisation. Attention size and
heads keep the paper's defaults (512, 8); the shipped checkpoints use d = 96, h = 4 (CPU size, scripts/
make_checkpoints.py) - the HiSAN codes use 400 / 8. Checkpoints written before these fields existed load with
the old choice (ConvAttentionConfig.LEGACY_DEFAULTS).

Why the old target did not train (measured on the old hcan-imdb checkpoint with scripts/hcan_target_probe.py;
400 dev reviews unless said):
- its scores cannot separate words: T_h . K_h / sqrt(d_h) with |T| ~ 1 (1.22 and 0.89 after training; 1 at
  init) stays within about +-0.5, and even multiplying all target scores by 4 at inference only brings the word
  attention's median normalised entropy from 0.999 to 0.979 (64 dev reviews);
- nothing pushes it to: the dev loss is flat in that multiplier a (0.4014 at a = 0, i.e. uniform weights; 0.4021
  at a = 1; 0.4042 at a = 4): the self-attentions below have already mixed every word into every position
  (appendix B's "best" moved into "the"), so uniform pooling loses nothing and the model never needed T;
- dropout on the target weights (0.2 in our recipe, 0.1 in the reference) makes sharpening cost more: with it
  the loss rises twice as fast in a (0.4024 -> 0.4085 for a = 0 -> 4) - dropping the one word a peaked head
  relies on hurts, dropping one of 40 equal words does not;
- the gradient reaching T is small and inconsistent: |dL/dT| ~ 0.015 per batch of 32 against |T| ~ 1, and its
  per-coordinate signal-to-noise over 16 batches (|mean g| / rms g) is 0.51 (words) and 0.26 (sentences) - about
  the 0.25 of pure noise over 16 draws at sentence level - so Adam's steps (lr x mean / rms) wander instead of
  growing T. The paper's own recipe (2e-5, one document per step) would move it even less.
What the reference choices do (hcan-trec retrained with them by the shipped recipe, scripts/make_checkpoints.py
--only trec --models hcan; 200 test questions, docs/attention.md's measure): test accuracy 88.2 -> 92.0 %, word
attention median normalised entropy 0.997 -> 0.987 - still nearly uniform. The target now trains, but towards
flatness: the learned scale fell from 1 to 0.38 (words) and 0.71 (sentences), |T| (words) from 5.7 to 4.2, so the
attention ends flatter than it starts (0.976 with fresh reference targets on the trained keys). The probe on the
new checkpoint (500 dev questions) shows why: dev loss 0.5057 / 0.5064 / 0.5106 / 0.5143 at a = 0 / 1 / 4 / 8 while
accuracy stays 0.89 for every a up to 16 (entropy 1.00 -> 0.55): the classifier does not depend on how peaked
its target attention is, and the cross-entropy is lowest at uniform pooling, so training flattens whatever the
init. On IMDB (old hcan-imdb, 150 dev reviews) sharpening helps a little instead (loss 0.2975 at a = 1, 0.2933
at a = 8; accuracy 88.7 -> 89.3 %; word entropy 0.999 -> 0.908, 0.57 at a = 16 with 87.3 %), but the target's
gradient there is noise (signal-to-noise 0.26 / 0.37 over 16 batches, noise alone ~0.25) and its scores too
small to move, so it never gets there. A fixed, larger scale is what sharpens it: `target_scale="fixed"` with
`target_scale_value` (not learned, so training cannot shrink it; only T and the key convolution can). hcan-trec
retrained so (value 4, otherwise the same recipe; scripts/make_checkpoints.py now uses it for HCAN and CAN): word
attention entropy 0.702 (peak 2.9) at 91.8 % test accuracy, against 0.987 at 92.0 % with the learned scale - the
cost is 0.2 points on 500 questions (one question), within noise. But peaked is not faithful: on the 500 trec test
questions its own-attention comprehensiveness AOPC is 0.134 [0.114, 0.153] against 0.129 [0.109, 0.149] for a
random order (learned scale: 0.172 [0.151, 0.193] vs 0.136 [0.116, 0.155]; the old checkpoint 0.156 [0.134,
0.177] vs 0.126 [0.107, 0.145]) - the words it singles out matter no more than any others, as the probe's flat
accuracy in a predicts: the classifier reads the self-attentions' mixed states, not the target's choice.
On imdb (hcan-imdb / can-imdb, 8,000 reviews, 20 x 40, 4 epochs; 200 test reviews, 25,000 for accuracy): value 4
collapses the word attention onto one word per sentence (median normalised entropy 0.000, sentences 0.212) at
86.6 %; value 2 gives words 0.651 and sentences 0.806 (was 0.999 / 0.996) at 87.1 % (was 88.1 %; a second seed
86.5 %), value 1.75 - the shipped hcan-imdb - 0.897 / 0.907 at 87.7 %, value 1.5 0.931 / 0.927 at 87.5 %; CAN at
2 (shipped) 0.885 (was 1.000) at 87.2 % (was 87.1 %). Peaked, still not faithful: on 100 test reviews hcan-imdb's
own-attention comprehensiveness AOPC is 0.028 [0.015, 0.042] against 0.012 [0.002, 0.021] for a random order
(paired difference +0.016 [-0.001, +0.035]), and its top words are less sufficient than random ones (sufficiency
+0.078 [0.029, 0.121] worse); at value 2 it was 0.017 [0.006, 0.030] against 0.020 [0.010, 0.030].
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from textcls.models.outputs import InterventionSpec, MapSpec
from textcls.models.base import Probe, TextClassifier
from textcls.models.layers import WordEmbedding, masked_max, masked_softmax, rezero
from textcls.models.configs.hcan import TARGET_SCALES, CANConfig, ConvAttentionConfig, HCANConfig
from textcls.models.registration import model_class



def _validate(c: ConvAttentionConfig) -> None:
    if c.d_model < 1 or c.n_heads < 1 or c.d_model % c.n_heads:
        raise ValueError(f"d_model ({c.d_model}) must be a positive multiple of n_heads ({c.n_heads})")
    if c.kernel_size < 1 or c.kernel_size % 2 == 0:
        raise ValueError(f"kernel_size must be a positive odd int (same padding), got {c.kernel_size}")
    if c.self_attentions not in (1, 2):
        raise ValueError(f"self_attentions must be 1 or 2, got {c.self_attentions}")
    if c.pooling not in ("target", "max"):
        raise ValueError(f"pooling must be 'target' or 'max', got {c.pooling!r}")
    if not 0.0 <= c.dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {c.dropout}")
    if c.target_init not in ("uniform", "normal"):
        raise ValueError(f"target_init must be 'uniform' or 'normal', got {c.target_init!r}")
    if not (c.target_scale_value > 0 and math.isfinite(c.target_scale_value)):
        raise ValueError(f"target_scale_value must be a positive number, got {c.target_scale_value}")
    if c.target_scale not in TARGET_SCALES:
        raise ValueError(f"target_scale must be one of {', '.join(TARGET_SCALES)}, got {c.target_scale!r}")


# ---------------------------------------------------------------- blocks

MapHook = Callable[[torch.Tensor], torch.Tensor]


PACK_BELOW = 0.75   # pack a convolution's rows when fewer than this fraction of the positions is real
PACK_MIN_CHANNELS = 32  # ... and its input has at least this many channels (below, indexing costs more)


def _conv(x: torch.Tensor, mask: torch.Tensor, conv: nn.Conv1d) -> torch.Tensor:
    """Conv1d ("same" padding) over positions of x (N, L, C) re-zeroed at pads -> (N, L, C').

    The output is exact at real positions; pad positions are not meaningful (every caller masks them).
    With much padding (sentences of very different lengths) and wide inputs, the convolution is computed
    as one matrix product over the real positions only: rows [x_{t-p}, ..., x_{t+p}] @ W (about 1.3-1.8x
    faster at d = 128..512 with half the positions padded); pad outputs are then 0."""
    x = rezero(x, mask)                                                      # (N, L, C)
    N, L, C = x.shape
    real = int(mask.sum())
    if real >= PACK_BELOW * N * L or C < PACK_MIN_CHANNELS:
        return conv(x.transpose(1, 2)).transpose(1, 2)                       # (N, L, C')
    k, p = conv.kernel_size[0], conv.padding[0]
    xp = F.pad(x, (0, 0, p, p))                                              # (N, L + 2p, C)
    rows = torch.cat([xp[:, j:j + L] for j in range(k)], dim=-1)             # (N, L, k*C)
    idx = mask.reshape(-1).nonzero().squeeze(1)                              # (real,)
    weight = conv.weight.permute(0, 2, 1).reshape(conv.out_channels, k * C)  # (C', k*C), same tensor
    y = F.linear(rows.reshape(N * L, k * C).index_select(0, idx), weight, conv.bias)  # (real, C')
    return y.new_zeros(N * L, conv.out_channels).index_copy(0, idx, y).view(N, L, -1)  # (N, L, C')


class ConvSelfAttention(nn.Module):
    """Convolutional multi-head self-attention (eq. 3/4): Q, K, V = act(Conv1d(x)), heads by channel split."""

    def __init__(self, in_dim: int, d: int, heads: int, kernel: int, value_act: Callable, dropout: float):
        super().__init__()
        self.d, self.heads = d, heads
        self.qkv = nn.Conv1d(in_dim, 3 * d, kernel, padding=kernel // 2)  # three convolutions in one
        self.value_act = value_act
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, hook: MapHook | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        N, L, _ = x.shape
        h, dh = self.heads, self.d // self.heads
        q, k, v = _conv(x, mask, self.qkv).split(self.d, dim=-1)             # 3 x (N, L, d)
        q, k, v = F.elu(q), F.elu(k), self.value_act(v)                      # 3 x (N, L, d)
        q = q.view(N, L, h, dh).transpose(1, 2)                              # (N, h, L, dh)
        k = k.view(N, L, h, dh).transpose(1, 2)                              # (N, h, L, dh)
        v = v.view(N, L, h, dh).transpose(1, 2)                              # (N, h, L, dh)
        scores = q @ k.transpose(-1, -2) / math.sqrt(dh)                     # (N, h, L, L)
        pair = mask[:, None, :, None] & mask[:, None, None, :]               # (N, 1, L, L)
        att = masked_softmax(scores, pair)                                   # (N, h, L, L) pad rows 0
        if hook is not None:
            att = hook(att)
        out = (self.dropout(att) @ v).transpose(1, 2).reshape(N, L, self.d)  # (N, L, d)
        return out, att


class TargetAttention(nn.Module):
    """Convolutional multi-head target attention (eq. 5): a learnable target vector T queries K = ELU(Conv(Z)).

    init "uniform": T ~ U[0, 1) per head; "normal": T ~ N(0, 1/d). scale "keras" / "learned": scores =
    s * T_h . K_h with one learned scalar s (init 1 / 1/sqrt(d)); "head": scores = T_h . K_h / sqrt(d_h)."""

    def __init__(self, d: int, heads: int, kernel: int, value_conv: bool, dropout: float,
                 init: str = "normal", scale: str = "head", scale_value: float = 1.0):
        super().__init__()
        self.d, self.heads = d, heads
        self.key = nn.Conv1d(d, d, kernel, padding=kernel // 2)
        self.value = nn.Conv1d(d, d, kernel, padding=kernel // 2) if value_conv else None
        self.target = nn.Parameter(torch.rand(d) if init == "uniform" else torch.randn(d) / math.sqrt(d))
        if scale in ("keras", "learned"):
            self.scale = nn.Parameter(torch.tensor(1.0 if scale == "keras" else 1.0 / math.sqrt(d)))
        else:
            self.register_parameter("scale", None)
        self.fixed_scale = float(scale_value) if scale == "fixed" else 1.0 / math.sqrt(d // heads)
        self.dropout = nn.Dropout(dropout)

    def score_scale(self) -> torch.Tensor | float:
        return self.scale if self.scale is not None else self.fixed_scale

    def forward(self, z: torch.Tensor, mask: torch.Tensor, hook: MapHook | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        N, L, _ = z.shape
        h, dh = self.heads, self.d // self.heads
        k = F.elu(_conv(z, mask, self.key)).view(N, L, h, dh)                 # (N, L, h, dh)
        scores = torch.einsum("nlhe,he->nhl", k, self.target.view(h, dh)) * self.score_scale()  # (N, h, L)
        beta = masked_softmax(scores, mask[:, None, :])                      # (N, h, L) pads 0
        if hook is not None:
            beta = hook(beta)
        v = z if self.value is None else F.elu(_conv(z, mask, self.value))   # (N, L, d)
        out = torch.einsum("nhl,nlhe->nhe", self.dropout(beta), v.view(N, L, h, dh))  # (N, h, dh)
        return out.reshape(N, self.d), beta                                  # (N, d)


@dataclass
class LevelOutput:
    vector: torch.Tensor               # (N, d) pooled representation of each sequence
    z: torch.Tensor                    # (N, L, d) LayerNorm(H_a * H_b), 0 at pads
    att_a: torch.Tensor                # (N, h, L, L)
    att_b: torch.Tensor | None         # (N, h, L, L) or None with one self-attention
    beta: torch.Tensor | None          # (N, h, L) or None with max-pool


class ConvAttentionLevel(nn.Module):
    """One hierarchy level: (one or) two parallel conv self-attentions -> product -> LayerNorm -> pooling."""

    def __init__(self, in_dim: int, c: ConvAttentionConfig):
        super().__init__()
        d = c.d_model
        self.branch_a = ConvSelfAttention(in_dim, d, c.n_heads, c.kernel_size, F.elu, c.dropout)
        self.branch_b = (ConvSelfAttention(in_dim, d, c.n_heads, c.kernel_size, torch.tanh, c.dropout)
                         if c.self_attentions == 2 else None)
        self.norm = nn.LayerNorm(d)
        self.pool = (TargetAttention(d, c.n_heads, c.kernel_size, c.target_value_conv, c.dropout,
                                     c.target_init, c.target_scale, c.target_scale_value)
                     if c.pooling == "target" else None)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, hooks: dict[str, MapHook] | None = None
                ) -> LevelOutput:
        hooks = hooks or {}
        h_a, att_a = self.branch_a(x, mask, hooks.get("a"))                  # (N, L, d), (N, h, L, L)
        att_b = None
        if self.branch_b is not None:
            h_b, att_b = self.branch_b(x, mask, hooks.get("b"))              # (N, L, d), (N, h, L, L)
            h_a = h_a * h_b                                                  # (N, L, d)
        z = rezero(self.norm(h_a), mask)                                     # (N, L, d)
        if self.pool is not None:
            vector, beta = self.pool(z, mask, hooks.get("beta"))             # (N, d), (N, h, L)
        else:
            vector, beta = masked_max(z, mask.unsqueeze(-1), dim=1)[0], None  # (N, d)
        return LevelOutput(vector, z, att_a, att_b, beta)


def _tap(probe: Probe, name: str, mask: torch.Tensor, to_full: Callable, from_full: Callable
         ) -> MapHook | None:
    """A hook that hands a map to the probe in its full (map_specs) shape and returns the edited map in the
    model's internal (cropped / packed) shape. None when nothing records or edits (the fast path)."""
    if not (probe.record or name in probe.edits):
        return None

    def hook(t: torch.Tensor) -> torch.Tensor:
        full = probe(name, to_full(t), mask=mask)
        return from_full(full) if name in probe.edits else t
    return hook


def _last_real(mask: torch.Tensor) -> int:
    """1 + the last index of the last axis where any row of mask is real; 0 if none."""
    cols = mask.reshape(-1, mask.shape[-1]).any(0).nonzero()
    return int(cols.max()) + 1 if cols.numel() else 0


def _check_input(name: str, token_ids: torch.Tensor, mask: torch.Tensor, dims: int, shape: str) -> None:
    if token_ids.dim() != dims:
        hint = (" (use the 'can' model for flat (B, L) input, or to_hierarchical)" if dims == 3
                else " (use the 'hcan' model for (B, S, W) sentence input)")
        raise ValueError(f"{name} expects token ids of shape {shape}, got {tuple(token_ids.shape)}{hint}")
    if mask.shape != token_ids.shape:
        raise ValueError(f"{name}: mask shape {tuple(mask.shape)} differs from token ids {tuple(token_ids.shape)}")


def _self_attention_specs(c: ConvAttentionConfig, outer: tuple[str, ...], q: str, k: str,
                          prefix: str = "", level: str = "word") -> list[MapSpec]:
    specs = [MapSpec(f"{prefix}A_a", outer + ("head", q, k), "attention",
                     f"{level}-level self-attention, branch a (ELU values)")]
    if c.self_attentions == 2:
        specs.append(MapSpec(f"{prefix}A_b", outer + ("head", q, k), "attention",
                             f"{level}-level self-attention, branch b (tanh values)"))
    return specs


# ---------------------------------------------------------------- models

@model_class('hcan')
class HCAN(TextClassifier):
    """Hierarchical: input (B, S, W) token ids and mask. See the module docstring."""

    def __init__(self, config: HCANConfig, embeddings=None):
        super().__init__(config)
        c = config
        _validate(c)
        if c.max_sentences < 1 or c.max_words < 1:
            raise ValueError("max_sentences and max_words must be >= 1")
        self.embed = WordEmbedding(c.vocab_size, c.embed_dim, c.embedding_mode, c.channels, embeddings, c.pad_id)
        d = c.d_model
        self.word_pos = nn.Parameter(torch.randn(c.max_words, self.embed.out_dim) * 0.1)
        self.sent_pos = nn.Parameter(torch.randn(c.max_sentences, d) * 0.1)
        self.word_level = ConvAttentionLevel(self.embed.out_dim, c)
        self.sent_level = ConvAttentionLevel(d, c)
        self.dropout = nn.Dropout(c.dropout)
        self.fc = nn.Linear(d, c.num_labels)

    def interventions(self) -> InterventionSpec:
        c = self.config
        return InterventionSpec(heads=c.n_heads)

    def map_specs(self) -> list[MapSpec]:
        c = self.config
        specs = _self_attention_specs(c, ("sentence",), "query_word", "key_word")
        if c.pooling == "target":
            specs.append(MapSpec("beta", ("sentence", "head", "word"), "attention",
                                 "word-level target attention: weight of each word in its sentence vector"))
        specs += _self_attention_specs(c, (), "query_sentence", "key_sentence", prefix="sent_", level="sentence")
        if c.pooling == "target":
            specs.append(MapSpec("gamma", ("head", "sentence"), "attention",
                                 "sentence-level target attention: weight of each sentence in the document"))
        return specs

    def _forward(self, token_ids, mask, probe: Probe):
        c = self.config
        _check_input("hcan", token_ids, mask, 3, "(B, S, W)")
        B, S, W = token_ids.shape
        d = c.d_model
        emb = self.embed(token_ids)                                          # (B, S, W, e)
        flat_mask = mask.reshape(B * S, W)                                   # (B*S, W)
        nonempty = mask.any(-1)                                              # (B, S)
        sel = nonempty.reshape(-1).nonzero().squeeze(1)                      # (N,) non-empty sentences
        N = sel.numel()
        Wr = max(_last_real(flat_mask), 1)                                   # cropped sentence length
        if Wr > c.max_words:
            raise ValueError(f"hcan: a sentence has {Wr} words but the position table holds max_words="
                             f"{c.max_words}; truncate sentences (tokenizer max_words) or raise max_words")
        counts = nonempty.sum(1)                                             # (B,) sentences per document
        Sr = max(int(counts.max()) if B else 0, 1)                           # packed sentence count
        if Sr > c.max_sentences:
            raise ValueError(f"hcan: a document has {Sr} sentences but the position table holds "
                             f"max_sentences={c.max_sentences}; truncate documents or raise max_sentences")

        # ---- word level on the N non-empty sentences, cropped to Wr words
        wm = flat_mask.index_select(0, sel)[:, :Wr]                          # (N, Wr)
        x = emb.reshape(B * S, W, -1).index_select(0, sel)[:, :Wr]           # (N, Wr, e)
        x = rezero(self.dropout(x + self.word_pos[:Wr]), wm)                 # (N, Wr, e)

        def word_full(t):  # (N, h, Wr[, Wr]) -> (B, S, h, W[, W])
            pad = [0, W - Wr] * (t.dim() - 2)
            full = t.new_zeros((B * S,) + t.shape[1:2] + (W,) * (t.dim() - 2))
            return full.index_copy(0, sel, F.pad(t, pad)).view((B, S) + full.shape[1:])

        def word_back(full):  # inverse of word_full
            t = full.reshape((B * S,) + full.shape[2:]).index_select(0, sel)
            return t[..., :Wr, :Wr] if t.dim() == 4 else t[..., :Wr]

        hooks = {key: _tap(probe, name, mask, word_full, word_back)
                 for key, name in (("a", "A_a"), ("b", "A_b"), ("beta", "beta"))}
        words = self.word_level(x, wm, hooks)                                # vector (N, d)

        # ---- sentence level: non-empty sentences packed to the front of each document, in order
        order = torch.sort((~nonempty).to(torch.uint8), dim=1, stable=True).indices  # (B, S) permutation
        packed = order[:, :Sr]                                               # (B, Sr) original sentence index
        sm = torch.arange(Sr, device=mask.device)[None, :] < counts[:, None]  # (B, Sr)
        vecs = words.vector.new_zeros(B * S, d).index_copy(0, sel, words.vector).view(B, S, d)  # (B, S, d)
        if Sr > S:                                                           # no real sentence at all
            vecs = F.pad(vecs, (0, 0, 0, Sr - S))
            packed = torch.zeros(B, Sr, dtype=torch.long, device=mask.device)
        sv = vecs.gather(1, packed[..., None].expand(B, Sr, d))              # (B, Sr, d)
        sv = rezero(self.dropout(sv + self.sent_pos[:Sr]), sm)               # (B, Sr, d)
        bi = torch.arange(B, device=mask.device)[:, None]                    # (B, 1)
        Sv = min(S, Sr)                                                      # packed rows that map back

        def sent_full(t):  # (B, h, Sr[, Sr]) -> (B, h, S[, S]) at the original sentence positions
            t, idx = t[:, :, :Sv, :Sv] if t.dim() == 4 else t[:, :, :Sv], packed[:, :Sv]
            if t.dim() == 3:
                return t.new_zeros(B, t.shape[1], S).transpose(1, 2).index_put(
                    (bi, idx), t.transpose(1, 2)).transpose(1, 2)
            full = t.new_zeros(B, S, S, t.shape[1])
            return full.index_put((bi[..., None], idx[:, :, None], idx[:, None, :]),
                                  t.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

        def sent_back(full):  # inverse of sent_full
            idx = packed[:, :Sv]
            if full.dim() == 3:
                t = full.transpose(1, 2)[bi, idx].transpose(1, 2)             # (B, h, Sv)
                return F.pad(t, (0, Sr - Sv))
            t = full.permute(0, 2, 3, 1)[bi[..., None], idx[:, :, None], idx[:, None, :]].permute(0, 3, 1, 2)
            return F.pad(t, (0, Sr - Sv, 0, Sr - Sv))

        hooks = {key: _tap(probe, name, nonempty, sent_full, sent_back)
                 for key, name in (("a", "sent_A_a"), ("b", "sent_A_b"), ("beta", "gamma"))}
        doc = self.sent_level(sv, sm, hooks).vector                          # (B, d)
        return self.fc(self.dropout(doc)), doc


@model_class('can')
class CAN(TextClassifier):
    """Flat: input (B, L) token ids and mask; the word level of HCAN on the whole text, then the classifier."""

    def __init__(self, config: CANConfig, embeddings=None):
        super().__init__(config)
        c = config
        _validate(c)
        if c.max_positions < 1:
            raise ValueError("max_positions must be >= 1")
        self.embed = WordEmbedding(c.vocab_size, c.embed_dim, c.embedding_mode, c.channels, embeddings, c.pad_id)
        self.pos = nn.Parameter(torch.randn(c.max_positions, self.embed.out_dim) * 0.1)
        self.level = ConvAttentionLevel(self.embed.out_dim, c)
        self.dropout = nn.Dropout(c.dropout)
        self.fc = nn.Linear(c.d_model, c.num_labels)

    def interventions(self) -> InterventionSpec:
        c = self.config
        return InterventionSpec(heads=c.n_heads)

    def map_specs(self) -> list[MapSpec]:
        c = self.config
        specs = _self_attention_specs(c, (), "query_token", "key_token")
        if c.pooling == "target":
            specs.append(MapSpec("beta", ("head", "token"), "attention",
                                 "target attention: weight of each token in the text vector"))
        return specs

    def _forward(self, token_ids, mask, probe: Probe):
        c = self.config
        _check_input("can", token_ids, mask, 2, "(B, L)")
        B, L = token_ids.shape
        Lr = max(_last_real(mask), 1)                                        # cropped length
        if Lr > c.max_positions:
            raise ValueError(f"can: an input has {Lr} tokens but the position table holds max_positions="
                             f"{c.max_positions}; truncate inputs (tokenizer max_len) or raise max_positions")
        emb = self.embed(token_ids)                                          # (B, L, e)
        m = mask[:, :Lr]                                                     # (B, Lr)
        x = rezero(self.dropout(emb[:, :Lr] + self.pos[:Lr]), m)             # (B, Lr, e)

        def to_full(t):  # (B, h, Lr[, Lr]) -> (B, h, L[, L])
            return F.pad(t, [0, L - Lr] * (t.dim() - 2))

        def back(full):
            return full[..., :Lr, :Lr] if full.dim() == 4 else full[..., :Lr]

        hooks = {key: _tap(probe, name, mask, to_full, back)
                 for key, name in (("a", "A_a"), ("b", "A_b"), ("beta", "beta"))}
        vec = self.level(x, m, hooks).vector                                 # (B, d)
        return self.fc(self.dropout(vec)), vec
