"""Figures from plain tables and dicts: probabilities side by side (Compare), confusion matrix, training curves
(HCAN-F3 / LAMA-F5), the live training figure, LAMA-T4 top words, LAMA-F2 word weights, filter n-grams."""
from __future__ import annotations

from functools import partial

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from textcls.viz.style import RUN_COLORS, FigureOut, esc, label_colors, short, style_figure
from textcls.viz.tokens import esc_html


# ---------------------------------------------------------------- Train / Evaluate pages: metrics, curves, corpus views
# (confusion matrices, training curves HCAN-F3 / LAMA-F5, live training curves, LAMA-T4 top words, LAMA-F2
# word-weight distributions, filter n-grams over a data set). Inputs are plain tables and dicts.

CURVE_TITLES = {"train_loss": "training loss", "dev_loss": "dev loss", "train_accuracy": "training accuracy",
                "dev_accuracy": "dev accuracy", "dev_macro_f1": "dev macro-F1", "epoch": "epoch",
                "elapsed": "wall-clock time (s)", "step": "optimiser step", "loss": "training loss"}


def probabilities_figure(items: Sequence[tuple[str, dict[str, float]]], title: str = "Probabilities") -> FigureOut:
    """Grouped horizontal bars: one group per checkpoint, one bar per label (Compare)."""
    labels = list(dict.fromkeys(lab for _, probs in items for lab in probs))
    return FigureOut("probabilities", title, partial(_probabilities_plotly, list(items), labels, title),
                     partial(_probabilities_table, list(items)), html=probabilities_html(items, labels, title))


def _probabilities_table(items: Sequence[tuple[str, dict[str, float]]]) -> pd.DataFrame:
    """The bars' numbers, for CSV/JSON exports (built only then)."""
    return pd.DataFrame([{"checkpoint": n, "label": lab, "probability": p} for n, probs in items
                         for lab, p in probs.items()])


def _probabilities_plotly(items: Sequence[tuple[str, dict[str, float]]], labels: Sequence[str],
                          title: str) -> go.Figure:
    """The bars as a Plotly figure: what a PNG/SVG export of them renders (built only then)."""
    colors = label_colors(labels)
    fig = go.Figure()
    names = [esc(n) for n, _ in items]
    for k, lab in enumerate(labels):
        fig.add_trace(go.Bar(y=names, x=[probs.get(lab, 0.0) for _, probs in items], name=esc(lab),
                             orientation="h", marker_color=colors[lab],
                             hovertemplate="%{y}<br>" + esc(lab) + ": %{x:.4f}<extra></extra>"))
    style_figure(fig, title, int(110 + 22 * len(items) * max(1, len(labels))), barmode="group",
                 xaxis=dict(range=[0, 1], title="probability", tickformat=".0%"),
                 yaxis=dict(autorange="reversed", automargin=True), legend=dict(orientation="h", y=-0.15))
    return fig


