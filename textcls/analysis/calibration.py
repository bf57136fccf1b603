"""Thresholds and calibration, numpy only: ROC and precision-recall curves with their areas (binary tasks), the
metrics at one threshold, the reliability diagram and the expected calibration error (any number of classes).

Conventions (as scikit-learn's): `roc_curve` / `pr_curve` take y (1 = positive) and a score (the positive
class's probability); thresholds run from high to low, and a point is added for "nothing predicted positive".
ROC AUC is the trapezoid area; PR's area is average precision (sum of (R_k - R_{k-1}) P_k, no interpolation).
ECE (Guo et al. 2017): confidence = the top probability, `bins` equal-width bins over [0, 1], the weighted mean
of |accuracy - confidence| per bin. A split with one class has no ROC / PR curve: `CalibrationError` says so.
"""
from __future__ import annotations

from typing import Any

import numpy as np


class CalibrationError(ValueError):
    """The curve cannot be drawn for this input (one class only, no rows); the message says why."""


def _binary(y, score) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y).astype(np.int64).ravel()
    s = np.asarray(score, dtype=np.float64).ravel()
    if y.shape != s.shape:
        raise CalibrationError(f"{y.size} labels but {s.size} scores")
    if not y.size:
        raise CalibrationError("no rows")
    if not set(np.unique(y)) <= {0, 1}:
        raise CalibrationError("labels must be 0 / 1 (negative / positive)")
    if y.min() == y.max():
        raise CalibrationError("only one class is present in these rows, so there is no ROC or PR curve")
    return y, s


def _counts(y: np.ndarray, s: np.ndarray):
    order = np.argsort(-s, kind="mergesort")
    y, s = y[order], s[order]
    last = np.r_[np.nonzero(np.diff(s))[0], y.size - 1]            # the last index of each distinct score
    tp = np.cumsum(y)[last]
    fp = (last + 1) - tp
    return tp.astype(np.float64), fp.astype(np.float64), s[last]


def roc_curve(y, score) -> dict[str, np.ndarray]:
    """{"fpr", "tpr", "thresholds"}; the first point (0, 0) has threshold +inf."""
    y, s = _binary(y, score)
    tp, fp, th = _counts(y, s)
    P, N = tp[-1], fp[-1]
    return {"fpr": np.r_[0.0, fp / N], "tpr": np.r_[0.0, tp / P], "thresholds": np.r_[np.inf, th]}


def roc_auc(y, score) -> float:
    r = roc_curve(y, score)
    return float(np.trapezoid(r["tpr"], r["fpr"]))


def pr_curve(y, score) -> dict[str, np.ndarray]:
    """{"precision", "recall", "thresholds"}, recall increasing; the first point is (recall 0, precision 1)."""
    y, s = _binary(y, score)
    tp, fp, th = _counts(y, s)
    precision = tp / (tp + fp)
    recall = tp / tp[-1]
    return {"precision": np.r_[1.0, precision], "recall": np.r_[0.0, recall], "thresholds": np.r_[np.inf, th]}


def average_precision(y, score) -> float:
    r = pr_curve(y, score)
    return float(np.sum(np.diff(r["recall"]) * r["precision"][1:]))


def at_threshold(y, score, threshold: float) -> dict[str, float]:
    """Accuracy, precision, recall, F1, FPR when `score >= threshold` means positive."""
    y = np.asarray(y).astype(np.int64).ravel()
    pred = (np.asarray(score, dtype=np.float64).ravel() >= threshold).astype(np.int64)
    tp = float(((pred == 1) & (y == 1)).sum())
    fp = float(((pred == 1) & (y == 0)).sum())
    fn = float(((pred == 0) & (y == 1)).sum())
    tn = float(((pred == 0) & (y == 0)).sum())
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    return {"threshold": float(threshold), "accuracy": (tp + tn) / max(1.0, y.size), "precision": prec,
            "recall": rec, "f1": 2 * prec * rec / (prec + rec) if prec + rec else 0.0,
            "fpr": fp / (fp + tn) if fp + tn else 0.0}


def reliability(probs, y, bins: int = 10) -> dict[str, Any]:
    """Reliability diagram of (N, C) probabilities against true class indices y (N,): per equal-width bin of
    the top probability its count, mean confidence and accuracy; and the ECE and the maximum calibration error."""
    P = np.asarray(probs, dtype=np.float64)
    y = np.asarray(y).astype(np.int64).ravel()
    if P.ndim != 2 or P.shape[0] != y.size:
        raise CalibrationError(f"probabilities of shape {P.shape} for {y.size} labels")
    if not y.size:
        raise CalibrationError("no rows")
    if bins < 1:
        raise CalibrationError("bins must be at least 1")
    conf = P.max(axis=1)
    correct = (P.argmax(axis=1) == y).astype(np.float64)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.searchsorted(edges, conf, side="left") - 1, 0, bins - 1)
    count = np.bincount(which, minlength=bins).astype(np.float64)
    sum_conf = np.bincount(which, weights=conf, minlength=bins)
    sum_acc = np.bincount(which, weights=correct, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.where(count > 0, sum_conf / count, np.nan)
        acc = np.where(count > 0, sum_acc / count, np.nan)
    gap = np.abs(np.nan_to_num(acc) - np.nan_to_num(mean_conf))
    ece = float((count / y.size * gap).sum())
    mce = float(gap[count > 0].max()) if (count > 0).any() else 0.0
    return {"lo": edges[:-1], "hi": edges[1:], "count": count.astype(np.int64), "confidence": mean_conf,
            "accuracy": acc, "ece": ece, "mce": mce, "n": int(y.size)}


__all__ = ["CalibrationError", "at_threshold", "average_precision", "pr_curve",
           "reliability", "roc_auc", "roc_curve"]
