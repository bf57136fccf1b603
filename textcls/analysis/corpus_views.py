"""Data-set-level views: what a trained model attends to, and what its filters detect, over a whole split.

No Streamlit here (the Evaluate page calls these functions; tests call them on small hand-checked cases).

Views (ids from docs/figures.md):
- LAMA-T4 "top attended words per class" - `token_weights` runs the model over every text and keeps one weight
  per token: the model's own per-token importance, through the data-set path of `textcls.interpret.batched`
  (`importances`, the one batched implementation the faithfulness panel and CLI use; ACT `alpha`;
  LAMA `attention` mean over heads; HCAN `beta * gamma` (mean over heads), flattened sentence by sentence;
  the Transformer's cls row, mean over heads, last layer - or attention rollout with max/mean pooling; CNNs:
  the max-pool picks' activations). Weights sum to 1 over each text's tokens. `top_words` then ranks, per
  class, the words by their mean weight *relative to a uniform share* (weight x number of tokens of the text:
  1.0 = as much as the average token of that text; raw weights favour words of short texts), among words
  seen at least `min_count` times in that class.
- LAMA-F2 "distribution of a chosen word's attention weight, one curve per label" - `word_weights` collects
  the weight of every occurrence of a word, grouped by (gold or predicted) label; `weight_histogram` bins
  them on shared bins into densities (one curve per label).
- ACT-FM / AG-F3 over a data set: "top-activating n-grams of each filter" - `filter_ngrams` runs a CNN (Kim
  CNN, AGCNN) or ACT and keeps, for every filter, its max-pool value and position on every text (the
  `argmax_*` maps: the window start each filter's max-pool picked); the n-gram of a pick is tokens
  start..start+h-1 (h the window size; ACT's "center" padding shifts it by (h-1)//2). Per filter the
  distinct n-grams with the highest values are listed, with `hits` = the number of texts on which the filter's
  max-pool picked exactly that n-gram. For ACT layers above the first the window runs over the previous
  layer's positions, so the n-gram is the centre of a wider receptive field. A pick whose value is exactly 0
  (ReLU: the filter fired nowhere) is not an n-gram the filter "detects" and is skipped.

Passes over thousands of texts are batched (texts sorted by length so padding stays small), report progress
through `progress(done, total)`, and are cached on disk (`corpus_cache.CorpusCache`) per (checkpoint folder and
its files' modification times, the texts and labels, the view and its settings): a split is computed once per
checkpoint. Cached files are JSON + .npz read with allow_pickle=False (nothing is unpickled).
"""
from __future__ import annotations

import io
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from textcls.analysis.corpus_cache import CorpusCache
from textcls.runtime.files import atomic_write
from textcls.runtime.threads import batch_work

Progress = Callable[[int, int], None]
BY = ("gold", "pred")
SCORES = ("relative", "mean", "total")
DEFAULT_BATCH = 128


def _noop(done: int, total: int) -> None:
    return None


def _model_of(obj):
    return getattr(obj, "model", obj)


def _length_order(texts: Sequence[str]) -> list[int]:
    return sorted(range(len(texts)), key=lambda i: len(texts[i]))


def _gold_index(gold: Sequence[str] | Sequence[int] | None, labels: Sequence[str], n: int) -> np.ndarray:
    """Gold labels (names or model indices) -> model label indices; -1 where unknown/absent."""
    if gold is None:
        return np.full(n, -1, dtype=np.int64)
    gold = list(gold)
    if len(gold) != n:
        raise ValueError(f"{n} texts but {len(gold)} gold labels")
    pos = {str(lab): i for i, lab in enumerate(labels)}
    out = np.full(n, -1, dtype=np.int64)
    for i, g in enumerate(gold):
        if isinstance(g, (int, np.integer)) and not isinstance(g, bool):
            if not 0 <= int(g) < len(labels):
                raise ValueError(f"gold label index {g} out of range for labels {list(labels)}")
            out[i] = int(g)
        else:
            out[i] = pos.get(str(g), -1)
    return out


