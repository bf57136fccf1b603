"""Pieces the paper views (textcls.viz.paper_views) share: controls, the characters per line of shaded words, the
concentration sentence put first in a caption, and one heatmap of a map."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from textcls.interpret.concentration import Concentration
from textcls.viz.maps import heatmap_item
from textcls.viz.style import FigureOut
from textcls.viz.views import Control, ViewInput

if TYPE_CHECKING:
    from textcls.records import SpecRecord as MapSpec


def ctrl(name: str, n: int, prefix: str, label: str | None = None, default: int = 0) -> Control:
    return Control(name, label or name, list(range(n)), [f"{prefix}{i + 1}" for i in range(n)],
                   default=min(default, max(0, n - 1)))


def chars_per_line(vi: ViewInput) -> int:
    """Characters per line of shaded-word figures (opts "chars_per_line"; narrower in side-by-side layouts)."""
    return max(20, int(vi.opts.get("chars_per_line", 90)))


def stretch_control() -> Control:
    return Control("stretch", "shading", [0, 1], ["vs. uniform share", "stretched to row max"], default=0)


def token_choice(vi: ViewInput, name: str = "token", label: str = "word", default: int = 0) -> Control:
    toks = vi.tokens or [""]
    return Control(name, label, list(range(len(toks))), [f"{i + 1}: {t}" for i, t in enumerate(toks)],
                   default=min(default, len(toks) - 1))


def ngram(tokens: Sequence[str], start: int, h: int) -> str:
    return " ".join(str(t) for t in tokens[max(0, start): start + h])


def with_trust(item: FigureOut, conc: Concentration, over: str = "shaded") -> FigureOut:
    """The view's concentration sentence first in its caption, and its numbers in meta (tests, exports).
    over: "shaded" (the weights the figure draws) or "heads" (each head's or query's own distribution)."""
    item.caption = conc.sentence() + (" " + item.caption if item.caption else "")
    item.meta["concentration"] = {"normalised_entropy": conc.entropy, "peak": conc.peak,
                                  "effective": conc.effective, "n": conc.n, "distributions": conc.count,
                                  "verdict": conc.verdict, "over": over}
    return item


def heat(vi: ViewInput, key: str, spec: MapSpec, arr, *, title: str, caption: str = "",
          index: dict | None = None, marks=None, aggregate: bool = False) -> FigureOut:
    return heatmap_item(f"{vi.model}_{key}", arr, spec, vi.tokens, sentences=vi.sentences, index=index,
                        window=vi.window, aggregate=aggregate, title=title, marks=marks, caption=caption)


__all__ = ["chars_per_line", "ctrl", "heat", "ngram", "stretch_control", "token_choice", "with_trust"]
