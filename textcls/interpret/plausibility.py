"""Plausibility: how far an explanation agrees with what people mark as evidence (ferret's measures, Attanasio
et al. 2023, after ERASER, DeYoung et al. 2020).

Human evidence of a sentence (SST): the Stanford Sentiment Treebank labels every word of its training trees
with its own sentiment; a sentence's evidence is the set of its words whose label is polar in the direction of
the sentence's gold label (gold positive: words labelled positive / very positive; gold negative: negative /
very negative). The table ships (textcls.data.word_polarity), so a bare clone computes it.
- AUPRC: sklearn's average precision of the explanation's scores against the 0/1 evidence (ferret's
  auprc_plau, scores as given: a method's negative weights rank last);
- token F1: the top-k words by score (k = the number of evidence words of that sentence, ERASER's convention
  for a hard rationale of unknown length) against the evidence, F1 per sentence, then the mean (macro,
  ferret's token_f1_plau default).
A sentence with no evidence word (or only evidence words) has no defined AUPRC and is left out; the count
scored is reported. Data sets without such word labels (anything but a negative/positive sentiment task in
English) get no plausibility: `evidence_labels` says why.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

POLAR_LABELS = ("negative", "positive")


def evidence_labels(labels: Sequence[str] | None) -> str | None:
    """None when plausibility applies to a task with these label names, else the reason it does not."""
    names = [str(x).lower() for x in (labels or [])]
    if sorted(names) == sorted(POLAR_LABELS):
        return None
    return ("plausibility needs human word-level evidence; textcls ships SST's word sentiment labels, which fit "
            f"a negative/positive task, not one labelled {', '.join(names) or '(no labels)'}")


def human_evidence(tokens: Sequence[str], gold: str, table: dict[str, str] | None = None) -> np.ndarray:
    """0/1 per token: the token's SST word label is polar in the direction of the gold label."""
    if table is None:
        from textcls.data.word_polarity import word_polarity
        table = word_polarity()
    gold = str(gold).lower()
    return np.array([table.get(str(t).lower()) == gold for t in tokens], dtype=bool)


def average_precision(evidence: np.ndarray, scores: np.ndarray) -> float:
    from sklearn.metrics import average_precision_score
    return float(average_precision_score(evidence.astype(int), np.asarray(scores, dtype=np.float64)))


def token_f1(evidence: np.ndarray, scores: np.ndarray, k: int | None = None) -> float:
    k = int(evidence.sum()) if k is None else int(k)
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    picked = np.zeros(len(evidence), dtype=bool)
    picked[order[:k]] = True
    tp = int((picked & evidence).sum())
    if tp == 0:
        return 0.0
    p, r = tp / picked.sum(), tp / evidence.sum()
    return float(2 * p * r / (p + r))


def plausibility(tokens: Sequence[str], scores, gold: str, table: dict[str, str] | None = None
                 ) -> dict[str, Any] | None:
    """{"auprc", "token_f1", "n_evidence"} of one explanation, or None when the sentence has no evidence word
    (or only evidence words)."""
    ev = human_evidence(tokens, gold, table)
    s = np.asarray(getattr(scores, "scores", scores), dtype=np.float64).reshape(-1)
    if len(s) != len(ev):
        raise ValueError(f"{len(s)} scores for {len(ev)} tokens")
    if not ev.any() or ev.all():
        return None
    return {"auprc": average_precision(ev, s), "token_f1": token_f1(ev, s), "n_evidence": int(ev.sum())}


def mean_plausibility(items: Sequence[tuple[Sequence[str], Any, str]]) -> dict[str, Any]:
    """items: (tokens, scores, gold label) per sentence -> mean AUPRC, mean token F1, sentences scored."""
    table = None
    from textcls.data.word_polarity import word_polarity
    table = word_polarity()
    got = [r for r in (plausibility(t, s, g, table) for t, s, g in items) if r is not None]
    if not got:
        return {"plausibility_auprc": float("nan"), "plausibility_token_f1": float("nan"), "plausibility_n": 0}
    return {"plausibility_auprc": float(np.mean([r["auprc"] for r in got])),
            "plausibility_token_f1": float(np.mean([r["token_f1"] for r in got])), "plausibility_n": len(got)}


__all__ = ["POLAR_LABELS", "average_precision", "evidence_labels", "human_evidence", "mean_plausibility",
           "plausibility", "token_f1"]
