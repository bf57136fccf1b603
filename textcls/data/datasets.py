"""Data sets: the bundled folders, any local CSV / TSV / JSONL / Parquet file, and Hugging Face hub data sets.

`load_data(spec)` resolves `spec` in this order:
1. `"hf:ID"` or `"hf:ID:CONFIG"` - a hub data set (online only);
2. a name found in a data root (`paths.data_roots()`: --data-root / TEXTCLS_DATA, then the data embedded in
   the package): a bundled folder;
3. an existing path: a bundled-format folder, or one data file;
4. anything else that is not a file path - a bare hub id (`"ag_news"`, `"stanfordnlp/imdb"`).

Bundled format (that of `../shared/data`): a folder with `dataset.json` (`name`, `task`, `labels` = the class
names in id order, `source`) and `train` / `dev` / `test` as `.csv` or `.csv.gz` with a header and the columns
`text,label`, the label being a class name. Read with Python's csv module (strict quoting), so every problem is
reported with its file and line.

Other files go through the `datasets` library (`load_dataset("csv" | "json" | "parquet", data_files=...)`),
after a structural check of CSV / TSV / JSONL in Python that names the line of any malformed record. Rules:
CSV/TSV need a header row; TSV is read without quote processing (one record per line, as GLUE's TSVs);
`.json` may be JSON lines or one array of objects; every column is read as a string (so "NA" or "007" stay
text). Label names are `labels=` when given (others are an error), else the sorted distinct values (numeric
order when all are integers). A file is split 80/10/10 into train/dev/test with `seed` (at least one row in
each), unless `as_split=` names the one split to put everything in (e.g. "test" to evaluate on a file).

Hub data sets: splits "train", "validation" (-> "dev") and "test"; without a validation split 10% of train
becomes dev (seeded); rows labelled -1 (unlabelled test sets) are dropped. If the text / label column is not
there under the given name, the only string / class-label column is used. Before any download a metadata
request with a short timeout runs in a daemon thread, so without network the call fails within
`HUB_TIMEOUT` seconds with a DataError instead of hanging; `HF_HUB_OFFLINE` / `HF_DATASETS_OFFLINE` make it
fail at once.

Errors are `DataError` (a ValueError) whose message names the file, the line (or row) and the problem:
malformed CSV (wrong field count, bad quoting), a missing column (listing the columns found), an empty file,
an empty text, an empty or unknown label.

`limit` keeps at most that many rows per split, a seeded random sample in file order.

This file is longer than 600 lines because its one job, reading a data set from any source, checks every source
with the same row rules (empty text, unknown label, the line of a malformed record) and they belong together.
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import math
import os
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from textcls.runtime.limits import current as current_limits
from textcls.runtime.paths import data_roots

SPLITS = ("train", "dev", "test")
HUB_TIMEOUT = 5.0            # seconds for the hub reachability check
FILE_FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "json", ".ndjson": "json", ".json": "json",
                ".parquet": "parquet"}
HUB_DEV_SPLITS = ("validation", "dev", "valid", "val")
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
_TRUE = ("1", "true", "yes", "on")


class DataError(ValueError):
    """A data set could not be found or read; the message names the file, line and problem."""


@dataclass
class Split:
    texts: list[str]
    labels: list[int]

    def __post_init__(self):
        if len(self.texts) != len(self.labels):
            raise ValueError(f"Split has {len(self.texts)} texts but {len(self.labels)} labels")

    def __len__(self) -> int:
        return len(self.texts)

    def sample(self, limit: int | None, seed: int = 0) -> "Split":
        """At most `limit` rows, a seeded random sample kept in the original order."""
        if limit is None or len(self) <= limit:
            return self
        keep = np.sort(np.random.default_rng(seed).choice(len(self), size=max(0, int(limit)), replace=False))
        return Split([self.texts[i] for i in keep], [self.labels[i] for i in keep])


@dataclass
class DataBundle:
    name: str
    labels: list[str]
    splits: dict[str, Split]
    task: str = ""
    source: str = ""
    meta: dict[str, Any] = field(default_factory=dict)   # e.g. the dataset.json contents, the file read

    @property
    def num_labels(self) -> int:
        return len(self.labels)

    def __getitem__(self, split: str) -> Split:
        if split not in self.splits:
            raise KeyError(f"data set {self.name!r} has no split {split!r}; splits: {list(self.splits)}")
        return self.splits[split]

    def summary(self) -> dict[str, Any]:
        """Rows and label counts per split (for reports and the app)."""
        out: dict[str, Any] = {"name": self.name, "task": self.task, "labels": list(self.labels), "splits": {}}
        for name, s in self.splits.items():
            counts = np.bincount(np.asarray(s.labels, dtype=np.int64), minlength=len(self.labels))
            out["splits"][name] = {"rows": len(s), "labels": dict(zip(self.labels, counts.tolist()))}
        return out


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
    plain = isinstance(spec, str) and not any(c in s for c in "/\\") and _file_format(Path(s)) is None
    found_at = find_dataset(s, root) if plain else None
    if found_at is not None:
        return load_bundled(found_at, text_column=text_column, label_column=label_column)
    p = Path(s).expanduser()
    if p.is_dir():
        return load_bundled(p, text_column=text_column, label_column=label_column)
    if p.is_file():
        return load_file(p, text_column=text_column, label_column=label_column, seed=seed, labels=labels,
                         as_split=as_split)
    if _file_format(p) is not None or isinstance(spec, Path) or s.startswith((".", "/", "~")) or "\\" in s:
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
        splits[split] = _to_split(path, texts, raw, lines, "line", names, text_column, label_column)
    if not splits:
        raise DataError(f"{folder}: no split files (expected train.csv, dev.csv, test.csv or .csv.gz)")
    return DataBundle(str(meta.get("name") or folder.name), names, splits, str(meta.get("task", "")),
                      str(meta.get("source", "")), meta)


class _Capped(io.RawIOBase):
    """A binary stream that counts the bytes read through it (after decompression for .gz) and raises DataError
    past the max_file_mb limit, so a small gzip file that inflates to gigabytes stops at the limit."""

    def __init__(self, raw, path: Path, cap_mb: int):
        self.raw, self.path, self.cap_mb, self.seen = raw, path, cap_mb, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = self.raw.readinto(b)
        self.seen += n or 0
        if self.seen > self.cap_mb * 2**20:
            raise DataError(f"{self.path}: more than {self.cap_mb:,} MB of data once decompressed, over the limit "
                            "for a data file read into memory; train from it with `train --arrow`, use a smaller "
                            "sample, or raise the limit (--max-file-mb or env TEXTCLS_MAX_FILE_MB)")
        return n

    def seekable(self) -> bool:
        return self.raw.seekable()

    def seek(self, pos: int, whence: int = 0) -> int:
        self.seen = self.raw.seek(pos, whence)          # bytes read again after a rewind count again
        return self.seen

    def tell(self) -> int:
        return self.raw.tell()

    def close(self) -> None:
        self.raw.close()
        super().close()


def _open_binary(path: Path):
    """The file's bytes (decompressed for .gz), counted against the max_file_mb limit."""
    raw = gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")
    return io.BufferedReader(_Capped(raw, path, current_limits().max_file_mb))


