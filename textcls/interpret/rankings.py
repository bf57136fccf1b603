"""How explanations are compared and judged, in numpy only (no torch): what the pages read beside the model
worker's answers. Rank agreement (Kendall tau-b, top-k overlap), the total variation distance of two
distributions, the one-text verdict against random word orders (`versus_random`, with its rule in words) and
the randomisation check's threshold. textcls.interpret.faithfulness, probabilities and sanity re-export them."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from textcls.interpret.vectors import as_vector, top_indices

FLAG_RHO = 0.5          # the randomisation check: a rank correlation at or above this after randomising = flagged


def tvd(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Total variation distance 1/2 sum_i |p_i - q_i| over the last axis."""
    return 0.5 * np.abs(np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64)).sum(-1)


def n_tokens(n: int, pct: float) -> int:
    """Tokens in the top pct% of n: ceil(pct * n / 100), at least 1 (for pct > 0), at most n."""
    if pct <= 0 or n == 0:
        return 0
    return int(min(n, max(1, math.ceil(pct * n / 100 - 1e-9))))


def kendall_tau(a, b) -> float:
    """Kendall's tau-b between two importance vectors (ties counted as in tau-b); NaN if either is constant
    or shorter than 2."""
    x, y = as_vector(a), as_vector(b)
    if x.shape != y.shape:
        raise ValueError(f"vectors differ in length: {x.shape[0]} vs {y.shape[0]}")
    n = x.shape[0]
    if n < 2:
        return float("nan")
    i, j = np.triu_indices(n, 1)
    dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    s = float((dx * dy).sum())
    tx, ty = float((dx != 0).sum()), float((dy != 0).sum())
    if tx == 0 or ty == 0:
        return float("nan")
    return s / math.sqrt(tx * ty)


def topk_overlap(a, b, k: int | None = None, pct: float | None = None) -> float:
    """|top_k(a) & top_k(b)| / k; k given, or ceil(pct% of n), default pct = 20."""
    x, y = as_vector(a), as_vector(b)
    if x.shape != y.shape:
        raise ValueError(f"vectors differ in length: {x.shape[0]} vs {y.shape[0]}")
    n = x.shape[0]
    if k is None:
        k = n_tokens(n, 20 if pct is None else pct)
    if n == 0 or k <= 0:
        return float("nan")
    k = min(int(k), n)
    return len(set(top_indices(x, k)) & set(top_indices(y, k))) / k


def agreement(explanations: dict[str, Any], k_pct: float = 20) -> dict[str, Any]:
    """Kendall tau and top-k overlap between every pair of named importance vectors (NaN where lengths differ).
    Returns {"names", "kendall_tau": (m, m) array, "topk_overlap": (m, m) array}."""
    names = list(explanations)
    vecs = [as_vector(explanations[k]) for k in names]
    m = len(names)
    tau, ov = np.full((m, m), np.nan), np.full((m, m), np.nan)
    for a in range(m):
        for b in range(m):
            if vecs[a].shape == vecs[b].shape:
                tau[a, b] = kendall_tau(vecs[a], vecs[b]) if a != b else 1.0
                ov[a, b] = topk_overlap(vecs[a], vecs[b], pct=k_pct)
    return {"names": names, "kendall_tau": tau, "topk_overlap": ov}


N_RANDOM = 19          # random word orders one text is tested against: beating all 19 has a chance of 1 in 20
LEVEL = 0.05           # the chance below which a result on one text is called better (or worse) than random
VERDICTS = ("no better than random", "partly better than random", "better than random")
VERDICT_RULE = (f"The rule: an explanation's ranking is compared with {N_RANDOM} random word orders of the same "
                "text. It is better than random on this text when removing its top words lowers the label's "
                "probability more than every random order does (comprehensiveness AOPC) and keeping only its top "
                "words keeps the probability better than every random order does (sufficiency AOPC): by chance "
                f"that happens 1 time in {N_RANDOM + 1}. One of the two: partly better. Neither: no better than "
                "random; below every random order on comprehensiveness: worse than random.")
ONE_TEXT_NOTE = ("One sentence can show that this ranking beats chance on this sentence; it cannot show that the "
                 "explanation is faithful in general (a data set can: Attribute, over a data set). Short texts "
                 "have few distinct word orders, so chance ties them often and no verdict is possible.")


def _chance(x: float, others: np.ndarray, higher_is_better: bool) -> float:
    """Monte Carlo p-value: (1 + how many random orders do at least as well) / (n + 1)."""
    at_least = (others >= x - 1e-12) if higher_is_better else (others <= x + 1e-12)
    return float((1 + int(at_least.sum())) / (others.size + 1))


def versus_random(curves: dict[str, Any], random_curves: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The one rule every page and lesson uses to judge an explanation on one text (VERDICT_RULE says it on
    screen): its comprehensiveness and sufficiency AOPCs (`erasure_curves`) against those of random word orders
    (`random_orders_curves`). Each is "better than random" when chance does as well with probability at most
    LEVEL, counted as (1 + random orders at least as good) / (n + 1).

    Returns {aopc, sufficiency, random_mean, random_sd, random_sufficiency, n_random, p_comprehensiveness,
    p_sufficiency, level (0, 1, 2), verdict, line}."""
    if not random_curves:
        raise ValueError("versus_random needs at least one random order")
    r = np.array([c["aopc_comprehensiveness"] for c in random_curves], dtype=float)
    rs = np.array([c["aopc_sufficiency"] for c in random_curves], dtype=float)
    a, s = float(curves["aopc_comprehensiveness"]), float(curves.get("aopc_sufficiency", np.nan))
    p_comp = _chance(a, r, higher_is_better=True)
    p_suff = _chance(s, rs, higher_is_better=False) if np.isfinite(s) else 1.0
    level = int(p_comp <= LEVEL) + int(p_suff <= LEVEL)
    verdict = VERDICTS[level]
    if level == 0 and _chance(a, r, higher_is_better=False) <= LEVEL:
        verdict = "worse than random"
    mean, sd = float(r.mean()), float(r.std(ddof=1)) if r.size > 1 else 0.0
    beaten = int((r < a - 1e-12).sum())
    beaten_s = int((rs > s + 1e-12).sum()) if np.isfinite(s) else 0
    line = (f"Removing the words in the order of these weights lowers the label's probability by {a:.3f} on average "
            f"(comprehensiveness AOPC); {r.size} random orders lower it by {mean:.3f} ± {sd:.3f}, and this ranking "
            f"beats {beaten} of them (on sufficiency, {beaten_s} of them): {verdict} on this text.")
    return {"aopc": a, "sufficiency": s, "random_mean": mean, "random_sd": sd,
            "random_sufficiency": float(rs.mean()), "n_random": int(r.size), "p_comprehensiveness": p_comp,
            "p_sufficiency": p_suff, "level": level, "verdict": verdict, "line": line}


__all__ = ["FLAG_RHO", "LEVEL", "N_RANDOM", "ONE_TEXT_NOTE", "VERDICTS", "VERDICT_RULE", "agreement", "kendall_tau",
           "n_tokens", "topk_overlap", "tvd", "versus_random"]
