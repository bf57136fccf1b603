"""Classification metrics: accuracy, per-class precision/recall/F1/support, macro-F1, confusion matrix.

Conventions (the usual ones, as in scikit-learn with zero_division=0):
- the confusion matrix has true labels on rows and predicted labels on columns;
- a class with no prediction has precision 0, a class with no example has recall 0, and F1 is 0 when
  precision + recall is 0;
- macro-F1 is the unweighted mean of the per-class F1 over the classes taken into account. With
  `ignore_label` (SemEval-2010 Task 8: "Other") that class is left out of the mean, but its examples still
  count: a true "Other" predicted as a relation is a false positive of that relation, and vice versa.
  For directed relation labels ("Cause-Effect(e1,e2)") `classification_report` adds `relation_table`: the official scorer's
  per-relation scores (both directions of a relation together, a hit needs the right direction) and their
  macro-F1 (`macro_f1_official`); the headline stays `macro_f1` over the 18 directed labels.
  Classes that neither occur nor are predicted still count (F1 0), so a model is not rewarded for a class
  the split lacks: pass `labels` to choose the classes.

`evaluate(predictor_or_model, split)` runs a model over a data split and returns `classification_report`.

Memory is linear in the examples and the classes: the per-class counts come from `np.bincount`, never from a
dense matrix, and the report's "confusion" is the full matrix only up to MAX_CONFUSION_LABELS classes. Past that
(10,000 labels would be a 10,000 x 10,000 matrix: 800 MB as int64, several GB as JSON) it is None and
"confusions" lists the most frequent (true, predicted) pairs instead - so a finished training is never lost to its
report, and a checkpoint's config.json stays under its size limit.
"""
from __future__ import annotations

import re

from typing import Any, Sequence

import numpy as np

from textcls.runtime.threads import batch_work


def _as_int_array(y: Sequence[int] | np.ndarray, name: str) -> np.ndarray:
    a = np.asarray(y)
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {a.shape}")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name} must hold integer class indices, got dtype {a.dtype}")
    return a.astype(np.int64)


def _check_pair(y_true, y_pred) -> tuple[np.ndarray, np.ndarray]:
    t, p = _as_int_array(y_true, "y_true"), _as_int_array(y_pred, "y_pred")
    if t.shape != p.shape:
        raise ValueError(f"y_true has {t.size} items but y_pred has {p.size}")
    return t, p


def accuracy(y_true, y_pred) -> float:
    """Fraction of exact matches; 0.0 for empty input."""
    t, p = _check_pair(y_true, y_pred)
    return float((t == p).mean()) if t.size else 0.0


MAX_CONFUSION_LABELS = 200      # the largest label set whose report holds the dense confusion matrix
TOP_CONFUSIONS = 100            # past it, this many of the most frequent (true, predicted) pairs


def _check_range(t: np.ndarray, p: np.ndarray, num_labels: int) -> None:
    for name, a in (("y_true", t), ("y_pred", p)):
        if a.size and (a.min() < 0 or a.max() >= num_labels):
            raise ValueError(f"{name} has class index outside 0..{num_labels - 1}: {int(a.min())}..{int(a.max())}")


def confusion_matrix(y_true, y_pred, num_labels: int) -> np.ndarray:
    """(num_labels, num_labels) int64 counts, rows = true class, columns = predicted class. Dense: for many classes
    use `class_counts` and `top_confusions`, which stay linear in the classes."""
    t, p = _check_pair(y_true, y_pred)
    _check_range(t, p, num_labels)
    cm = np.zeros((num_labels, num_labels), dtype=np.int64)
    np.add.at(cm, (t, p), 1)
    return cm


def class_counts(y_true, y_pred, num_labels: int) -> dict[str, np.ndarray]:
    """Per class: "tp" (right predictions), "predicted" (predictions of the class: a confusion matrix's column
    sums) and "support" (examples of the class: its row sums), without building the matrix (O(n + classes))."""
    t, p = _check_pair(y_true, y_pred)
    _check_range(t, p, num_labels)
    return {"tp": np.bincount(t[t == p], minlength=num_labels).astype(np.int64),
            "predicted": np.bincount(p, minlength=num_labels).astype(np.int64),
            "support": np.bincount(t, minlength=num_labels).astype(np.int64)}


def top_confusions(y_true, y_pred, k: int = TOP_CONFUSIONS) -> list[tuple[int, int, int]]:
    """The `k` most frequent mistakes as (true index, predicted index, count), most frequent first (ties: by
    indices): the sparse summary of a confusion matrix too large to build."""
    t, p = _check_pair(y_true, y_pred)
    wrong = t != p
    if not wrong.any():
        return []
    pairs, counts = np.unique(np.stack([t[wrong], p[wrong]], axis=1), axis=0, return_counts=True)
    order = np.lexsort((pairs[:, 1], pairs[:, 0], -counts))[:k]
    return [(int(pairs[i, 0]), int(pairs[i, 1]), int(counts[i])) for i in order]