def _open_text(path: Path):
    return io.TextIOWrapper(_open_binary(path), encoding="utf-8-sig", newline="")


def one_line_error(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def _check_rows(path: Path, n: int) -> None:
    cap = current_limits().max_file_rows
    if n > cap:
        raise DataError(f"{path}: more than {cap:,} rows, over the limit for a data file read into memory; train "
                        "from it with `train --arrow`, use a smaller sample, or raise the limit with env "
                        "TEXTCLS_MAX_FILE_ROWS")


def _first_bad_utf8_line(path: Path) -> int | None:
    """Line number of the first line that is not UTF-8 (the decoder reads ahead, so find it again)."""
    try:
        with _open_binary(path) as f:
            for n, line in enumerate(f, 1):
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError:
                    return n
    except (OSError, EOFError, DataError):
        pass
    return None


def read_delimited(path: str | Path, delimiter: str, text_column: str = "text", label_column: str = "label",
                   ) -> tuple[list[str], list[str], list[int]]:
    """Strictly parse a CSV (delimiter ",") or TSV ("\\t", no quoting) file with a header.
    Returns (texts, raw labels, line number where each record starts); DataError on any malformed record."""
    path = Path(path)
    quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    kind = "TSV" if delimiter == "\t" else "CSV"
    texts: list[str] = []
    labels: list[str] = []
    lines: list[int] = []
    start = 1
    old_limit = csv.field_size_limit()
    csv.field_size_limit(2**31 - 1)
    try:
        with _open_text(path) as f:
            reader = csv.reader(f, delimiter=delimiter, quoting=quoting, strict=True)
            header = next(reader, None)
            while header is not None and not any(h.strip() for h in header):   # blank lines before the header
                start = reader.line_num + 1
                header = next(reader, None)
            if header is None:
                raise DataError(f"{path}: empty file (expected a header line naming the columns "
                                f"{text_column}{delimiter}{label_column})")
            header = [h.strip() for h in header]
            for col in (text_column, label_column):
                if col not in header:
                    raise DataError(f"{path}, line {start}: no column {col!r}; columns found: {header}")
            ti, li, n = header.index(text_column), header.index(label_column), len(header)
            start = reader.line_num + 1
            for row in reader:
                if not row:                                          # blank line
                    start = reader.line_num + 1
                    continue
                if len(row) != n:
                    hint = (" (a text containing the delimiter must be quoted)" if len(row) > n and kind == "CSV"
                            else "")
                    raise DataError(f"{path}, line {start}: expected {n} fields ({', '.join(header)}), "
                                    f"found {len(row)}{hint}")
                texts.append(row[ti])
                labels.append(row[li])
                lines.append(start)
                if len(lines) % 65536 == 0:
                    _check_rows(path, len(lines))
                start = reader.line_num + 1
    except csv.Error as e:
        raise DataError(f"{path}, line {start}: malformed {kind} ({e}; check the quoting)") from None
    except UnicodeDecodeError as e:
        raise DataError(f"{path}, line {_first_bad_utf8_line(path) or start}: not UTF-8 text ({e.reason})") from None
    except (OSError, EOFError) as e:   # includes gzip.BadGzipFile
        raise DataError(f"{path}: cannot read ({e})") from None
    finally:
        csv.field_size_limit(old_limit)
    if not texts:
        raise DataError(f"{path}: the file has a header but no rows")
    _check_rows(path, len(lines))
    return texts, labels, lines


def _to_split(path, texts, raw_labels, where: Sequence[int], unit: str, names: Sequence[str],
              text_column: str, label_column: str) -> Split:
    """Check every row (non-empty text, known label) and map labels to ids."""
    index = {n: i for i, n in enumerate(names)}
    ids: list[int] = []
    for k, (t, lab) in enumerate(zip(texts, raw_labels)):
        if t is None or not isinstance(t, str) or not t.strip():
            problem = "is not a string" if t is not None and not isinstance(t, str) else "is empty"
            raise DataError(f"{path}, {unit} {where[k]}: the text ({text_column!r}) {problem}")
        key = _label_key(lab)
        if key is None:
            raise DataError(f"{path}, {unit} {where[k]}: the label ({label_column!r}) is empty")
        i = index.get(key)
        if i is None:
            shown = list(names) if len(names) <= 30 else list(names[:30]) + ["..."]
            raise DataError(f"{path}, {unit} {where[k]}: unknown label {key!r}; known labels: {shown}")
        ids.append(i)
    return Split(list(texts), ids)


def _label_key(lab) -> str | None:
    if lab is None or isinstance(lab, float) and math.isnan(lab):
        return None
    if isinstance(lab, bool):
        lab = str(lab).lower()
    elif isinstance(lab, float) and lab.is_integer():
        lab = int(lab)
    key = str(lab).strip()
    return key or None


def _label_names(raw_labels, given: Sequence[str] | None) -> list[str]:
    if given is not None:
        names = [str(x) for x in given]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"labels must be distinct class names, got {list(given)!r}")
        return names
    keys = {k for k in map(_label_key, raw_labels) if k is not None}
    try:
        return sorted(keys, key=int)
    except ValueError:
        return sorted(keys)


