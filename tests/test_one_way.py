"""One implementation per job (issue 42 item 4): the evaluation of predictions, the unknown-word rule and the
naming of a new checkpoint live in the library and the pages call them - tested here on the library calls, and
the pages are checked to hold no second copy."""
from __future__ import annotations

import re

import numpy as np
import pytest

import textcls
from app_pages import REPO
from textcls.analysis.metrics import score_predictions, select_scored, unknown_labels
from textcls.data.text import Vocab, unknown_tokens


def test_scored_predictions_equal_evaluate_on_a_shipped_checkpoint(shipped_predictors):
    p = shipped_predictors["kim_cnn-trec"]
    split = textcls.load_data("trec").splits["test"]
    texts, gold = split.texts[:120], [p.labels[y] for y in split.labels[:120]]
    scored = score_predictions(p.predict(texts), gold, p.labels)
    from textcls.data.datasets import Split
    want = textcls.evaluate(p, Split(list(texts), list(split.labels[:120])))
    assert scored["report"]["accuracy"] == pytest.approx(want["accuracy"])
    assert scored["report"]["confusion"] == want["confusion"]
    assert scored["probs"].shape == (120, len(p.labels)) and np.allclose(scored["probs"].sum(1), 1, atol=1e-5)
    part = select_scored(scored, [0, 5, 7])
    assert part["pred_names"] == [scored["pred_names"][i] for i in (0, 5, 7)] and part["report"]["n"] == 3
    with pytest.raises(ValueError, match="ZZZ"):
        score_predictions(p.predict(texts[:1]), ["ZZZ"], p.labels)
    assert unknown_labels(["HUM", "ZZZ", "ZZZ"], p.labels) == ["ZZZ"]


def test_one_unknown_word_rule():
    v = Vocab.build([["good", "film"]])
    assert unknown_tokens(v, ["good", "bad", "<unk>", "<pad>", "film", "bad"]) == ["bad", "<unk>", "<pad>", "bad"]
    assert unknown_tokens(object(), ["x"]) is None                        # no word table: nothing to say


def test_pages_hold_no_second_copy_of_these_jobs():
    pages = {f.name: f.read_text(encoding="utf-8") for f in (REPO / "pages").rglob("*.py")}
    for name, src in pages.items():
        assert "stoi.get(" not in src, f"{name} counts unknown words itself (data.text.unknown_tokens)"
        assert not re.search(r"p\.probabilities\[lab\] for lab in", src), f"{name} scores predictions itself"
        assert "classification_report(" not in src, f"{name} evaluates itself (analysis.metrics.score_predictions)"
        assert "== inst.unk_id" not in src, f"{name} counts unknown ids itself"


def test_a_saved_slice_gives_its_texts_through_the_library():
    from textcls.analysis import slices as sl
    bundle = textcls.load_data("trec")
    s = sl.Slice("questions about people", "label", "HUM")
    split, texts = sl.slice_texts(s, bundle)
    test = bundle.splits["test"]
    assert split == "test" and texts == [t for t, y in zip(test.texts, test.labels) if bundle.labels[y] == "HUM"]
    with pytest.raises(sl.SliceError, match="empty"):
        sl.slice_texts(sl.Slice("none", "label", "NOPE"), bundle)
