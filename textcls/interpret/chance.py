"""What chance, the best and the worst word order do on one text: the reference every one-text verdict and every
normalised AOPC is read against. Computed once per (model, text), shared by every explanation of that text.

An *order* ranks a text's n words; its ERASER AOPCs (`faithfulness`: comprehensiveness removes the top k% words,
sufficiency keeps only them, k in {0, 1, 5, 10, 20, 50} %) depend only on the nested sets of its top words at those
sizes, so every variant is a set of removed words, scored once (`variants.Variants`).

- **Chance** (`orders`): up to EXACT_WORDS words, every one of the n! orders is enumerated (2^n variants scored, the
  exact permutation distribution: a p-value is a share of all orders, no sampling); beyond, random orders drawn
  from a generator seeded by the text itself (`text_seed`: every page, lesson and command draws the same ones for
  the same text): N_FIRST first and, when those cannot settle a p-value at LEVEL, N_MORE in all (Besag & Clifford's
  sequential Monte Carlo idea: stop early only when the answer is already clear).
- **Bounds** (`bounds`): the lowest and highest AOPC any order reaches on this text, for normalised AOPC (NAOPC,
  Edin et al. 2025, "Normalized AOPC: Fixing Misleading Faithfulness Metrics for Feature Attribution
  Explainability"; reference code JoakimEdin/naopc): exact by enumeration up to EXACT_WORDS words; beyond, the
  reference's beam search (`src/evaluation/naopc_beam/bound_approximation_methods.py`: orders grown one word at a
  time, the `beam` best partial orders kept by their cumulative score), run up to the largest bin (50 % of the words:
  the rest of an order does not enter our AOPC), widened by every order actually seen (random orders, the methods'
  own), so a bound is never beaten by an order we scored. Beyond BEAM_MAX_WORDS words no bound is computed (NaN).
- NAOPC comprehensiveness = (AOPC - lowest) / (highest - lowest); NAOPC sufficiency = (highest - AOPC) / (highest -
  lowest) (low sufficiency is faithful): both in [0, 1], 1 = the most faithful order this text allows, 0 = the least.
  Raw AOPC's range depends on the model and the text; NAOPC's does not, so NAOPC is what compares models.
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Mapping, Sequence

import numpy as np

from textcls.interpret.rankings import TIE, n_tokens, text_seed, versus_random
from textcls.runtime.threads import interactive_work

BINS = (1, 5, 10, 20, 50)
EXACT_WORDS = 8          # 8! = 40,320 orders from 2^8 = 256 scored variants (fewer than 19 random orders cost)
N_FIRST = 19             # random orders drawn first: beating all 19 has a chance of 1 in 20
N_MORE = 99              # in all, when the first 19 cannot settle the p-value: the smallest p is then 0.01
BEAM = 1                 # the NAOPC bounds' beam width beyond EXACT_WORDS (1 = greedy; the reference uses up to 5)
BEAM_MAX_WORDS = 64      # longer texts get no bounds (the beam's passes grow with the square of the words)


def _aopcs(p: float, q: np.ndarray, n: int, chain: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(comprehensiveness AOPC, sufficiency AOPC) of orders given as (m, bins) bitmasks of their top sets;
    q[mask] = the target's probability with the words in mask removed."""
    full = (1 << n) - 1
    comp = (p - q[chain]).sum(1)                                      # (m,)
    suff = (p - q[full]) + (p - q[full ^ chain]).sum(1)               # nothing kept, then the top sets kept
    return comp / (chain.shape[1] + 1), suff / (chain.shape[1] + 1)


