"""Data sets: the bundled folders, any local CSV / TSV / JSONL / Parquet file, and Hugging Face hub data sets.

`load_data(spec)` resolves `spec` in this order:
1. `"hf:ID"` or `"hf:ID:CONFIG"` - a hub data set (online only; textcls.data.hub);
2. a name found in a data root (`paths.data_roots()`: --data-root / TEXTCLS_DATA, then the data embedded in
   the package): a bundled folder;
3. an existing path: a bundled-format folder, or one data file (textcls.data.files);
4. anything else that is not a file path - a bare hub id (`"ag_news"`, `"stanfordnlp/imdb"`).

Bundled format (that of `../shared/data`): a folder with `dataset.json` (`name`, `task`, `labels` = the class
names in id order, `source`) and `train` / `dev` / `test` as `.csv` or `.csv.gz` with a header and the columns
`text,label`, the label being a class name. Read with Python's csv module (strict quoting), so every problem is
reported with its file and line.

Every source checks its rows with the same rules (textcls.data.rows: an empty text, an unknown label, the line of
a malformed record), and errors are `DataError` (a ValueError) naming the file, the line (or row) and the problem.
`DataError`, `Split`, `DataBundle` and `SPLITS` are defined there and importable from here.

`limit` keeps at most that many rows per split, a seeded random sample in file order.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

from textcls.data.files import file_format, load_file
from textcls.data.hub import load_hub
from textcls.data.rows import SPLITS, DataBundle, DataError, Split, read_delimited, to_split
from textcls.runtime.paths import data_roots

ARROW_AUTO_BYTES = 256 * 2 ** 20   # local files at least this big take the memory-mapped Arrow path by default


def use_arrow(spec, arrow: bool | None = None) -> bool:
    """Whether a data spec is read as memory-mapped Arrow tables (textcls.data.arrow) - the one rule, for the CLI
    and the library alike. `arrow` True / False decides; None: hub data sets (`hf:ID`) and local files of
    ARROW_AUTO_BYTES or more. An already loaded DataBundle never is."""
    if isinstance(spec, DataBundle):
        return False
    if arrow is not None:
        return bool(arrow)
    if not isinstance(spec, (str, os.PathLike)):
        return False
    if str(spec).startswith("hf:"):
        return True
    p = Path(str(spec)).expanduser()
    return p.is_file() and p.stat().st_size >= ARROW_AUTO_BYTES


def check_trainable(bundle: DataBundle) -> None:
    """The one verdict on whether a data set can train a classifier (CLI, Train page, API alike): a train split
    with at least two labels in use, and no more labels than half its rows (10,000 labels of one row each is a
    column of ids, not classes). Raises DataError saying what is wrong."""
    train = bundle.splits.get("train")
    if train is None or not len(train):
        raise DataError(f"{bundle.name}: no training rows (splits: {', '.join(bundle.splits) or 'none'})")
    used = sorted(set(train.labels))
    if len(used) < 2:
        only = bundle.labels[used[0]] if used else "none"
        raise DataError(f"{bundle.name}: the training rows have one label only ({only!r}); a classifier needs "
                        "at least two (check the label column)")
    if len(bundle.labels) > max(2, len(train) // 2):
        raise DataError(f"{bundle.name}: {len(bundle.labels):,} labels for {len(train):,} training rows - fewer "
                        "than two rows per label; is the label column really a class (not an id or the text)?")


# ------------------------------------------------------------------------------------------------ where data lives

def data_root(root: str | Path | None = None) -> Path:
    """The first folder searched by name: `root`, else env TEXTCLS_DATA, else the embedded data (paths.py)."""
    return data_roots(root)[0]


def list_datasets(root: str | Path | None = None) -> list[str]:
    """Names of the bundled-format data sets (folders with a dataset.json) in every data root, sorted."""
    names: set[str] = set()
    for r in data_roots(root):
        if r.is_dir():
            names.update(p.name for p in r.iterdir() if (p / "dataset.json").is_file())
    return sorted(names)


def find_dataset(name: str, root: str | Path | None = None) -> Path | None:
    """The folder of the data set called `name` in the first data root that has it, else None."""
    for r in data_roots(root):
        if (r / name / "dataset.json").is_file():
            return r / name
    return None


def describe_dataset(name: str, root: str | Path | None = None) -> str:
    """The task of the data set called `name` in one line, from its dataset.json ("6-way question type (TREC,
    coarse labels)"), or from its shipped sample's (`name`_sample: imdb); "" when there is neither or it says
    nothing. Reads no rows."""
    folder = (find_dataset(str(name), root) or find_dataset(f"{name}_sample", root)) if name else None
    if folder is None:
        return ""
    try:
        return str(_read_meta(folder).get("task") or "")
    except DataError:
        return ""


def load_data(spec: str | Path, *, root: str | Path | None = None, text_column: str = "text",
              label_column: str = "label", limit: int | None = None, seed: int = 0,
              labels: Sequence[str] | None = None, as_split: str | None = None) -> DataBundle:
    """Load a data set (see the module docstring for what `spec` may be)."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive integer or None, got {limit!r}")
    if as_split is not None and as_split not in SPLITS:
        raise ValueError(f"as_split must be one of {SPLITS}, got {as_split!r}")
    if isinstance(spec, str) and spec.startswith("hf:"):
        bundle = load_hub(spec[3:], text_column=text_column, label_column=label_column, seed=seed, labels=labels)
    else:
        bundle = _load_local(spec, root, text_column, label_column, seed, labels, as_split)
    if limit is not None:
        bundle.splits = {k: s.sample(limit, seed) for k, s in bundle.splits.items()}
    return bundle


