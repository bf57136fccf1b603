"""Figures of the interpretation results - attributions side by side, agreement, erasure curves, probability
shifts, the Lab's activations, negation, branches and gates - each a `FigureOut` with the numbers it draws,
so the pages show them with the app's export buttons (PNG / SVG / CSV / JSON).

Tokens sit on a numeric axis with the words as tick labels (a repeated word stays two columns); every label
is HTML-escaped.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from textcls.viz.axes import token_window
from textcls.viz.style import RUN_COLORS as PALETTE
from textcls.viz.style import FigureOut, esc, short, style_figure, two_label_scale

def _window_title(title: str, lo: int, hi: int, n: int) -> str:
    return title if (lo, hi) == (0, n) else f"{title} (tokens {lo + 1}-{hi} of {n})"


UNIFORM_DARKEST = 4.0   # an unsigned score with 4x its uniform share (1/n) of the row's total is darkest


def normalise_row(v: Sequence[float]) -> np.ndarray:
    """Row scaled for display. Signed rows (attributions): v / max|v| in [-1, 1]. Unsigned rows (attention,
    saliency, leave-one-out): shares of the row's total, white at or below the uniform share 1/n and darkest at
    4x it (or the row's maximum if larger), on a log scale - so a flat attention stays pale instead of being
    stretched to full contrast (the same rule as the app's shaded words)."""
    v = np.nan_to_num(np.asarray(v, dtype=float))
    if v.size == 0:
        return v
    if v.min() >= 0:
        total = float(v.sum())
        if total <= 0:
            return np.zeros_like(v)
        ratio = np.maximum(v / total * v.size, 1e-12)
        top = max(float(ratio.max()), UNIFORM_DARKEST)
        return np.clip(np.log(ratio) / np.log(top), 0.0, 1.0)
    return v / float(np.abs(v).max())


def reasons_grid(rows: Sequence[tuple[str, Sequence[float]]], tokens: Sequence[str],
                 title: str = "What each model and method points at",
                 window: tuple[int, int] | None = None) -> FigureOut:
    """One aligned token grid: a row per (model, method), a column per token, colour from `normalise_row` (red
    supports the predicted class, blue speaks against it; attention and other unsigned scores are never blue).
    Exact values on hover. `window=(start, size)` draws only those tokens of a long text (each row is still
    normalised over the whole text, so a window's shades compare with other windows); the title says which."""
    tokens = list(tokens)
    n = len(tokens)
    names = [r[0] for r in rows]
    z = np.array([normalise_row(r[1]) for r in rows]) if rows else np.zeros((0, n))
    raw = np.array([np.asarray(r[1], dtype=float) for r in rows]) if rows else z
    lo, hi = token_window(n, window)
    title = _window_title(title, lo, hi, n)
    idx = list(range(lo, hi))
    shown = tokens[lo:hi]
    fig = go.Figure(go.Heatmap(
        z=z[:, lo:hi], x=idx, y=[esc(n) for n in names], zmin=-1, zmax=1, zmid=0,
        colorscale="RdBu_r", customdata=raw[:, lo:hi], colorbar=dict(title="shade", thickness=12),
        text=[[esc(t) for t in shown]] * len(names),
        hovertemplate="%{y}<br>%{text}: %{customdata:.4g}<extra></extra>", xgap=1, ygap=1))
    fig.update_xaxes(tickvals=idx, ticktext=[esc(t) for t in shown], tickangle=-45, showgrid=False,
                     zeroline=False)
    fig.update_yaxes(autorange="reversed", automargin=True, showgrid=False, zeroline=False)
    style_figure(fig, title, int(120 + 26 * max(1, len(names)) + 6 * max((len(t) for t in shown), default=0)))
    table = pd.DataFrame([{"row": nm, "token_index": i, "token": tokens[i], "score": float(raw[r, i]),
                           "normalised": float(z[r, i])}
                          for r, nm in enumerate(names) for i in idx])
    return FigureOut("reasons_grid", title, fig, table,
                     caption="Signed rows (attributions): score / max|score|, red for and blue against the "
                             "predicted class. Unsigned rows (attention, saliency, leave-one-out, context mixing): white "
                             "= at most a uniform share of the row, darkest = 4x that share or more. Exact values on hover.")


def agreement_heatmap(agr: dict[str, Any], metric: str = "kendall_tau", title: str | None = None) -> FigureOut:
    """Matrix of Kendall tau (or top-k overlap) between every pair of explanations (faithfulness.agreement)."""
    names = list(agr["names"])
    m = np.asarray(agr[metric], dtype=float)
    label = {"kendall_tau": "Kendall tau", "topk_overlap": "top-k overlap"}[metric]
    title = title or f"{label} between explanations"
    text = [["" if np.isnan(v) else f"{v:.2f}" for v in row] for row in m]
    fig = go.Figure(go.Heatmap(z=m, x=[esc(n) for n in names], y=[esc(n) for n in names], text=text,
                               texttemplate="%{text}", zmin=-1 if metric == "kendall_tau" else 0, zmax=1,
                               colorscale="RdBu_r" if metric == "kendall_tau" else "Blues",
                               colorbar=dict(title=label, thickness=12),
                               hovertemplate="%{y} vs %{x}: %{z:.3f}<extra></extra>"))
    fig.update_yaxes(autorange="reversed", automargin=True)
    fig.update_xaxes(tickangle=-35, automargin=True)
    style_figure(fig, title, int(160 + 34 * len(names)))
    table = pd.DataFrame([{"a": a, "b": b, metric: float(m[i, j])} for i, a in enumerate(names)
                          for j, b in enumerate(names)])
    return FigureOut(f"agreement_{metric}", title, fig, table,
                     caption="Blank cells: the two explanations cover different token lists (different tokenisers).")


DASHES = ("solid", "dash", "dot", "dashdot")
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "star", "cross", "triangle-down", "pentagon",
           "hexagon")


def erasure_figure(curves: dict[str, dict[str, Any]], title: str = "Removing the top-k% tokens") -> FigureOut:
    """Comprehensiveness and sufficiency against k for several explanations (faithfulness.erasure_curves)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("comprehensiveness (higher = faithful)",
                                                        "sufficiency (lower = faithful)"))
    rows = []
    for i, (name, c) in enumerate(curves.items()):
        # colour and line style together: no two of up to 40 curves look alike (the palette's 10 colours alone
        # repeat, and its reds and oranges are close)
        color = PALETTE[i % len(PALETTE)]
        style = dict(color=color, dash=DASHES[(i // 2) % len(DASHES)] if i >= 2 else "solid")
        for col, key in ((1, "comprehensiveness"), (2, "sufficiency")):
            fig.add_trace(go.Scatter(x=c["bins"], y=c[key], mode="lines+markers", name=esc(name),
                                     legendgroup=esc(name), showlegend=col == 1, line=style,
                                     marker=dict(symbol=SYMBOLS[i % len(SYMBOLS)], size=7)),
                          row=1, col=col)
        rows += [{"explanation": name, "k_percent": b, "k_tokens": k, "comprehensiveness": cp, "sufficiency": sf}
                 for b, k, cp, sf in zip(c["bins"], c["k_tokens"], c["comprehensiveness"], c["sufficiency"])]
    fig.update_xaxes(title="k (% of tokens)")
    fig.update_yaxes(title="drop in p(predicted class)", col=1)
    style_figure(fig, title, 380, top=80, legend=dict(orientation="h", y=-0.3))
    return FigureOut("erasure_curves", title, fig, pd.DataFrame(rows),
                     caption="k = 0 is the empty set; AOPC is the mean over the points of a line.")


def probability_shift(labels: Sequence[str], before: Sequence[float], after: Sequence[float],
                      title: str = "Probabilities before and after", names=("before", "after")) -> FigureOut:
    fig = go.Figure()
    for k, (name, p) in enumerate(zip(names, (before, after))):
        fig.add_trace(go.Bar(x=[esc(lab) for lab in labels], y=list(map(float, p)), name=esc(name),
                             marker_color=["#95a5a6", "#c0392b"][k], text=[f"{float(v):.3f}" for v in p],
                             textposition="outside"))
    fig.update_yaxes(range=[0, 1.1], title="probability")
    style_figure(fig, title, 320, barmode="group", legend=dict(orientation="h", y=-0.2))
    table = pd.DataFrame({"label": list(labels), names[0]: list(map(float, before)),
                          names[1]: list(map(float, after))})
    return FigureOut("probability_shift", title, fig, table)


# ---------------------------------------------------------------- Lab

def activation_figure(rows: Sequence[dict], weights: str, stat: str = "variance",
                      title: str | None = None) -> FigureOut:
    """AG-F2: mean or variance of the activations per layer, one line per activation (log axis when all
    values of this statistic are positive, under every weight setting in `rows`, so the panels compare)."""
    sel = [r for r in rows if r["weights"] == weights]
    if not sel:
        raise ValueError(f"no rows for weights {weights!r}")
    title = title or f"{stat.capitalize()} of the activations per layer, weights {weights}"
    fig = go.Figure()
    # the axis is chosen from every weight setting's rows, so the figures of one statistic compare
    vals = np.array([r[stat] for r in rows], dtype=float)
    log = bool(np.all(vals > 0))
    # values of both signs spanning many orders of magnitude: a signed log axis, sign(y) log10(1 + |y|)
    slog = not log and np.abs(vals).max() > 1e3
    for i, act in enumerate(dict.fromkeys(r["activation"] for r in sel)):
        pts = [r for r in sel if r["activation"] == act]
        y = np.array([r[stat] for r in pts], dtype=float)
        fig.add_trace(go.Scatter(x=[r["layer"] for r in pts], y=np.sign(y) * np.log10(1 + np.abs(y)) if slog else y,
                                 customdata=y, mode="lines+markers", name=esc(act),
                                 hovertemplate=esc(act) + " layer %{x}: %{customdata:.4g}<extra></extra>",
                                 line=dict(color=PALETTE[i % len(PALETTE)])))
    ytitle = stat + (" (log scale)" if log else " (sign(y) log10(1 + |y|))" if slog else "")
    fig.update_yaxes(type="log" if log else "linear", title=ytitle, exponentformat="power")
    fig.update_xaxes(title="layer", dtick=1)
    style_figure(fig, title, 380, legend=dict(orientation="h", y=-0.3, yanchor="top"))
    return FigureOut(f"ag-f2_{stat}_{weights}", title, fig,
                     pd.DataFrame([{k: r[k] for k in ("activation", "weights", "layer", stat)} for r in sel]))


def negation_figure(rows: Sequence[dict], title: str = "p(positive) as the wording changes") -> FigureOut:
    models = list(dict.fromkeys(r["model"] for r in rows))
    sents = list(dict.fromkeys(r["sentence"] for r in rows))
    z = np.full((len(models), len(sents)), np.nan)
    for r in rows:
        z[models.index(r["model"]), sents.index(r["sentence"])] = r["p_positive"]
    # numeric columns with shortened tick labels: a long input cannot stretch the figure, and two inputs that
    # shorten alike stay two columns; the hover shows more of the input, the table all of it
    hover = [[esc(short(s, 160)) for s in sents]] * len(models)
    fig = go.Figure(go.Heatmap(z=z, x=list(range(len(sents))), y=[esc(m) for m in models], zmin=0, zmax=1,
                               zmid=0.5, colorscale=two_label_scale(), text=[[f"{v:.2f}" for v in row] for row in z],
                               texttemplate="%{text}", colorbar=dict(title="p(positive)", thickness=12),
                               customdata=hover, hovertemplate="%{y}<br>%{customdata}: %{z:.3f}<extra></extra>"))
    fig.update_xaxes(tickvals=list(range(len(sents))), ticktext=[esc(short(s, 28)) for s in sents],
                     tickangle=0 if len(sents) <= 8 else -35, showgrid=False, zeroline=False)
    fig.update_yaxes(autorange="reversed", automargin=True)
    style_figure(fig, title, int(140 + 36 * len(models)))
    return FigureOut("negation", title, fig, pd.DataFrame([{k: r[k] for k in ("model", "sentence", "p_positive",
                                                                               "label")} for r in rows]))


def branches_figure(res: dict[str, Any], title: str = "HCAN's two branches and their product",
                    window: tuple[int, int] | None = None) -> FigureOut:
    """Per token the lengths of branch a, branch b and their product; `window=(start, size)` draws only those
    tokens of a long text (the table keeps every token)."""
    tokens = res["tokens"] or [str(i) for i in range(len(res["norm_a"]))]
    lo, hi = token_window(len(tokens), window)
    title = _window_title(title, lo, hi, len(tokens))
    idx = list(range(lo, hi))
    fig = go.Figure()
    for k, (key, name) in enumerate((("norm_a", "|H_a| (branch a, ELU values)"),
                                     ("norm_b", "|H_b| (branch b, tanh values)"),
                                     ("norm_product", "|H_a * H_b| (product)"))):
        fig.add_trace(go.Bar(x=idx, y=np.asarray(res[key])[lo:hi], name=esc(name), marker_color=PALETTE[k]))
    fig.update_xaxes(tickvals=idx, ticktext=[esc(t) for t in tokens[lo:hi]], tickangle=-45)
    fig.update_yaxes(title="vector length")
    style_figure(fig, title, 400, barmode="group", legend=dict(orientation="h", y=-0.35))
    table = pd.DataFrame({"token": tokens, "norm_a": res["norm_a"], "norm_b": res["norm_b"],
                          "norm_product": res["norm_product"], "sign_flip_share": res["sign_flip_share"]})
    return FigureOut("hcan_branches", title, fig, table)


def branch_rows_figure(res: dict[str, Any], title: str | None = None) -> FigureOut:
    """One word's self-attention rows in branch a and branch b (HCAN Fig. 5)."""
    toks = res["row_tokens"] or [str(i) for i in range(len(res["row_a"]))]
    word = (res["tokens"] or [str(res["word"])] * (res["word"] + 1))[res["word"]]
    title = title or f"Where '{word}' looks, in each branch (attention weights, mean over heads)"
    fig = go.Figure()
    for k, key in enumerate(("row_a", "row_b")):
        fig.add_trace(go.Bar(x=list(range(len(toks))), y=res[key], name="branch " + key[-1],
                             marker_color=PALETTE[k]))
    fig.update_xaxes(tickvals=list(range(len(toks))), ticktext=[esc(t) for t in toks], tickangle=-45)
    fig.update_yaxes(title="attention weight")
    style_figure(fig, title, 400, barmode="group", legend=dict(orientation="h", y=-0.35))
    return FigureOut("hcan_rows", title, fig, pd.DataFrame({"token": toks, "branch_a": res["row_a"],
                                                            "branch_b": res["row_b"]}))


CLOSED_COLOR = "#3d3d3d"      # a closed gate (exactly 0): dark, never the white of "nothing here"


def gate_closure_figure(res: dict[str, Any], n_filters: int = 16) -> FigureOut:
    """The gate map that matters on a sentence (interpret.lab.gate_closures): its gates for the filters that fire
    most, one column per n-gram of the sentence (none past its end). Closed gates (0) are dark, open ones green
    by how much they let through; the closed gate whose opening moves the prediction most is outlined."""
    gate, conv, ngrams = np.asarray(res["gate"], float), np.asarray(res["conv"], float), list(res["ngrams"])
    best = res.get("best")
    order = list(np.argsort(-conv.max(axis=1, initial=0.0), kind="stable")[:n_filters]) if gate.size else []
    if best is not None and best["filter"] not in order:
        order = order[:-1] + [best["filter"]] if order else [best["filter"]]
    z = gate[order] if order else np.zeros((0, len(ngrams)))
    zmax = float(max(z.max(initial=0.0), 1e-6))
    x = [f"{j + 1}·{esc(short(g, 22))}" for j, g in enumerate(ngrams)]
    y = [f"filter {f + 1}" for f in order]
    text = [["off" if v == 0 else "" for v in row] for row in z]
    fig = go.Figure(go.Heatmap(z=z, x=x, y=y, zmin=0, zmax=zmax, text=text, texttemplate="%{text}",
                               textfont=dict(color="white", size=10), customdata=conv[order] if order else None,
                               colorscale=[[0.0, CLOSED_COLOR], [1e-9, "#f7fcf5"], [1.0, "#00441b"]],
                               colorbar=dict(title="gate", thickness=12),
                               hovertemplate="%{y}, n-gram %{x}<br>gate %{z:.3f}<br>feature before the gate "
                                             "%{customdata:.3f}<extra></extra>"))
    if best is not None and best["filter"] in order:
        r, c = order.index(best["filter"]), best["position"]
        fig.add_shape(type="rect", x0=c - 0.5, x1=c + 0.5, y0=r - 0.5, y1=r + 0.5, line=dict(color="#d62728", width=3))
    fig.update_xaxes(tickangle=-45, showgrid=False, title=f"the sentence's {res['title'].split(' on ')[-1]}"
                     .replace("features", "n-grams"))
    fig.update_yaxes(autorange="reversed", showgrid=False)
    title = f"{res['title'][0].upper()}{res['title'][1:]}: the {len(order)} filters that fire most"
    style_figure(fig, title, int(170 + 20 * len(order)))
    table = pd.DataFrame([{"filter": f + 1, "position": j + 1, "ngram": ngrams[j], "gate": float(gate[f, j]),
                           "feature_before_gate": float(conv[f, j])} for f in order for j in range(len(ngrams))])
    return FigureOut("gate_closures", title, fig, table,
                     caption="Dark cells marked off: a closed gate (exactly 0), the feature is switched off before "
                             "the max-pool; green: the share of the feature let through. Outlined in red: the "
                             "closed gate whose opening moves the prediction most.")


def gate_profile_figure(res: dict[str, Any], title: str = "Mean gate value per position",
                        window: tuple[int, int] | None = None) -> FigureOut:
    """Per gate map the mean gate at each n-gram position; `window=(start, size)` draws only those positions of
    a long text (the table keeps every position). Positions where a map's n-gram would run past the sentence's
    end are empty (grey), never 0: 0 is a closed gate."""
    from textcls.interpret.lab_texts import gate_title
    names = list(res["profile"])
    n = max((len(v) for v in res["profile"].values()), default=0)
    tokens = res["tokens"] or [str(i) for i in range(n)]
    z = np.full((len(names), n), np.nan)
    for r, k in enumerate(names):
        h = int(k.split("_h")[1].split("_")[0]) if "_h" in k else 1
        valid = max(0, len(tokens) - h + 1)
        z[r, :valid] = np.asarray(res["profile"][k], float)[:valid]
    lo, hi = token_window(n, window)
    title = _window_title(title, lo, hi, n)
    idx = list(range(lo, hi))
    fig = go.Figure(go.Heatmap(z=z[:, lo:hi], x=idx, y=[esc(gate_title(k)) for k in names], colorscale="Greens",
                               zmin=0, colorbar=dict(title="mean gate", thickness=12), hoverongaps=False,
                               hovertemplate="%{y}<br>position %{x}: %{z:.3f}<extra></extra>"))

    fig.update_xaxes(tickvals=idx, ticktext=[esc(t) for t in tokens[lo:hi]], tickangle=-45, showgrid=False,
                     zeroline=False)
    fig.update_yaxes(autorange="reversed", automargin=True)
    style_figure(fig, title, int(140 + 22 * len(names)))
    fig.update_layout(plot_bgcolor="#d9d9d9")                      # the empty cells past the end: grey
    table = pd.DataFrame([{"gate": k, "position": i, "token": tokens[i] if i < len(tokens) else "",
                           "mean_gate": float(z[r, i])} for r, k in enumerate(names) for i in range(n)])
    return FigureOut("gate_profile", title, fig, table,
                     caption="Column j is the n-gram starting at word j; each cell averages the gate over the "
                             "filters, so a few closed gates hide among open ones (the figure above shows them). "
                             "0 = closed, 1 = passed unchanged, above 1 = amplified (NLReLU gates are not capped "
                             "at 1); grey: the n-gram would run past the sentence's end.")


# ---------------------------------------------------------------- Lessons (textcls.teach.lessons)

def toy_attention_figure(tokens: Sequence[str], weights: Sequence[float], values: Sequence[float],
                         temperature: float, average: float) -> FigureOut:
    """A toy attention as bars: each word's weight (softmax of its score / temperature), coloured by the value
    it carries (red positive, blue negative, grey none); the title gives the weighted average of the values."""
    tokens, w, v = [str(t) for t in tokens], np.asarray(weights, float), np.asarray(values, float)
    idx = list(range(len(tokens)))
    colors = ["#c0392b" if x > 0 else "#2c7fb8" if x < 0 else "#bdc3c7" for x in v]
    fig = go.Figure(go.Bar(x=idx, y=w, marker_color=colors, text=[f"{x:.2f}" for x in w], textposition="outside",
                           customdata=v, hovertemplate="%{text}<br>value %{customdata:+g}<extra></extra>"))
    fig.update_xaxes(tickvals=idx, ticktext=[esc(t) for t in tokens], tickangle=0, showgrid=False)
    fig.update_yaxes(title="attention weight (the weights sum to 1)", range=[0, 1.12])
    title = (f"Temperature {temperature:g}: weighted average of the values = {average:+.2f} "
             f"(red: value +1, blue: value -1, grey: 0)")
    style_figure(fig, title, 360)
    table = pd.DataFrame({"token": tokens, "weight": w, "value": v, "weight_x_value": w * v})
    return FigureOut("toy_attention", title, fig, table)


def permutation_figure(tests: dict[str, dict[str, Any]], uniform: dict[str, float] | None = None,
                       title: str = "How far the output moves when the attention weights are shuffled") -> FigureOut:
    """One box of output changes (TVD) per model over its random permutations of the attention weights
    (faithfulness.permutation_test); a diamond marks the change under uniform attention when given."""
    fig = go.Figure()
    rows = []
    for i, (name, t) in enumerate(tests.items()):
        d = np.asarray(t["tvds"], float)
        color = PALETTE[i % len(PALETTE)]
        fig.add_trace(go.Box(x=d, name=esc(name), boxpoints="all", jitter=0.4, pointpos=0,
                             marker=dict(color=color, size=5), line=dict(color=color),
                             hovertemplate="TVD %{x:.3f}<extra></extra>", showlegend=False))
        rows += [{"model": name, "permutation": k, "tvd": float(x)} for k, x in enumerate(d)]
    for i, (name, u) in enumerate((uniform or {}).items()):
        fig.add_trace(go.Scatter(x=[u], y=[esc(name)], mode="markers", name="uniform attention",
                                 marker=dict(symbol="diamond", size=14, color="black"), showlegend=i == 0,
                                 hovertemplate="uniform attention: TVD %{x:.3f}<extra></extra>"))
        rows.append({"model": name, "permutation": "uniform", "tvd": float(u)})
    fig.update_xaxes(title="output change (total variation distance: 0 = same probabilities, 1 = opposite)",
                     range=[-0.02, 1.02])
    fig.update_yaxes(automargin=True)
    style_figure(fig, title, int(160 + 70 * max(1, len(tests))), legend=dict(orientation="h", y=-0.35))
    return FigureOut("permutation_test", title, fig, pd.DataFrame(rows),
                     caption="Each dot is one random shuffle of the attention weights over the same words; the "
                             "box spans the middle half of the shuffles.")


def concentration_compare_figure(rows: Sequence[dict[str, Any]],
                                 title: str = "How peaked each checkpoint's attention is") -> FigureOut:
    """Grouped bars: per checkpoint (rows: name, accuracy, word_entropy, sentence_entropy) the median normalised
    entropy of its word and sentence attention (1 = uniform); the accuracy is in the checkpoint's label."""
    names = [f"{r['name']}<br>test acc. {100 * r['accuracy']:.1f} %" if r.get("accuracy") is not None
             else f"{r['name']}" for r in rows]
    names = [esc(n).replace("&lt;br&gt;", "<br>") for n in names]
    fig = go.Figure()
    for k, (key, label) in enumerate((("word_entropy", "words in a sentence"),
                                      ("sentence_entropy", "sentences in a review"))):
        y = [r.get(key) for r in rows]
        fig.add_trace(go.Bar(x=names, y=[np.nan if v is None else v for v in y], name=label,
                             marker_color=PALETTE[k + 1],
                             text=["—" if v is None else f"{v:.2f}" for v in y], textposition="outside"))
    fig.add_hline(y=1.0, line=dict(color="#7f8c8d", dash="dot"), annotation_text="uniform",
                  annotation_position="top right")
    fig.update_yaxes(title="normalised entropy (median)", range=[0, 1.15])
    fig.update_xaxes(tickangle=0, automargin=True)           # names stay level and whole (settings: the notes)
    style_figure(fig, title, 440, barmode="group", legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0))
    return FigureOut("attention_concentration", title, fig, pd.DataFrame(list(rows)),
                     caption="Normalised entropy: 1 = every word (sentence) weighs the same, 0 = all the weight on "
                             "one; the median over the reviews. '—': the model has no sentence level.")