def probabilities_html(items: Sequence[tuple[str, dict[str, float]]], labels: Sequence[str], title: str) -> str:
    """The same grouped bars as escaped HTML (what the page shows: a browser draws it in a fraction of the time a
    Plotly chart takes, which counts when many sessions share a machine). One row per (checkpoint, label): the bar,
    in the label's colour, spans the probability on a 0-100 % scale, with the value written beside it."""
    colors = label_colors(labels)
    out = [f'<div style="font-family:inherit;font-size:13px">'
           f'<div style="font-size:15px;margin:2px 0 6px 0;color:#333">{esc_html(title)}</div>'
           '<div style="display:flex;flex-wrap:wrap;gap:4px 14px;margin-bottom:8px">']
    out += [f'<span><span style="display:inline-block;width:11px;height:11px;background:{colors[lab]};'
            f'vertical-align:-1px;margin-right:4px"></span>{esc_html(lab)}</span>' for lab in labels]
    out.append('</div><div style="display:grid;grid-template-columns:minmax(80px,max-content) max-content '
               'minmax(0,1fr);gap:1px 10px;align-items:center">')
    for name, probs in items:
        for k, lab in enumerate(labels):
            p = float(np.clip(probs.get(lab, 0.0), 0.0, 1.0))
            head = esc_html(name) if k == 0 else ""
            sep = "border-top:1px solid #eaeef2;padding-top:3px;" if k == 0 else ""
            out.append(f'<div style="font-weight:600;overflow-wrap:anywhere;{sep}">{head}</div>'
                       f'<div style="color:#57606a;{sep}">{esc_html(lab)}</div>'
                       f'<div style="display:flex;align-items:center;gap:6px;{sep}" '
                       f'title="{esc_html(name)} - {esc_html(lab)}: {p:.4f}">'
                       f'<div style="flex:1;background:#f3f4f6;height:12px">'
                       f'<div style="width:{100 * p:.2f}%;background:{colors[lab]};height:12px"></div></div>'
                       f'<span style="width:52px;text-align:right;color:#333">{100 * p:.1f} %</span></div>')
    out.append("</div></div>")
    return "".join(out)


def label_cards_html(cards: Sequence[dict[str, Any]], per_row: int = 4) -> str:
    """Compare's verdict cards as one HTML block (all text escaped): per checkpoint its name, model and data set,
    the predicted label (with "same as" or "differs from most checkpoints" when they disagree: agreement, never
    correctness - there is no gold label for a pasted sentence), a confidence bar and notes (tokens, unknown words,
    truncation). One element for the browser to draw instead of five per card. A card is a dict with keys
    name, model, data, label, conf (0-1), agrees (True / False / None when all agree), notes (list of str)."""
    out = [f'<div style="display:grid;grid-template-columns:repeat({max(1, per_row)},minmax(0,1fr));gap:12px;'
           'font-family:inherit">']
    for c in cards:
        conf = float(np.clip(c["conf"], 0.0, 1.0))
        ok = c.get("agrees") is not False
        color = "#1f2328" if ok else "#9a6700"       # neutral ink; amber for the odd one out (never right/wrong)
        mark = ("" if c.get("agrees") is None else
                f'<div style="color:{color};font-size:0.8em;font-weight:400">'
                f'{"same as most checkpoints" if ok else "differs from most checkpoints"}</div>')
        where = esc_html(c["model"]) + (f" · {esc_html(c['data'])}" if c.get("data") else "")
        notes = " · ".join(esc_html(n) for n in c.get("notes", ()))
        out.append(
            '<div style="border:1px solid #d0d7de;border-radius:8px;padding:10px 12px;min-width:0">'
            f'<div style="font-weight:600;overflow-wrap:anywhere">{esc_html(c["name"])}</div>'
            f'<div style="color:#57606a;font-size:0.9em">{where}</div>'
            f'<div style="color:{color};font-weight:700;margin:6px 0 4px 0;overflow-wrap:anywhere">'
            f'{esc_html(c["label"])}{mark}</div>'
            f'<div style="font-size:0.85em;color:#333">confidence {100 * conf:.1f} %</div>'
            '<div style="background:#eaeef2;border-radius:4px;height:8px;margin:3px 0 4px 0">'
            f'<div style="background:{color};width:{100 * conf:.1f}%;height:8px;border-radius:4px"></div></div>'
            + (f'<div style="color:#57606a;font-size:0.8em">{notes}</div>' if notes else "") + '</div>')
    out.append("</div>")
    return "".join(out)


