"""Local data files: any CSV / TSV / JSONL / JSON / Parquet file (optionally .gz) as a data set (`load_file`), and
the column names of one (`file_columns`, for column pickers).

A file goes through the `datasets` library (`load_dataset("csv" | "json" | "parquet", data_files=...)`),
after a structural check of CSV / TSV / JSONL in Python that names the line of any malformed record. Rules:
CSV/TSV need a header row; TSV is read without quote processing (one record per line, as GLUE's TSVs);
`.json` may be JSON lines or one array of objects; every column is read as a string (so "NA" or "007" stay
text). Label names are `labels=` when given (others are an error), else the sorted distinct values (numeric
order when all are integers). A file is split 80/10/10 into train/dev/test with `seed` (at least one row in
each), unless `as_split=` names the one split to put everything in (e.g. "test" to evaluate on a file).
"""
from __future__ import annotations

import csv
import json
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from textcls.data.rows import (DataBundle, DataError, Split, check_rows, first_bad_utf8_line, label_names,
    one_line_error, open_text, read_delimited, to_split)
from textcls.runtime.limits import current as current_limits

FILE_FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "json", ".ndjson": "json", ".json": "json",
                ".parquet": "parquet"}


def file_format(path: Path) -> str | None:
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return FILE_FORMATS.get(Path(name).suffix)


def _scan_json(path: Path, text_column: str, label_column: str) -> tuple[list[int], str]:
    """Check a JSON-lines file (or a JSON array) record by record; returns (line/record numbers, unit)."""
    where: list[int] = []
    try:
        with open_text(path) as f:
            head = f.read(4096).lstrip()
        if not head:
            raise DataError(f"{path}: empty file")
        if head.startswith("["):
            with open_text(path) as f:
                try:
                    records = json.load(f)
                except json.JSONDecodeError as e:
                    raise DataError(f"{path}, line {e.lineno}: invalid JSON ({e.msg})") from None
                except RecursionError:
                    raise DataError(f"{path}: JSON nested too deeply to be a data set") from None
            if not isinstance(records, list):
                raise DataError(f"{path}: expected a JSON array of records")
            check_rows(path, len(records))
            unit = "record"
            items = enumerate(records, 1)
        else:
            unit = "line"

            def lines():
                with open_text(path) as f:
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
                check_rows(path, len(where))
    except UnicodeDecodeError as e:
        raise DataError(f"{path}, line {first_bad_utf8_line(path)}: not UTF-8 text ({e.reason})") from None
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
    fmt = file_format(path)
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
        with open_text(path) as f:
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
        check_rows(path, n_rows)
        table = _datasets_load("parquet", path, cols)
        unit = "row"
        where = list(range(1, len(table[text_column]) + 1))
        if not where:
            raise DataError(f"{path}: the file has no rows")
    texts, raw = table[text_column], table[label_column]
    names = label_names(raw, labels)
    whole = to_split(path, texts, raw, where, unit, names, text_column, label_column)
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
        raise DataError(f"{path}: {n} row(s) are too few to split into train/dev/test (need 3); to score every "
                        f"row, put them in a folder as test.csv beside a dataset.json naming the labels "
                        f"({{\"labels\": [...]}}) and pass that folder as the data (from Python: "
                        f"load_data(..., as_split='test'))")
    perm = np.random.default_rng(seed).permutation(n)
    parts = {"train": perm[: n - n_dev - n_test], "dev": perm[n - n_dev - n_test: n - n_test],
             "test": perm[n - n_test:]}
    return {k: Split([data.texts[i] for i in idx], [data.labels[i] for i in idx]) for k, idx in parts.items()}


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
        with open_text(p) as f:
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


__all__ = ["FILE_FORMATS", "file_format", "load_file", "split_train_dev_test", "file_columns"]
