"""Captum attributions and each model's own attention importance (textcls.interpret.attributions / attention)."""
import math

import numpy as np
import pytest
import torch
from captum.attr import LayerIntegratedGradients

import textcls
from interpret_toys import ID, ToyAttention, ToyLinear, ids_of, toy_tokenizer
from textcls.interpret import METHODS, attention_importance, attribute, attribute_texts
from textcls.interpret.instances import Instance
from textcls.interpret import importance
from textcls.models.outputs import MapSpec
from textcls.models.registry import get_entry

MODELS = textcls.list_models()
VOCAB = 40


def small(name, vocab=VOCAB, **kw):
    torch.manual_seed(0)
    return textcls.create_model(name, vocab_size=vocab, num_labels=3, preset="small", **kw).eval()


def batch_for(name):
    """Two examples, the second padded (flat) or with a short and an empty sentence (hierarchical)."""
    g = torch.Generator().manual_seed(3)
    if get_entry(name).input_kind == "sentences":
        ids = torch.randint(2, VOCAB, (2, 3, 4), generator=g)
        ids[1, 1, 2:] = 0
        ids[1, 2] = 0
    else:
        ids = torch.randint(2, VOCAB, (2, 8), generator=g)
        ids[1, 5:] = 0
    return ids, ids != 0


# ---------------------------------------------------------------- hand-computed cases

def test_ig_is_exact_on_a_linear_model():
    model = ToyLinear().eval()
    ids = ids_of("the", "good", "movie", "bad")[None]
    expected = (model.w(model.embed(ids)).squeeze(-1))[0].detach().double().numpy()   # w . e_t
    for baseline in ("zero", "pad"):  # the pad row is zero in this model, so both are the zero vector
        (a,) = attribute(model, ids, method="ig", baseline=baseline, output="logit", target=1)
        np.testing.assert_allclose(a.scores, expected, atol=1e-5)
        assert a.n_steps == 50 and a.converged and abs(a.delta) < 1e-5
        assert a.output == pytest.approx(expected.sum(), abs=1e-5) and a.baseline_output == pytest.approx(0.0)


def test_occlusion_and_shapley_hand_computed_on_a_linear_model():
    model = ToyLinear().eval()
    ids = ids_of("good", "movie", "bad")[None]
    expected = (model.w(model.embed(ids)).squeeze(-1))[0].detach().double().numpy()
    (occ,) = attribute(model, ids, method="occlusion", baseline="zero", output="logit", target=1)
    np.testing.assert_allclose(occ.scores, expected, atol=1e-5)   # removing token t removes exactly w . e_t
    (sh,) = attribute(model, ids, method="shapley", baseline="zero", output="logit", target=1, n_samples=3)
    np.testing.assert_allclose(sh.scores, expected, atol=1e-5)    # additive model: every order gives w . e_t
    (gx,) = attribute(model, ids, method="grad_x_input", output="logit", target=1)
    np.testing.assert_allclose(gx.scores, expected, atol=1e-5)
    (sal,) = attribute(model, ids, method="saliency", output="logit", target=1)
    np.testing.assert_allclose(sal.scores, np.full(3, model.w.weight.abs().sum().item()), atol=1e-5)


def test_lime_recovers_an_additive_model():
    model = ToyLinear().eval()
    ids = ids_of("good", "movie", "bad", "plot")[None]
    expected = (model.w(model.embed(ids)).squeeze(-1))[0].detach().double().numpy()
    (a,) = attribute(model, ids, method="lime", baseline="zero", output="logit", target=1, n_samples=300)
    np.testing.assert_allclose(a.scores, expected, atol=0.05 * np.abs(expected).max())


def test_target_defaults_to_the_prediction_and_can_be_set():
    model = ToyAttention().eval()
    ids = ids_of("the", "bad", "movie")[None]
    (a,) = attribute(model, ids, method="saliency")
    assert a.target == 0                       # "bad" -> logit_1 < 0 -> class 0
    (b,) = attribute(model, ids, method="saliency", target=1)
    assert b.target == 1
    with pytest.raises(ValueError, match="out of range"):
        attribute(model, ids, method="saliency", target=5)


# ---------------------------------------------------------------- every model

@pytest.mark.parametrize("name", MODELS)
def test_ig_completeness_and_reported_delta(name):
    model = small(name)
    ids, mask = batch_for(name)
    res = attribute(model, ids, mask, method="ig", tolerance=0.05)
    for a in res:
        diff = a.output - a.baseline_output
        # the reported delta IS the completeness gap
        assert abs(a.total - diff) == pytest.approx(abs(a.delta), abs=2e-6)
        if a.converged:
            assert abs(a.delta) <= 0.05 * abs(diff) + 1e-4
        else:
            assert a.n_steps == 800