def confusion_figure(confusion: Sequence[Sequence[int]], labels: Sequence[str], *, title: str = "Confusion matrix",
                     normalize: bool = False, key: str = "confusion") -> FigureOut:
    """Rows = true label, columns = predicted label; counts (or row shares with `normalize`) in each cell."""
    cm = np.asarray(confusion, dtype=float)
    labels = [str(x) for x in labels]
    rows = cm.sum(axis=1, keepdims=True)
    share = np.divide(cm, rows, out=np.zeros_like(cm), where=rows > 0)
    z = share if normalize else cm
    text = [[(f"{share[i, j]:.0%}" if normalize else f"{int(cm[i, j])}") for j in range(len(labels))]
            for i in range(len(labels))]
    names = [esc(short(x, 18)) for x in labels]
    fig = go.Figure(go.Heatmap(z=z, x=names, y=names, colorscale="Blues", showscale=False, text=text,
                               texttemplate="%{text}", customdata=cm,
                               hovertemplate="true %{y}<br>predicted %{x}<br>%{customdata:d} examples<extra></extra>"))
    side = int(min(700, 160 + 48 * len(labels)))
    style_figure(fig, title, side + 60)
    longest = max((len(short(x, 18)) for x in labels), default=4)
    fig.update_layout(margin=dict(l=30 + 7 * longest, r=10, t=50, b=40 + (5 * longest if len(labels) > 4 else 10)))
    fig.update_xaxes(title="predicted", side="bottom", showgrid=False, tickangle=-35 if len(labels) > 4 else 0,
                     constrain="domain")
    fig.update_yaxes(title="true", autorange="reversed", showgrid=False, scaleanchor="x", constrain="domain")
    table = pd.DataFrame([{"true": labels[i], "predicted": labels[j], "count": int(cm[i, j]),
                           "row_share": float(share[i, j])} for i in range(len(labels)) for j in range(len(labels))])
    return FigureOut(key, title, fig, table, caption="Rows: true label; columns: predicted label.")


def training_curves(runs: Sequence[tuple[str, Sequence[dict[str, Any]]]], *, y: str = "dev_accuracy",
                    x: str = "epoch", title: str | None = None, key: str | None = None) -> FigureOut:
    """One line per run: `y` (a per-epoch history key) against "epoch" or "elapsed" (wall-clock seconds).

    HCAN Fig. 3 is y="dev_accuracy", x="elapsed"; LAMA Fig. 5 is y="train_loss", x="epoch"."""
    if x not in ("epoch", "elapsed"):
        raise ValueError(f"x must be 'epoch' or 'elapsed', got {x!r}")
    fig = go.Figure()
    rows = []
    for k, (name, epochs) in enumerate(runs):
        pts = [(e.get(x), e.get(y)) for e in epochs if e.get(x) is not None and e.get(y) is not None]
        if not pts:
            continue
        xs, ys = zip(*pts)
        fig.add_trace(go.Scatter(x=list(xs), y=list(ys), mode="lines+markers", name=esc(name),
                                 line=dict(color=RUN_COLORS[k % len(RUN_COLORS)], width=2), marker=dict(size=6),
                                 hovertemplate=esc(name) + f"<br>{CURVE_TITLES.get(x, x)} %{{x:.4g}}"
                                 f"<br>{CURVE_TITLES.get(y, y)} %{{y:.4f}}<extra></extra>"))
        rows += [{"run": name, x: float(a), y: float(b)} for a, b in pts]
    title = title or f"{CURVE_TITLES.get(y, y)} vs {CURVE_TITLES.get(x, x)}"
    style_figure(fig, title, 380, legend=dict(orientation="h", y=-0.2))
    fig.update_xaxes(title=CURVE_TITLES.get(x, x), dtick=1 if x == "epoch" and len(rows) and
                     max(r[x] for r in rows) <= 20 else None)
    fig.update_yaxes(title=CURVE_TITLES.get(y, y), tickformat=".1%" if "accuracy" in y or "f1" in y else None)
    table = pd.DataFrame(rows, columns=["run", x, y])
    return FigureOut(key or f"curves_{y}_vs_{x}", title, fig, table,
                     caption="" if rows else "No run has this value in its history.")