def _scores(tp, predicted, support) -> dict[str, np.ndarray]:
    tp = np.asarray(tp, dtype=np.float64)
    predicted = np.asarray(predicted, dtype=np.float64)
    precision = np.divide(tp, predicted, out=np.zeros_like(tp), where=predicted > 0)
    support = np.asarray(support)
    recall = np.divide(tp, support.astype(np.float64), out=np.zeros_like(tp), where=support > 0)
    denom = precision + recall
    f1 = np.divide(2 * precision * recall, denom, out=np.zeros_like(tp), where=denom > 0)
    return {"precision": precision, "recall": recall, "f1": f1, "support": support}


def per_class_scores(cm: np.ndarray) -> dict[str, np.ndarray]:
    """precision, recall, f1, support (arrays over classes) from a confusion matrix."""
    cm = np.asarray(cm)
    return _scores(np.diag(cm), cm.sum(axis=0), cm.sum(axis=1))


def macro_f1(y_true, y_pred, num_labels: int, ignore: int | Sequence[int] | None = None) -> float:
    """Unweighted mean of per-class F1 over classes 0..num_labels-1 except `ignore` (an index or indices)."""
    c = class_counts(y_true, y_pred, num_labels)
    f1 = _scores(c["tp"], c["predicted"], c["support"])["f1"]
    keep = np.ones(num_labels, dtype=bool)
    if ignore is not None:
        keep[np.atleast_1d(np.asarray(ignore, dtype=np.int64))] = False
    return float(f1[keep].mean()) if keep.any() else 0.0


def classification_report(y_true, y_pred, labels: Sequence[str], ignore_label: str | None = None) -> dict[str, Any]:
    """Everything the CLI's `evaluate --json` and the Evaluate page show, as plain JSON-able values.

    Returns {"accuracy", "macro_f1", "macro_f1_all", "ignore_label", "n", "labels",
             "per_class": {label: {"precision", "recall", "f1", "support"}}, "confusion": [[int]]}.
    `macro_f1` leaves out `ignore_label` (the task's metric, e.g. SemEval without "Other");
    `macro_f1_all` always averages every class. Without `ignore_label` the two are equal. For directed relation
    labels also "per_relation" and "macro_f1_official" (`relation_table`).
    More than MAX_CONFUSION_LABELS labels: "confusion" is None and "confusions" holds the TOP_CONFUSIONS most
    frequent mistakes as {"true", "predicted", "count"} (label names), "confusion_note" says so in one line.
    """
    labels = [str(x) for x in labels]
    if not labels:
        raise ValueError("labels must not be empty")
    if ignore_label is not None and ignore_label not in labels:
        raise ValueError(f"ignore_label {ignore_label!r} is not one of the labels {labels}")
    t, p = _check_pair(y_true, y_pred)
    counts = class_counts(t, p, len(labels))
    scores = _scores(counts["tp"], counts["predicted"], counts["support"])
    dense = len(labels) <= MAX_CONFUSION_LABELS
    keep = np.array([lab != ignore_label for lab in labels])
    f1 = scores["f1"]
    report = {
        "accuracy": accuracy(t, p),
        "macro_f1": float(f1[keep].mean()) if keep.any() else 0.0,
        "macro_f1_all": float(f1.mean()),
        "ignore_label": ignore_label,
        "n": int(t.size),
        "labels": labels,
        "per_class": {lab: {"precision": float(scores["precision"][i]), "recall": float(scores["recall"][i]),
                            "f1": float(scores["f1"][i]), "support": int(scores["support"][i])}
                      for i, lab in enumerate(labels)},
        "confusion": confusion_matrix(t, p, len(labels)).tolist() if dense else None,
    }
    if not dense:                        # a sparse summary: the matrix would be len(labels)**2 cells
        report["confusions"] = [{"true": labels[i], "predicted": labels[j], "count": c}
                                for i, j, c in top_confusions(t, p)]
        report["confusion_note"] = (f"{len(labels):,} classes: no confusion matrix ({len(labels):,} x "
                                    f"{len(labels):,} cells); the {TOP_CONFUSIONS} most frequent mistakes instead")
    relations = _relation_rows(counts, labels, ignore_label)
    if relations is not None:            # relation classification: the official-style per-relation table
        report.update(relations)
    return report


