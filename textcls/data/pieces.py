"""One text as a Hugging Face encoder read it, as plain data (no torch): its word pieces and the attention over them
(`PieceAttention`, computed by `textcls.models.hf.pieces.piece_attention_of`, drawn by `textcls.viz.pieces`),
with what the pages say of them: `WORD_RULE` (what the word view makes of these weights), `piece_window` (the
page's word window as a window over the pieces) and `shown_note`. The app's model worker computes one and sends
it; the server, which never imports torch, draws it."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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


__all__ = ["PieceAttention", "WORD_RULE", "piece_window", "shown_note"]
