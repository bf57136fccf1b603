"""ACT: Attentive Convolutional Transformer (Li et al., AAAI 2021), following docs/models.md.

One layer, input X (B, L, d_w), per head i (d_k = d_w / h):
  Q_i = X W_i^Q + b, pads re-zeroed                                     (eq. 5)
  M_i = GELU(F_i (*) Q_i + b_i)  (B, m, L)    window j = tokens j..j+n-1  (eq. 1-2)
  O_i = F~_i M_i                 (B, L, n d_k)  pads of M zeroed first     (eq. 3)
  g_i = F~_i maskedmax_L(M_i)    (B, n d_k)                                (eq. 4)
  X'  = LayerNorm(X + Dropout(Cat_i(O_i) W^O)), pads re-zeroed; no feed-forward sublayer.
Top layer only: g = Cat_i(g_i) W^O (the same W^O, no residual, no LayerNorm).
Global attention (eq. 6) on the top layer's output o_j and g:
  score_j = c . GELU(W_o o_j + W_p p_j) + o_j . g / sqrt(d_w);  alpha = masked softmax;  r = sum_j alpha_j o_j
Classifier: z = GELU(Linear(d_w -> 100)(Dropout(r))); logits = Linear(100 -> C)(Dropout(z)).
Loss: cross-entropy + 0.001 * center loss on z (`extra_loss`; centres are a buffer, updated by Wen et al.'s
rule with rate 0.1, never by the optimizer).

Choices (the paper and docs/models.md leave them open):
- The filters are stored once, as F~ (h, n d_k, m): `filters[i]` IS F~_i, and the convolution is computed from
  it (windows Cat(q_j, ..., q_{j+n-1}) @ F~_i, eq. 2 literally), so O_i = F~_i M_i uses the very tensor the
  convolution used. Row index of F~_i = k * d_k + c (offset k in the window, channel c), i.e. the order of
  Cat(q_j, ..., q_{j+n-1}) in eq. 2. `layer.conv_weight(i)` is a view of the same storage in Conv1d layout
  (m, d_k, n): `F.conv1d(Q_i^T, layer.conv_weight(i), layer.filter_bias[i])` gives M_i before the GELU.
  Initialised like nn.Conv1d (uniform +-1/sqrt(d_k n)).
- Speed: a call without maps or edits computes the same function in a cheaper order (`ACTLayer._fast_forward`):
  the convolution as one grouped Conv1d over all heads, and W^O F~_i folded into one (d, h m) matrix, so O_i is
  never formed (associativity). With maps or edits the literal equations above run. Both are tested equal.
- Window j covers tokens j..j+n-1 (n-1 zeros on the right); `conv_padding="center"` centres it instead.
- W_o has a bias, W_p none (one bias suffices, the two are summed). p_j from a learned (P x d_p) table;
  inputs longer than P are refused with a clear error (they have no position).
- Dropout (0.4): on Y W^O before the residual, on r and on z (docs/models.md); none on the embeddings.
- Center loss: L_C = 1/2 mean_i ||z_i - c_{y_i}||^2 (mean over the batch, as the authors' Caffe layer of Wen
  et al. divides by the batch size); update c_j <- c_j - 0.1 * sum_{y_i=j}(c_j - z_i) / (1 + n_j) after the loss
  is taken, in training mode only. Centres start at zero.
- If the embedding dimension (times channels) differs from d_w, one Linear projects it to d_w.

Ablations of Table 3 (registered as variants):
- "no_attentive_conv": conventional CNN "where feature maps are used for text representation directly"
  (Sec. 4.1): O_i = M_i^T (B, L, m), g_i = maxpool(M_i); W^O then maps h m -> d_w.
- "single_head": h = 1 (d_k = d_w), same m filters.
- "no_global_rep": the o_j . g term is dropped (g is then not computed).
- "no_position": the W_p p_j term is dropped (no position table; with relative positions: none of them).
Relation classification (models/relation.py): preset "relation" = the paper's relation-extraction settings
(1 layer, 6 heads, 40 filters, kernel 3, two 30-d relative-position embeddings concatenated in place of p_j);
variant "relative_positions" = only the position switch.

Maps (layer axis = the N layers, head axis = the h heads):
  feature_map    (B, layer, head, filter, token)   M after GELU, zero at pads
  argmax         (B, layer, head, filter)          window start the max-pool picked (n-gram j..j+n-1)
  local_output   (B, layer, head, token, feature)  O_i^T = (F~_i M_i)^T
  global_rep     (B, feature)                      g (absent without the global representation)
  score_context  (B, token)   values="score"       c . GELU(W_o o_j [+ W_p p_j]), zero at pads
  score_global   (B, token)   values="score"       o_j . g / sqrt(d_w), zero at pads (absent without g)
  alpha          (B, token)   attention            masked softmax of the sum of the two score terms
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from textcls.models.outputs import ClassifierOutput, InterventionSpec, MapSpec
from textcls.models.base import Probe, TextClassifier
from textcls.models.layers import CenterLoss, GlobalAttention, WordEmbedding, check_input, masked_max, rezero
from textcls.models.configs.act import CONV_MODES, CONV_PADDINGS, ACTConfig
from textcls.models.registration import model_class
from textcls.models.relation import RelativePositions

class ACTLayer(nn.Module):
    """One multi-head attentive-convolution layer (see the module docstring)."""

    def __init__(self, c: ACTConfig):
        super().__init__()
        h, n, m = c.n_heads, c.kernel_size, c.n_filters
        self.h, self.n, self.m, self.dk = h, n, m, c.d_model // h
        self.mode = c.conv_mode
        self.padding = c.conv_padding
        self.wq = nn.Linear(c.d_model, c.d_model)                      # W_i^Q of all heads, with bias
        bound = 1.0 / math.sqrt(self.dk * n)                           # nn.Conv1d's default init
        self.filters = nn.Parameter(torch.empty(h, n * self.dk, m).uniform_(-bound, bound))  # F~_i per head
        self.filter_bias = nn.Parameter(torch.empty(h, m).uniform_(-bound, bound))           # b_i
        per_head = n * self.dk if self.mode == "attentive" else m
        self.wo = nn.Linear(h * per_head, c.d_model)                  # W^O
        self.norm = nn.LayerNorm(c.d_model)
        self.dropout = nn.Dropout(c.dropout)

    def filter_matrix(self, head: int) -> torch.Tensor:
        """F~_i (n d_k, m): the parameter itself (a view of its storage, not a copy)."""
        return self.filters[head]

    def conv_weight(self, head: int) -> torch.Tensor:
        """F_i in nn.Conv1d layout (m, d_k, n): a view of the same storage as F~_i."""
        return self.filters[head].t().unflatten(1, (self.n, self.dk)).transpose(1, 2)

    def _windows(self, q: torch.Tensor) -> torch.Tensor:
        """q (B, h, L, d_k) -> Cat(q_j, ..., q_{j+n-1}) (B, h, L, n d_k), zeros past the ends."""
        left = (self.n - 1) // 2 if self.padding == "center" else 0
        q = F.pad(q, (0, 0, left, self.n - 1 - left))                  # (B, h, L+n-1, d_k)
        w = q.unfold(2, self.n, 1)                                      # (B, h, L, d_k, n)
        return w.transpose(-1, -2).flatten(-2)                          # (B, h, L, n*d_k) offset-major

    def grouped_conv_weight(self) -> torch.Tensor:
        """All heads' F_i in grouped-Conv1d layout (h m, d_k, n): a reshaped copy of F~ (the same numbers)."""
        h, nd, m = self.filters.shape
        return self.filters.transpose(1, 2).reshape(h, m, self.n, self.dk).transpose(-1, -2).reshape(h * m, self.dk,
                                                                                                     self.n)

    def fused_output_weight(self) -> torch.Tensor:
        """W^O with every head's F~_i folded in: (d, h m), so Cat_i(F~_i M_i) W^O = Cat_i(M_i) (W^O F~)."""
        if self.mode != "attentive":
            return self.wo.weight                                       # (d, h m): O_i = M_i already
        wo = self.wo.weight.view(self.wo.out_features, self.h, -1)      # (d, h, n d_k)
        return torch.einsum("dhj,hjm->dhm", wo, self.filters).flatten(1)  # (d, h m)

    def _fast_forward(self, x: torch.Tensor, mask: torch.Tensor, need_g: bool
                      ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The same function as `forward` without maps or edits, computed in a cheaper order: the convolution
        as one grouped Conv1d over all heads (no window copies), and W^O F~_i folded into one (d, h m) matrix,
        so O_i = F~_i M_i is never formed (associativity; equal up to float rounding - tested)."""
        B, L, d = x.shape
        q = rezero(self.wq(x), mask).transpose(1, 2)                    # (B, h d_k, L) channels head-major
        left = (self.n - 1) // 2 if self.padding == "center" else 0
        q = F.pad(q, (left, self.n - 1 - left))                         # (B, h d_k, L+n-1)
        pre = F.conv1d(q, self.grouped_conv_weight(), self.filter_bias.flatten(), groups=self.h)  # (B, h m, L)
        M = F.gelu(pre) * mask[:, None, :].to(x.dtype)                  # (B, h m, L) zero at pads
        w = self.fused_output_weight()                                  # (d, h m)
        y = F.linear(M.transpose(1, 2), w, self.wo.bias)                # (B, L, d)
        x = rezero(self.norm(x + self.dropout(y)), mask)                # (B, L, d)
        g = None
        if need_g:
            values, _ = masked_max(M, mask[:, None, :], dim=-1)         # (B, h m)
            g = F.linear(values, w, self.wo.bias)                       # (B, d) = Cat_i(g_i) W^O
        return x, g

    def forward(self, x: torch.Tensor, mask: torch.Tensor, probe: Probe, layer: int, need_g: bool
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
        if not probe.active:
            return self._fast_forward(x, mask, need_g)
        B, L, _ = x.shape
        mq = mask[:, None, :, None].to(x.dtype)                         # (B, 1, L, 1)
        q = rezero(self.wq(x), mask).view(B, L, self.h, self.dk).transpose(1, 2)  # (B, h, L, d_k)
        pre = torch.einsum("bhlk,hkm->bhlm", self._windows(q), self.filters)   # (B, h, L, m) eq. 2
        pre = pre + self.filter_bias[None, :, None, :]
        M = F.gelu(pre) * mq                                            # (B, h, L, m) zero at pads
        if probe.active:
            M = probe("feature_map", M.transpose(-1, -2), layer=layer, mask=mask).transpose(-1, -2)
        if self.mode == "attentive":
            O = torch.einsum("bhlm,hkm->bhlk", M, self.filters)          # (B, h, L, n*d_k) = (F~_i M_i)^T
        else:
            O = M                                                       # (B, h, L, m) feature maps directly
        if probe.active:
            O = probe("local_output", O, layer=layer, mask=mask)
        y = self.wo(O.transpose(1, 2).flatten(2))                       # (B, L, d)
        x = rezero(self.norm(x + self.dropout(y)), mask)                # (B, L, d)
        g = None
        if need_g or probe.active:
            values, index = masked_max(M.transpose(-1, -2), mask[:, None, None, :], dim=-1)  # (B, h, m)
            probe("argmax", index, layer=layer, mask=mask)
            if need_g:
                gi = torch.einsum("bhm,hkm->bhk", values, self.filters) if self.mode == "attentive" \
                    else values                                         # (B, h, n*d_k | m)
                g = self.wo(gi.flatten(1))                              # (B, d) = Cat_i(g_i) W^O
        return x, g


@model_class('act')
class ACT(TextClassifier):
    context_mixing = "act"                  # its global attention only

    def __init__(self, config: ACTConfig, embeddings=None):
        super().__init__(config)
        c = config
        if c.conv_mode not in CONV_MODES:
            raise ValueError(f"unknown conv_mode {c.conv_mode!r}; known: {CONV_MODES}")
        if c.conv_padding not in CONV_PADDINGS:
            raise ValueError(f"unknown conv_padding {c.conv_padding!r}; known: {CONV_PADDINGS}")
        if c.n_heads < 1 or c.d_model % c.n_heads:
            raise ValueError(f"d_model ({c.d_model}) must be a multiple of n_heads ({c.n_heads})")
        if min(c.kernel_size, c.n_filters, c.n_layers, c.fc_dim) < 1:
            raise ValueError("kernel_size, n_filters, n_layers and fc_dim must be >= 1")
        self.embed = WordEmbedding(c.vocab_size, c.embed_dim, c.embedding_mode, c.channels, embeddings, c.pad_id)
        self.proj = nn.Linear(self.embed.out_dim, c.d_model) if self.embed.out_dim != c.d_model else None
        self.layers = nn.ModuleList(ACTLayer(c) for _ in range(c.n_layers))
        self.global_attention = GlobalAttention(c.d_model, c.d_attn, c.d_pos, c.max_positions,
                                                c.position_embed, c.global_rep, table=not c.relative_positions)
        # relation classification: relative positions to the two entities (models/relation.py); with
        # position_embed off there is no position term at all, so none are computed
        self.relative = RelativePositions(c, c.d_pos, c.position_embed) if c.relative_positions else None
        self.dropout = nn.Dropout(c.dropout)
        self.fc = nn.Linear(c.d_model, c.fc_dim)
        self.out = nn.Linear(c.fc_dim, c.num_labels)
        self.center_loss = CenterLoss(c.num_labels, c.fc_dim, c.center_loss_weight, c.center_loss_rate)

    def interventions(self) -> InterventionSpec:
        c = self.config
        return InterventionSpec(heads=c.n_heads, layers=c.n_layers, filters=self.filter_maps(c.n_filters))

    def map_specs(self) -> list[MapSpec]:
        feat = "n*d_k values of F~_i M_i" if self.config.conv_mode == "attentive" else "the m feature maps"
        return [
            MapSpec("feature_map", ("layer", "head", "filter", "token"), "feature_map",
                    "attentive-convolution feature map M (GELU); token = first word of the n-gram"),
            MapSpec("argmax", ("layer", "head", "filter"), "feature_map",
                    "start of the n-gram each filter's max-pool picked", values="index"),
            MapSpec("local_output", ("layer", "head", "token", "feature"), "activation",
                    f"local output O_i per token: {feat}"),
        ] + self.global_attention.map_specs() + (self.relative.map_specs() if self.relative else [])

    def _forward(self, token_ids, mask, probe: Probe):
        check_input(token_ids, mask, self.config.vocab_size)
        pos = None
        if self.relative is not None:
            pos = self.relative(token_ids, mask, probe)                 # (B, L, d_p) relative positions
            mask = self.relative.read_mask(token_ids, mask)             # tags out unless read as words
        x = self.embed(token_ids)                                       # (B, L, E)
        if self.proj is not None:
            x = self.proj(x)                                            # (B, L, d)
        x = rezero(x, mask)                                             # (B, L, d)
        g = None
        for i, layer in enumerate(self.layers):
            top = i == len(self.layers) - 1 and self.config.global_rep
            x, g = layer(x, mask, probe, i, need_g=top)                  # (B, L, d), g (B, d) on top
        r = self.global_attention(x, mask, g, probe, pos)               # (B, d)
        z = F.gelu(self.fc(self.dropout(r)))                            # (B, fc)
        return self.out(self.dropout(z)), z

    def extra_loss(self, out: ClassifierOutput, labels: torch.Tensor) -> torch.Tensor | None:
        """Center loss on z (weight 0.001); in training mode it also moves the centres (rate 0.1)."""
        if self.config.center_loss_weight == 0:
            return None
        if out.features is None:
            raise ValueError("extra_loss needs the features (z) of the model's output")
        return self.center_loss(out.features, labels, update=self.training)
