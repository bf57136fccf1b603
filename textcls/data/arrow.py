"""Big data without loading it into memory: hub data sets and large local files as memory-mapped Arrow tables
(the `datasets` library), tokenised with `Dataset.map(batched=True, num_proc=...)` into a cache on disk, the
vocabulary built in one streaming pass, and batches read from the memory-mapped table (`ArrowSplit`, the
interface `training.fit` and `batching.predict_encoded` use for an `EncodedSplit`).

`load_arrow(spec)` takes what `data.load_data` takes (a bundled name or folder, a CSV / TSV / JSONL / Parquet
file, `hf:ID[:CONFIG]`) and returns an `ArrowBundle` whose splits are `datasets.Dataset`s with the columns
`text` (string) and `label` (class index). The same rules as the in-memory path: a single file is split 80/10/10
with the same seeded permutation (the same rows land in each split), a hub data set without a validation
split gives 10% of train to dev, rows labelled -1 or without a label are dropped, `limit` is the same seeded
sample. Label names: a ClassLabel's names, else the distinct values (numeric order when all are integers),
found with Arrow's `unique`, not by reading the rows into Python.

Where it lives: `paths.cache_dir() / "arrow"` (TEXTCLS_CACHE), or `cache_dir=`. The Arrow copy of a file and each
tokenisation are cached there, keyed by the source's fingerprint and the tokenizer (settings and vocabulary),
so a second run, or every other rank of a torchrun job (rank 0 goes first, `distributed.main_first`), reads them
back instead of recomputing. What stays in memory: per split, one length and one label per example (a few
bytes each), and the vocabulary's counts while it is built.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import torch

from textcls.runtime import distributed
from textcls.data.datasets import find_dataset
from textcls.data.files import file_format
from textcls.data.hub import HUB_DEV_SPLITS, check_hub, pick_column
from textcls.data.rows import SPLITS, DataError, label_names
from textcls.runtime.paths import cache_dir as _cache_root

READ_BATCH = 10_000


@dataclass
class ArrowBundle:
    name: str
    labels: list[str]
    splits: dict[str, Any]               # split name -> datasets.Dataset(text: string, label: int64)
    task: str = ""
    source: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def num_labels(self) -> int:
        return len(self.labels)


def arrow_cache(cache_dir: str | Path | None = None) -> Path:
    p = Path(cache_dir) if cache_dir is not None else _cache_root() / "arrow"
    p.mkdir(parents=True, exist_ok=True)
    return p


def _quiet():
    from datasets.utils import logging as ds_logging
    ds_logging.disable_progress_bar()


def _key(*parts: Any) -> str:
    return hashlib.sha1(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def dataset_fingerprint(ds) -> str:
    """The `datasets` library's own fingerprint of a table (what its `map` caching keys on). The library has no
    public accessor for it (only the private `Dataset._fingerprint`), so this is the one place that reads it."""
    return str(ds._fingerprint)


def _sample(ds, limit: int | None, seed: int):
    """At most `limit` rows: the seeded sample `data.Split.sample` takes, in file order."""
    if limit is None or len(ds) <= limit:
        return ds
    keep = np.sort(np.random.default_rng(seed).choice(len(ds), size=int(limit), replace=False))
    return ds.select(keep)


def _normalise(ds, tcol: str, lcol: str, names: list[str] | None, where: str, cache: Path):
    """Columns text (string) and label (int64); rows without a label (None, -1) dropped."""
    from datasets import ClassLabel
    ds = ds.select_columns([tcol, lcol])
    feat = ds.features[lcol]
    if isinstance(feat, ClassLabel):
        pos = None
    else:
        pos = {n: i for i, n in enumerate(names or [])}

    def fn(batch):
        texts, labels = [], []
        for t, lab in zip(batch[tcol], batch[lcol]):
            if lab is None or lab == -1 or (pos is not None and str(lab).strip() == ""):
                continue
            if pos is not None:
                key = str(lab).strip()
                if key not in pos:
                    raise DataError(f"{where}: unknown label {key!r} (labels: {names})")
                lab = pos[key]
            texts.append("" if t is None else str(t))
            labels.append(int(lab))
        return {"text": texts, "label": labels}

    name = f"norm-{_key(dataset_fingerprint(ds), tcol, lcol, names)}.arrow"
    return ds.map(fn, batched=True, batch_size=READ_BATCH, remove_columns=ds.column_names,
                  cache_file_name=str(cache / name), desc=None)


def _distinct_labels(datasets_: Sequence[Any], lcol: str) -> list:
    seen: dict[str, None] = {}
    for ds in datasets_:
        for v in ds.unique(lcol):
            if v is not None and str(v).strip() != "" and v != -1:
                seen[str(v).strip()] = None
    return list(seen)


def load_arrow(spec: str | Path, *, root=None, text_column: str = "text", label_column: str = "label",
               seed: int = 0, limit: int | None = None, labels: Sequence[str] | None = None,
               cache_dir: str | Path | None = None) -> ArrowBundle:
    """A data set as memory-mapped Arrow tables (see the module docstring)."""
    import datasets
    _quiet()
    cache = arrow_cache(cache_dir)
    s = str(spec)
    if s.startswith("hf:"):
        return _load_hub(s[3:], text_column, label_column, seed, limit, labels, cache)
    plain = not any(c in s for c in "/\\") and file_format(Path(s)) is None
    folder = find_dataset(s, root) if plain else None
    p = Path(s).expanduser()
    if folder is None and p.is_dir():
        folder = p
    with distributed.main_first():                       # rank 0 builds the Arrow copy, the others read it
        if folder is not None:
            meta = json.loads((folder / "dataset.json").read_text(encoding="utf-8"))
            files = {}
            for split in SPLITS:
                for ext in (".csv", ".csv.gz"):
                    if (folder / f"{split}{ext}").is_file():
                        files[split] = str(folder / f"{split}{ext}")
                        break
            if "train" not in files:
                raise DataError(f"{folder}: no train.csv or train.csv.gz")
            feats = datasets.Features({text_column: datasets.Value("string"), label_column: datasets.Value("string")})
            dd = datasets.load_dataset("csv", data_files=files, cache_dir=str(cache / "hf"), features=feats,
                                       keep_default_na=False, na_filter=False)
            names = list(labels or meta.get("labels") or label_names(_distinct_labels(dd.values(), label_column),
                                                                        None))
            splits = {k: _normalise(dd[k], text_column, label_column, names, f"{folder}/{k}", cache) for k in dd}
            bundle = ArrowBundle(meta.get("name", folder.name), names, splits, meta.get("task", ""), str(folder),
                                 {"folder": str(folder)})
        elif p.is_file():
            bundle = _load_file(p, text_column, label_column, seed, labels, cache)
        else:
            raise DataError(f"{s}: not a bundled data set, folder or data file (and not hf:ID)")
    bundle.splits = {k: _sample(v, limit, seed) for k, v in bundle.splits.items()}
    return bundle


def _load_file(path: Path, tcol: str, lcol: str, seed: int, labels, cache: Path) -> ArrowBundle:
    import datasets
    fmt = file_format(path)
    if fmt is None:
        raise DataError(f"{path}: unknown file type (CSV, TSV, JSONL, JSON or Parquet, optionally .gz)")
    kw: dict[str, Any] = {}
    builder = {"tsv": "csv"}.get(fmt, fmt)
    if fmt in ("csv", "tsv"):
        import csv
        import gzip
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8", newline="") as f:
            header = next(csv.reader(f, delimiter="\t" if fmt == "tsv" else ","))
        kw = dict(sep="\t" if fmt == "tsv" else ",", keep_default_na=False, na_filter=False,
                  features=datasets.Features({h.strip(): datasets.Value("string") for h in header}))
        if fmt == "tsv":
            kw["quoting"] = csv.QUOTE_NONE
    try:
        ds = datasets.load_dataset(builder, data_files={"data": str(path)}, split="data",
                                   cache_dir=str(cache / "hf"), **kw)
    except Exception as e:  # noqa: BLE001 - pyarrow / datasets errors become one DataError line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DataError(f"{path}: cannot read as {builder} ({first})") from None
    for col in (tcol, lcol):
        if col not in ds.column_names:
            raise DataError(f"{path}: no column {col!r}; columns found: {ds.column_names}")
    names = label_names(_distinct_labels([ds], lcol), labels)
    whole = _normalise(ds, tcol, lcol, names, str(path), cache)
    n = len(whole)
    n_dev, n_test = max(1, int(round(0.1 * n))), max(1, int(round(0.1 * n)))
    if n - n_dev - n_test < 1:
        raise DataError(f"{path}: {n} rows are too few to split into train/dev/test")
    perm = np.random.default_rng(seed).permutation(n)                 # as files.split_train_dev_test
    parts = {"train": perm[: n - n_dev - n_test], "dev": perm[n - n_dev - n_test: n - n_test],
             "test": perm[n - n_test:]}
    splits = {k: whole.select(idx) for k, idx in parts.items()}
    return ArrowBundle(path.name.split(".")[0], names, splits, "", str(path),
                       {"file": str(path), "format": fmt, "rows": n})


def _load_hub(spec: str, tcol: str, lcol: str, seed: int, limit, labels, cache: Path) -> ArrowBundle:
    import datasets
    repo_id, _, config = spec.partition(":")
    repo_id = repo_id.strip()
    if not repo_id:
        raise DataError("empty hub data set id (use hf:OWNER/NAME)")
    with distributed.main_first():
        if distributed.context().is_main:
            check_hub(repo_id)
        try:
            dd = datasets.load_dataset(repo_id, config or None, cache_dir=str(cache / "hf"))
        except Exception as e:  # noqa: BLE001
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise DataError(f"hub data set {spec!r}: {first}") from None
        anyds = next(iter(dd.values()))
        tc = pick_column(anyds.features, tcol, "text", False, repo_id)
        lc = pick_column(anyds.features, lcol, "label", True, repo_id)
        feat = anyds.features[lc]
        if isinstance(feat, datasets.ClassLabel):
            names = list(labels) if labels is not None else list(feat.names)
        else:
            names = label_names(_distinct_labels(dd.values(), lc), labels)
        splits = {}
        for name, ds in dd.items():
            mapped = "dev" if name in HUB_DEV_SPLITS else name
            if mapped in SPLITS:
                splits[mapped] = _normalise(ds, tc, lc, names, f"hf:{spec}[{name}]", cache)
    if "train" not in splits:
        raise DataError(f"hub data set {spec!r}: no train split")
    if "dev" not in splits:
        tr = splits["train"]
        perm = np.random.default_rng(seed).permutation(len(tr))
        n_dev = max(1, len(tr) // 10)
        splits["dev"] = tr.select(np.sort(perm[:n_dev]))
        splits["train"] = tr.select(np.sort(perm[n_dev:]))
    splits = {k: splits[k] for k in SPLITS if k in splits}
    return ArrowBundle(repo_id.split("/")[-1] + (f"_{config}" if config else ""), names, splits, "",
                       f"hf:{spec}", {"hub_id": repo_id, "config": config or None})


def check_trainable_arrow(bundle: ArrowBundle) -> None:
    train = bundle.splits.get("train")
    if train is None or not len(train):
        raise DataError(f"data set {bundle.name!r} has no training rows")
    if len(bundle.labels) < 2:
        raise DataError(f"data set {bundle.name!r} has fewer than two labels: {bundle.labels}")


# ---------------------------------------------------------------- streaming vocabulary and tokenisation


def iter_texts(ds, batch_size: int = READ_BATCH) -> Iterator[str]:
    """The texts of an Arrow split, read `batch_size` rows at a time (never the whole column)."""
    for start in range(0, len(ds), batch_size):
        yield from ds[start:start + batch_size]["text"]


def build_tokenizer(ds, config=None, min_freq: int = 1, max_size: int | None = None):
    """`Tokenizer.build` over a streaming pass of the split's texts."""
    from textcls.data.text import Tokenizer
    return Tokenizer.build(iter_texts(ds), config, min_freq=min_freq, max_size=max_size)


