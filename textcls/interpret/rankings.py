"""How explanations are compared and judged, in numpy only (no torch): what the pages read beside the model
worker's answers. Rank agreement (Kendall tau-b, top-k overlap), the total variation distance of two
distributions, the one-text verdict against word orders (`versus_random`, with its rule in words; the orders come from
textcls.interpret.chance), NAOPC, ties said as ties (`ranked`) and the randomisation check's threshold. textcls.interpret.faithfulness, probabilities and sanity re-export them."""
from __future__ import annotations

import math
import zlib
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


N_RANDOM = 19          # random word orders drawn first (textcls.interpret.chance: more when they cannot settle it)
TIE = 1e-6             # AOPCs this close are the same order's (scored in other batches: float noise)
LEVEL = 0.05           # the chance below which a result on one text is called better (or worse) than random
VERDICTS = ("no better than random", "partly better than random", "better than random")
UNSETTLED = "not shown to beat chance"
NO_VERDICT = "no verdict possible"
WORSE = "worse than random"
VERDICT_RULE = ("The rule: an explanation's ranking is compared with word orders drawn at random for this text "
                "(every order, exactly, when the text has at most 8 words; else 19 random orders, 99 when 19 cannot "
                "settle it, drawn the same way on every page for the same text). p = the share of orders that do at "
                f"least as well. Better than random on this text: p <= {LEVEL} both for comprehensiveness (removing its "
                "top words lowers the label's probability) and sufficiency (keeping only them keeps it); one of the "
                "two: partly better. Neither: no better than random only when the ranking sits inside the random "
                "orders (it beats at most half of them on both); not shown to beat chance when it beats most but "
                f"p > {LEVEL}; no verdict possible when the text has too few orders for p to reach {LEVEL}; worse than "
                f"random when chance does better with p <= {LEVEL}. NAOPC puts the AOPC between the worst (0) and the "
                "best (1) order this text allows, so texts and models compare.")
ONE_TEXT_NOTE = ("One sentence can show that this ranking beats chance on this sentence; it cannot show that the "
                 "explanation is faithful in general (a data set can: Attribute, over a data set).")


def text_seed(tokens: Sequence[Any] | None, n: int, seed: int = 0) -> int:
    """A seed from the text itself (its tokens; else its length) and `seed`: the same draws on every page."""
    key = "\x1f".join(str(t) for t in tokens) if tokens is not None else f"#{n}"
    return (zlib.crc32(key.encode("utf-8", "backslashreplace")) + 7919 * int(seed)) % (2 ** 32)


def _as_chance(chance) -> dict[str, Any]:
    """A `chance.Chance.finish` dict, or a list of random orders' erasure curves (sampled, no bounds)."""
    if isinstance(chance, dict):
        return chance
    if not chance:
        raise ValueError("versus_random needs at least one random order")
    return {"exact": False, "n_orders": len(chance),
            "aopc_comprehensiveness": np.array([c["aopc_comprehensiveness"] for c in chance], dtype=float),
            "aopc_sufficiency": np.array([c["aopc_sufficiency"] for c in chance], dtype=float),
            "bounds": {"comprehensiveness": [np.nan, np.nan], "sufficiency": [np.nan, np.nan]}}


def _p(x: float, others: np.ndarray, higher_is_better: bool, exact: bool) -> float:
    """The chance an order does at least as well: exact, the share of all orders (the ranking's own order is one
    of them); sampled, (1 + orders at least as good) / (n + 1)."""
    at_least = int(((others >= x - TIE) if higher_is_better else (others <= x + TIE)).sum())
    if exact:
        return float(max(at_least, 1) / others.size)
    return float((1 + at_least) / (others.size + 1))


