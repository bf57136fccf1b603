"""The batched data-set path (textcls.interpret.batched) against the per-text reference: on 50 sst2 test texts
per shipped sst2 checkpoint, every batched method (own attention, random, leave-one-out, IG with its
convergence check, gradient x input, saliency, occlusion), every metric per text, and the permutation and
uniform-attention tests. Probabilities agree to 2e-6 and differences of two to 4e-6 (float32 order; see TOL);
booleans, fractions and rank statistics exactly. Also: chunked runs stop and report the texts done, the
bootstrap interval, buckets, and the CLI command."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

import textcls
from textcls.cli import main
from textcls.data.datasets import load_data
from textcls.interpret import batched as B
from textcls.interpret.buckets import buckets
from textcls.interpret import faithfulness as FF
from textcls.interpret.probabilities import prob_fn, score
from textcls.interpret.attention import attention_importance_instances
from textcls.interpret.attributions import attribute_instances
from textcls.runtime.threads import interactive

REPO = Path(__file__).resolve().parents[1]
# The shipped textcls checkpoints; the Hugging Face baseline (minilm-sst2, 100x the compute of the small models)
# gets the same batched-vs-per-text check on tiny encoders in tests/test_hf.py.
SST2 = sorted(p.name for p in (REPO / "checkpoints").iterdir() if p.name.endswith("-sst2")
              and "model_config" in json.loads((p / "config.json").read_text()))
METHODS = ("attention", "random", "leave_one_out", "integrated_gradients", "grad_x_input", "saliency", "occlusion")
# Batched and alone differ only in float32 summation order (a padded batch runs other kernel shapes): within
# 1e-6 on an AVX2 CPU; on an AVX-512 one the Transformer's probabilities differed by up to 1.1e-6.
TOL = 2e-6                  # on a probability
DIFF_TOL = 2 * TOL          # on a difference of two probabilities (AOPC, TVD), each within TOL
EXACT = ("target", "removal", "erasure_top_flip", "erasure_never_flipped", "erasure_fraction_to_flip",
         "erasure_random_fraction_to_flip", "erasure_random_flip", "kendall_tau_ref", "topk_overlap_ref")


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return list(load_data("sst2").splits["test"].texts[:50])


def reference_importance(model, inst, method, run, i):
    """One text's importance by the per-text path."""
    if method == "attention":
        return attention_importance_instances(model, [inst])[0]
    if method == "random":
        return run.random[i]
    if method == "leave_one_out":
        return FF.leave_one_out(model, inst)
    return attribute_instances(model, [inst], method)[0]


def scores(x) -> np.ndarray:
    return np.asarray(getattr(x, "scores", x), dtype=float)


def tie_broken(model, inst) -> bool:
    """A text on which a CNN's own importance (its max-pool picks) may legitimately differ between a text alone
    and the text in a batch: a repeated word makes two windows tie exactly in exact arithmetic, and float
    rounding, which depends on the batch shape, picks the winner."""
    real = inst.real_ids().tolist()
    return not FF.attention_maps(model) and len(set(real)) < len(real)


# The whole check (every method on all 50 texts of every checkpoint) takes a few minutes of CPU; the default
# suite checks own attention, random and leave-one-out (every erasure metric) and the attention tests on the 50
# texts, and the Captum methods on the first CAPTUM_TEXTS; TEXTCLS_TEST_FULL=1 runs every method on all 50.
FULL = os.environ.get("TEXTCLS_TEST_FULL", "") not in ("", "0")
CAPTUM = ("integrated_gradients", "grad_x_input", "saliency", "occlusion")
CAPTUM_TEXTS = 50 if FULL else 6


@pytest.mark.parametrize("methods", [pytest.param(METHODS[:3], id="attention-random-loo"),
                                     pytest.param(CAPTUM, id="captum")])
