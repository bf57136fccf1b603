"""Maps as heatmaps: slicing a map (sizes of MapSpec.axes) to 2-D, the heatmap and its numbers as a table,
the layer x head grid of an attention tensor, and finding a model's maps by their axes, kind and values."""
from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from textcls.viz.axes import (AXIS_TITLES, MAX_GRID_TOKENS, MAX_TOKENS, axis_labels, axis_title, is_sentence_axis,
    is_sequence_axis, is_token_axis, is_word_axis, token_window)
from textcls.viz.style import FONT, FigureOut, esc, short

if TYPE_CHECKING:  # outputs imports torch; this module needs MapSpec only for annotations
    from textcls.models.outputs import MapSpec


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
            lo, hi = token_window(real, window, max_tokens)
            if (lo, hi) != (0, real):
                notes.append(f"{AXIS_TITLES.get(axis, axis)}s {lo + 1}-{hi} of {real}")
        bins_per_axis.append([(i, i + 1) for i in range(lo, hi)])
        positions.append(list(range(lo, hi)))
        labels.append(lab[lo:hi])
    # apply bins/windows (mean over each bin)
    with warnings.catch_warnings():              # a bin of blank (NaN) positions only stays blank
        warnings.simplefilter("ignore", RuntimeWarning)
        rows = np.stack([np.nanmean(arr[a:b], axis=0) for a, b in bins_per_axis[0]], axis=0)
        z = np.stack([np.nanmean(rows[:, a:b], axis=1) for a, b in bins_per_axis[1]], axis=1)
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
    return heatmap_from_slice(s, spec, title=title, marks=marks, show_values=show_values, height=height)


