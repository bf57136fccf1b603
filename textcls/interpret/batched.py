"""Faithfulness and attributions over a whole data set, batched across texts: the data-set path.

The per-text functions (`faithfulness.erasure_curves`, `leave_one_out`, `erasure_flip`, `permutation_test`,
`uniform_attention_test`, and `attribute_instances` / `attention_importance_instances` of one text) are the
reference: definitions in `faithfulness`'s docstring. This module computes the same numbers for many texts at
once - tested equal on 50 sst2 test texts per shipped checkpoint, every method (tests/test_interpret_batched.py).
It is the one implementation behind `evaluate_slice`, `python -m textcls faithfulness`, the Attribute page's
"over a data set" panel and the Evaluate page's token weights (`importances`).

How:
- Each text is cut to its own shape (`buckets.own_shape`: no padding beyond its last real token), as if encoded alone.
- Every erasure variant of every text (comprehensiveness / sufficiency at each k, leave-one-out, the erasure-flip
  prefixes of each order) is one key (text, the real tokens removed): variants shared by several methods or
  metrics are scored once (the k-token comprehensiveness variant is the k-th prefix of the method's order; the
  leave-one-out variants are the erasure-flip singles; the random orders do not depend on the method). All
  variants go through the model in padded batches of texts of equal or near length (`buckets`), at most
  `TOKENS_PER_BATCH` positions a batch. Padding never changes a model's output (a tested contract), so a variant's
  probabilities are those of the per-text path up to float summation order.
- Erasure-flip orders only need the prefixes up to the first flip: they are scored in waves of `FLIP_STEP`
  prefixes, each wave for every order not yet flipped (same result as scoring every prefix). `flip_orders=False`
  (the CLI's `--fast`) leaves them out: about half of the passes of a run for sst2 sentences.
- A model over word pieces (Hugging Face encoders) says what a row costs (`sequence_lengths`: its pieces plus
  [CLS] and [SEP]); its variants are grouped by that length, not by their word count (a quarter fewer padded
  positions for MiniLM on sst2).
- Attributions (IG with its per-text convergence check, occlusion windows, gradient x input, saliency; the
  model's own attention) run on length buckets of texts; Shapley sampling and LIME stay one text at a time.
- Permutation and uniform-attention tests of many texts: `attention_tests` (each text's permutations drawn from
  its own generator, seed + text index, so they are exactly the per-text ones). Shapes and length buckets:
  `buckets`.
- Work is done in chunks of texts (`SliceRun.step`): a progress bar moves and a run can stop between chunks;
  a stopped run reports over the texts done (a prefix of the data, so no length bias).
- Each AOPC gets a bootstrap 95% interval over texts (`bootstrap_ci`: 1000 resamples, fixed seed, numpy).
"""
from __future__ import annotations

import math
import time
from typing import Any, Callable, Sequence

import numpy as np

from textcls.runtime.limits import check_count
from textcls.runtime.memory import return_free_memory
from textcls.runtime.threads import for_texts
from textcls.interpret.attention_tests import permutation_tests, uniform_attention_tests
from textcls.interpret.buckets import ATTENTION_CELLS, TOKENS_PER_BATCH, buckets, n_positions, own_shape
from textcls.interpret.instances import Instance
from textcls.interpret.probabilities import check_model, tvd
from textcls.interpret.sources import as_source
from textcls.interpret.vectors import as_vector, top_indices
from textcls.interpret.records import SliceReport  # noqa: F401  (a torch-free record, re-exported)
from textcls.interpret.attributions import METHODS as CAPTUM, Attribution
from textcls.interpret.chance import Chance, run_chances
from textcls.interpret.variants import Variants  # noqa: F401  (re-exported: the data-set path's scorer)
from textcls.interpret.rankings import naopc
from textcls.interpret.faithfulness import (BINS, _check_removal, attention_maps, infidelity, kendall_tau, n_tokens,
    sensitivity, topk_overlap)

IG_PASS_TOKENS = 4096         # positions per IG forward/backward pass (memory: AGCNN keeps ~55 kB a position)
CHUNK_TEXTS = 128             # texts per step of a SliceRun (progress and stop granularity)
FLIP_STEP = 3                 # erasure-flip prefixes per order and wave
# Random orders of the erasure-flip test per text. One text's own report (faithfulness.erasure_flip) averages 5;
# over a data set the mean over texts already averages one order per text (a variant costs as much as ~0.7 n
# prefixes a text), so the data-set default is 1: the same expected value; `random_orders=5` gives the per-text
# numbers exactly.
RANDOM_ORDERS = 1
TEXTS_PER_ATTRIBUTION = {"integrated_gradients": 48, "occlusion": 64, "saliency": 256, "grad_x_input": 256,
                         "attention": 256}
