"""Contrastive explanations: why the model chose label A (the fact) rather than label B (the foil).

A contrastive explanation explains one number, logit(fact) - logit(foil), instead of the fact's own score (Yin &
Neubig 2022, "Interpreting Language Models with Contrastive Explanations"; inseq's `contrast_logits_diff_fn`;
Jacovi et al. 2021 project onto the same direction, w_fact - w_foil, of the last layer). Since the softmax's
normaliser cancels, logit(fact) - logit(foil) = log p(fact) - log p(foil): the log-odds of the fact against the
foil (on a 2-label model, simply the log-odds of the prediction). A word with a positive weight speaks for the
fact rather than the foil; a negative one for the foil.

- gradient methods (saliency, gradient x input, integrated gradients) take the gradient of that difference
  (`EmbeddingForward` with a foil); saliency sums its absolute values (Yin & Neubig's L1 gradient norm);
- erasure methods (leave-one-out, occlusion, Shapley sampling, LIME) score the change of that difference when
  words are removed or replaced (`leave_one_out` below; the others through Captum on the same forward).
All of them are linear in the explained score, so a contrastive explanation equals the fact's explanation on
logits minus the foil's (tests/test_contrastive.py checks it), and a label contrasted with itself gives zeros.

A contrast is given as a label name, a label index, or "runner-up": the most probable label other than the fact
(the second most probable one when the fact is the prediction). This module imports no torch at import time
(the CLI and the pages parse a contrast with it); `leave_one_out` imports it when it runs.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

RUNNER_UP = "runner-up"
OUTPUT_KIND = "logit difference"     # Attribution.output_kind of a contrastive explanation
NOT_CONTRASTIVE = ("the model's own attention and the context-mixing methods weigh how tokens mix, not a label's "
                   "score, so there is no second label to contrast")


def parse(contrast, labels: Sequence[str] | None = None, num_labels: int | None = None) -> int | str | None:
    """A contrast as the engine takes it: None (an ordinary explanation), RUNNER_UP, or a label index. `contrast`
    is None, "runner-up", an index (int or digits) or a label name (exact, else case-insensitive). ValueError
    (one line, naming the labels) for a label the model does not have."""
    if contrast is None:
        return None
    n = len(labels) if labels is not None else num_labels
    if isinstance(contrast, (int, np.integer)) and not isinstance(contrast, bool):
        i = int(contrast)
    else:
        raw = str(contrast).strip()
        if raw.lower().replace("_", "-").replace(" ", "-") in (RUNNER_UP, "runnerup"):
            return RUNNER_UP
        names = [str(x) for x in labels] if labels is not None else []
        lower = [x.lower() for x in names]
        if raw in names:
            return names.index(raw)
        if lower.count(raw.lower()) == 1:
            return lower.index(raw.lower())
        if not raw.lstrip("-").isdigit():
            choices = f"; the labels: {', '.join(names)}" if names else ""
            raise ValueError(f"contrast {raw!r}: the model has no such label{choices} (or give an index, or "
                             f"{RUNNER_UP})")
        i = int(raw)
    if n is not None and not 0 <= i < n:
        raise ValueError(f"contrast {i}: label indices run from 0 to {n - 1}")
    return i


def foils(logits, facts: Sequence[int], contrast: int | str) -> np.ndarray:
    """(B,) the foil of each example: `contrast` itself, or (RUNNER_UP) the highest logit other than the fact's.
    `logits` (B, C) array-like; `facts` (B,) the explained labels."""
    z = np.array(logits, dtype=np.float64, copy=True)                  # (B, C)
    facts = np.asarray(facts, dtype=np.int64).reshape(-1)              # (B,)
    if contrast != RUNNER_UP:
        return np.full(z.shape[0], int(contrast), dtype=np.int64)
    if z.shape[1] < 2:
        raise ValueError("a one-label model has no runner-up to contrast with")
    z[np.arange(z.shape[0]), facts] = -np.inf                          # the fact is never its own runner-up
    return z.argmax(-1)


def describe(fact: str, foil: str) -> str:
    """The question a contrastive explanation answers, in words."""
    if fact == foil:
        return f"{fact} rather than itself: nothing to explain (every weight is 0)"
    return f"why {fact} rather than {foil}"


def leave_one_out(model, inst, contrast, removal: str = "delete", target: int | None = None,
                  labels: Sequence[str] | None = None):
    """Contrastive leave-one-out of one instance: an Attribution whose score of token t is the drop of
    logit(fact) - logit(foil) when t is removed (`removal`: delete / pad / unk) - the fact's logit drop minus the
    foil's. The fact is the predicted label unless `target` is given."""
    import torch

    from textcls.interpret.instances import REMOVALS, stack
    from textcls.interpret.probabilities import check_model
    from textcls.interpret.records import Attribution
    if removal not in REMOVALS:
        raise ValueError(f"unknown removal {removal!r}; choose one of {REMOVALS}")
    check_model(model)
    contrast = parse(contrast, labels, model.config.num_labels)
    variants = [inst] + [inst.remove([t], removal) for t in range(inst.n)]
    rows = []
    with torch.no_grad():
        for s in range(0, len(variants), 64):
            ids, mask = stack(variants[s:s + 64])                        # (N, L) or (N, S, W)
            rows.append(model(ids, mask).logits.double())                # (N, C)
    z = torch.cat(rows).numpy()                                          # (1 + n, C)
    fact = int(np.argmax(z[0])) if target is None else int(target)
    foil = int(foils(z[:1], [fact], contrast)[0])
    diff = z[:, fact] - z[:, foil]                                       # (1 + n,)
    scores = diff[0] - diff[1:]                                          # (n,) the drop when t goes
    a = Attribution("leave_one_out", scores, inst.grid(scores), fact, float(diff[0]), OUTPUT_KIND,
                    tokens=inst.tokens, label=None if labels is None else str(labels[fact]),
                    extras={"removal": removal})
    return mark(a, foil, labels)


def mark(a, foil: int, labels: Sequence[str] | None = None):
    """Record the foil on an Attribution (extras "contrast" and "contrast_label"; output_kind OUTPUT_KIND)."""
    a.output_kind = OUTPUT_KIND
    a.extras["contrast"] = int(foil)
    if labels is not None:
        a.extras["contrast_label"] = str(labels[int(foil)])
    return a


__all__ = ["NOT_CONTRASTIVE", "OUTPUT_KIND", "RUNNER_UP", "describe", "foils", "leave_one_out", "mark", "parse"]
