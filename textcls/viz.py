"""Pure Plotly figure builders for the dashboard (no Streamlit here; every function is testable headless).

Three layers:
1. generic builders that label themselves from a MapSpec: `axis_labels`, `heatmap` (+ `heatmap_table` for
   the same numbers as a table), `token_highlight` (words shaded by weight, ACT Table 4 style) and its
   HTML twin `token_highlight_html`, `attention_grid` (all layers x heads, the bertviz "model view");
2. `token_weights(model, specs, maps, ...)`: one weight per token for any model, so several models' *reasons*
   can be shown one above the other (ACT-T4: Transformer above ACT);
3. a registry of paper views (`register_view`, `views_for`): each view declares the maps it needs and the
   controls it takes (layer, head, word, ...) and returns `FigureOut`s (figure + its numbers as a table).
   A model without a dedicated view still gets `generic` (one heatmap per map in map_specs()).

Safety: every string that comes from user text (tokens, sentences) is HTML-escaped before it reaches a
figure - Plotly renders tick labels, annotations and hover labels as a subset of HTML.
Long inputs: token axes are paged (a window of at most `MAX_TOKENS` tokens, the caller passes `window`) or
binned (`aggregate=True`); no figure is ever built with thousands of cells per axis.
"""
from __future__ import annotations

import functools
import html
import io
import json
import math
import os
import re
import shutil
import threading
import unicodedata
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

if TYPE_CHECKING:  # outputs imports torch; this module needs MapSpec only for annotations and two views
    from .outputs import MapSpec


def __getattr__(name: str):
    if name == "MapSpec":  # `viz.MapSpec` still works, importing torch only when it is used (PEP 562)
        from .outputs import MapSpec
        return MapSpec
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

MAX_TOKENS = 200          # most tokens on one heatmap axis before paging / binning
MAX_GRID_TOKENS = 60      # tokens per axis in each cell of the layer x head grid
MAX_HIGHLIGHT_TOKENS = 400
FONT = "Inter, Helvetica, Arial, sans-serif"
MONO = "DejaVu Sans Mono, Menlo, Consolas, Courier New, monospace"
PAD_LABEL = "<pad>"

AXIS_TITLES = {
    "token": "token", "query_token": "query token", "key_token": "key token",
    "sentence": "sentence", "query_sentence": "query sentence", "key_sentence": "key sentence",
    "word": "word", "query_word": "query word", "key_word": "key word",
    "head": "head", "layer": "layer", "filter": "filter", "channel": "channel", "gate": "gate",
    "window": "window", "feature": "feature dimension",
}
_PREFIX = {"head": "head ", "layer": "layer ", "filter": "f", "channel": "ch", "gate": "gate ",
           "window": "w", "feature": "d"}


def esc(text: Any) -> str:
    """HTML-escape anything shown in a figure (Plotly renders labels as HTML; entities are decoded back)."""
    return html.escape(str(text), quote=True)


def is_token_axis(axis: str) -> bool:
    return axis.endswith("token")


def is_word_axis(axis: str) -> bool:
    return axis.endswith("word")


def is_sentence_axis(axis: str) -> bool:
    return axis.endswith("sentence")


def is_sequence_axis(axis: str) -> bool:
    return is_token_axis(axis) or is_word_axis(axis) or is_sentence_axis(axis)


def short(text: str, n: int = 24) -> str:
    text = str(text)
    return text if len(text) <= n else text[: n - 1] + "…"


def axis_labels(axis: str, n: int, tokens: Sequence[str] | None = None, *,
                sentences: Sequence[Sequence[str]] | None = None, sentence_index: int | None = None) -> list[str]:
    """Human labels (unescaped) for the n positions of an axis.

    token axes -> the tokens (positions past the text are "<pad>"); word axes -> the words of sentence
    `sentence_index`; sentence axes -> "S1: first words..."; head/layer/filter/... -> "head 1", "f1", ...
    """
    if is_token_axis(axis) and tokens is not None:
        return [str(tokens[i]) if i < len(tokens) else PAD_LABEL for i in range(n)]
    if is_word_axis(axis) and sentences is not None and sentence_index is not None \
            and 0 <= sentence_index < len(sentences):
        words = sentences[sentence_index]
        return [str(words[i]) if i < len(words) else PAD_LABEL for i in range(n)]
    if is_sentence_axis(axis):
        out = []
        for i in range(n):
            if sentences is not None and i < len(sentences):
                out.append(f"S{i + 1}: {short(' '.join(map(str, sentences[i][:4])), 22)}")
            else:
                out.append(f"S{i + 1}" if sentences is None else f"S{i + 1} {PAD_LABEL}")
        return out
    prefix = _PREFIX.get(axis, f"{axis} ")
    return [f"{prefix}{i + 1}" for i in range(n)]


# ---------------------------------------------------------------- figure + numbers

@dataclass
class FigureOut:
    """One figure a view produced, with the numbers it draws (for CSV/JSON export)."""

    key: str                      # stable id, used in file names: "tr-att_layer1_head2"
    title: str
    fig: go.Figure
    table: pd.DataFrame           # long form: one column per axis label (+ its index) and "value"
    caption: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    html: str | None = None       # escaped HTML to show on screen instead of `fig` (shaded words wrap to any
                                  # width); `fig` is still what PNG/SVG exports render

    def csv(self) -> str:
        return self.table.to_csv(index=False)

    def json(self) -> str:
        return json.dumps({"title": self.title, "caption": self.caption, "meta": self.meta,
                           "rows": json.loads(self.table.to_json(orient="records"))}, ensure_ascii=False,
                          indent=1)


def safe_filename(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:80] or "figure"


# ---------------------------------------------------------------- slicing a map to 2-D

@dataclass
class Slice2D:
    z: np.ndarray                 # (rows, cols) float
    row_axis: str
    col_axis: str
    row_labels: list[str]         # unescaped
    col_labels: list[str]
    row_index: list[int]          # original positions (first position of a bin)
    col_index: list[int]
    fixed: dict[str, int]         # axis -> index fixed to get 2-D
    fixed_labels: dict[str, str]
    note: str = ""                # "tokens 1-200 of 2000" etc.


def _window(n: int, window: tuple[int, int] | None, max_tokens: int) -> tuple[int, int]:
    if window is None:
        return 0, min(n, max_tokens)
    start, size = int(window[0]), int(window[1])
    size = max(1, min(size, max_tokens))
    start = max(0, min(start, max(0, n - 1)))
    return start, min(n, start + size)


def _bins(n: int, max_bins: int) -> list[tuple[int, int]]:
    size = math.ceil(n / max_bins)
    return [(s, min(n, s + size)) for s in range(0, n, size)]


def slice_map(map_array: Any, spec: MapSpec, tokens: Sequence[str] | None = None, *,
              sentences: Sequence[Sequence[str]] | None = None, index: dict[str, int] | None = None,
              window: tuple[int, int] | None = None, max_tokens: int = MAX_TOKENS,
              aggregate: bool = False) -> Slice2D:
    """Reduce a map (sizes of spec.axes, no batch axis) to the 2-D slice a heatmap draws.

    Axes other than the last two are fixed by `index` (default 0). A 1-D map becomes one row. A token
    axis is cropped to the text's length, then paged by `window=(start, size)` or, with `aggregate`,
    averaged over equal bins so it has at most `max_tokens` columns.
    """
    arr = np.asarray(map_array)
    if arr.ndim != len(spec.axes):
        raise ValueError(f"map {spec.name!r} has {arr.ndim} axes {arr.shape}, its spec says {spec.axes}")
    if arr.size == 0:
        raise ValueError(f"map {spec.name!r} is empty (shape {arr.shape}): the text has no tokens")
    arr = arr.astype(float, copy=False)
    index = dict(index or {})
    axes = list(spec.axes)
    fixed: dict[str, int] = {}
    # fix leading axes
    while arr.ndim > 2:
        axis = axes[0]
        i = int(index.get(axis, 0))
        if not 0 <= i < arr.shape[0]:
            raise ValueError(f"{axis} index {i} out of range 0..{arr.shape[0] - 1} for map {spec.name!r}")
        fixed[axis] = i
        arr = arr[i]
        axes.pop(0)
    if arr.ndim == 0:
        arr, axes = arr.reshape(1, 1), ["value", "value"]
    elif arr.ndim == 1:
        arr, axes = arr[None, :], ["", axes[0]]
    elif is_sequence_axis(axes[0]) and not is_sequence_axis(axes[1]):
        arr, axes = arr.T, [axes[1], axes[0]]  # sequence positions run along x, as the papers draw them
    sentence_index = fixed.get("sentence")

    def labels_for(axis: str, n: int) -> list[str]:
        if axis == "":
            return [spec.name]
        if axis == "value":
            return ["value"]
        return axis_labels(axis, n, tokens, sentences=sentences, sentence_index=sentence_index)

    notes = []
    positions: list[list[int]] = []
    labels: list[list[str]] = []
    bins_per_axis: list[list[tuple[int, int]] | None] = []
    for dim, axis in enumerate(axes):
        n = arr.shape[dim]
        lab = labels_for(axis, n)
        # crop sequence axes to the real text (maps may be padded to the batch's length)
        real = n
        if is_token_axis(axis) and tokens is not None:
            real = max(1, min(n, len(tokens)))
        elif is_word_axis(axis) and sentences is not None and sentence_index is not None \
                and sentence_index < len(sentences):
            real = max(1, min(n, len(sentences[sentence_index])))
        elif is_sentence_axis(axis) and sentences is not None:
            real = max(1, min(n, len(sentences)))
        if is_sequence_axis(axis) and real > max_tokens and aggregate:
            bins = _bins(real, max_bins=max_tokens)
            bins_per_axis.append(bins)
            positions.append([a for a, _ in bins])
            labels.append([f"{a + 1}-{b}: {short(lab[a], 12)}" for a, b in bins])
            notes.append(f"{AXIS_TITLES.get(axis, axis)}s averaged in bins of {bins[0][1] - bins[0][0]} "
                         f"({real} in all)")
            continue
        lo, hi = (0, real)
        if is_sequence_axis(axis) and (real > max_tokens or window is not None):
            lo, hi = _window(real, window, max_tokens)
            if (lo, hi) != (0, real):
                notes.append(f"{AXIS_TITLES.get(axis, axis)}s {lo + 1}-{hi} of {real}")
        bins_per_axis.append([(i, i + 1) for i in range(lo, hi)])
        positions.append(list(range(lo, hi)))
        labels.append(lab[lo:hi])
    # apply bins/windows (mean over each bin)
    rows = np.stack([arr[a:b].mean(axis=0) for a, b in bins_per_axis[0]], axis=0)
    z = np.stack([rows[:, a:b].mean(axis=1) for a, b in bins_per_axis[1]], axis=1)
    fixed_labels = {a: axis_labels(a, i + 1, tokens, sentences=sentences)[i] for a, i in fixed.items()}
    return Slice2D(z=z, row_axis=axes[0], col_axis=axes[1], row_labels=labels[0], col_labels=labels[1],
                   row_index=positions[0], col_index=positions[1], fixed=fixed, fixed_labels=fixed_labels,
                   note="; ".join(dict.fromkeys(notes)))