Progress = Callable[[int, int], None]


# ---------------------------------------------------------------- erasure variants, scored once each

# ---------------------------------------------------------------- importances of many texts

def importances(model, instances: Sequence[Instance], method: str, *, baseline: str = "pad", n_steps: int = 50,
                seed: int = 0, labels: Sequence[str] | None = None, **kw) -> list[Attribution]:
    """Any registered method's explanation of every instance (textcls.interpret.methods), in length buckets
    where the method runs texts in batches through Captum or the attention (one per instance, in order);
    methods that batch themselves (context mixing) or go text by text get them all at once. Keyword arguments
    go to the method."""
    from textcls.interpret.methods import explain, get
    meth = get(method)
    m = meth.name
    opts = dict(baseline=baseline, n_steps=n_steps, seed=seed, labels=labels, **kw)
    if not meth.bucketed:
        return explain(model, instances, m, **opts)
    out: list[Attribution | None] = [None] * len(instances)
    per = TEXTS_PER_ATTRIBUTION.get(m, 1)
    rows = n_steps if meth.uses_steps else 1
    for group in buckets([tuple(i.ids.shape) for i in instances], rows_per_item=rows, tokens=TOKENS_PER_BATCH * 4,
                         max_rows=1 << 30, max_items=per, cells=ATTENTION_CELLS if m == "attention" else None):
        chunk = [instances[g] for g in group]
        extra = {}
        if m == "integrated_gradients" and "internal_batch_size" not in kw:
            extra["internal_batch_size"] = max(1, IG_PASS_TOKENS // max(n_positions(chunk[-1].ids.shape), 1))
        for g, r in zip(group, explain(model, chunk, m, **opts, **extra)):
            out[g] = r
    return out  # type: ignore[return-value]


# ---------------------------------------------------------------- statistics

def bootstrap_ci(values, n_resamples: int = 1000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean: texts resampled with replacement (numpy, fixed seed);
    (nan, nan) for fewer than 2 values."""
    v = np.asarray([x for x in values if x is not None and not math.isnan(float(x))], dtype=np.float64)
    if v.size < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, v.size, (n_resamples, v.size))].mean(1)
    a = (1 - level) / 2 * 100
    return float(np.percentile(means, a)), float(np.percentile(means, 100 - a))


# ---------------------------------------------------------------- the report

NUMERIC = ("aopc_comprehensiveness", "aopc_sufficiency", "naopc_comprehensiveness", "naopc_sufficiency",
           "kendall_tau_ref", "topk_overlap_ref", "erasure_top_flip",
           "erasure_random_flip", "erasure_fraction_to_flip", "erasure_random_fraction_to_flip", "ig_delta",
           "ig_converged", "ig_steps", "infidelity", "sensitivity_max")


class SliceRun:
    """Faithfulness of several explanation methods of one model over N texts, computed chunk by chunk
    (`step`), so a caller can show progress and stop; `report()` at any time covers the texts done.
    Arguments as `evaluate_slice`."""

    def __init__(self, source, texts: Sequence[str], methods: Sequence[str] = ("attention", "integrated_gradients",
                 "occlusion", "leave_one_out", "random"), *, tokenizer=None, removal: str = "delete",
                 reference: str = "leave_one_out", baseline: str = "pad", n_steps: int = 50,
                 n_permutations: int = 30, attention_tests: bool = True, captum_metrics: bool = False,
                 n_perturb: int = 20, seed: int = 0, k_pct: float = 20, chunk: int | None = None,
                 n_bootstrap: int = 1000, random_orders: int = RANDOM_ORDERS, flip_orders: bool = True,
                 naopc_beam: int | None = None, flips: bool = True):
        _check_removal(removal)
        src = as_source(source, tokenizer)
        self.src, self.model = src, src.model
        check_model(self.model)
        chunk = CHUNK_TEXTS if chunk is None else chunk
        if chunk < 1:
            raise ValueError(f"chunk must be >= 1, got {chunk}")
        check_count("random_orders", random_orders)      # bounds in textcls.runtime.limits.COUNTS (a LimitError)
        check_count("steps", n_steps, "n_steps")
        check_count("permutations", n_permutations, "n_permutations")
        methods = list(dict.fromkeys(methods))
        if reference not in methods:
            methods.append(reference)
        from textcls.interpret.methods import canonical, why_not
        methods = list(dict.fromkeys(canonical(m) for m in methods))   # unknown method: ValueError now
        reference = canonical(reference)
        t0 = time.perf_counter()
        self.insts = [own_shape(i) for i in src.instances(list(texts))] if len(texts) else []
        self.notes: list[str] = []
        for m in [m for m in methods if m != reference]:
            why = why_not(self.model, m)
            if why is not None:
                self.notes.append(f"{m} skipped: {why}")
                methods.remove(m)
        self.methods, self.reference = methods, reference
        self.removal, self.baseline, self.n_steps, self.seed, self.k_pct = removal, baseline, n_steps, seed, k_pct
        self.n_permutations, self.captum_metrics, self.n_perturb = n_permutations, captum_metrics, n_perturb
        self.chunk, self.n_bootstrap, self.random_orders = chunk, n_bootstrap, random_orders
        self.flips = bool(flips)
        self.flip_orders = bool(flip_orders) and self.flips
        if naopc_beam is not None:
            check_count("beam", naopc_beam, "naopc_beam")
        self.naopc_beam = naopc_beam
        rng = np.random.default_rng(seed)
        self.random = [rng.random(i.n) for i in self.insts] if "random" in methods else []
        self.attention_tests = bool(attention_tests and attention_maps(self.model))
        self.per_example: list[dict[str, Any]] = []
        self.importances: dict[str, dict[int, Any]] = {m: {} for m in methods}   # method -> text -> importance
        self.perm: list[dict[str, Any]] = []
        self.uni: list[dict[str, Any]] = []
        self.timings: dict[str, float] = {}
        self.done = 0
        self.stop_requested = False
        self.n_variants = 0
        self.seconds = time.perf_counter() - t0

    # -- state
    @property
    def total(self) -> int:
        return len(self.insts)

    @property
    def finished(self) -> bool:
        return self.done >= self.total

    def stop(self) -> None:
        """Ask the run to stop: `run` returns before its next chunk (a chunk under way finishes)."""
        self.stop_requested = True

    def _time(self, key: str, t: float) -> None:
        """Add a phase's seconds to its timing."""
        self.timings[key] = self.timings.get(key, 0.0) + time.perf_counter() - t

    # -- work
    def resume(self) -> None:
        """Forget a stop request: the next `run` goes on from the texts done."""
        self.stop_requested = False

    def run(self, progress: Progress | None = None, should_stop: Callable[[], bool] | None = None) -> "SliceRun":
        """Step until done or stopped (`stop()` - e.g. from another thread or a button's callback - or
        should_stop() true between chunks); progress(done, total) before the first chunk and after each."""
        if progress:
            progress(self.done, self.total)
        while not self.finished and not self.stop_requested and not (should_stop and should_stop()):
            self.step()
            if progress:
                progress(self.done, self.total)
        return self

    def step(self) -> int:
        """Score the next chunk of texts; returns how many texts are done."""
        if self.finished:
            return self.done
        t_start = time.perf_counter()
        with for_texts(len(range(self.done, min(self.done + self.chunk, self.total)))):
            self._step(list(range(self.done, min(self.done + self.chunk, self.total))))
        # the memory the chunk freed goes back to the OS: the next chunk allocates other sizes, and without it the
        # resident memory ratchets up chunk by chunk (see textcls.runtime.memory)
        return_free_memory()
        self.seconds += time.perf_counter() - t_start
        return self.done

    def _step(self, idx: list[int]) -> None:
        model, insts = self.model, self.insts
        texts = [i for i in idx if insts[i].n > 0]
        V = Variants(model, insts, self.removal)
        t = time.perf_counter()
        base = {i: V.add(i, ()) for i in texts}
        # one variant per word: leave-one-out's and the single-word flips' (no other measure needs them)
        want = self.flips or "leave_one_out" in self.methods
        singles = {i: [V.add(i, (k,)) for k in range(insts[i].n)] if want else [] for i in texts}
        V.run()
        spent = time.perf_counter() - t
        if "leave_one_out" in self.methods and texts:            # leave-one-out's standalone cost: its variants' share
            share = sum(len(v) for v in singles.values()) / (len(texts) + sum(len(v) for v in singles.values()))
            self.timings["leave_one_out"] = self.timings.get("leave_one_out", 0.0) + spent * share
            spent *= 1 - share
        self.timings["variants"] = self.timings.get("variants", 0.0) + spent
        imps: dict[str, dict[int, Any]] = {}
        for m in self.methods:
            t = time.perf_counter()
            if m == "leave_one_out":
                imps[m] = {i: tvd(np.stack([V.probs(v) for v in singles[i]]), V.probs(base[i])[None])
                           for i in texts}
            elif m == "random":
                imps[m] = {i: self.random[i] for i in texts}
            else:
                res = importances(model, [insts[i] for i in texts], m, baseline=self.baseline,
                                  n_steps=self.n_steps, seed=self.seed)
                imps[m] = dict(zip(texts, res))
            self._time(m, t)
        for m, d in imps.items():
            self.importances[m].update(d)
        t = time.perf_counter()
        rows = self._erasure(V, texts, imps, base, singles)
        self._time("erasure", t)
        for i in texts:
            ref = as_vector(imps[self.reference][i]) if self.reference in imps else None
            for m in imps:
                row = rows[(m, i)]
                imp = imps[m][i]
                if ref is not None:
                    row["kendall_tau_ref"] = kendall_tau(imp, ref)
                    row["topk_overlap_ref"] = topk_overlap(imp, ref, pct=self.k_pct)
                if isinstance(imp, Attribution) and imp.delta is not None:
                    row.update(ig_delta=abs(imp.delta), ig_steps=imp.n_steps, ig_converged=imp.converged)
                if self.captum_metrics:
                    t = time.perf_counter()
                    row["infidelity"] = infidelity(model, insts[i], imp, self.baseline, self.n_perturb, self.seed)
                    if m in CAPTUM:                                 # Captum's sensitivity re-runs the method
                        row["sensitivity_max"] = sensitivity(model, insts[i], m, n_perturb=max(2, self.n_perturb // 4),
                                                             baseline=self.baseline, n_steps=self.n_steps,
                                                             seed=self.seed)
                    self._time("captum_metrics", t)
                self.per_example.append(row)
        if self.attention_tests and texts:
            t = time.perf_counter()
            sub = [insts[i] for i in texts]
            p = [V.probs(base[i]) for i in texts]
            self.perm += permutation_tests(model, sub, [self.seed + i for i in texts], p, self.n_permutations)
            self.uni += uniform_attention_tests(model, sub, p)
            self._time("attention_tests", t)
        self.n_variants += V.n_scored
        self.done = idx[-1] + 1 if idx else self.done

    def _erasure(self, V: Variants, texts, imps, base, singles) -> dict[tuple[str, int], dict[str, Any]]:
        """ERASER curves and the erasure-flip test of every (method, text), as explanation_report gives them."""
        insts = self.insts
        curves = {}
        jobs: list[list] = []          # [text, order, next k, first flip k or None]
        method_job: dict[tuple[str, int], int] = {}
        random_jobs: dict[int, list[int]] = {}
        for i in texts:
            n = insts[i].n
            for m in imps:
                order = top_indices(as_vector(imps[m][i], n), n)
                ks = [n_tokens(n, b) for b in BINS]
                comp = [V.add(i, order[:k]) for k in ks]
                suff = [V.add(i, order[k:]) for k in ks]
                curves[(m, i)] = (ks, comp, suff, V.add(i, range(n)))
                method_job[(m, i)] = len(jobs)
                jobs.append([i, order, 1, None])
            rng = np.random.default_rng(0)                      # erasure_flip's default seed
            random_jobs[i] = []
            for _ in range(self.random_orders if self.flip_orders else 0):
                random_jobs[i].append(len(jobs))
                jobs.append([i, [int(x) for x in rng.permutation(n)], 1, None])
        active = list(range(len(jobs))) if self.flip_orders else []    # without: only the single-word flips
        while active:
            wave = {}
            for j in active:
                i, order, k0, _ = jobs[j]
                k1 = min(insts[i].n, k0 + FLIP_STEP - 1)
                wave[j] = [(k, V.add(i, order[:k])) for k in range(k0, k1 + 1)]
            V.run()
            still = []
            for j in active:
                i, order, k0, _ = jobs[j]
                label = int(V.probs(base[i]).argmax())
                for k, v in wave[j]:
                    if int(V.probs(v).argmax()) != label:
                        jobs[j][3] = k
                        break
                else:
                    nxt = wave[j][-1][0] + 1
                    if nxt <= insts[i].n:
                        jobs[j][2] = nxt
                        still.append(j)
            active = still
        V.run()                                                 # the curves' variants, when no wave scored them
        aopc = {}                                               # (method, text) -> (comprehensiveness, sufficiency)
        for (m, i), (ks, comp, suff, empty) in curves.items():
            p = V.probs(base[i])
            j = int(p.argmax())
            c = [0.0] + [float(p[j] - V.probs(v)[j]) for v in comp]
            s = [float(p[j] - V.probs(empty)[j])] + [float(p[j] - V.probs(v)[j]) for v in suff]
            aopc[(m, i)] = (float(np.mean(c)), float(np.mean(s)))
        bounds = self._bounds(V, texts, base, aopc)
        out = {}
        for (m, i) in curves:
            n = insts[i].n
            p = V.probs(base[i])
            j = int(p.argmax())
            label = j
            top = jobs[method_job[(m, i)]][1][0]

            def frac(job):
                first = job[3]
                return (first if first is not None else n) / n, first is None
            out[(m, i)] = {"example": i, "method": m, "n_tokens": n, "target": j, "p_target": float(p[j]),
                           "removal": self.removal, "aopc_comprehensiveness": aopc[(m, i)][0],
                           "aopc_sufficiency": aopc[(m, i)][1],
                           **({"naopc_comprehensiveness": naopc(aopc[(m, i)][0], bounds[i]["comprehensiveness"]),
                               "naopc_sufficiency": naopc(aopc[(m, i)][1], bounds[i]["sufficiency"], False)}
                              if i in bounds else {})}
            if self.flips:
                flips_single = np.array([int(V.probs(v).argmax()) != label for v in singles[i]])
                others = [x for x in range(n) if x != top]
                out[(m, i)].update(erasure_top_flip=bool(flips_single[top]), erasure_random_flip=float(
                    np.mean(flips_single[others])) if others else float("nan"))
            if self.flip_orders:
                f0, never = frac(jobs[method_job[(m, i)]])
                rf = [frac(jobs[r])[0] for r in random_jobs[i]]
                out[(m, i)].update(erasure_fraction_to_flip=f0, erasure_never_flipped=never,
                                   erasure_random_fraction_to_flip=float(np.mean(rf)) if rf else float("nan"))
        return out

    def _bounds(self, V: Variants, texts, base, aopc) -> dict[int, dict[str, list[float]]]:
        """Each text's lowest and highest AOPC over word orders (textcls.interpret.chance: exact up to EXACT_WORDS
        words, the beam beyond, widened by every method's own order: `aopc`, (method, text) -> (comprehensiveness,
        sufficiency)), for NAOPC; {} with naopc_beam None."""
        if self.naopc_beam is None or not texts:
            return {}
        t = time.perf_counter()
        seen: dict[int, tuple[list[float], list[float]]] = {}
        for (m, i), (c, s) in aopc.items():
            seen.setdefault(i, ([], []))[0].append(c)
            seen[i][1].append(s)
        jobs = [Chance(V, i, self.insts[i].n, base[i], tokens=self.insts[i].tokens, beam=self.naopc_beam,
                       n_first=0, n_more=0) for i in texts]
        got = run_chances(V, jobs, {k: seen.get(i, ((), ())) for k, i in enumerate(texts)})
        self._time("naopc_bounds", t)
        return {i: g["bounds"] for i, g in zip(texts, got)}

    # -- results
    def report(self) -> SliceReport:
        rows = []
        for m in self.methods:
            ex = [r for r in self.per_example if r["method"] == m]
            if not ex and m == "attention":
                continue
            row: dict[str, Any] = {"method": m, "n": len(ex)}
            for key in NUMERIC:
                vals = [float(r[key]) for r in ex if key in r and r[key] is not None]
                vals = [v for v in vals if not math.isnan(v)]
                if vals:
                    row[key] = float(np.mean(vals))
            for key in ("aopc_comprehensiveness", "aopc_sufficiency", "naopc_comprehensiveness", "naopc_sufficiency"):
                if key in row:
                    row[key + "_ci"] = list(bootstrap_ci([r[key] for r in ex], self.n_bootstrap, self.seed))
            if m == self.reference:
                row.pop("kendall_tau_ref", None)
                row.pop("topk_overlap_ref", None)
            row["seconds"] = round(self.timings.get(m, 0.0), 3)
            rows.append(row)
        model_row: dict[str, Any] = {}
        if self.attention_tests and self.perm:
            model_row = {"permutation_median_tvd": float(np.median([p["median_tvd"] for p in self.perm])),
                         "permutation_flip_rate": float(np.mean([p["flip_rate"] for p in self.perm])),
                         "uniform_tvd": float(np.mean([u["tvd"] for u in self.uni])),
                         "uniform_flip_rate": float(np.mean([u["flipped"] for u in self.uni])),
                         "attention_maps": self.perm[0]["maps"],
                         "seconds": round(self.timings.get("attention_tests", 0.0), 3)}
        settings = {"removal": self.removal, "reference": self.reference, "baseline": self.baseline,
                    "n_steps": self.n_steps, "n_permutations": self.n_permutations, "n_texts": self.done,
                    "n_total": self.total, "stopped": not self.finished, "bins": list(BINS), "k_pct": self.k_pct,
                    "random_orders": self.random_orders, "flip_orders": self.flip_orders, "flips": self.flips,
                    "naopc_beam": self.naopc_beam,
                    "notes": list(self.notes), "variants_scored": self.n_variants,
                    "model": self.src.name or getattr(self.model, "registry_name", "")}
        return SliceReport(rows, model_row, list(self.per_example), settings, self.seconds, dict(self.timings))


def evaluate_slice(source, texts: Sequence[str], methods: Sequence[str] = ("attention", "integrated_gradients",
                   "occlusion", "leave_one_out", "random"), *, tokenizer=None, removal: str = "delete",
                   reference: str = "leave_one_out", baseline: str = "pad", n_steps: int = 50,
                   n_permutations: int = 30, attention_tests: bool = True, captum_metrics: bool = False,
                   n_perturb: int = 20, seed: int = 0, k_pct: float = 20, progress: Progress | None = None,
                   should_stop: Callable[[], bool] | None = None, chunk: int | None = None,
                   random_orders: int = RANDOM_ORDERS, flip_orders: bool = True,
                   naopc_beam: int | None = None, flips: bool = True) -> SliceReport:
    """Faithfulness of several explanation methods of one model over N texts, batched across texts.

    `source` is a Predictor or a model with `tokenizer=`. Methods: Captum methods (attributions module), the
    model's own "attention" (attention module; skipped with a note if the model has none), "leave_one_out"
    and "random" (a seeded random importance: the floor any method should beat). Per method: mean AOPC
    comprehensiveness / sufficiency with bootstrap 95% intervals, Kendall tau and top-k overlap with
    `reference`, erasure flip rates and the fraction removed to flip, IG's delta / steps / convergence; with
    captum_metrics, Captum infidelity and sensitivity_max (slow: per text). Model level (attention models):
    median permutation TVD and uniform-attention TVD / flip rate. progress(done, total) after each chunk of
    texts; should_stop() true between chunks stops the run (the report covers the texts done). `random_orders`:
    random orders of the erasure-flip test per text (RANDOM_ORDERS). flip_orders=False skips the erasure-flip orders
    (the fraction removed to flip: about 0.7 n prefixes per order and text, most of a run's passes) and keeps the
    single-word flips, which leave-one-out scores anyway: the fast set. `naopc_beam`: the beam width of each text's
    AOPC bounds for NAOPC (textcls.interpret.chance; None, the default: no NAOPC; 1, the command line's default,
    scores about ten times the erasure variants of the curves alone: the bounds' passes). flips=False skips the
    flip test altogether (its single-word variants too, unless leave-one-out is a method: AOPC, NAOPC and rank
    agreement need none of them)."""
    run = SliceRun(source, texts, methods, tokenizer=tokenizer, removal=removal, reference=reference,
                   baseline=baseline, n_steps=n_steps, n_permutations=n_permutations,
                   attention_tests=attention_tests, captum_metrics=captum_metrics, n_perturb=n_perturb, seed=seed,
                   k_pct=k_pct, chunk=chunk, random_orders=random_orders, flip_orders=flip_orders,
                   naopc_beam=naopc_beam, flips=flips)
    return run.run(progress, should_stop).report()


__all__ = ["CHUNK_TEXTS", "RANDOM_ORDERS", "Variants", "importances", "bootstrap_ci", "SliceReport", "SliceRun",
           "evaluate_slice"]
