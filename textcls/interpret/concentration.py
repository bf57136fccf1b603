"""How concentrated an attention distribution is, and a verdict in plain words, so every attention view can tell
its reader how much the shading says (numpy only; used by the paper views, the attention report in docs/ and
its tests).

For weights w_1..w_n >= 0 summing to one (a distribution over n tokens):
    H = -sum_i w_i log w_i          entropy
    normalised entropy = H / log n  (1 = perfectly uniform, 0 = all weight on one token)
    effective tokens  = exp(H)      (the number of tokens a uniform distribution with the same entropy covers)
    peak              = n * max_i w_i   (the largest weight over the uniform weight 1/n)

Verdicts (the bands are ours; `BANDS` keeps them in one place):
    normalised entropy >= 0.95: "nearly uniform: this attention does not single out words"
    >= 0.80:                    "weakly peaked: spread over about k of n words"
    below:                      "peaked on about k of n words"
with k = round(effective tokens). Several distributions (heads, query rows) are summarised by their median.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

BANDS = (0.95, 0.80)            # nearly uniform at or above the first; weakly peaked at or above the second


@dataclass(frozen=True)
class Concentration:
    entropy: float               # normalised entropy in [0, 1] (median over distributions)
    peak: float                  # largest weight / uniform weight (median over distributions)
    effective: float             # exp(entropy in nats) (median)
    n: int                       # tokens per distribution
    count: int                   # distributions summarised (heads, rows)
    top: tuple[str, ...] = ()    # the most weighted tokens of the (mean) distribution, when tokens were given
    unit: str = "word"           # what the distribution is over ("word", "sentence")

    @property
    def verdict(self) -> str:
        return verdict(self.entropy, self.effective, self.n, self.unit)

    def sentence(self) -> str:
        """One line for a caption: the numbers, then the verdict."""
        over = f" (median of {self.count})" if self.count > 1 else ""
        shown = self.top[:max(1, int(round(self.effective)))]
        top = f"; most weight on {', '.join(repr(t) for t in shown)}" if shown and self.entropy < BANDS[0] else ""
        if self.n < 2:
            return f"Concentration: a single {self.unit}, nothing to compare (its weight is 1 by definition)."
        return (f"Concentration{over}: normalised entropy {self.entropy:.2f} (1 = uniform), largest weight "
                f"{self.peak:.1f}x the uniform one - {self.verdict}{top}.")


def verdict(entropy: float, effective: float, n: int, unit: str = "word") -> str:
    """The plain-words reading of a normalised entropy (see the module docstring)."""
    if n < 2:
        return f"a single {unit}: nothing to compare"
    k = max(1, min(n, int(round(effective))))
    if entropy >= BANDS[0]:
        return f"nearly uniform: this attention does not single out {unit}s"
    if entropy >= BANDS[1]:
        return f"weakly peaked: spread over about {k} of {n} {unit}s"
    return f"peaked on about {k} of {n} {unit}s"


def _one(w: np.ndarray) -> tuple[float, float, float]:
    n = w.shape[-1]
    total = w.sum()
    if n < 2 or not np.isfinite(total) or total <= 0:
        return 1.0, 1.0, float(n)
    p = w / total
    nz = p[p > 0]
    h = float(-(nz * np.log(nz)).sum())
    return h / math.log(n), float(n * p.max()), math.exp(h)


def concentration(weights, tokens: Sequence[str] | None = None, top: int = 3, unit: str = "word") -> Concentration:
    """Concentration of one distribution (n,), several (..., n) over the last axis, or a list of distributions
    of different lengths (sentences); each is renormalised to sum to one and negative weights count as zero.
    `tokens` names the last axis (one array) for the most weighted words. `n` is the (median) length."""
    if isinstance(weights, (list, tuple)) and weights and np.ndim(weights[0]) >= 1 and \
            len({np.shape(x)[-1] for x in weights}) > 1:
        rows = [r for x in weights for r in np.clip(np.asarray(x, dtype=float), 0.0, None).reshape(-1, np.shape(x)[-1])]
        tokens = None
    else:
        a = np.clip(np.asarray(weights, dtype=float), 0.0, None)
        a = a.reshape(1) if a.ndim == 0 else a
        rows = list(a.reshape(-1, a.shape[-1])) if a.shape[-1] else []
    n = int(np.median([len(r) for r in rows])) if rows else 0
    stats = np.array([_one(r) for r in rows]) if rows else np.array([[1.0, 1.0, float(n)]])
    names: tuple[str, ...] = ()
    if tokens is not None and n >= 2:
        mean = np.mean(rows, axis=0)
        names = tuple(str(tokens[i]) for i in np.argsort(-mean, kind="stable")[:top] if i < len(tokens))
    return Concentration(float(np.median(stats[:, 0])), float(np.median(stats[:, 1])),
                         float(np.median(stats[:, 2])), n, int(max(1, len(rows))), names, unit)


__all__ = ["BANDS", "Concentration", "concentration", "verdict"]
