"""Predictor: hostile texts, map cropping, batching, and never touching the shared model."""
import numpy as np
import pytest
import torch

import textcls
from textcls.inference import Prediction, Predictor
from textcls.models.registry import get_entry
from textcls.data.text import Tokenizer, TokenizerConfig

TRAIN = ["a great and moving film .", "a dull , tedious mess !", "great fun . truly great . see it",
         "not worth the ticket", "the cast is wonderful and the story is great"]
LABELS = ["negative", "positive"]
HOSTILE = {
    "empty": "",
    "spaces": "   \n\t ",
    "one char": "a",
    "huge": "great film " * 10_000 + "the end .",          # ~110,000 characters
    "emoji": "😀🎬 great 👍🏽 film",
    "control": "great\x00\x07\x1b[31m film\u200b\ufeff",
    "unknown words": "zxqv blorp quux flibber",
    "one sentence per word": "great . film ! awful ? " * 20,
}


def predictor(name, max_len=60):
    hier = get_entry(name).input_kind == "sentences"
    tok = Tokenizer.build(TRAIN, TokenizerConfig(hierarchical=hier, max_len=max_len, max_sentences=6, max_words=8))
    torch.manual_seed(0)
    model = textcls.create_model(name, vocab_size=len(tok.vocab), num_labels=2, preset="small")
    return Predictor(model, tok, LABELS, name=name)


def state(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("name", textcls.list_models())
def test_hostile_texts_get_a_prediction_with_cropped_maps(name):
    pred = predictor(name)
    before = state(pred.model)
    flags = {k: p.requires_grad for k, p in pred.model.named_parameters()}
    texts = list(HOSTILE.values())
    out = pred.predict(texts, return_maps=True, batch_size=3)
    assert len(out) == len(texts) and all(isinstance(p, Prediction) for p in out)
    specs = {s.name: s for s in pred.model.map_specs()}
    for key, p in zip(HOSTILE, out):
        probs = np.array(list(p.probabilities.values()))
        assert np.isfinite(probs).all() and probs.sum() == pytest.approx(1.0, abs=1e-5), key
        assert p.label in LABELS and p.probabilities[p.label] == probs.max()
        assert set(p.maps) == set(specs), key
        n = len(p.tokens)
        for mname, m in p.maps.items():
            assert isinstance(m, np.ndarray) and m.ndim == len(specs[mname].axes), (key, mname)
            assert np.isfinite(m.astype(float)).all(), (key, mname)
            for axis, size in zip(specs[mname].axes, m.shape):
                if axis.endswith("token"):
                    assert size == n, (key, mname, axis)
                elif axis.endswith("sentence"):
                    assert size == len(p.sentences), (key, mname)
                elif axis.endswith("word"):
                    assert size == max((len(s) for s in p.sentences), default=0), (key, mname)
    by = dict(zip(HOSTILE, out))
    assert by["empty"].tokens == [] and by["spaces"].tokens == [] and not by["empty"].truncated
    assert by["one char"].tokens == ["a"]
    assert by["huge"].truncated and not by["emoji"].truncated
    assert "\x00" not in "".join(by["control"].tokens)
    assert by["unknown words"].tokens == ["zxqv", "blorp", "quux", "flibber"]
    if get_entry(name).input_kind == "sentences":
        assert by["one sentence per word"].truncated and len(by["one sentence per word"].sentences) == 6
    else:
        assert len(by["huge"].tokens) == 60
    # the shared model is untouched: same weights, still in eval mode, same requires_grad flags
    after = state(pred.model)
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert not pred.model.training
    assert flags == {k: p.requires_grad for k, p in pred.model.named_parameters()}


@pytest.mark.parametrize("name", ["kim_cnn", "hcan"])
def test_batching_and_order_do_not_change_predictions(name):
    pred = predictor(name)
    texts = list(HOSTILE.values()) + TRAIN
    together = pred.predict(texts, batch_size=64)
    alone = [pred.predict([t])[0] for t in texts]
    reversed_ = pred.predict(texts[::-1], batch_size=2)[::-1]
    for a, b, c in zip(together, alone, reversed_):
        for lab in LABELS:
            assert a.probabilities[lab] == pytest.approx(b.probabilities[lab], abs=1e-5)
            assert a.probabilities[lab] == pytest.approx(c.probabilities[lab], abs=1e-5)
        assert a.tokens == b.tokens == c.tokens


def test_batches_are_predict_one_batch_at_a_time():
    """Predictor.batches gives every text's position once, shortest texts first, batch_size at most per batch,
    and the Predictions `predict` returns (the same batches; the thread setting may change the last bits)."""
    from textcls.runtime.threads import batch
    pred = predictor("kim_cnn")
    texts = list(HOSTILE.values()) + TRAIN
    with batch():
        whole = pred.predict(texts, batch_size=3)
        parts = list(pred.batches(texts, batch_size=3))
    seen = [i for index, _ in parts for i in index]
    assert sorted(seen) == list(range(len(texts))) and all(len(index) <= 3 for index, _ in parts)
    assert [len(texts[i]) for i in seen] == sorted(len(t) for t in texts)
    for index, preds in parts:
        for i, p in zip(index, preds):
            assert p.tokens == whole[i].tokens and p.label == whole[i].label
            assert p.probabilities == pytest.approx(whole[i].probabilities, abs=1e-6)   # thread counts may differ
    with pytest.raises(ValueError, match="batch_size"):
        next(pred.batches(texts, batch_size=0))


def test_fast_path_has_no_maps_and_a_string_is_a_list_of_one():
    pred = predictor("kim_cnn")
    p = pred.predict("a great film")
    assert len(p) == 1 and p[0].maps == {} and p[0].tokens == ["a", "great", "film"]
    assert pred.predict([]) == []
    d = p[0].to_dict()
    assert d["label"] == p[0].label and d["tokens"] == ["a", "great", "film"] and "maps" not in d


def test_bad_input_is_rejected_clearly():
    pred = predictor("kim_cnn")
    with pytest.raises(TypeError, match=r"texts\[1\] is NoneType"):
        pred.predict(["ok", None])
    with pytest.raises(ValueError, match="batch_size"):
        pred.predict(["ok"], batch_size=0)
    with pytest.raises(ValueError, match="integer"):
        pred.predict(["ok"], batch_size=1.5)
    with pytest.raises(TypeError, match="bytes; decode"):
        pred.predict(b"good movie")
    for container in ({"good movie": 1}, {"good movie", "bad"}):
        with pytest.raises(TypeError, match="no defined order"):
            pred.predict(container)
    with pytest.raises(ValueError, match="label names"):
        Predictor(pred.model, pred.tokenizer, ["only one"])


def test_a_model_left_in_training_mode_still_predicts_deterministically():
    pred = predictor("kim_cnn")
    pred.model.train()  # e.g. someone trained the cached object by mistake; dropout must not leak in
    a = pred.predict(["a great film"])[0].probabilities
    b = pred.predict(["a great film"])[0].probabilities
    assert a == b and not pred.model.training
