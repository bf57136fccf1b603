"""The registry of paper views: a view declares the models and maps it needs and the controls it takes, and
builds `FigureOut`s from a `ViewInput`. The views themselves register in `paper_views`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from textcls.viz.style import FigureOut

if TYPE_CHECKING:  # outputs imports torch; this module needs MapSpec only for annotations
    from textcls.models.outputs import MapSpec


# ---------------------------------------------------------------- the views registry

@dataclass
class Control:
    """A choice a view offers (the page draws a widget): `options` are ints, `labels` what the user reads."""

    name: str
    label: str
    options: list[int]
    labels: list[str]
    default: int = 0


@dataclass
class ViewInput:
    model: str                                  # registry name ("act", "kim_cnn", ...)
    specs: dict[str, MapSpec]
    maps: dict[str, np.ndarray]
    tokens: list[str]
    sentences: list[list[str]] | None = None
    title: str = ""                             # checkpoint name, shown in figure titles
    label: str = ""                             # predicted label
    opts: dict[str, Any] = field(default_factory=dict)   # control values + "window": (start, size)
    config: dict[str, Any] = field(default_factory=dict)  # the model's config (checkpoint "model_config")

    @property
    def window(self) -> tuple[int, int] | None:
        return self.opts.get("window")


@dataclass
class View:
    id: str
    title: str
    description: str
    models: tuple[str, ...]
    needs: Callable[[dict[str, MapSpec]], bool]
    build: Callable[[ViewInput], list[FigureOut]]
    controls: Callable[[ViewInput], list[Control]] = lambda vi: []
    per_model: dict[str, tuple[str, str]] = field(default_factory=dict)   # model -> (title, description)

    def title_for(self, model: str) -> str:
        """The title this model's users read (a shared view named after the paper figure another model has)."""
        return self.per_model.get(model, (self.title, self.description))[0]

    def description_for(self, model: str) -> str:
        return self.per_model.get(model, (self.title, self.description))[1]


VIEWS: dict[str, View] = {}
MODEL_VIEWS: dict[str, list[str]] = {}


def register_view(view_id: str, title: str, description: str, models: Sequence[str],
                  needs: Callable[[dict[str, MapSpec]], bool],
                  controls: Callable[[ViewInput], list[Control]] | None = None,
                  per_model: dict[str, tuple[str, str]] | None = None):
    """Decorator: `build(ViewInput) -> list[FigureOut]` becomes a view offered for `models` when `needs`;
    `per_model` gives a model its own (title, description) of the view."""
    def deco(build):
        if view_id in VIEWS:
            raise ValueError(f"view {view_id!r} registered twice")
        VIEWS[view_id] = View(view_id, title, description, tuple(models), needs, build,
                              controls or (lambda vi: []), dict(per_model or {}))
        for m in models:
            MODEL_VIEWS.setdefault(m, []).append(view_id)
        return build
    return deco


def views_for(model: str, specs: dict[str, MapSpec] | Sequence[MapSpec]) -> list[View]:
    """The paper views available for a model whose maps are `specs` - first those registered for it first (the
    Transformer's own self-attention before ACT's Table 4, which it shares) - then "generic" (always; it
    registers in `paper_views`, which the package imports)."""
    if not isinstance(specs, dict):
        specs = {s.name: s for s in specs}
    model = "hf" if model.startswith("hf:") else model          # Hugging Face checkpoints list as hf:ARCHITECTURE
    out = [VIEWS[v] for v in MODEL_VIEWS.get(model, []) if VIEWS[v].needs(specs)]
    out.sort(key=lambda v: v.models[0] != model)      # the model's own paper views first (stable), then shared ones
    return out + [VIEWS["generic"]]


def build_view(view_id: str, vi: ViewInput) -> list[FigureOut]:
    """The view's figures; [] when the text has no tokens (nothing to draw)."""
    if not vi.tokens:
        return []
    return VIEWS[view_id].build(vi)


def view_controls(view_id: str, vi: ViewInput) -> list[Control]:
    return VIEWS[view_id].controls(vi)
