"""Live interventions on any model, and a hand-made edit of the input compared before and after (`compare_edit`;
generated counterfactuals over many texts are textcls.analysis.counterfactuals).

An intervention changes a model's computation for one call, never the model itself (cached models are shared):
most act through the Probe's `edits` (a function replacing an exposed map on the way), one through a deep copy.

  UniformAttention(maps=None)        every attention row uniform over its real keys (row mass kept)
  PermuteAttention(maps=None, seed)  every attention row permuted among its real keys
  AblateHead(head, layer=None, maps=None)  the head's attention weights set to 0 in every attention map with a
                                     head axis (optionally one layer): the head contributes nothing; ACT (no
                                     attention heads) has its head's feature map M_i set to 0 instead
  ZeroFilter(map, filter, head=None) one filter's feature map set to 0 (Kim CNN conv_h*, AGCNN conv_h* - then its
                                     gates see 0 too -, ACT feature_map)
  ForceGate(value, maps=None)        AGCNN gates D forced to `value` (1: no gating, 0: everything suppressed) on
                                     the valid windows
  SwapActivation(to, field)          a deep copy whose config.<field> (default "activation") is `to` - AGCNN's
                                     NLReLU -> ReLU; the copy reads its activation from the config at forward time
  Compose(a, b, ...)                 several at once
`intervene(model, instance, intervention)` returns probabilities and maps before and after.
`compare_edit(sources, text, edited_text)` compares prediction, own-attention importance and maps before/after
for several models at once; `edit_tokens` builds the edited text (replace or delete one word).
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import torch

from textcls.runtime.threads import interactive_work
from textcls.interpret.attention_edits import key_mask, permute_rows, uniform_like
from textcls.interpret.instances import Instance
from textcls.interpret.probabilities import check_model, tvd
from textcls.interpret.sources import as_source
from textcls.interpret.records import (ACTIVATION, FILTER, GATES_OFF, GATES_ON, HEAD, PERMUTED,  # noqa: F401
                                      UNIFORM, EditComparison, edit_tokens)


def _specs(model) -> dict:
    return {s.name: s for s in model.map_specs()}


def _edit_axes(spec) -> tuple[str, ...]:
    """Axes of the tensor an edit receives: the spec's axes without "layer" (edits see one layer at a time)."""
    return tuple(a for a in spec.axes if a != "layer")


class Intervention:
    """Base class: `edits(model)` -> {map name: fn(t, layer=, mask=)}; `prepare(model)` -> the model to run."""

    name = "intervention"

    def edits(self, model) -> dict:
        return {}

    def prepare(self, model):
        return model

    def describe(self) -> str:
        return self.name


def _attention_names(model, maps) -> list[str]:
    from textcls.interpret.faithfulness import attention_maps
    names = attention_maps(model, maps)
    if not names:
        raise ValueError(f"{type(model).__name__} has no attention map to edit")
    return names


@dataclass
class UniformAttention(Intervention):
    maps: Sequence[str] | None = None
    name = "uniform attention"

    def edits(self, model) -> dict:
        return {n: (lambda t, layer=None, mask=None: uniform_like(t, mask)) for n in _attention_names(model, self.maps)}

    def describe(self) -> str:
        return "attention made uniform over the real tokens" + (f" in {list(self.maps)}" if self.maps else "")


@dataclass
class PermuteAttention(Intervention):
    maps: Sequence[str] | None = None
    seed: int = 0
    name = "permuted attention"

    def edits(self, model) -> dict:
        gen = torch.Generator().manual_seed(self.seed)
        return {n: (lambda t, layer=None, mask=None: permute_rows(t, mask, gen))
                for n in _attention_names(model, self.maps)}

    def describe(self) -> str:
        return f"attention weights randomly permuted among the real tokens (seed {self.seed})"


