"""Interventions move outputs in the predicted direction on constructed cases, and never touch the model."""
import math

import numpy as np
import pytest
import torch

import textcls
from interpret_toys import ID, ToyAttention, ids_of, sigmoid, toy_tokenizer
from textcls.interpret import (AblateHead, Compose, ForceGate, PermuteAttention, SwapActivation, UniformAttention,
    ZeroFilter, compare_edit, edit_tokens, intervene, intervene_texts)
from textcls.interpret.instances import Instance


def small(name, **kw):
    torch.manual_seed(0)
    return textcls.create_model(name, vocab_size=len(ID), num_labels=2, preset="small", **kw).eval()


def inst_of(*words):
    ids = ids_of(*words)
    return Instance(ids, torch.ones_like(ids, dtype=torch.bool), list(words))


def snapshot(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def unchanged(model, snap):
    return all(torch.equal(snap[k], v) for k, v in model.state_dict().items())


def test_uniform_attention_dilutes_the_attended_word():
    model = ToyAttention().eval()
    r = intervene(model, inst_of("the", "good", "movie", "plot"), UniformAttention())
    e = math.exp(2)
    assert r.probs_before[1] == pytest.approx(sigmoid(3 * e / (3 + e)), abs=1e-6)
    assert r.probs_after[1] == pytest.approx(sigmoid(3 / 4), abs=1e-6)       # predicted: down to sigmoid(3/4)
    assert r.shift(1) < 0 and not r.flipped
    np.testing.assert_allclose(r.maps_after["alpha"], [0.25] * 4, atol=1e-7)


def test_permuted_attention_moves_weight_off_the_attended_word():
    model = ToyAttention().eval()
    r = intervene(model, inst_of("good", "the", "movie"), PermuteAttention(seed=0))
    assert sorted(r.maps_after["alpha"].tolist()) == pytest.approx(sorted(r.maps_before["alpha"].tolist()))
    if r.maps_after["alpha"][0] != pytest.approx(r.maps_before["alpha"][0]):
        assert r.shift(1) < 0                        # "good" lost weight: p(positive) must fall


@pytest.mark.parametrize("name", ["transformer", "lama", "can"])
def test_ablating_every_head_cuts_the_input_off(name):
    model = small(name)
    heads = model.config.n_heads
    cut = Compose(*[AblateHead(h) for h in range(heads)])
    a = intervene(model, inst_of("the", "good", "movie"), cut)
    b = intervene(model, inst_of("bad", "plot"), cut)
    assert not np.allclose(a.probs_before, b.probs_before)
    np.testing.assert_allclose(a.probs_after, b.probs_after, atol=1e-6)   # nothing from the tokens gets through


def test_ablating_one_head_zeroes_only_that_head():
    model = small("transformer")
    r = intervene(model, inst_of("the", "good", "movie"), AblateHead(1, layer=0))
    att = r.maps_after["attention"]                  # (layer, head, L, L)
    assert np.all(att[0, 1] == 0) and np.all(att[0, 0] > 0)
    np.testing.assert_allclose(att[1, 1].sum(-1) + r.maps_after["attention_to_cls"][1, 1], 1, atol=1e-5)


def test_zero_filter_changes_logits_exactly_by_its_pooled_contribution():
    model = small("kim_cnn")
    inst = inst_of("the", "good", "movie", "plot")
    with torch.no_grad():
        out = model(*inst.batch(), return_maps=True)
    h, f = model.config.windows[0], 3
    act = out.maps[f"conv_h{h}"][0, f]
    pooled = act[out.maps[f"argmax_h{h}"][0, f]].item()
    col = f                                           # features: window 0's filters first
    with torch.no_grad():
        after = model(*inst.batch(), edits=ZeroFilter(f"conv_h{h}", f).edits(model)).logits[0]
    want = out.logits[0] - model.fc.weight[:, col] * pooled
    torch.testing.assert_close(after, want, atol=1e-5, rtol=1e-5)


def test_agcnn_gates_forced_shut_make_the_output_constant_and_open_gates_are_ones():
    model = small("agcnn")
    snap = snapshot(model)
    a = intervene(model, inst_of("the", "good", "movie"), ForceGate(0.0))
    b = intervene(model, inst_of("bad", "plot", "very", "bad", "a"), ForceGate(0.0))
    np.testing.assert_allclose(a.probs_after, b.probs_after, atol=1e-6)
    np.testing.assert_allclose(a.probs_after, torch.softmax(model.fc.bias, 0).detach().numpy(), atol=1e-6)
    o = intervene(model, inst_of("the", "good", "movie", "plot", "a"), ForceGate(1.0))
    for k, v in o.maps_after.items():
        if k.startswith("gate_h1_"):
            assert np.all(v == 1.0)                   # h = 1: every position is a valid window
            np.testing.assert_allclose(o.maps_after[k.replace("gate_", "gated_")], o.maps_after["conv_h1"])
    assert unchanged(model, snap)


def test_swap_activation_uses_a_copy():
    model = small("agcnn")
    snap = snapshot(model)
    r = intervene(model, inst_of("the", "good", "movie", "plot", "a"), SwapActivation("relu"))
    assert model.config.activation == "nlrelu" and unchanged(model, snap)
    pre, post = r.maps_after["conv_pre_h1"], r.maps_after["conv_h1"]
    np.testing.assert_allclose(post, np.maximum(pre, 0), atol=1e-6)      # the copy computes ReLU
    np.testing.assert_allclose(r.maps_before["conv_h1"], np.log1p(np.maximum(r.maps_before["conv_pre_h1"], 0)),
                               atol=1e-6)
    assert r.tvd > 0


def test_act_head_ablation_zeroes_the_head_feature_map():
    model = small("act")
    r = intervene(model, inst_of("the", "good", "movie"), AblateHead(0))
    assert np.all(r.maps_after["feature_map"][:, 0] == 0) and np.any(r.maps_after["feature_map"][:, 1] != 0)


def test_clear_errors():
    kim = small("kim_cnn")
    with pytest.raises(ValueError, match="no attention map"):
        intervene(kim, inst_of("good"), UniformAttention())
    with pytest.raises(ValueError, match="no gate"):
        intervene(kim, inst_of("good"), ForceGate(1.0))
    with pytest.raises(ValueError, match="maps with filters"):
        intervene(kim, inst_of("good"), ZeroFilter("nope", 0))
    with pytest.raises(ValueError, match="no field"):
        intervene(kim, inst_of("good"), SwapActivation("relu"))


def test_compare_edit_across_models():
    tok = toy_tokenizer()
    toy = ToyAttention().eval()
    sources = {"toy": (toy, tok), "kim": (small("kim_cnn"), tok), "lama": (small("lama"), tok)}
    text = "the good movie"
    edited = edit_tokens(["the", "good", "movie"], 1, "bad")
    assert edited == "the bad movie" and edit_tokens(["the", "good", "movie"], 1) == "the movie"
    res = compare_edit(sources, text, edited, return_maps=True)
    assert [r.model for r in res] == ["toy", "kim", "lama"]
    toy_r = res[0]
    assert toy_r.flipped and toy_r.label_before == 1 and toy_r.label_after == 0
    assert toy_r.tokens_after == ["the", "bad", "movie"]
    np.testing.assert_allclose(toy_r.importance_before, toy_r.importance_after)   # same attention scores
    assert res[1].importance_before is not None and res[1].importance_before.shape == (3,)
    assert "attention" in res[2].maps_after
    hcan = small("hcan")
    (r,) = compare_edit({"hcan": (hcan, toy_tokenizer(True))}, "good movie . the plot", "bad movie . the plot")
    assert r.tokens_before == ["good", "movie", ".", "the", "plot"] and r.importance_after.shape == (5,)


def test_intervene_texts():
    res = intervene_texts((ToyAttention().eval(), toy_tokenizer()), ["good movie", "bad plot"], UniformAttention())
    assert res[0].shift(1) < 0 and res[1].shift(1) > 0   # both move towards the middle


# ---------------------------------------------------------------- what each family declares (no page guesses a field)

@pytest.mark.parametrize("name", textcls.list_models())
def test_declared_interventions_match_the_maps_and_every_one_runs(name):
    """`model.interventions()` declares head, layer and filter counts: they equal the sizes of the maps' axes, and
    every intervention `menu` offers builds and runs without touching the model."""
    from textcls.interpret import interventions as IV
    model = small(name)
    hier = textcls.get_entry(name).input_kind == "sentences"
    words = ("the", "good", "movie", "plot", "not", "bad")
    ids = ids_of(*words)
    inst = (Instance(ids.view(2, 3), torch.ones(2, 3, dtype=torch.bool), list(words)) if hier
            else Instance(ids, torch.ones_like(ids, dtype=torch.bool), list(words)))
    offer = model.interventions()
    out = model(inst.ids.unsqueeze(0), inst.mask.unsqueeze(0), return_maps=True)
    specs = {s.name: s for s in model.map_specs()}
    for s in specs.values():
        if s.values not in ("real", "partial"):
            continue
        if "head" in s.axes and (s.kind == "attention" or "filter" in s.axes):
            assert out.maps[s.name].shape[1 + s.axes.index("head")] == offer.heads, s.name
        if "layer" in s.axes and offer.layers:
            assert out.maps[s.name].shape[1 + s.axes.index("layer")] == offer.layers, s.name
    for fmap, n in offer.filters.items():
        assert out.maps[fmap].shape[1 + specs[fmap].axes.index("filter")] == n
    menu = IV.menu(model)
    assert menu, f"{name} offers nothing to intervene on"
    snap = snapshot(model)
    for kind in menu:
        iv = IV.build(model, kind, head=offer.heads - 1 if offer.heads else 0,
                      layer=offer.layers - 1 if offer.layers else None)
        r = intervene(model, inst, iv)
        assert np.isfinite(r.probs_after).all() and r.tvd >= 0, kind
    assert unchanged(model, snap)


def test_build_refuses_what_the_model_does_not_have():
    from textcls.interpret import interventions as IV
    cnn = small("kim_cnn")
    with pytest.raises(ValueError, match="offers no"):
        IV.build(cnn, IV.HEAD)
    with pytest.raises(ValueError, match="out of range"):
        IV.build(cnn, IV.FILTER, fmap=next(iter(cnn.interventions().filters)), filter=10_000)
    agcnn = small("agcnn")
    assert IV.ACTIVATION in IV.menu(agcnn) and len(agcnn.interventions().activations) == 10
    with pytest.raises(ValueError, match="unknown activation"):
        IV.build(agcnn, IV.ACTIVATION, activation="nope")