# ------------------------------------------------------------------------------------------------ other files

def _file_format(path: Path) -> str | None:
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return FILE_FORMATS.get(Path(name).suffix)


def _scan_json(path: Path, text_column: str, label_column: str) -> tuple[list[int], str]:
    """Check a JSON-lines file (or a JSON array) record by record; returns (line/record numbers, unit)."""
    where: list[int] = []
    try:
        with _open_text(path) as f:
            head = f.read(4096).lstrip()
        if not head:
            raise DataError(f"{path}: empty file")
        if head.startswith("["):
            with _open_text(path) as f:
                try:
                    records = json.load(f)
                except json.JSONDecodeError as e:
                    raise DataError(f"{path}, line {e.lineno}: invalid JSON ({e.msg})") from None
                except RecursionError:
                    raise DataError(f"{path}: JSON nested too deeply to be a data set") from None
            if not isinstance(records, list):
                raise DataError(f"{path}: expected a JSON array of records")
            _check_rows(path, len(records))
            unit = "record"
            items = enumerate(records, 1)
        else:
            unit = "line"

            def lines():
                with _open_text(path) as f:
                    for n, line in enumerate(f, 1):
                        if line.strip():
                            try:
                                yield n, json.loads(line)
                            except json.JSONDecodeError as e:
                                raise DataError(f"{path}, line {n}: invalid JSON ({e.msg})") from None
                            except RecursionError:
                                raise DataError(f"{path}, line {n}: JSON nested too deeply to be a record") \
                                    from None
            items = lines()
        for n, rec in items:
            if not isinstance(rec, dict):
                raise DataError(f"{path}, {unit} {n}: expected a JSON object, found {type(rec).__name__}")
            for col in (text_column, label_column):
                if col not in rec:
                    raise DataError(f"{path}, {unit} {n}: no field {col!r}; fields found: {sorted(rec)}")
            if rec[text_column] is not None and not isinstance(rec[text_column], str):
                raise DataError(f"{path}, {unit} {n}: the text ({text_column!r}) is "
                                f"{type(rec[text_column]).__name__}, not a string")
            if isinstance(rec[label_column], (dict, list)):
                raise DataError(f"{path}, {unit} {n}: the label ({label_column!r}) is a "
                                f"{type(rec[label_column]).__name__}, not a class name")
            where.append(n)
            if len(where) % 65536 == 0:
                _check_rows(path, len(where))
    except UnicodeDecodeError as e:
        raise DataError(f"{path}, line {_first_bad_utf8_line(path)}: not UTF-8 text ({e.reason})") from None
    except (OSError, EOFError) as e:
        raise DataError(f"{path}: cannot read ({e})") from None
    if not where:
        raise DataError(f"{path}: no records")
    return where, unit


