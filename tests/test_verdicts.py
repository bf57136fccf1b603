"""Verdicts you can trust: the one-text verdict says what its numbers show (p-values, exact on short texts, ties
as ties), NAOPC is bounded by the best and worst word order (checked by brute force), random draws are seeded by
the text so pages agree, the randomisation check runs on Hugging Face models, and the CLI maps gold labels by
name and refuses out-of-range options before loading."""
from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import textcls
from textcls.interpret import chance as ch
from textcls.interpret.faithfulness import erasure_curves, permutation_test
from textcls.interpret.rankings import NO_VERDICT, UNSETTLED, VERDICTS, naopc, ranked, versus_random
from textcls.interpret.sources import as_source

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def act(shipped_predictors):
    return shipped_predictors["act-sst2"]


def _inst(p, text):
    return as_source(p).instances([text])[0]


def _fake(comp, suff, orders_c, orders_s, exact=False, bounds=None, n_words=20):
    curves = {"aopc_comprehensiveness": comp, "aopc_sufficiency": suff}
    chance = {"exact": exact, "n_orders": len(orders_c), "n_words": n_words,
              "aopc_comprehensiveness": np.array(orders_c, float), "aopc_sufficiency": np.array(orders_s, float),
              "bounds": bounds or {"comprehensiveness": [np.nan] * 2, "sufficiency": [np.nan] * 2}}
    return versus_random(curves, chance)


def test_beating_18_of_19_orders_is_not_called_no_better_than_random():
    """The issue's case: 0.586 against 19 orders, beating 18 of them: p = 0.10, not settled - never 'no better'."""
    orders = [0.1] * 18 + [0.7]
    v = _fake(0.586, 0.05, orders, [0.5] * 18 + [0.01])
    assert v["verdict"] == UNSETTLED
    assert "no better than random" not in v["line"]
    assert v["p_comprehensiveness"] == pytest.approx(2 / 20)


def test_no_better_than_random_only_inside_the_random_orders():
    v = _fake(0.1, 0.5, list(np.linspace(0, 0.3, 19)), list(np.linspace(0.2, 0.8, 19)))
    assert v["verdict"] == VERDICTS[0]
    assert v["beaten"] <= 0.5


def test_better_and_partly_better_by_p_values():
    assert _fake(0.9, 0.0, [0.1] * 19, [0.5] * 19)["verdict"] == VERDICTS[2]
    v = _fake(0.9, 0.6, [0.1] * 19, [0.5] * 19)
    assert v["verdict"].startswith(VERDICTS[1]) and "comprehensiveness" in v["verdict"]


def test_a_text_too_short_for_any_p_gets_no_verdict():
    v = _fake(0.7, 0.0, [0.1] * 5 + [0.7], [0.5] * 5 + [0.0], exact=True, n_words=3)
    assert v["verdict"] == NO_VERDICT and "no better" not in v["line"]


def test_ties_are_called_ties():
    assert ranked({"attention": 0.542, "norm": 0.542, "alti": 0.3}) in ("attention = norm > alti",
                                                                         "norm = attention > alti")
    assert ranked({"a": 0.6, "b": 0.5}) == "a > b"


def test_naopc_is_bounded_and_oriented():
    b = [0.1, 0.5]
    assert naopc(0.5, b) == 1.0 and naopc(0.1, b) == 0.0 and naopc(0.3, b) == pytest.approx(0.5)
    assert naopc(0.1, b, higher_is_better=False) == 1.0             # sufficiency: low is faithful
    assert np.isnan(naopc(0.3, [0.2, 0.2]))


def _brute(p, inst, bins=ch.BINS):
    """Every order's AOPCs through the per-text reference path (faithfulness.erasure_curves)."""
    comp, suff = [], []
    for order in itertools.permutations(range(inst.n)):
        imp = np.zeros(inst.n)
        imp[list(order)] = np.arange(inst.n, 0, -1)                # order[0] most important
        c = erasure_curves(p.model, inst, imp, bins)
        comp.append(c["aopc_comprehensiveness"])
        suff.append(c["aopc_sufficiency"])
    return np.array(comp), np.array(suff)


