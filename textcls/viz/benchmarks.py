"""Benchmarks page figures from the plain dicts textcls.experiments produces: ACT Table 5, LAMA Fig. 4, model size
and speed, and accuracy next to the papers' figures."""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from textcls.viz.style import RUN_COLORS, FigureOut, esc, style_figure

OURS = RUN_COLORS[1]          # our measurement
PAPER = "#bbbbbb"             # the paper's figure: a neutral grey beside ours


def act_t5_figure(t5: dict[str, Any]) -> FigureOut:
    """ACT-T5: parameters and seconds per batch, ours (CPU) beside the paper's (GPU); `t5` as act_table5 returns."""
    names = [r["model"] for r in t5["rows"]]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("parameters (millions, without embeddings)",
                                                        f"seconds per batch of {t5['batch_size']}"))
    fig.add_trace(go.Bar(x=names, y=[r["parameters"] / 1e6 for r in t5["rows"]], name="ours",
                         marker_color=OURS, legendgroup="ours"), 1, 1)
    fig.add_trace(go.Bar(x=names, y=[r["parameters_paper"] / 1e6 for r in t5["rows"]], name="paper",
                         marker_color=PAPER, legendgroup="paper"), 1, 1)
    fig.add_trace(go.Bar(x=names, y=[r["seconds_per_batch"] for r in t5["rows"]], name="ours (CPU)",
                         marker_color=OURS, legendgroup="ours", showlegend=False), 1, 2)
    fig.add_trace(go.Bar(x=names, y=[r["seconds_per_batch_paper"] for r in t5["rows"]], name="paper (GPU)",
                         marker_color=PAPER, legendgroup="paper", showlegend=False), 1, 2)
    title = "ACT Table 5: ACT vs Transformer"
    style_figure(fig, title, 380, top=60, barmode="group", legend=dict(orientation="h", y=-0.15))
    table = pd.DataFrame([{"model": r["model"], "parameters": r["parameters"],
                           "parameters_paper": r["parameters_paper"], "seconds_per_batch": r["seconds_per_batch"],
                           "seconds_per_batch_paper": r["seconds_per_batch_paper"]} for r in t5["rows"]])
    cap = (f"Transformer / ACT: {t5['speed_ratio']:.2f}x slower here (paper {t5['speed_ratio_paper']:.1f}x), "
           f"{t5['parameter_ratio']:.2f}x the parameters (paper {t5['parameter_ratio_paper']:.2f}x). {t5['note']}.")
    return FigureOut("act-t5", title, fig, table, cap)


def lama_f4_figure(f4: dict[str, Any]) -> FigureOut:
    """LAMA-F4: attention-layer parameters vs heads (log scale); `f4` as lama_f4 returns."""
    series = [("lama", "LAMA (P, Q, c)", RUN_COLORS[0], "solid"),
              ("lama_with_mlp", "LAMA (+ W_w)", RUN_COLORS[0], "dot"),
              ("san", "SAN", RUN_COLORS[2], "solid"), ("transformer", "Transformer", RUN_COLORS[1], "solid")]
    fig = go.Figure()
    for key, name, color, dash in series:
        fig.add_trace(go.Scatter(x=f4["heads"], y=f4[key], name=name, mode="lines+markers",
                                 line=dict(color=color, dash=dash)))
    title = "LAMA Fig. 4: attention parameters vs heads"
    style_figure(fig, title, 400, top=60, xaxis_title="number of heads m", yaxis_title="attention-layer parameters",
                 yaxis_type="log", legend=dict(orientation="h", y=-0.3, yanchor="top"))
    table = pd.DataFrame({"heads": f4["heads"], **{name: f4[key] for key, name, _, _ in series}})
    return FigureOut("lama-f4", title, fig, table, f4["note"])


