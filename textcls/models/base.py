"""What every model shares: the base config, the masking rules, the embedding layer, and the Probe.

Masking rules (models.md), used by every model through the helpers below:
- masked softmax: pads get no weight; an all-pad row gives zeros, never NaN;
- masked max: pads never win; an all-pad row gives 0;
- re-zero pads (`x * mask`) before every convolution, so pad positions never leak into a window.

The Probe is how a model exposes its internals. A model writes `t = probe("name", t, layer=i)` at each
interpretable tensor and goes on with the returned value. With `return_maps=True` the probe records it
(per-layer tensors are stacked on axis 1, after the batch axis); with `edits={"name": fn}` it replaces it by
`fn(t, layer=i, mask=key_mask)` first - that is how interventions (uniform attention, a zeroed filter, a gate
forced to 1) reach any model without the model knowing about them. Nothing is stored on the module, so one
cached model serves many callers at once.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..outputs import ClassifierOutput, MapSpec

EMBEDDING_MODES = ("rand", "static", "non-static", "multichannel")
PAD_ID = 0
UNK_ID = 1


@dataclass
class BaseConfig:
    """Fields every model config has. Subclasses add their own with the paper's values as defaults."""

    vocab_size: int = 20000
    num_labels: int = 2
    embed_dim: int = 300
    # rand: random, trained; static: pretrained, frozen; non-static: pretrained, fine-tuned;
    # multichannel: `channels` copies, the first fine-tuned, the others frozen (the first conv spans them).
    embedding_mode: str = "non-static"
    channels: int = 2
    pad_id: int = PAD_ID


Edit = Callable[..., torch.Tensor]


class Probe:
    """Per-call recorder and editor of a model's interpretable tensors (see module docstring)."""

    def __init__(self, record: bool = False, edits: dict[str, Edit] | None = None):
        self.record = record
        self.edits = dict(edits or {})
        self._flat: dict[str, torch.Tensor] = {}
        self._layered: dict[str, list[torch.Tensor]] = {}

    def __call__(self, name: str, t: torch.Tensor, *, layer: int | None = None,
                 mask: torch.Tensor | None = None) -> torch.Tensor:
        fn = self.edits.get(name)
        if fn is not None:
            t = fn(t, layer=layer, mask=mask)
        if self.record:
            if layer is None:
                self._flat[name] = t
            else:
                self._layered.setdefault(name, []).append(t)
        return t

    @property
    def active(self) -> bool:
        return self.record or bool(self.edits)

    def maps(self) -> dict[str, torch.Tensor]:
        out = dict(self._flat)
        for name, ts in self._layered.items():
            out[name] = torch.stack(ts, dim=1)  # (B, layer, ...)
        return out


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


# Activations the papers compare (AGCNN Table 5). `make_activation(name)` returns a callable.
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


# ---------------------------------------------------------------- the model base class

class TextClassifier(nn.Module):
    """Base of every model. Subclasses implement `map_specs()` and `_forward(token_ids, mask, probe)`.

    Subclasses keep their embedding layer in `self.embed` (a WordEmbedding) so attribution methods find it.
    """

    registry_name: str = ""

    def __init__(self, config: BaseConfig):
        super().__init__()
        self.config = config

    def map_specs(self) -> list[MapSpec]:
        raise NotImplementedError

    def _forward(self, token_ids: torch.Tensor, mask: torch.Tensor, probe: Probe
                 ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Return (logits (B, C), penultimate features (B, F) or None)."""
        raise NotImplementedError

    def forward(self, token_ids: torch.Tensor, mask: torch.Tensor | None = None, return_maps: bool = False,
                edits: dict[str, Edit] | None = None) -> ClassifierOutput:
        if mask is None:
            mask = token_ids != self.config.pad_id
        mask = mask.bool()
        probe = Probe(record=return_maps, edits=edits)
        logits, features = self._forward(token_ids, mask, probe)
        return ClassifierOutput(logits=logits, maps=probe.maps() if return_maps else {}, features=features)

    def extra_loss(self, out: ClassifierOutput, labels: torch.Tensor) -> torch.Tensor | None:
        """A model-specific training loss added to cross-entropy (ACT's center loss); None for most models.
        Called by `fit` in training mode only; it may update the model's own buffers (center-loss centres)."""
        return None

    def num_parameters(self, include_embeddings: bool = False) -> int:
        emb = {id(p) for p in self.embed.parameters()} if hasattr(self, "embed") else set()
        return sum(p.numel() for p in self.parameters() if include_embeddings or id(p) not in emb)