@dataclass
class AblateHead(Intervention):
    head: int = 0
    layer: int | None = None
    maps: Sequence[str] | None = None
    name = "ablate head"

    def edits(self, model) -> dict:
        specs = _specs(model)
        if self.maps is not None:
            names = list(self.maps)
        else:
            names = [s.name for s in specs.values() if s.kind == "attention" and "head" in s.axes
                     and s.values in ("real", "partial")]
            if not names:  # ACT: heads are convolutional; the head's feature map M_i is zeroed (O_i = g_i = 0)
                names = [s.name for s in specs.values() if "head" in s.axes and s.values == "real"
                         and s.kind in ("feature_map", "activation") and "filter" in s.axes]
        out = {}
        for n in names:
            if n not in specs or "head" not in specs[n].axes:
                raise ValueError(f"{type(model).__name__}: map {n!r} has no head axis")
            axes = _edit_axes(specs[n])
            axis = axes.index("head") + 1
            layered = "layer" in specs[n].axes

            def fn(t, layer=None, mask=None, axis=axis, layered=layered):
                if t.shape[axis] <= self.head:
                    raise ValueError(f"head {self.head} out of range: the map has {t.shape[axis]} heads")
                if layered and self.layer is not None and layer != self.layer:
                    return t
                keep = torch.ones(t.shape[axis], dtype=t.dtype)
                keep[self.head] = 0
                view = [1] * t.dim()
                view[axis] = -1
                return t * keep.view(view)
            out[n] = fn
        if not out:
            raise ValueError(f"{type(model).__name__} has no attention map with a head axis")
        return out

    def describe(self) -> str:
        # numbered from 1, as the Inspect page numbers heads, layers and filters (the fields are 0-based indices)
        return f"head {self.head + 1}" + (f" of layer {self.layer + 1}" if self.layer is not None
                                          else " (every layer)") + " ablated (its attention weights set to 0)"


@dataclass
class ZeroFilter(Intervention):
    map: str = ""
    filter: int = 0
    head: int | None = None
    name = "zero filter"

    def edits(self, model) -> dict:
        specs = _specs(model)
        if self.map not in specs:
            cands = [s.name for s in specs.values() if "filter" in s.axes and s.values == "real"]
            raise ValueError(f"{type(model).__name__} has no map {self.map!r}; maps with filters: {cands}")
        spec = specs[self.map]
        if "filter" not in spec.axes or spec.values != "real":
            raise ValueError(f"map {self.map!r} is not a real-valued map with a filter axis")
        axes = _edit_axes(spec)
        f_axis = axes.index("filter") + 1
        h_axis = axes.index("head") + 1 if (self.head is not None and "head" in axes) else None

        def fn(t, layer=None, mask=None):
            if t.shape[f_axis] <= self.filter:
                raise ValueError(f"filter {self.filter} out of range: {self.map} has {t.shape[f_axis]} filters")
            sel = torch.zeros(t.shape[f_axis], dtype=torch.bool)
            sel[self.filter] = True
            view = [1] * t.dim()
            view[f_axis] = -1
            m = sel.view(view)
            if h_axis is not None:
                hs = torch.zeros(t.shape[h_axis], dtype=torch.bool)
                hs[self.head] = True
                hv = [1] * t.dim()
                hv[h_axis] = -1
                m = m & hs.view(hv)
            return t.masked_fill(m, 0.0)
        return {self.map: fn}

    def describe(self) -> str:
        return f"filter {self.filter + 1} of {self.map} set to 0" + (f" (head {self.head + 1})" if self.head is not None
                                                                     else "")


@dataclass
class ForceGate(Intervention):
    value: float = 1.0
    maps: Sequence[str] | None = None
    name = "force gate"

    def edits(self, model) -> dict:
        specs = _specs(model)
        names = [s.name for s in specs.values() if s.kind == "gate"] if self.maps is None else list(self.maps)
        if not names:
            raise ValueError(f"{type(model).__name__} has no gate map (only AGCNN has gates)")
        bad = [n for n in names if n not in specs or specs[n].kind != "gate"]
        if bad:
            raise ValueError(f"not gate maps: {bad}")
        v = float(self.value)
        return {n: (lambda t, layer=None, mask=None: key_mask(t, mask).expand_as(t).to(t.dtype) * v)
                for n in names}

    def describe(self) -> str:
        return f"every gate forced to {self.value:g}" + (" (gating off)" if self.value == 1 else "")