def models_figure(rows: Sequence[dict[str, Any]], *, batch_size: int, caption: str = "") -> FigureOut:
    """Parameters (without embeddings) and seconds per batch, per model; `rows` as experiments.bench.model_rows
    returns ("model", "params (no emb.)", "s / batch", ...)."""
    names = [r["model"] for r in rows]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("parameters without embeddings (millions)",
                                                        f"seconds per batch of {batch_size}"))
    fig.add_trace(go.Bar(x=names, y=[r["params (no emb.)"] / 1e6 for r in rows], marker_color=RUN_COLORS[6],
                         showlegend=False), 1, 1)
    fig.add_trace(go.Bar(x=names, y=[r["s / batch"] for r in rows], marker_color=OURS, showlegend=False), 1, 2)
    title = "Model size and inference speed (paper configurations, random weights)"
    style_figure(fig, title, 400, top=60)
    return FigureOut("bench-models", title, fig, pd.DataFrame(list(rows)), caption)


def accuracy_figure(rows: Sequence[dict[str, Any]], title: str = "Accuracy: ours vs the paper") -> FigureOut:
    """Grouped bars, one group per cell: ours (error bar = spread) and the paper's figure; `rows` as
    experiments.results.table_rows returns."""
    names = [esc(f"{r['setting']} / {r['data']}") for r in rows]
    err = [r["sd"] if r.get("sd") is not None else (r.get("se") or 0.0) for r in rows]
    # horizontal bars: one row per cell, so long "setting / data" names never overlap whatever their number
    fig = go.Figure()
    fig.add_trace(go.Bar(y=names, x=[r["ours"] for r in rows], name="ours", marker_color=OURS, orientation="h",
                         error_x=dict(type="data", array=err, visible=True)))
    fig.add_trace(go.Bar(y=names, x=[r["paper"] for r in rows], name="paper", marker_color=PAPER, orientation="h"))
    style_figure(fig, title, max(300, 110 + 34 * len(rows)), top=60, barmode="group", bargap=0.25,
                 xaxis_title="accuracy (%)", yaxis=dict(autorange="reversed", automargin=True),
                 legend=dict(orientation="h", x=1, xanchor="right", y=1.02, yanchor="bottom"))
    table = pd.DataFrame([{k: r[k] for k in ("key", "setting", "data", "ours", "sd", "se", "paper", "delta")}
                          for r in rows])
    return FigureOut("accuracy-" + "-".join(sorted({r["suite"] for r in rows}))[:60], title, fig, table,
                     "error bars: sd over runs, or the binomial s.e. of a single run")