def _colors(spec: MapSpec, z: np.ndarray) -> dict[str, Any]:
    finite = z[np.isfinite(z)]
    lo = float(finite.min()) if finite.size else 0.0
    hi = float(finite.max()) if finite.size else 1.0
    if spec.values == "index":
        return dict(colorscale="Greys", zmin=lo, zmax=hi)
    if lo < 0 < hi or spec.values == "score":
        m = max(abs(lo), abs(hi), 1e-12)
        return dict(colorscale="RdBu", reversescale=True, zmin=-m, zmax=m)
    if spec.kind == "attention":
        return dict(colorscale="Blues", zmin=0.0, zmax=max(hi, 1e-12))
    if spec.kind == "gate":
        return dict(colorscale="Viridis", zmin=min(lo, 0.0), zmax=max(hi, 1e-12))
    return dict(colorscale="Reds" if lo >= 0 else "Blues_r", zmin=min(lo, 0.0) if lo >= 0 else lo,
                zmax=max(hi, 1e-12) if lo >= 0 else 0.0)


def _ticks(labels: list[str], max_ticks: int = 60) -> tuple[list[int], list[str]]:
    step = max(1, math.ceil(len(labels) / max_ticks))
    vals = list(range(0, len(labels), step))
    return vals, [esc(short(labels[i], 18)) for i in vals]


def _axis_title(axis: str) -> str:
    return AXIS_TITLES.get(axis, axis) if axis not in ("", "value") else ""


def heatmap(map_array: Any, spec: MapSpec, tokens: Sequence[str] | None = None, *,
            sentences: Sequence[Sequence[str]] | None = None, index: dict[str, int] | None = None,
            window: tuple[int, int] | None = None, max_tokens: int = MAX_TOKENS, aggregate: bool = False,
            title: str | None = None, marks: Sequence[tuple[int, int, str]] | None = None,
            show_values: bool | None = None, height: int | None = None) -> go.Figure:
    """A heatmap of one map (no batch axis), every axis labelled from spec.axes, exact values on hover.

    `marks`: (row position, column position, hover text) in the map's own coordinates (e.g. the max-pool
    argmax of each filter), drawn as small markers on the cells.
    """
    s = slice_map(map_array, spec, tokens, sentences=sentences, index=index, window=window,
                  max_tokens=max_tokens, aggregate=aggregate)
    return _heatmap_from_slice(s, spec, title=title, marks=marks, show_values=show_values, height=height)


def _heatmap_from_slice(s: Slice2D, spec: MapSpec, *, title: str | None = None,
                        marks: Sequence[tuple[int, int, str]] | None = None, show_values: bool | None = None,
                        height: int | None = None, colors: dict | None = None,
                        cell_tokens: Sequence[str] | None = None) -> go.Figure:
    """`cell_tokens`: for maps whose values are token positions (values="index"), each cell shows and
    hovers the token at its position."""
    nr, nc = s.z.shape
    rl = [esc(x) for x in s.row_labels]
    cl = [esc(x) for x in s.col_labels]
    custom = np.empty((nr, nc, 3), dtype=object)
    for i in range(nr):
        custom[i, :, 0] = rl[i]
    for j in range(nc):
        custom[:, j, 1] = cl[j]
    tok_of = None
    if cell_tokens is not None and spec.values == "index":
        def tok_of(v: float) -> str:
            j = int(round(v))
            return esc(cell_tokens[j]) if 0 <= j < len(cell_tokens) else "?"
        for i in range(nr):
            for j in range(nc):
                custom[i, j, 2] = tok_of(s.z[i, j])
    ry, rx = _axis_title(s.row_axis) or "row", _axis_title(s.col_axis) or "column"
    hover = f"{esc(ry)}: %{{customdata[0]}}<br>{esc(rx)}: %{{customdata[1]}}<br>value: %{{z:.6g}}"
    hover += "<br>token there: %{customdata[2]}<extra></extra>" if tok_of else "<extra></extra>"
    col = colors or _colors(spec, s.z)
    if show_values is None:
        show_values = nr * nc <= 150 and not marks       # numbers would sit under the markers
    trace = go.Heatmap(z=s.z, x=list(range(nc)), y=list(range(nr)), customdata=custom, hovertemplate=hover,
                       colorbar=dict(thickness=12, len=0.9), **col)
    if tok_of is not None and nr * nc <= 400:
        trace.update(text=[[f"{int(round(v))}: {tok_of(v)}" for v in row] for row in s.z], texttemplate="%{text}",
                     textfont=dict(size=9))
    elif show_values:
        trace.update(text=[[f"{v:.2f}" for v in row] for row in s.z], texttemplate="%{text}",
                     textfont=dict(size=9))
    fig = go.Figure(trace)
    if marks:
        row_pos = {p: k for k, p in enumerate(s.row_index)}
        col_pos = {p: k for k, p in enumerate(s.col_index)}
        xs, ys, texts = [], [], []
        for r, c, t in marks:
            if r in row_pos and c in col_pos:
                xs.append(col_pos[c]); ys.append(row_pos[r]); texts.append(esc(t))
        if xs:
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", hovertext=texts, hoverinfo="text",
                                     marker=dict(symbol="circle-open", size=9, color="black", line_width=2),
                                     name="max-pool pick", showlegend=False))
    tv_x, tt_x = _ticks(s.col_labels)
    tv_y, tt_y = _ticks(s.row_labels, max_ticks=40)
    heading = esc(title if title is not None else spec.name)
    extra = [f"{esc(_axis_title(a))} {esc(v)}" if not v.startswith(a) else esc(v)
             for a, v in s.fixed_labels.items()]
    if extra:
        heading += " — " + ", ".join(extra)
    if s.note:
        heading += f"<br><sup>{esc(s.note)}</sup>"
    tokens_on_x = is_sequence_axis(s.col_axis)
    fig.update_layout(
        title=dict(text=heading, x=0.01, font=dict(size=14)), font=dict(family=FONT, size=12),
        margin=dict(l=10, r=10, t=60 if s.note else 45, b=10), plot_bgcolor="white",
        height=height or int(min(900, max(220, 110 + 22 * nr + (60 if tokens_on_x else 0)))),
        xaxis=dict(automargin=True, title=rx if s.col_axis not in ("", "value") else None, tickmode="array",
                   tickvals=tv_x, ticktext=tt_x, tickangle=-45 if tokens_on_x else 0, showgrid=False, side="bottom"),
        yaxis=dict(automargin=True, title=ry if s.row_axis not in ("", "value") else None, tickmode="array",
                   tickvals=tv_y, ticktext=tt_y, autorange="reversed", showgrid=False),
    )
    return fig


def heatmap_from_slice(s: Slice2D, spec: MapSpec, **kw) -> go.Figure:
    """A heatmap of a prepared (possibly relabelled) Slice2D; keywords as `heatmap` (title, marks, colors...)."""
    return _heatmap_from_slice(s, spec, **kw)


def slice_table(s: Slice2D) -> pd.DataFrame:
    """The numbers of a 2-D slice in long form, with the original positions of each cell."""
    nr, nc = s.z.shape
    rows = []
    ra = s.row_axis or "row"
    ca = s.col_axis or "column"
    for i in range(nr):
        for j in range(nc):
            rec = {f"{a}_index": v for a, v in s.fixed.items()}
            rec.update({f"{ra}_index": s.row_index[i], ra: s.row_labels[i],
                        f"{ca}_index": s.col_index[j], ca: s.col_labels[j], "value": float(s.z[i, j])})
            rows.append(rec)
    return pd.DataFrame(rows)


def heatmap_table(map_array: Any, spec: MapSpec, tokens: Sequence[str] | None = None, **kw) -> pd.DataFrame:
    """The numbers `heatmap` would draw with the same arguments, in long form."""
    kw = {k: v for k, v in kw.items() if k in ("sentences", "index", "window", "max_tokens", "aggregate")}
    return slice_table(slice_map(map_array, spec, tokens, **kw))