def _datasets_load(builder: str, path: Path, columns: Sequence[str], **kwargs) -> dict[str, list]:
    """`datasets.load_dataset(builder, data_files=path)` into plain lists, with a throw-away cache."""
    import datasets
    from datasets.utils import logging as ds_logging

    bars = ds_logging.is_progress_bar_enabled()
    ds_logging.disable_progress_bar()
    try:
        with tempfile.TemporaryDirectory(prefix="textcls-datasets-") as cache:
            ds = datasets.load_dataset(builder, data_files={"data": str(path)}, split="data", cache_dir=cache,
                                       **kwargs)
            return ds.select_columns(list(columns)).to_dict()
    except DataError:
        raise
    except Exception as e:  # noqa: BLE001 - pyarrow / pandas / datasets errors all become DataError
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        cause = e.__cause__ or e.__context__
        if cause is not None and str(cause).strip():
            msg += f" ({str(cause).strip().splitlines()[0]})"
        raise DataError(f"{path}: cannot read as {builder} ({msg})") from None
    finally:
        if bars:
            ds_logging.enable_progress_bar()


def load_file(path: str | Path, *, text_column: str = "text", label_column: str = "label", seed: int = 0,
              labels: Sequence[str] | None = None, as_split: str | None = None) -> DataBundle:
    """One CSV / TSV / JSONL / JSON / Parquet file (optionally .gz), split 80/10/10 with `seed`."""
    path = Path(path)
    fmt = _file_format(path)
    if fmt is None:
        raise DataError(f"{path}: unknown file type (expected one of {', '.join(FILE_FORMATS)}, optionally .gz)")
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    size = path.stat().st_size
    if size == 0:
        raise DataError(f"{path}: empty file")
    cap = current_limits().max_file_mb
    if size > cap * 2**20:
        raise DataError(f"{path}: {size / 2**20:,.0f} MB, over the {cap:,} MB limit for a data file read into "
                        "memory; train from it with `train --arrow` (memory-mapped), use a smaller sample, or raise "
                        "the limit on the command line (--max-file-mb) or with env TEXTCLS_MAX_FILE_MB")
    cols = [text_column, label_column]
    if fmt in ("csv", "tsv"):
        delim = "\t" if fmt == "tsv" else ","
        texts_py, _, where = read_delimited(path, delim, text_column, label_column)
        unit = "line"
        import datasets
        with _open_text(path) as f:
            header = next(csv.reader(f, delimiter=delim, quoting=csv.QUOTE_NONE if delim == "\t" else
                                     csv.QUOTE_MINIMAL))
        feats = datasets.Features({h.strip(): datasets.Value("string") for h in header})
        kw: dict[str, Any] = dict(sep=delim, features=feats, keep_default_na=False, na_filter=False)
        if fmt == "tsv":
            kw["quoting"] = csv.QUOTE_NONE
        table = _datasets_load("csv", path, cols, **kw)
        if len(table[text_column]) != len(texts_py):
            raise DataError(f"{path}: read {len(table[text_column])} rows through `datasets` but "
                            f"{len(texts_py)} records with the csv module; check quoting and line breaks")
    elif fmt == "json":
        where, unit = _scan_json(path, text_column, label_column)
        table = _datasets_load("json", path, cols)
    else:
        try:
            import pyarrow.parquet as pq
            names = pq.read_schema(path).names
            n_rows = pq.read_metadata(path).num_rows
        except Exception as e:  # noqa: BLE001
            raise DataError(f"{path}: not a Parquet file ({one_line_error(e)})") from None
        for col in cols:
            if col not in names:
                raise DataError(f"{path}: no column {col!r}; columns found: {names}")
        if n_rows == 0:                       # before `datasets`, which logs an Arrow error on an empty file
            raise DataError(f"{path}: the file has no rows")
        _check_rows(path, n_rows)
        table = _datasets_load("parquet", path, cols)
        unit = "row"
        where = list(range(1, len(table[text_column]) + 1))
        if not where:
            raise DataError(f"{path}: the file has no rows")
    texts, raw = table[text_column], table[label_column]
    names = _label_names(raw, labels)
    whole = _to_split(path, texts, raw, where, unit, names, text_column, label_column)
    if as_split is not None:
        splits = {as_split: whole}
    else:
        splits = split_train_dev_test(whole, seed, path)
    return DataBundle(path.name.split(".")[0], names, splits, "", str(path),
                      {"file": str(path), "format": fmt, "rows": len(whole)})


