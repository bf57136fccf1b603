"""Studies page figure: a study's points (ours: solid, mean with a bar of one standard deviation over seeds) and
the paper's numbers beside them (grey open diamonds, dotted), one panel per series; per-epoch curves (LAMA-F3)
and accuracy against training time (HCAN-F3) as lines. Built from the plain rows study_results.rows returns."""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from textcls.viz.style import RUN_COLORS, FigureOut, esc, style_figure

OURS = RUN_COLORS[1]
PAPER = "#888888"


def study_figure(name: str, title: str, measure: str, series: Sequence[str], rows: Sequence[dict[str, Any]],
                 scale_note: str, y_label: str = "dev accuracy (%)", short_note: str = "") -> FigureOut:
    """One FigureOut; `series` in panel order (panels with no finished point are still drawn, empty).
    `short_note` (e.g. "QUICK: trec, 2000 ex., 5 ep.") goes into the title, so an exported image says it."""
    if measure in ("curve", "time"):
        return _lines(name, title, measure, rows, scale_note, short_note)
    fig = make_subplots(rows=1, cols=len(series), subplot_titles=[esc(s) for s in series],
                        horizontal_spacing=0.04, shared_yaxes=True)     # one y scale: differences read alike
    table = []
    for c, s in enumerate(series, 1):
        mine = [r for r in rows if r["series"] == s]
        xs = [str(r["x"]) for r in mine]
        fig.add_trace(go.Scatter(x=xs, y=[r["mean"] for r in mine], mode="lines+markers", name="ours",
                                 legendgroup="ours", showlegend=c == 1, marker=dict(color=OURS, size=9),
                                 line=dict(color=OURS), error_y=dict(array=[r["std"] for r in mine], visible=True),
                                 hovertemplate="%{x}: %{y:.1f} %<extra>ours</extra>"), 1, c)
        paper = [r for r in mine if r["paper"] is not None]
        if paper:
            fig.add_trace(go.Scatter(x=[str(r["x"]) for r in paper], y=[r["paper"] for r in paper],
                                     mode="lines+markers", name="paper", legendgroup="paper",
                                     showlegend=not any(t.name == "paper" for t in fig.data),
                                     marker=dict(color=PAPER, symbol="diamond-open", size=11),
                                     line=dict(color=PAPER, dash="dot"),
                                     hovertemplate="%{x}: %{y:.1f} %<extra>paper</extra>"), 1, c)
        table += [{"series": s, "x": str(r["x"]), "value": r["mean"], "std": r["std"], "n": r["n"],
                   "paper": r["paper"], "seconds_per_epoch": r["seconds_per_epoch"]} for r in mine]
    fig.update_yaxes(title_text=y_label, col=1)
    style_figure(fig, f"{title} [{short_note or scale_note}]", 380, top=80,
                 legend=dict(orientation="h", y=1.14, x=1, xanchor="right"))
    return FigureOut(f"study_{name}", title, fig, pd.DataFrame(table, columns=[
        "series", "x", "value", "std", "n", "paper", "seconds_per_epoch"]), caption=scale_note)


def _lines(name, title, measure, rows, scale_note, short_note) -> FigureOut:
    fig = go.Figure()
    table = []
    for i, r in enumerate(rows):
        xs = [p["epoch"] if measure == "curve" else p["elapsed"] for p in r["curve"]]
        ys = [100 * p["dev_accuracy"] for p in r["curve"] if p["dev_accuracy"] is not None]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=esc(r["key"]),
                                 line=dict(color=RUN_COLORS[i % len(RUN_COLORS)])))
        table += [{"point": r["key"], "x": x, "value": y} for x, y in zip(xs, ys)]
    fig.update_xaxes(title_text="epoch" if measure == "curve" else "training time (s, this CPU)")
    fig.update_yaxes(title_text="dev accuracy (%)")
    style_figure(fig, f"{title} [{short_note or scale_note}]", 380, top=80)
    return FigureOut(f"study_{name}", title, fig, pd.DataFrame(table, columns=["point", "x", "value"]),
                     caption=scale_note + " (seed 0's curve; the paper's curve is not readable, see the note)")
