"""Blocks several model families share: the masking rules, activations, the embedding layer, input checks,
window helpers for convolutions, and ACT's global attention and center loss (which the Transformer reuses).

Masking rules (docs/models.md), used by every model through the helpers below:
- masked softmax: pads get no weight; an all-pad row gives zeros, never NaN;
- masked max: pads never win; an all-pad row gives 0;
- re-zero pads (`x * mask`) before every convolution, so pad positions never leak into a window.

A model file imports from here and from `base`, never from another model file.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from textcls.models.outputs import MapSpec
from textcls.data.text import PAD_ID
from textcls.models.base import Probe
from textcls.models.configs.base import EMBEDDING_MODES


# ---------------------------------------------------------------- masking helpers

def masked_softmax(scores: torch.Tensor, mask: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax over `dim` where mask is True; pads get exactly 0; an all-pad row gives all zeros (no NaN)."""
    mask = mask.bool()
    neg = torch.finfo(scores.dtype).min
    p = torch.softmax(scores.masked_fill(~mask, neg), dim=dim)
    return p * mask.to(p.dtype)  # all-pad row: uniform * 0 = 0


def masked_max(x: torch.Tensor, mask: torch.Tensor, dim: int = -1) -> tuple[torch.Tensor, torch.Tensor]:
    """(values, argmax) of the max over `dim` among real positions; an all-pad row gives value 0, index 0."""
    mask = mask.bool()
    neg = torch.finfo(x.dtype).min
    values, index = x.masked_fill(~mask, neg).max(dim=dim)
    any_real = mask.any(dim=dim)
    values = torch.where(any_real, values, torch.zeros_like(values))
    index = torch.where(any_real, index, torch.zeros_like(index))
    return values, index


