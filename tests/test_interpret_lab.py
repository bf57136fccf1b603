"""The Lab's teaching demos (textcls.interpret.lab)."""
import math

import numpy as np
import pytest
import torch

import textcls
from interpret_toys import ID, ToyAttention, ids_of, sigmoid, toy_tokenizer
from textcls.interpret import lab
from textcls.interpret.instances import Instance


def test_activation_statistics_reproduce_fig2():
    rows = lab.activation_statistics()
    assert len(rows) == 4 * 2 * 10
    assert {r["weights"] for r in rows} == {"N(0, 1)", "N(0, 1.5)"}
    get = {(r["activation"], r["weights"], r["layer"]): r for r in rows}
    for w in ("N(0, 1)", "N(0, 1.5)"):
        relu = [get["relu", w, i]["variance"] for i in range(1, 11)]
        nl = [get["nlrelu", w, i]["variance"] for i in range(1, 11)]
        assert relu[-1] > 1e10 and all(b > a for a, b in zip(relu, relu[1:]))   # ReLU explodes layer by layer
        assert max(nl) < 10                                                     # NLReLU stays in a narrow band
        assert all(abs(get["tanh", w, i]["mean"]) < 1 for i in range(1, 11))
    assert get["relu", "N(0, 1.5)", 10]["variance"] > get["relu", "N(0, 1)", 10]["variance"]
    assert rows == lab.activation_statistics()                                  # seeded


def test_activation_statistics_first_layer_by_hand():
    # one layer of width 1, batch 2, identity activation: x W + b exactly
    rows = lab.activation_statistics(("identity",), weight_stds=(2.0,), n_layers=1, width=1, batch=2, seed=5)
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 1, generator=g, dtype=torch.float64)
    w = torch.randn(1, 1, generator=g, dtype=torch.float64) * 2.0
    y = x @ w + 0.1
    assert rows[0]["mean"] == pytest.approx(float(y.mean())) and rows[0]["variance"] == pytest.approx(float(y.var()))
    with pytest.raises(ValueError, match="unknown activation"):
        lab.activation_statistics(("swish",))


def test_negation_demo_on_the_hand_made_model():
    rows = lab.negation_demo({"toy": (ToyAttention().eval(), toy_tokenizer())}, ["good", "not good", "bad"])
    by = {r["sentence"]: r for r in rows}
    e = math.exp(1)
    assert by["good"]["p_positive"] == pytest.approx(sigmoid(3), abs=1e-6)
    # "not" (score 1, value 0) takes part of the attention: logit 3 e^2 / (e + e^2)
    assert by["not good"]["p_positive"] == pytest.approx(sigmoid(3 * e * e / (e + e * e)), abs=1e-6)
    assert by["bad"]["p_positive"] < 0.5 and by["bad"]["label"] == "0"
    np.testing.assert_allclose(by["not good"]["importance"], [e / (e + e * e), e * e / (e + e * e)], atol=1e-6)
    assert lab.positive_index(["negative", "positive"]) == 1 and lab.positive_index(["pos", "neg"]) == 0
    assert set(lab.DEMO_TEXT) == {"activations", "negation", "hcan", "gates"}


@pytest.mark.parametrize("name", ["hcan", "can"])
def test_hcan_branches(name):
    torch.manual_seed(0)
    model = textcls.create_model(name, vocab_size=len(ID), num_labels=2, preset="small").eval()
    tok = toy_tokenizer(hierarchical=name == "hcan")
    enc = tok.encode(["the good movie . not very bad"])
    (inst,) = Instance.from_batch(enc.token_ids, enc.mask, enc.tokens)
    r = lab.hcan_branches(model, inst, word=5)
    n = inst.n
    for k in ("norm_a", "norm_b", "norm_product", "gate_b", "sign_flip_share"):
        assert r[k].shape == (n,)
    assert np.all(r["gate_b"] <= 1)                       # tanh branch
    if name == "hcan":                                    # word 5 ("very") is in sentence 1: rows over its 3 words
        assert r["row_tokens"] == ["not", "very", "bad"] and r["row_a"].shape == (3,)
    assert r["row_a"].sum() == pytest.approx(1, abs=1e-5) and r["row_b"].sum() == pytest.approx(1, abs=1e-5)
    lvl = model.word_level if name == "hcan" else model.level
    assert not lvl.branch_a._forward_hooks and not lvl.branch_b._forward_hooks     # recorder hooks removed
    one = textcls.create_model(name, vocab_size=len(ID), num_labels=2, preset="small",
                               variant="one_self_attention").eval()
    with pytest.raises(ValueError, match="one self-attention"):
        lab.hcan_branches(one, inst)


def test_gate_suppression():
    torch.manual_seed(0)
    model = textcls.create_model("agcnn", vocab_size=len(ID), num_labels=2, preset="small").eval()
    ids = ids_of("the", "good", "movie", "not", "bad", "plot")
    r = lab.gate_suppression(model, Instance(ids, ids != 0))
    gates = [s.name for s in model.map_specs() if s.kind == "gate"]
    assert [row["map"] for row in r["rows"]] == gates
    for row in r["rows"]:
        assert 0 <= row["suppressed"] <= 1 and 0 <= row["closed"] <= row["suppressed"] + 1e-12
        assert 0 <= row["picks_moved"] <= 1
    assert r["profile"][gates[0]].shape == (6,)
    np.testing.assert_allclose(r["probs_gates_closed"], torch.softmax(model.fc.bias, 0).detach().numpy(),
                               atol=1e-6)
    with pytest.raises(ValueError, match="no gates"):
        lab.gate_suppression(ToyAttention().eval(), Instance(ids, ids != 0))