def tradeoff_figure(rows: Sequence[dict[str, Any]], front: Sequence[str], title: str) -> FigureOut:
    """Test accuracy against milliseconds per sentence (log scale), one point per checkpoint (its area grows with
    its parameters; shipped round, the user's own diamonds), coloured by how faithful its own attention is over
    the test split (NAOPC comprehensiveness, which compares models; grey where it was not measured: raw AOPC
    does not compare across models), the Pareto front joined by a line."""
    fig = go.Figure()
    big = max((r.get("parameters") or 0 for r in rows), default=0) or 1

    def has(r):
        return bool(r.get("faith")) and r["faith"].get("naopc") is not None
    for who, symbol in (("shipped", "circle"), ("yours", "diamond")):
        part = [r for r in rows if r.get("from", "shipped") == who]
        for measured in (True, False):
            sub = [r for r in part if has(r) == measured]
            if not sub:
                continue
            marker = dict(size=[10 + 22 * ((r.get("parameters") or 0) / big) ** 0.5 for r in sub], symbol=symbol,
                          opacity=0.85, line=dict(width=1, color="#333"))
            if measured:
                marker.update(color=[r["faith"]["naopc"] for r in sub], colorscale="Viridis", cmin=0, cmax=1,
                              showscale=not any(t.marker.showscale for t in fig.data),
                              colorbar=dict(title=dict(text="own attention<br>NAOPC", side="top"), len=0.8))
            else:
                marker.update(color="#cccccc")
            fig.add_trace(go.Scatter(
                x=[r["ms"] for r in sub], y=[r["accuracy"] for r in sub], mode="markers+text",
                name=who + ("" if measured else " (faithfulness not measured)"), legendgroup=who,
                text=[esc(r["name"]) for r in sub], textposition="top center", textfont=dict(size=10), marker=marker,
                customdata=[[(r.get("parameters") or 0) / 1e6, _faith_text(r.get("faith"))] for r in sub],
                hovertemplate="%{text}<br>%{y:.1f} %<br>%{x:.2f} ms per sentence<br>%{customdata[0]:.2f} M "
                              "parameters<br>%{customdata[1]}<extra></extra>"))
    pts = sorted((r for r in rows if r["name"] in set(front)), key=lambda r: r["ms"])
    if len(pts) > 1:
        fig.add_trace(go.Scatter(x=[r["ms"] for r in pts], y=[r["accuracy"] for r in pts], mode="lines",
                                 name="Pareto front", line=dict(color="#555", dash="dash"), hoverinfo="skip"))
    style_figure(fig, title, 460, legend=dict(orientation="h", y=-0.2))
    fig.update_xaxes(title="ms per sentence (log scale; left = faster)", type="log")
    fig.update_yaxes(title="test accuracy (%)")
    table = pd.DataFrame([{"name": r["name"], "from": r.get("from"), "accuracy": r.get("accuracy"), "ms": r.get("ms"),
                           "parameters": r.get("parameters"),
                           "own attention NAOPC": (r.get("faith") or {}).get("naopc"),
                           "random NAOPC": (r.get("faith") or {}).get("random_naopc"),
                           "own attention AOPC": (r.get("faith") or {}).get("aopc"),
                           "random AOPC": (r.get("faith") or {}).get("random")} for r in rows])
    table["pareto"] = table["name"].isin(list(front))
    return FigureOut("tradeoff", title, fig, table, caption="Up and to the left is better; the dashed line joins the "
                     "checkpoints no other beats on both accuracy and speed (the Pareto front). Colour: how faithful each model's "
                     "own attention is over the whole test split - NAOPC comprehensiveness (Edin et al. 2025): the drop in the "
                     "predicted class's probability as its top-weighted words are deleted, placed between the worst (0) "
                     "and the best (1) word order of each text, so models compare (raw AOPC's range depends on the "
                     "model; it is in the table). A random ranking scores the floor, shown on hover.")


