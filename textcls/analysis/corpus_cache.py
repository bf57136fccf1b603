"""The disk cache of the data-set views (textcls.analysis.corpus_views): results of passes over a whole split,
keyed by the checkpoint (its folder and its files' modification times and sizes), the texts and labels, the view
and its settings, so a split is computed once per checkpoint. Entries are JSON + .npz written by each view's result
(read with allow_pickle=False: nothing is unpickled); a damaged entry is recomputed, a read-only or full disk only
costs a recomputation.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Sequence

import numpy as np

from textcls.runtime.paths import cache_dir


def default_cache_dir() -> Path:
    """The user cache folder (paths.cache_dir: env TEXTCLS_CACHE, else the platform's) / "corpus"."""
    return cache_dir() / "corpus"


def checkpoint_stamp(path: str | Path) -> list:
    """[name, mtime_ns, size] of every file the checkpoint reads (each entry of its folder - weights, config,
    vocabulary, tokenizer files, textcls.json - and "base/NAME" for a delta's installed base folder,
    `textcls.checkpoint.files.checkpoint_identity`): a re-saved checkpoint, or one replaced tokenizer file, gets
    a new cache key."""
    from textcls.checkpoint.stamp import checkpoint_identity
    own, base = checkpoint_identity(path)
    out = [[name, mtime, size] for name, _, size, mtime in own]
    if base is not None:
        out += [[f"base/{name}", mtime, size] for name, _, size, mtime in base[1]]
    return out


class CorpusCache:
    """Results of corpus passes on disk, keyed by checkpoint (path + file stamps), texts, labels, view, settings.

    A Predictor without a checkpoint folder (`predictor.path is None`) is never cached (its weights have no
    stable identity). Unreadable cache files are ignored and recomputed.
    """

    def __init__(self, root: str | Path | None = None):
        self.root = Path(root) if root is not None else default_cache_dir()

    def key(self, predictor, kind: str, texts: Sequence[str], gold: np.ndarray | None, params: dict) -> str | None:
        path = getattr(predictor, "path", None)
        if path is None:
            return None
        h = hashlib.sha256()
        for t in texts:
            h.update(t.encode("utf-8", "surrogatepass"))
            h.update(b"\x00")
        ident = {"checkpoint": str(Path(path).resolve()), "stamp": checkpoint_stamp(path), "kind": kind,
                 "params": params, "texts": h.hexdigest(), "n": len(texts),
                 "gold": None if gold is None else hashlib.sha256(np.asarray(gold, np.int64).tobytes()).hexdigest(),
                 "version": 1}
        digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:24]
        return f"{kind}-{Path(path).name[:40]}-{digest}"

    def get(self, key: str | None, loader):
        if key is None:
            return None
        stem = self.root / key
        if not stem.with_suffix(".json").exists():
            return None
        try:
            return loader(stem)
        except Exception:  # noqa: BLE001 - a damaged cache entry is recomputed
            return None

    def put(self, key: str | None, saver) -> None:
        if key is None:
            return
        try:
            saver(self.root / key)
        except OSError:
            pass  # a read-only or full disk only costs a recomputation next time


__all__ = ["CorpusCache", "checkpoint_stamp", "default_cache_dir"]
