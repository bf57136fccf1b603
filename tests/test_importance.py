"""One per-token importance rule (textcls.interpret.importance) on every page: Compare's reasons and Inspect's ACT-T4 view
(from a Prediction's maps) and Attribute / Evaluate / the faithfulness metrics (interpret's "attention"
explanation, from a batch forward) give the same weights for the same checkpoint and text."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import textcls
from textcls.interpret import importance
from textcls import viz
from textcls.interpret import as_source
from textcls.interpret.methods import explanation

SHIPPED = Path(__file__).resolve().parents[1] / "checkpoints"
TEXT = ("The food was great and the staff were friendly. But the service was painfully slow! "
        "I would not come back.")


@pytest.fixture(scope="module", params=textcls.list_models())
def shipped(request, shipped_predictors):
    path = SHIPPED / f"{request.param}-sst2"
    if not path.exists():
        pytest.skip(f"no shipped {path.name}")
    return request.param, shipped_predictors[path.name]


def test_compare_inspect_and_attribute_shade_the_same_weights(shipped):
    name, pred = shipped
    p = pred.predict([TEXT], return_maps=True)[0]
    specs = {s.name: s for s in pred.model.map_specs()}
    w, source = viz.token_weights(specs, p.maps, p.tokens, p.sentences)        # Compare / Inspect
    assert w.shape == (len(p.tokens),) and w.sum() == pytest.approx(1.0) and np.all(w >= 0)
    inst = as_source(pred).instances([TEXT])[0]
    att = explanation(pred.model, inst, "attention", labels=pred.labels)        # Attribute / Evaluate / faithfulness
    assert list(att.tokens) == list(p.tokens)
    np.testing.assert_allclose(att.scores, w, atol=1e-6)
    assert att.extras["source"] == source
    # Compare's figure and Inspect's ACT-T4 view shade exactly these weights
    item = dict(name=name, model=name, specs=specs, maps=p.maps, tokens=p.tokens, sentences=p.sentences,
                label=p.label)
    np.testing.assert_allclose(viz.reasons_figure([item]).table["weight"], w, atol=1e-12)
    if "ACT-T4" in [v.id for v in viz.views_for(name, specs)]:
        fig = viz.build_view("ACT-T4", viz.ViewInput(name, specs, p.maps, list(p.tokens), p.sentences))[0]
        np.testing.assert_allclose(fig.table["weight"], w, atol=1e-12)


def test_padding_inside_a_batch_does_not_change_a_texts_weights(shipped):
    _, pred = shipped
    short, long = "a gripping film .", TEXT
    insts = as_source(pred).instances([short, long])
    from textcls.interpret.attention import attention_importance_instances
    together = attention_importance_instances(pred.model, insts)
    alone = attention_importance_instances(pred.model, insts[:1])
    np.testing.assert_allclose(together[0].scores, alone[0].scores, atol=1e-6)


RULE = {"act": "pooled", "agcnn": "cnn", "can": "pooled", "hcan": "hier", "kim_cnn": "cnn", "lama": "pooled",
        "transformer": "pooled"}


@pytest.mark.parametrize("name", textcls.list_models())
def test_each_model_reads_the_map_its_rule_names(name):
    model = textcls.create_model(name, vocab_size=30, num_labels=2, preset="small")
    kind, source = importance.plan({s.name: s for s in model.map_specs()})
    assert kind == RULE.get(name, kind) and source


def test_transformer_without_a_pooling_attention_uses_rollout():
    model = textcls.create_model("transformer", vocab_size=30, num_labels=2, preset="small", pooling="max")
    assert importance.plan({s.name: s for s in model.map_specs()})[0] == "rollout"
