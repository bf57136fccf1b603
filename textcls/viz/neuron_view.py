"""The neuron view as bertviz draws it (Vig 2019, bertviz/neuron_view.js, its expanded mode), in Plotly so it works
offline and exports like every figure: the tokens on the left with the query highlighted, then the columns
Query q | Key k | q x k (elementwise) | q . k (the score the softmax reads) | Softmax, one row per key.

- q, k and q x k are colour strips, one cell per dimension: blue positive, orange negative (bertviz's colours), the
  strength tanh(2 |v| / the column's largest |v|) - bertviz's fixed tanh(|v| / 4) leaves LAMA's and ACT's small
  values white (hover: the value). A row of q x k sums to the q . k beside it.
- Lines: from q to each k, and across each key's row, with opacity tanh(1.8 w) of the key's weight w (bertviz's
  rule); the key's label on the right is highlighted with opacity w.
- Word pieces (Hugging Face) keep a row each; a bracket on the far right groups them under their word with the
  word's weight (the sum of its pieces'), so labels are never cut: columns are as wide as their longest label.
Built from a `textcls.interpret.neurons.NeuronView` (read, never imported: plain data); `neuron_figure(view,
head=0, row=0)` -> FigureOut whose table holds every number drawn (CSV/JSON export).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from textcls.viz.style import FONT, MONO, FigureOut, esc, model_title, safe_filename

POS, NEG, HIGHLIGHT, LINE = "#0c36d8", "#ff6318", "#478be8", "#1f4fd1"     # bertviz's light palette
ROW = 26                 # px per key row (bertviz BOXHEIGHT)
STRIP = 200              # px per vector strip (bertviz MATRIX_WIDTH)
GAP = 28                 # px between columns
CHAR = 7.6               # px per character of a 13 px label
MAX_KEYS = 60            # rows drawn at most; a longer text shows a window around the query
SCALE = [[0.0, NEG], [0.5, "#ffffff"], [1.0, POS]]
READING = ("Left to right: the query's vector q and each key's vector k (a cell per dimension: blue positive, "
           "orange negative); q × k multiplies them cell by cell and each of its rows sums to the q · k beside it; "
           "the softmax turns those scores into weights (line and highlight opacity).")


def _shade(v, ref: float | None = None) -> np.ndarray:
    """Colour strength on the -1..1 scale SCALE draws: sign(v) tanh(2 |v| / ref), ref = the largest |value| of
    the column (bertviz uses tanh(|v| / 4) whatever the model; a column of small values, LAMA's or ACT's, would
    be near white), -inf as the strongest negative."""
    v = np.asarray(v, dtype=float)
    finite = np.abs(v[np.isfinite(v)])
    ref = ref if ref is not None else (float(finite.max()) if finite.size and finite.max() > 0 else 1.0)
    v = np.nan_to_num(v, nan=0.0, posinf=ref, neginf=-ref)
    return np.sign(v) * np.tanh(2 * np.abs(v) / ref)


def _opacity(w: float) -> float:
    return float(math.tanh(abs(1.8 * w))) if np.isfinite(w) and w > 0 else 0.0


def _strip(fig, z, x0: float, rows, name: str, hover: str, ref: float, custom=None) -> None:
    """A colour strip of z (rows, d) from x0, STRIP px wide, at y = rows, shaded against `ref`."""
    z = np.asarray(z, dtype=float)
    d = z.shape[1]
    xs = x0 + (np.arange(d) + 0.5) * STRIP / d
    fig.add_trace(go.Heatmap(z=_shade(z, ref), x=xs, y=list(rows), customdata=z if custom is None else custom,
                             colorscale=SCALE, zmin=-1, zmax=1, showscale=False, xgap=0.3, ygap=5, name=name,
                             hovertemplate=hover + "<extra></extra>"))


def _score_title(view) -> str:
    """The score column's heading: what the model computes from q . k."""
    if view.transform != "none":
        return {"tanh": "tanh(q·k)", "l2_heads": "tanh(q·k)/‖·‖", "layernorm_heads": "LN(q·k)"}[view.transform]
    d = view.q.shape[-1]
    scaled = "q·k/√d" if abs(view.scale * math.sqrt(d) - 1) < 1e-6 else f"q·k×{view.scale:.3g}"
    finite = np.isfinite(view.bias)
    extra = bool(np.any(np.abs(np.where(finite, view.bias, 0)) > 0))
    return scaled + (" + c" if extra else "")


