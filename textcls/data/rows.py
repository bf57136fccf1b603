"""The data-set types (`DataError`, `Split`, `DataBundle`) and the row rules every source shares (bundled folders,
local files, the hub): strict CSV / TSV reading that names the line of a malformed record (`read_delimited`), the
check of every row (`to_split`: a non-empty text, a known label), label names (`label_names`: given, else the sorted
distinct values, numeric order when all are integers), and reading capped by the max_file_mb / max_file_rows limits.

Errors are `DataError` (a ValueError) whose message names the file, the line (or row) and the problem:
malformed CSV (wrong field count, bad quoting), a missing column (listing the columns found), an empty file,
an empty text, an empty or unknown label.
"""
from __future__ import annotations

import csv
import gzip
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from textcls.runtime.limits import current as current_limits

SPLITS = ("train", "dev", "test")


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


# ------------------------------------------------------------------------------------------------ reading rows

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


def open_binary(path: Path):
    """The file's bytes (decompressed for .gz), counted against the max_file_mb limit."""
    raw = gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")
    return io.BufferedReader(_Capped(raw, path, current_limits().max_file_mb))


def open_text(path: Path):
    return io.TextIOWrapper(open_binary(path), encoding="utf-8-sig", newline="")


def one_line_error(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def check_rows(path: Path, n: int) -> None:
    cap = current_limits().max_file_rows
    if n > cap:
        raise DataError(f"{path}: more than {cap:,} rows, over the limit for a data file read into memory; train "
                        "from it with `train --arrow`, use a smaller sample, or raise the limit with env "
                        "TEXTCLS_MAX_FILE_ROWS")


def first_bad_utf8_line(path: Path) -> int | None:
    """Line number of the first line that is not UTF-8 (the decoder reads ahead, so find it again)."""
    try:
        with open_binary(path) as f:
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
        with open_text(path) as f:
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
                    check_rows(path, len(lines))
                start = reader.line_num + 1
    except csv.Error as e:
        raise DataError(f"{path}, line {start}: malformed {kind} ({e}; check the quoting)") from None
    except UnicodeDecodeError as e:
        raise DataError(f"{path}, line {first_bad_utf8_line(path) or start}: not UTF-8 text ({e.reason})") from None
    except (OSError, EOFError) as e:   # includes gzip.BadGzipFile
        raise DataError(f"{path}: cannot read ({e})") from None
    finally:
        csv.field_size_limit(old_limit)
    if not texts:
        raise DataError(f"{path}: the file has a header but no rows")
    check_rows(path, len(lines))
    return texts, labels, lines


def to_split(path, texts, raw_labels, where: Sequence[int], unit: str, names: Sequence[str],
              text_column: str, label_column: str) -> Split:
    """Check every row (non-empty text, known label) and map labels to ids."""
    index = {n: i for i, n in enumerate(names)}
    ids: list[int] = []
    for k, (t, lab) in enumerate(zip(texts, raw_labels)):
        if t is None or not isinstance(t, str) or not t.strip():
            problem = "is not a string" if t is not None and not isinstance(t, str) else "is empty"
            raise DataError(f"{path}, {unit} {where[k]}: the text ({text_column!r}) {problem}")
        key = label_key(lab)
        if key is None:
            raise DataError(f"{path}, {unit} {where[k]}: the label ({label_column!r}) is empty")
        i = index.get(key)
        if i is None:
            shown = list(names) if len(names) <= 30 else list(names[:30]) + ["..."]
            raise DataError(f"{path}, {unit} {where[k]}: unknown label {key!r}; known labels: {shown}")
        ids.append(i)
    return Split(list(texts), ids)


def label_key(lab) -> str | None:
    if lab is None or isinstance(lab, float) and math.isnan(lab):
        return None
    if isinstance(lab, bool):
        lab = str(lab).lower()
    elif isinstance(lab, float) and lab.is_integer():
        lab = int(lab)
    key = str(lab).strip()
    return key or None


def label_names(raw_labels, given: Sequence[str] | None) -> list[str]:
    if given is not None:
        names = [str(x) for x in given]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"labels must be distinct class names, got {list(given)!r}")
        return names
    keys = {k for k in map(label_key, raw_labels) if k is not None}
    try:
        return sorted(keys, key=int)
    except ValueError:
        return sorted(keys)


__all__ = ["SPLITS", "DataError", "Split", "DataBundle", "open_binary", "open_text", "one_line_error", "check_rows",
           "first_bad_utf8_line", "read_delimited", "to_split", "label_key", "label_names"]