def heatmap_item(key: str, map_array: Any, spec: MapSpec, tokens: Sequence[str] | None = None, *,
                 caption: str = "", **kw) -> FigureOut:
    """`heatmap` plus its numbers, ready for display and export."""
    skw = {k: kw.pop(k) for k in list(kw) if k in ("sentences", "index", "window", "max_tokens", "aggregate")}
    s = slice_map(map_array, spec, tokens, **skw)
    fig = _heatmap_from_slice(s, spec, **kw)
    return FigureOut(key, kw.get("title") or spec.name, fig, slice_table(s),
                     caption or spec.description, meta={"map": spec.name, "axes": list(spec.axes),
                                                        "kind": spec.kind, "fixed": s.fixed, "note": s.note})


# ---------------------------------------------------------------- words shaded by weight

def _char_width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text) or 1


UNIFORM_DARKEST = 4.0   # a token with this many times its uniform share (1/n) of the weight is darkest
SHADE_NOTE = ("Shading: white = at most a uniform share of the weight (1/n), darkest = 4x that share or "
              "more. Exact weights on hover.")


def _shade(weights: np.ndarray, stretch: bool = False) -> tuple[np.ndarray, str]:
    """Shade in [0, 1] per token (or [-1, 1] for signed weights) and the colour scale to use.

    Non-negative weights are read as shares of the row's total: a token at or below its uniform share 1/n is
    white; shading grows with log(share x n) and is darkest at UNIFORM_DARKEST x the uniform share, or at the
    row's maximum when that is larger. So a flat, uninformative distribution stays pale instead of being
    stretched to full contrast, and rows of different models are comparable. `stretch=True` maps the row's
    minimum to white and its maximum to darkest instead (to see small differences). Signed weights
    (attributions): w / max|w| on a diverging scale.
    """
    w = np.nan_to_num(np.asarray(weights, dtype=float))
    if stretch and w.size and w.min() >= 0:
        lo, hi = float(w.min()), float(w.max())
        return (w - lo) / (hi - lo) if hi > lo else np.zeros_like(w), "Reds"
    if w.size and w.min() < 0:
        m = max(float(np.abs(w).max()), 1e-12)
        return w / m, "RdBu_r"
    total = float(w.sum())
    if w.size == 0 or total <= 0:
        return np.zeros_like(w), "Reds"
    ratio = np.maximum(w / total * w.size, 1e-12)
    top = max(float(ratio.max()), UNIFORM_DARKEST)
    return np.clip(np.log(ratio) / np.log(top), 0.0, 1.0), "Reds"


@functools.lru_cache(maxsize=8)
def _lut(scale: str) -> tuple[str, ...]:
    """101 colours of a Plotly colour scale (looking a scale up by name is slow; do it once)."""
    return tuple(sample_colorscale(scale, [i / 100 for i in range(101)]))


def _bg(t: float, scale: str) -> tuple[str, str]:
    """Background and text colour for a normalised shade."""
    if scale == "RdBu_r":
        c = _lut("RdBu_r")[int(round((t + 1) / 2 * 100))]
        dark = abs(t) > 0.6
    else:
        c = _lut("Reds")[int(round(0.85 * t * 100))]
        dark = t > 0.55
    return c, ("white" if dark else "#111")


_HTML_ENTITIES = str.maketrans({c: f"&#{ord(c)};" for c in "&<>\"'*_$[]`~:#|\\{}+-!()"})


def esc_html(text: Any) -> str:
    """HTML-escape, and turn markdown/LaTeX/directive characters into entities too (one pass, so entities are
    never escaped twice): the fragment means the same in any renderer (st.html, st.markdown, a notebook)."""
    return str(text).translate(_HTML_ENTITIES)


def _highlight_row(label: str, tokens: Sequence[str], weights: Sequence[float], window: tuple[int, int] | None,
                   max_tokens: int) -> tuple[list[str], np.ndarray, int, int]:
    """One highlight row checked and cut: (tokens as str, one weight per token, shown range lo..hi)."""
    tokens = [str(t) for t in tokens]
    w = np.asarray(weights, dtype=float)
    if w.shape[0] < len(tokens):
        raise ValueError(f"{len(tokens)} tokens but {w.shape[0]} weights for row {label!r}")
    lo, hi = _window(len(tokens), window, max_tokens)
    return tokens, w[: len(tokens)], lo, hi


def token_highlight_html(tokens: Sequence[str], weights: Sequence[float], *, label: str | None = None,
                         window: tuple[int, int] | None = None, max_tokens: int = MAX_HIGHLIGHT_TOKENS,
                         stretch: bool = False) -> str:
    """The same shading as `token_highlight` as an HTML fragment; every token (and the label) is escaped.
    The words wrap to any width; the exact weight is in each word's tooltip."""
    return token_rows_html([(label or "", tokens, weights)], window=window, max_tokens=max_tokens, stretch=stretch)


def token_rows_html(rows: Sequence[tuple[str, Sequence[str], Sequence[float]]], *, title: str = "",
                    window: tuple[int, int] | None = None, max_tokens: int = MAX_HIGHLIGHT_TOKENS,
                    stretch: bool = False) -> str:
    """`token_highlight_rows` as HTML (escaped): for on-screen display at any width."""
    parts = ['<div style="font-family:sans-serif">']
    if title:
        parts.append(f'<div style="font-size:15px;margin:2px 0 6px 0;color:#333">{esc_html(title)}</div>')
    for label, tokens, weights in rows:
        tokens, w, lo, hi = _highlight_row(label, tokens, weights, window, max_tokens)
        shade, scale = _shade(w, stretch)
        if label:
            parts.append(f'<div style="font-weight:600;font-size:13px;margin:8px 0 2px 0">{esc_html(label)}</div>')
        parts.append('<div style="line-height:2.1;font-size:15px;font-family:monospace">')
        for i in range(lo, hi):
            bg, fg = _bg(float(shade[i]), scale)
            t = esc_html(tokens[i]) or "&nbsp;"
            parts.append(f'<span title="{t}: {w[i]:.6g}" style="background:{bg};color:{fg};'
                         f'padding:2px 3px;margin:0 1px;border-radius:3px;white-space:pre">{t}</span> ')
        if hi <= lo:
            parts.append('<span style="color:#888">(no tokens)</span>')
        elif (lo, hi) != (0, len(tokens)):
            parts.append(f'<span style="color:#888"> (tokens {lo + 1}-{hi} of {len(tokens)})</span>')
        parts.append("</div>")
    parts.append("</div>")
    return "".join(parts)


def token_highlight(tokens: Sequence[str], weights: Sequence[float], *, title: str = "",
                    label: str | None = None, window: tuple[int, int] | None = None,
                    max_tokens: int = MAX_HIGHLIGHT_TOKENS, chars_per_line: int = 90,
                    stretch: bool = False) -> go.Figure:
    """Words of one text shaded by weight (ACT Table 4 style), as an exportable figure."""
    return token_highlight_rows([(label or "", tokens, weights)], title=title, window=window,
                                max_tokens=max_tokens, chars_per_line=chars_per_line, stretch=stretch)


def token_highlight_rows(rows: Sequence[tuple[str, Sequence[str], Sequence[float]]], *, title: str = "",
                         window: tuple[int, int] | None = None, max_tokens: int = MAX_HIGHLIGHT_TOKENS,
                         chars_per_line: int = 90, stretch: bool = False) -> go.Figure:
    """Several shaded texts one above the other, each with its label (ACT-T4: Transformer above ACT).

    Each row is (label, tokens, weights), shaded by `_shade` (white = no more than a uniform share,
    darkest = 4x the uniform share or more). Words are laid out in a monospace grid of `chars_per_line`
    characters, wrapped; the figure has a fixed width so the layout is the same on screen and in PNG/SVG
    exports. Exact weights are on hover.
    """
    char_px, line_px, font_px = 9.0, 26, 15
    width = int(chars_per_line * char_px + 40)
    y = 0.0
    notes = []
    ann: list[dict] = []          # row labels only (few): per-token annotations would be slow to build
    bx, bbase, by, bcol, bfg, btext, bhover = [], [], [], [], [], [], []
    for label, tokens, weights in rows:
        tokens, w, lo, hi = _highlight_row(label, tokens, weights, window, max_tokens)
        if (lo, hi) != (0, len(tokens)):
            notes.append(f"tokens {lo + 1}-{hi} of {len(tokens)}")
        shade, scale = _shade(w, stretch)
        if label:
            ann.append(dict(x=0, y=y, text=f"<b>{esc(label)}</b>", showarrow=False, xanchor="left",
                            yanchor="middle", font=dict(size=13, family=FONT)))
            y -= 1
        x = 0.0
        if hi <= lo:
            ann.append(dict(x=0, y=y, text="(no tokens)", showarrow=False, xanchor="left"))
            y -= 1
        order = np.argsort(-w, kind="stable")
        rank = np.empty(len(w), dtype=int)
        rank[order] = np.arange(1, len(w) + 1)
        for i in range(lo, hi):
            tok = tokens[i] or " "
            cw = _char_width(tok)
            if x > 0 and x + cw > chars_per_line:
                x, y = 0.0, y - 1
            bg, fg = _bg(float(shade[i]), scale)
            bx.append(cw + 0.4); bbase.append(x - 0.2); by.append(y); bcol.append(bg); bfg.append(fg)
            btext.append(esc(tok))
            bhover.append(f"{esc(label) + ' · ' if label else ''}{esc(tok)}<br>weight {w[i]:.6g} (rank {rank[i]})")
            x += cw + 1
        y -= 1.6
    # one horizontal bar per token: its box is the shading, its text the token (one trace, fast for long texts)
    fig = go.Figure(go.Bar(x=bx, base=bbase, y=by, orientation="h", width=0.78, marker=dict(color=bcol, line_width=0),
                           text=btext, textposition="inside", insidetextanchor="middle", textangle=0,
                           textfont=dict(family=MONO, size=font_px, color=bfg), constraintext="none",
                           hovertext=bhover, hoverinfo="text", showlegend=False, cliponaxis=False))
    n_lines = max(1.0, -y)
    heading = esc(title)
    if notes:
        heading += f"<br><sup>{esc('; '.join(dict.fromkeys(notes)))}</sup>"
    top = 50 if title else 10
    fig.update_layout(
        annotations=ann, uniformtext=dict(minsize=font_px, mode="show"), bargap=0,
        title=dict(text=heading, x=0.01, font=dict(size=14)) if title else None,
        width=width, height=int(top + 20 + n_lines * line_px), margin=dict(l=20, r=20, t=top, b=10),
        xaxis=dict(range=[-0.5, chars_per_line + 0.5], visible=False, fixedrange=True),
        yaxis=dict(range=[y + 0.6, 0.8], visible=False, fixedrange=True),
        plot_bgcolor="white", paper_bgcolor="white", font=dict(family=FONT),
    )
    return fig