@pytest.mark.parametrize("name", SST2)
def test_batched_equals_the_per_text_path(name, methods, texts, shipped_predictors):
    """Every number of the batched path against the per-text functions on the same texts. The erasure
    reference is run on the batched path's importances (the per-text importances are compared on their own:
    equal to TOL, IG to 1e-4 relative, up to CNN ties on repeated words - see tie_broken; leave-one-out to
    DIFF_TOL); the erasure-flip random orders, the same for every method, are checked once per text
    (n_random_orders=0 for the others), with a data set's default count (1) and one text's (5)."""
    pred = shipped_predictors[name]
    model = pred.model
    orders = 5 if methods == CAPTUM else B.RANDOM_ORDERS         # both: one text's own 5, a data set's 1
    if FULL:
        methods = METHODS
    elif methods == CAPTUM:
        texts = texts[:CAPTUM_TEXTS]
    run = B.SliceRun(pred, texts, methods, chunk=len(texts) // 2 + 1,   # two chunks: the boundary is crossed
                     attention_tests="attention" in methods,
                     random_orders=orders)
    rep = run.run().report()
    assert rep.settings["n_texts"] == len(texts) and not rep.settings["stopped"]
    got = {(r["method"], r["example"]): r for r in rep.per_example}
    kept = [i for i, inst in enumerate(run.insts) if inst.n > 0]
    assert len(got) == len(kept) * len(run.methods)
    batched_imp = {m: run.importances[m] for m in run.methods if m not in ("random", "leave_one_out")}
    ties = 0
    with interactive():
        for i in kept:
            inst = run.insts[i]
            imps = {m: reference_importance(model, inst, m, run, i) for m in run.methods}
            for m, imp in batched_imp.items():            # importances: batched vs one text alone
                a, b = scores(imp[i]), scores(imps[m])
                if not np.allclose(a, b, rtol=1e-4, atol=TOL):
                    assert tie_broken(model, inst), (name, i, m, np.abs(a - b).max())
                    ties += 1
                imps[m] = imp[i]
            # leave-one-out is a TVD of scored variants: equal within DIFF_TOL; the batched vector is then the
            # reference for both sides, since a near-tie may order differently and change a Kendall tau
            batched_loo = run.importances["leave_one_out"][i]
            np.testing.assert_allclose(scores(batched_loo), scores(imps["leave_one_out"]), rtol=0, atol=DIFF_TOL)
            imps["leave_one_out"] = batched_loo
            loo = scores(batched_loo)
            p = score(prob_fn(model), [inst])[0]
            for m, imp in imps.items():
                row = got[(m, i)]
                want = FF.erasure_curves(model, inst, imp)
                # random orders: every text with TEXTCLS_TEST_FULL, else every 5th (they cost 5n variants a text)
                first = m == ("random" if "random" in imps else run.methods[0]) and (FULL or i % 5 == 0)
                want.update({f"erasure_{k}": v for k, v in FF.erasure_flip(
                    model, inst, imp, n_random_orders=run.random_orders if first else 0).items() if k != "n"})
                want["kendall_tau_ref"] = FF.kendall_tau(imp, loo)
                want["topk_overlap_ref"] = FF.topk_overlap(imp, loo)
                if not first:
                    want.pop("erasure_random_fraction_to_flip")
                for k, v in want.items():
                    if isinstance(v, list):
                        continue
                    if k in EXACT:
                        assert (math.isnan(v) and math.isnan(row[k])) if isinstance(v, float) and math.isnan(v) \
                            else row[k] == v, (name, i, m, k, v, row[k])
                    else:
                        assert row[k] == pytest.approx(v, abs=DIFF_TOL), (name, i, m, k)
                assert "erasure_random_fraction_to_flip" in want or row["erasure_random_fraction_to_flip"] == \
                    got[(next(iter(imps)) if "random" not in imps else "random", i)]["erasure_random_fraction_to_flip"]
                if isinstance(imp, textcls.interpret.Attribution) and imp.delta is not None:
                    assert row["ig_steps"] == imp.n_steps and row["ig_converged"] == imp.converged
            np.testing.assert_allclose(got[(run.methods[0], i)]["p_target"], p.max(), rtol=0, atol=TOL)
        assert ties <= 10, f"{name}: {ties} importances differ by ties"
        if "attention" in methods and FF.attention_maps(model):
            assert len(run.perm) == len(kept) == len(run.uni)
            for k, i in enumerate(kept):
                want = FF.permutation_test(model, run.insts[i], 30, seed=i)
                np.testing.assert_allclose(run.perm[k]["tvds"], want["tvds"], rtol=0, atol=DIFF_TOL)
                assert run.perm[k]["flip_rate"] == want["flip_rate"]
                uni = FF.uniform_attention_test(model, run.insts[i])
                np.testing.assert_allclose(run.uni[k]["p_uniform"], uni["p_uniform"], rtol=0, atol=TOL)
                assert run.uni[k]["flipped"] == uni["flipped"]
        elif "attention" in methods:
            assert rep.model_row == {}