def test_exact_distribution_and_bounds_equal_brute_force(act):
    inst = _inst(act, "a sharp , funny film")                      # 5 words: 120 orders
    got = ch.text_chance(act.model, inst)
    comp, suff = _brute(act, inst)
    assert got["exact"] and got["n_orders"] == 120
    assert np.allclose(np.sort(got["aopc_comprehensiveness"]), np.sort(comp), atol=1e-5)
    assert np.allclose(np.sort(got["aopc_sufficiency"]), np.sort(suff), atol=1e-5)
    assert got["bounds"]["comprehensiveness"] == pytest.approx([comp.min(), comp.max()], abs=1e-5)
    assert got["bounds"]["sufficiency"] == pytest.approx([suff.min(), suff.max()], abs=1e-5)
    # the exact p of a ranking is the share of all orders at least as good (its own order among them)
    imp = np.array([0.1, 0.9, 0.0, 0.5, 0.3])
    c = erasure_curves(act.model, inst, imp)
    v = versus_random(c, got)
    assert v["p_comprehensiveness"] == pytest.approx(float((comp >= c["aopc_comprehensiveness"] - 1e-6).mean()))
    assert 0.0 <= v["naopc_comprehensiveness"] <= 1.0 and 0.0 <= v["naopc_sufficiency"] <= 1.0


def test_the_beam_bounds_lie_inside_the_exact_ones(act, monkeypatch):
    inst = _inst(act, "the plot is thin but the acting is superb")      # 9 words
    exact_at = ch.EXACT_WORDS
    monkeypatch.setattr(ch, "EXACT_WORDS", 9)
    exact = ch.text_chance(act.model, inst)
    monkeypatch.setattr(ch, "EXACT_WORDS", exact_at)
    beam = ch.text_chance(act.model, inst, beam=2)
    assert exact["exact"] and not beam["exact"] and beam["bounds_by"] == "beam 2"
    for k in ("comprehensiveness", "sufficiency"):
        lo, hi = exact["bounds"][k]
        blo, bhi = beam["bounds"][k]
        assert lo - 1e-6 <= blo <= bhi <= hi + 1e-6
    # the greedy beam finds the best comprehensiveness order of this text, or comes close
    assert beam["bounds"]["comprehensiveness"][1] >= 0.9 * exact["bounds"]["comprehensiveness"][1]


def test_random_draws_are_seeded_by_the_text(act):
    a = _inst(act, "the acting was great but the plot was boring")
    b = _inst(act, "the acting was boring but the plot was great")
    x, y, z = (ch.text_chance(act.model, i, bounds=False) for i in (a, a, b))
    assert x["seed"] == y["seed"] != z["seed"]
    assert np.array_equal(x["aopc_comprehensiveness"], y["aopc_comprehensiveness"])
    p1, p2 = permutation_test(act.model, a, 20), permutation_test(act.model, a, 20)
    assert p1["median_tvd"] == p2["median_tvd"] and p1["seed"] == p2["seed"]
    assert p1["tvd_iqr"][0] <= p1["median_tvd"] <= p1["tvd_iqr"][1]


def test_slice_run_reports_naopc_and_leave_one_out_pays_its_variants(act):
    from textcls.interpret.batched import evaluate_slice
    texts = ["not a good film", "a gripping , beautifully acted film that never loses its way",
             "the acting was great but the plot was boring", "dull"]
    rep = evaluate_slice(act, texts, ["attention", "leave_one_out", "random"], attention_tests=False,
                         flip_orders=False, naopc_beam=1)
    for r in rep.rows:
        assert 0.0 <= r["naopc_comprehensiveness"] <= 1.0 and 0.0 <= r["naopc_sufficiency"] <= 1.0
    by = {r["method"]: r for r in rep.rows}
    assert by["attention"]["naopc_comprehensiveness"] > by["random"]["naopc_comprehensiveness"]
    assert rep.timings["leave_one_out"] > rep.timings.get("random", 0.0)
    plain = evaluate_slice(act, texts, ["attention", "random"], attention_tests=False, flip_orders=False)
    assert all("naopc_comprehensiveness" not in r for r in plain.rows)


# ---------------------------------------------------------------- the randomisation check on Hugging Face models

def test_randomisation_check_runs_on_a_hugging_face_model_and_leaves_it_unchanged(tmp_path):
    pytest.importorskip("transformers")
    import torch
    from hf_toys import tiny_folder
    from textcls.interpret.measures import explain_any
    from textcls.interpret.sanity import cascading_randomisation
    p = textcls.load_checkpoint(tiny_folder(tmp_path, "bert"))
    insts = as_source(p).instances(["this movie was really good", "the plot is dull and awful"])
    before = {k: v.clone() for k, v in p.model.state_dict().items()}
    res = cascading_randomisation(p.model, insts, ["grad_x_input"], lambda m, xs, me: explain_any(m, xs, me))
    assert res["stages"][0].endswith("classifier") and len(res["rho"]["grad_x_input"]) == len(res["stages"])
    assert all(torch.equal(before[k], v) for k, v in p.model.state_dict().items())