def highlight_table(rows: Sequence[tuple[str, Sequence[str], Sequence[float]]]) -> pd.DataFrame:
    recs = []
    for label, tokens, weights in rows:
        for i, (t, w) in enumerate(zip(tokens, weights)):
            recs.append({"row": label, "token_index": i, "token": str(t), "weight": float(w)})
    return pd.DataFrame(recs, columns=["row", "token_index", "token", "weight"])


# ---------------------------------------------------------------- layer x head grid (bertviz model view)

def attention_grid(att: Any, tokens: Sequence[str] | None = None, *, window: tuple[int, int] | None = None,
                   max_tokens: int = MAX_GRID_TOKENS, title: str = "Attention, all layers x heads",
                   axes: tuple[str, str] = ("query_token", "key_token"), row_label: str = "layer",
                   col_label: str = "head") -> go.Figure:
    """All layers x heads of a (layer, head, query, key) attention tensor as a grid of small heatmaps.

    Query and key axes are windowed together (the same tokens on both), so a long input stays small.
    """
    a = np.asarray(att, dtype=float)
    if a.ndim != 4:
        raise ValueError(f"attention_grid needs (layer, head, query, key), got shape {a.shape}")
    nl, nh, nq, nk = a.shape
    n = min(nq, nk, len(tokens) if tokens is not None else nq)
    lo, hi = _window(n, window, max_tokens)
    a = a[:, :, lo:hi, lo:hi]
    labels = axis_labels(axes[0], hi, tokens)[lo:hi]
    # unique category labels "12·food": hover names the tokens without a per-cell customdata array
    cats = [f"{lo + i + 1}·{esc(x)}" for i, x in enumerate(labels)]
    fig = make_subplots(rows=nl, cols=nh, horizontal_spacing=0.01, vertical_spacing=0.02,
                        column_titles=[f"{col_label} {h + 1}" for h in range(nh)],
                        row_titles=[f"{row_label} {l + 1}" for l in range(nl)])
    zmax = float(a.max()) if a.size else 1.0
    for l in range(nl):
        for h in range(nh):
            fig.add_trace(go.Heatmap(
                z=a[l, h], x=cats, y=cats, coloraxis="coloraxis",
                hovertemplate=(f"{row_label} {l + 1}, {col_label} {h + 1}<br>query: %{{y}}<br>"
                               "key: %{x}<br>weight: %{z:.6g}<extra></extra>")), row=l + 1, col=h + 1)
    fig.update_xaxes(showticklabels=False, showgrid=False)
    fig.update_yaxes(showticklabels=False, showgrid=False, autorange="reversed")
    note = f"<br><sup>tokens {lo + 1}-{hi} of {n}</sup>" if (lo, hi) != (0, n) else ""
    cell = int(min(220, max(70, 900 / max(nh, nl))))       # square cells, the grid at most ~900 px wide
    fig.update_layout(title=dict(text=esc(title) + note, x=0.01, font=dict(size=14)),
                      coloraxis=dict(colorscale="Blues", cmin=0, cmax=max(zmax, 1e-12)),
                      width=int(60 + cell * nh + 90), height=int(90 + cell * nl),
                      margin=dict(l=10, r=40, t=80, b=10), font=dict(family=FONT))
    return fig


def grid_table(att: Any, tokens: Sequence[str] | None = None, *, window: tuple[int, int] | None = None,
               max_tokens: int = MAX_GRID_TOKENS) -> pd.DataFrame:
    a = np.asarray(att, dtype=float)
    nl, nh, nq, nk = a.shape
    n = min(nq, nk, len(tokens) if tokens is not None else nq)
    lo, hi = _window(n, window, max_tokens)
    lab = axis_labels("token", hi, tokens)
    recs = [{"layer": l + 1, "head": h + 1, "query_index": i, "query": lab[i], "key_index": j, "key": lab[j],
             "value": float(a[l, h, i, j])}
            for l in range(nl) for h in range(nh) for i in range(lo, hi) for j in range(lo, hi)]
    return pd.DataFrame(recs)


# ---------------------------------------------------------------- finding maps by their axes

REAL = ("real", "partial")   # map values that are weights ("partial": rows that share mass with a cls token)


def _values_ok(spec: MapSpec, values) -> bool:
    if values is None:
        return True
    return spec.values in ((values,) if isinstance(values, str) else tuple(values))


def find_spec(specs: dict[str, MapSpec] | Sequence[MapSpec], *, axes: tuple[str, ...] | None = None,
              kind: str | None = None, values: str | Sequence[str] | None = REAL, names: Sequence[str] = (),
              exclude: Sequence[str] = ()) -> MapSpec | None:
    """The first spec named one of `names` that matches, else the first whose axes/kind/values match."""
    lst = list(specs.values()) if isinstance(specs, dict) else list(specs)
    ok = [s for s in lst if s.name not in exclude and (axes is None or tuple(s.axes) == tuple(axes))
          and (kind is None or s.kind == kind) and _values_ok(s, values)]
    for n in names:
        for s in ok:
            if s.name == n:
                return s
    return ok[0] if ok else None


def find_specs(specs, *, axes=None, kind=None, values=REAL) -> list[MapSpec]:
    lst = list(specs.values()) if isinstance(specs, dict) else list(specs)
    return [s for s in lst if (axes is None or tuple(s.axes) == tuple(axes))
            and (kind is None or s.kind == kind) and _values_ok(s, values)]


def _window_sizes(specs) -> list[int]:
    """Window sizes h of the conv maps named conv_h{h} (Kim CNN, AGCNN)."""
    hs = []
    for s in (specs.values() if isinstance(specs, dict) else specs):
        m = re.fullmatch(r"conv_h(\d+)", s.name)
        if m:
            hs.append(int(m.group(1)))
    return sorted(hs)


# ---------------------------------------------------------------- one weight per token, any model

def token_weights(model: str, specs: dict[str, MapSpec], maps: dict[str, np.ndarray], tokens: Sequence[str],
                  sentences: Sequence[Sequence[str]] | None = None) -> tuple[np.ndarray, str] | None:
    """One non-negative weight per token of `tokens` and a phrase saying where it comes from.

    The weight a model gives each token on its way to the decision: a global attention (ACT alpha, a
    Transformer with ACT pooling), the classification token's row in the last layer (Transformer cls /
    decoder pooling), the mean over heads of a token attention (LAMA A, CAN beta), word x sentence target
    attention (HCAN), the attention each token receives in the last layer (Transformer max/mean pooling), or
    the share of max-pooled filters whose n-gram covers the token (Kim CNN, AGCNN). None when the model
    exposes nothing token-level or the text has no tokens.
    """
    n = len(tokens)
    if n == 0:
        return None

    def fit(v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, dtype=float).reshape(-1)[:n]
        return np.pad(v, (0, n - v.shape[0])) if v.shape[0] < n else v

    def have(spec):
        return spec is not None and spec.name in maps and np.asarray(maps[spec.name]).size > 0

    # 1. a global attention over tokens (ACT alpha, Transformer with ACT's pooling)
    s = find_spec(specs, axes=("token",), kind="attention", names=("alpha",))
    if have(s):
        return fit(maps[s.name]), f"global attention '{s.name}' (each token's weight in the text vector)"
    # 2. multi-head attention over tokens (LAMA A, CAN beta): mean over heads
    s = find_spec(specs, axes=("head", "token"), kind="attention", names=("attention", "beta"))
    if have(s):
        return fit(np.asarray(maps[s.name]).mean(axis=0)), f"'{s.name}', mean over heads"
    # 3. hierarchical target attention (HCAN): word weight x its sentence's weight
    beta = find_spec(specs, axes=("sentence", "head", "word"), kind="attention", names=("beta",))
    gamma = find_spec(specs, axes=("head", "sentence"), kind="attention", names=("gamma",))
    if have(beta):
        b = np.asarray(maps[beta.name]).mean(axis=1)                       # (S, W)
        g = np.asarray(maps[gamma.name]).mean(axis=0) if have(gamma) else np.ones(b.shape[0])
        sents = sentences if sentences else [list(tokens)]
        w = [float(b[si, wi] * g[si]) for si, sent in enumerate(sents) if si < b.shape[0]
             for wi in range(min(len(sent), b.shape[1]))]
        src = f"word attention '{beta.name}' x sentence attention '{gamma.name if gamma else '-'}', mean of heads"
        return fit(np.array(w)), src
    # 4. the classification token's attention row (Transformer cls / decoder pooling), last layer
    s = find_spec(specs, axes=("layer", "head", "key_token"), kind="attention",
                  names=("cls_attention", "decoder_attention"))
    if have(s):
        return fit(np.asarray(maps[s.name])[-1].mean(axis=0)), f"'{s.name}': last layer, mean over heads"
    # 5. self-attention: the attention each token receives in the last layer
    s = find_spec(specs, axes=("layer", "head", "query_token", "key_token"), kind="attention")
    if have(s):
        a = np.asarray(maps[s.name])[-1].mean(axis=0)                      # (q, k)
        return fit(a.mean(axis=0)), f"'{s.name}': attention each token receives, last layer, mean of heads"
    # 6. CNNs: share of max-pooled filters whose n-gram covers the token
    idx = [sp for sp in find_specs(specs, values="index") if sp.name in maps and tuple(sp.axes) == ("filter",)]
    if idx:
        w = np.zeros(n)
        total = 0
        for sp in idx:
            m = re.search(r"_h(\d+)", sp.name)
            h = int(m.group(1)) if m else 1
            for j in np.asarray(maps[sp.name]).reshape(-1).astype(int):
                w[max(0, j): min(n, j + h)] += 1
                total += 1
        return w / max(total, 1), "share of the max-pooled filters whose n-gram covers the token"
    return None


