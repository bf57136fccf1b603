"""Whether a text is far shorter than what a checkpoint was trained on.

A document model trained on IMDB reviews (hundreds of words) reads a three-sentence review as a fragment of a
review: its sentence attention has little to choose between, and its prediction can flip on punctuation
(hcan-imdb called "The plot was thin. The actors were wonderful though. I left smiling." negative, its darkest
word "."). `length_note` says so, with the typical length of the training data and a checkpoint of the same
labels trained on texts of the text's own length.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Sequence

import numpy as np

SHORTER = 5            # a text this many times shorter than the data set's median is "far shorter"


@lru_cache(maxsize=32)
def typical_words(data: str) -> int | None:
    """The median number of words of a data set's texts (its test split, else the first split there is), from
    the data set `data` or, when only a sample ships, `data`_sample; None when neither is here."""
    from textcls.data.datasets import find_dataset, load_bundled
    for name in (str(data), f"{data}_sample"):
        folder = find_dataset(name)
        if folder is None:
            continue
        try:
            bundle = load_bundled(folder)
        except Exception:  # noqa: BLE001 - no length known is a fine answer
            return None
        split = bundle.splits.get("test") or next(iter(bundle.splits.values()), None)
        if split is None or not len(split.texts):
            return None
        return int(np.median([len(str(t).split()) for t in split.texts]))
    return None


def _shorter_ones(info: Any, typical: int, others: Sequence[Any], exclude: Sequence[str]) -> str:
    """The tip naming checkpoints among `others` with `info`'s labels whose data's texts are near a short text's
    length (the same model family first), none of `exclude`; "" when there is none."""
    better = [o.name for o in sorted(others, key=lambda o: o.model != info.model)
              if o.name not in exclude and list(o.labels) == list(info.labels)
              and (typical_words(str(o.data or "")) or 0) and typical_words(str(o.data or "")) < typical / SHORTER]
    return (f" For a text this short, try {', '.join(better[:3])} (trained on texts of about this length)."
            if better else "")


def _too_short(info: Any, n_words: int) -> int | None:
    """The median length of `info`'s training texts when a text of `n_words` words is far shorter, else None."""
    typical = typical_words(str(info.data or ""))
    if typical is None or n_words <= 0 or n_words * SHORTER > typical:
        return None
    return typical


def length_note(info: Any, n_words: int, others: Sequence[Any] = ()) -> str | None:
    """One line when a text of `n_words` words is at least SHORTER times shorter than the median text of the
    data set checkpoint `info` (an object with name, model, data, labels) was trained on, naming checkpoints
    among `others` with the same labels whose data's texts are near the text's length (the same model family
    first); None when the length is fine or unknown."""
    typical = _too_short(info, n_words)
    if typical is None:
        return None
    return (f"This text has {n_words} words; {info.name} was trained on {info.data}, whose texts have a median of "
            f"{typical} words. A model reads a text far shorter than its training texts as a fragment: its "
            f"prediction and its attention mean less here.{_shorter_ones(info, typical, others, [info.name])}")


def length_notes(infos: Sequence[Any], n_words: int, others: Sequence[Any] = ()) -> list[str]:
    """`length_note` for several checkpoints shown together (Compare): one line per data set they were trained
    on, naming every checkpoint it concerns - six sst2 checkpoints on a two-word text get one line, not six."""
    groups: dict[str, list] = {}
    for info in infos:
        if _too_short(info, n_words) is not None:
            groups.setdefault(str(info.data or ""), []).append(info)
    out = []
    for data, part in groups.items():
        if len(part) == 1:
            out.append(length_note(part[0], n_words, others))
            continue
        typical = _too_short(part[0], n_words)
        names = [i.name for i in part]
        listed = ", ".join(names[:-1]) + f" and {names[-1]}"
        out.append(f"This text has {n_words} words; {listed} were trained on {data}, whose texts have a median of "
                   f"{typical} words. A model reads a text far shorter than its training texts as a fragment: "
                   f"their predictions and their attention mean less here."
                   f"{_shorter_ones(part[0], typical, others, names)}")
    return out
