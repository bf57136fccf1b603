"""TCAV (textcls.interpret.tcav and the "tcav" interpreter): LIT's unit values (PAIR-code/lit
lit_nlp/components/tcav_test.py), the layer each family offers read right (pooled activations equal the model's own
maps; directional derivatives equal finite differences of the logit), the known answer of Captum's TCAV NLP tutorial
on a shipped checkpoint, and bad input in one line."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from conftest import REPO
from textcls.interpret import tcav as T
from textcls.interpret.interpreters import InterpreterError
from textcls.interpret.interpreters import run as run_interpreter
from textcls.interpret.interpreters.tcav import concept_of, shipped_concepts
from textcls.interpret.sources import as_source

TEXTS = ["a gripping , beautifully acted film .", "the plot is dull and the jokes fall flat .",
         "not a good movie at all", "one of the best films of the year"]


# ---------------------------------------------------------------- LIT's unit values

def test_tcav_score_is_the_share_of_positive_directional_derivatives_as_lit():
    assert T.tcav_score([1]) == 1 and T.tcav_score([0]) == 0
    assert T.tcav_score([1, -5, 4, 6.5, -3, -2.5, 0, 2]) == 0.5


def test_hyp_test_gives_lits_p_values():
    assert T.hyp_test([0, 0, 0.5, 0.5, 1, 1], [3, 5, -8, -100, 0, -90]) == pytest.approx(0.1415165926492605, abs=1e-12)
    same = [0.1, 0.13, 0.19, 0.09, 0.12, 0.1]
    assert T.hyp_test(same, same) == 1.0
    assert np.isnan(T.hyp_test([1.0, 1.0, 1.0], [1.0, 1.0, 1.0]))             # undefined: never "significant"


def test_trained_cav_is_lits():
    x = [[1], [1], [1], [2], [1], [1], [-1], [-1], [-2], [-1], [-1]]
    y = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0]
    cav, acc = T.train_cav(x, y, 0.33, random_state=0)
    np.testing.assert_almost_equal(cav, [[19.08396947]])
    assert acc == 1.0
    # LIT's 2-D case: its CAV [[-77.89678676, 9.73709834]] came from an older scikit-learn; the direction is the same
    cav, acc = T.train_cav([[-8, 1], [5, 3], [3, 6], [-2, 5], [-8, 10], [10, -5]], [1, 0, 0, 1, 1, 0], 0.33,
                           random_state=0)
    lit = np.array([-77.89678676, 9.73709834])
    np.testing.assert_allclose(cav[0] / np.linalg.norm(cav), lit / np.linalg.norm(lit), atol=1e-6)
    assert acc == 1.0


def test_directional_derivatives_as_lit():
    dd = T.directional_derivatives(np.array([[1, 2, 3]]), np.array([[3, 2, 1], [1, 2, 0]]))
    assert dd.tolist() == [10, 5]                       # LIT keeps the class's rows: its example's [10]


# ---------------------------------------------------------------- the layers

def test_each_family_offers_its_layers(shipped_predictors):
    names = {ck: T.layer_names(shipped_predictors[ck].model) for ck in
             ("act-sst2", "agcnn-sst2", "hcan-sst2", "kim_cnn-sst2", "lama-sst2", "transformer-sst2")}
    assert names == {"act-sst2": ["layer 1 filters", "layer 2 filters"],
                     "agcnn-sst2": [f"window {h} gated" for h in (1, 2, 3, 4, 5)],
                     "hcan-sst2": ["sentence level"], "kim_cnn-sst2": ["pooled filters"], "lama-sst2": ["BiGRU"],
                     "transformer-sst2": ["block 1", "block 2"]}
    sites = T.sites(shipped_predictors["act-sst2"].model)
    assert [s.name for s in T.choose(sites, "last")] == ["layer 2 filters"]
    assert [s.name for s in T.choose(sites, "Layer 1 filters")] == ["layer 1 filters"]
    with pytest.raises(T.TcavError, match="unknown layer 'block 9'.*layer 1 filters, layer 2 filters"):
        T.choose(sites, "block 9")


def test_pooled_activations_are_the_models_own_maps_averaged(shipped_predictors):
    """ACT's filter space: the feature maps M its probe records, averaged over each text's words."""
    p = shipped_predictors["act-sst2"]
    src = as_source(p)
    A, G, preds = T.collect(src, TEXTS, T.sites(p.model), grads=True)
    for i, pred in enumerate(p.predict(TEXTS, return_maps=True)):
        M = pred.maps["feature_map"]                                                  # (layer, head, filter, token)
        for layer in range(2):
            want = M[layer][..., :len(pred.tokens)].mean(-1).reshape(-1)              # (head * filter,)
            np.testing.assert_allclose(A[layer][i], want, rtol=1e-4, atol=1e-6)
        assert p.labels[int(preds[i])] == pred.label


def test_kim_cnn_gradient_is_the_classifiers_row(shipped_predictors):
    """Kim CNN's pooled filters feed a linear classifier: d logit_c / d features = its weight row c."""
    p = shipped_predictors["kim_cnn-sst2"]
    A, G, preds = T.collect(as_source(p), TEXTS, T.sites(p.model), grads=True)
    W = p.model.fc.weight.detach().double().numpy()                                   # (K, F)
    np.testing.assert_allclose(G[0], W[preds], rtol=1e-6)