# ---------------------------------------------------------------- per-token weights over a corpus


@dataclass
class CorpusWeights:
    """One weight per token of every text (the model's own token importance)."""

    tokens: list[list[str]]           # per text, the tokens the model saw
    weights: list[np.ndarray]         # per text, (len(tokens),) float, summing to 1 (or all 0)
    gold: np.ndarray                  # (N,) model label index of the gold label, -1 unknown
    pred: np.ndarray                  # (N,) predicted label index
    labels: list[str]                 # the model's label names
    source: str = ""                  # what the weights are (e.g. "'alpha'")
    seconds: float = 0.0              # time the pass took (0 when read from the cache)
    _flat: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.tokens)

    def flat(self) -> dict[str, Any]:
        """Every token occurrence: word (object array), text index, weight, relative weight (x length)."""
        if self._flat is None:
            lengths = np.array([len(t) for t in self.tokens], dtype=np.int64)
            text = np.repeat(np.arange(len(self.tokens)), lengths)
            words = np.array([w for t in self.tokens for w in t], dtype=object)
            w = np.concatenate(self.weights).astype(np.float64) if len(self.weights) else np.zeros(0)
            self._flat = {"word": words, "text": text, "weight": w, "relative": w * lengths[text],
                          "lengths": lengths}
        return self._flat

    # -- disk form (no pickle)
    def _save(self, stem: Path) -> None:
        lengths = np.array([len(t) for t in self.tokens], dtype=np.int64)
        w = np.concatenate(self.weights).astype(np.float32) if self.weights else np.zeros(0, np.float32)
        meta = {"labels": self.labels, "source": self.source, "tokens": self.tokens}
        buf = io.BytesIO()
        np.savez(buf, weights=w, lengths=lengths, gold=self.gold.astype(np.int64), pred=self.pred.astype(np.int64))
        atomic_write(stem.with_suffix(".npz"), buf.getvalue())      # the .json marks a complete entry: last
        atomic_write(stem.with_suffix(".json"), json.dumps(meta, ensure_ascii=False).encode("utf-8"))

    @classmethod
    def _load(cls, stem: Path) -> "CorpusWeights":
        meta = json.loads(stem.with_suffix(".json").read_text(encoding="utf-8"))
        with np.load(stem.with_suffix(".npz"), allow_pickle=False) as z:
            w, lengths, gold, pred = z["weights"], z["lengths"], z["gold"], z["pred"]
        if len(lengths) != len(meta["tokens"]) or int(lengths.sum()) != len(w):
            raise ValueError(f"{stem}: inconsistent cache files")
        cuts = np.cumsum(lengths)[:-1]
        return cls(meta["tokens"], [x.astype(np.float64) for x in np.split(w, cuts)] if len(lengths) else [],
                   gold, pred, list(meta["labels"]), meta["source"])


def supports_token_weights(model) -> tuple[bool, str]:
    """(whether the model has its own per-token importance, what it is / why not)."""
    from textcls.interpret import explanation_source
    try:
        return True, explanation_source(_model_of(model))
    except ValueError as e:
        return False, str(e)