def compact_report(report: dict[str, Any], max_classes: int = MAX_CONFUSION_LABELS) -> dict[str, Any]:
    """A report as a checkpoint's config.json keeps it: whole up to `max_classes` labels; past that without its
    per-class table and its copy of the label names (config.json has them once, and a limit of
    `Limits.max_config_bytes`): the headline figures, the sparse confusions and a note saying what was left out."""
    labels = report.get("labels") or []
    if len(labels) <= max_classes:
        return report
    out = {k: v for k, v in report.items() if k not in ("per_class", "labels")}
    out["per_class_note"] = (f"{len(labels):,} classes: the per-class table is not kept here; "
                             "`textcls evaluate` computes it")
    return out


def unknown_labels(gold_names: Sequence[str], labels: Sequence[str]) -> list[str]:
    """The gold label names a model with `labels` does not know (it cannot be scored on them), sorted."""
    return sorted(set(map(str, gold_names)) - set(map(str, labels)))


def score_predictions(predictions: Sequence[Any], gold_names: Sequence[str], labels: Sequence[str],
                      ignore_label: str | None = None) -> dict[str, Any]:
    """A model's predictions (`inference.Prediction`s) on labelled texts, scored - the one evaluation of
    predictions the Evaluate and Explore pages and `evaluate` share. Returns {gold, pred (label indices of the
    model, numpy), probs (N, C), pred_names, labels, report (`classification_report`)}; a gold label the model
    does not know is a ValueError naming it."""
    labels = [str(x) for x in labels]
    missing = unknown_labels(gold_names, labels)
    if missing:
        raise ValueError(f"the model does not know the label(s) {', '.join(missing[:5])}")
    if len(predictions) != len(gold_names):
        raise ValueError(f"{len(predictions)} predictions for {len(gold_names)} gold labels")
    pos = {lab: k for k, lab in enumerate(labels)}
    gold = np.array([pos[str(g)] for g in gold_names], dtype=int)
    pred = np.array([p.label_index if getattr(p, "label_index", -1) >= 0 else pos[p.label] for p in predictions],
                    dtype=int)
    probs = np.array([[p.probabilities[lab] for lab in labels] for p in predictions], dtype=float)
    probs = probs.reshape(len(predictions), len(labels))
    return {"gold": gold, "pred": pred, "probs": probs, "pred_names": [labels[k] for k in pred], "labels": labels,
            "report": classification_report(gold, pred, labels, ignore_label=ignore_label)}


def select_scored(scored: dict[str, Any], rows: Sequence[int]) -> dict[str, Any]:
    """`score_predictions`' result on a subset of its rows (a slice), its report recomputed."""
    rows = np.asarray(rows, dtype=int)
    out = dict(scored, gold=scored["gold"][rows], pred=scored["pred"][rows], probs=scored["probs"][rows],
               pred_names=[scored["pred_names"][i] for i in rows])
    out["report"] = classification_report(out["gold"], out["pred"], scored["labels"],
                                          ignore_label=scored["report"]["ignore_label"])
    return out


_DIRECTED = re.compile(r"^(?P<rel>.+)\((?P<args>e1,e2|e2,e1)\)$")


def relation_table(confusion: Sequence[Sequence[int]], labels: Sequence[str],
                   ignore_label: str | None = "Other") -> dict[str, Any] | None:
    """SemEval-2010 Task 8's official-style per-relation scores, or None when the labels are not directed
    relations ("Cause-Effect(e1,e2)"). As the official scorer's "(9+1)-way evaluation with directionality taken
    into account": per relation R (both directions together), a true positive is an exact directed match,
    precision divides by the texts predicted as R (either direction), recall by the texts whose gold label is R
    (either direction). Returns {"per_relation": {R: {"precision", "recall", "f1", "support"}},
    "macro_f1_official": mean F1 over the relations (`ignore_label` left out)}."""
    cm = np.asarray(confusion)
    return _relation_rows({"tp": np.diag(cm), "predicted": cm.sum(axis=0), "support": cm.sum(axis=1)}, labels,
                          ignore_label)


def _relation_rows(counts: dict[str, np.ndarray], labels: Sequence[str], ignore_label: str | None):
    """`relation_table` from the per-class counts (`class_counts`): a relation's hits are its directed labels'
    diagonal cells, its predictions and examples their column and row sums."""
    groups: dict[str, list[int]] = {}
    for i, lab in enumerate(labels):
        m = _DIRECTED.match(lab)
        if m:
            groups.setdefault(m["rel"], []).append(i)
    if not groups:
        return None
    rows = {}
    for rel, idx in groups.items():
        tp = float(sum(counts["tp"][i] for i in idx))
        predicted = float(sum(counts["predicted"][i] for i in idx))
        support = int(sum(counts["support"][i] for i in idx))
        p = tp / predicted if predicted else 0.0
        r = tp / support if support else 0.0
        rows[rel] = {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0, "support": support}
    f1s = [v["f1"] for k, v in rows.items() if k != ignore_label]
    return {"per_relation": rows, "macro_f1_official": float(np.mean(f1s)) if f1s else 0.0}