def split_train_dev_test(data: Split, seed: int = 0, path: Any = "data",
                         fractions: tuple[float, float] = (0.1, 0.1)) -> dict[str, Split]:
    """Seeded shuffle, then dev and test get `fractions` of the rows (at least one each), train the rest."""
    n = len(data)
    n_dev = max(1, int(round(fractions[0] * n)))
    n_test = max(1, int(round(fractions[1] * n)))
    if n - n_dev - n_test < 1:
        raise DataError(f"{path}: {n} rows are too few to split into train/dev/test (need 3; "
                        f"or load it with as_split='test')")
    perm = np.random.default_rng(seed).permutation(n)
    parts = {"train": perm[: n - n_dev - n_test], "dev": perm[n - n_dev - n_test: n - n_test],
             "test": perm[n - n_test:]}
    return {k: Split([data.texts[i] for i in idx], [data.labels[i] for i in idx]) for k, idx in parts.items()}


# ------------------------------------------------------------------------------------------------ the hub

def hub_offline_reason() -> str | None:
    """Why the hub must not be tried (an offline environment variable), or None."""
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in _TRUE:
            return f"{var} is set"
    return None


def _probe_hub(repo_id: str, timeout: float) -> None:
    """One metadata request (raises when the data set is missing or the hub unreachable)."""
    from huggingface_hub import HfApi

    HfApi().dataset_info(repo_id, timeout=timeout)