def test_a_failing_randomisation_check_is_one_line_not_the_run(act, monkeypatch):
    from textcls.interpret import sanity
    from textcls.interpret.batched import SliceRun
    from textcls.interpret.measures import slice_measures

    def broken(model):
        raise ValueError("the model could not be copied to randomise it (TypeError: no)")
    monkeypatch.setattr(sanity, "weights_copy", broken)
    run = SliceRun(act, ["not a good film", "a fine film"], ["attention", "random"], reference="attention",
                   attention_tests=False).run()
    out, notes = slice_measures(run, None, act.labels, sanity_texts=2)
    assert any(n.startswith("randomisation check not run:") for n in notes)
    assert "sanity_rho" not in out["attention"]


# ---------------------------------------------------------------- the command line

def _cli(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "textcls", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout)


@pytest.mark.parametrize("flag", [["--sanity", "-1"], ["--chunk", "-5"], ["--beam", "-2"]])
def test_out_of_range_options_exit_2_before_loading(flag):
    r = _cli("faithfulness", "checkpoints/does-not-exist", *flag)
    assert r.returncode == 2 and flag[0] in r.stderr and "Traceback" not in r.stderr


def test_gold_labels_are_mapped_by_name():
    from textcls.cli.common import UsageError
    from textcls.cli.faithfulness import gold_by_name
    # the file's own sorted labels (positive, negative) against the checkpoint's (negative, positive)
    assert gold_by_name([0, 1, 1], ["positive", "negative"], ["negative", "positive"]) == [1, 0, 0]
    with pytest.raises(UsageError, match="'neutral' is not one of the checkpoint's labels"):
        gold_by_name([2], ["negative", "positive", "neutral"], ["negative", "positive"])


def test_faithfulness_on_a_file_with_reversed_labels_gives_the_same_plausibility(tmp_path):
    rows = [("a gripping , beautifully acted film", "positive"), ("dull and lifeless", "negative"),
            ("the acting was great but the plot was boring", "negative"), ("a warm , funny story", "positive")]
    f = tmp_path / "t.csv"
    f.write_text("text,label\n" + "".join(f'"{t}",{lab}\n' for t, lab in rows), encoding="utf-8")
    g = tmp_path / "g.csv"                                          # only positive first: other label order
    g.write_text("text,label\n" + "".join(f'"{t}",{lab}\n' for t, lab in sorted(rows, key=lambda r: r[1] != "positive")),
                 encoding="utf-8")
    got = []
    for path in (f, g):
        r = _cli("faithfulness", "checkpoints/act-sst2", "--data", str(path), "--split", "test", "--methods",
                 "attention", "--fast", "--sanity", "0", "--no-naopc", "--json", "--quiet")
        if r.returncode == 2 and "no split" in r.stderr:
            pytest.skip("a CSV file loads as one split other than test here")
        assert r.returncode == 0, r.stderr
        row = [json.loads(x) for x in r.stdout.splitlines() if '"kind": "method"' in x][0]
        got.append(row["plausibility_auprc"])
    assert got[0] == pytest.approx(got[1], abs=1e-9)


def test_explain_json_gives_each_method_a_verdict_and_naopc():
    r = _cli("explain", "checkpoints/act-sst2", "the acting was great but the plot was boring", "--methods",
             "attention,leave_one_out", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    for m in ("attention", "leave_one_out"):
        e = d["methods"][m]
        assert 0.0 <= e["naopc_comprehensiveness"] <= 1.0 and 0.0 <= e["naopc_sufficiency"] <= 1.0
        assert e["verdict"] and e["verdict"] in e["verdict_line"]
        assert 0 < e["p_comprehensiveness"] <= 1
    assert d["chance"]["orders"] in (ch.N_FIRST, ch.N_MORE)


# ---------------------------------------------------------------- the known answer, on screen

def test_the_shortcut_step_shows_the_shipped_known_answer():
    from textcls.teach import lessons, steps
    step = next(s for les in lessons.LESSONS for s in les.steps if s.kind == "shortcut")
    res = steps.run_step(step)
    assert res.missing is None and res.figures and res.notes
    z = res.figures[0].fig.data[0].z                                  # methods x models, the top-1 shares
    rows = list(res.figures[0].fig.data[0].y)
    rand = rows.index("Random ranking")
    assert all(v is None or v < 0.2 for v in z[rand])                  # chance stays near 1 / words per text
    assert any(v is not None and v >= 0.9 for row in z for v in row)    # and some method finds the planted word


def test_benchmarks_lists_the_planted_shortcut_table():
    from app_pages import open_page
    at = open_page("pages/benchmarks.py")
    assert not at.exception
    assert any("Which explanation finds a known shortcut" in h.value for h in at.subheader)
