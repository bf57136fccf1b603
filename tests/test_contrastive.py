"""Contrastive explanations ("why label A rather than B", textcls.interpret.contrastive) by known answers: a label
against itself gives zeros; every gradient and erasure method is linear in the explained score, so explaining
logit(A) - logit(B) equals A's explanation on logits minus B's (exactly, up to float rounding: 1e-5); saliency is
the L1 norm of the difference of the two labels' signed gradients (Yin & Neubig 2022's contrastive gradient norm);
on a 2-label model the explained number is the log-odds. On the shipped trec (6 labels) and semeval2010 (19)
checkpoints and a tiny Hugging Face BERT built from a config; then the CLI, the registry's flags and cache keys."""
from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import textcls
from textcls.interpret import methods as M
from textcls.interpret.attributions import attribute_instances
from textcls.interpret.contrastive import NOT_CONTRASTIVE, RUNNER_UP, foils, parse
from textcls.interpret.embedding_forward import EmbeddingForward
from textcls.interpret.sources import as_source

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hf_toys import tiny_folder  # noqa: E402

CKPT = Path(__file__).resolve().parents[1] / "checkpoints"
TEXTS = {"act-trec": "What is the capital of France ?",
         "transformer-semeval2010": "The <e1>burst</e1> has been caused by water hammer <e2>pressure</e2> .",
         "tiny-bert": "the film was good but the plot dull"}
GRADIENT = ("saliency", "grad_x_input", "integrated_gradients")
ERASURE = ("leave_one_out", "occlusion", "shapley", "lime")
CONTRASTIVE = GRADIENT + ERASURE
FAST = dict(n_steps=16, max_steps=16, n_samples=None)      # IG's steps fixed: both sides integrate the same path


@pytest.fixture(scope="module")
def models(tmp_path_factory, shipped_predictors):
    """name -> (predictor, the instance of its text, its logits (C,))."""
    out = {}
    for name in ("act-trec", "transformer-semeval2010", "tiny-bert"):
        if name == "tiny-bert":
            folder = tiny_folder(tmp_path_factory.mktemp("contrast"), "bert", labels=("neg", "mixed", "pos"))
            p = textcls.load_checkpoint(folder, device="cpu")
            with torch.no_grad():                       # a random head's logits are ~0.01: scale them to ~1
                for n, w in p.model.named_parameters():
                    if "classifier" in n:
                        w.mul_(300.0)
        else:
            p = shipped_predictors[name]
        (inst,) = as_source(p).instances([TEXTS[name]])
        ids, mask = inst.batch()
        with torch.no_grad():
            z = p.model(ids, mask).logits[0].double().numpy()                     # (C,)
        out[name] = (p, inst, z)
    return out


NAMES = list(TEXTS)


def pair(z: np.ndarray) -> tuple[int, int]:
    """(the predicted label, the runner-up)."""
    order = np.argsort(-z)
    return int(order[0]), int(order[1])


def run(p, inst, method, **kw):
    opts = dict(labels=p.labels, baseline="pad", seed=0, tolerance=10.0, **FAST)
    opts.update(kw)
    return M.explain(p.model, [inst], method, **opts)[0]


def scores(x) -> np.ndarray:
    return np.asarray(getattr(x, "scores", x), dtype=np.float64)


def test_the_shipped_models_have_the_label_counts_the_tests_claim(models):
    assert [len(models[n][0].labels) for n in NAMES] == [6, 19, 3]


# ---------------------------------------------------------------- a label against itself

@pytest.mark.parametrize("method", CONTRASTIVE)
@pytest.mark.parametrize("name", NAMES)
def test_a_label_against_itself_is_zero(models, name, method):
    p, inst, z = models[name]
    fact, _ = pair(z)
    a = run(p, inst, method, contrast=p.labels[fact])                            # by name
    assert a.extras["contrast"] == fact and a.output_kind == "logit difference"
    assert np.abs(scores(a)).max() == 0.0, (name, method, scores(a))
    assert a.output == 0.0


# ---------------------------------------------------------------- linearity: contrast = fact's - foil's