# ---------------------------------------------------------------- the views registry

@dataclass
class Control:
    """A choice a view offers (the page draws a widget): `options` are ints, `labels` what the user reads."""

    name: str
    label: str
    options: list[int]
    labels: list[str]
    default: int = 0


@dataclass
class ViewInput:
    model: str                                  # registry name ("act", "kim_cnn", ...)
    specs: dict[str, MapSpec]
    maps: dict[str, np.ndarray]
    tokens: list[str]
    sentences: list[list[str]] | None = None
    title: str = ""                             # checkpoint name, shown in figure titles
    label: str = ""                             # predicted label
    opts: dict[str, Any] = field(default_factory=dict)   # control values + "window": (start, size)
    config: dict[str, Any] = field(default_factory=dict)  # the model's config (checkpoint "model_config")

    @property
    def window(self) -> tuple[int, int] | None:
        return self.opts.get("window")


@dataclass
class View:
    id: str
    title: str
    description: str
    models: tuple[str, ...]
    needs: Callable[[dict[str, MapSpec]], bool]
    build: Callable[[ViewInput], list[FigureOut]]
    controls: Callable[[ViewInput], list[Control]] = lambda vi: []


VIEWS: dict[str, View] = {}
MODEL_VIEWS: dict[str, list[str]] = {}


def register_view(view_id: str, title: str, description: str, models: Sequence[str],
                  needs: Callable[[dict[str, MapSpec]], bool],
                  controls: Callable[[ViewInput], list[Control]] | None = None):
    """Decorator: `build(ViewInput) -> list[FigureOut]` becomes a view offered for `models` when `needs`."""
    def deco(build):
        if view_id in VIEWS:
            raise ValueError(f"view {view_id!r} registered twice")
        VIEWS[view_id] = View(view_id, title, description, tuple(models), needs, build,
                              controls or (lambda vi: []))
        for m in models:
            MODEL_VIEWS.setdefault(m, []).append(view_id)
        return build
    return deco


def views_for(model: str, specs: dict[str, MapSpec] | Sequence[MapSpec]) -> list[View]:
    """The paper views available for a model whose maps are `specs`, then "generic" (always)."""
    if not isinstance(specs, dict):
        specs = {s.name: s for s in specs}
    out = [VIEWS[v] for v in MODEL_VIEWS.get(model, []) if VIEWS[v].needs(specs)]
    return out + [VIEWS["generic"]]


def build_view(view_id: str, vi: ViewInput) -> list[FigureOut]:
    """The view's figures; [] when the text has no tokens (nothing to draw)."""
    if not vi.tokens:
        return []
    return VIEWS[view_id].build(vi)


def view_controls(view_id: str, vi: ViewInput) -> list[Control]:
    return VIEWS[view_id].controls(vi)


def _ctrl(name: str, n: int, prefix: str, label: str | None = None, default: int = 0) -> Control:
    return Control(name, label or name, list(range(n)), [f"{prefix}{i + 1}" for i in range(n)],
                   default=min(default, max(0, n - 1)))


def _cpl(vi: ViewInput) -> int:
    """Characters per line of shaded-word figures (opts "chars_per_line"; narrower in side-by-side layouts)."""
    return max(20, int(vi.opts.get("chars_per_line", 90)))


def _stretch_control() -> Control:
    return Control("stretch", "shading", [0, 1], ["vs. uniform share", "stretched to row max"], default=0)


def _token_choice(vi: ViewInput, name: str = "token", label: str = "word", default: int = 0) -> Control:
    toks = vi.tokens or [""]
    return Control(name, label, list(range(len(toks))), [f"{i + 1}: {t}" for i, t in enumerate(toks)],
                   default=min(default, len(toks) - 1))


def _ngram(tokens: Sequence[str], start: int, h: int) -> str:
    return " ".join(str(t) for t in tokens[max(0, start): start + h])


def _heat(vi: ViewInput, key: str, spec: MapSpec, arr, *, title: str, caption: str = "",
          index: dict | None = None, marks=None, aggregate: bool = False) -> FigureOut:
    return heatmap_item(f"{vi.model}_{key}", arr, spec, vi.tokens, sentences=vi.sentences, index=index,
                        window=vi.window, aggregate=aggregate, title=title, marks=marks, caption=caption)


# ---- generic: every map

@register_view("generic", "All maps (generic)", "One heatmap per map the model declares, axes from map_specs().",
               models=(), needs=lambda specs: True,
               controls=lambda vi: _generic_controls(vi))
def _generic(vi: ViewInput) -> list[FigureOut]:
    """opts: "maps" (names to draw; default all), one index per leading axis ("layer", "head", ...)."""
    out = []
    only = vi.opts.get("maps")
    for spec in vi.specs.values():
        if spec.name not in vi.maps or (only is not None and spec.name not in only):
            continue
        arr = np.asarray(vi.maps[spec.name])
        index = {a: min(int(vi.opts.get(a, 0)), arr.shape[i] - 1) for i, a in enumerate(spec.axes[:-2])}
        if spec.values == "index":   # token positions: show the token each cell points at
            s = slice_map(arr, spec, vi.tokens, sentences=vi.sentences, index=index)
            fig = _heatmap_from_slice(s, spec, title=f"{vi.title} · {spec.name}", cell_tokens=vi.tokens,
                                      colors=dict(colorscale="Greys", zmin=0, zmax=max(1, len(vi.tokens) - 1) * 1.6))
            tab = slice_table(s)
            tab["token"] = [vi.tokens[int(v)] if 0 <= int(v) < len(vi.tokens) else "" for v in tab["value"]]
            out.append(FigureOut(f"{vi.model}_{spec.name}", spec.name, fig, tab, spec.description,
                                 meta={"map": spec.name, "axes": list(spec.axes), "kind": spec.kind}))
            continue
        out.append(_heat(vi, spec.name, spec, arr, title=f"{vi.title} · {spec.name}", caption=spec.description,
                         index=index, aggregate=bool(vi.opts.get("aggregate"))))
    return out


def _generic_controls(vi: ViewInput) -> list[Control]:
    sizes: dict[str, int] = {}
    for spec in vi.specs.values():
        if spec.name in vi.maps:
            arr = np.asarray(vi.maps[spec.name])
            for i, a in enumerate(spec.axes[:-2]):
                sizes[a] = max(sizes.get(a, 0), arr.shape[i])
    out = []
    for a, n in sizes.items():
        if n > 1:
            labels = axis_labels(a, n, vi.tokens, sentences=vi.sentences)
            out.append(Control(a, AXIS_TITLES.get(a, a), list(range(n)), labels))
    return out


# ---- ACT

def _act_specs(specs):
    M = find_spec(specs, axes=("layer", "head", "filter", "token"), names=("M", "feature_map"))
    arg = find_spec(specs, axes=("layer", "head", "filter"), values="index")
    alpha = find_spec(specs, axes=("token",), kind="attention", names=("alpha",))
    return M, arg, alpha


@register_view("ACT-T4", "ACT Table 4: words shaded by global attention",
               "The sentence with each word shaded by the global-attention weight alpha (ACT eq. 6). "
               "Open a Transformer checkpoint beside it to get the paper's Transformer-above-ACT table.",
               models=("act", "transformer"),
               needs=lambda specs: find_spec(specs, axes=("token",), kind="attention") is not None,
               controls=lambda vi: [_stretch_control()])
def _act_t4(vi: ViewInput) -> list[FigureOut]:
    tw = token_weights(vi.model, vi.specs, vi.maps, vi.tokens, vi.sentences)
    if tw is None:
        return []
    w, src = tw
    name = vi.title or vi.model
    rows = [(f"{name} → {vi.label}" if vi.label else name, vi.tokens, w)]
    kw = dict(title=f"{name}: global attention over the words", window=vi.window,
              stretch=bool(vi.opts.get("stretch")))
    return [FigureOut(f"{vi.model}_act-t4", "words shaded by global attention",
                      token_highlight_rows(rows, chars_per_line=_cpl(vi), **kw), highlight_table(rows),
                      caption=f"Weights: {src}. {SHADE_NOTE}", html=token_rows_html(rows, **kw))]