__all__ = ["reasons_grid", "agreement_heatmap", "erasure_figure", "probability_shift", "activation_figure",
           "negation_figure", "branches_figure", "branch_rows_figure", "gate_profile_figure", "normalise_row",
           "toy_attention_figure", "permutation_figure", "concentration_compare_figure"]


# readable headers of a faithfulness-over-a-split report (interpret.batched.SliceReport), in the order shown
SLICE_COLUMNS = {
    "method": "method", "n": "texts",
    "naopc_comprehensiveness": "NAOPC comprehensiveness (0 worst - 1 best order; compares models)",
    "naopc_comprehensiveness_ci": "NAOPC comprehensiveness 95% CI",
    "naopc_sufficiency": "NAOPC sufficiency (0 worst - 1 best order)", "naopc_sufficiency_ci": "NAOPC sufficiency 95% CI",
    "aopc_comprehensiveness": "AOPC comprehensiveness (higher = faithful)",
    "aopc_comprehensiveness_ci": "comprehensiveness 95% CI",
    "aopc_sufficiency": "AOPC sufficiency (lower = faithful)", "aopc_sufficiency_ci": "sufficiency 95% CI",
    "kendall_tau_ref": "Kendall tau vs reference", "topk_overlap_ref": "top-k overlap vs reference",
    "erasure_top_flip": "top-k erasure flips", "erasure_random_flip": "random erasure flips",
    "erasure_fraction_to_flip": "fraction removed to flip", "erasure_random_fraction_to_flip":
    "random: fraction to flip", "ig_delta": "IG completeness gap", "ig_converged": "IG converged",
    "ig_steps": "IG steps", "infidelity": "infidelity", "sensitivity_max": "max sensitivity", "seconds": "seconds",
    "plausibility_auprc": "plausibility AUPRC", "plausibility_token_f1": "plausibility token F1",
    "plausibility_n": "texts with human evidence", "seconds_per_text": "seconds per text",
    "sanity_rho": "rank corr. after randomisation", "sanity_flag": "sanity flag"}
