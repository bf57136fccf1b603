"""The side-by-side view of raw attention, rollout and the context-mixing methods for one text
(textcls.interpret.context_mixing.compare): a methods x words heatmap on one word scale (each row's weights sum
to 1 in absolute value), each row labelled with its faithfulness line on this text."""
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
    zmax = float(np.abs(z).max()) if z.size else 1.0
    fig = go.Figure(go.Heatmap(z=z, x=cols, y=rows, zmin=-zmax, zmax=zmax, colorscale="RdBu", zmid=0,
                               text=np.round(z, 2), texttemplate="%{text}", hovertemplate="%{y}<br>%{x}: %{z:.3f}"
                               "<extra></extra>", colorbar={"title": "weight"}))
    fig.update_yaxes(autorange="reversed")
    style_figure(fig, esc(title + (f" (predicted: {s.label})" if s.label else "")), 90 + 38 * max(len(rows), 1))
    table = pd.DataFrame([{"method": m, "word_index": i, "word": w, "value": float(s.weights[m][i])}
                          for m in methods for i, w in enumerate(s.words)])
    caption = " ".join(s.line(m) + "." for m in list(s.weights) + list(s.skipped))
    return FigureOut("context-mixing", title, fig, table, caption=caption,
                     meta={"faithfulness": s.faithfulness, "skipped": s.skipped})


__all__ = ["side_by_side_figure"]