def _layer_head_controls(vi: ViewInput, spec: MapSpec | None) -> list[Control]:
    """Layer and head pickers for a map whose first two axes are (layer, head); the last layer by default."""
    if spec is None or spec.name not in vi.maps:
        return []
    nl, nh = np.asarray(vi.maps[spec.name]).shape[:2]
    return [_ctrl("layer", nl, "layer ", "layer", default=nl - 1), _ctrl("head", nh, "head ", "head")]


def _act_controls(vi: ViewInput) -> list[Control]:
    return _layer_head_controls(vi, _act_specs(vi.specs)[0])


@register_view("ACT-FM", "ACT Fig. 1: feature maps per head and layer",
               "The attentive-convolution feature map M (filter x token) of one layer and head; circles mark "
               "each filter's max-pooled position, and the table lists the n-gram each filter fires on.",
               models=("act",), needs=lambda specs: _act_specs(specs)[0] is not None, controls=_act_controls)
def _act_fm(vi: ViewInput) -> list[FigureOut]:
    M, arg, _ = _act_specs(vi.specs)
    Ma = np.asarray(vi.maps[M.name])
    l = min(int(vi.opts.get("layer", Ma.shape[0] - 1)), Ma.shape[0] - 1)
    h = min(int(vi.opts.get("head", 0)), Ma.shape[1] - 1)
    n = len(vi.tokens)
    kernel = int(vi.config.get("kernel_size", 3))
    shift = (kernel - 1) // 2 if vi.config.get("conv_padding") == "center" else 0   # window start = j - shift
    fmap = Ma[l, h][:, :n]                                           # (filter, token)
    picks = np.asarray(vi.maps[arg.name])[l, h].astype(int) if arg is not None and arg.name in vi.maps \
        else fmap.argmax(axis=1)

    def gram(j: int) -> str:
        return _ngram(vi.tokens, j - shift, kernel + min(0, j - shift))

    marks = [(f, int(j), f"f{f + 1} max at token {int(j) + 1}: '{gram(int(j))}' ({fmap[f, int(j)]:.4g})")
             for f, j in enumerate(picks) if 0 <= int(j) < n]
    item = _heat(vi, f"act-fm_l{l + 1}_h{h + 1}", M, Ma, index={"layer": l, "head": h}, marks=marks,
                 title=f"{vi.title} · feature map M", caption=M.description)
    # the n-grams: strongest filters first
    rows = []
    for f, j in enumerate(picks):
        j = int(j)
        if 0 <= j < n:
            rows.append({"filter": f"f{f + 1}", "max_value": float(fmap[f, j]), "position": j,
                         "ngram": gram(j)})
    tab = pd.DataFrame(rows).sort_values("max_value", ascending=False) if rows else \
        pd.DataFrame(columns=["filter", "max_value", "position", "ngram"])
    top = tab.head(20)
    bar = go.Figure(go.Bar(x=top["max_value"], y=[f"{esc(r.filter)}: {esc(short(r.ngram, 40))}"
                                                   for r in top.itertuples()],
                           orientation="h", marker_color="#c0392b",
                           hovertemplate="%{y}<br>max activation %{x:.6g}<extra></extra>"))
    bar.update_layout(title=dict(text=esc(f"{vi.title} · the n-gram each filter picks (layer {l + 1}, head {h + 1}, "
                                          f"top {len(top)} of {len(tab)} filters)"), x=0.01, font=dict(size=14)),
                      yaxis=dict(autorange="reversed", automargin=True), height=int(150 + 22 * max(1, len(top))),
                      margin=dict(l=10, r=10, t=45, b=10), xaxis=dict(title="max activation", automargin=True),
                      font=dict(family=FONT),
                      plot_bgcolor="white")
    ng = FigureOut(f"{vi.model}_act-ngrams_l{l + 1}_h{h + 1}", "n-grams per filter", bar, tab,
                   caption=f"Kernel {kernel}: the window at position j covers tokens "
                           f"{'j-%d..j+%d' % (shift, kernel - 1 - shift) if shift else 'j..j+%d' % (kernel - 1)}.")
    return [item, ng]


# ---- Transformer

def _tr_specs(specs):
    att = find_spec(specs, axes=("layer", "head", "query_token", "key_token"), kind="attention",
                    names=("attention",))
    cls = find_spec(specs, axes=("layer", "head", "key_token"), kind="attention",
                    names=("cls_attention", "decoder_attention"))
    return att, cls


def _tr_controls(vi: ViewInput) -> list[Control]:
    return _layer_head_controls(vi, _tr_specs(vi.specs)[0])


@register_view("TR-ATT", "Transformer self-attention: matrix per layer/head, all-heads grid, cls row",
               "Self-attention weights (query x key) for one layer and head; the grid of every layer and head "
               "(bertviz's model view); the row of the classification token per layer and head.",
               models=("transformer",), needs=lambda specs: _tr_specs(specs)[0] is not None,
               controls=_tr_controls)
def _tr_att(vi: ViewInput) -> list[FigureOut]:
    from .outputs import MapSpec

    att, cls = _tr_specs(vi.specs)
    A = np.asarray(vi.maps[att.name])
    nl, nh = A.shape[:2]
    l = min(int(vi.opts.get("layer", nl - 1)), nl - 1)
    h = min(int(vi.opts.get("head", 0)), nh - 1)
    partial = " Rows sum to less than 1: the rest of each query's weight is on the cls token." \
        if att.values == "partial" and "cls" not in att.description else ""
    out = [_heat(vi, f"tr-att_l{l + 1}_h{h + 1}", att, A, index={"layer": l, "head": h},
                 title=f"{vi.title} · self-attention (rows: queries, columns: keys)",
                 caption=att.description + partial)]
    grid = attention_grid(A, vi.tokens, window=vi.window,
                          title=f"{vi.title} · all layers x heads (rows: queries, columns: keys)")
    out.append(FigureOut(f"{vi.model}_tr-grid", "all layers x heads", grid,
                         grid_table(A, vi.tokens, window=vi.window),
                         caption="Each cell is one head's attention matrix (bertviz's model view); hover for the "
                                 "tokens and the weight."))
    if cls is not None and cls.name in vi.maps:
        C = np.asarray(vi.maps[cls.name])                                  # (layer, head, token)
        flat = C.reshape(C.shape[0] * C.shape[1], -1)
        spec = MapSpec(cls.name, ("head", "token"), cls.kind, cls.description)
        s = slice_map(flat, spec, vi.tokens, window=vi.window)
        s.row_labels = [f"L{i // C.shape[1] + 1} H{i % C.shape[1] + 1}" for i in range(flat.shape[0])]
        s.row_axis = "layer·head"
        what = "the classification token" if cls.name == "cls_attention" else "the decoder query"
        fig = _heatmap_from_slice(s, spec, title=f"{vi.title} · what {what} attends to, per layer and head")
        out.append(FigureOut(f"{vi.model}_tr-cls", "cls row", fig, slice_table(s), caption=cls.description))
    return out


# ---- HCAN (hierarchical) and CAN (its flat, word-level-only variant)

@dataclass
class _Hier:
    selfs: list[tuple[MapSpec, np.ndarray]]       # each (S, head, W, W)
    beta: tuple[MapSpec, np.ndarray] | None       # (S, head, W)
    gamma: tuple[MapSpec, np.ndarray] | None      # (head, S)
    sentences: list[list[str]]


def _hcan_specs(specs):
    selfs = find_specs(specs, axes=("sentence", "head", "query_word", "key_word"), kind="attention") or \
        find_specs(specs, axes=("head", "query_token", "key_token"), kind="attention")
    beta = find_spec(specs, axes=("sentence", "head", "word"), kind="attention", names=("beta",)) or \
        find_spec(specs, axes=("head", "token"), kind="attention", names=("beta",))
    gamma = find_spec(specs, axes=("head", "sentence"), kind="attention", names=("gamma",))
    return selfs, beta, gamma


def _hier(vi: ViewInput) -> _Hier:
    """HCAN maps as they are, CAN maps with a sentence axis of one added (the text is one sentence)."""
    selfs, beta, gamma = _hcan_specs(vi.specs)
    flat = bool(selfs) and "query_token" in selfs[0].axes or (beta is not None and "token" in beta.axes)
    sents = [list(vi.tokens)] if flat or not vi.sentences else [list(x) for x in vi.sentences]
    fix = (lambda a: np.asarray(a)[None]) if flat else np.asarray
    return _Hier([(s, fix(vi.maps[s.name])) for s in selfs if s.name in vi.maps],
                 (beta, fix(vi.maps[beta.name])) if beta is not None and beta.name in vi.maps else None,
                 (gamma, np.asarray(vi.maps[gamma.name])) if gamma is not None and gamma.name in vi.maps else None,
                 sents)


def _flat_word(sents: list[list[str]], k: int) -> tuple[int, int]:
    """Flat token index k -> (sentence, word)."""
    for si, s in enumerate(sents):
        if k < len(s):
            return si, k
        k -= len(s)
    return max(0, len(sents) - 1), max(0, len(sents[-1]) - 1) if sents else 0


def _hcan_controls(vi: ViewInput) -> list[Control]:
    return [_token_choice(vi, "token", "chosen word (its self-attention row)")]


def _hcan_f4_controls(vi: ViewInput) -> list[Control]:
    return _hcan_controls(vi) + [_stretch_control()]