MODEL_TEST_COLUMNS = {"permutation_median_tvd": "permuted attention: median TVD of the output",
                      "permutation_flip_rate": "permuted attention: decisions flipped",
                      "uniform_tvd": "uniform attention: TVD of the output",
                      "uniform_flip_rate": "uniform attention: decisions flipped", "seconds": "seconds"}
MISSING = "—"                     # a metric that does not apply to a method (shown instead of "None")


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return MISSING
    if isinstance(v, (list, tuple)) and len(v) == 2:
        return f"[{float(v[0]):.3f}, {float(v[1]):.3f}]"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.3f}"
    return str(v)


def slice_report_tables(rows: Sequence[dict], model_row: dict, labels: dict[str, str] | None = None
                        ) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The per-method table and the attention-test row of a faithfulness report, ready to show: readable column
    names, each interval beside its mean, every cell text (a metric that does not apply reads "—"), methods by
    their readable names (`labels`)."""
    keys = [k for k in SLICE_COLUMNS if any(k in r for r in rows)]
    keys += [k for r in rows for k in r if k not in keys]
    shown = {**(labels or {}), "random": "Random ranking"}
    table = pd.DataFrame([{SLICE_COLUMNS.get(k, k.replace("_", " ")):
                           (shown.get(r.get(k), r.get(k)) if k == "method" else _cell(r.get(k))) for k in keys}
                          for r in rows])
    tests = None
    if model_row:
        tests = pd.DataFrame([{MODEL_TEST_COLUMNS.get(k, k.replace("_", " ")): _cell(v)
                               for k, v in model_row.items() if k != "attention_maps"}])
    return table, tests
