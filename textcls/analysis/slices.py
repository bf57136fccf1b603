"""Slices of a data split: named row subsets defined by label, prediction, correct / wrong, length bucket, a word,
a regular expression, "the models disagree", or a saved list of rows; metrics per slice per checkpoint side by
side; slices saved per data set as JSON in the user folder (`$TEXTCLS_HOME/slices/DATASET.json`, atomic writes).

A slice is a plain definition (`Slice`), evaluated against a `SliceContext` (the split's texts, gold label
names and each checkpoint's predicted label names), so one saved slice is reusable on any page and any
checkpoint. Bad definitions (a regex that does not compile, an unknown checkpoint, an empty bucket) raise
`SliceError` (a ValueError) with a one-line message. No torch, no Streamlit.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from textcls.runtime.files import atomic_write_json
from textcls.analysis.metrics import accuracy, macro_f1
from textcls.runtime.paths import user_home

KINDS = ("all", "label", "prediction", "correct", "wrong", "length", "word", "regex", "disagree", "rows")
KIND_TEXT = {"all": "every row", "label": "gold label is", "prediction": "predicted label is",
             "correct": "predicted correctly by", "wrong": "predicted wrongly by", "length": "length in words",
             "word": "contains the word", "regex": "matches the regular expression", "disagree": "the models disagree",
             "rows": "a saved list of rows"}
MAX_PATTERN = 500


class SliceError(ValueError):
    """A slice definition that cannot be applied (the message says why, in one line)."""


@dataclass
class Slice:
    """One slice definition. `value` by kind: label/prediction: a label name; length: [min, max] words (max
    inclusive, None = no bound); word: a word (case-insensitive, whole word); regex: a pattern (searched,
    case-insensitive); rows: row indices into the split; all/correct/wrong/disagree: unused. `checkpoint`:
    whose prediction prediction/correct/wrong read (None = every checkpoint given must agree on it)."""

    name: str
    kind: str
    value: Any = None
    checkpoint: str | None = None
    note: str = ""
    split: str | None = None      # the split a "rows" slice was made on (its row numbers index that split)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise SliceError(f"unknown slice kind {self.kind!r}; choose one of {', '.join(KINDS)}")
        if self.kind == "rows":
            self.value = sorted({int(i) for i in (self.value or [])})
        if self.kind == "length":
            lo, hi = (list(self.value) + [None, None])[:2] if self.value else (None, None)
            self.value = [None if lo is None else int(lo), None if hi is None else int(hi)]

    def describe(self) -> str:
        who = f" {self.checkpoint}" if self.checkpoint else (" every checkpoint" if self.kind in
                                                                 ("correct", "wrong", "prediction") else "")
        if self.kind in ("all", "disagree"):
            return KIND_TEXT[self.kind]
        if self.kind in ("correct", "wrong"):
            return KIND_TEXT[self.kind] + who
        if self.kind == "length":
            lo, hi = self.value
            return f"{lo if lo is not None else 0}-{hi if hi is not None else '∞'} words"
        if self.kind == "rows":
            return f"{len(self.value)} saved rows"
        if self.kind == "prediction":
            return f"{KIND_TEXT[self.kind]} {self.value} ({who.strip()})"
        return f"{KIND_TEXT[self.kind]} {self.value!r}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Slice":
        return cls(name=str(d["name"]), kind=str(d["kind"]), value=d.get("value"), checkpoint=d.get("checkpoint"),
                   note=str(d.get("note", "")), split=d.get("split"))


@dataclass
class SliceContext:
    """What a slice is evaluated on: texts, gold label names, {checkpoint: predicted label names} (same order)."""

    texts: Sequence[str]
    gold: Sequence[str]
    preds: dict[str, Sequence[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.texts)
        if len(self.gold) != n or any(len(p) != n for p in self.preds.values()):
            raise SliceError("texts, gold labels and predictions must have the same length")

    def __len__(self) -> int:
        return len(self.texts)


def compile_pattern(pattern: str) -> re.Pattern:
    """A case-insensitive regex, or SliceError naming why it does not compile."""
    if not pattern:
        raise SliceError("the regular expression is empty")
    if len(pattern) > MAX_PATTERN:
        raise SliceError(f"the regular expression is longer than {MAX_PATTERN} characters")
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as e:
        raise SliceError(f"the regular expression {pattern!r} does not compile: {e}") from None


def word_count(text: str) -> int:
    return len(text.split())


def _preds_of(s: Slice, ctx: SliceContext) -> list[np.ndarray]:
    if s.checkpoint is not None:
        if s.checkpoint not in ctx.preds:
            raise SliceError(f"the slice {s.name!r} reads the predictions of {s.checkpoint!r}, which is not "
                             f"among the checkpoints chosen ({', '.join(ctx.preds) or 'none'})")
        return [np.asarray(ctx.preds[s.checkpoint], dtype=object)]
    if not ctx.preds:
        raise SliceError(f"the slice {s.name!r} needs predictions; choose at least one checkpoint")
    return [np.asarray(p, dtype=object) for p in ctx.preds.values()]


def slice_mask(s: Slice, ctx: SliceContext) -> np.ndarray:
    """Boolean mask over ctx's rows of the rows in slice `s` (SliceError for a definition that cannot apply)."""
    n = len(ctx)
    gold = np.asarray(ctx.gold, dtype=object)
    if s.kind == "all":
        return np.ones(n, dtype=bool)
    if s.kind == "label":
        return gold == s.value
    if s.kind == "prediction":
        return np.logical_and.reduce([p == s.value for p in _preds_of(s, ctx)])
    if s.kind in ("correct", "wrong"):
        ok = np.logical_and.reduce([p == gold for p in _preds_of(s, ctx)]) if s.kind == "correct" else \
            np.logical_and.reduce([p != gold for p in _preds_of(s, ctx)])
        return np.asarray(ok, dtype=bool)
    if s.kind == "length":
        lo, hi = s.value
        if lo is not None and hi is not None and lo > hi:
            raise SliceError(f"length bucket {lo}-{hi}: the minimum is above the maximum")
        lens = np.array([word_count(t) for t in ctx.texts])
        return (lens >= (lo or 0)) & (lens <= (hi if hi is not None else np.iinfo(np.int64).max))
    if s.kind == "word":
        word = str(s.value or "").strip()
        if not word or len(word.split()) != 1:
            raise SliceError(f"the slice {s.name!r} needs one word, got {word!r}")
        rx = re.compile(r"(?<!\w)" + re.escape(word) + r"(?!\w)", re.IGNORECASE)
        return np.array([bool(rx.search(t)) for t in ctx.texts], dtype=bool)
    if s.kind == "regex":
        rx = compile_pattern(str(s.value or ""))
        return np.array([bool(rx.search(t)) for t in ctx.texts], dtype=bool)
    if s.kind == "disagree":
        if len(ctx.preds) < 2:
            raise SliceError("\"the models disagree\" needs at least two checkpoints")
        P = np.stack([np.asarray(p, dtype=object) for p in ctx.preds.values()], axis=1)
        return np.array([len(set(row)) > 1 for row in P], dtype=bool)
    rows = np.asarray(s.value, dtype=np.int64)
    if rows.size and (rows.min() < 0 or rows.max() >= n):
        raise SliceError(f"the slice {s.name!r} names rows up to {int(rows.max())} but the split has {n}")
    out = np.zeros(n, dtype=bool)
    out[rows] = True
    return out


