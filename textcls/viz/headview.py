"""A head view as bertviz draws one (Vig 2019): the tokens in two columns, a line from each query token on the left
to each key token on the right, its opacity the attention weight, one colour per head.

Plotly, so it works offline and exports like every figure. Click a head in the legend to hide it (double-click:
that head alone); `query` draws the lines of one query token only (the page's token picker stands in for
bertviz's hover). Weights under `floor` are not drawn, and the rest is binned into OPACITY_LEVELS opacities (one
trace per head and level, not one per line: a 60-token text with 4 heads stays a few dozen traces). Long texts
use the token window every token axis uses.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from textcls.viz.axes import MAX_GRID_TOKENS, axis_labels, token_window
from textcls.viz.style import FONT, FigureOut, esc, short

HEAD_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
               "#bcbd22", "#17becf", "#393b79", "#637939")
OPACITY_LEVELS = (0.15, 0.35, 0.6, 0.9)
LEGEND_PER_ROW = 6        # head entries on one legend row of the 620 px figure (style.LEGEND_ENTRY_PX each)


def head_view(att: Any, tokens: Sequence[str] | None = None, *, query: int | None = None,
              window: tuple[int, int] | None = None, max_tokens: int = MAX_GRID_TOKENS, floor: float = 0.02,
              title: str = "Head view", key: str = "head-view", caption: str = "") -> FigureOut:
    """att: (head, query, key) weights of one layer (rows sum to one). Returns a FigureOut whose table lists
    every drawn line (head, query, key, weight)."""
    a = np.asarray(att, dtype=float)
    if a.ndim != 3:
        raise ValueError(f"head_view needs (head, query, key), got shape {a.shape}")
    nh, nq, nk = a.shape
    n = min(nq, nk, len(tokens) if tokens is not None else nq)
    lo, hi = token_window(n, window, max_tokens)
    labels = [short(x, 16) for x in axis_labels("token", hi, tokens)[lo:hi]]
    m = hi - lo
    qs = range(lo, hi) if query is None or not lo <= query < hi else [query]
    top = float(a[:, lo:hi, lo:hi].max()) if m else 1.0
    fig = go.Figure()
    recs = []
    for h in range(nh):
        colour = HEAD_COLORS[h % len(HEAD_COLORS)]
        bins: list[list[float | None]] = [[] for _ in OPACITY_LEVELS]
        ys: list[list[float | None]] = [[] for _ in OPACITY_LEVELS]
        for i in qs:
            for j in range(lo, hi):
                wgt = a[h, i, j]
                if not np.isfinite(wgt) or wgt < floor:
                    continue
                level = min(len(OPACITY_LEVELS) - 1, int(len(OPACITY_LEVELS) * wgt / max(top, 1e-12)))
                bins[level] += [0.0, 1.0, None]
                ys[level] += [i - lo, j - lo, None]
                recs.append({"head": h + 1, "query_index": i, "query": labels[i - lo], "key_index": j,
                             "key": labels[j - lo], "weight": float(wgt)})
        for level, op in enumerate(OPACITY_LEVELS):
            if not bins[level]:
                continue
            fig.add_trace(go.Scatter(x=bins[level], y=ys[level], mode="lines", opacity=op,
                                     line=dict(color=colour, width=1 + 2.5 * level / len(OPACITY_LEVELS)),
                                     name=f"head {h + 1}", legendgroup=f"h{h}", showlegend=level == max(
                                         k for k, b in enumerate(bins) if b), hoverinfo="skip"))
    # the two token columns, with hover on each token
    for x, side, anchor in ((-0.02, "query", "left"), (1.02, "key", "right")):   # text left / right of the point
        fig.add_trace(go.Scatter(x=[x] * m, y=list(range(m)), mode="text", text=[esc(t) for t in labels],
                                 textposition=f"middle {anchor}", textfont=dict(size=12, family=FONT),
                                 showlegend=False, hovertemplate=f"{side}: %{{text}}<extra></extra>"))
    if query is not None and lo <= query < hi:
        fig.add_shape(type="rect", x0=-0.5, x1=-0.01, y0=query - lo - 0.45, y1=query - lo + 0.45,
                      line=dict(width=0), fillcolor="rgba(255, 220, 0, 0.35)")
    note = f" (tokens {lo + 1}-{hi} of {n})" if (lo, hi) != (0, n) else ""
    top = 38 + 22 * -(-nh // LEGEND_PER_ROW)             # the title, then the legend's rows under it (12 heads: 2)
                                                         # (a narrower column: style.fit_title makes more room)
    fig.update_layout(title=dict(text=esc(title + note), x=0.01, font=dict(size=14)), height=int(50 + top + 22 * m),
                      width=620, plot_bgcolor="white", font=dict(family=FONT),
                      margin=dict(l=10, r=10, t=top, b=10), legend=dict(orientation="h", y=1.02, yanchor="bottom",
                                                                        x=1, xanchor="right"),
                      xaxis=dict(visible=False, range=[-0.55, 1.55], fixedrange=True),
                      yaxis=dict(visible=False, autorange="reversed", fixedrange=True))
    table = pd.DataFrame(recs, columns=["head", "query_index", "query", "key_index", "key", "weight"])
    return FigureOut(key, title, fig, table, caption or (
        "Each line joins a query token (left) to a key token (right); its opacity is the weight, its colour the "
        f"head; weights under {floor:g} are not drawn. Click a head in the legend to hide it, double-click to "
        "see it alone."))


__all__ = ["HEAD_COLORS", "head_view"]