@dataclass
class SwapActivation(Intervention):
    to: str = "relu"
    field: str = "activation"
    name = "swap activation"

    def prepare(self, model):
        cfg = model.config
        if not hasattr(cfg, self.field):
            raise ValueError(f"{type(model).__name__}'s config has no field {self.field!r}")
        new = copy.deepcopy(model)
        new.config = dataclasses.replace(cfg, **{self.field: self.to})
        return new.eval()

    def describe(self) -> str:
        return f"{self.field} swapped to {self.to} (on a copy of the model)"


class Compose(Intervention):
    name = "compose"

    def __init__(self, *parts: Intervention):
        self.parts = list(parts)

    def edits(self, model) -> dict:
        out: dict = {}
        for p in self.parts:
            for n, fn in p.edits(model).items():
                if n in out:
                    prev = out[n]
                    out[n] = (lambda t, layer=None, mask=None, a=prev, b=fn: b(a(t, layer=layer, mask=mask),
                                                                               layer=layer, mask=mask))
                else:
                    out[n] = fn
        return out

    def prepare(self, model):
        for p in self.parts:
            model = p.prepare(model)
        return model

    def describe(self) -> str:
        return " + ".join(p.describe() for p in self.parts)


# ---------------------------------------------------------------- running

@dataclass
class InterventionResult:
    description: str
    probs_before: np.ndarray
    probs_after: np.ndarray
    label_before: int
    label_after: int
    tvd: float
    maps_before: dict[str, np.ndarray] = field(default_factory=dict)
    maps_after: dict[str, np.ndarray] = field(default_factory=dict)
    labels: list[str] | None = None

    @property
    def flipped(self) -> bool:
        return self.label_before != self.label_after

    def shift(self, cls: int) -> float:
        """Change of the probability of class `cls` (after - before)."""
        return float(self.probs_after[cls] - self.probs_before[cls])


def _run(model, inst: Instance, edits=None, maps: bool = True):
    ids, mask = inst.batch()
    with torch.no_grad():
        out = model(ids, mask, return_maps=maps, edits=edits or None)
    p = torch.softmax(out.logits.float(), -1)[0].double().numpy()
    return p, {k: v[0].detach().float().numpy() for k, v in out.maps.items()}


@interactive_work
def intervene(model, inst: Instance | torch.Tensor, intervention: Intervention, mask: torch.Tensor | None = None,
              return_maps: bool = True, labels: Sequence[str] | None = None) -> InterventionResult:
    """Run one example with and without the intervention."""
    check_model(model)
    if not isinstance(inst, Instance):
        ids = torch.as_tensor(inst, dtype=torch.long)
        inst = Instance(ids, ids != model.config.pad_id if mask is None else mask)
    p0, m0 = _run(model, inst, None, return_maps)
    run_model = intervention.prepare(model)
    p1, m1 = _run(run_model, inst, intervention.edits(run_model), return_maps)
    return InterventionResult(intervention.describe(), p0, p1, int(p0.argmax()), int(p1.argmax()),
                              float(tvd(p0, p1)), m0, m1, list(labels) if labels is not None else None)


def intervene_texts(source, texts: Sequence[str], intervention: Intervention, *, tokenizer=None,
                    return_maps: bool = False) -> list[InterventionResult]:
    src = as_source(source, tokenizer)
    return [intervene(src.model, i, intervention, return_maps=return_maps, labels=src.labels)
            for i in src.instances(texts)]


# ---------------------------------------------------------------- counterfactuals