def _shift(model, site, v: torch.Tensor, eps: float):
    """Edits/hooks adding eps * v at every position the site's pooling reads (what a directional derivative of
    the pooled activation means); returns (edits, handles)."""
    fam = model.registry_name
    if fam == "act":
        layer = int(site.name.split()[1]) - 1
        h, m = model.config.n_heads, model.config.n_filters

        def fn(t, layer_=None, mask=None):
            if layer_ != layer:
                return t
            return t + eps * v.view(h, m)[None, :, :, None] * mask[:, None, None, :].to(t.dtype)
        return {"feature_map": lambda t, layer=None, mask=None: fn(t, layer, mask)}, [], None
    if fam == "agcnn":
        F = model.config.n_filters
        edits = {}
        for j, (name, _) in enumerate(site.keys):
            part = v[j * F:(j + 1) * F]
            edits[name] = lambda t, layer=None, mask=None, part=part: t + eps * part[None, :, None] * mask[:, None, :]
        return edits, [], None

    def hook(module, args, out):
        first = out if isinstance(out, torch.Tensor) else out[0]
        real = hook.real(first.shape[1])                                              # (B, T)
        new = first + eps * v * real[..., None].to(first.dtype)
        return new if isinstance(out, torch.Tensor) else (new,) + tuple(out[1:])
    return {}, [site.module.register_forward_hook(hook)], hook


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    """A tiny BERT built from a config (random weights, no download)."""
    from hf_toys import tiny_folder
    from textcls.checkpoint import load_checkpoint
    return load_checkpoint(tiny_folder(tmp_path_factory.mktemp("tcav_hf"), "bert"), device="cpu")


@pytest.mark.parametrize("ckpt,layer,pooling", [
    ("act-sst2", "layer 1 filters", "mean"), ("agcnn-sst2", "window 3 gated", "mean"),
    ("transformer-sst2", "block 1", "mean"), ("hcan-sst2", "sentence level", "mean"),
    ("tiny-bert", "layer 1", "mean"), ("tiny-bert", "layer 2", "cls")])
def test_directional_derivative_is_the_logits_finite_difference(ckpt, layer, pooling, shipped_predictors, tiny_bert):
    """grad . v (the summed gradient dotted with a direction) = d logit / d eps when eps * v is added at every
    position the pooling reads (cls: position 0 only): the meaning of a directional derivative of the pooled
    activation."""
    p = tiny_bert if ckpt == "tiny-bert" else shipped_predictors[ckpt]
    src, model = as_source(p), p.model
    (site,) = T.choose(T.sites(model), layer)
    A, G, preds = T.collect(src, TEXTS, [site], pooling=pooling, grads=True)
    enc = src.encode(TEXTS)
    ids, mask = enc.token_ids, enc.mask.bool()
    v = torch.randn(A[0].shape[1], generator=torch.Generator().manual_seed(0))
    v = v / v.norm() * float(np.abs(A[0]).mean()) * 10

    def logit(eps):
        edits, handles, hook = _shift(model, site, v, eps)
        if hook is not None and pooling == "cls":
            hook.real = lambda n: torch.arange(n)[None].expand(len(TEXTS), n) == 0       # (B, T) position 0
        elif hook is not None:
            hook.real = lambda n: site.real(ids, mask, n, None)
        try:
            with torch.no_grad():
                out = model(ids, mask, edits=edits or None).logits.double()            # (B, K)
        finally:
            for h in handles:
                h.remove()
        return out.gather(1, torch.as_tensor(preds)[:, None]).squeeze(1).numpy()     # (B,)
    eps = 1e-2
    fd = (logit(eps) - logit(-eps)) / (2 * eps)
    np.testing.assert_allclose(G[0] @ v.double().numpy(), fd, rtol=0.03, atol=1e-3)


def test_hugging_face_layers_mean_and_cls(tiny_bert, shipped_predictors):
    """A tiny BERT: one layer per encoder layer, each with a [CLS] position (cls pooling); an ACT has none."""
    p = tiny_bert
    sites = T.sites(p.model)
    assert [s.name for s in sites] == ["layer 1", "layer 2"] and all(s.cls for s in sites)
    src = as_source(p)
    mean, _, _ = T.collect(src, TEXTS[:2], sites, pooling="mean", grads=False)
    cls, gcls, _ = T.collect(src, TEXTS[:2], sites, pooling="cls", grads=True)
    assert mean[1].shape == cls[1].shape == (2, 32) and not np.allclose(mean[1], cls[1])
    assert np.abs(gcls[1]).sum() > 0
    act = shipped_predictors["act-sst2"]
    with pytest.raises(T.TcavError, match="no \\[CLS\\] position"):
        T.collect(as_source(act), TEXTS[:1], T.sites(act.model), pooling="cls")