# batch-level methods on every model; the per-example ones (shapley, lime) on a flat and the hierarchical model
BATCH_CASES = [(n, m) for n in MODELS for m in ("integrated_gradients", "occlusion", "grad_x_input")] + \
    [(n, m) for n in ("kim_cnn", "hcan") for m in ("saliency", "shapley", "lime")]


@pytest.mark.parametrize("name,method", BATCH_CASES)
def test_batched_and_single_results_agree(name, method):
    model = small(name)
    ids, mask = batch_for(name)
    kw = dict(n_samples=4) if method in ("shapley", "lime") else {}
    batched = attribute(model, ids, mask, method=method, **kw)
    for b in range(ids.shape[0]):
        inst = Instance(ids[b], mask[b])
        # crop the single example to its own extent
        keep = tuple(slice(0, int(n)) for n in (inst.positions.max(0).values + 1))
        (single,) = attribute(model, ids[b][keep], mask[b][keep], method=method, **kw)
        assert batched[b].scores.shape == (int(mask[b].sum()),)
        np.testing.assert_allclose(batched[b].scores, single.scores, atol=2e-5, rtol=1e-4)
        assert batched[b].target == single.target


@pytest.mark.parametrize("name", ["kim_cnn", "lama", "hcan"])
def test_same_as_captums_layer_integrated_gradients_on_model_embed(name):
    model = small(name)
    ids, mask = batch_for(name)

    def fwd(i, m):
        return torch.softmax(model(i, m).logits, -1)

    target = model(ids, mask).logits.argmax(-1)
    lig = LayerIntegratedGradients(fwd, model.embed)
    ref = lig.attribute(ids, baselines=torch.zeros_like(ids), target=target, additional_forward_args=(mask,),
                        n_steps=50).sum(-1)
    ours = attribute(model, ids, mask, method="ig", tolerance=1e9)  # no escalation: 50 steps
    for b, a in enumerate(ours):
        np.testing.assert_allclose(a.scores, ref[b][mask[b]].detach().double().numpy(), atol=1e-5)


def test_ig_steps_escalate_until_tolerance_or_cap():
    model = small("kim_cnn")
    ids, mask = batch_for("kim_cnn")
    loose = attribute(model, ids, mask, method="ig", tolerance=10.0)
    assert all(a.n_steps == 50 and a.converged for a in loose)
    strict = attribute(model, ids, mask, method="ig", tolerance=0.0, atol=0.0, max_steps=200)
    assert all(a.n_steps == 200 and not a.converged for a in strict)
    # more steps shrink the gap
    assert np.mean([abs(a.delta) for a in strict]) <= np.mean([abs(a.delta) for a in loose]) + 1e-9


def test_shapley_scores_sum_to_the_output_difference():
    model = small("lama")
    ids, mask = batch_for("lama")
    for a in attribute(model, ids, mask, method="shapley", n_samples=3, baseline="unk"):
        assert a.total == pytest.approx(a.output - a.baseline_output, abs=1e-5)


def test_baselines_differ_and_bad_arguments_are_clear():
    model = small("kim_cnn")
    ids, mask = batch_for("kim_cnn")
    pad = attribute(model, ids, mask, method="ig", baseline="pad")[0].scores
    unk = attribute(model, ids, mask, method="ig", baseline="unk")[0].scores
    assert not np.allclose(pad, unk)
    with pytest.raises(ValueError, match="unknown attribution method"):
        attribute(model, ids, mask, method="gradcam")
    with pytest.raises(ValueError, match="unknown baseline"):
        attribute(model, ids, mask, method="ig", baseline="mean")
    with pytest.raises(ValueError, match="training mode"):
        attribute(model.train(), ids, mask, method="ig")


def test_hcan_scores_follow_the_sentence_by_sentence_token_order():
    model = small("hcan", vocab=len(ID))
    tok = toy_tokenizer(hierarchical=True)
    texts = ["the good movie . not very bad", "a plot ."]
    res = attribute_texts((model, tok), texts, method="grad_x_input")
    enc = tok.encode(texts)
    for b, a in enumerate(res):
        assert a.tokens == enc.tokens[b]
        assert a.grid.shape == tuple(enc.token_ids.shape[1:])
        np.testing.assert_allclose(a.grid[enc.mask[b].numpy()], a.scores)      # row-major = token order
        assert np.all(a.grid[~enc.mask[b].numpy()] == 0)
    assert res[0].tokens == ["the", "good", "movie", ".", "not", "very", "bad"]


def test_no_hook_is_left_on_the_model():
    model = small("kim_cnn")
    ids, mask = batch_for("kim_cnn")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    for method in METHODS:
        attribute(model, ids, mask, method=method, n_samples=2)
    assert not model.embed._forward_hooks
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters())