def check_hub(repo_id: str, timeout: float | None = None) -> None:
    """DataError unless the hub answers for `repo_id` within `timeout` seconds (never hangs longer)."""
    timeout = HUB_TIMEOUT if timeout is None else timeout
    reason = hub_offline_reason()
    if reason:
        raise DataError(f"hub data set {repo_id!r} needs network access, but {reason} (offline); "
                        f"use a bundled data set or a local file")
    result: dict[str, BaseException] = {}

    def work():
        try:
            _probe_hub(repo_id, timeout)
        except BaseException as e:  # noqa: BLE001 - reported below
            result["error"] = e

    t = threading.Thread(target=work, name="textcls-hub-probe", daemon=True)
    t.start()
    t.join(timeout + 0.5)
    if t.is_alive():
        raise DataError(f"hub data set {repo_id!r}: huggingface.co did not answer within {timeout:g} s "
                        f"(offline?); use a bundled data set or a local file")
    err = result.get("error")
    if err is None:
        return
    kind = type(err).__name__
    if kind in ("RepositoryNotFoundError", "HFValidationError"):
        raise DataError(f"no data set {repo_id!r} on the Hugging Face hub") from None
    if kind == "GatedRepoError":
        raise DataError(f"hub data set {repo_id!r} is gated: log in with `hf auth login` and accept its "
                        f"terms") from None
    first = str(err).strip().splitlines()[0] if str(err).strip() else ""
    raise DataError(f"hub data set {repo_id!r}: cannot reach the hub ({kind}: {first}); offline? "
                    f"use a bundled data set or a local file") from None


def _pick_column(features: dict, wanted: str, default: str, want_label: bool, repo_id: str) -> str:
    if wanted in features:
        return wanted
    if wanted == default:
        from datasets import ClassLabel, Value
        if want_label:
            cands = [k for k, f in features.items() if isinstance(f, ClassLabel)]
        else:
            cands = [k for k, f in features.items() if isinstance(f, Value) and f.dtype in ("string", "large_string")]
        if len(cands) == 1:
            return cands[0]
    raise DataError(f"hub data set {repo_id!r}: no column {wanted!r}; columns found: {list(features)}")


