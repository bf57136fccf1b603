"""Explore page figures (data-set tools across models): metrics per slice per checkpoint, the embedding projector
(one scatter per model, hover shows the text), counterfactual flip rates, ROC and PR curves with their areas
and the current threshold, and reliability diagrams with the expected calibration error. Plain inputs (tables,
arrays); every builder returns a `FigureOut` with the numbers it draws."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from textcls.viz.style import RUN_COLORS, FigureOut, esc, label_colors, short, style_figure, wrapped

CORRECT_COLORS = {"correct": "#27ae60", "wrong": "#c0392b"}
WRITTEN_BELOW = 0.02          # a slice score under this is written out: its bar alone would look like no bar


def slice_metrics_figure(table: pd.DataFrame, *, metric: str = "accuracy", key: str = "slice_metrics",
                         title: str | None = None) -> FigureOut:
    """Grouped bars: one group per slice, one bar per checkpoint (table from slices.slice_metrics)."""
    title = title or f"{metric.replace('_', '-')} per slice and checkpoint"
    t = table[table["checkpoint"] != ""] if len(table) else table
    fig = go.Figure()
    # a score of (nearly) zero is written, so its group does not look empty: once above a slice where every
    # checkpoint has it (e.g. "wrong (every checkpoint)"), else on the bar
    low = t[metric].astype(float).fillna(1) < WRITTEN_BELOW if len(t) else t.get(metric, [])
    all_low = {s for s, g in t[low].groupby("slice")["checkpoint"] if len(g) == t["checkpoint"].nunique()} \
        if len(t) else set()
    for s in all_low:
        fig.add_annotation(x=wrapped(s), y=WRITTEN_BELOW, yanchor="bottom", showarrow=False,
                           text="0 % for every<br>checkpoint", font=dict(size=11))
    for k, ck in enumerate(dict.fromkeys(t["checkpoint"]) if len(t) else []):
        part = t[t["checkpoint"] == ck]
        values = part[metric].astype(float)
        fig.add_trace(go.Bar(x=[wrapped(s) for s in part["slice"]], y=values, name=esc(ck),
                             marker_color=RUN_COLORS[k % len(RUN_COLORS)], customdata=part["count"],
                             text=[f"{v:.0%}" if v < WRITTEN_BELOW and sl not in all_low else ""
                                   for v, sl in zip(values, part["slice"])], textposition="outside",
                             cliponaxis=False,
                             hovertemplate=esc(ck) + "<br>%{x}<br>" + metric + " %{y:.1%}<br>%{customdata} rows"
                             "<extra></extra>"))
    style_figure(fig, title, 430, barmode="group", legend=dict(orientation="h", y=-0.3))
    fig.update_xaxes(tickangle=0)                   # level labels, wrapped over up to three lines
    fig.update_yaxes(title=metric.replace("_", "-"), tickformat=".0%", range=[0, 1])
    return FigureOut(key, title, fig, table.reset_index(drop=True), caption="Rows of a slice: its count; an empty "
                     "slice has no score.")


def projector_figure(coords: np.ndarray, texts: Sequence[str], colour: Sequence[str], rows: Sequence[int], *,
                     title: str, key: str, colour_name: str = "label", axis_names=("1", "2"),
                     select: bool = True, labels: Sequence[str] | None = None) -> FigureOut:
    """One model's projection: a point per text, one trace per colour value (legend), hover shows the text
    (escaped, shortened), customdata holds the row index in the split (what a selection returns). `labels`: the
    task's label list when the colours are labels (each then has its colour of `label_colors`, present or not)."""
    coords = np.asarray(coords, dtype=float)
    colour = [str(c) for c in colour]
    groups = list(dict.fromkeys(sorted(set(colour), key=lambda c: (c not in CORRECT_COLORS, c))))
    fixed = {**(label_colors(labels) if labels is not None else {}), **CORRECT_COLORS}
    if labels is not None:
        order = {str(lab): k for k, lab in enumerate(labels)}
        groups.sort(key=lambda c: order.get(c, len(order)))
    fig = go.Figure()
    for k, g in enumerate(groups):
        idx = [i for i, c in enumerate(colour) if c == g]
        fig.add_trace(go.Scattergl(
            x=coords[idx, 0], y=coords[idx, 1], mode="markers", name=esc(short(g, 30)),
            marker=dict(size=5, opacity=0.75, color=fixed.get(g, RUN_COLORS[k % len(RUN_COLORS)])),
            customdata=[int(rows[i]) for i in idx], text=[esc(short(texts[i], 120)) for i in idx],
            hovertemplate="#%{customdata}<br>%{text}<extra>" + esc(short(g, 20)) + "</extra>"))
    style_figure(fig, title, 460, legend=dict(orientation="h", y=-0.15, title=esc(colour_name)),
                 dragmode="select" if select else "zoom")
    fig.update_xaxes(title=axis_names[0])
    fig.update_yaxes(title=axis_names[1])
    table = pd.DataFrame({"row": list(rows), "x": coords[:, 0], "y": coords[:, 1], colour_name: colour,
                          "text": list(texts)})
    return FigureOut(key, title, fig, table, caption="Drag a box (or lasso) to select points; hover shows the text.")