@pytest.mark.parametrize("method", ("grad_x_input", "integrated_gradients", "occlusion", "shapley", "lime"))
@pytest.mark.parametrize("name", NAMES)
def test_contrast_is_the_difference_of_the_two_labels_attributions_on_logits(models, name, method):
    p, inst, z = models[name]
    fact, foil = pair(z)
    c = run(p, inst, method, contrast=RUNNER_UP)
    assert c.target == fact and c.extras["contrast"] == foil and c.extras["contrast_label"] == p.labels[foil]
    assert c.output == pytest.approx(z[fact] - z[foil], abs=1e-4)
    a, b = (attribute_instances(p.model, [inst], method, target=t, output="logit", baseline="pad", seed=0,
                                tolerance=10.0, **FAST)[0] for t in (fact, foil))
    assert np.abs(scores(c) - (scores(a) - scores(b))).max() < 1e-5, (name, method)
    assert np.abs(scores(c)).max() > 1e-3                                          # not trivially zero


@pytest.mark.parametrize("name", NAMES)
def test_a_non_predicted_pair_is_linear_too(models, name):
    """Fact and foil both given (neither need be the prediction): index, then name."""
    p, inst, z = models[name]
    fact, foil = int(np.argsort(-z)[1]), int(np.argsort(-z)[-1])
    c = run(p, inst, "grad_x_input", target=fact, contrast=foil)
    a, b = (run(p, inst, "grad_x_input", target=t, output="logit") for t in (fact, foil))
    assert np.abs(scores(c) - (scores(a) - scores(b))).max() < 1e-5
    assert np.array_equal(scores(run(p, inst, "grad_x_input", target=fact, contrast=p.labels[foil])), scores(c))


def signed_gradients(p, inst, label: int) -> torch.Tensor:
    """(n, E) d logit(label) / d embedding at each real token, by autograd on the model (not through Captum)."""
    ids, mask = inst.batch()
    f = EmbeddingForward(p.model, output="logit")
    emb = f.embed(ids).requires_grad_(True)                                        # (1, L, E)
    f(emb, ids, mask)[0, label].backward()
    return emb.grad[0][mask[0]]                                                    # (n, E)


@pytest.mark.parametrize("name", NAMES)
def test_saliency_is_the_l1_norm_of_the_difference_of_signed_gradients(models, name):
    p, inst, z = models[name]
    fact, foil = pair(z)
    ga, gb = signed_gradients(p, inst, fact), signed_gradients(p, inst, foil)
    plain = run(p, inst, "saliency", output="logit")                               # anchors the hand gradient
    assert np.abs(scores(plain) - ga.abs().sum(-1).double().numpy()).max() < 1e-5
    c = run(p, inst, "saliency", contrast=RUNNER_UP)
    assert np.abs(scores(c) - (ga - gb).abs().sum(-1).double().numpy()).max() < 1e-5
    gx = run(p, inst, "grad_x_input", contrast=RUNNER_UP)                          # the signed sum, e . (ga - gb)
    ids, _ = inst.batch()
    e = EmbeddingForward(p.model).embed(ids)[0][inst.batch()[1][0]]                # (n, E)
    assert np.abs(scores(gx) - (e * (ga - gb)).sum(-1).double().numpy()).max() < 1e-5


@pytest.mark.parametrize("name", NAMES)
def test_leave_one_out_is_the_difference_of_the_two_logit_drops(models, name):
    p, inst, z = models[name]
    fact, foil = pair(z)
    drops = []
    for t in range(inst.n):                                                        # by hand, one variant at a time
        ids, mask = inst.remove([t], "delete").batch()
        with torch.no_grad():
            drops.append(z - p.model(ids, mask).logits[0].double().numpy())       # (C,)
    drops = np.array(drops)                                                        # (n, C)
    c = run(p, inst, "leave_one_out", contrast=RUNNER_UP, removal="delete")
    assert np.abs(scores(c) - (drops[:, fact] - drops[:, foil])).max() < 1e-5
    assert M.get("leave_one_out").signed_with(RUNNER_UP) and not M.get("leave_one_out").signed_with(None)
    plain = run(p, inst, "leave_one_out")                                          # without: the TVD, as before
    assert (scores(plain) >= 0).all() and not isinstance(plain, type(c))


