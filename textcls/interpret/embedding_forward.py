"""The embedding substitution that lets Captum perturb `model.embed`'s output (every Captum method and metric
shares it)."""
from __future__ import annotations

import threading

import torch

from textcls.interpret.probabilities import check_model


class EmbeddingForward:
    """f(emb, ids, mask) -> probabilities (or logits) of `model`, where `emb` replaces model.embed's output.

    Captum's primal methods (IntegratedGradients, Saliency, Occlusion, Lime, ShapleyValueSampling, infidelity,
    sensitivity_max) then perturb the embedding-layer output directly: identical to Captum's Layer* methods on
    `model.embed`, and the same code path serves all of them. The substitution is a forward hook that lives only
    for the call and acts only in the calling thread, so other users of a cached model are never affected.
    A model that pads its input past L (Kim CNN / AGCNN on inputs shorter than the widest window) keeps its own
    embedding for the extra positions.

    With `foil` (B,) long (a contrastive explanation, textcls.interpret.contrastive) the output is the logits minus
    the foil's logit, whatever `output` says: column t is logit(t) - logit(foil) = log p(t) - log p(foil), so
    Captum's `target` picks the difference of the fact and the foil. Captum repeats the foil with the other
    forward arguments (integration steps, perturbations), so each row keeps its own.
    """

    def __init__(self, model: torch.nn.Module, output: str = "prob", edits: dict | None = None):
        if output not in ("prob", "logit"):
            raise ValueError(f"output must be 'prob' or 'logit', got {output!r}")
        if not hasattr(model, "embed"):
            raise TypeError(f"{type(model).__name__} has no `embed` layer to attribute to")
        check_model(model)
        self.model, self.output, self.edits = model, output, edits
        self._local = threading.local()

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.model.embed(ids).detach()

    def _hook(self, module, inputs, out):
        state = getattr(self._local, "state", None)
        if state is None:
            return None
        emb = state
        if out.shape == emb.shape:
            return emb
        # the model padded its ids (B, L) -> (B, L'): substitute the first L positions
        if out.dim() == emb.dim() and out.shape[0] == emb.shape[0] and out.shape[2:] == emb.shape[2:] \
                and out.shape[1] > emb.shape[1]:
            return torch.cat([emb, out[:, emb.shape[1]:]], dim=1)
        raise RuntimeError(f"model.embed produced {tuple(out.shape)} but the substituted embedding is "
                           f"{tuple(emb.shape)}; this model calls its embedding in a way attribution cannot follow")

    def logits(self, emb: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The model's logits (B, C) with `emb` in place of model.embed's output."""
        handle = self.model.embed.register_forward_hook(self._hook)
        self._local.state = emb
        try:
            return self.model(ids, mask, edits=self.edits).logits
        finally:
            self._local.state = None
            handle.remove()

    def from_logits(self, logits: torch.Tensor, foil: torch.Tensor | None = None) -> torch.Tensor:
        """What f returns for these logits (B, C): logit(t) - logit(foil) with a foil, else probabilities or
        logits as `output` says."""
        if foil is not None:
            return logits - logits.gather(1, foil[:, None])                    # (B, C) logit(t) - logit(foil)
        return torch.softmax(logits, dim=-1) if self.output == "prob" else logits

    def __call__(self, emb: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor,
                 foil: torch.Tensor | None = None) -> torch.Tensor:
        return self.from_logits(self.logits(emb, ids, mask), foil)


__all__ = ["EmbeddingForward"]