def flip_rates_figure(summary: pd.DataFrame, *, key: str = "counterfactual_flip_rates",
                      title: str = "Flip rate per generator and checkpoint") -> FigureOut:
    """Grouped bars (summary from counterfactuals.summary_table): one group per generator, a bar per checkpoint."""
    fig = go.Figure()
    for k, ck in enumerate(dict.fromkeys(summary["checkpoint"]) if len(summary) else []):
        part = summary[summary["checkpoint"] == ck]
        fig.add_trace(go.Bar(x=[esc(g) for g in part["generator"]], y=part["flip_rate"], name=esc(ck),
                             marker_color=RUN_COLORS[k % len(RUN_COLORS)],
                             customdata=np.stack([part["n"], part["mean_prob_change"]], axis=1),
                             hovertemplate=esc(ck) + "<br>%{x}<br>flip rate %{y:.1%}<br>%{customdata[0]} edited texts"
                             "<br>mean change of p(original label) %{customdata[1]:+.3f}<extra></extra>"))
    style_figure(fig, title, 400, barmode="group", legend=dict(orientation="h", y=-0.25))
    fig.update_yaxes(title="flip rate", tickformat=".0%", range=[0, 1])
    return FigureOut(key, title, fig, summary.reset_index(drop=True),
                     caption="Flip rate: share of edited texts whose predicted label changed.")


def roc_pr_figure(curves: dict[str, dict], *, kind: str = "roc", threshold: float | None = None,
                  key: str | None = None, title: str | None = None) -> FigureOut:
    """ROC (kind="roc": curves {ckpt: {"fpr", "tpr", "thresholds", "auc"}}) or PR (kind="pr": {"recall",
    "precision", "thresholds", "ap"}) of several checkpoints on one plot; `threshold` marks each curve's point."""
    xk, yk, area, name = (("fpr", "tpr", "auc", "ROC AUC") if kind == "roc" else
                          ("recall", "precision", "ap", "average precision"))
    title = title or ("ROC curves" if kind == "roc" else "Precision-recall curves")
    fig = go.Figure()
    rows = []
    if kind == "roc":
        fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#bbb", dash="dot"),
                                 name="chance", hoverinfo="skip"))
    for k, (ck, c) in enumerate(curves.items()):
        color = RUN_COLORS[k % len(RUN_COLORS)]
        th = np.asarray(c["thresholds"], dtype=float)
        fig.add_trace(go.Scatter(x=c[xk], y=c[yk], mode="lines", name=esc(f"{ck} ({name} {c[area]:.3f})"),
                                 line=dict(color=color, width=2, shape="hv" if kind == "pr" else "linear"),
                                 customdata=np.where(np.isfinite(th), th, np.nan),
                                 hovertemplate=esc(ck) + f"<br>{xk} %{{x:.3f}}<br>{yk} %{{y:.3f}}"
                                 "<br>threshold %{customdata:.3f}<extra></extra>"))
        if threshold is not None:
            j = int(np.nonzero(th >= threshold)[0].max()) if (th >= threshold).any() else 0
            fig.add_trace(go.Scatter(x=[c[xk][j]], y=[c[yk][j]], mode="markers", showlegend=False,
                                     marker=dict(color=color, size=11, symbol="circle-open", line=dict(width=3)),
                                     hovertemplate=esc(ck) + f"<br>at threshold {threshold:.2f}<extra></extra>"))
        rows += [{"checkpoint": ck, xk: float(a), yk: float(b), "threshold": float(t), area: float(c[area])}
                 for a, b, t in zip(c[xk], c[yk], th)]
    style_figure(fig, title, 420, legend=dict(orientation="h", y=-0.22))
    fig.update_xaxes(title="false positive rate" if kind == "roc" else "recall", range=[0, 1])
    fig.update_yaxes(title="true positive rate" if kind == "roc" else "precision", range=[0, 1.02])
    return FigureOut(key or f"{kind}_curves", title, fig, pd.DataFrame(rows))


def reliability_figure(diagrams: dict[str, dict], *, key: str = "reliability",
                       title: str = "Reliability diagram") -> FigureOut:
    """Accuracy against mean confidence per confidence bin, one line per checkpoint (diagrams {ckpt:
    calibration.reliability(...)}); the diagonal is perfect calibration; the legend gives each ECE."""
    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#bbb", dash="dot"),
                               name="perfectly calibrated", hoverinfo="skip"))
    rows = []
    for k, (ck, d) in enumerate(diagrams.items()):
        ok = np.asarray(d["count"]) > 0
        conf, acc, cnt = np.asarray(d["confidence"])[ok], np.asarray(d["accuracy"])[ok], np.asarray(d["count"])[ok]
        fig.add_trace(go.Scatter(x=conf, y=acc, mode="lines+markers", name=esc(f"{ck} (ECE {d['ece']:.3f})"),
                                 line=dict(color=RUN_COLORS[k % len(RUN_COLORS)], width=2),
                                 marker=dict(size=6 + 10 * np.sqrt(cnt / max(1, cnt.max()))), customdata=cnt,
                                 hovertemplate=esc(ck) + "<br>confidence %{x:.3f}<br>accuracy %{y:.3f}"
                                 "<br>%{customdata} rows<extra></extra>"))
        rows += [{"checkpoint": ck, "bin_lo": float(lo), "bin_hi": float(hi), "count": int(c),
                  "confidence": float(cf), "accuracy": float(a), "ece": float(d["ece"])}
                 for lo, hi, c, cf, a in zip(d["lo"], d["hi"], d["count"], d["confidence"], d["accuracy"])]
    style_figure(fig, title, 420, legend=dict(orientation="h", y=-0.22))
    fig.update_xaxes(title="mean confidence (top probability) in the bin", range=[0, 1])
    fig.update_yaxes(title="accuracy in the bin", range=[0, 1.02])
    return FigureOut(key, title, fig, pd.DataFrame(rows), caption="Marker size: rows in the bin. ECE: the "
                     "row-weighted mean gap between accuracy and confidence over the bins.")


__all__ = ["flip_rates_figure", "projector_figure", "reliability_figure", "roc_pr_figure", "slice_metrics_figure"]