def naopc(aopc: float, bounds, higher_is_better: bool = True) -> float:
    """NAOPC in [0, 1] (1 = the most faithful order the text allows, textcls.interpret.chance); NaN where the
    bounds are unknown or equal (one word: every order is the same)."""
    lo, hi = float(bounds[0]), float(bounds[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and math.isfinite(aopc)) or hi - lo <= 1e-12:
        return float("nan")
    x = (aopc - lo) / (hi - lo) if higher_is_better else (hi - aopc) / (hi - lo)
    return float(min(1.0, max(0.0, x)))


def versus_random(curves: dict[str, Any], chance) -> dict[str, Any]:
    """The one rule every page, lesson and command uses to judge an explanation on one text (VERDICT_RULE says it
    on screen): its comprehensiveness and sufficiency AOPCs (`erasure_curves`) against the word orders of
    `textcls.interpret.chance` (a `Chance.finish` dict; a list of random orders' curves is taken too).

    Returns {aopc, sufficiency, naopc_comprehensiveness, naopc_sufficiency, random_mean, random_sd,
    random_sufficiency, n_random, exact, p_comprehensiveness, p_sufficiency, p_floor, beaten, beaten_sufficiency,
    level (0, 1, 2), verdict, line}."""
    ch = _as_chance(chance)
    exact = bool(ch.get("exact"))
    r = np.asarray(ch["aopc_comprehensiveness"], dtype=float)
    rs = np.asarray(ch["aopc_sufficiency"], dtype=float)
    a, s = float(curves["aopc_comprehensiveness"]), float(curves.get("aopc_sufficiency", np.nan))
    p_comp = _p(a, r, True, exact)
    p_suff = _p(s, rs, False, exact) if np.isfinite(s) else 1.0
    p_floor = float(ch.get("p_floor", 1.0 / r.size if exact else 1.0 / (r.size + 1)))
    level = int(p_comp <= LEVEL) + int(p_suff <= LEVEL)
    beaten = float((r < a - TIE).mean())                       # share of orders this ranking beats
    beaten_s = float((rs > s + TIE).mean()) if np.isfinite(s) else 0.0
    if level:
        verdict = VERDICTS[level]
        if level == 1:
            verdict += " (on " + ("comprehensiveness" if p_comp <= LEVEL else "sufficiency") + ")"
    elif _p(a, r, False, exact) <= LEVEL and p_floor <= LEVEL:
        verdict = WORSE
    elif p_floor > LEVEL:
        verdict = NO_VERDICT
    elif beaten <= 0.5 and beaten_s <= 0.5:
        verdict = VERDICTS[0]
    else:
        verdict = UNSETTLED
    b = ch.get("bounds") or {}
    nc = naopc(a, b.get("comprehensiveness", (np.nan, np.nan)), True)
    ns = naopc(s, b.get("sufficiency", (np.nan, np.nan)), False)
    mean, sd = float(r.mean()), float(r.std(ddof=1)) if r.size > 1 else 0.0
    n_words = ch.get("n_words")
    drawn = (f"all {r.size} orders of its {n_words} words" if exact else
             f"{r.size} random orders (drawn for this text)")
    norm = f"; NAOPC {nc:.2f}" if math.isfinite(nc) else ""
    if verdict == NO_VERDICT:
        tail = (f"with {n_words} words even the best ranking has p = {p_floor:.3f}, above {LEVEL}: {verdict} on a text "
                "this short.")
    else:
        tail = (f"it beats {beaten:.0%} of them (sufficiency: {beaten_s:.0%}); p = {p_comp:.3f} on comprehensiveness, "
                f"{p_suff:.3f} on sufficiency: {verdict} on this text.")
    line = (f"Removing the words in the order of these weights lowers the label's probability by {a:.3f} on average "
            f"(comprehensiveness AOPC{norm}); {drawn} lower it by {mean:.3f} ± {sd:.3f} (the spread of the draws); "
            + tail)
    return {"aopc": a, "sufficiency": s, "naopc_comprehensiveness": nc, "naopc_sufficiency": ns,
            "random_mean": mean, "random_sd": sd, "random_sufficiency": float(rs.mean()), "n_random": int(r.size),
            "exact": exact, "p_comprehensiveness": p_comp, "p_sufficiency": p_suff, "p_floor": p_floor,
            "beaten": beaten, "beaten_sufficiency": beaten_s, "level": level, "verdict": verdict, "line": line}


def ranked(values: dict[str, float], higher_is_better: bool = True, tol: float = 5e-4) -> str:
    """Names in order with ties said as ties ("a = b > c"): values within `tol` of the next are a tie."""
    items = sorted(((k, v) for k, v in values.items() if v is not None and math.isfinite(v)),
                   key=lambda kv: -kv[1] if higher_is_better else kv[1])
    out = ""
    for i, (k, v) in enumerate(items):
        if i:
            out += " = " if abs(items[i - 1][1] - v) <= tol else (" > " if higher_is_better else " < ")
        out += k
    return out


__all__ = ["FLAG_RHO", "LEVEL", "NO_VERDICT", "N_RANDOM", "ONE_TEXT_NOTE", "UNSETTLED", "VERDICTS", "VERDICT_RULE", "WORSE",
           "agreement", "kendall_tau", "n_tokens", "naopc", "ranked", "text_seed", "topk_overlap", "tvd", "versus_random"]