def _window(n: int, centre: int, size: int) -> tuple[int, int]:
    if n <= size:
        return 0, n
    lo = max(0, min(centre - size // 2, n - size))
    return lo, lo + size


def _word_groups(view, lo: int, hi: int) -> list[tuple[int, int, int]]:
    """(first row, last row, word) of each word's pieces within rows lo..hi."""
    out: list[tuple[int, int, int]] = []
    for j in range(lo, hi):
        w = view.key_words[j]
        if w < 0:
            continue
        if out and out[-1][2] == w and out[-1][1] == j - 1:
            out[-1] = (out[-1][0], j, w)
        else:
            out.append((j, j, w))
    return out


def neuron_figure(view, head: int = 0, row: int = 0, *, max_keys: int = MAX_KEYS, key: str | None = None
                  ) -> FigureOut:
    """One head (`head`: a position in view.heads) and one query row (`row`: a piece of the query word) of a
    NeuronView, drawn as bertviz's neuron view. ValueError for a head or row the view does not hold."""
    if not 0 <= head < len(view.heads):
        raise ValueError(f"head position {head}: the view holds {len(view.heads)} head(s)")
    if not 0 <= row < len(view.rows):
        raise ValueError(f"row {row}: the query has {len(view.rows)} row(s)")
    h = view.heads[head]
    q = np.asarray(view.q[head, row], dtype=float)                                    # (d,)
    k = np.asarray(view.k[head], dtype=float)                                         # (K, d)
    K, d = k.shape
    weights = np.asarray(view.weights[head, row], dtype=float)                        # (K,)
    scores = np.asarray(view.scores[head, row], dtype=float)
    dot = np.asarray(view.dot[head, row], dtype=float)
    bias = np.asarray(view.bias[head, row], dtype=float)
    keys = [str(x) for x in view.keys]
    qpos = view.row_keys[row] if view.row_keys[row] >= 0 else None                  # the query's own key row
    lo, hi = _window(K, qpos if qpos is not None else 0, max_keys)
    n = hi - lo
    ys = list(range(n))
    qy = (qpos - lo) if qpos is not None else (n - 1) / 2
    left = keys[lo:hi] if qpos is not None else [view.rows[row]]
    left_w = max(60.0, CHAR * max(len(x) for x in left))
    xq = left_w + GAP
    xk = xq + STRIP + 1.5 * GAP
    xp = xk + STRIP + GAP
    xd = xp + STRIP + GAP
    box = 64.0
    xr = xd + box + GAP
    right_w = max(90.0, CHAR * max(len(x) for x in keys[lo:hi]) + 16)
    xn = xr + right_w + 8                                                             # the weight's number
    pieces = view.key_kind == "piece"
    xw = xn + 58
    groups = _word_groups(view, lo, hi) if pieces else []
    word_w = (CHAR * max((len(view.words[w]) for _, _, w in groups), default=4) + 60) if pieces else 0
    width = int(xw + word_w + 10)
    fig = go.Figure()
    shapes = []
    # the left tokens (the query highlighted) and the query's vector
    if qpos is not None:
        shapes.append(dict(type="rect", x0=0, x1=left_w + 4, y0=qy - 0.45, y1=qy + 0.45, fillcolor="#e5e5e5",
                           line=dict(width=0), layer="below"))
    fig.add_trace(go.Scatter(x=[left_w - 4] * len(left), y=ys if qpos is not None else [qy], mode="text",
                             text=[esc(t) for t in left], textposition="middle left", cliponaxis=False,
                             textfont=dict(family=FONT, size=13, color="#202020"), hoverinfo="skip",
                             showlegend=False))
    ref = max(float(np.abs(q).max()), float(np.abs(k[lo:hi]).max()), 1e-12)          # q and k on one scale
    _strip(fig, q[None, :], xq, [qy], "q", "q = %{customdata:.4f}", ref)
    _strip(fig, k[lo:hi], xk, ys, "k", "k = %{customdata:.4f}", ref)
    prod = q[None, :] * k[lo:hi]                                                      # (n, d)
    _strip(fig, prod, xp, ys, "q x k", "q x k = %{customdata:.4f}", max(float(np.abs(prod).max()), 1e-12))
    # the score, coloured as bertviz colours its dot products, with its value written in
    text = [("-∞" if not np.isfinite(s) else f"{s:.2f}") for s in scores[lo:hi]]
    custom = np.stack([dot[lo:hi], bias[lo:hi], scores[lo:hi], weights[lo:hi]], -1)
    fig.add_trace(go.Heatmap(z=_shade(scores[lo:hi])[:, None], x0=xd + box / 2, dx=box, y=ys, colorscale=SCALE, zmin=-1,
                             zmax=1, showscale=False, ygap=5, text=[[t] for t in text], texttemplate="%{text}",
                             textfont=dict(family=MONO, size=11), customdata=custom[:, None, :],
                             hovertemplate="q·k = %{customdata[0]:.4f}<br>+ bias %{customdata[1]:.4f}<br>score = "
                                           "%{customdata[2]:.4f}<br>softmax = %{customdata[3]:.4f}<extra></extra>"))
    # the keys on the right, highlighted by their weight, and the weight itself
    for j in range(n):
        w = weights[lo + j]
        shapes.append(dict(type="rect", x0=xr, x1=xr + right_w, y0=j - 0.45, y1=j + 0.45, fillcolor=HIGHLIGHT,
                           opacity=float(np.clip(w, 0, 1)), line=dict(width=0), layer="below"))
    fig.add_trace(go.Scatter(x=[xr + 6] * n, y=ys, mode="text", text=[esc(t) for t in keys[lo:hi]],
                             textposition="middle right", cliponaxis=False, showlegend=False,
                             textfont=dict(family=FONT, size=13, color="#202020"),
                             customdata=weights[lo:hi], hovertemplate="%{text}: softmax %{customdata:.4f}"
                                                                      "<extra></extra>"))
    fig.add_trace(go.Scatter(x=[xn] * n, y=ys, mode="text", text=[f"{w:.3f}" for w in weights[lo:hi]],
                             textposition="middle right", cliponaxis=False, showlegend=False, hoverinfo="skip",
                             textfont=dict(family=MONO, size=11, color="#555")))
    # lines: q -> each k (elbows, as bertviz), then across each key's row; opacity tanh(1.8 w)
    mid = xq + STRIP + 0.75 * GAP
    for j in range(n):
        op = _opacity(weights[lo + j])
        if op < 0.01:
            continue
        shapes.append(dict(type="path", path=f"M {xq + STRIP + 1},{qy} L {mid},{qy} L {mid},{j} L {xk - 2},{j}",
                           line=dict(color=LINE, width=2), opacity=op))
        for a, b in ((xk + STRIP + 2, xp - 2), (xp + STRIP + 2, xd - 2), (xd + box + 2, xr - 2)):
            shapes.append(dict(type="line", x0=a, x1=b, y0=j, y1=j, line=dict(color=LINE, width=2), opacity=op))
    # word pieces grouped under their word, with the word's weight (the sum of its pieces')
    for a, b, w in groups:
        total = float(weights[[j for j in range(a, b + 1)]].sum())
        shapes.append(dict(type="path", path=f"M {xw},{a - lo - 0.4} L {xw + 6},{a - lo - 0.4} L {xw + 6},"
                                             f"{b - lo + 0.4} L {xw},{b - lo + 0.4}", line=dict(color="#888",
                                                                                               width=1.5)))
        fig.add_trace(go.Scatter(x=[xw + 12], y=[(a + b) / 2 - lo], mode="text", cliponaxis=False,
                                 text=[f"{esc(view.words[w])} <span style='color:#555'>{total:.3f}</span>"],
                                 textposition="middle right", showlegend=False, hoverinfo="skip",
                                 textfont=dict(family=FONT, size=13, color="#202020")))
    # column headings, as bertviz's
    heads = [(xq + STRIP / 2, "Query q"), (xk + STRIP / 2, "Key k"), (xp + STRIP / 2, "q × k (elementwise)"),
             (xd + box / 2, _score_title(view)), (xr + right_w / 2, "Softmax")]
    if pieces:
        heads.append((xw + word_w / 2, "word (sum)"))
    subs = [f"{d} dimensions", "one per key", "each row sums to q·k", "softmax input", "each key's weight",
            "its pieces' weights"][:len(heads)]
    for y, texts, size, colour in ((-1.25, [f"<b>{esc(t)}</b>" for _, t in heads], 13, "#202020"),
                                   (-0.75, [esc(t) for t in subs], 11, "#777")):
        fig.add_trace(go.Scatter(x=[x for x, _ in heads], y=[y] * len(heads), mode="text", cliponaxis=False,
                                 text=texts, textfont=dict(family=FONT, size=size, color=colour), hoverinfo="skip",
                                 showlegend=False))
    note = f" (keys {lo + 1}-{hi} of {K})" if (lo, hi) != (0, K) else ""
    piece = f", piece {row + 1} of {len(view.rows)}" if len(view.rows) > 1 else ""
    title = (f"Neuron view: {model_title(view.model)}, {view.site}, head {h + 1}, query “{view.rows[row]}”"
             f"{piece}{note}")
    top = 66
    fig.update_layout(
        title=dict(text=esc(title) + f"<br><sup>{esc(view.formula)}</sup>", x=0.01, font=dict(size=14)),
        width=width + 20, height=int(top + ROW * (n + 1.7) + 12), margin=dict(l=10, r=10, t=top, b=10),
        plot_bgcolor="white", paper_bgcolor="white", font=dict(family=FONT), shapes=shapes, showlegend=False,
        xaxis=dict(visible=False, range=[0, width], fixedrange=True),
        yaxis=dict(visible=False, range=[n - 0.5, -1.7], fixedrange=True))
    table = _table(view, head, row, lo, hi)
    name = key or safe_filename(f"neurons_{view.model}_{view.layer}_h{h}_q{view.query}")
    caption = READING + (f" Here the score is {_score_title(view)}, scale {view.scale:.3g}." if view.transform ==
                         "none" else f" Here the score is {_score_title(view)}: not a scaled q · k.")
    return FigureOut(name, title, fig, table, caption, meta={
        "site": view.site, "head": h, "query": view.query_label, "scale": view.scale, "formula": view.formula,
        "max_error": view.max_error})


def _table(view, head: int, row: int, lo: int, hi: int) -> pd.DataFrame:
    """Every number drawn, long form: one row per (key, dimension) with q, k, q x k, and per key q . k, the bias,
    the score, the softmax and the model's own weight."""
    q, k = np.asarray(view.q[head, row], float), np.asarray(view.k[head], float)
    recs = []
    for j in range(lo, hi):
        word = view.words[view.key_words[j]] if 0 <= view.key_words[j] < len(view.words) else ""
        per_key = dict(head=view.heads[head], query=view.rows[row], key_index=j, key=view.keys[j], word=word,
                       dot=float(view.dot[head, row, j]), bias=float(view.bias[head, row, j]),
                       score=float(view.scores[head, row, j]), softmax=float(view.weights[head, row, j]),
                       model=float(view.model_weights[head, row, j]))
        for i in range(k.shape[1]):
            recs.append({**per_key, "dim": i, "q": q[i], "k": k[j, i], "q_x_k": q[i] * k[j, i]})
    cols = ["head", "query", "key_index", "key", "word", "dim", "q", "k", "q_x_k", "dot", "bias", "score", "softmax",
            "model"]
    return pd.DataFrame(recs, columns=cols)


__all__ = ["READING", "neuron_figure"]
