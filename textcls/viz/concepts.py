"""Figures of the concept-level interpreters: TCAV per layer against its random runs (`tcav_figure`) and one
salience cluster's top tokens (`cluster_figure`); each a FigureOut with the numbers it draws."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from textcls.viz.style import FigureOut

def tcav_figure(r, label: str) -> FigureOut:
    """A TcavResult (textcls.interpret.tcav) for one class: per layer the concept's mean score over its runs and the random runs' mean (bars with their
    standard deviations), "not significant" over the layers where p > 0.05."""
    rows = [x for x in r.rows if x.label == label]
    layers = [x.layer for x in rows]
    fig = go.Figure([
        go.Bar(name=f"concept ({r.runs} runs)", x=layers, y=[x.score_mean for x in rows],
               error_y=dict(type="data", array=[x.score_std or 0 for x in rows])),
        go.Bar(name=f"random ({r.runs} runs)", x=layers, y=[x.random_mean for x in rows],
               error_y=dict(type="data", array=[x.random_std or 0 for x in rows]), marker_color="#b0b0b0")])
    for x in rows:
        text = "not significant" if not x.significant else f"p = {x.p_value:.3g}"
        fig.add_annotation(x=x.layer, y=1.08, text=text, showarrow=False, font=dict(size=11))
    fig.update_layout(barmode="group", yaxis=dict(title="TCAV score", range=[0, 1.15]), height=360,
                      title=f"Concept vs random: class {label}", margin=dict(t=60, b=40))
    table = pd.DataFrame([{"layer": x.layer, "concept": x.score_mean, "random": x.random_mean, "p": x.p_value,
                           "significant": x.significant} for x in rows])
    return FigureOut(f"tcav_{label}", f"TCAV: class {label}", fig, table,
                         "TCAV score: the share of the split's texts predicted as the class whose logit grows "
                         "along the concept's direction at that layer; random: the same with a direction between "
                         "two random samples of the split.")

def cluster_figure(r, c) -> FigureOut:
    """One cluster `c` of a salience-clustering result `r` (textcls.interpret.salience_clusters): its top tokens: their mean (normalised) salience over its texts, signed."""
    toks = list(c.top_tokens)[::-1]
    fig = go.Figure(go.Bar(x=[v for _, v in toks], y=[t for t, _ in toks], orientation="h",
                           marker_color=["#2a9d8f" if v >= 0 else "#e76f51" for _, v in toks]))
    fig.update_layout(height=80 + 22 * len(toks), margin=dict(t=40, b=30, l=10, r=10),
                      title=f"Cluster {c.id}: top tokens ({r.method})", xaxis_title="mean salience")
    table = pd.DataFrame([{"token": t, "value": v} for t, v in c.top_tokens])
    return FigureOut(f"clusters_{c.id}", f"Cluster {c.id}", fig, table)