def test_a_run_stops_between_chunks_and_reports_the_texts_done(texts, shipped_predictors):
    pred = shipped_predictors["kim_cnn-sst2"]
    seen = []
    run = B.SliceRun(pred, texts[:30], ("attention", "random"), chunk=8)
    run.run(progress=lambda d, t: seen.append((d, t)), should_stop=lambda: run.done >= 16)
    rep = run.report()
    assert seen == [(0, 30), (8, 30), (16, 30)]
    assert rep.settings["n_texts"] == 16 and rep.settings["stopped"] and rep.settings["n_total"] == 30
    whole = B.evaluate_slice(pred, texts[:16], ("attention", "random"))
    # the same rows; numbers equal up to float summation order (a chunk of 8 texts batches its variants otherwise
    # than a run of 16: 5e-9 apart on one AOPC here)
    assert len(rep.per_example) == len(whole.per_example)
    for a, b in zip(rep.per_example, whole.per_example):
        assert a.keys() == b.keys()
        assert a == {k: pytest.approx(v, rel=1e-6, abs=1e-9) if isinstance(v, float) else v for k, v in b.items()}
    run.run()                                                  # resumes where it stopped
    assert run.finished and run.report().settings["n_texts"] == 30


def test_bootstrap_interval():
    v = np.random.default_rng(1).normal(0.3, 0.1, 400)
    lo, hi = B.bootstrap_ci(v)
    assert lo < v.mean() < hi and hi - lo == pytest.approx(2 * 1.96 * v.std() / 20, rel=0.15)
    assert B.bootstrap_ci(v) == (lo, hi)                       # seeded: the same every time
    assert all(math.isnan(x) for x in B.bootstrap_ci([0.5]))


def test_buckets_respect_the_budget_and_keep_every_index():
    shapes = [(n,) for n in np.random.default_rng(0).integers(1, 60, 500)]
    groups = buckets(shapes, tokens=1000, max_rows=64)
    assert sorted(i for g in groups for i in g) == list(range(500))
    for g in groups:
        assert len(g) <= 64 and (len(g) == 1 or len(g) * max(shapes[i][0] for i in g) <= 1000)


def test_cli_faithfulness_json_lines(capsys):
    ck = str(REPO / "checkpoints" / "lama-sst2")
    assert main(["faithfulness", ck, "--data", "sst2", "--limit", "6", "--methods", "attention,random,loo",
                 "--json", "--permutations", "4"]) == 0
    out = capsys.readouterr()
    lines = [json.loads(x) for x in out.out.splitlines()]
    assert [x["method"] for x in lines] == ["attention", "random", "leave_one_out", None]
    assert all(x["n_texts"] == 6 and "seconds" in x for x in lines)
    assert len(lines[0]["aopc_comprehensiveness_ci"]) == 2 and lines[-1]["kind"] == "summary"
    assert "permutation_median_tvd" in lines[-1]
    assert lines[-1]["random_orders"] == B.RANDOM_ORDERS
    assert main(["faithfulness", ck, "--data", "sst2", "--limit", "6", "--methods", "random", "--json",
                 "--no-attention-tests", "--random-orders", "0"]) == 0
    last = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert last["random_orders"] == 0


def test_random_orders_set_the_erasure_flip_baseline(texts, shipped_predictors):
    """One random order a text (a data set's default) and five (one text's own report) both equal the per-text
    erasure_flip with as many orders; zero orders leave the baseline out (nan)."""
    pred = shipped_predictors["kim_cnn-sst2"]
    for orders in (0, 1, 5):
        run = B.SliceRun(pred, texts[:8], ["random"], reference="random", attention_tests=False,
                         random_orders=orders).run()
        for row in run.per_example:
            inst = run.insts[row["example"]]
            want = FF.erasure_flip(pred.model, inst, run.random[row["example"]], n_random_orders=orders)
            got = row["erasure_random_fraction_to_flip"]
            assert (math.isnan(want["random_fraction_to_flip"]) and math.isnan(got)) or \
                got == want["random_fraction_to_flip"], (orders, row["example"])
        assert run.report().settings["random_orders"] == orders
    with pytest.raises(ValueError, match="random_orders"):
        B.SliceRun(pred, texts[:2], ["random"], random_orders=-1)