def _load_local(spec, root, text_column, label_column, seed, labels, as_split) -> DataBundle:
    s = str(spec)
    if not s.strip():
        raise DataError("empty data set name")
    plain = isinstance(spec, str) and not any(c in s for c in "/\\") and file_format(Path(s)) is None
    found_at = find_dataset(s, root) if plain else None
    if found_at is not None:
        return load_bundled(found_at, text_column=text_column, label_column=label_column)
    p = Path(s).expanduser()
    if p.is_dir():
        return load_bundled(p, text_column=text_column, label_column=label_column)
    if p.is_file():
        return load_file(p, text_column=text_column, label_column=label_column, seed=seed, labels=labels,
                         as_split=as_split)
    if file_format(p) is not None or isinstance(spec, Path) or s.startswith((".", "/", "~")) or "\\" in s:
        raise DataError(f"{p}: no such file or folder")
    found = list_datasets(root)
    roots = ", ".join(str(r) for r in data_roots(root))
    where = (f"not a bundled data set in {roots} (available: {', '.join(found) or 'none'}), "
             f"not a local file or folder")
    try:
        return load_hub(s, text_column=text_column, label_column=label_column, seed=seed, labels=labels)
    except DataError as e:
        raise DataError(f"{s!r} is {where}, and the hub failed: {e}") from None


# ------------------------------------------------------------------------------------------------ bundled format

def _read_meta(folder: Path) -> dict[str, Any]:
    f = folder / "dataset.json"
    if not f.is_file():
        raise DataError(f"{folder}: no dataset.json (a bundled data set is a folder with dataset.json and "
                        f"train/dev/test .csv or .csv.gz files)")
    try:
        meta = json.loads(f.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DataError(f"{f}, line {e.lineno}: invalid JSON ({e.msg})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"{f}: cannot read ({e})") from None
    if not isinstance(meta, dict):
        raise DataError(f"{f}: expected a JSON object with name, task, labels")
    lab = meta.get("labels")
    if (not isinstance(lab, list) or not lab or not all(isinstance(x, str) and x.strip() for x in lab)):
        raise DataError(f"{f}: 'labels' must be a non-empty list of class names, got {lab!r}")
    if len(set(lab)) != len(lab):
        raise DataError(f"{f}: 'labels' has duplicates: {sorted({x for x in lab if lab.count(x) > 1})}")
    return meta


def load_bundled(folder: str | Path, *, text_column: str = "text", label_column: str = "label") -> DataBundle:
    """A bundled-format folder (dataset.json + train/dev/test .csv or .csv.gz)."""
    folder = Path(folder)
    meta = _read_meta(folder)
    names = list(meta["labels"])
    splits: dict[str, Split] = {}
    for split in SPLITS:
        path = next((folder / f"{split}{ext}" for ext in (".csv", ".csv.gz") if (folder / f"{split}{ext}").is_file()),
                    None)
        if path is None:
            continue
        texts, raw, lines = read_delimited(path, ",", text_column, label_column)
        splits[split] = to_split(path, texts, raw, lines, "line", names, text_column, label_column)
    if not splits:
        raise DataError(f"{folder}: no split files (expected train.csv, dev.csv, test.csv or .csv.gz)")
    return DataBundle(str(meta.get("name") or folder.name), names, splits, str(meta.get("task", "")),
                      str(meta.get("source", "")), meta)

__all__ = ["SPLITS", "DataError", "Split", "DataBundle", "ARROW_AUTO_BYTES", "use_arrow", "check_trainable",
           "data_root", "list_datasets", "find_dataset", "describe_dataset", "load_data", "load_bundled"]