def _hcan_self_rows(vi: ViewInput, hi: _Hier, tag: str) -> list[FigureOut]:
    """The chosen word's self-attention row in each branch, one row per head (HCAN Fig. 4 right / Fig. 5)."""
    from .outputs import MapSpec

    si, wi = _flat_word(hi.sentences, int(vi.opts.get("token", 0)))
    words = hi.sentences[si] if si < len(hi.sentences) else []
    word = words[wi] if wi < len(words) else "?"
    where = f"S{si + 1}, word {wi + 1}" if len(hi.sentences) > 1 else f"word {wi + 1}"
    out = []
    for spec, A in hi.selfs:
        if si >= A.shape[0] or wi >= A.shape[2]:
            continue
        n = max(1, min(len(words), A.shape[3]))
        rowmap = A[si, :, wi, :n]                                         # (head, key_word)
        s2 = MapSpec(spec.name, ("head", "key_word"), spec.kind, spec.description, values=spec.values)
        s = slice_map(rowmap, s2, None, sentences=[words], index={}, window=None)
        s.col_labels = [str(w) for w in words[:n]]
        s.fixed, s.fixed_labels = {"sentence": si, "query_word": wi}, {}
        branch = {"A_a": "branch a (ELU values)", "A_b": "branch b (tanh values)"}.get(spec.name, spec.name)
        fig = _heatmap_from_slice(s, s2, title=f"{vi.title} · {branch}: where '{short(word, 20)}' ({where}) looks")
        out.append(FigureOut(f"{vi.model}_hcan-{tag}-{spec.name}_s{si + 1}_w{wi + 1}", f"{spec.name} row", fig,
                             slice_table(s), caption=spec.description))
    return out


@register_view("HCAN-F4", "HCAN Fig. 4: word and sentence target attention; one word's self-attention",
               "Each sentence's words shaded by the word-level target attention (beta, mean of heads), each "
               "sentence's weight gamma, and the self-attention row of one chosen word in both branches.",
               models=("hcan", "can"), needs=lambda specs: _hcan_specs(specs)[1] is not None,
               controls=_hcan_f4_controls)
def _hcan_f4(vi: ViewInput) -> list[FigureOut]:
    hi = _hier(vi)
    out = []
    if hi.beta is not None:
        B = hi.beta[1].mean(axis=1)                                       # (S, W)
        G = hi.gamma[1].mean(axis=0) if hi.gamma is not None else None     # (S,)
        rows = []
        window = vi.window
        flat = len(hi.sentences) == 1                 # CAN: one "sentence", the token window applies inside it
        lo, hi_ = _window(sum(len(x) for x in hi.sentences), None if flat else window, 10**9)
        start = 0
        for si, sent in enumerate(hi.sentences[: B.shape[0]]):
            end, begin = start + len(sent), start
            start = end
            if not flat and window is not None and (end <= lo or begin >= hi_):
                continue                              # long documents: the sentences in the token window
            g = f"  (sentence weight {G[si]:.3f})" if G is not None and si < G.shape[0] else ""
            lab = f"S{si + 1}{g}" if len(hi.sentences) > 1 or G is not None else vi.title
            rows.append((lab, sent, B[si, : len(sent)]))
        title = f"{vi.title} · word-level target attention" + (" per sentence" if len(rows) > 1 else "")
        if not flat and window is not None and len(rows) < len(hi.sentences):
            title += f" (sentences {rows[0][0].split()[0]}-{rows[-1][0].split()[0]} of {len(hi.sentences)})"
        kw = dict(title=title, window=window if flat else None, stretch=bool(vi.opts.get("stretch")))
        out.append(FigureOut(f"{vi.model}_hcan-f4-words", "word target attention per sentence",
                             token_highlight_rows(rows, chars_per_line=_cpl(vi), **kw), highlight_table(rows),
                             caption="Words shaded by beta (mean over heads), each sentence's words as a "
                                     "distribution of their own. " + SHADE_NOTE, html=token_rows_html(rows, **kw)))
        if G is not None:
            n = min(len(G), len(hi.sentences))
            labels = axis_labels("sentence", n, sentences=hi.sentences)
            bar = go.Figure(go.Bar(x=G[:n], y=[esc(x) for x in labels], orientation="h", marker_color="#2c7fb8",
                                   hovertemplate="%{y}<br>gamma %{x:.6g}<extra></extra>"))
            bar.update_layout(title=dict(text=esc(f"{vi.title} · sentence-level target attention (gamma, mean "
                                                  f"of heads)"), x=0.01, font=dict(size=14)),
                              yaxis=dict(autorange="reversed", automargin=True), height=int(150 + 28 * n),
                              margin=dict(l=10, r=10, t=45, b=10), plot_bgcolor="white", font=dict(family=FONT),
                              xaxis=dict(title="weight", automargin=True))
            tab = pd.DataFrame({"sentence_index": range(n), "sentence": labels, "value": G[:n]})
            out.append(FigureOut(f"{vi.model}_hcan-f4-sentences", "sentence attention", bar, tab,
                                 caption=hi.gamma[0].description))
    out += _hcan_self_rows(vi, hi, tag="f4")
    return out


@register_view("HCAN-F5", "HCAN Fig. 5: one word's self-attention, branch a vs branch b",
               "The self-attention row of one chosen word in each parallel self-attention (A_a, A_b), one row per "
               "head; a one-self-attention checkpoint has a single branch.",
               models=("hcan", "can"), needs=lambda specs: bool(_hcan_specs(specs)[0]), controls=_hcan_controls)
def _hcan_f5(vi: ViewInput) -> list[FigureOut]:
    return _hcan_self_rows(vi, _hier(vi), tag="f5")


# ---- Kim CNN / AGCNN

def _h_control(vi: ViewInput, default: int | None = None) -> Control:
    hs = _window_sizes(vi.specs) or [1]
    d = hs.index(default) if default in hs else 0
    return Control("h", "window size h", hs, [f"h = {h}" for h in hs], default=hs[d])


def _picks(vi: ViewInput, name: str, h: int) -> list[tuple[int, int, str]] | None:
    if name not in vi.maps:
        return None
    idx = np.asarray(vi.maps[name]).astype(int).reshape(-1)
    return [(f, int(j), f"f{f + 1} max-pool picks '{_ngram(vi.tokens, int(j), h)}'") for f, j in enumerate(idx)]


@register_view("AG-F3", "AGCNN Fig. 3: Kim CNN feature maps before / after ReLU",
               "The convolution feature maps for one window size, before and after the ReLU (filter x token, "
               "token = first word of the n-gram); circles mark each filter's max-pooled n-gram.",
               models=("kim_cnn",), needs=lambda specs: bool(_window_sizes(specs)),
               controls=lambda vi: [_h_control(vi)])
def _ag_f3(vi: ViewInput) -> list[FigureOut]:
    hs = _window_sizes(vi.specs)
    h = int(vi.opts.get("h", hs[0]))
    h = h if h in hs else hs[0]
    marks = _picks(vi, f"argmax_h{h}", h)
    out = []
    for name, what in ((f"conv_pre_h{h}", "before ReLU"), (f"conv_h{h}", "after ReLU")):
        if name in vi.maps:
            out.append(_heat(vi, f"ag-f3_{name}", vi.specs[name], vi.maps[name], marks=marks,
                             title=f"{vi.title} · h = {h}, {what}", caption=vi.specs[name].description))
    return out


def _agf4_controls(vi: ViewInput) -> list[Control]:
    return [_h_control(vi, default=1)]


@register_view("AG-F4", "AGCNN Fig. 4: conv maps, gates k = 1/3/5, gated maps",
               "For one window size h: the convolution map before and after the activation, each attention "
               "gate D (one per gate width k) and each gated map m = C * D that the max-pool reads.",
               models=("agcnn",), needs=lambda specs: any(s.kind == "gate" for s in specs.values()),
               controls=_agf4_controls)
def _ag_f4(vi: ViewInput) -> list[FigureOut]:
    hs = _window_sizes(vi.specs)
    h = int(vi.opts.get("h", 1 if 1 in hs else hs[0]))
    h = h if h in hs else hs[0]
    out = []
    for name, what in ((f"conv_pre_h{h}", "before activation"), (f"conv_h{h}", "after activation (C)")):
        if name in vi.maps:
            out.append(_heat(vi, f"ag-f4_{name}", vi.specs[name], vi.maps[name],
                             title=f"{vi.title} · h = {h}, {what}", caption=vi.specs[name].description))
    gates = sorted((s for s in vi.specs.values() if s.kind == "gate" and re.match(rf"gate_h{h}_k\d+", s.name)),
                   key=lambda s: [int(x) for x in re.findall(r"\d+", s.name)])
    for g in gates:
        if g.name not in vi.maps:
            continue
        k = re.search(r"_k(\d+)", g.name).group(1)
        gated = g.name.replace("gate_", "gated_", 1)
        argn = g.name.replace("gate_", "argmax_", 1)
        out.append(_heat(vi, f"ag-f4_{g.name}", g, vi.maps[g.name], title=f"{vi.title} · gate D, h = {h}, k = {k}",
                         caption=g.description))
        if gated in vi.maps:
            out.append(_heat(vi, f"ag-f4_{gated}", vi.specs[gated], vi.maps[gated], marks=_picks(vi, argn, h),
                             title=f"{vi.title} · gated map m = C·D, h = {h}, k = {k}",
                             caption=vi.specs[gated].description))
    return out


# ---- LAMA

def _lama_spec(specs):
    return find_spec(specs, axes=("head", "token"), kind="attention", names=("attention",))


@register_view("LAMA-HT", "LAMA: attention of each head over the tokens",
               "A (head x token): each of the m heads' attention distribution over the words, and the words "
               "shaded by the mean over heads.",
               models=("lama",), needs=lambda specs: _lama_spec(specs) is not None,
               controls=lambda vi: [_stretch_control()])