def slice_rows(s: Slice, ctx: SliceContext) -> np.ndarray:
    """The row indices of slice `s`, in order."""
    return np.nonzero(slice_mask(s, ctx))[0]


def slice_texts(s: Slice, bundle: Any, predict: Callable[[list[str]], Sequence[Any]] | None = None,
                name: str = "model") -> tuple[str, list[str]]:
    """(split name, texts) of a saved slice applied to its data set `bundle` (`data.DataBundle`): its own split
    (else test, else the first), the rows it selects in order. `predict(texts)` -> predictions gives the labels
    a slice on predictions needs (as model `name`). SliceError when the slice selects nothing."""
    split_name = s.split or ("test" if "test" in bundle.splits else next(iter(bundle.splits)))
    split = bundle.splits[split_name]
    texts = list(split.texts)
    preds = {name: [p.label for p in predict(texts)]} if predict is not None else {}
    ctx = SliceContext(texts, [bundle.labels[y] for y in split.labels], preds)
    rows = slice_rows(s, ctx)
    if not len(rows):
        raise SliceError(f"the slice {s.name!r} is empty on {bundle.name} / {split_name}")
    return split_name, [texts[i] for i in rows]


def check_split(s: Slice, split: str, sampled: bool = False) -> None:
    """SliceError when a "rows" slice cannot apply to `split` (made on another split, or the rows were sampled,
    so row numbers mean other texts). Every other kind applies to any split."""
    if s.kind != "rows":
        return
    if s.split and s.split != split:
        raise SliceError(f"the slice {s.name!r} lists rows of the {s.split!r} split, not {split!r}")
    if sampled:
        raise SliceError(f"the slice {s.name!r} lists row numbers of the whole split; use the whole split "
                         "(no sample) to apply it")


