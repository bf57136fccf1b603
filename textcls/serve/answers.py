"""The one cache of the pages' model work: answers of `textcls.serve.work` jobs, keyed on the request (the job's
name and its plain arguments, the checkpoint's file stamp among them), each job keeping as many as it declares
(`Job.keep`), the least recently used dropped first.

Shared by every session of a server process and thread-safe. A request asked by two sessions at once is computed
once (the second waits for the first's answer). An answer is stored pickled and every caller gets its own copy, so
a page that changed what it got cannot change what the next one gets. An exception is not kept: the next ask runs
the job again. Torch-free: the server imports it before any model.
"""
from __future__ import annotations

import pickle
import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable


def frozen(x) -> Hashable:
    """A hashable, order-free stand-in for a plain value (dicts by sorted items, lists as tuples): a cache key."""
    if isinstance(x, dict):
        return ("{}",) + tuple(sorted((str(k), frozen(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return tuple(frozen(v) for v in x)
    if isinstance(x, (set, frozenset)):
        return ("set",) + tuple(sorted(frozen(v) for v in x))
    return x


class Answers:
    """{job name: LRU of (key -> pickled answer)}; `get(name, key, compute, keep)`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[str, OrderedDict] = {}
        self._running: dict[tuple, threading.Lock] = {}      # (name, key) -> held while it is computed

    def get(self, name: str, key: Hashable, compute: Callable[[], Any], keep: int) -> Any:
        """The answer kept for (name, key), else `compute()` (kept when `keep` > 0). Raises what compute raises."""
        if keep <= 0:
            return compute()
        hit = self._lookup(name, key)
        if hit is not None:
            return pickle.loads(hit)
        with self._lock:
            gate = self._running.setdefault((name, key), threading.Lock())
        with gate:                                  # one computes; a second asker of the same waits, then reads it
            hit = self._lookup(name, key)
            if hit is not None:
                return pickle.loads(hit)
            try:
                value = compute()
                blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
                with self._lock:
                    kept = self._kept.setdefault(name, OrderedDict())
                    kept[key] = blob
                    while len(kept) > keep:
                        kept.popitem(last=False)
            finally:
                with self._lock:
                    self._running.pop((name, key), None)
        return pickle.loads(blob)

    def _lookup(self, name: str, key: Hashable) -> bytes | None:
        with self._lock:
            kept = self._kept.get(name)
            if kept is None or key not in kept:
                return None
            kept.move_to_end(key)
            return kept[key]

    def has(self, name: str, key: Hashable) -> bool:
        with self._lock:
            return key in self._kept.get(name, ())

    def forget(self, name: str, key: Hashable) -> None:
        """Drop one kept answer, if kept (one past its time)."""
        with self._lock:
            self._kept.get(name, {}).pop(key, None)

    def count(self, name: str | None = None) -> int:
        """How many answers are kept (of job `name`, or of all)."""
        with self._lock:
            return sum(len(k) for n, k in self._kept.items() if name is None or n == name)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()


__all__ = ["Answers", "frozen"]