@interactive_work
def compare_edit(sources, text: str, edited_text: str, *, with_importance: bool = True,
                   return_maps: bool = False) -> list[EditComparison]:
    """Prediction (and own-attention importance, maps) before and after an edit, for each model.

    `sources`: a mapping name -> Predictor (or (model, tokenizer)), or a sequence of Predictors, or one."""
    from textcls.interpret.attention import attention_importance_instances

    if isinstance(sources, Mapping):
        items = list(sources.items())
    elif isinstance(sources, (list, tuple)) and not (len(sources) == 2 and hasattr(sources[1], "encode")
                                                     and not hasattr(sources[1], "model")):
        items = [(getattr(s, "name", "") or f"model {i}", s) for i, s in enumerate(sources)]
    else:
        items = [(getattr(sources, "name", "") or "model", sources)]
    out = []
    for name, s in items:
        src = as_source(s)
        check_model(src.model)
        before, after = src.instances([text, edited_text])
        p0, m0 = _run(src.model, before, None, return_maps)
        p1, m1 = _run(src.model, after, None, return_maps)
        ib = ia = None
        if with_importance:
            try:
                ib, ia = (a.scores for a in attention_importance_instances(src.model, [before, after]))
            except ValueError:
                pass
        out.append(EditComparison(str(name), text, edited_text, before.tokens, after.tokens, p0, p1,
                                        src.labels, ib, ia, m0, m1))
    return out


__all__ = ["Intervention", "UniformAttention", "PermuteAttention", "AblateHead", "ZeroFilter", "ForceGate",
           "SwapActivation", "Compose", "InterventionResult", "intervene", "intervene_texts", "edit_tokens",
           "EditComparison", "compare_edit"]


# ---------------------------------------------------------------- what a model offers (the interventions UI)

def menu(model) -> list[str]:
    """The interventions `model` offers, in the UI's order, read from its map specs and its declared
    `interventions()` (never from config field names)."""
    from textcls.interpret.faithfulness import attention_maps
    spec = model.interventions()
    out = [UNIFORM, PERMUTED] if attention_maps(model) else []
    if spec.heads:
        out.append(HEAD)
    if spec.filters:
        out.append(FILTER)
    if any(s.kind == "gate" for s in model.map_specs()):
        out += [GATES_ON, GATES_OFF]
    if spec.activation_field and len(spec.activations) > 1:
        out.append(ACTIVATION)
    return out


def build(model, kind: str, *, seed: int = 0, head: int = 0, layer: int | None = None, fmap: str | None = None,
          filter: int = 0, activation: str | None = None) -> Intervention:
    """The intervention `kind` (one of `menu(model)`) with the UI's choices; indices are 0-based. Bad choices
    (a head, filter or activation the model does not have) raise ValueError with a message for the user."""
    spec = model.interventions()
    if kind not in menu(model):
        raise ValueError(f"{type(model).__name__} offers no {kind!r}; it offers: {', '.join(menu(model)) or 'none'}")
    if kind == UNIFORM:
        return UniformAttention()
    if kind == PERMUTED:
        return PermuteAttention(seed=int(seed))
    if kind == HEAD:
        if not 0 <= head < spec.heads or (layer is not None and not 0 <= layer < max(spec.layers, 1)):
            raise ValueError(f"head {head + 1} / layer {layer} out of range: {spec.heads} heads, "
                             f"{spec.layers or 1} layer(s)")
        return AblateHead(int(head), None if layer is None else int(layer))
    if kind == FILTER:
        fmap = fmap if fmap is not None else next(iter(spec.filters))
        if fmap not in spec.filters or not 0 <= filter < spec.filters[fmap]:
            raise ValueError(f"filter {filter + 1} of {fmap!r} out of range")
        return ZeroFilter(fmap, int(filter))
    if kind in (GATES_ON, GATES_OFF):
        return ForceGate(1.0 if kind == GATES_ON else 0.0)
    current = getattr(model.config, spec.activation_field)
    to = activation or next(a for a in spec.activations if a != current)
    if to not in spec.activations:
        raise ValueError(f"unknown activation {to!r}; known: {', '.join(spec.activations)}")
    return SwapActivation(to, field=spec.activation_field)