def test_runner_up_is_the_second_most_probable_label(models):
    p, inst, z = models["transformer-semeval2010"]
    probs = p.predict([TEXTS["transformer-semeval2010"]])[0].probabilities
    second = sorted(probs, key=probs.get, reverse=True)[1]
    assert run(p, inst, "occlusion", contrast="runner-up").extras["contrast_label"] == second
    assert list(foils([[0.0, 3.0, 2.0], [5.0, 1.0, 4.0]], [1, 2], RUNNER_UP)) == [2, 0]   # never the fact itself


def test_on_two_labels_the_contrast_is_the_log_odds(shipped_predictors):
    p = shipped_predictors["act-sst2"]
    text = "a gripping , beautifully acted film"
    (inst,) = as_source(p).instances([text])
    prob = max(p.predict([text])[0].probabilities.values())
    ig = run(p, inst, "integrated_gradients", contrast=RUNNER_UP, tolerance=0.05, max_steps=800)
    assert ig.output == pytest.approx(np.log(prob / (1 - prob)), abs=1e-4)
    assert ig.converged and ig.total == pytest.approx(ig.output - ig.baseline_output, abs=0.05 * abs(ig.output))


# ---------------------------------------------------------------- the registry, parsing, cache keys

def test_which_methods_are_contrastive_and_the_others_say_why():
    assert {n for n, m in M.REGISTRY.items() if m.contrastive} == set(CONTRASTIVE)
    for n in ("attention", "norm", "alti", "decompx", "random"):
        assert M.options_used(n, contrast="runner-up")["contrast"] is None
    for n in CONTRASTIVE:
        assert M.options_used(n, contrast="runner-up")["contrast"] == "runner-up"
        assert M.options_used(n)["contrast"] is None


def test_a_contrast_for_attention_is_one_line(models):
    p, inst, _ = models["act-trec"]
    with pytest.raises(ValueError, match="cannot explain one label rather than another") as e:
        M.explain(p.model, [inst], "attention", labels=p.labels, contrast=RUNNER_UP)
    assert "\n" not in str(e.value) and NOT_CONTRASTIVE in str(e.value)


@pytest.mark.parametrize("raw, want", [(None, None), ("runner-up", RUNNER_UP), ("Runner_Up", RUNNER_UP),
                                       ("NUM", 5), ("num", 5), (2, 2), ("3", 3)])
def test_parse_a_contrast(raw, want):
    assert parse(raw, ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]) == want