def load_hub(spec: str, *, text_column: str = "text", label_column: str = "label", seed: int = 0,
             labels: Sequence[str] | None = None) -> DataBundle:
    """A hub data set "ID" or "ID:CONFIG" through `datasets.load_dataset` (online only)."""
    repo_id, _, config = spec.partition(":")
    repo_id = repo_id.strip()
    if not repo_id:
        raise DataError("empty hub data set id (use hf:OWNER/NAME)")
    check_hub(repo_id)
    import datasets

    try:
        dd = datasets.load_dataset(repo_id, config or None)
    except Exception as e:  # noqa: BLE001
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DataError(f"hub data set {spec!r}: {first}") from None
    if not isinstance(dd, datasets.DatasetDict) or not dd:
        raise DataError(f"hub data set {spec!r}: no splits")
    any_split = next(iter(dd.values()))
    tcol = _pick_column(any_split.features, text_column, "text", False, repo_id)
    lcol = _pick_column(any_split.features, label_column, "label", True, repo_id)
    feat = any_split.features[lcol]
    class_names = list(feat.names) if isinstance(feat, datasets.ClassLabel) else None
    raw: dict[str, tuple[list, list]] = {}
    for name, ds in dd.items():
        mapped = "dev" if name in HUB_DEV_SPLITS else name
        if mapped not in SPLITS:
            continue
        cols = ds.select_columns([tcol, lcol]).to_dict()
        keep = [i for i, lab in enumerate(cols[lcol]) if lab is not None and lab != -1]
        if keep:
            raw[mapped] = ([cols[tcol][i] for i in keep], [cols[lcol][i] for i in keep])
    if not raw:
        raise DataError(f"hub data set {spec!r}: no labelled train/validation/test rows")
    if class_names is not None:
        names = list(labels) if labels is not None else class_names
        raw = {k: (t, [class_names[i] for i in lab]) for k, (t, lab) in raw.items()}
    else:
        names = _label_names([x for _, lab in raw.values() for x in lab], labels)
    splits = {k: _to_split(f"hf:{spec}[{k}]", t, lab, list(range(1, len(t) + 1)), "row", names, tcol, lcol)
              for k, (t, lab) in raw.items()}
    if "dev" not in splits and "train" in splits:
        tr = splits["train"]
        perm = np.random.default_rng(seed).permutation(len(tr))
        n_dev = max(1, len(tr) // 10)
        dev_idx, train_idx = np.sort(perm[:n_dev]), np.sort(perm[n_dev:])
        splits["dev"] = Split([tr.texts[i] for i in dev_idx], [tr.labels[i] for i in dev_idx])
        splits["train"] = Split([tr.texts[i] for i in train_idx], [tr.labels[i] for i in train_idx])
    splits = {k: splits[k] for k in SPLITS if k in splits}
    return DataBundle(repo_id.split("/")[-1] + (f"_{config}" if config else ""), names, splits, "",
                      f"hf:{spec}", {"hub_id": repo_id, "config": config or None})


def file_columns(path: str | Path, max_rows: int = 50) -> list[str]:
    """The column names of a CSV / TSV / JSONL / JSON / Parquet data file (for column pickers).

    Raises `data.DataError` naming the file and the problem when the file cannot be read that far.
    """
    p = Path(path)
    name = p.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    fmt = FILE_FORMATS.get(Path(name).suffix)
    if fmt is None:
        raise DataError(f"{p.name}: unknown file type (expected one of {', '.join(FILE_FORMATS)})")
    if fmt == "parquet":
        try:
            import pyarrow.parquet as pq
            return list(pq.read_schema(p).names)
        except Exception as e:  # noqa: BLE001
            raise DataError(f"{p.name}: not a Parquet file ({e})") from None
    try:
        with _open_text(p) as f:
            if fmt in ("csv", "tsv"):
                reader = csv.reader(f, delimiter="\t" if fmt == "tsv" else ",",
                                    quoting=csv.QUOTE_NONE if fmt == "tsv" else csv.QUOTE_MINIMAL)
                header = next(reader, None)
                if not header or not any(h.strip() for h in header):
                    raise DataError(f"{p.name}: empty file or no header row")
                cols = [h.strip() for h in header]
                if len(set(cols)) != len(cols):
                    raise DataError(f"{p.name}: repeated column names in the header: {cols}")
                return cols
            head = f.read(1)
            f.seek(0)
            if head == "[":
                rows = json.load(f)
                if not isinstance(rows, list) or not rows or not isinstance(rows[0], dict):
                    raise DataError(f"{p.name}: a .json file must hold objects (one per line, or one array)")
                return list(rows[0])
            keys: dict[str, None] = {}
            for n, line in enumerate(f, start=1):
                if n > max_rows:
                    break
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise DataError(f"{p.name}, line {n}: not valid JSON ({e.msg})") from None
                if not isinstance(obj, dict):
                    raise DataError(f"{p.name}, line {n}: expected a JSON object, got {type(obj).__name__}")
                keys.update(dict.fromkeys(obj))
            if not keys:
                raise DataError(f"{p.name}: no records")
            return list(keys)
    except UnicodeDecodeError:
        raise DataError(f"{p.name}: not UTF-8 text") from None
    except (OSError, EOFError, json.JSONDecodeError) as e:
        raise DataError(f"{p.name}: cannot be read ({e})") from None