def explanation_tradeoff_figure(rows: Sequence[dict[str, Any]], labels: dict[str, str], title: str) -> FigureOut:
    """Which explanation to trust, and what it costs: each method's AOPC comprehensiveness over a test split
    (with its 95 % interval) against its seconds per text (log scale), one point per method of one checkpoint;
    colour = plausibility (agreement with SST's word labels, AUPRC; grey where not measured); a ring marks a
    method the randomisation check flagged; the random floor is a dotted line."""
    fig = go.Figure()
    norm = bool(rows) and all(r.get("naopc") is not None for r in rows)      # NAOPC where the run has it
    y, lo, hi = ("naopc", "naopc_lo", "naopc_hi") if norm else ("aopc", "lo", "hi")
    what = "NAOPC comprehensiveness" if norm else "AOPC comprehensiveness"
    floor = next((r for r in rows if r["method"] == "random"), None)
    pts = [r for r in rows if r["method"] != "random" and r.get("seconds_per_text")]
    plaus = [r["plausibility"] for r in pts if r.get("plausibility") is not None]
    lo_c, hi_c = (min(plaus), max(plaus)) if plaus else (0.0, 1.0)
    for measured in (True, False):
        sub = [r for r in pts if (r.get("plausibility") is not None) == measured]
        if not sub:
            continue
        marker = dict(size=16, line=dict(width=[4 if r.get("sanity_flag") else 1 for r in sub],
                                         color=["#d62728" if r.get("sanity_flag") else "#333" for r in sub]))
        if measured:
            marker.update(color=[r["plausibility"] for r in sub], colorscale="Viridis", cmin=lo_c, cmax=hi_c,
                          colorbar=dict(title=dict(text="plausibility<br>AUPRC", side="top"), len=0.8))
        else:
            marker.update(color="#cccccc")
        fig.add_trace(go.Scatter(
            x=[r["seconds_per_text"] for r in sub], y=[r[y] for r in sub], mode="markers+text",
            name="plausibility measured" if measured else "plausibility not measured",
            text=[esc(labels.get(r["method"], r["method"])) for r in sub], textposition=[_label_side(r, pts) for r in sub],
            textfont=dict(size=11), marker=marker,
            error_y=dict(type="data", symmetric=False, thickness=1,
                         array=[(r[hi] - r[y]) if r.get(hi) is not None else 0 for r in sub],
                         arrayminus=[(r[y] - r[lo]) if r.get(lo) is not None else 0 for r in sub]),
            customdata=[[r["n"], _num(r.get("sufficiency")), _num(r.get("plausibility")), _num(r.get("sanity_rho"))]
                        for r in sub],
            hovertemplate="%{text}<br>" + what + " %{y:.3f}<br>%{x:.3g} s per text<br>sufficiency "
                          "%{customdata[1]}<br>plausibility AUPRC %{customdata[2]}<br>rank corr. after "
                          "randomisation %{customdata[3]}<br>%{customdata[0]} texts<extra></extra>"))
    if floor is not None:
        fig.add_hline(y=floor[y], line=dict(color="#888", dash="dot"),
                      annotation_text=f"random ranking {floor[y]:.3f}", annotation_position="top left")
    style_figure(fig, title, 480, legend=dict(orientation="h", y=-0.22))
    fig.update_xaxes(title="seconds per text (log scale; left = cheaper)", type="log")
    fig.update_yaxes(title=(f"{what} (0 worst - 1 best order)" if norm else f"{what} (higher = more faithful)"))
    table = pd.DataFrame([{"method": labels.get(r["method"], r["method"]), "texts": r["n"],
                           "NAOPC comprehensiveness": r.get("naopc"), "NAOPC sufficiency": r.get("naopc_sufficiency"),
                           "AOPC comprehensiveness": r["aopc"], "95% CI": (r.get("lo"), r.get("hi")),
                           "AOPC sufficiency": r.get("sufficiency"), "plausibility AUPRC": r.get("plausibility"),
                           "rank corr. after randomisation": r.get("sanity_rho"),
                           "seconds per text": r.get("seconds_per_text")} for r in rows])
    return FigureOut("explanation_tradeoff", title, fig, table, caption=(
        ("NAOPC (Edin et al. 2025) places each text's AOPC between the worst and the best word order of that text, "
         "so it compares models; raw AOPC is in the table. " if norm else "Raw AOPC: its range depends on the model "
         "and the text, so compare methods within this chart, not across checkpoints (a run with NAOPC: "
         "`faithfulness --json`). ") +
        "Up and to the left is better: a faithful explanation (removing its top words lowers the predicted "
        "class's probability most) that costs little. Bars: 95 % bootstrap interval over the texts. Colour: "
        "how well the ranking finds the words people label with the text's sentiment. A red ring: the "
        "explanation barely changes when the model's weights are randomised (it explains the words, not the "
        "model). Seconds were measured on the machine and load the run had; compare within one chart."))