def _encode_batch(batch, tokenizer):
    from textcls.data.batching import crop_rows
    enc = tokenizer.encode(batch["text"])
    ids, masks, lengths = crop_rows(enc.token_ids, enc.mask)
    return {"ids": [i.reshape(-1).to(torch.int32).numpy() for i in ids],
            "shape": [list(i.shape) for i in ids],
            "mask": [m.reshape(-1).numpy().astype(np.uint8) for m in masks],
            "length": lengths, "truncated": [bool(t) for t in enc.truncated], "label": batch["label"]}


def encode_arrow(tokenizer, ds, *, num_proc: int | None = None, cache_dir: str | Path | None = None,
                 batch_size: int = 1000) -> "ArrowSplit":
    """Tokenise an Arrow split with `map(batched=True, num_proc=...)` into a cached Arrow file; an ArrowSplit."""
    _quiet()
    cache = arrow_cache(cache_dir)
    vocab_hash = hashlib.sha1("\n".join(tokenizer.vocab.itos).encode()).hexdigest()[:16]
    name = f"tok-{_key(dataset_fingerprint(ds), tokenizer.to_dict(include_vocab=False), vocab_hash)}.arrow"
    nproc = None if not num_proc or num_proc <= 1 or len(ds) < 2 * batch_size else int(num_proc)
    with distributed.main_first():
        out = ds.map(_encode_batch, batched=True, batch_size=batch_size, num_proc=nproc,
                     fn_kwargs={"tokenizer": tokenizer}, remove_columns=ds.column_names,
                     cache_file_name=str(cache / name), desc=None)
    pad_id = int(getattr(tokenizer.vocab, "pad_id", 0))
    hier = bool(getattr(tokenizer.config, "hierarchical", False))
    return ArrowSplit(out, hier, pad_id)