@batch_work
def token_weights(predictor, texts: Sequence[str], gold: Sequence[str] | Sequence[int] | None = None, *,
                  batch_size: int = DEFAULT_BATCH, progress: Progress | None = None,
                  cache: CorpusCache | None = None, cached_only: bool = False) -> CorpusWeights | None:
    """The model's own per-token importance (see the module docstring) for every text, batched.

    predictor: a `Predictor` (its tokenizer, labels and eval-mode model are used; nothing is mutated).
    gold: the texts' gold labels as names (or model label indices), or None.
    cached_only: return the cached result, or None without computing anything.
    """
    from textcls.interpret import as_source, explanation_source
    from textcls.interpret.batched import importances
    from textcls.interpret.buckets import own_shape

    texts = list(texts)
    labels = list(predictor.labels)
    gold_idx = _gold_index(gold, labels, len(texts))
    if cache is not None:
        key = cache.key(predictor, "token_weights", texts, gold_idx, {})
        hit = cache.get(key, CorpusWeights._load)
        if hit is not None:
            (progress or _noop)(len(texts), len(texts))
            return hit
    if cached_only:
        return None
    model = predictor.model
    source = explanation_source(model)
    t0 = time.perf_counter()
    tokens: list[list[str] | None] = [None] * len(texts)
    weights: list[np.ndarray | None] = [None] * len(texts)
    pred = np.zeros(len(texts), dtype=np.int64)
    order = _length_order(texts)
    progress = progress or _noop
    progress(0, len(texts))
    src = as_source(predictor)
    for s in range(0, len(order), batch_size):           # the data-set path of textcls.interpret.batched
        index = order[s:s + batch_size]
        insts = [own_shape(x) for x in src.instances([texts[i] for i in index])]
        atts = importances(model, insts, "attention")
        for b, i in enumerate(index):
            toks = list(insts[b].tokens)
            v = np.asarray(atts[b].scores, dtype=np.float64).reshape(-1)[:len(toks)]
            tokens[i], weights[i] = toks, v
            pred[i] = int(atts[b].target)
        progress(min(s + batch_size, len(order)), len(texts))
    out = CorpusWeights(tokens, weights, gold_idx, pred, labels, source,  # type: ignore[arg-type]
                        seconds=time.perf_counter() - t0)
    if cache is not None:
        cache.put(key, out._save)
    return out


def _class_of(cw: CorpusWeights, by: str) -> np.ndarray:
    if by not in BY:
        raise ValueError(f"by must be one of {BY}, got {by!r}")
    c = cw.gold if by == "gold" else cw.pred
    if by == "gold" and len(c) and (c < 0).all():
        raise ValueError("no gold labels: group by the predicted label (by='pred') instead")
    return c


_WORDLIKE = re.compile(r"\w")
_PTB = frozenset({"-lrb-", "-rrb-", "-lsb-", "-rsb-", "-lcb-", "-rcb-"})   # Penn Treebank brackets (SST files)


def is_wordlike(token: str) -> bool:
    """False for punctuation-only tokens and Penn Treebank bracket tokens (-lrb- ...)."""
    return bool(_WORDLIKE.search(token)) and token not in _PTB


def top_words(cw: CorpusWeights, *, by: str = "gold", k: int = 10, min_count: int = 3, score: str = "relative",
              skip: Sequence[str] = (), skip_punct: bool = True) -> pd.DataFrame:
    """LAMA-T4: per class, the k words with the highest attention score among words seen >= min_count times.

    score: "relative" (default) mean of weight x text length (1.0 = a uniform share), "mean" mean raw weight,
    "total" summed weight (favours frequent words). by: group texts by their "gold" or "pred"icted label.
    Returns columns label, rank, word, score, count, mean_weight, mean_relative, total_weight, texts
    (number of texts of that class containing the word).
    """
    if score not in SCORES:
        raise ValueError(f"score must be one of {SCORES}, got {score!r}")
    if k < 1 or min_count < 1:
        raise ValueError("k and min_count must be >= 1")
    cols = ["label", "rank", "word", "score", "count", "mean_weight", "mean_relative", "total_weight", "texts"]
    cls = _class_of(cw, by)
    f = cw.flat()
    if not len(f["word"]):
        return pd.DataFrame(columns=cols)
    df = pd.DataFrame({"word": f["word"], "text": f["text"], "weight": f["weight"], "relative": f["relative"],
                       "cls": cls[f["text"]]})
    df = df[df["cls"] >= 0]
    drop = set(skip)
    if skip_punct or drop:
        keep = np.array([(not skip_punct or is_wordlike(w)) and w not in drop for w in df["word"]],
                        dtype=bool)
        df = df[keep]
    g = df.groupby(["cls", "word"], sort=False).agg(count=("weight", "size"), mean_weight=("weight", "mean"),
                                                    mean_relative=("relative", "mean"),
                                                    total_weight=("weight", "sum"), texts=("text", "nunique"))
    g = g[g["count"] >= min_count].reset_index()
    g["score"] = g[{"relative": "mean_relative", "mean": "mean_weight", "total": "total_weight"}[score]]
    rows = []
    for c in range(len(cw.labels)):
        part = g[g["cls"] == c].sort_values(["score", "count", "word"], ascending=[False, False, True]).head(k)
        for r, row in enumerate(part.itertuples(index=False), start=1):
            rows.append({"label": cw.labels[c], "rank": r, "word": row.word, "score": float(row.score),
                         "count": int(row.count), "mean_weight": float(row.mean_weight),
                         "mean_relative": float(row.mean_relative), "total_weight": float(row.total_weight),
                         "texts": int(row.texts)})
    return pd.DataFrame(rows, columns=cols)