def masked_mean(x: torch.Tensor, mask: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """Mean of x (B, L, D) over real positions of dim; an all-pad row gives 0."""
    m = mask.to(x.dtype).unsqueeze(-1)                         # (B, L, 1)
    return (x * m).sum(dim) / m.sum(dim).clamp(min=1.0)


def rezero(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Zero pad positions of x (B, L, D) with mask (B, L)."""
    return x * mask.unsqueeze(-1).to(x.dtype)


def nlrelu(x: torch.Tensor) -> torch.Tensor:
    """Natural-logarithm ReLU (AGCNN eq. 4): ln(1 + max(0, x))."""
    return torch.log1p(torch.relu(x))


# Activations the papers compare (AGCNN Table 5), under configs.base.ACTIVATION_NAMES (the configs' choices, no
# torch there). `make_activation(name)` returns a callable.
ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "nlrelu": nlrelu,
    "relu": F.relu,
    "selu": F.selu,
    "elu": F.elu,
    "leaky_relu": F.leaky_relu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "gelu": F.gelu,
    "softplus": F.softplus,
    "identity": lambda x: x,
}


def make_activation(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; known: {', '.join(ACTIVATIONS)}")
    return ACTIVATIONS[name]


# ---------------------------------------------------------------- embeddings

class WordEmbedding(nn.Module):
    """Token ids (...,) -> vectors (..., channels * dim) in the rand / static / non-static / multichannel modes.

    Multichannel concatenates the channels on the feature axis, so a convolution over the output spans
    all channels (Kim 2014: each filter is applied to both channels and the results added).
    Captum's layer attributions hook this module: its output is "the embedding layer".
    """

    def __init__(self, vocab_size: int, dim: int, mode: str = "non-static", channels: int = 2,
                 pretrained: Any = None, pad_id: int = PAD_ID):
        super().__init__()
        if mode not in EMBEDDING_MODES:
            raise ValueError(f"unknown embedding mode {mode!r}; known: {EMBEDDING_MODES}")
        self.mode = mode
        n = channels if mode == "multichannel" else 1
        self.tables = nn.ModuleList(nn.Embedding(vocab_size, dim, padding_idx=pad_id) for _ in range(n))
        if pretrained is not None:
            w = torch.as_tensor(pretrained, dtype=torch.float32)
            if tuple(w.shape) != (vocab_size, dim):
                raise ValueError(f"pretrained embeddings have shape {tuple(w.shape)}, expected {(vocab_size, dim)}")
            for t in self.tables:
                with torch.no_grad():
                    t.weight.copy_(w)
        frozen = {"rand": [], "non-static": [], "static": [0], "multichannel": list(range(1, n))}[mode]
        for i in frozen:
            self.tables[i].weight.requires_grad_(False)
        self.out_dim = n * dim

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return torch.cat([t(ids) for t in self.tables], dim=-1)  # (..., channels * dim)


# ---------------------------------------------------------------- inputs and convolution windows

def check_input(token_ids: torch.Tensor, mask: torch.Tensor, vocab_size: int) -> None:
    """Clear errors for malformed (B, L) inputs."""
    if token_ids.dim() != 2:
        raise ValueError(f"token_ids must be (batch, length), got shape {tuple(token_ids.shape)}")
    if mask.shape != token_ids.shape:
        raise ValueError(f"mask shape {tuple(mask.shape)} differs from token_ids shape {tuple(token_ids.shape)}")
    if token_ids.numel() and (int(token_ids.min()) < 0 or int(token_ids.max()) >= vocab_size):
        raise ValueError(f"token ids must lie in [0, {vocab_size}); got min {int(token_ids.min())}, "
                         f"max {int(token_ids.max())}")


def window_mask(mask: torch.Tensor, h: int) -> torch.Tensor:
    """(B, L) token mask -> (B, L - h + 1) mask of windows lying wholly inside the sentence.
    A sentence shorter than h keeps its first window (it sees the sentence plus zeroed pads)."""
    m = mask.float().unsqueeze(1)                                     # (B, 1, L)
    full = F.max_pool1d(1 - m, h, stride=1).squeeze(1) == 0           # (B, L-h+1) all real
    first = mask[:, :1] & ~full.any(dim=1, keepdim=True)              # (B, 1) short sentence: keep window 0
    return torch.cat([full[:, :1] | first, full[:, 1:]], dim=1)


def to_length(x: torch.Tensor, L: int) -> torch.Tensor:
    """Crop or zero-pad the last axis of x to L."""
    return x[..., :L] if x.shape[-1] >= L else F.pad(x, (0, L - x.shape[-1]))


# ---------------------------------------------------------------- ACT's global attention and center loss (ACT, Transformer)

class GlobalAttention(nn.Module):
    """ACT's global attention (eq. 6), also the Transformer's "global" pooling (same module, equal terms).

    forward(o (B, L, d), mask (B, L), g (B, d) or None, probe) -> r (B, d). Records score_context,
    score_global (when g is used), alpha. An edit of any of them is used downstream.
    """

    def __init__(self, d_model: int, d_attn: int = 200, d_pos: int = 60, max_positions: int = 500,
                 position_embed: bool = True, global_rep: bool = True, table: bool = True):
        super().__init__()
        self.d_model = d_model
        self.global_rep = global_rep
        self.position_embed = position_embed
        self.max_positions = max_positions
        self.w_o = nn.Linear(d_model, d_attn)                           # W_o (with the one bias)
        if position_embed and table:                                   # (relative positions come as `pos`)
            self.positions = nn.Embedding(max_positions, d_pos)        # W^p: P x d_p table
        if position_embed:
            self.w_p = nn.Linear(d_pos, d_attn, bias=False)            # W_p
        self.context = nn.Parameter(torch.randn(d_attn) / math.sqrt(d_attn))  # c

    def map_specs(self) -> list[MapSpec]:
        specs = [MapSpec("score_context", ("token",), "attention",
                         "context term c . GELU(W_o o_j" + (" + W_p p_j" if self.position_embed else "")
                         + ") of the global-attention score", values="score")]
        if self.global_rep:
            specs.append(MapSpec("score_global", ("token",), "attention",
                                 "global term o_j . g / sqrt(d) of the global-attention score", values="score"))
            specs.append(MapSpec("global_rep", ("feature",), "activation", "global representation g"))
        specs.append(MapSpec("alpha", ("token",), "attention",
                             "global attention weights: masked softmax of the summed score terms"))
        return specs

    def forward(self, o: torch.Tensor, mask: torch.Tensor, g: torch.Tensor | None, probe: Probe,
                pos: torch.Tensor | None = None) -> torch.Tensor:
        """`pos` (B, L, d_p): per-token position vectors that replace the absolute table's p_j (relation
        classification: the concatenated relative positions to the two entities, models/relation.py)."""
        B, L, d = o.shape
        m = mask.to(o.dtype)                                            # (B, L)
        h = self.w_o(o)                                                 # (B, L, d_a)
        if self.position_embed and pos is not None:
            h = h + self.w_p(pos)                                       # (B, L, d_a)
        elif self.position_embed:
            if L > self.max_positions:
                raise ValueError(f"input length {L} exceeds the {self.max_positions} positions of the global "
                                 "attention's position table (raise max_positions or truncate the input)")
            h = h + self.w_p(self.positions.weight[:L])                 # (B, L, d_a)
        s_ctx = probe("score_context", (F.gelu(h) @ self.context) * m, mask=mask)  # (B, L)
        scores = s_ctx
        if self.global_rep:
            if g is None:
                raise ValueError("global attention with global_rep=True needs g")
            g = probe("global_rep", g, mask=mask)                       # (B, d)
            s_glob = torch.einsum("bld,bd->bl", o, g) / math.sqrt(d) * m  # (B, L)
            scores = scores + probe("score_global", s_glob, mask=mask)
        alpha = probe("alpha", masked_softmax(scores, mask), mask=mask)  # (B, L)
        return torch.einsum("bl,bld->bd", alpha, o)                    # (B, d)


class CenterLoss(nn.Module):
    """Center loss (Wen et al. 2016) with centres as a buffer, updated by their own rule (not the optimizer).

    loss = weight * 1/2 mean_i ||x_i - c_{y_i}||^2; update (training only), after the loss is taken:
    c_j <- c_j - rate * sum_{i: y_i = j} (c_j - x_i) / (1 + n_j).
    """

    def __init__(self, num_classes: int, dim: int, weight: float = 0.001, rate: float = 0.1):
        super().__init__()
        self.weight = weight
        self.rate = rate
        self.register_buffer("centers", torch.zeros(num_classes, dim))

    def forward(self, features: torch.Tensor, labels: torch.Tensor, update: bool) -> torch.Tensor:
        C, D = self.centers.shape
        if features.dim() != 2 or features.shape[1] != D:
            raise ValueError(f"center loss expects features (batch, {D}), got {tuple(features.shape)}")
        labels = labels.long()
        if labels.shape != features.shape[:1]:
            raise ValueError(f"labels shape {tuple(labels.shape)} does not match batch {features.shape[0]}")
        if labels.numel() and (int(labels.min()) < 0 or int(labels.max()) >= C):
            raise ValueError(f"labels must lie in [0, {C})")
        c = self.centers[labels]                                        # (B, D) current centres
        loss = 0.5 * ((features - c) ** 2).sum(dim=1).mean() if labels.numel() else features.sum() * 0
        if update:
            self.update_centers(features.detach(), labels)
        return self.weight * loss

    @torch.no_grad()
    def update_centers(self, features: torch.Tensor, labels: torch.Tensor) -> None:
        C = self.centers.shape[0]
        diff = self.centers[labels] - features.to(self.centers.dtype)  # (B, D) c_{y_i} - x_i
        delta = torch.zeros_like(self.centers).index_add_(0, labels, diff)  # (C, D)
        counts = torch.bincount(labels, minlength=C).to(self.centers.dtype)  # (C,)
        self.centers -= self.rate * delta / (1.0 + counts).unsqueeze(1)


def output_layer(model: nn.Module) -> nn.Linear | None:
    """The last Linear layer that maps to the classes (the one Kim 2014's max-norm constraint applies to, and the
    one TracIn's fast variant reads)."""
    n = getattr(getattr(model, "config", None), "num_labels", None)
    found = None
    for m in model.modules():
        if isinstance(m, nn.Linear) and m.out_features == n:
            found = m
    return found
