"""The examples a model gets wrong and those where models disagree, as tables (no torch): what the Evaluate page
lists, read from `metrics.score_predictions` results and predicted label names. Texts are shown as a person
writes them (`data.readable`); `#` is an example's position in the evaluated texts."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from textcls.analysis.metrics import agreement_rows
from textcls.data.readable import readable


def error_count(scored: dict[str, Any]) -> int:
    """How many examples a scored model (`score_predictions`) gets wrong."""
    return int((np.asarray(scored["gold"]) != np.asarray(scored["pred"])).sum())


def mistakes(scored: dict[str, Any], texts: Sequence[str], gold_names: Sequence[str]) -> pd.DataFrame:
    """The examples a scored model gets wrong, most confident first: `#`, `text`, `gold`, `predicted`,
    `confidence` (its probability of the label it predicted) and `p(gold)` (its probability of the right one)."""
    gold, pred, probs = np.asarray(scored["gold"]), np.asarray(scored["pred"]), np.asarray(scored["probs"])
    wrong = np.nonzero(gold != pred)[0]                                          # (W,)
    table = pd.DataFrame({"#": wrong, "text": [readable(texts[i]) for i in wrong],
                          "gold": [gold_names[i] for i in wrong],
                          "predicted": [scored["pred_names"][i] for i in wrong],
                          "confidence": probs[wrong, pred[wrong]] if len(wrong) else [],      # (W,)
                          "p(gold)": probs[wrong, gold[wrong]] if len(wrong) else []})       # (W,)
    return table.sort_values("confidence", ascending=False, kind="stable").reset_index(drop=True)


def disagreements(pred_names: dict[str, Sequence[str]], texts: Sequence[str],
                  gold_names: Sequence[str]) -> pd.DataFrame:
    """The examples on which the models ({model: one predicted label per example}) do not all agree, in order:
    `#`, `text`, `gold`, one column per model with its label, and `right`, how many models got it right."""
    names = list(pred_names)
    differ = [i for i, (_, _, d) in enumerate(agreement_rows(pred_names)) if d]
    return pd.DataFrame({"#": np.asarray(differ, dtype=int), "text": [readable(texts[i]) for i in differ],
                         "gold": [gold_names[i] for i in differ],
                         **{n: [pred_names[n][i] for i in differ] for n in names},
                         "right": [sum(pred_names[n][i] == gold_names[i] for n in names) for i in differ]})


def disagreeing_pair(pred_names: dict[str, Sequence[str]], row: int) -> tuple[str, str]:
    """Two models that give example `row` different labels: the first model, and the first one that differs from
    it. ValueError when they all agree there."""
    names = list(pred_names)
    first = names[0]
    second = next((n for n in names if pred_names[n][row] != pred_names[first][row]), None)
    if second is None:
        raise ValueError(f"the models agree on example {row}")
    return first, second


__all__ = ["disagreeing_pair", "disagreements", "error_count", "mistakes"]