# ---------------------------------------------------------------- the model's own attention

def test_attention_importance_is_alpha_for_a_pooling_attention():
    model = ToyAttention().eval()
    ids = ids_of("the", "good", "movie")[None]
    (a,) = attention_importance(model, ids)
    e = math.exp(2)
    np.testing.assert_allclose(a.scores, [1 / (2 + e), e / (2 + e), 1 / (2 + e)], atol=1e-6)
    assert a.method == "attention" and "alpha" in a.extras["source"]


def test_cnn_coverage_and_activation_by_hand():
    specs = {"argmax_h2": MapSpec("argmax_h2", ("filter",), "feature_map", values="index"),
             "conv_h2": MapSpec("conv_h2", ("filter", "token"), "activation")}
    conv = np.zeros((3, 5))
    conv[0, 0], conv[1, 3], conv[2, 1] = 2.0, 0.5, 0.0             # filter 2's max is 0: it chose nothing
    maps = {"argmax_h2": np.array([0, 3, 1]), "conv_h2": conv}
    real = np.ones(5, dtype=bool)
    np.testing.assert_allclose(importance.importance_grid(specs, maps, real, "coverage"), [1, 1, 0, 1, 1])
    np.testing.assert_allclose(importance.importance_grid(specs, maps, real, "activation"), [2, 2, 0, 0.5, 0.5])
    real[4] = False                                                # a padded position gets nothing
    np.testing.assert_allclose(importance.importance_grid(specs, maps, real, "activation"), [2, 2, 0, 0.5, 0])


@pytest.mark.parametrize("name", MODELS)
def test_attention_importance_every_model(name):
    model = small(name)
    ids, mask = batch_for(name)
    res = attention_importance(model, ids, mask)
    for b, a in enumerate(res):
        assert a.scores.shape == (int(mask[b].sum()),)
        assert np.all(a.scores >= 0) and a.scores.sum() == pytest.approx(1.0)


def test_hcan_importance_is_beta_times_gamma():
    model = small("hcan")
    ids, mask = batch_for("hcan")
    with torch.no_grad():
        maps = model(ids, mask, return_maps=True).maps
    want = maps["beta"].mean(2) * maps["gamma"].mean(1).unsqueeze(-1)        # (B, S, W)
    for b, a in enumerate(attention_importance(model, ids, mask)):
        v = want[b][mask[b]].double().numpy()
        np.testing.assert_allclose(a.scores, v / v.sum(), atol=1e-6)


def test_rollout_of_a_single_identity_layer_is_uniform_received_attention():
    from textcls.interpret.importance import _rollout
    att = np.broadcast_to(np.eye(3), (1, 2, 3, 3))                          # (N=1, h=2, L, L)
    r = _rollout({"attention": att}, np.ones(3, dtype=bool))
    np.testing.assert_allclose(r, [1 / 3] * 3, atol=1e-6)


@pytest.mark.parametrize("ckpt", ["act-sst2", "hcan-sst2", "kim_cnn-sst2"])
@pytest.mark.parametrize("method", ["saliency", "grad_x_input"])
def test_gradient_methods_take_one_forward_pass_and_equal_captums(ckpt, method, shipped_predictors):
    """Saliency and gradient x input come from one forward and one backward pass (the target, the runner-up and
    F(x) from the same pass), and equal Captum's Saliency / InputXGradient exactly, with and without a contrast."""
    from textcls.interpret import as_source
    from textcls.interpret.attributions import _foils, _targets, _gradient, _per_example, token_attributions
    from textcls.interpret.contrastive import RUNNER_UP
    from textcls.interpret.embedding_forward import EmbeddingForward
    from textcls.interpret.instances import stack
    p = shipped_predictors[ckpt]
    ids, mask = stack(as_source(p).instances(["not a good film at all", "superb", "a dull , lifeless film . bad"]))
    f = EmbeddingForward(p.model, output="prob")
    calls = []
    hook = p.model.register_forward_hook(lambda *a: calls.append(1))
    try:
        for contrast in (None, RUNNER_UP):
            calls.clear()
            new = _gradient(f, ids, mask, method, None, contrast)
            assert len(calls) == 1
            emb = f.embed(ids)
            t = _targets(f, emb, ids, mask, None)
            foils = _foils(f, ids, mask, t, contrast)
            tok, _ = token_attributions(f, method, emb, None, ids, mask, t, foils=foils)
            for a, b in zip(new, _per_example(tok, mask)):
                assert np.array_equal(a.scores, b)
            assert [a.target for a in new] == t.tolist()
    finally:
        hook.remove()