def _lama(vi: ViewInput) -> list[FigureOut]:
    spec = _lama_spec(vi.specs)
    A = np.asarray(vi.maps[spec.name])
    out = [_heat(vi, "lama-ht", spec, A, title=f"{vi.title} · head x token attention", caption=spec.description,
                 aggregate=bool(vi.opts.get("aggregate")))]
    rows = [(f"{vi.title} → {vi.label}" if vi.label else vi.title, vi.tokens, A.mean(axis=0)[: len(vi.tokens)])]
    kw = dict(title=f"{vi.title} · words shaded by the mean over heads", window=vi.window,
              stretch=bool(vi.opts.get("stretch")))
    out.append(FigureOut(f"{vi.model}_lama-mean", "mean over heads",
                         token_highlight_rows(rows, chars_per_line=_cpl(vi), **kw), highlight_table(rows),
                         caption=SHADE_NOTE, html=token_rows_html(rows, **kw)))
    return out


# ---------------------------------------------------------------- several models' reasons (ACT-T4 style)

def reasons_figure(items: Sequence[dict[str, Any]], *, title: str = "What each model looked at",
                   window: tuple[int, int] | None = None, stretch: bool = False,
                   chars_per_line: int = 90) -> FigureOut | None:
    """items: dicts with name, model, specs, maps, tokens, sentences, label. One shaded row per model."""
    rows, srcs = [], []
    for it in items:
        tw = token_weights(it["model"], it["specs"], it["maps"], it["tokens"], it.get("sentences"))
        if tw is None:
            continue
        rows.append((f"{it['name']} → {it.get('label', '')}", it["tokens"], tw[0]))
        srcs.append(f"{it['name']}: {tw[1]}")
    if not rows:
        return None
    fig = token_highlight_rows(rows, title=title, window=window, stretch=stretch, chars_per_line=chars_per_line)
    return FigureOut("reasons", title, fig, highlight_table(rows), caption="Weights - " + "; ".join(srcs) + ". "
                     + SHADE_NOTE, html=token_rows_html(rows, title=title, window=window, stretch=stretch))


# ---------------------------------------------------------------- export (PNG / SVG / HTML / ZIP)

_EXPORT_LOCK = threading.Lock()
_SERVER_STARTED = False
CHROME_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def find_chrome() -> str | None:
    """A Chrome/Chromium for kaleido: env BROWSER_PATH, else the first one on PATH."""
    env = os.environ.get("BROWSER_PATH")
    if env and Path(env).is_file():
        return env
    for name in CHROME_NAMES:
        p = shutil.which(name)
        if p:
            return p
    return None


def image_export_status() -> tuple[bool, str]:
    """(available, why) for server-side PNG/SVG rendering (kaleido + a Chrome/Chromium)."""
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return False, "kaleido is not installed"
    chrome = find_chrome()
    if chrome is None:
        return False, "no Chrome/Chromium found (install chromium, or set BROWSER_PATH)"
    return True, chrome


def export_size(fig: go.Figure) -> tuple[int, int]:
    """Pixel size for a static export: the figure's own, else a width that fits its columns."""
    w = fig.layout.width
    if not w:
        n = 0
        for t in fig.data:
            z = getattr(t, "z", None)
            if z is not None and len(z):
                n = max(n, len(z[0]))
        w = int(min(2400, max(800, 160 + 26 * n)))
    return int(w), int(fig.layout.height or 450)


def figure_image(fig: go.Figure, fmt: str = "png", scale: float = 2.0, timeout: float = 120) -> bytes:
    """The figure rendered server-side as PNG or SVG bytes (kaleido + Chrome; one renderer, serialised).

    Raises RuntimeError with the reason when rendering is not available.
    """
    global _SERVER_STARTED
    if fmt not in ("png", "svg"):
        raise ValueError(f"format must be png or svg, got {fmt!r}")
    ok, why = image_export_status()
    if not ok:
        raise RuntimeError(f"static image export unavailable: {why}")
    os.environ.setdefault("BROWSER_PATH", why)
    import warnings

    import kaleido
    import plotly.io as pio
    w, h = export_size(fig)
    with _EXPORT_LOCK:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if not _SERVER_STARTED:
                try:
                    kaleido.start_sync_server(silence_warnings=True)
                except Exception:  # noqa: BLE001 - fall back to one browser per call
                    pass
                _SERVER_STARTED = True
            return pio.to_image(fig, format=fmt, width=w, height=h, scale=scale if fmt == "png" else 1)


def figure_html(fig: go.Figure, image_format: str = "png", filename: str = "figure") -> str:
    """A self-contained interactive HTML page (plotly.js inlined, works offline); its camera button saves
    `image_format` - the fallback way to PNG/SVG when server-side rendering is unavailable."""
    w, h = export_size(fig)
    return fig.to_html(include_plotlyjs=True, full_html=True, config={
        "displaylogo": False,
        "toImageButtonOptions": {"format": image_format, "filename": safe_filename(filename), "width": w,
                                 "height": h, "scale": 2 if image_format == "png" else 1}})


def export_zip(items: Sequence[FigureOut], *, images: bool = True, prefix: str = "") -> bytes:
    """A ZIP with, per figure, its numbers (CSV, JSON) and, when `images` and available, PNG and SVG."""
    buf = io.BytesIO()
    ok = images and image_export_status()[0]
    seen: dict[str, int] = {}
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for it in items:
            base = safe_filename(prefix + it.key)
            seen[base] = seen.get(base, 0) + 1
            if seen[base] > 1:
                base = f"{base}_{seen[base]}"
            z.writestr(f"{base}.csv", it.csv())
            z.writestr(f"{base}.json", it.json())
            if ok:
                z.writestr(f"{base}.png", figure_image(it.fig, "png"))
                z.writestr(f"{base}.svg", figure_image(it.fig, "svg"))
        if not ok:
            z.writestr("README.txt", "PNG/SVG were not rendered here: " + (image_export_status()[1] if images else
                       "images not requested") + ". Use the camera button of each figure in the app.\n")
    return buf.getvalue()


# ---------------------------------------------------------------- Train / Evaluate pages: metrics, curves, corpus views
# (confusion matrices, training curves HCAN-F3 / LAMA-F5, live training curves, LAMA-T4 top words, LAMA-F2
# word-weight distributions, filter n-grams over a data set). Inputs are plain tables and dicts.

RUN_COLORS = ["#c0392b", "#2c7fb8", "#27ae60", "#8e44ad", "#e67e22", "#16a085", "#7f8c8d", "#d35400", "#2c3e50",
              "#b8860b"]
CURVE_TITLES = {"train_loss": "training loss", "dev_loss": "dev loss", "train_accuracy": "training accuracy",
                "dev_accuracy": "dev accuracy", "dev_macro_f1": "dev macro-F1", "epoch": "epoch",
                "elapsed": "wall-clock time (s)", "step": "optimiser step", "loss": "training loss"}


def _layout(fig: go.Figure, title: str, height: int, **kw) -> None:
    fig.update_layout(title=dict(text=esc(title), x=0.01, font=dict(size=14)), height=height,
                      margin=dict(l=10, r=10, t=50, b=10), font=dict(family=FONT), plot_bgcolor="white", **kw)
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    fig.update_xaxes(showgrid=True, gridcolor="#eee", zeroline=False)
    fig.update_yaxes(showgrid=True, gridcolor="#eee", zeroline=False)


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
    _layout(fig, title, side + 60)
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
    _layout(fig, title, 380, legend=dict(orientation="h", y=-0.2))
    fig.update_xaxes(title=CURVE_TITLES.get(x, x), dtick=1 if x == "epoch" and len(rows) and
                     max(r[x] for r in rows) <= 20 else None)
    fig.update_yaxes(title=CURVE_TITLES.get(y, y), tickformat=".0%" if "accuracy" in y or "f1" in y else None)
    table = pd.DataFrame(rows, columns=["run", x, y])
    return FigureOut(key or f"curves_{y}_vs_{x}", title, fig, table,
                     caption="" if rows else "No run has this value in its history.")


def live_training_figure(steps: Sequence[dict[str, Any]], epochs: Sequence[dict[str, Any]], *,
                         title: str = "Training", smooth: int = 20) -> FigureOut:
    """Left: the loss of every step (light) and its running mean (dark), per-epoch train/dev loss (markers);
    right: train and dev accuracy per epoch."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("loss", "accuracy"), horizontal_spacing=0.1)
    rows = []
    if steps:
        s = np.array([e["step"] for e in steps])
        loss = np.array([e["loss"] for e in steps], dtype=float)
        fig.add_trace(go.Scatter(x=s, y=loss, mode="lines", name="step loss", line=dict(color="#f2b8b0", width=1),
                                 hovertemplate="step %{x}<br>loss %{y:.4f}<extra></extra>"), 1, 1)
        k = max(1, min(smooth, len(loss)))
        run = np.convolve(np.nan_to_num(loss, nan=0.0), np.ones(k) / k, mode="valid")
        fig.add_trace(go.Scatter(x=s[k - 1:], y=run, mode="lines", name=f"mean of {k} steps",
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
    _layout(fig, title, 360, legend=dict(orientation="h", y=-0.25))
    fig.update_xaxes(title="optimiser step", row=1, col=1)
    fig.update_xaxes(title="epoch", dtick=1, row=1, col=2)
    fig.update_yaxes(tickformat=".0%", row=1, col=2)
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
    _layout(fig, title, int(110 + nrows * (40 + 22 * k_max)))
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
    _layout(fig, title, 380, legend=dict(orientation="h", y=-0.2))
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
    _layout(fig, title, int(110 + 22 * max(1, len(part))))
    fig.update_xaxes(title="largest max-pool value over the data set")
    return FigureOut(key, title, fig, summary.reset_index(drop=True))