def word_counts(cw: CorpusWeights, *, min_count: int = 1, skip_punct: bool = True) -> pd.Series:
    """Occurrences of each word over the corpus, most frequent first (for a word picker)."""
    words = pd.Series(cw.flat()["word"], dtype=object)
    counts = words.value_counts()
    if skip_punct:
        counts = counts[[is_wordlike(w) for w in counts.index]]
    return counts[counts >= min_count]


def salient_words(cw: CorpusWeights, *, k: int = 10, min_count: int = 20, skip_punct: bool = True) -> list[str]:
    """The k words (seen >= min_count times in all) with the highest mean relative weight over the whole corpus,
    whatever the label: good words to look at in LAMA-F2. Falls back to fewer occurrences on small corpora."""
    f = cw.flat()
    if not len(f["word"]):
        return []
    df = pd.DataFrame({"word": f["word"], "relative": f["relative"]})
    if skip_punct:
        df = df[[is_wordlike(w) for w in df["word"]]]
    g = df.groupby("word")["relative"].agg(["size", "mean"])
    for need in (min_count, max(2, min_count // 4), 1):
        top = g[g["size"] >= need].sort_values(["mean", "size"], ascending=[False, False])
        if len(top):
            return list(top.index[:k])
    return []


def word_weights(cw: CorpusWeights, word: str, *, by: str = "gold", relative: bool = False
                 ) -> dict[str, np.ndarray]:
    """LAMA-F2: {label: the weight of every occurrence of `word` in texts of that label} (labels with no
    occurrence are left out). relative=True gives weight x text length instead of the raw weight."""
    cls = _class_of(cw, by)
    f = cw.flat()
    hit = f["word"] == word
    vals = (f["relative"] if relative else f["weight"])[hit]
    c = cls[f["text"][hit]]
    return {cw.labels[k]: vals[c == k] for k in range(len(cw.labels)) if (c == k).any()}


def weight_histogram(dist: dict[str, np.ndarray], *, bins: int = 20, value_range: tuple[float, float] | None = None
                     ) -> pd.DataFrame:
    """Bin each label's values on shared bins. Columns: label, bin (0-based), left, right, center, count,
    density (count / (n * width): each label's curve integrates to 1), share (count / n)."""
    cols = ["label", "bin", "left", "right", "center", "count", "density", "share"]
    if bins < 1:
        raise ValueError("bins must be >= 1")
    nonempty = {k: np.asarray(v, dtype=np.float64) for k, v in dist.items() if len(v)}
    if not nonempty:
        return pd.DataFrame(columns=cols)
    if value_range is None:
        allv = np.concatenate(list(nonempty.values()))
        lo, hi = float(allv.min()), float(allv.max())
        if hi <= lo:
            lo, hi = lo - 0.5 * max(abs(lo), 1e-3), hi + 0.5 * max(abs(hi), 1e-3)
        value_range = (lo, hi)
    edges = np.linspace(value_range[0], value_range[1], bins + 1)
    width = edges[1] - edges[0]
    rows = []
    for lab, v in nonempty.items():
        counts, _ = np.histogram(v, bins=edges)
        n = len(v)
        for b in range(bins):
            rows.append({"label": lab, "bin": b, "left": float(edges[b]), "right": float(edges[b + 1]),
                         "center": float((edges[b] + edges[b + 1]) / 2), "count": int(counts[b]),
                         "density": float(counts[b] / (n * width)), "share": float(counts[b] / n)})
    return pd.DataFrame(rows, columns=cols)


def weight_summary(dist: dict[str, np.ndarray]) -> pd.DataFrame:
    """Per label: occurrences, mean, median, std, min, max of the values."""
    rows = [{"label": k, "occurrences": len(v), "mean": float(np.mean(v)), "median": float(np.median(v)),
             "std": float(np.std(v)), "min": float(np.min(v)), "max": float(np.max(v))}
            for k, v in dist.items() if len(v)]
    return pd.DataFrame(rows, columns=["label", "occurrences", "mean", "median", "std", "min", "max"])


# ---------------------------------------------------------------- filters and their n-grams


@dataclass(frozen=True)
class FilterBank:
    """A group of filters whose max-pool picks one window each: the value map and the argmax map."""

    value_map: str            # map holding the pooled values, e.g. "conv_h3", "gated_h3_k1", "feature_map"
    argmax_map: str           # the window start each filter's max-pool picked
    width: int                # window size h (tokens per n-gram)
    shift: int = 0            # window at position j covers tokens j-shift .. j-shift+width-1
    layered: bool = False     # ACT: maps carry (layer, head) axes before "filter"


def filter_banks(model) -> list[FilterBank]:
    """The filter banks of a CNN (Kim CNN, AGCNN) or ACT, from its map_specs; [] for other models."""
    model = _model_of(model)
    specs = {s.name: s for s in model.map_specs()}
    banks = []
    for s in specs.values():
        if s.values != "index" or not s.axes or s.axes[-1] != "filter" or not s.name.startswith("argmax"):
            continue
        if s.axes == ("filter",):
            m = re.search(r"h(\d+)", s.name)
            if not m:
                continue
            src = next((n for n in (s.name.replace("argmax_", "gated_", 1), s.name.replace("argmax_", "conv_", 1))
                        if n in specs), None)
            if src is not None:
                banks.append(FilterBank(src, s.name, int(m.group(1))))
        elif s.axes == ("layer", "head", "filter") and "feature_map" in specs:
            cfg = model.config
            n = int(getattr(cfg, "kernel_size", 3))
            shift = (n - 1) // 2 if getattr(cfg, "conv_padding", "right") == "center" else 0
            banks.append(FilterBank("feature_map", s.name, n, shift, layered=True))
    return banks


def _capture(names: set[str]):
    """Edits that record tensors on their way (the model's Probe interface) without changing them."""
    store: dict[str, list] = {n: [] for n in names}          # name -> tensors

    def make(name):
        def fn(t, layer=None, mask=None):
            store[name].append(t.detach())
            return t
        return fn
    return store, {n: make(n) for n in names}


def _ngram_keys(tokens: list[list[str]], width: int, shift: int, L: int, vocab: dict[str, int]
                ) -> tuple[np.ndarray, list[str]]:
    """(N, L) int key of the n-gram whose window starts at each position (-1: outside the text), and the
    n-gram strings by key."""
    keys = np.full((len(tokens), max(L, 1)), -1, dtype=np.int64)
    names: list[str] = []
    for i, toks in enumerate(tokens):
        n = len(toks)
        for j in range(min(n, L)):
            a = max(0, j - shift)
            g = " ".join(toks[a:j - shift + width])
            k = vocab.get(g)
            if k is None:
                k = vocab[g] = len(vocab)
            keys[i, j] = k
    names = [""] * len(vocab)
    for g, k in vocab.items():
        names[k] = g
    return keys, names


@dataclass
class FilterNgrams:
    """Per filter, the distinct n-grams with the highest max-pool values over a corpus."""

    table: pd.DataFrame       # bank, layer, head, filter, rank, ngram, activation, hits, text, position
    n_texts: int
    seconds: float = 0.0

    def _save(self, stem: Path) -> None:
        atomic_write(stem.with_suffix(".json"), json.dumps(
            {"n_texts": self.n_texts, "rows": json.loads(self.table.to_json(orient="records"))}).encode("utf-8"))

    @classmethod
    def _load(cls, stem: Path) -> "FilterNgrams":
        d = json.loads(stem.with_suffix(".json").read_text(encoding="utf-8"))
        return cls(pd.DataFrame(d["rows"], columns=FILTER_COLUMNS), int(d["n_texts"]))

    def summary(self, per_filter: int = 3) -> pd.DataFrame:
        """One row per filter: its best activation and its top n-grams joined with " | "."""
        t = self.table
        if t.empty:
            return pd.DataFrame(columns=["bank", "layer", "head", "filter", "max_activation", "top_ngrams"])
        t = t[t["rank"] <= per_filter]
        g = t.groupby(["bank", "layer", "head", "filter"], sort=False)
        out = g.agg(max_activation=("activation", "max"),
                    top_ngrams=("ngram", lambda s: " | ".join(s))).reset_index()
        return out.sort_values("max_activation", ascending=False, kind="stable").reset_index(drop=True)


FILTER_COLUMNS = ["bank", "layer", "head", "filter", "rank", "ngram", "activation", "hits", "text", "position"]


def rows_where(table: pd.DataFrame, **equal: Any) -> pd.DataFrame:
    """The rows of `table` (a `FilterNgrams` table or its summary) whose columns equal the values given
    (`rows_where(t, bank="conv_h3", layer=1)`), in order, with their index; every row when none is given."""
    keep = np.ones(len(table), dtype=bool)                                         # (rows,)
    for column, value in equal.items():
        keep &= (table[column] == value).to_numpy()
    return table[keep]


@batch_work
def filter_ngrams(predictor, texts: Sequence[str], *, top: int = 5, batch_size: int = DEFAULT_BATCH,
                  progress: Progress | None = None, cache: CorpusCache | None = None,
                  cached_only: bool = False) -> FilterNgrams | None:
    """For every filter of a CNN / ACT, its `top` distinct highest-activating n-grams over `texts`.

    cached_only: return the cached result, or None without computing anything.

    Filters are 1-based in the table (f1 = filter index 0), layers and heads too (0 for models without them).
    `text` is the index (into `texts`) of the text where the n-gram reached `activation`.
    """
    texts = list(texts)
    model = predictor.model
    banks = filter_banks(model)
    if not banks:
        raise ValueError(f"{getattr(model, 'registry_name', type(model).__name__)} has no convolution filters with "
                         "max-pool picks (Kim CNN, AGCNN and ACT have)")
    if top < 1:
        raise ValueError("top must be >= 1")
    if cache is not None:
        key = cache.key(predictor, "filter_ngrams", texts, None, {"top": top})
        hit = cache.get(key, FilterNgrams._load)
        if hit is not None:
            (progress or _noop)(len(texts), len(texts))
            return hit
    if cached_only:
        return None
    import torch
    progress = progress or _noop
    t0 = time.perf_counter()
    names = {b.value_map for b in banks} | {b.argmax_map for b in banks}
    N = len(texts)
    values: dict[str, np.ndarray] = {}
    starts: dict[str, np.ndarray] = {}
    tokens: list[list[str]] = [[] for _ in range(N)]
    order = _length_order(texts)
    progress(0, N)
    dev = predictor.device
    for s in range(0, N, batch_size):
        index = order[s:s + batch_size]
        enc = predictor.encode([texts[i] for i in index])
        store, edits = _capture(names)
        with torch.no_grad():
            model(enc.token_ids.to(dev), enc.mask.to(dev), edits=edits)
        for b, i in enumerate(index):
            tokens[i] = list(enc.tokens[b])
        for bank in banks:
            vm, am = store[bank.value_map], store[bank.argmax_map]
            if not vm or not am:
                raise RuntimeError(f"the model did not produce maps {bank.value_map!r} / {bank.argmax_map!r}")
            v = torch.stack(vm, 1) if bank.layered else vm[0]             # (B, [N, h,] F, L)
            a = (torch.stack(am, 1) if bank.layered else am[0]).long()    # (B, [N, h,] F)
            picked = v.float().gather(-1, a.unsqueeze(-1)).squeeze(-1)     # (B, [N, h,] F)
            B = picked.shape[0]
            pv, pa = picked.reshape(B, -1).cpu().numpy(), a.reshape(B, -1).cpu().numpy()
            if bank.argmax_map not in values:
                values[bank.argmax_map] = np.zeros((N, pv.shape[1]), dtype=np.float32)
                starts[bank.argmax_map] = np.zeros((N, pv.shape[1]), dtype=np.int64)
                starts[bank.argmax_map + ":shape"] = np.array(a.shape[1:])
            values[bank.argmax_map][index] = pv
            starts[bank.argmax_map][index] = pa
        progress(min(s + batch_size, N), N)

    rows = []
    L = max([len(t) for t in tokens] + [1])
    lengths = np.array([len(t) for t in tokens], dtype=np.int64)
    gram_vocab: dict[tuple[int, int], tuple[np.ndarray, list[str]]] = {}
    for bank in banks:
        if bank.argmax_map not in values:
            continue
        gk = (bank.width, bank.shift)
        if gk not in gram_vocab:
            gram_vocab[gk] = _ngram_keys(tokens, bank.width, bank.shift, L, {})
        keys_at, gram_names = gram_vocab[gk]
        val, st = values[bank.argmax_map], starts[bank.argmax_map]
        shape = tuple(int(x) for x in starts[bank.argmax_map + ":shape"])     # ([N, h,] F)
        inside = st < lengths[:, None]                                        # the pick is a real token
        keys = np.where(inside, keys_at[np.arange(N)[:, None], np.minimum(st, L - 1)], -1)   # (N, cols)
        ok = inside & (val != 0) & (keys >= 0)
        for col in range(val.shape[1]):
            sel = np.nonzero(ok[:, col])[0]
            if not len(sel):
                continue
            v, kk = val[sel, col], keys[sel, col]
            o = np.argsort(-v, kind="stable")
            uniq, first, counts = np.unique(kk[o], return_index=True, return_counts=True)
            best = np.argsort(first, kind="stable")[:top]
            pos = np.unravel_index(col, shape)
            layer, head, f = (pos[0] + 1, pos[1] + 1, pos[2] + 1) if len(shape) == 3 else (0, 0, pos[-1] + 1)
            for rank, u in enumerate(best, start=1):
                j = o[first[u]]
                t = int(sel[j])
                rows.append({"bank": bank.value_map, "layer": int(layer), "head": int(head), "filter": int(f),
                             "rank": rank, "ngram": gram_names[int(uniq[u])], "activation": float(v[j]),
                             "hits": int(counts[u]), "text": t, "position": int(st[t, col]) - bank.shift})
    out = FilterNgrams(pd.DataFrame(rows, columns=FILTER_COLUMNS), N, time.perf_counter() - t0)
    if cache is not None:
        cache.put(key, out._save)
    return out


__all__ = ["BY", "SCORES", "CorpusWeights", "FilterBank", "FilterNgrams", "filter_banks", "filter_ngrams",
           "rows_where", "salient_words", "supports_token_weights", "token_weights", "top_words",
           "weight_histogram", "weight_summary", "word_counts", "word_weights"]
