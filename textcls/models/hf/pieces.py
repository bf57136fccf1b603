"""The word-piece view of a Hugging Face checkpoint: the pieces the encoder read for one text and its attention
over them, next to the word view every page shows (`textcls.models.hf.model` aggregates pieces into words).

`piece_attention_of(predictor, text)` encodes the text with the checkpoint's own word tokenizer (truncation
included), takes each word's pieces from the model's word table - exactly the ids the forward lays out as
the template's special pieces around them ([CLS] pieces... [SEP], <s> pieces..., or the pieces alone) - and
returns them as strings ("un", "##believ", "##able") with the (layer, head, L, L)
piece attention. `piece_window` maps the page's word window onto the pieces of the same words, and
`WORD_RULE` states, in words, what the word view makes of these weights.
"""
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


def has_word_pieces(predictor) -> bool:
    """Whether the checkpoint's model reads word pieces whose attention `piece_attention_of` can show (a Hugging
    Face model whose family computes attention weights)."""
    family = getattr(predictor.model, "family", None)
    return callable(getattr(predictor.model, "piece_attention", None)) and hasattr(predictor.model, "table") \
        and hasattr(getattr(predictor.tokenizer, "hf", None), "convert_ids_to_tokens") \
        and getattr(family, "attention", "none") != "none"


def piece_attention_of(predictor, text: str) -> PieceAttention:
    """The pieces the encoder read for `text` (truncated as the prediction is) and its attention over them.
    Raises ValueError for a checkpoint without word pieces."""
    if not has_word_pieces(predictor):
        raise ValueError(f"{getattr(predictor, 'name', 'this checkpoint')} does not read word pieces")
    model, hf = predictor.model, predictor.tokenizer.hf
    enc = predictor.encode([text])
    n = int(enc.mask[0].sum())
    word_ids = enc.token_ids[0, :n].tolist()
    pieces = list(hf.convert_ids_to_tokens(model.prefix)) if model.prefix else []
    owner = [-1] * len(pieces)
    for w, wid in enumerate(word_ids):
        ids = list(model.table.pieces(wid))
        pieces += hf.convert_ids_to_tokens(ids)
        owner += [w] * len(ids)
    if model.suffix:
        pieces += hf.convert_ids_to_tokens(model.suffix)
        owner += [-1] * len(model.suffix)
    if not pieces:                                                       # an empty text: the one filler piece
        pieces, owner = hf.convert_ids_to_tokens([model.filler]), [-1]
    device = next(model.parameters()).device
    a = model.piece_attention(enc.token_ids.to(device), enc.mask.to(device))[0]     # (layer, head, L', L')
    L = len(pieces)
    att = a[:, :, :L, :L].float().cpu().numpy()                          # (layer, head, L, L)
    truncated = bool(enc.truncated[0]) if getattr(enc, "truncated", None) else False
    family = model.family
    rows = {"first": (0,), "last": (L - 1,), "mean": tuple(range(L))}[family.pooling]
    return PieceAttention(list(enc.tokens[0]), pieces, owner, att, truncated, int(model.config.max_len), rows,
                          family.pooled, family.causal)


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


__all__ = ["PieceAttention", "WORD_RULE", "has_word_pieces", "piece_attention_of", "piece_window", "shown_note"]