class ArrowSplit:
    """An encoded split read from a memory-mapped Arrow table: what `fit` and `predict_encoded` use of an
    EncodedSplit (len, lengths, labels, truncated, batch(index, device), hierarchical, pad_id, subset)."""

    def __init__(self, table, hierarchical: bool = False, pad_id: int = 0):
        self.table = table
        self.hierarchical = hierarchical
        self.pad_id = pad_id
        self.lengths = np.asarray(table["length"], dtype=np.int64)
        self.labels = torch.as_tensor(np.asarray(table["label"], dtype=np.int64))
        self.truncated = np.asarray(table["truncated"], dtype=bool)

    def __len__(self) -> int:
        return len(self.lengths)

    def subset(self, index: Sequence[int]) -> "ArrowSplit":
        return ArrowSplit(self.table.select(list(index)), self.hierarchical, self.pad_id)

    def longest(self) -> dict[str, int]:
        """As EncodedSplit.longest: the largest padded batch size, read from the shape column."""
        shapes = [tuple(s) for s in self.table["shape"]]
        if self.hierarchical:
            return {"max_sentences": max((s[0] for s in shapes), default=1),
                    "max_words": max((s[1] for s in shapes), default=1)}
        return {"max_len": max((s[0] for s in shapes), default=1)}

    def batch(self, index: Sequence[int], device: torch.device | str = "cpu"):
        rows = self.table[list(index)]
        shapes = [tuple(s) for s in rows["shape"]]
        if self.hierarchical:
            S, W = max(s[0] for s in shapes), max(s[1] for s in shapes)
            ids = torch.full((len(shapes), S, W), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(shapes), S, W), dtype=torch.bool)
            for b, (r, m, s) in enumerate(zip(rows["ids"], rows["mask"], shapes)):
                ids[b, :s[0], :s[1]] = torch.as_tensor(np.asarray(r, dtype=np.int64)).reshape(s)
                mask[b, :s[0], :s[1]] = torch.as_tensor(np.asarray(m, dtype=bool)).reshape(s)
        else:
            L = max(s[0] for s in shapes)
            ids = torch.full((len(shapes), L), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(shapes), L), dtype=torch.bool)
            for b, (r, m, s) in enumerate(zip(rows["ids"], rows["mask"], shapes)):
                ids[b, :s[0]] = torch.as_tensor(np.asarray(r, dtype=np.int64))
                mask[b, :s[0]] = torch.as_tensor(np.asarray(m, dtype=bool))
        labels = self.labels[list(index)].to(device)
        return ids.to(device), mask.to(device), labels


def default_num_proc() -> int:
    """Tokenising processes: the usable cores, at most 8 (TEXTCLS_NUM_PROC overrides)."""
    env = os.environ.get("TEXTCLS_NUM_PROC")
    if env:
        return max(1, int(env))
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(8, n))
