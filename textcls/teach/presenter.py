"""Figures for a projector: the Lessons page's presenter mode enlarges every text of a figure, not only the
layout's default font (a 12 px tick label beside 25 px text cannot be read from the back of a room)."""
from __future__ import annotations

from typing import Any

PRESENTER_MIN_FONT = 18     # px: the smallest text of a figure on a projector (the page's text is about 25 px)
_FONT_KEYS = ("font", "tickfont", "textfont", "insidetextfont", "outsidetextfont")


def _scale_fonts(node: Any, scale: float, floor: int) -> None:
    """Every font size under `node` (a figure's JSON: layout, axes, annotations, colour bars, traces) scaled by
    `scale` and at least `floor` px, in place."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _FONT_KEYS and isinstance(value, dict):
                value["size"] = max(floor, round((value.get("size") or 12) * scale))
            _scale_fonts(value, scale, floor)
    elif isinstance(node, (list, tuple)):
        for value in node:
            _scale_fonts(value, scale, floor)


def presenter_figure(fig, scale: float = 1.5, floor: int = PRESENTER_MIN_FONT):
    """A copy of a Plotly figure for a projector: every font - the layout's, the title's, every axis's ticks and
    titles, annotations, legends, colour bars, cell texts - `scale` times larger and at least `floor` px (a 12 px
    tick label beside 25 px text cannot be read from the back of a room). The original, maybe cached, is not
    touched."""
    import plotly.graph_objects as go

    spec = fig.to_plotly_json()
    layout = spec.setdefault("layout", {})
    layout.setdefault("font", {})
    for axis in [k for k in layout if k.startswith(("xaxis", "yaxis"))] or ["xaxis", "yaxis"]:
        layout.setdefault(axis, {}).setdefault("tickfont", {})
    _scale_fonts(spec, scale, floor)
    out = go.Figure(spec)
    if out.layout.height:
        out.update_layout(height=round(out.layout.height * 1.25))
    margin = out.layout.margin
    out.update_layout(margin=dict(l=round((margin.l or 80) * 1.3), b=round((margin.b or 80) * 1.3),
                                  t=round((margin.t or 100) * 1.2), r=margin.r))
    return out


__all__ = ["PRESENTER_MIN_FONT", "presenter_figure"]