def heatmap_from_slice(s: Slice2D, spec: MapSpec, *, title: str | None = None,
                       marks: Sequence[tuple[int, int, str]] | None = None, show_values: bool | None = None,
                       height: int | None = None, colors: dict | None = None,
                       cell_tokens: Sequence[str] | None = None) -> go.Figure:
    """A heatmap of a prepared (possibly relabelled) Slice2D; keywords as `heatmap` (title, marks, colors...).

    `cell_tokens`: for maps whose values are token positions (values="index"), each cell shows and
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
    ry, rx = axis_title(s.row_axis) or "row", axis_title(s.col_axis) or "column"
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
        trace.update(text=[[f"{v:.2f}" if np.isfinite(v) else "" for v in row] for row in s.z],
                     texttemplate="%{text}", textfont=dict(size=9))
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
    extra = [f"{esc(axis_title(a))} {esc(v)}" if not v.startswith(a) else esc(v)
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
    fig = heatmap_from_slice(s, spec, **kw)
    return FigureOut(key, kw.get("title") or spec.name, fig, slice_table(s),
                     caption or spec.description, meta={"map": spec.name, "axes": list(spec.axes),
                                                        "kind": spec.kind, "fixed": s.fixed, "note": s.note})


# ---------------------------------------------------------------- layer x head grid (bertviz model view)

MIN_GRID_CELL = 22      # px: the smallest cell of the all-heads grid (12 heads side by side fit 470 px)
GRID_TITLE_PX = 7       # px a character of a 12 px subplot title needs
GRID_TICK_FONT = 11     # px: the grid's token labels (8 px, about 7 on screen, could not be read on a projector)
GRID_TICK_ROOM = 13     # px of a tile a token label needs (the row's height at 11 px)
GRID_LABEL_PAD = 80     # px beside and under the grid for token labels of up to 10 characters at 11 px


def attention_grid(att: Any, tokens: Sequence[str] | None = None, *, window: tuple[int, int] | None = None,
                   max_tokens: int = MAX_GRID_TOKENS, title: str = "Attention, all layers x heads",
                   axes: tuple[str, str] = ("query_token", "key_token"), row_label: str = "layer",
                   col_label: str = "head", max_width: int = 900) -> go.Figure:
    """All layers x heads of a (layer, head, query, key) attention tensor as a grid of small heatmaps.

    One heatmap trace holds the whole grid, each head's matrix a tile with a blank gap around it: 72 heads as 72
    subplots took 0.6 s to build here and as long to draw in the browser, one trace a tenth of that. Query and key
    axes are windowed together (the same tokens on both), so a long input stays small. The grid is at most
    `max_width` px wide (a side-by-side column is narrower than a page): tokens label the axes only where each gets
    13 px (11 px type), and the labels' room is counted in the width (none is cut at the figure's edge). Hover
    names the layer, the head, both tokens and the weight (each row's and column's category says its layer or
    head and token).
    """
    a = np.asarray(att, dtype=float)
    if a.ndim != 4:
        raise ValueError(f"attention_grid needs (layer, head, query, key), got shape {a.shape}")
    nl, nh, nq, nk = a.shape
    n = min(nq, nk, len(tokens) if tokens is not None else nq)
    lo, hi = token_window(n, window, max_tokens)
    a = a[:, :, lo:hi, lo:hi]                                            # (layer, head, m, m)
    m = hi - lo
    labels = axis_labels(axes[0], hi, tokens)[lo:hi]
    # square tiles, the grid (with its colour bar, 150 px, and token labels, GRID_LABEL_PAD) at most max_width px
    # wide; the tokens label the rows and columns while each gets GRID_TICK_ROOM px (11 px type)
    cell = int(min(220, max(MIN_GRID_CELL, (max_width - 150 - GRID_LABEL_PAD) / max(nh, nl))))
    labelled = m * GRID_TICK_ROOM <= cell
    if not labelled:
        cell = int(min(220, max(MIN_GRID_CELL, (max_width - 150) / max(nh, nl))))
    # a column or row title must fit its tile: "head 12" needs about 7 px a character at 12 px; in a narrow tile
    # only the number, with the axis named once in the title (side by side, "head 1head 2" ran together)
    named = cell >= GRID_TITLE_PX * len(f"{col_label} {nh}") and cell >= GRID_TITLE_PX * len(f"{row_label} {nl}")
    gap = max(1, round(m * 0.12))                                       # blank cells between two tiles
    step = m + gap
    z = np.full((nl * step - gap, nh * step - gap), np.nan)              # (rows, cols): tiles and gaps
    for l in range(nl):
        for h in range(nh):
            z[l * step:l * step + m, h * step:h * step + m] = a[l, h]
    # one unique category per row and column: "L2 · 12·food" (layer 2, query 12) and "H3 · 5·was" (head 3, key 5);
    # a gap's category is blank spaces of a unique length (it shows nothing and is never hovered)
    rows = [f"L{l + 1} · {lo + i + 1}·{esc(x)}" if i < m else " " * (l * gap + i - m + 1)
            for l in range(nl) for i, x in enumerate(list(labels) + [""] * gap)][:z.shape[0]]
    cols = [f"H{h + 1} · {lo + j + 1}·{esc(x)}" if j < m else "\u2009" * (h * gap + j - m + 1)
            for h in range(nh) for j, x in enumerate(list(labels) + [""] * gap)][:z.shape[1]]
    zmax = float(np.nanmax(a)) if a.size else 1.0
    fig = go.Figure(go.Heatmap(
        z=z, x=cols, y=rows, coloraxis="coloraxis", hoverongaps=False, xgap=0, ygap=0,
        hovertemplate=f"{row_label} · query: %{{y}}<br>{col_label} · key: %{{x}}<br>weight: %{{z:.6g}}"
                      "<extra></extra>"))
    ticks = [esc(short(x, 10)) for x in labels]
    pad = GRID_LABEL_PAD if labelled else 0
    width, height = int(60 + pad + cell * nh + 90), int(90 + pad + cell * nl)
    if labelled:
        fig.update_xaxes(tickmode="array", tickvals=[c for c in cols if " · " in c], tickangle=-90,
                         ticktext=ticks * nh, tickfont=dict(size=GRID_TICK_FONT))
        fig.update_yaxes(tickmode="array", tickvals=[r for r in rows if " · " in r], ticktext=ticks * nl,
                         tickfont=dict(size=GRID_TICK_FONT))
    else:
        fig.update_xaxes(showticklabels=False)
        fig.update_yaxes(showticklabels=False)
    fig.update_xaxes(showgrid=False, zeroline=False, side="bottom")
    fig.update_yaxes(showgrid=False, zeroline=False, autorange="reversed")
    # the tiles' titles: each head above its column of tiles, each layer right of its row (as subplot titles were)
    total_c, total_r = z.shape[1], z.shape[0]
    for h in range(nh):
        fig.add_annotation(text=f"{col_label} {h + 1}" if named else f"{h + 1}", xref="paper", yref="paper",
                           x=(h * step + m / 2) / total_c, y=1.0, yanchor="bottom", showarrow=False,
                           font=dict(size=12))
    for l in range(nl):
        fig.add_annotation(text=f"{row_label} {l + 1}" if named else f"{l + 1}", xref="paper", yref="paper",
                           x=1.0, xanchor="left", y=1 - (l * step + m / 2) / total_r, textangle=90,
                           showarrow=False, font=dict(size=12))
    if not named:
        title = f"{title} (columns: {col_label} 1-{nh}; rows: {row_label} 1-{nl})"
    note = f"<br><sup>tokens {lo + 1}-{hi} of {n}</sup>" if (lo, hi) != (0, n) else ""
    fig.update_layout(title=dict(text=esc(title) + note, x=0.01, font=dict(size=14)),
                      coloraxis=dict(colorscale="Blues", cmin=0, cmax=max(zmax, 1e-12),
                                     colorbar=dict(x=1.0, xpad=30)),
                      width=width, height=height, margin=dict(l=10 + pad, r=40, t=80, b=10 + pad),
                      font=dict(family=FONT))
    return fig


def grid_table(att: Any, tokens: Sequence[str] | None = None, *, window: tuple[int, int] | None = None,
               max_tokens: int = MAX_GRID_TOKENS) -> pd.DataFrame:
    """The grid's numbers, one row per (layer, head, query, key) of the window."""
    a = np.asarray(att, dtype=float)
    nl, nh, nq, nk = a.shape
    n = min(nq, nk, len(tokens) if tokens is not None else nq)
    lo, hi = token_window(n, window, max_tokens)
    lab = np.asarray(axis_labels("token", hi, tokens), dtype=object)
    l, h, i, j = (x.ravel() for x in np.meshgrid(np.arange(nl), np.arange(nh), np.arange(lo, hi), np.arange(lo, hi),
                                                  indexing="ij"))
    return pd.DataFrame({"layer": l + 1, "head": h + 1, "query_index": i, "query": lab[i], "key_index": j,
                         "key": lab[j], "value": a[l, h, i, j]})


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


def window_sizes(specs) -> list[int]:
    """Window sizes h of the conv maps named conv_h{h} (Kim CNN, AGCNN)."""
    hs = []
    for s in (specs.values() if isinstance(specs, dict) else specs):
        m = re.fullmatch(r"conv_h(\d+)", s.name)
        if m:
            hs.append(int(m.group(1)))
    return sorted(hs)
