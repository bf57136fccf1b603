"""What the axes of a map are called and how long ones are cut: axis kinds, titles and labels ("head 1", the
tokens, "S1: first words..."), the size limits of token axes and the window that pages them."""
from __future__ import annotations

from typing import Sequence

from textcls.viz.style import short_words

MAX_TOKENS = 200          # most tokens on one heatmap axis before paging / binning
MAX_GRID_TOKENS = 60      # tokens per axis in each cell of the layer x head grid
MAX_HIGHLIGHT_TOKENS = 400
PAD_LABEL = "<pad>"

AXIS_TITLES = {
    "token": "token", "query_token": "query token", "key_token": "key token",
    "sentence": "sentence", "query_sentence": "query sentence", "key_sentence": "key sentence",
    "word": "word", "query_word": "query word", "key_word": "key word",
    "head": "head", "layer": "layer", "filter": "filter", "channel": "channel", "gate": "gate",
    "window": "window", "feature": "feature dimension",
    "entity": "relative position to entity",
}
ENTITY_LABELS = ("to entity 1 (<e1>)", "to entity 2 (<e2>)")
_PREFIX = {"head": "head ", "layer": "layer ", "filter": "f", "channel": "ch", "gate": "gate ",
           "window": "w", "feature": "d"}


def is_token_axis(axis: str) -> bool:
    return axis.endswith("token")


def is_word_axis(axis: str) -> bool:
    return axis.endswith("word")


def is_sentence_axis(axis: str) -> bool:
    return axis.endswith("sentence")


def is_sequence_axis(axis: str) -> bool:
    return is_token_axis(axis) or is_word_axis(axis) or is_sentence_axis(axis)


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
                out.append(f"S{i + 1}: {short_words(' '.join(map(str, sentences[i][:10])), 40)}")
            else:
                out.append(f"S{i + 1}" if sentences is None else f"S{i + 1} {PAD_LABEL}")
        return out
    if axis == "entity":
        return [ENTITY_LABELS[i] if i < len(ENTITY_LABELS) else f"entity {i + 1}" for i in range(n)]
    prefix = _PREFIX.get(axis, f"{axis} ")
    return [f"{prefix}{i + 1}" for i in range(n)]


def axis_title(axis: str) -> str:
    """The title of an axis on a figure ("" for the placeholder axes of 0-D and 1-D maps)."""
    return AXIS_TITLES.get(axis, axis) if axis not in ("", "value") else ""


def token_window(n: int, window: tuple[int, int] | None, max_tokens: int | None = None) -> tuple[int, int]:
    """The positions lo..hi shown of a sequence axis of n: `window=(start, size)` with size capped at
    `max_tokens`; a start too close to the end shows the last `size` positions. Without a window, the first
    `max_tokens` (all, when None). One rule for every view of a long text."""
    cap = n if max_tokens is None else max_tokens
    if window is None:
        return 0, min(n, cap)
    size = max(1, min(int(window[1]), cap))
    lo = max(0, min(int(window[0]), n - size))
    return lo, min(n, lo + size)