def live_training_figure(steps: Sequence[dict[str, Any]], epochs: Sequence[dict[str, Any]], *,
                         title: str = "Training", smooth: int = 20, max_points: int = 600) -> FigureOut:
    """Left: the loss of every step (light) and its running mean (dark), per-epoch train/dev loss (markers);
    right: train and dev accuracy per epoch. Long runs draw at most `max_points` points per step curve (every
    k-th step; the running mean is computed over all steps), so redrawing the figure every second stays cheap
    for the server and the browser; the table (CSV/JSON) keeps every step."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("loss", "accuracy"), horizontal_spacing=0.1)
    rows = []
    if steps:
        s = np.array([e["step"] for e in steps])
        loss = np.array([e["loss"] for e in steps], dtype=float)
        stride = max(1, -(-len(s) // max_points))                           # ceil: at most max_points drawn
        fig.add_trace(go.Scatter(x=s[::stride], y=loss[::stride], mode="lines",
                                 name="step loss" if stride == 1 else f"step loss (every {stride}th step)",
                                 line=dict(color="#f2b8b0", width=1),
                                 hovertemplate="step %{x}<br>loss %{y:.4f}<extra></extra>"), 1, 1)
        k = max(1, min(smooth, len(loss)))
        run = np.convolve(np.nan_to_num(loss, nan=0.0), np.ones(k) / k, mode="valid")
        fig.add_trace(go.Scatter(x=s[k - 1:][::stride], y=run[::stride], mode="lines", name=f"mean of {k} steps",
                                 line=dict(color="#c0392b", width=2),
                                 hovertemplate="step %{x}<br>mean loss %{y:.4f}<extra></extra>"), 1, 1)
        rows += [{"kind": "step", "step": int(a), "loss": float(b)} for a, b in zip(s, loss)]
    if epochs:
        es = [e["step"] for e in epochs]
        for key, name, color in (("train_loss", "epoch train loss", "#7f8c8d"), ("dev_loss", "dev loss", "#2c7fb8")):
            ys = [e.get(key) for e in epochs]
            if any(v is not None for v in ys):
                fig.add_trace(go.Scatter(x=es, y=ys, mode="markers+lines", name=name, marker=dict(size=8),
                                         line=dict(color=color, dash="dot"),
                                         hovertemplate=name + " %{y:.4f}<br>at step %{x}<extra></extra>"), 1, 1)
        ep = [e["epoch"] for e in epochs]
        for key, name, color in (("train_accuracy", "train accuracy", "#7f8c8d"),
                                 ("dev_accuracy", "dev accuracy", "#27ae60")):
            ys = [e.get(key) for e in epochs]
            if any(v is not None for v in ys):
                fig.add_trace(go.Scatter(x=ep, y=ys, mode="markers+lines", name=name, marker=dict(size=8),
                                         line=dict(color=color),
                                         hovertemplate=name + " %{y:.2%}<br>epoch %{x}<extra></extra>"), 1, 2)
        rows += [{"kind": "epoch", **{k: v for k, v in e.items() if k != "kind"}} for e in epochs]
    style_figure(fig, title, 360, legend=dict(orientation="h", y=-0.25))
    fig.update_xaxes(title="optimiser step", row=1, col=1)
    fig.update_xaxes(title="epoch", dtick=1, row=1, col=2)
    fig.update_yaxes(tickformat=".1%", row=1, col=2)        # ticks can be 0.5 % apart: whole percents would lie
    return FigureOut("training_live", title, fig, pd.DataFrame(rows))


def top_words_figure(table: pd.DataFrame, *, title: str = "Top attended words per class (LAMA Table 4)",
                     value: str = "score", key: str = "lama-t4") -> FigureOut:
    """One panel per label: horizontal bars of the words' scores (table from corpus_views.top_words)."""
    labels = list(dict.fromkeys(table["label"])) if len(table) else []
    n = max(1, len(labels))
    cols = min(n, 4)
    nrows = int(math.ceil(n / cols))
    fig = make_subplots(rows=nrows, cols=cols, subplot_titles=[esc(short(x, 30)) for x in labels] or [""],
                        horizontal_spacing=0.12, vertical_spacing=0.12)
    k_max = 1
    for i, lab in enumerate(labels):
        part = table[table["label"] == lab]
        k_max = max(k_max, len(part))
        fig.add_trace(go.Bar(x=part[value], y=[esc(w) for w in part["word"]], orientation="h", showlegend=False,
                             marker_color=RUN_COLORS[i % len(RUN_COLORS)], customdata=part["count"],
                             hovertemplate="%{y}<br>" + value + " %{x:.4g}<br>%{customdata} occurrences<extra></extra>"),
                      i // cols + 1, i % cols + 1)
    fig.update_yaxes(autorange="reversed")
    style_figure(fig, title, int(110 + nrows * (40 + 22 * k_max)))
    fig.update_layout(margin=dict(l=10, r=10, t=80, b=10))
    return FigureOut(key, title, fig, table.reset_index(drop=True),
                     caption="score: mean attention weight x text length (1 = a uniform share), among words seen "
                             "often enough in that class" if value == "score" else "")


def word_weight_figure(hist: pd.DataFrame, word: str, *, y: str = "density", relative: bool = False,
                       title: str | None = None, key: str = "lama-f2") -> FigureOut:
    """LAMA Fig. 2: one curve per label of the distribution of `word`'s weight (hist from
    corpus_views.weight_histogram)."""
    title = title or f"Attention weight of “{word}” by label (LAMA Fig. 2)"
    fig = go.Figure()
    for i, lab in enumerate(dict.fromkeys(hist["label"]) if len(hist) else []):
        part = hist[hist["label"] == lab]
        fig.add_trace(go.Scatter(x=part["center"], y=part[y], mode="lines+markers", name=esc(lab),
                                 line=dict(color=RUN_COLORS[i % len(RUN_COLORS)], width=2),
                                 customdata=part["count"],
                                 hovertemplate=esc(lab) + "<br>weight %{x:.4f}<br>" + y +
                                 " %{y:.4g}<br>%{customdata} occurrences<extra></extra>"))
    style_figure(fig, title, 380, legend=dict(orientation="h", y=-0.2))
    fig.update_xaxes(title="weight x text length" if relative else "attention weight")
    fig.update_yaxes(title=y)
    return FigureOut(key, title, fig, hist.reset_index(drop=True),
                     caption="" if len(hist) else f"“{word}” does not occur in these texts.")


def filter_ngrams_figure(summary: pd.DataFrame, *, top: int = 25,
                         title: str = "Filters and the n-grams that activate them most",
                         key: str = "filter-ngrams") -> FigureOut:
    """Bars: the `top` filters by their largest max-pool value over the data set, labelled with their best
    n-grams (summary from corpus_views.FilterNgrams.summary)."""
    part = summary.head(top)

    def name(r) -> str:
        where = f"L{r.layer} H{r.head} " if r.layer else ""
        return f"{r.bank} {where}f{r.filter}"
    ylab = [esc(f"{name(r)}: {short(r.top_ngrams.split(' | ')[0], 32)}") for r in part.itertuples()]
    fig = go.Figure(go.Bar(x=part["max_activation"], y=ylab, orientation="h", marker_color="#c0392b",
                           customdata=[esc(x) for x in part["top_ngrams"]],
                           hovertemplate="%{y}<br>max activation %{x:.4g}<br>top: %{customdata}<extra></extra>"))
    fig.update_yaxes(autorange="reversed")
    style_figure(fig, title, int(110 + 22 * max(1, len(part))))
    fig.update_xaxes(title="largest max-pool value over the data set")
    return FigureOut(key, title, fig, summary.reset_index(drop=True))