@pytest.mark.parametrize("args, message", [
    (["faithfulness", "/no/such/checkpoint", "--data", "sst2"], "no such checkpoint"),
    (["faithfulness", "checkpoints/lama-sst2", "--data", "no_such_data"], "no_such_data"),
    (["faithfulness", "checkpoints/lama-sst2", "--data", "sst2", "--methods", "attention,telepathy"],
     "unknown method 'telepathy'"),
    (["faithfulness", "checkpoints/lama-sst2", "--data", "sst2", "--split", "validation"], "no split 'validation'"),
    (["faithfulness", "checkpoints/lama-sst2", "--limit", "0"], "--limit must be >= 1"),
    (["faithfulness", "checkpoints/lama-sst2", "--random-orders", "-1"], "--random-orders must be >= 0"),
])
def test_cli_faithfulness_bad_input_exits_2(args, message, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "Traceback" not in err[0], err


def test_without_flip_orders_the_fast_set_keeps_every_other_number(texts, shipped_predictors):
    """flip_orders=False (the CLI's --fast) leaves out only the erasure-flip orders: the AOPC curves, rank agreement
    and single-word flips are the full run's, and it scores fewer variants."""
    pred = shipped_predictors["lama-sst2"]
    full = B.SliceRun(pred, texts[:10], ["attention", "random", "leave_one_out"], attention_tests=False).run()
    fast = B.SliceRun(pred, texts[:10], ["attention", "random", "leave_one_out"], attention_tests=False,
                      flip_orders=False).run()
    assert fast.n_variants < full.n_variants
    for a, b in zip(full.per_example, fast.per_example):
        assert (a["example"], a["method"]) == (b["example"], b["method"])
        for key in ("aopc_comprehensiveness", "aopc_sufficiency", "erasure_top_flip", "kendall_tau_ref"):
            if key in a:
                assert b[key] == pytest.approx(a[key], abs=1e-6, nan_ok=True), key   # other batches: float order
        assert "erasure_fraction_to_flip" in a and "erasure_fraction_to_flip" not in b
    assert fast.report().settings["flip_orders"] is False


def test_cli_faithfulness_fast(capsys):
    ck = str(REPO / "checkpoints" / "act-sst2")
    assert main(["faithfulness", ck, "--data", "sst2", "--limit", "5", "--fast", "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["method"] for x in lines] == ["attention", "random", "leave_one_out", None]
    assert lines[-1]["flip_orders"] is False and "permutation_median_tvd" not in lines[-1]
    assert "erasure_fraction_to_flip" not in lines[0] and "aopc_comprehensiveness_ci" in lines[0]


def test_without_the_flip_test_no_single_word_variant_is_scored_and_the_aopc_is_the_same(shipped_predictors):
    """flips=False: AOPC, NAOPC and rank agreement need no one-word variants, so none are scored for them (unless
    leave-one-out is a method; NAOPC's beam scores them as its first step) and those numbers are exactly those of
    the full run; the flip fields are absent."""
    p = shipped_predictors["act-sst2"]
    texts = ["a dull , lifeless film", "the acting is superb and the story moving", "not good", "fine"]
    for beam in (None, 1):
        kw = dict(methods=("attention", "grad_x_input"), reference="attention", attention_tests=False,
                  naopc_beam=beam, flip_orders=False)
        full = B.SliceRun(p, texts, **kw)
        full.run()
        lean = B.SliceRun(p, texts, flips=False, **kw)
        lean.run()
        if beam is None:             # 16 words; 5 of their one-word variants are points of the curves too
            assert lean.n_variants == full.n_variants - 11 and full.n_variants == 35
        for a, b in zip(full.per_example, lean.per_example):
            assert "erasure_top_flip" in a and "erasure_top_flip" not in b
            for key in ("aopc_comprehensiveness", "aopc_sufficiency", "kendall_tau_ref") + (
                    ("naopc_comprehensiveness", "naopc_sufficiency") if beam else ()):
                # equal up to float32 rounding (the variants share padded batches in another composition)
                assert a[key] == pytest.approx(b[key], abs=1e-6, nan_ok=True), key