@pytest.mark.parametrize("raw", ["FOO", 6, "-1", "7"])
def test_parse_refuses_a_label_the_model_does_not_have(raw):
    with pytest.raises(ValueError) as e:
        parse(raw, ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"])
    assert "\n" not in str(e.value)


def test_the_page_cache_is_keyed_on_the_contrast_of_the_methods_that_read_it():
    from pages.common import work
    path = CKPT / "act-trec"
    k = {c: work._key(path, "a text", "ig", "pad", 50, "delete", contrast=c) for c in (None, "runner-up", "NUM")}
    assert len(set(k.values())) == 3 and k["runner-up"][-2] == "runner-up"
    att = {c: work._key(path, "a text", "attention", "pad", 50, "delete", contrast=c) for c in (None, "NUM")}
    assert att[None] == att["NUM"]                                                 # attention ignores it


def test_the_pages_choice_says_when_a_checkpoint_lacks_the_label():
    from pages.common import contrast as C
    assert C.options([["negative", "positive"], ["ABBR", "NUM", "positive"]]) == \
        [RUNNER_UP, "negative", "positive", "ABBR", "NUM"]
    assert C.for_labels("NUM", ["negative", "positive"])[0] is None
    assert "no label NUM" in C.for_labels("NUM", ["negative", "positive"])[1]
    assert C.for_labels(RUNNER_UP, ["negative", "positive"]) == (RUNNER_UP, None)
    assert C.shade_signed("leave_one_out", "NUM") and not C.shade_signed("leave_one_out", None)
    assert not C.shade_signed("saliency", "NUM")                                   # a size, contrasted or not


# ---------------------------------------------------------------- the CLI

def explain(args, capsys):
    from textcls.cli import main
    rc = main(["explain", str(CKPT / "act-trec"), "What is the capital of France ?", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli_json_gives_the_contrast_used(capsys):
    rc, out, _ = explain(["--methods", "grad_x_input,leave_one_out,attention", "--contrast", "runner-up",
                          "--no-verdict", "--json"], capsys)
    r = json.loads(out)
    assert rc == 0 and r["label"] == "LOC"
    assert r["contrast"]["label"] == "NUM" and r["contrast"]["asked"] == "runner-up"
    assert r["methods"]["grad_x_input"]["contrast"] == "NUM" and r["methods"]["attention"]["contrast"] is None
    assert "attention: not contrastive" in r["contrast"]["note"]
    assert r["methods"]["leave_one_out"]["weights"][3] > 1                         # "capital": LOC rather than NUM


def test_cli_contrast_with_the_predicted_label_is_zero_with_a_note(capsys):
    rc, out, _ = explain(["--methods", "occlusion", "--contrast", "LOC", "--no-verdict"], capsys)
    notes = [x for x in out.splitlines() if x.startswith("note:")]
    assert rc == 0 and len(notes) == 1 and "is the predicted label" in notes[0]
    rc, out, _ = explain(["--methods", "occlusion", "--contrast", "LOC", "--no-verdict", "--json"], capsys)
    assert json.loads(out)["methods"]["occlusion"]["weights"] == [0.0] * 7


@pytest.mark.parametrize("bad", ["FOO", "6"])
def test_cli_a_label_the_model_does_not_have_is_exit_2_one_line(bad, capsys):
    rc, out, err = explain(["--methods", "occlusion", "--contrast", bad], capsys)
    assert rc == 2 and out == "" and "--contrast" in err and err.strip().count("\n") == 0


def test_serve_job_takes_the_contrast():
    """The model worker's explanation job passes `contrast` on (the pages' cache wrappers send it)."""
    from textcls.serve import work
    assert "contrast" in inspect.signature(work.explanation).parameters


# ---------------------------------------------------------------- the pages (need the serve job's contrast)

@pytest.fixture
def trec_only(tmp_path, monkeypatch):
    """The app on a copy of act-trec alone, its model work in this process."""
    import shutil
    shutil.copytree(CKPT / "act-trec", tmp_path / "ckpts" / "act-trec")
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(tmp_path / "ckpts"))
    monkeypatch.setenv("TEXTCLS_WORKER", "0")


def test_attribute_page_explains_rather_than_the_runner_up(trec_only):
    from app_pages import open_page, page_text
    at = open_page("pages/attribute.py", timeout=180)
    at.text_input(key="attr_text").input(TEXTS["act-trec"])
    at.multiselect(key="attr_methods").set_value(["attention", "grad_x_input", "leave_one_out"])
    assert at.selectbox(key="attr_contrast").value == RUNNER_UP                   # the default foil
    at.toggle(key="attr_contrast_on").set_value(True)
    at.button(key="FormSubmitter:attr_form-Explain").click().run()
    assert not at.exception, [e.value for e in at.exception]
    body = page_text(at, unescape=True)
    assert "why LOC rather than NUM" in body and "logit(LOC) - logit(NUM)" in body
    at.selectbox(key="attr_contrast").set_value("LOC")                             # against itself
    at.button(key="FormSubmitter:attr_form-Explain").click().run()
    assert "LOC rather than itself: nothing to explain" in page_text(at, unescape=True)


def test_inspect_page_has_a_rather_than_panel(trec_only):
    from app_pages import open_page, page_text
    at = open_page("pages/inspect.py", timeout=180)
    at.text_area(key="insp_text").input(TEXTS["act-trec"])
    at.button(key="FormSubmitter:insp_form-Inspect").click().run()
    at.session_state["insp0_contrast_open"] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="insp0_contrast").value == RUNNER_UP
    assert "why LOC rather than NUM" in page_text(at, unescape=True)
