"""How concentrated attention is (textcls.interpret.concentration), and every attention view's verdict matching the entropy
it reports - recomputed here from the numbers the figure exports."""
from __future__ import annotations

import math

import numpy as np
import pytest

import textcls
from textcls import viz
from textcls.interpret.concentration import BANDS, concentration, verdict
from tests.test_viz import model_output


def test_uniform_one_hot_and_the_bands():
    u = concentration(np.ones(8))
    assert u.entropy == pytest.approx(1.0) and u.peak == pytest.approx(1.0) and u.effective == pytest.approx(8)
    assert u.verdict == "nearly uniform: this attention does not single out words"
    one = concentration([0, 0, 1.0, 0], ["a", "b", "c", "d"])
    assert one.entropy == pytest.approx(0.0) and one.peak == pytest.approx(4.0) and one.top[0] == "c"
    assert one.verdict == "peaked on about 1 of 4 words" and "'c'" in one.sentence()
    w = np.array([0.4, 0.4, 0.1, 0.1])
    h = -(w * np.log(w)).sum()
    c = concentration(w)
    assert c.entropy == pytest.approx(h / math.log(4)) and c.effective == pytest.approx(math.exp(h))
    assert verdict(BANDS[0], 5, 10) .startswith("nearly uniform")
    assert verdict(BANDS[1], 7.4, 10) == "weakly peaked: spread over about 7 of 10 words"
    assert verdict(BANDS[1] - 1e-9, 2.6, 10) == "peaked on about 3 of 10 words"
    assert concentration([1.0], unit="sentence").verdict == "a single sentence: nothing to compare"


def test_several_and_ragged_distributions_give_the_median():
    rows = np.array([[1, 0, 0, 0], [1, 1, 1, 1], [1, 1, 0, 0]], dtype=float)
    c = concentration(rows)
    assert c.count == 3 and c.entropy == pytest.approx(0.5)        # median of 0, 1, 0.5
    r = concentration([np.ones((2, 3)), np.array([[1.0, 0.0]])])
    assert c.n == 4 and r.count == 3 and r.entropy == pytest.approx(1.0) and r.n == 3


ATTENTION_VIEWS = {"act": "ACT-T4", "transformer": "TR-ATT", "hcan": "HCAN-F4", "can": "HCAN-F4", "lama": "LAMA-HT"}


@pytest.mark.parametrize("name", sorted(ATTENTION_VIEWS))
def test_every_attention_view_states_a_verdict_that_matches_its_entropy(name):
    if name not in textcls.list_models():
        pytest.skip(f"model {name} not registered")
    specs, maps, tokens, sentences, config = model_output(name)
    vi = viz.ViewInput(name, specs, maps, tokens, sentences, title=name, label="positive", config=vars(config))
    figs = [f for f in viz.build_view(ATTENTION_VIEWS[name], vi) if "concentration" in f.meta]
    assert figs, name
    if name in ("act", "lama"):
        assert any(f.meta["concentration"]["over"] == "shaded" for f in figs)
    for f in figs:
        m = f.meta["concentration"]
        assert m["verdict"] == verdict(m["normalised_entropy"], m["effective"], m["n"],
                                       "sentence" if "sentence" in f.key else "word")
        assert f.caption.startswith("Concentration") and m["verdict"] in f.caption
        assert f"{m['normalised_entropy']:.2f}" in f.caption
        # the shaded-word figures export one weight per token: their entropy is the one reported
        if m["over"] == "shaded" and set(f.table.columns) >= {"row", "token", "weight"}:
            w = f.table["weight"].to_numpy(float)
            assert concentration(w).entropy == pytest.approx(m["normalised_entropy"], abs=1e-9)
