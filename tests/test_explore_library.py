"""The Explore page's library: slices (definitions, metrics equal to metrics recomputed on the filtered rows,
saved per data set), calibration (ROC / PR / AUC against hand-computed values, reliability and ECE),
representations (the classifier-input vector, PCA, nearest neighbours), and every counterfactual generator
with its flip statistics. Tiny untrained checkpoints and the embedded data; no network."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from textcls.analysis import calibration as cal
from textcls.analysis import counterfactuals as cf
from textcls.analysis import representations as rp
from textcls.analysis import slices as sl
from textcls.checkpoint import load_checkpoint
from textcls.analysis.metrics import accuracy, macro_f1

from test_app_home_compare_inspect import build_checkpoints

REPO = Path(__file__).resolve().parents[1]
TEXTS = ["a good film", "a bad film , not good", "great acting and a great plot", "the plot is thin",
         "it is n't funny", "never boring", "good", "slow and dull ."]
GOLD = ["positive", "negative", "positive", "negative", "negative", "positive", "positive", "negative"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("explore_ckpts")
    names = build_checkpoints(root, models=("kim_cnn", "act", "hcan"))
    return {n: load_checkpoint(root / n) for n in names}, root


@pytest.fixture(scope="module")
def ctx():
    a = ["positive", "positive", "positive", "negative", "positive", "positive", "negative", "negative"]
    b = ["positive", "negative", "negative", "negative", "negative", "positive", "positive", "positive"]
    return sl.SliceContext(TEXTS, GOLD, {"a": a, "b": b})


# ---------------------------------------------------------------- slices

def test_slice_kinds_select_the_right_rows(ctx):
    rows = lambda s: sl.slice_rows(s, ctx).tolist()     # noqa: E731
    assert rows(sl.Slice("all", "all")) == list(range(8))
    assert rows(sl.Slice("neg", "label", "negative")) == [1, 3, 4, 7]
    assert rows(sl.Slice("a says pos", "prediction", "positive", "a")) == [0, 1, 2, 4, 5]
    assert rows(sl.Slice("a right", "correct", checkpoint="a")) == [0, 2, 3, 5, 7]
    assert rows(sl.Slice("a wrong", "wrong", checkpoint="a")) == [1, 4, 6]
    assert rows(sl.Slice("both wrong", "wrong")) == []
    assert rows(sl.Slice("short", "length", [1, 2])) == [5, 6]                # "never boring", "good"
    assert rows(sl.Slice("long", "length", [5, None])) == [1, 2]
    assert rows(sl.Slice("good", "word", "good")) == [0, 1, 6]
    assert rows(sl.Slice("rx", "regex", r"great|n't")) == [2, 4]
    assert rows(sl.Slice("dis", "disagree")) == [1, 2, 4, 6, 7]
    assert rows(sl.Slice("saved", "rows", [5, 1, 5])) == [1, 5]


def test_bad_slices_say_why(ctx):
    with pytest.raises(sl.SliceError, match="does not compile"):
        sl.slice_rows(sl.Slice("bad", "regex", "(unclosed"), ctx)
    with pytest.raises(sl.SliceError, match="not among the checkpoints"):
        sl.slice_rows(sl.Slice("x", "correct", checkpoint="zzz"), ctx)
    with pytest.raises(sl.SliceError, match="at least two"):
        sl.slice_rows(sl.Slice("d", "disagree"), sl.SliceContext(TEXTS, GOLD, {"a": GOLD}))
    with pytest.raises(sl.SliceError, match="unknown slice kind"):
        sl.Slice("x", "nope")
    table = sl.slice_metrics([sl.Slice("bad", "regex", "[")], ctx, ["negative", "positive"])
    assert "does not compile" in table["error"][0]


def test_slice_metrics_equal_metrics_recomputed_on_the_filtered_rows(ctx):
    labels = ["negative", "positive"]
    slices = [sl.Slice("all", "all"), sl.Slice("neg", "label", "negative"), sl.Slice("rx", "regex", "good|plot"),
              sl.Slice("empty", "word", "zebra")]
    table = sl.slice_metrics(slices, ctx, labels)
    code = {lab: k for k, lab in enumerate(labels)}
    for s in slices[:3]:
        idx = sl.slice_rows(s, ctx)
        for ck, pred in ctx.preds.items():
            row = table[(table["slice"] == s.name) & (table["checkpoint"] == ck)].iloc[0]
            t = np.array([code[GOLD[i]] for i in idx])
            p = np.array([code[pred[i]] for i in idx])
            assert row["count"] == len(idx)
            assert row["accuracy"] == pytest.approx(accuracy(t, p))
            assert row["macro_f1"] == pytest.approx(macro_f1(t, p, 2))
    empty = table[table["slice"] == "empty"]
    assert (empty["count"] == 0).all() and empty["accuracy"].isna().all()


def test_slices_are_saved_per_data_set_in_the_user_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("TEXTCLS_HOME", str(tmp_path))
    sl.save_slice("sst2", sl.Slice("mine", "rows", [3, 1]))
    sl.save_slice("sst2", sl.Slice("rx", "regex", "good"))
    sl.save_slice("sst2", sl.Slice("mine", "rows", [2]))                  # replaced by name
    assert [(s.name, s.value) for s in sl.load_slices("sst2")] == [("rx", "good"), ("mine", [2])]
    assert sl.load_slices("trec") == []
    assert json.loads((tmp_path / "slices" / "sst2.json").read_text())["dataset"] == "sst2"
    with pytest.raises(sl.SliceError):
        sl.save_slice("sst2", sl.Slice("bad", "regex", "("))
    assert [s.name for s in sl.delete_slice("sst2", "rx")] == ["mine"]


# ---------------------------------------------------------------- calibration

def test_roc_pr_and_auc_match_hand_computed_values():
    y = np.array([0, 0, 1, 1])
    s = np.array([0.1, 0.4, 0.35, 0.8])
    assert cal.roc_auc(y, s) == pytest.approx(0.75)                       # the classic example
    assert cal.average_precision(y, s) == pytest.approx(0.5 * 1 + 0.5 * (2 / 3))
    r = cal.roc_curve(y, s)
    assert r["fpr"][0] == 0 and r["tpr"][-1] == 1 and r["fpr"][-1] == 1
    assert cal.roc_auc([0, 1], [0.2, 0.9]) == 1.0
    m = cal.at_threshold(y, s, 0.36)
    assert m["precision"] == 0.5 and m["recall"] == 0.5 and m["accuracy"] == 0.5
    with pytest.raises(cal.CalibrationError, match="only one class"):
        cal.roc_curve([1, 1, 1], [0.2, 0.5, 0.9])


def test_reliability_and_ece():
    P = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    y = np.array([0, 1, 1, 1])
    d = cal.reliability(P, y, bins=10)
    assert d["count"].sum() == 4
    # bins: 0.9 (acc 1), 0.8 (acc 0), 0.7 (acc 1), 0.6 (acc 1)
    assert d["ece"] == pytest.approx((0.1 + 0.8 + 0.3 + 0.4) / 4)
    perfect = cal.reliability(np.array([[1.0, 0.0]] * 3), np.zeros(3, dtype=int))
    assert perfect["ece"] == pytest.approx(0.0)


# ---------------------------------------------------------------- representations

def test_representations_are_what_the_classifier_reads(tiny):
    preds, _ = tiny
    for name, p in preds.items():
        X = rp.representations(p, TEXTS)
        enc = p.encode(TEXTS[:1])
        with torch.no_grad():
            feats = p.model(enc.token_ids, enc.mask).features
        assert X.shape[0] == len(TEXTS) and X.shape[1] == feats.shape[1], name
        np.testing.assert_allclose(X[0], feats[0].numpy(), atol=1e-5)


def test_pca_matches_the_exact_svd_and_neighbours_find_the_query():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 40)) @ np.diag(np.r_[8.0, 4.0, np.linspace(1, 0.1, 38)])
    coords, ratio = rp.pca(X)
    U, S, _ = np.linalg.svd(X - X.mean(0), full_matrices=False)
    np.testing.assert_allclose(np.abs(coords), np.abs(U[:, :2] * S[:2]), atol=1e-6)
    assert ratio[0] > ratio[1] > 0
    idx, sims = rp.nearest_neighbours(X[7], X, 3)
    assert idx[0] == 7 and sims[0] == pytest.approx(1.0, abs=1e-5) and list(sims) == sorted(sims, reverse=True)
    assert 7 not in rp.nearest_neighbours(X[7], X, 3, exclude=[7])[0]
    assert len(rp.sample_rows(50_000, 5000)) == 5000 and len(rp.sample_rows(10, 5000)) == 10
    with pytest.raises(ValueError, match="too few"):
        rp.project(X[:2], "pca")


# ---------------------------------------------------------------- counterfactual generators

def test_model_free_generators():
    assert cf.negate("good")[0] == "not good"
    assert cf.negate("the film is good")[0] == "the film is not good"
    assert cf.negate("not good")[0] == "good"
    assert cf.negate("it is n't funny")[0] == "it is funny"
    assert cf.negate("it isn't funny")[0] == "it is funny"
    assert cf.negate("ca n't stop")[0] == "can stop"
    # issue 27.11: an edit is a sentence a person could write, or there is none (and nothing is counted)
    assert cf.negate("the movie exists") is None                      # not "the not movie exists"
    assert cf.negate("a gripping , beautifully acted film") is None
    assert cf.negate("the movie 's plot is thin")[0] == "the movie 's plot is not thin"   # possessive 's skipped
    assert cf.negate("it 's a charming film")[0] == "it 's not a charming film"
    edits = cf.generate("word_replacer", ["a good film , great", "nothing here"], rules="good -> bad, great -> awful")
    assert edits[0].edited == "a bad film , awful" and edits[1] is None
    with pytest.raises(cf.CounterfactualError, match="word -> replacement"):
        cf.parse_rules("good bad")
    s = cf.scramble("one two three four", seed=1)[0]
    assert sorted(s.split()) == sorted("one two three four".split()) and s != "one two three four"
    assert cf.scramble("same same") is None


def test_generators_that_find_nothing_give_n_zero(tiny):
    p = next(iter(tiny[0].values()))
    r = cf.run_generator(p, ["nothing to replace here"], "word_replacer", rules="zebra -> horse")
    assert r.n == 0 and np.isnan(r.flip_rate)
    with pytest.raises(cf.CounterfactualError, match="unknown generator"):
        cf.generate("nope", ["x"])


def test_hotflip_swap_lowers_the_predicted_class_probability(tiny):
    for name, p in tiny[0].items():
        texts = TEXTS[:4]
        edits = cf.hotflip(p, texts)
        for t, e in zip(texts, edits):
            assert e is not None
            before = p.predict([t])[0]
            after = p.predict([e.edited])[0]
            assert len(e.edited.split()) == len(before.tokens), name              # one token swapped
            assert sum(a != b for a, b in zip(e.edited.split(), before.tokens)) == 1
            assert after.probabilities[before.label] < before.probabilities[before.label], (name, t, e)


def test_ablation_flip_deletes_the_fewest_words_it_needs(tiny):
    p = tiny[0]["kim_cnn_tiny"]
    edits = cf.ablation_flip(p, TEXTS, max_delete=3)
    rep = cf.flip_report(p, edits)
    for e, row in zip([e for e in edits if e], rep.rows.itertuples()):
        k = int(e.detail.split()[1])
        n = len(p.predict([e.original])[0].tokens)
        assert 1 <= k <= min(3, n - 1) and len(e.edited.split()) == n - k
        if not row.flipped:           # nothing flipped: the largest set tried is returned
            assert k == min(3, n - 1)


def test_glove_substitution_replaces_the_most_important_word(tiny):
    from textcls.interpret import as_source
    from textcls.interpret.attention import attention_importance_instances
    p = tiny[0]["act_tiny"]
    texts = ["a good film", "great acting"]
    edits = cf.glove_substitution(p, texts)
    insts = as_source(p).instances(texts)
    imps = attention_importance_instances(p.model, insts)
    for e, inst, a in zip(edits, insts, imps):
        if e is None:                                   # tiny vocabularies may know no neighbour
            continue
        old = e.detail.split("'")[1]
        assert old in inst.tokens
        real = [i for i in np.argsort(-a.scores) if inst.tokens[i].isalpha()]
        assert old in [inst.tokens[i] for i in real[:3]]
        assert old not in e.edited.split() or e.edited.split().count(old) < inst.tokens.count(old)


def test_flip_report_counts(tiny):
    p = tiny[0]["kim_cnn_tiny"]
    r = cf.run_generator(p, TEXTS, "negation", checkpoint="k")
    edits = cf.generate("negation", TEXTS)
    assert r.n == sum(e is not None for e in edits) and r.n_texts == len(TEXTS) and r.n >= len(TEXTS) - 2
    assert r.flips == int(r.rows["flipped"].sum()) and r.flip_rate == pytest.approx(r.flips / r.n)
    assert r.mean_prob_change == pytest.approx(float((r.rows["new_p"] - r.rows["p"]).mean()))
    assert set(cf.summary_table([r]).columns) >= {"flip_rate", "mean_prob_change", "n"}


def test_cli_counterfactuals_prints_one_json_object(tiny):
    _, root = tiny
    env = {"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "textcls", "counterfactuals", str(root / "kim_cnn_tiny"), "--data",
                          "sst2", "--split", "test", "--generator", "negation", "--limit", "40", "--json"],
                         capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert {"flip_rate", "mean_prob_change", "n"} <= set(d) and d["n_texts"] == 40
    bad = subprocess.run([sys.executable, "-m", "textcls", "counterfactuals", str(root / "kim_cnn_tiny"), "--data",
                          "sst2", "--generator", "nope", "--json"], capture_output=True, text=True, cwd=REPO,
                         env=env, timeout=120)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_a_registered_generator_is_offered_everywhere_from_one_place():
    """Adding a generator is one decorator: generate(), compare_generators, the CLI's choices and the Explore page
    (which lists cf.GENERATORS) all read the registry; a name is registered once."""
    from textcls.cli import build_parser

    @cf.register_generator("upper_test", "Upper case (test)", needs_model=False, help="every word in capitals")
    def _upper(texts, predictor=None, **_):
        return [cf.Edit(i, t, t.upper(), "upper") if t != t.upper() else None for i, t in enumerate(texts)]
    try:
        edits = cf.generate("upper_test", ["a film", "LOUD"])
        assert edits[0].edited == "A FILM" and edits[1] is None
        args = build_parser().parse_args(["counterfactuals", "checkpoints/act-sst2", "--generator", "upper_test"])
        assert args.generator == "upper_test"
        with pytest.raises(ValueError, match="twice"):
            cf.register_generator("upper_test", "again", needs_model=False, help="")(_upper)
    finally:
        cf.GENERATORS.pop("upper_test", None)
    with pytest.raises(cf.CounterfactualError, match="needs a checkpoint"):
        cf.generate("hotflip", ["a film"])
