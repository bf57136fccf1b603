"""The side-by-side view of raw attention, rollout and the context-mixing methods for one text
(textcls.interpret.context_mixing.compare): a methods x words heatmap on one word scale (each row's weights sum
to 1 in absolute value; a sequential scale unless a weight is negative), each row labelled with its AOPC
comprehensiveness on this text. The faithfulness lines are the callers' to print, once."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from textcls.viz.style import FigureOut, esc, short, style_figure


def side_by_side_figure(s, title: str = "What the pooled position takes from each word") -> FigureOut:
    """FigureOut of a `SideBySide`: rows = methods (with AOPC comprehensiveness), columns = words."""
    from textcls.interpret.context_mixing.compare import VIEW_LABELS
    methods = list(s.weights)
    z = np.stack([s.weights[m] for m in methods]) if methods else np.zeros((0, len(s.words)))
    rows = [f"{VIEW_LABELS.get(m, m)} (comp. {s.faithfulness[m]['aopc_comprehensiveness']:.2f})" for m in methods]
    cols = [f"{i}:{short(w, 14)}" for i, w in enumerate(s.words)]
    zmax = float(max(np.abs(z).max(), 1e-12)) if z.size else 1.0
    # a diverging scale only when some weight is negative; all >= 0 (attention, rollout, norm, ALTI): white to blue,
    # never a red half no value uses
    scale = (dict(zmin=-zmax, zmax=zmax, colorscale="RdBu", zmid=0) if z.size and z.min() < 0
             else dict(zmin=0, zmax=zmax, colorscale="Blues"))
    fig = go.Figure(go.Heatmap(z=z, x=cols, y=rows, **scale,
                               text=np.round(z, 2), texttemplate="%{text}", hovertemplate="%{y}<br>%{x}: %{z:.3f}"
                               "<extra></extra>", colorbar={"title": "weight"}))
    fig.update_yaxes(autorange="reversed")
    style_figure(fig, esc(title + (f" (predicted: {s.label})" if s.label else "")), 90 + 38 * max(len(rows), 1))
    table = pd.DataFrame([{"method": m, "word_index": i, "word": w, "value": float(s.weights[m][i])}
                          for m in methods for i, w in enumerate(s.words)])
    # the faithfulness lines (s.line) are the caller's to print, once; the caption says how to read the figure
    caption = ("Each row's weights sum to 1 in absolute value, on one scale; the number after each method is its "
               "AOPC comprehensiveness on this text (higher: removing its top words hurts the prediction more).")
    return FigureOut("context-mixing", title, fig, table, caption=caption,
                     meta={"faithfulness": s.faithfulness, "skipped": s.skipped})


__all__ = ["side_by_side_figure"]