def shortcut_figure(rows: Sequence[dict[str, Any]], labels: dict[str, str], title: str) -> FigureOut:
    """The planted-shortcut test (textcls.interpret.shortcuts, docs/results_shortcuts/): per method (rows) and
    checkpoint (columns), the share of test texts whose planted token the method ranks first, as a heatmap with
    each cell's number and mean rank; the chance level (a random ranking) is said per checkpoint in the table."""
    models = list(dict.fromkeys(str(r.get("model") or r.get("checkpoint")) for r in rows))
    methods = list(dict.fromkeys(str(r["method"]) for r in rows))
    cell = {(str(r.get("model") or r.get("checkpoint")), str(r["method"])): r for r in rows}
    z = [[_num_or_none((cell.get((m, meth)) or {}).get("shortcut_top1")) for m in models] for meth in methods]
    text = [["" if (cell.get((m, meth)) is None) else
             f"{cell[(m, meth)]['shortcut_top1']:.2f}<br>rank {cell[(m, meth)]['shortcut_mean_rank']:.1f}"
             for m in models] for meth in methods]
    ylab = [esc(labels.get(meth, meth)) for meth in methods]
    fig = go.Figure(go.Heatmap(z=z, x=[esc(m) for m in models], y=ylab, zmin=0, zmax=1, colorscale="Viridis",
                               text=text, texttemplate="%{text}", textfont=dict(size=11),
                               colorbar=dict(title=dict(text="planted token<br>ranked first", side="top")),
                               hovertemplate="%{y} on %{x}: planted token first in %{z:.2f} of the texts"
                                             "<extra></extra>"))
    style_figure(fig, title, max(360, 34 * len(methods) + 140))
    fig.update_yaxes(autorange="reversed")
    table = pd.DataFrame([{"method": labels.get(meth, meth), "checkpoint": m,
                           "top-1 share": (cell.get((m, meth)) or {}).get("shortcut_top1"),
                           "mean rank": (cell.get((m, meth)) or {}).get("shortcut_mean_rank"),
                           "texts": (cell.get((m, meth)) or {}).get("n")}
                          for meth in methods for m in models if (m, meth) in cell])
    return FigureOut("planted_shortcut", title, fig, table, caption=(
        "The one faithfulness test whose answer is known (Bastings et al. 2022): a made-up word decides the label in "
        "a share of the training texts; after training, the model follows it (accuracy with the token near 1). An "
        "explanation of such a model should rank that word first on test texts that carry it. Each cell: the share "
        "of texts where the method does, and the planted word's mean rank (1 = first). Chance (a random ranking) "
        "is about 1 over the words per text."))


def shortcut_facts(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Per checkpoint of the planted-shortcut results: texts, words per text, the chance level, and whether the
    model learned the shortcut (accuracy with the token against without it)."""
    first: dict[str, dict[str, Any]] = {}
    for r in rows:
        first.setdefault(str(r.get("model") or r.get("checkpoint")), r)
    return pd.DataFrame([{"checkpoint": m, "texts": r.get("n"), "words per text": r.get("mean_words"),
                          "chance of ranking it first": r.get("chance_top1"),
                          "accuracy with the token": r.get("accuracy_with_token"),
                          "accuracy without it": r.get("accuracy_without_token"),
                          "learned the shortcut": "yes" if r.get("learned") else "NO"} for m, r in first.items()])


def _num_or_none(v):
    return None if v is None else float(v)


def _label_side(r: dict[str, Any], pts: Sequence[dict[str, Any]]) -> str:
    """Where a point's label goes: above it, or below it when an earlier point sits nearly on it (ACT's own
    attention and norm rank the words alike, so their points coincide)."""
    import math
    for o in pts:
        if o is r:
            return "top center"
        if abs(o["aopc"] - r["aopc"]) < 0.015 and abs(math.log10(o["seconds_per_text"])
                                                      - math.log10(r["seconds_per_text"])) < 0.3:
            return "bottom center"
    return "top center"


def _num(v) -> str:
    return "—" if v is None else f"{float(v):.3f}"


def _faith_text(f: dict[str, Any] | None) -> str:
    if not f:
        return "own attention: faithfulness not measured"
    ci = f" [{f['lo']:.3f}, {f['hi']:.3f}]" if f.get("lo") is not None else ""
    rnd = f", random {f['random']:.3f}" if f.get("random") is not None else ""
    norm = (f"own attention NAOPC {f['naopc']:.3f}" + (f" (random {f['random_naopc']:.3f})" if
            f.get("random_naopc") is not None else "") + "; ") if f.get("naopc") is not None else ""
    return f"{norm}own attention AOPC {f['aopc']:.3f}{ci}{rnd}"
