"""Importance vectors: one float per real token, checked (`as_vector`), and their top positions."""
from __future__ import annotations

from typing import Any

import numpy as np


def top_indices(importance: np.ndarray, k: int) -> list[int]:
    """Indices of the k largest values; ties go to the earlier position (stable)."""
    order = np.argsort(-np.asarray(importance, dtype=np.float64), kind="stable")
    return [int(i) for i in order[:k]]


def as_vector(x: Any, n: int | None = None, what: str = "importance") -> np.ndarray:
    v = np.asarray(getattr(x, "scores", x), dtype=np.float64).reshape(-1)
    if n is not None and v.shape[0] != n:
        raise ValueError(f"{what} has {v.shape[0]} values but the example has {n} real tokens")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{what} has non-finite values")
    return v


__all__ = ["as_vector", "top_indices"]