class Chance:
    """The orders of one text, as a job over `variants.Variants` (shared with other texts' jobs): `add` the variants
    it needs, `V.run()`, then `finish`. See the module docstring."""

    def __init__(self, V, text: int, n: int, base: int, target: int | None = None, seed: int = 0,
                 tokens: Sequence[Any] | None = None, bins: Sequence[float] = BINS, beam: int = BEAM,
                 n_first: int = N_FIRST, n_more: int = N_MORE):
        if n < 1:
            raise ValueError("a text with no words has no word orders")
        self.V, self.t, self.n, self.base, self.bins = V, text, n, base, tuple(bins)
        self.ks = [n_tokens(n, b) for b in self.bins]
        self.target = target
        self.exact = n <= EXACT_WORDS
        self.seed = text_seed(tokens, n, seed)
        self.beam, self.n_first, self.n_more = int(beam), int(n_first), int(n_more)
        self._rng = np.random.default_rng(self.seed)
        self._orders: list[list[int]] = []
        self._beams: dict[str, list[tuple[tuple[int, ...], float, list[float]]]] = {}
        self._pending: list = []

    # -- variants
    def _vid(self, removed) -> int:
        return self.V.add(self.t, removed)

    def _order_vids(self, order) -> tuple[list[int], list[int]]:
        return ([self._vid(order[:k]) for k in self.ks], [self._vid(order[k:]) for k in self.ks])

    def add(self) -> None:
        """Ask for the first variants: every subset (exact) or the first random orders."""
        self._empty = self._vid(range(self.n))
        if self.exact:
            self._subsets = {m: self._vid([w for w in range(self.n) if m >> w & 1]) for m in range(1 << self.n)}
        else:
            self._draw(self.n_first)

    def _draw(self, k: int) -> None:
        for _ in range(k):
            o = [int(x) for x in self._rng.permutation(self.n)]
            self._orders.append(o)
            self._order_vids(o)

    def p(self) -> tuple[np.ndarray, int]:
        p = self.V.probs(self.base)
        return p, int(np.argmax(p)) if self.target is None else int(self.target)

    def _sampled(self) -> tuple[np.ndarray, np.ndarray]:
        """The drawn orders' erasure curves, (orders, bins + 1) each: comprehensiveness, sufficiency (their row
        means are the AOPCs)."""
        p, j = self.p()
        nb = len(self.ks) + 1
        comp = np.empty((len(self._orders), nb))
        suff = np.empty((len(self._orders), nb))
        for r, o in enumerate(self._orders):
            c, s = self._order_vids(o)
            comp[r] = [0.0] + [p[j] - self.V.probs(v)[j] for v in c]
            suff[r] = [p[j] - self.V.probs(self._empty)[j]] + [p[j] - self.V.probs(v)[j] for v in s]
        return comp, suff

    def needs_more(self, aopc_comprehensiveness: Sequence[float] = (), aopc_sufficiency: Sequence[float] = ()) -> bool:
        """After the first draws: whether some explanation's p-value is unsettled (neither clearly below LEVEL nor
        clearly above it) with N_FIRST orders; then N_MORE are drawn in all (`more`)."""
        if self.exact or len(self._orders) >= self.n_more:
            return False
        comp, suff = (c.mean(1) for c in self._sampled())
        for a, r, hi in [(a, comp, True) for a in aopc_comprehensiveness] + \
                        [(s, suff, False) for s in aopc_sufficiency]:
            c = int(((r >= a - TIE) if hi else (r <= a + TIE)).sum())
            if 0 < c < 5:          # 0: p = 1/20, settled; 5 or more: p >= 6/100 > LEVEL whatever 80 more do
                return True
        return not aopc_comprehensiveness and not aopc_sufficiency

    def more(self) -> None:
        self._draw(self.n_more - len(self._orders))

    # -- the beam (NAOPC bounds beyond EXACT_WORDS)
    def start_beam(self) -> bool:
        """Start the bounds' beam search; False where it does not run (exact, too long, or beam 0)."""
        if self.exact or self.n > BEAM_MAX_WORDS or self.beam < 1:
            return False
        self._beams = {key: [((), 0.0, [])] for key in ("comp_hi", "comp_lo", "suff_hi", "suff_lo")}
        self._step = 0
        return self._grow()

    def _grow(self) -> bool:
        """Ask for the variants of every one-word extension of every order in the beams; False when done."""
        if self._step >= max(self.ks):
            return False
        self._pending = []
        for key, states in self._beams.items():
            for order, cum, vals in states:
                for w in range(self.n):
                    if w in order:
                        continue
                    o = order + (w,)
                    keep = key.startswith("suff")
                    vid = self._vid([x for x in range(self.n) if x not in o] if keep else o)
                    self._pending.append((key, o, cum, vals, vid))
        return True

    def beam_step(self) -> bool:
        """Keep the best `beam` extensions per bound (after V.run()); True when another wave is needed."""
        p, j = self.p()
        grouped: dict[str, list] = {k: [] for k in self._beams}
        seen: dict[str, set] = {k: set() for k in self._beams}
        for key, o, cum, vals, vid in self._pending:
            v = p[j] - self.V.probs(vid)[j]
            top = frozenset(o)
            if top in seen[key]:                        # the same top set: the same future, keep the first
                continue
            seen[key].add(top)
            grouped[key].append((o, cum + v, vals + [v]))
        for key, cand in grouped.items():
            high = key.endswith("hi")
            cand.sort(key=lambda s: -s[1] if high else s[1])
            self._beams[key] = cand[:self.beam]
        self._step += 1
        return self._grow()

    # -- results
    def finish(self, observed_comprehensiveness: Sequence[float] = (),
               observed_sufficiency: Sequence[float] = ()) -> dict[str, Any]:
        """{"exact", "n_orders", "seed", "aopc_comprehensiveness", "aopc_sufficiency" (arrays over the orders:
        all n! when exact), "mean_comprehensiveness", "mean_sufficiency" (the orders' mean curve, per bin),
        "bins", "k_tokens", "bounds": {"comprehensiveness": [lo, hi], "sufficiency": [lo, hi]}, "bounds_by",
        "p_floor": the smallest p-value any ranking can have here (exact: the orders that share one ranking's top
        sets, out of n!)}."""
        p, j = self.p()
        pj = float(p[j])
        nb = len(self.ks)
        if self.exact:
            q = np.array([self.V.probs(self._subsets[m])[j] for m in range(1 << self.n)])  # (2^n,) by removed set
            perms = np.array(list(itertools.permutations(range(self.n))), dtype=np.int64)      # (n!, n)
            masks = np.cumsum(1 << perms, axis=1)                                             # (n!, n) prefix sets
            chain = masks[:, [k - 1 for k in self.ks]]                                        # (n!, bins)
            comp, suff = _aopcs(pj, q, self.n, chain)
            full = (1 << self.n) - 1
            mean_c = [0.0] + list((pj - q[chain]).mean(0))
            mean_s = [pj - q[full]] + list((pj - q[full ^ chain]).mean(0))
            bounds = {"comprehensiveness": [float(comp.min()), float(comp.max())],
                      "sufficiency": [float(suff.min()), float(suff.max())]}
            by = "exact"
            steps = np.diff([0] + sorted(set(self.ks)) + [self.n])                            # words per step
            p_floor = float(np.prod([math.factorial(int(d)) for d in steps]) / math.factorial(self.n))
        else:
            curves_c, curves_s = self._sampled()                                            # (orders, bins + 1)
            comp, suff = curves_c.mean(1), curves_s.mean(1)
            p_floor = 1.0 / (comp.size + 1)
            mean_c = list(curves_c.mean(0)) if comp.size else [float("nan")] * (nb + 1)
            mean_s = list(curves_s.mean(0)) if comp.size else [float("nan")] * (nb + 1)
            bounds = {"comprehensiveness": [float("nan")] * 2, "sufficiency": [float("nan")] * 2}
            by = "none"
            if self._beams:
                empty_s = pj - self.V.probs(self._empty)[j]
                found = {}
                for key, states in self._beams.items():
                    vals = [(np.mean([0.0] + [s[2][k - 1] for k in self.ks]) if key.startswith("comp") else
                             np.mean([empty_s] + [s[2][k - 1] for k in self.ks])) for s in states]
                    found[key] = max(vals) if key.endswith("hi") else min(vals)
                seen_c = list(comp) + [float(x) for x in observed_comprehensiveness]
                seen_s = list(suff) + [float(x) for x in observed_sufficiency]
                bounds = {"comprehensiveness": [float(min([found["comp_lo"]] + seen_c)),
                                                float(max([found["comp_hi"]] + seen_c))],
                          "sufficiency": [float(min([found["suff_lo"]] + seen_s)),
                                          float(max([found["suff_hi"]] + seen_s))]}
                by = f"beam {self.beam}"
        return {"exact": self.exact, "n_orders": int(comp.size), "n_words": self.n, "seed": self.seed,
                "aopc_comprehensiveness": comp, "aopc_sufficiency": suff,
                "mean_comprehensiveness": [float(x) for x in mean_c], "mean_sufficiency": [float(x) for x in mean_s],
                "bins": [0.0] + [float(b) for b in self.bins], "k_tokens": [0] + list(self.ks), "target": j,
                "p_target": pj, "bounds": bounds, "bounds_by": by, "p_floor": p_floor}


