"""Words shaded by weight (ACT Table 4 style) as HTML and as an exportable Plotly figure. The weights a model's
own maps give each token come from `textcls.interpret.importance.token_weights` (re-exported by `textcls.viz`)."""
from __future__ import annotations

import functools
import unicodedata
from typing import Any, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from textcls.data.relation import entity_roles
from textcls.viz.axes import MAX_HIGHLIGHT_TOKENS, token_window
from textcls.viz.style import FONT, MONO, esc

# ---------------------------------------------------------------- words shaded by weight

def _char_width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text) or 1


UNIFORM_DARKEST = 4.0   # a token with this many times its uniform share (1/n) of the weight is darkest
SHADE_NOTE = ("Shading: white = at most a uniform share of the weight (1/n), darkest = 4x that share or "
              "more. Exact weights on hover.")


def shade_weights(weights: np.ndarray, stretch: bool = False) -> tuple[np.ndarray, str]:
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


# relation sentences: the two entities outlined in these colours, the <e1>..</e2> tags greyed
ENTITY_COLORS = {"e1": "#1f77b4", "e2": "#d62728"}
ENTITY_NOTE = "Entity 1 outlined blue, entity 2 red; the <e1>..</e2> tags in grey."


def _roles(tokens: Sequence[str]) -> list[str | None]:
    return entity_roles(tokens) or [None] * len(tokens)


def has_entities(rows: Sequence[tuple[str, Sequence[str], Sequence[float]]]) -> bool:
    """Whether any row is a relation sentence with well-formed entity tags (the figures then mark them)."""
    return any(entity_roles(r[1]) is not None for r in rows)


def _highlight_row(label: str, tokens: Sequence[str], weights: Sequence[float], window: tuple[int, int] | None,
                   max_tokens: int) -> tuple[list[str], np.ndarray, int, int]:
    """One highlight row checked and cut: (tokens as str, one weight per token, shown range lo..hi)."""
    tokens = [str(t) for t in tokens]
    w = np.asarray(weights, dtype=float)
    if w.shape[0] < len(tokens):
        raise ValueError(f"{len(tokens)} tokens but {w.shape[0]} weights for row {label!r}")
    lo, hi = token_window(len(tokens), window, max_tokens)
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
        shade, scale = shade_weights(w, stretch)
        if label:
            parts.append(f'<div style="font-weight:600;font-size:13px;margin:8px 0 2px 0">{esc_html(label)}</div>')
        parts.append('<div style="line-height:2.1;font-size:15px;font-family:monospace">')
        roles = _roles(tokens)
        for i in range(lo, hi):
            bg, fg = _bg(float(shade[i]), scale)
            t = esc_html(tokens[i]) or "&nbsp;"
            mark = ""
            if roles[i] in ENTITY_COLORS:
                mark = f"outline:2px solid {ENTITY_COLORS[roles[i]]};"
            elif roles[i] == "tag":
                fg, mark = "#888888", "font-size:12px;"
            parts.append(f'<span title="{t}: {w[i]:.6g}" style="background:{bg};color:{fg};{mark}'
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

    Each row is (label, tokens, weights), shaded by `shade_weights` (white = no more than a uniform share,
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
    bline, bwidth = [], []                              # entity outlines (relation sentences)
    for label, tokens, weights in rows:
        tokens, w, lo, hi = _highlight_row(label, tokens, weights, window, max_tokens)
        if (lo, hi) != (0, len(tokens)):
            notes.append(f"tokens {lo + 1}-{hi} of {len(tokens)}")
        shade, scale = shade_weights(w, stretch)
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
        roles = _roles(tokens)
        for i in range(lo, hi):
            tok = tokens[i] or " "
            cw = _char_width(tok)
            if x > 0 and x + cw > chars_per_line:
                x, y = 0.0, y - 1
            bg, fg = _bg(float(shade[i]), scale)
            if roles[i] == "tag":
                fg = "#888888"
            bline.append(ENTITY_COLORS.get(roles[i] or "", "rgba(0,0,0,0)"))
            bwidth.append(2 if roles[i] in ENTITY_COLORS else 0)
            bx.append(cw + 0.4); bbase.append(x - 0.2); by.append(y); bcol.append(bg); bfg.append(fg)
            btext.append(esc(tok))
            bhover.append(f"{esc(label) + ' · ' if label else ''}{esc(tok)}<br>weight {w[i]:.6g} (rank {rank[i]})")
            x += cw + 1
        y -= 1.6
    # one horizontal bar per token: its box is the shading, its text the token (one trace, fast for long texts)
    fig = go.Figure(go.Bar(x=bx, base=bbase, y=by, orientation="h", width=0.78,
                           marker=dict(color=bcol, line=dict(color=bline, width=bwidth)),
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
