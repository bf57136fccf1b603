"""Metrics against small cases computed by hand."""
from dataclasses import dataclass

import numpy as np
import pytest
import torch
import torch.nn as nn

from textcls.inference import Predictor
from textcls.analysis.metrics import (accuracy, classification_report, confusion_matrix, default_ignore_label,
    evaluate, macro_f1, per_class_scores)
from textcls.models.outputs import ClassifierOutput
from textcls.data.text import Tokenizer, TokenizerConfig, Vocab

# true:  A A B B C C      confusion (rows true, cols pred):  A: 1 1 0 / B: 0 2 0 / C: 1 0 1
# pred:  A B B B A C      precision A 1/2, B 2/3, C 1;  recall A 1/2, B 1, C 1/2
Y_TRUE = [0, 0, 1, 1, 2, 2]
Y_PRED = [0, 1, 1, 1, 0, 2]
F1 = {"A": 0.5, "B": 0.8, "C": 2 / 3}   # 2PR/(P+R): A .5; B 2(2/3)(1)/(5/3) = .8; C 2(1)(.5)/1.5


def test_accuracy_and_confusion():
    assert accuracy(Y_TRUE, Y_PRED) == pytest.approx(4 / 6)
    assert confusion_matrix(Y_TRUE, Y_PRED, 3).tolist() == [[1, 1, 0], [0, 2, 0], [1, 0, 1]]
    assert accuracy([], []) == 0.0


def test_per_class_scores():
    s = per_class_scores(confusion_matrix(Y_TRUE, Y_PRED, 3))
    np.testing.assert_allclose(s["precision"], [0.5, 2 / 3, 1.0])
    np.testing.assert_allclose(s["recall"], [0.5, 1.0, 0.5])
    np.testing.assert_allclose(s["f1"], [F1["A"], F1["B"], F1["C"]])
    assert s["support"].tolist() == [2, 2, 2]


def test_macro_f1_and_ignored_label():
    assert macro_f1(Y_TRUE, Y_PRED, 3) == pytest.approx((0.5 + 0.8 + 2 / 3) / 3)
    # SemEval style: leave class C out of the mean; its examples still count as errors of A.
    assert macro_f1(Y_TRUE, Y_PRED, 3, ignore=2) == pytest.approx((0.5 + 0.8) / 2)


def test_ignored_label_still_creates_false_positives():
    # true Other (index 0) predicted as R (index 1): a false positive of R, so R's precision drops to 1/2.
    r = classification_report([0, 1], [1, 1], ["Other", "R"], ignore_label="Other")
    assert r["per_class"]["R"]["precision"] == pytest.approx(0.5)
    assert r["macro_f1"] == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert r["macro_f1_all"] == pytest.approx((0 + 2 / 3) / 2)


def test_absent_class_counts_as_zero_f1():
    # class 2 neither occurs nor is predicted: F1 0, and it still counts in the mean (no zero-division).
    assert macro_f1([0, 1], [0, 1], 3) == pytest.approx(2 / 3)
    r = classification_report([0, 1], [0, 1], ["a", "b", "c"])
    assert r["per_class"]["c"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}


def test_classification_report_fields():
    r = classification_report(Y_TRUE, Y_PRED, ["A", "B", "C"])
    assert set(r) >= {"accuracy", "macro_f1", "per_class", "confusion", "labels", "n"}
    assert r["n"] == 6 and r["labels"] == ["A", "B", "C"]
    assert r["macro_f1"] == r["macro_f1_all"] == pytest.approx(sum(F1.values()) / 3)
    assert r["per_class"]["B"]["f1"] == pytest.approx(0.8)
    assert r["confusion"] == [[1, 1, 0], [0, 2, 0], [1, 0, 1]]


def test_bad_inputs_are_rejected():
    with pytest.raises(ValueError, match="items"):
        accuracy([0, 1], [0])
    with pytest.raises(ValueError, match="outside"):
        confusion_matrix([0, 3], [0, 1], 3)
    with pytest.raises(ValueError, match="integer"):
        accuracy([0.5], [1.0])
    with pytest.raises(ValueError, match="ignore_label"):
        classification_report([0], [0], ["a", "b"], ignore_label="Other")


def test_default_ignore_label():
    assert default_ignore_label("semeval2010", ["Other", "Cause-Effect(e1,e2)"]) == "Other"
    assert default_ignore_label("sst2", ["negative", "positive"]) is None


class FirstTokenModel(nn.Module):
    """Predicts class (first token id - 2): a model whose predictions are known in advance."""

    def __init__(self, num_labels):
        super().__init__()
        self.num_labels = num_labels
        self.dummy = nn.Parameter(torch.zeros(1))

    def forward(self, ids, mask=None, return_maps=False, edits=None):
        logits = nn.functional.one_hot((ids[:, 0] - 2).clamp(min=0), self.num_labels).float() * 5 + self.dummy
        return ClassifierOutput(logits=logits)


@dataclass
class Split:
    texts: list
    labels: list


def test_evaluate_with_a_predictor_and_label_remapping():
    tok = Tokenizer(TokenizerConfig(), Vocab(["<pad>", "<unk>", "x", "y", "z"]))
    pred = Predictor(FirstTokenModel(3), tok, ["X", "Y", "Z"])
    split = Split(["x", "y", "z", "x", "y z"], [0, 1, 2, 1, 1])       # model predicts 0 1 2 0 1
    r = evaluate(pred, split)
    assert r["accuracy"] == pytest.approx(4 / 5)
    assert r["confusion"] == [[1, 0, 0], [1, 2, 0], [0, 0, 1]]
    assert r["loss"] > 0
    # the same data with its labels numbered in another order (names Z, Y, X) is mapped by name
    remapped = Split(split.texts, [2, 1, 0, 1, 1])
    assert evaluate(pred, remapped, label_names=["Z", "Y", "X"])["accuracy"] == pytest.approx(4 / 5)
    with pytest.raises(ValueError, match="does not know"):
        evaluate(pred, Split(["x"], [0]), label_names=["W"])
    # a bare model needs its tokenizer and labels
    assert evaluate(pred.model, split, tokenizer=tok, labels=["X", "Y", "Z"])["accuracy"] == pytest.approx(4 / 5)
    with pytest.raises(ValueError, match="labels"):
        evaluate(pred.model, split, tokenizer=tok)
