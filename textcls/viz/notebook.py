"""The notebook door: a checkpoint and a text in, the figures the app draws out, with no Streamlit.

    import textcls
    from textcls import viz
    p = textcls.load_checkpoint("checkpoints/act-sst2")
    figs = viz.paper_figures(p, "the acting is superb , but the plot is not very good .")
    figs[0].fig.show()                       # a Plotly figure; figs[0].table has its numbers (pandas)
    viz.explanation_figure(p, "not a good film", ["attention", "integrated_gradients"]).fig.show()

`paper_figures` builds a paper view (the first registered for the model, or `view=`) exactly as Inspect does
(`views.build_view` over the predictor's maps); `explanation_figure` draws several explanations of one prediction
on one word grid, as Attribute does (`interpret.methods.explanation`).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from textcls.viz.style import FigureOut
from textcls.viz.views import ViewInput, build_view, view_controls, views_for


def model_name(predictor: Any) -> str:
    """The registry name of a predictor's model ("act", "hf:BertForSequenceClassification", ...)."""
    info = getattr(predictor, "info", {}) or {}
    return str(info.get("model") or getattr(predictor.model, "registry_name", type(predictor.model).__name__))


def view_input(predictor: Any, text: str, **opts: Any) -> ViewInput:
    """What a view draws from: the predictor's prediction on `text` with its maps, its map specs and config."""
    (p,) = predictor.predict([text], return_maps=True)
    specs = {s.name: s for s in predictor.model.map_specs()}
    config = dict(getattr(predictor, "info", {}).get("model_config") or {})
    return ViewInput(model_name(predictor), specs, p.maps, list(p.tokens), p.sentences,
                     title=str(getattr(predictor, "name", "") or model_name(predictor)), label=p.label,
                     opts=dict(opts), config=config)


def paper_figures(predictor: Any, text: str, view: str | None = None, **opts: Any) -> list[FigureOut]:
    """The figures of a paper view of `predictor` on `text` (`view`: an id of `views_for`, default the model's
    first, its paper's figure); `opts` set the view's controls (layer=, head=, ...), defaults otherwise."""
    vi = view_input(predictor, text, **opts)
    ids = [v.id for v in views_for(vi.model, vi.specs)]
    if view is None:
        view = ids[0]
    if view not in ids:
        raise ValueError(f"view {view!r} does not apply to {vi.model}; its views: {ids}")
    vi.opts = {**{c.name: c.default for c in view_controls(view, vi)}, **opts}
    return build_view(view, vi)


def explanation_figure(predictor: Any, text: str, methods: Sequence[str] = ("attention", "integrated_gradients"),
                       title: str | None = None) -> FigureOut:
    """Several explanations of `predictor`'s prediction on `text` on one word grid (the Attribute page's
    figure): one row per method, each word shaded by its weight (signed methods red for the predicted label,
    blue against it)."""
    from textcls.interpret import as_source
    from textcls.interpret.methods import explanation
    from textcls.interpret.methods import labels as method_labels
    from textcls.viz.explanations import reasons_grid

    src = as_source(predictor)
    (inst,) = src.instances([text])
    rows = []
    for m in methods:
        e = explanation(src.model, inst, m, labels=src.labels)
        rows.append((method_labels().get(m, m), np.asarray(getattr(e, "scores", e), dtype=float)))
    return reasons_grid(rows, list(inst.tokens), title=title or f"{getattr(predictor, 'name', '')}: "
                        "explanations of one prediction")


__all__ = ["model_name", "view_input", "paper_figures", "explanation_figure"]
