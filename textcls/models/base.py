"""What every model is: the TextClassifier base class and the Probe (the base config, `BaseConfig` and `param`, is
textcls.models.configs.base, without torch, re-exported here). Shared blocks (masking, activations, embeddings,
attention pieces) are in `layers`.

The Probe is how a model exposes its internals. A model writes `t = probe("name", t, layer=i)` at each
interpretable tensor and goes on with the returned value. With `return_maps=True` the probe records it
(per-layer tensors are stacked on axis 1, after the batch axis); with `edits={"name": fn}` it replaces it by
`fn(t, layer=i, mask=key_mask)` first - that is how interventions (uniform attention, a zeroed filter, a gate
forced to 1) reach any model without the model knowing about them. Nothing is stored on the module, so one
cached model serves many callers at once.
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn as nn

from textcls.models.outputs import ClassifierOutput, InterventionSpec, MapSpec
from textcls.models.configs.base import EMBEDDING_MODES, BaseConfig, param  # noqa: F401  (re-exported)

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


# ---------------------------------------------------------------- the model base class

class TextClassifier(nn.Module):
    """Base of every model. Subclasses implement `map_specs()` and `_forward(token_ids, mask, probe)`.

    Subclasses keep their embedding layer in `self.embed` (a WordEmbedding) so attribution methods find it.
    """

    registry_name: str = ""
    # A capability the family declares: the name of the reader of textcls.interpret.context_mixing that reads its
    # self-attention blocks ("transformer", "hf", "act", or one a plugin registers with register_family); None:
    # no self-attention between tokens, so the context-mixing methods do not apply.
    context_mixing: str | None = None

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

    def interventions(self) -> InterventionSpec:
        """What an intervention may change (heads, filters, the activation); families with any override this."""
        return InterventionSpec()

    def filter_maps(self, n_filters: int) -> dict[str, int]:
        """Every real-valued map with a filter axis, each with `n_filters` filters (for `interventions`)."""
        return {s.name: int(n_filters) for s in self.map_specs() if "filter" in s.axes and s.values == "real"}

    def extra_loss(self, out: ClassifierOutput, labels: torch.Tensor) -> torch.Tensor | None:
        """A model-specific training loss added to cross-entropy (ACT's center loss); None for most models.
        Called by `fit` in training mode only; it may update the model's own buffers (center-loss centres)."""
        return None

    def num_parameters(self, include_embeddings: bool = False) -> int:
        emb = {id(p) for p in self.embed.parameters()} if hasattr(self, "embed") else set()
        return sum(p.numel() for p in self.parameters() if include_embeddings or id(p) not in emb)
