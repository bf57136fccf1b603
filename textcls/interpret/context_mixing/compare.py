"""One text, the pooled position's view of it under raw attention, attention rollout and the context-mixing
methods, side by side on one word scale, each with its faithfulness line on this text (ERASER AOPC
comprehensiveness and sufficiency, textcls.interpret.faithfulness.erasure_curves). The Inspect page's
"what attention weights leave out" view and the lesson of the same name draw it."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

VIEW_METHODS = ("attention", "rollout", "norm", "alti", "value_zeroing")
VIEW_LABELS = {"attention": "raw attention", "rollout": "attention rollout", "norm": "norm (Kobayashi)",
               "alti": "ALTI", "value_zeroing": "value zeroing", "globenc": "GlobEnc", "decompx": "DecompX"}


@dataclass
class SideBySide:
    words: list[str]
    label: str
    weights: dict[str, np.ndarray]                     # method -> (n,) one per word, sum |w| = 1
    faithfulness: dict[str, dict[str, float]] = field(default_factory=dict)   # method -> aopc comp / suff
    skipped: dict[str, str] = field(default_factory=dict)                     # method -> why not

    def line(self, method: str) -> str:
        f = self.faithfulness.get(method)
        if f is None:
            return f"{VIEW_LABELS.get(method, method)}: {self.skipped.get(method, 'not computed')}"
        return (f"{VIEW_LABELS.get(method, method)}: AOPC comprehensiveness {f['aopc_comprehensiveness']:.3f}, "
                f"sufficiency {f['aopc_sufficiency']:.3f} on this text")


def attention_rollout(model, inst):
    """Attention rollout (Abnar & Zuidema 2020) of the pooled position, computed on the trace (word pieces and
    [CLS]/[SEP] included, then per word): per layer A = (mean over heads + I) / 2, rows renormalised, multiplied
    from the first layer up."""
    import torch
    from textcls.interpret.instances import stack
    from textcls.interpret.context_mixing.trace import (attention_input, attention_probs, pooled, rollout,
        row_normalise, trace)
    from textcls.interpret.context_mixing.words import to_words
    ids, mask = stack([inst])
    with torch.no_grad():
        t = trace(model, ids, mask)
        if not t.blocks:
            raise ValueError("no self-attention layers to roll out")
        eye = torch.eye(t.real.shape[1])[None] * t.real[:, None, :]
        mats = [row_normalise((attention_probs(b, attention_input(b, x), t.real).mean(1) + eye) / 2)
                for b, x in zip(t.blocks, t.inputs)]
        return to_words(t, pooled(t, rollout(mats)))[0, :inst.n].numpy()


def side_by_side(predictor, text: str, methods=VIEW_METHODS) -> SideBySide:
    """The weights and faithfulness lines of `methods` for one text (raises ValueError for a model without
    self-attention, with the reason)."""
    from textcls.interpret.sources import as_source
    from textcls.interpret.attention import attention_importance_instances
    from textcls.interpret.context_mixing import METHODS, applicable, explain_instances
    from textcls.interpret.faithfulness import erasure_curves
    src = as_source(predictor)
    (inst,) = src.instances([text])
    if inst.n == 0:
        raise ValueError("the text has no words the model reads")
    model = src.model
    why = applicable(model)
    if all(why[m] is not None for m in METHODS):
        raise ValueError(next(iter(why.values())))
    out = SideBySide(list(inst.tokens or []), "", {})
    for m in methods:
        try:
            if m == "attention":
                a = attention_importance_instances(model, [inst], labels=src.labels)[0]
            elif m == "rollout":
                a = attention_rollout(model, inst)
            elif why.get(m) is not None:
                out.skipped[m] = why[m]
                continue
            else:
                a = explain_instances(model, [inst], m)[0]
        except ValueError as e:
            out.skipped[m] = str(e)
            continue
        w = np.asarray(getattr(a, "scores", a), dtype=np.float64)
        out.weights[m] = w / max(np.abs(w).sum(), 1e-300)
        c = erasure_curves(model, inst, w)
        out.faithfulness[m] = {"aopc_comprehensiveness": float(c["aopc_comprehensiveness"]),
                               "aopc_sufficiency": float(c["aopc_sufficiency"])}
        if getattr(a, "target", None) is not None and src.labels:
            out.label = src.labels[int(a.target)]
    return out


__all__ = ["SideBySide", "VIEW_LABELS", "VIEW_METHODS", "side_by_side"]
