"""The statistics behind a study's reading, over per-seed numbers (plain Python, no torch, no scipy): the Welch
t interval for a difference of two means, and Spearman's rank correlation over a grid."""
from __future__ import annotations

import math
import statistics
from typing import Sequence

_Z975 = 1.959964


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularised incomplete beta function (Numerical Recipes, betacf)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1 + aa * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-12:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularised incomplete beta function, 0 <= x <= 1."""
    if x <= 0 or x >= 1:
        return 0.0 if x <= 0 else 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(lbt) * _betacf(a, b, x) / a
    return 1 - math.exp(lbt) * _betacf(b, a, 1 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom."""
    tail = 0.5 * _betainc(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t > 0 else tail


def t975(df: float) -> float:
    """The 97.5 % quantile of Student's t with `df` (> 0, not necessarily whole) degrees of freedom."""
    if not df > 0:
        raise ValueError(f"degrees of freedom must be > 0, got {df}")
    if math.isinf(df):
        return _Z975
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < 0.975:
        hi *= 2
    for _ in range(100):                                    # bisection: t_cdf is increasing
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < 0.975 else (lo, mid)
    return (lo + hi) / 2


def welch(a: Sequence[float], b: Sequence[float]) -> dict[str, float]:
    """mean(a) - mean(b) with its Welch 95 % interval: {"diff", "lo", "hi", "df"}. Each needs >= 2 values;
    when both spreads are 0 the interval is the point itself (df inf)."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError("a Welch interval needs at least 2 values on each side")
    ma, mb = statistics.mean(a), statistics.mean(b)
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    diff = ma - mb
    se = math.sqrt(va + vb)
    if se == 0:
        return {"diff": diff, "lo": diff, "hi": diff, "df": math.inf}
    df = (va + vb) ** 2 / ((va ** 2 / (len(a) - 1) if va else 0) + (vb ** 2 / (len(b) - 1) if vb else 0))
    h = t975(df) * se
    return {"diff": diff, "lo": diff - h, "hi": diff + h, "df": df}


def _ranks(v: Sequence[float]) -> list[float]:
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1                    # ties share their mean rank
        i = j + 1
    return r


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rank correlation (ties: mean ranks); None when either side is constant or n < 3."""
    if len(x) != len(y):
        raise ValueError("x and y differ in length")
    if len(x) < 3:
        return None
    rx, ry = _ranks(x), _ranks(y)
    mx, my = statistics.mean(rx), statistics.mean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def spearman_interval(rho: float, n: int) -> tuple[float, float] | None:
    """An approximate 95 % interval for Spearman's rho (Fisher z with the Bonett-Wright variance
    (1 + rho^2 / 2) / (n - 3)); None when n < 4."""
    if n < 4:
        return None
    r = max(min(rho, 0.999999), -0.999999)
    z, se = math.atanh(r), math.sqrt((1 + r * r / 2) / (n - 3))
    return math.tanh(z - _Z975 * se), math.tanh(z + _Z975 * se)