def run_chances(V, jobs: Sequence[Chance], observed: dict[int, tuple[Sequence[float], Sequence[float]]] | None = None,
                bounds: bool = True) -> list[dict[str, Any]]:
    """Run several texts' Chance jobs on one Variants together (one V.run() per wave); `observed[i]`: the AOPCs
    (comprehensiveness, sufficiency) of the explanations judged on job i's text (they decide whether more random
    orders are drawn, and widen the bounds)."""
    observed = observed or {}
    for c in jobs:
        c.add()
    V.run()
    more = [c for i, c in enumerate(jobs) if c.needs_more(*observed.get(i, ((), ())))]
    for c in more:
        c.more()
    active = [c for c in jobs if bounds and c.start_beam()]
    while active:
        V.run()
        active = [c for c in active if c.beam_step()]
    V.run()
    return [c.finish(*observed.get(i, ((), ()))) for i, c in enumerate(jobs)]


@interactive_work
def text_chance(model, inst, removal: str = "delete", target: int | None = None, seed: int = 0,
                observed: tuple[Sequence[float], Sequence[float]] = ((), ()), beam: int = BEAM,
                bounds: bool = True) -> dict[str, Any]:
    """`Chance` of one text (see the module docstring); `observed`: the AOPCs of the explanations to be judged."""
    from textcls.interpret.buckets import own_shape
    from textcls.interpret.variants import Variants
    inst = own_shape(inst)
    V = Variants(model, [inst], removal)
    job = Chance(V, 0, inst.n, V.add(0, ()), target=target, seed=seed, tokens=inst.tokens, beam=beam)
    return run_chances(V, [job], {0: observed}, bounds=bounds)[0]


def judge(model, inst, importances: Mapping[str, Any], removal: str = "delete"
          ) -> tuple[dict[str, dict], dict[str, Any], dict[str, dict]]:
    """The one-text verdict of several explanations of `inst` (name -> importance), as every page, lesson and
    command gives it: each one's erasure curves (`faithfulness.erasure_curves`), the text's word orders
    (`text_chance`, told those AOPCs) and `rankings.versus_random` of each. Returns (curves, chance, verdicts)."""
    from textcls.interpret.faithfulness import erasure_curves
    curves = {k: erasure_curves(model, inst, v, removal=removal) for k, v in importances.items()}
    chance = text_chance(model, inst, removal=removal,
                         observed=([c["aopc_comprehensiveness"] for c in curves.values()],
                                   [c["aopc_sufficiency"] for c in curves.values()]))
    return curves, chance, {k: versus_random(c, chance) for k, c in curves.items()}


__all__ = ["BEAM", "BEAM_MAX_WORDS", "BINS", "Chance", "EXACT_WORDS", "N_FIRST", "N_MORE", "judge",
           "run_chances", "text_chance", "text_seed"]
