"""The numbers the Evaluate, Compare and Benchmarks pages show, computed by the library (the pages only lay them
out): mistakes and disagreements (textcls.analysis.mistakes), Compare's accuracy on a file and its pairwise
agreement (analysis.metrics.score_known, pairwise_agreement), the filter n-grams' selection
(corpus_views.rows_where) and the benchmarks' rows (experiments.results / bench_report / tradeoffs /
study_results) - each on a small case whose answer is known. And textcls.records, split by what each record is,
still gives every name from one place without torch."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import pandas as pd
import pytest

from textcls.analysis.corpus_views import rows_where
from textcls.analysis.metrics import pairwise_agreement, score_known, score_predictions
from textcls.analysis.mistakes import disagreeing_pair, disagreements, error_count, mistakes
from textcls.records import Prediction

REPO = Path(__file__).resolve().parents[1]
LABELS = ["neg", "pos"]


def pred(label: str, p_pos: float) -> Prediction:
    return Prediction(label=label, probabilities={"neg": 1 - p_pos, "pos": p_pos}, tokens=["x"])


# ---------------------------------------------------------------- Evaluate: mistakes and disagreements

def test_mistakes_lists_the_wrong_examples_most_confident_first():
    texts = ["good", "a -lrb- dull -rrb- film", "fine", "bad<br />worse"]
    gold = ["pos", "pos", "pos", "neg"]
    scored = score_predictions([pred("pos", 0.9), pred("neg", 0.4), pred("pos", 0.6), pred("pos", 0.8)], gold,
                               LABELS)
    assert error_count(scored) == 2
    table = mistakes(scored, texts, gold)
    assert list(table.columns) == ["#", "text", "gold", "predicted", "confidence", "p(gold)"]
    assert table["#"].tolist() == [3, 1]                                  # 0.8 sure of "pos" before 0.6 of "neg"
    assert table["text"].tolist() == ["bad\nworse", "a ( dull ) film"]   # as a person writes them
    assert table["predicted"].tolist() == ["pos", "neg"] and table["gold"].tolist() == ["neg", "pos"]
    assert table["confidence"].tolist() == pytest.approx([0.8, 0.6])
    assert table["p(gold)"].tolist() == pytest.approx([0.2, 0.4])
    right = score_predictions([pred("pos", 0.9)], ["pos"], LABELS)
    assert error_count(right) == 0 and mistakes(right, ["good"], ["pos"]).empty


def test_disagreements_count_the_models_that_are_right():
    labels = {"a": ["pos", "neg", "pos", "neg"], "b": ["pos", "pos", "pos", "neg"], "c": ["neg", "pos", "pos", "neg"]}
    gold = ["pos", "pos", "neg", "neg"]
    table = disagreements(labels, ["t0", "t1", "t2", "t3"], gold)
    assert list(table.columns) == ["#", "text", "gold", "a", "b", "c", "right"]
    assert table["#"].tolist() == [0, 1]                                  # rows 2 and 3: all three agree
    assert table["right"].tolist() == [2, 2]
    assert table.loc[1, ["a", "b", "c"]].tolist() == ["neg", "pos", "pos"]
    assert disagreeing_pair(labels, 0) == ("a", "c") and disagreeing_pair(labels, 1) == ("a", "b")
    with pytest.raises(ValueError, match="agree"):
        disagreeing_pair(labels, 2)
    assert disagreements({"a": ["pos"], "b": ["pos"]}, ["t"], ["neg"]).empty


# ---------------------------------------------------------------- Compare: accuracy on a file, pairwise agreement

def test_score_known_leaves_out_the_gold_labels_a_model_does_not_know():
    preds = [pred("pos", 0.9), pred("neg", 0.1), pred("pos", 0.7), pred("pos", 0.6), pred("neg", 0.3)]
    gold = ["pos", "ZZZ", "neg", "pos", ""]
    s = score_known(preds, gold, LABELS)
    assert s["rows"] == [0, 2, 3]
    assert s["report"]["n"] == 3 and s["report"]["accuracy"] == pytest.approx(2 / 3)
    # the rule Compare applied itself before: the mean of (label == gold) over the rows whose gold it knows
    old = [p.label == g for p, g in zip(preds, gold) if g in LABELS]
    assert s["report"]["accuracy"] == pytest.approx(np.mean(old))
    assert score_known(preds[:2], ["ZZZ", "?"], LABELS) is None
    with pytest.raises(ValueError, match="predictions"):
        score_known(preds[:2], ["pos", "neg", "pos"], LABELS)


def test_pairwise_agreement_is_the_share_of_equal_labels():
    m = pairwise_agreement({"a": ["x", "y", "y", "x"], "b": ["x", "y", "x", "x"], "c": ["y", "x", "x", "y"]})
    assert m.shape == (3, 3)
    np.testing.assert_allclose(m, [[1, 0.75, 0], [0.75, 1, 0.25], [0, 0.25, 1]])
    np.testing.assert_allclose(pairwise_agreement({"only": ["x"]}), [[1.0]])
    assert np.isnan(pairwise_agreement({"a": [], "b": []})).all()


# ---------------------------------------------------------------- Evaluate's filter n-grams

def test_rows_where_selects_by_equal_columns_and_keeps_the_index():
    t = pd.DataFrame({"bank": ["h3", "h3", "h4", "h4"], "layer": [0, 1, 1, 1], "head": [0, 0, 0, 1]})
    assert rows_where(t).index.tolist() == [0, 1, 2, 3]
    assert rows_where(t, bank="h4").index.tolist() == [2, 3]
    assert rows_where(t, layer=1, head=0).index.tolist() == [1, 2]
    assert rows_where(t, bank="none").empty


# ---------------------------------------------------------------- Benchmarks

def test_the_accuracy_target_count_and_act_table_5():
    from textcls.experiments.bench_report import ACT_T5_TARGET, act_t5_met
    from textcls.experiments.results import targets_met
    assert targets_met([{"met": True}, {"met": False}, {"met": None}, {"met": True}]) == (2, 3)
    assert targets_met([{"met": None}]) == (0, 0)
    assert ACT_T5_TARGET == 2.0
    assert act_t5_met({"speed_ratio": 2.0}) and not act_t5_met({"speed_ratio": 1.99})


def test_checkpoint_rows_rename_and_give_accuracy_in_percent():
    from textcls.experiments.bench_report import checkpoint_rows
    ck = {"checkpoints": [{"name": "a", "data": "sst2", "test_accuracy": 0.825, "predict_ms": 1.5},
                          {"name": "b", "data": "sst2", "test_accuracy": None, "n_maps": 3}]}
    rows = checkpoint_rows(ck)
    assert rows[0] == {"checkpoint": "a", "data set": "sst2", "test accuracy": pytest.approx(82.5),
                       "ms / sentence": 1.5}
    assert rows[1] == {"checkpoint": "b", "data set": "sst2", "test accuracy": None, "maps": 3}
    assert checkpoint_rows({}) == []
    assert ck["checkpoints"][0]["test_accuracy"] == 0.825                 # the stored result is left as it was


def test_tradeoff_rows_take_timings_and_list_the_untimed():
    from textcls.experiments.tradeoffs import tradeoff_rows
    infos = [NS(name="a", test_accuracy=0.8, shipped=True), NS(name="b", test_accuracy=0.9, shipped=False),
             NS(name="c", test_accuracy=None, shipped=True), NS(name="d", test_accuracy=0.7, shipped=True)]
    timed = {"a": {"predict_ms": 2.0, "parameters": 10}, "b": {"ms": 5.0}, "c": {"ms": 1.0}}
    rows, untimed = tradeoff_rows(infos, timed, {"a": {"naopc": 0.5}})
    assert [i.name for i in untimed] == ["d"]                            # c has no accuracy: not a row at all
    assert rows == [{"name": "a", "from": "shipped", "accuracy": pytest.approx(80.0), "ms": 2.0, "parameters": 10,
                     "faith": {"naopc": 0.5}},
                    {"name": "b", "from": "yours", "accuracy": pytest.approx(90.0), "ms": 5.0, "parameters": None,
                     "faith": None}]


def test_the_studies_table_has_a_row_per_series_or_says_how_to_measure():
    from textcls.experiments.study_results import shipped_summary, summary_rows
    summary, rows = shipped_summary("medium"), summary_rows("medium")
    assert len(rows) == sum(len(d["verdicts"]) if d["shipped"] else 1 for d in summary)
    assert {r["study"] for r in rows} == {d["study"] for d in summary}
    for r in rows:
        assert r["verdict here"] and (r["95 % interval"] == "" or r["95 % interval"].startswith("[")
                                      or r["verdict here"] != "not measured yet")
        if r["difference (points)"] is not None:
            assert math.isfinite(r["difference (points)"])


# ---------------------------------------------------------------- textcls.records

def test_records_give_every_name_from_one_place_without_torch():
    code = ("import sys\n"
            "from textcls.records import (EpochEvent, EpochRecord, History, StepEvent, Prediction, ModelFacts,\n"
            "    SpecRecord, TextReading)\n"
            "import textcls.records as r\n"
            "assert sorted(r.__all__) == sorted(['EpochEvent', 'EpochRecord', 'History', 'StepEvent', 'Prediction',\n"
            "    'ModelFacts', 'SpecRecord', 'TextReading'])\n"
            "assert History.__module__ == 'textcls.records.training' and Prediction.__module__ == "
            "'textcls.records.prediction'\n"
            "assert ModelFacts.__module__ == 'textcls.records.facts'\n"
            "assert 'torch' not in sys.modules\n"
            "h = History.from_json({'epochs': [{'epoch': 1, 'dev': {'accuracy': 0.5, 'loss': 1.0, 'macro_f1': 0.4},"
            " 'steps': 10, 'elapsed': 2.0}]})\n"
            "assert h.epochs[0].dev_accuracy == 0.5 and h.epochs[0].seconds == 2.0\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