# ---------------------------------------------------------------- the known answer (Captum's TCAV NLP tutorial)

def test_positive_adjectives_matter_for_the_positive_class_and_random_words_do_not(shipped_predictors):
    """Kim CNN on sst2 (500 test texts, seed 0): positive adjectives in neutral contexts push the positive class
    (high score, significant), negative ones push against it (low, significant), random words in the same contexts
    are not significant. (Over 10 seeds: 9, 10 and 1 of 10 significant - docs/tcav.md.)"""
    p = shipped_predictors["kim_cnn-sst2"]
    got = {}
    for c in ("positive", "negative", "random_words"):
        r = run_interpreter(p, "tcav", {"concept": c, "data": "sst2", "limit": 500}, {"label": "positive"})
        (got[c],) = r.rows
        assert r.n_concept == 40 and r.n_texts == 500 and r.n_per_run == 40 and r.runs == 15
    pos, neg, rnd = got["positive"], got["negative"], got["random_words"]
    assert pos.significant and pos.score >= 0.8 and pos.score_mean > pos.random_mean + 0.3
    assert neg.significant and neg.score <= 0.2 and neg.score_mean < neg.random_mean - 0.2
    assert not rnd.significant and rnd.p_value > 0.05
    assert pos.random_mean == neg.random_mean == rnd.random_mean                      # the same random runs


# ---------------------------------------------------------------- the command and bad input

def test_shipped_concepts_resolve_by_name():
    assert set(shipped_concepts()) >= {"positive", "negative", "random_words", "random_sentences"}
    for name, path in shipped_concepts().items():
        texts = concept_of(name)
        assert len(texts) >= 3 and texts == concept_of(str(path))
    assert concept_of("a|b|c") == ["a", "b", "c"]


def test_the_command_gives_json_per_layer_and_one_line_for_bad_input(capsys, tmp_path):
    from textcls.cli import main
    ck = str(REPO / "checkpoints" / "act-sst2")
    assert main(["tcav", ck, "--concept", "positive", "--data", "sst2", "--limit", "60", "--runs", "3",
                 "--label", "positive", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["layers"] == ["layer 1 filters", "layer 2 filters"] and len(out["rows"]) == 2
    row = out["rows"][0]
    assert {"score", "random_mean", "p_value", "significant", "cav_accuracy"} <= set(row)
    assert 0 <= row["score"] <= 1 and 0 <= row["cav_accuracy"] <= 1 and len(out["scores"]["positive|layer 1 filters"]
                                                                             ["random"]) == 3
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    for args, says in (([" --concept", str(empty)], "at least 3 texts, got 0"),
                       (["--concept", "a film|a movie"], "at least 3 texts, got 2"),
                       (["--concept", "positive", "--label", "neutral"], "unknown label 'neutral'"),
                       (["--concept", "positive", "--layer", "block 9"], "unknown layer"),
                       (["--concept", "missing.txt"], "concept file missing.txt not found")):
        args = [a.strip() for a in args]
        assert main(["tcav", ck, *args, "--limit", "20"]) == 2
        err = capsys.readouterr().err.strip()
        assert says in err and "\n" not in err and "Traceback" not in err


def test_the_interpreter_refuses_a_model_it_cannot_read(shipped_predictors):
    class Other:
        model = torch.nn.Linear(2, 2)
        labels = ["a", "b"]
    from textcls.interpret.interpreters import why_not
    assert "six families" in why_not(Other(), "tcav")
    assert why_not(shipped_predictors["lama-sst2"], "tcav") is None
    with pytest.raises(InterpreterError, match="does not apply"):
        run_interpreter(Other(), "tcav", {"concept": "positive"}, {})


# ---------------------------------------------------------------- the page part

def _tcav_page():
    from pages.common import tcav_view
    from textcls.runtime.paths import REPO
    tcav_view.show(REPO / "checkpoints" / "kim_cnn-sst2", data="sst2", split="test")


def test_the_view_runs_on_a_click_and_shows_a_table_and_a_bar_per_class(monkeypatch):
    """The Concepts view (pages.common.tcav_view), in this process (TEXTCLS_WORKER=0): a shipped concept, Run,
    the table and the class's bars with the verdict; two typed texts are refused before anything runs."""
    from streamlit.testing.v1 import AppTest
    monkeypatch.setenv("TEXTCLS_WORKER", "0")
    at = AppTest.from_function(_tcav_page, default_timeout=120).run()
    assert not at.exception and at.selectbox(key="tcav_label").value == "positive"
    at.number_input(key="tcav_limit").set_value(100)
    at.number_input(key="tcav_runs").set_value(3)
    at.button(key="tcav_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    df = at.dataframe[0].value
    assert list(df["layer"]) == ["pooled filters"] and set(df["verdict"]) <= {"significant", "not significant"}
    assert any("3 runs and 3 random runs" in c.value for c in at.caption)
    at.radio(key="tcav_source").set_value("Texts typed here").run()
    at.text_area(key="tcav_typed").set_value("good\nbad").run()
    assert any("at least 3 texts; 2 given" in i.value for i in at.info)
