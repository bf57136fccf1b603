"""Figures of a Hugging Face encoder's attention over its word pieces (the Inspect page's "Word pieces" switch):
the Transformer self-attention view (one layer and head, the head view, the all-heads grid, the [CLS] row) drawn
over the pieces [CLS] un ##believ ##able ... [SEP] instead of the words. The numbers come from
`textcls.models.hf.pieces.piece_attention_of`; this module only draws them, and holds them as plain data
(`PieceAttention`, no torch: the app's model worker computes them, its server draws them) with what the page
says of them (`WORD_RULE`, `piece_window`, `shown_note`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from textcls.viz.style import FigureOut
from textcls.viz.views import Control, ViewInput, build_view, view_controls

PIECE_VIEW = "TR-ATT"
PIECE_ATTENTION = ("Self-attention between the word pieces the encoder read, [CLS] and [SEP] included (rows: "
                   "query pieces, columns: key pieces; each row sums to 1 over the pieces)")
WORD_RULE = ("The word view aggregates these weights: a key word's weight is the sum of its pieces' columns; a "
             "query word's row is the mean of its pieces' rows (taken before the special pieces - [CLS]/[SEP], "
             "<s>/</s> - are left out); the special columns are then left out and the row renormalised to sum to "
             "1, so each piece counts in proportion to the weight it gave to real pieces. The special rows are "
             "not word rows; what went to them is the map special_share. What the classifier reads is the row "
             "of the position its head pools ([CLS] for an encoder, the last real piece for a decoder, the mean "
             "of the rows for mean pooling). A word longer than 8 pieces keeps its first 8.")


@dataclass
class PieceAttention:
    """One text as the encoder read it. `pieces` (L,) runs [CLS], the words' pieces, [SEP]; `owner[i]` is the index
    in `words` of piece i's word (-1 for [CLS]/[SEP]); `attention` (layer, head, L, L), rows summing to 1 over the
    L pieces; `truncated`: the text was cut to `max_len` pieces, [CLS] and [SEP] included."""

    words: list[str]
    pieces: list[str]
    owner: list[int]
    attention: np.ndarray
    truncated: bool
    max_len: int
    pooled_rows: tuple[int, ...] = (0,)   # the pieces whose rows (their mean) are what the classifier reads
    pooled: str = "the first position ([CLS]), which the classification head reads"
    causal: bool = False                  # a decoder: each piece attends only to itself and the pieces before it

    def spans(self) -> list[tuple[int, int]]:
        """Per word, the positions lo..hi (hi excluded) of its pieces in `pieces`."""
        out: list[tuple[int, int]] = []
        for i, w in enumerate(self.owner):
            if w < 0:
                continue
            if w == len(out):
                out.append((i, i + 1))
            else:
                out[w] = (out[w][0], i + 1)
        return out


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


def piece_window(pa: PieceAttention, word_window: tuple[int, int] | None) -> tuple[int, int] | None:
    """The page's word window (first word, number of words) as a window over the pieces: the pieces of those
    words, with [CLS] when the first word is shown and [SEP] when the last is. None: no word window."""
    if word_window is None:
        return None
    spans = pa.spans()
    if not spans:
        return None
    first = max(0, min(int(word_window[0]), len(spans) - 1))
    last = max(first, min(first + int(word_window[1]), len(spans)) - 1)
    lo = 0 if first == 0 else spans[first][0]
    hi = len(pa.pieces) if last == len(spans) - 1 else spans[last][1]
    return lo, hi - lo


def shown_note(pa: PieceAttention, window: tuple[int, int] | None, max_tokens: int) -> str:
    """One sentence saying which pieces the figures show (the text cut to the position table, a window)."""
    L = len(pa.pieces)
    specials = list(dict.fromkeys(p for p, o in zip(pa.pieces, pa.owner) if o < 0))
    parts = [f"{L} pieces" + (f", {' and '.join(specials)} included" if specials else "")]
    if pa.truncated:
        parts.append(f"the text was cut to the model's {pa.max_len} positions: only these pieces were read")
    lo, size = window if window is not None else (0, L)
    size = max(1, min(int(size), max_tokens))
    lo = max(0, min(int(lo), L - size))                 # as the figures page it (textcls.viz.axes.token_window)
    hi = min(L, lo + size)
    if lo > 0 or hi < L:
        words = sorted({pa.owner[i] for i in range(lo, hi) if pa.owner[i] >= 0})
        which = f" (words {words[0] + 1}-{words[-1] + 1})" if words else ""
        parts.append(f"the layer x head heatmap shows pieces {lo + 1}-{hi} of {L}{which}")
    return "; ".join(parts) + "."


__all__ = ["PIECE_ATTENTION", "PIECE_CLS", "PIECE_VIEW", "PieceAttention", "WORD_RULE", "piece_controls",
           "piece_figures", "piece_window", "shown_note"]