def length_buckets(texts: Sequence[str], n: int = 4) -> list[Slice]:
    """About-equal-count length buckets (quantiles of the word count), as slices."""
    lens = np.array([word_count(t) for t in texts]) if len(texts) else np.zeros(0, dtype=int)
    if not lens.size:
        return []
    edges = sorted(set(int(x) for x in np.quantile(lens, np.linspace(0, 1, n + 1))))
    out, lo = [], int(lens.min())
    for hi in edges[1:] or [int(lens.max())]:
        out.append(Slice(f"{lo}-{hi} words", "length", [lo, hi]))
        lo = hi + 1
    return out


def default_slices(ctx: SliceContext, labels: Sequence[str]) -> list[Slice]:
    """Slices worth offering for a split: all, each gold label, wrong by every checkpoint, disagreement,
    length quartiles."""
    out = [Slice("all", "all")] + [Slice(f"label = {lab}", "label", lab) for lab in labels]
    if ctx.preds:
        out += [Slice("wrong (every checkpoint)", "wrong")]
    if len(ctx.preds) >= 2:
        out.append(Slice("models disagree", "disagree"))
    return out + length_buckets(ctx.texts)


def slice_metrics(slices: Sequence[Slice], ctx: SliceContext, labels: Sequence[str]) -> pd.DataFrame:
    """One row per (slice, checkpoint): count, accuracy, macro-F1 over `labels` (every class counts; a slice
    that is empty has count 0 and NaN scores). A slice that cannot apply gets its error in `error`."""
    pos = {lab: k for k, lab in enumerate(labels)}
    rows = []
    for s in slices:
        try:
            idx = slice_rows(s, ctx)
        except SliceError as e:
            rows.append({"slice": s.name, "checkpoint": "", "count": 0, "accuracy": np.nan, "macro_f1": np.nan,
                         "error": str(e)})
            continue
        gold = [ctx.gold[i] for i in idx]
        for ck, preds in ctx.preds.items():
            pred = [preds[i] for i in idx]
            extra = {lab: len(pos) + k for k, lab in enumerate(sorted(set(pred) - set(pos)))}
            code = {**pos, **extra}
            t = np.array([code[g] for g in gold], dtype=np.int64)
            p = np.array([code[x] for x in pred], dtype=np.int64)
            rows.append({"slice": s.name, "checkpoint": ck, "count": int(len(idx)),
                         "accuracy": accuracy(t, p) if len(idx) else np.nan,
                         "macro_f1": macro_f1(t, p, len(code)) if len(idx) else np.nan, "error": ""})
    return pd.DataFrame(rows, columns=["slice", "checkpoint", "count", "accuracy", "macro_f1", "error"])


# ---------------------------------------------------------------- saved slices (per data set)

def slices_file(dataset: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(dataset)).strip("._")[:100] or "data"
    return user_home() / "slices" / f"{safe}.json"


def load_slices(dataset: str) -> list[Slice]:
    """The slices saved for a data set ([] when none, or when the file is unreadable)."""
    path = slices_file(dataset)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return [Slice.from_dict(d) for d in raw.get("slices", [])]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def save_slice(dataset: str, s: Slice) -> list[Slice]:
    """Save (or replace, by name) one slice for a data set; returns the saved list."""
    if not s.name.strip():
        raise SliceError("a saved slice needs a name")
    if s.kind == "regex":
        compile_pattern(str(s.value or ""))
    keep = [x for x in load_slices(dataset) if x.name != s.name] + [s]
    atomic_write_json(slices_file(dataset), {"dataset": dataset, "slices": [x.to_dict() for x in keep]}, indent=1)
    return keep


def delete_slice(dataset: str, name: str) -> list[Slice]:
    keep = [x for x in load_slices(dataset) if x.name != name]
    atomic_write_json(slices_file(dataset), {"dataset": dataset, "slices": [x.to_dict() for x in keep]}, indent=1)
    return keep


__all__ = ["KINDS", "Slice", "SliceContext", "SliceError", "check_split", "slice_texts", "compile_pattern", "default_slices", "delete_slice",
           "length_buckets", "load_slices", "save_slice", "slice_mask", "slice_metrics", "slice_rows", "slices_file"]