def default_ignore_label(data_name: str, labels: Sequence[str]) -> str | None:
    """The label a data set's official metric leaves out: "Other" for SemEval-2010 Task 8, else None."""
    if "semeval" in (data_name or "").lower() and "Other" in labels:
        return "Other"
    return None


@batch_work
def evaluate(predictor_or_model, split, *, tokenizer=None, labels: Sequence[str] | None = None,
             label_names: Sequence[str] | None = None, ignore_label: str | None = None,
             batch_size: int = 64) -> dict[str, Any]:
    """Run a model over a split and return `classification_report` (plus "loss", the mean cross-entropy).

    predictor_or_model: a `Predictor` (uses its tokenizer and labels), or a bare model together with
        `tokenizer=` (or a split already encoded by `batching.encode_split`) and `labels=`.
    split: a `data.Split` (texts + label indices), or a `batching.EncodedSplit`.
    label_names: the names of the split's label indices when they differ from the model's labels
        (another data set with the same classes in another order); examples are mapped by name, and a
        split label the model does not know is an error.
    """
    from textcls.data.batching import EncodedSplit, encode_split, predict_encoded  # torch, only when evaluating

    model = getattr(predictor_or_model, "model", predictor_or_model)
    if hasattr(predictor_or_model, "tokenizer") and tokenizer is None:
        tokenizer = predictor_or_model.tokenizer
    if labels is None:
        labels = getattr(predictor_or_model, "labels", None)
    if labels is None:
        raise ValueError("evaluate: pass labels= (the model's label names) when evaluating a bare model")
    labels = list(labels)
    if isinstance(split, EncodedSplit):
        enc = split
    else:
        if tokenizer is None:
            raise ValueError("evaluate: a bare model needs tokenizer= or an EncodedSplit")
        enc = encode_split(tokenizer, split, label_names=label_names, model_labels=labels)
    if enc.labels is None:
        raise ValueError("evaluate: the split has no labels")
    y_pred, loss = predict_encoded(model, enc, batch_size=batch_size)
    report = classification_report(enc.labels.tolist(), y_pred.tolist(), labels, ignore_label=ignore_label)
    report["loss"] = loss
    return report


def agreement(labels: dict[str, str]) -> tuple[str, dict[str, list[str]]]:
    """Several models on one example: (majority label, {label: [models that gave it]}); a tie goes to the label
    given first."""
    groups: dict[str, list[str]] = {}
    for name, lab in labels.items():
        groups.setdefault(lab, []).append(name)
    major = max(groups, key=lambda k: len(groups[k])) if groups else ""
    return major, groups


def agreement_rows(labels: dict[str, Sequence[str]]) -> list[tuple[str, float, bool]]:
    """Several models on many examples ({model: one label per example}): per example, (majority label, share of
    the models that give it, whether any model differs) - Compare's and Evaluate's disagreement lists."""
    names = list(labels)
    out = []
    for r in range(len(labels[names[0]]) if names else 0):
        major, groups = agreement({n: labels[n][r] for n in names})
        out.append((major, len(groups[major]) / len(names), len(groups) > 1))
    return out



def pairwise_agreement(labels: dict[str, Sequence[str]]) -> np.ndarray:
    """Several models on many examples ({model: one label per example}): (M, M), in the dict's order, the share of
    the examples on which the row model and the column model give the same label (1 on the diagonal; NaN with no
    example) - Compare's pairwise agreement."""
    names = list(labels)
    table = np.array([[str(x) for x in labels[n]] for n in names], dtype=object).reshape(len(names), -1)   # (M, N)
    if table.shape[1] == 0:
        return np.full((len(names), len(names)), np.nan)
    return (table[:, None, :] == table[None, :, :]).mean(axis=2)                # (M, M)


def score_known(predictions: Sequence[Any], gold_names: Sequence[str], labels: Sequence[str],
                ignore_label: str | None = None) -> dict[str, Any] | None:
    """`score_predictions` over the examples whose gold label the model knows - a file's gold column may hold
    labels a model was never trained on, and those examples are left out of its score rather than counted wrong
    (Compare's accuracy on an uploaded file). Its "rows" are the positions of the examples scored; None when the
    model knows none of the gold labels."""
    if len(predictions) != len(gold_names):
        raise ValueError(f"{len(predictions)} predictions for {len(gold_names)} gold labels")
    known = {str(x) for x in labels}
    rows = [i for i, g in enumerate(gold_names) if str(g) in known]
    if not rows:
        return None
    out = score_predictions([predictions[i] for i in rows], [gold_names[i] for i in rows], labels, ignore_label)
    out["rows"] = rows
    return out
