"""Plausibility (SST word evidence, AUPRC, token F1) and the cascading randomisation sanity check, each against
its definition on a case whose answer is known."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import textcls
from textcls.data.word_polarity import word_polarity
from textcls.interpret.instances import Instance
from textcls.interpret.plausibility import (evidence_labels, human_evidence, mean_plausibility, plausibility,
    token_f1)
from textcls.interpret.sanity import cascade_units, cascading_randomisation, spearman


def test_the_shipped_word_table_holds_sst_polar_words_only():
    table = word_polarity()
    assert len(table) == 4255 and set(table.values()) == {"negative", "positive"}
    assert table["wonderful"] == "positive" and table["dull"] == "negative" and "the" not in table


def test_evidence_is_the_words_polar_in_the_gold_direction():
    words = ["not", "a", "dull", "film", "but", "wonderful"]
    table = {"dull": "negative", "wonderful": "positive"}
    assert human_evidence(words, "positive", table).tolist() == [0, 0, 0, 0, 0, 1]
    assert human_evidence(words, "negative", table).tolist() == [0, 0, 1, 0, 0, 0]


def test_auprc_and_token_f1_by_hand():
    table = {"good": "positive", "fun": "positive"}
    words = ["a", "good", "and", "fun", "film"]
    perfect = plausibility(words, [0.0, 0.5, 0.1, 0.4, 0.0], "positive", table)
    assert perfect["auprc"] == 1.0 and perfect["token_f1"] == 1.0 and perfect["n_evidence"] == 2
    # ranks: fun (1st, evidence), film (2nd), good (3rd, evidence): AP = (1/1 + 2/3) / 2
    half = plausibility(words, [0.0, 0.3, 0.1, 0.9, 0.5], "positive", table)
    assert half["auprc"] == pytest.approx((1 + 2 / 3) / 2)
    assert half["token_f1"] == pytest.approx(0.5)                            # top-2 = {fun, film}: P = R = 1/2
    assert plausibility(["a", "film"], [0.5, 0.5], "positive", table) is None  # no evidence word
    assert token_f1(np.array([True, False]), np.array([0.0, 1.0])) == 0.0


def test_mean_plausibility_and_tasks_without_word_labels():
    got = mean_plausibility([(["a", "wonderful", "film"], [0.1, 0.8, 0.1], "positive"),
                             (["a", "film"], [0.5, 0.5], "negative")])
    assert got == {"plausibility_auprc": 1.0, "plausibility_token_f1": 1.0, "plausibility_n": 1}
    assert evidence_labels(["negative", "positive"]) is None
    assert "SST" in evidence_labels(["ABBR", "DESC", "ENTY"])


def _model():
    torch.manual_seed(0)
    return textcls.create_model("transformer", vocab_size=30, num_labels=2, preset="small", pooling="cls").eval()


def test_cascade_goes_from_the_output_down_and_restores_the_weights():
    model = _model()
    names = [n for n, _ in cascade_units(model)]
    assert names == ["out", "norm", "layers.1", "layers.0", "embed"]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    insts = Instance.from_batch(torch.tensor([[3, 4, 5, 6, 7], [8, 9, 10, 0, 0]]))

    def word_identity(m, xs, method):          # depends on the input only: must be flagged
        return [x.ids[x.mask].float().numpy() for x in xs]

    def from_model(m, xs, method):             # reads the weights: changes once they are random
        out = m(torch.stack([x.ids for x in xs]), torch.stack([x.mask for x in xs]), return_maps=True)
        w = out.maps["cls_attention"][:, -1].mean(1)                        # (B, L)
        return [w[i][x.mask].detach().numpy() for i, x in enumerate(xs)]
    got = cascading_randomisation(model, insts, ["identity"], word_identity)
    assert got["stages"] == names and got["final"]["identity"] == pytest.approx(1.0)
    assert got["flagged"] == ["identity"]
    got = cascading_randomisation(model, insts, ["cls"], from_model, seed=1)
    assert got["final"]["cls"] < 0.9 and got["flagged"] == []
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())


def test_spearman_by_hand():
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(spearman([1, 1, 1], [1, 2, 3]))
