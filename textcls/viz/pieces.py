"""Figures of a Hugging Face encoder's attention over its word pieces (the Inspect page's "Word pieces" switch):
the Transformer self-attention view (one layer and head, the head view, the all-heads grid, the [CLS] row) drawn
over the pieces [CLS] un ##believ ##able ... [SEP] instead of the words. The numbers come from
`textcls.models.hf.pieces.piece_attention_of` as a `textcls.data.pieces.PieceAttention` (plain data, no torch:
the app's model worker computes them, its server draws them); this module only draws them."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from textcls.viz.style import FigureOut
from textcls.viz.views import Control, ViewInput, build_view, view_controls

PIECE_VIEW = "TR-ATT"
PIECE_ATTENTION = ("Self-attention between the word pieces the encoder read, [CLS] and [SEP] included (rows: "
                   "query pieces, columns: key pieces; each row sums to 1 over the pieces)")
PIECE_CLS = "The [CLS] piece's attention over every piece, [CLS] and [SEP] included (each row sums to 1)"


PIECE_CAUSAL = ("; causal: each piece attends only to itself and the pieces before it (the empty upper triangle is "
                "the architecture, not a finding)")


def _input(pieces: Sequence[str], attention: Any, title: str, opts: dict | None, pooled=None) -> ViewInput:
    """`pooled`: (the rows the classifier reads, naming them, causal) as `PieceAttention` has them; None: [CLS]."""
    from textcls.records import SpecRecord as MapSpec        # MapSpec's fields without torch (its module imports it)

    A = np.asarray(attention)                                               # (layer, head, L, L)
    if A.ndim != 4 or A.shape[-1] != len(pieces) or A.shape[-2] != len(pieces):
        raise ValueError(f"piece attention of shape {A.shape} for {len(pieces)} pieces")
    rows, named, causal = pooled if pooled is not None else ((0,), None, False)
    rows = [r for r in rows if 0 <= r < len(pieces)] or [0]
    first = list(rows) == [0]
    name = "cls_attention" if first else "pooled_attention"
    what = PIECE_CLS if first and named is None else \
        f"What the classifier reads: the attention row of {named} over every piece (each row sums to 1)"
    specs = {"attention": MapSpec("attention", ("layer", "head", "query_token", "key_token"), "attention",
                                  PIECE_ATTENTION + (PIECE_CAUSAL if causal else "")),
             name: MapSpec(name, ("layer", "head", "key_token"), "attention", what)}
    maps = {"attention": A, name: A[:, :, list(rows), :].mean(2)}          # (layer, head, L, L), (layer, head, L)
    return ViewInput("hf", specs, maps, list(pieces), title=title, opts=dict(opts or {}))


def piece_controls(pieces: Sequence[str], attention: Any) -> list[Control]:
    """The view's controls (layer, head, the head view's query piece) for these pieces."""
    return view_controls(PIECE_VIEW, _input(pieces, attention, "", None))


def piece_figures(pieces: Sequence[str], attention: Any, *, title: str, opts: dict | None = None,
                  pooled=None) -> list[FigureOut]:
    """The self-attention view over the pieces; `opts` as the view takes them (layer, head, query, window over
    the pieces, max_width); `pooled` (rows, their name, causal: `PieceAttention.pooled_rows`, `.pooled`,
    `.causal`) says which row the classifier reads. Figure keys start with "pieces_" (never those of the word
    view)."""
    out = build_view(PIECE_VIEW, _input(pieces, attention, f"{title} · word pieces", {**(opts or {}),
                                                                                     "unit": "piece"}, pooled))
    for item in out:
        item.key = "pieces_" + item.key
    return out


__all__ = ["PIECE_ATTENTION", "PIECE_CLS", "PIECE_VIEW", "piece_controls", "piece_figures"]
