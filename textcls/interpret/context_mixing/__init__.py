"""Context-mixing explanations: attention that counts the value vectors, the residual stream and the layer
norms (docs/faithfulness.md, "Context mixing").

Methods (one module each): norm (Kobayashi et al. 2020), globenc (Modarressi et al. 2022), alti (Ferrando et
al. 2022), value_zeroing (Mohebbi et al. 2023), decompx (Modarressi et al. 2023). `trace` reads a model's
blocks and the inputs they received; each method maps a Trace to one weight per position of the pooled
row; `words` turns that into one weight per word like every other explanation in textcls.

`applicable(model)` says which methods a model supports and why the others do not. A family declares the
capability (`context_mixing = "transformer"` on its class: which reader reads its blocks); a new one opts in with
`register_family(name, trace=..., applicable=...)`. The Transformer with full attention and cls / mean / global
pooling gets all five; a BERT-style Hugging Face encoder all five (DecompX where it has BERT's pooler);
DistilBERT / RoBERTa four; ACT only norm, on its global attention; every other model none.
"""
from __future__ import annotations

from typing import Sequence

METHODS = ("norm", "globenc", "alti", "value_zeroing", "decompx")


def _act(model) -> dict[str, str | None]:
    if model.config.relative_positions:
        return dict.fromkeys(METHODS, "relation classification (relative positions) is not covered")
    why = "ACT mixes tokens by attentive convolution, not self-attention: only its global attention is an " \
          "attention, and norm covers it"
    return {m: None if m == "norm" else why for m in METHODS}


def _transformer(model) -> dict[str, str | None]:
    c = model.config
    why = None
    if c.local_window:
        why = f"local attention (chunks of {c.local_window}) is not the full token x token mixing assumed"
    elif c.pooling in ("max", "decoder"):
        why = f"{c.pooling} pooling reads no single pooled position"
    elif c.relative_positions:
        why = "relation classification (relative positions) is not covered"
    return dict.fromkeys(METHODS, why)


def _hf(model) -> dict[str, str | None]:
    from textcls.interpret.context_mixing.trace import hf_family
    try:
        hf_family(model)
    except ValueError as e:
        return dict.fromkeys(METHODS, str(e))
    cfg = model.hf.config
    dx = None if cfg.model_type == "bert" and getattr(model.hf.base_model, "pooler", None) is not None else \
        f"DecompX follows BERT's pooler and classifier; the {cfg.model_type} head is not wired"
    return {**dict.fromkeys(METHODS[:-1]), "decompx": dx}


_APPLICABLE = {"transformer": _transformer, "act": _act, "hf": _hf}     # capability -> which methods apply


def register_family(name: str, *, trace, applicable) -> None:
    """Let models that declare `context_mixing = name` opt in: `trace(model, ids, mask)` returns the
    `trace.Trace` of its blocks (their modules as `trace.Block`s, the inputs each block received, the pooled
    position's weights, the head), `applicable(model)` returns {method: None where it applies, else one line why
    not} for METHODS. A model family of a plugin calls this once; nothing else is edited."""
    from textcls.interpret.context_mixing import trace as tr
    if name in _APPLICABLE:
        raise ValueError(f"a context-mixing reader named {name!r} is already registered")
    _APPLICABLE[name] = applicable
    tr.READERS[name] = trace


def applicable(model) -> dict[str, str | None]:
    """method -> None where it applies, else a one-line reason why not."""
    rule = _APPLICABLE.get(getattr(model, "context_mixing", None))
    if rule is None:
        return dict.fromkeys(METHODS, f"{type(model).__name__} has no self-attention between tokens")
    return rule(model)


def methods_for(model) -> list[str]:
    return [m for m, why in applicable(model).items() if why is None]


def check(model, method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"unknown context-mixing method {method!r}; choose from {', '.join(METHODS)}")
    why = applicable(model)[method]
    if why is not None:
        raise ValueError(f"{method} does not apply to this model: {why}")


def explain_instances(model, instances: Sequence, method: str, batch_size: int = 16) -> list:
    """One `Attribution` per instance (per word, [CLS]/[SEP] left out, renormalised); see words.py."""
    from textcls.interpret.context_mixing.words import explain_instances as run
    check(model, method)
    return run(model, instances, method, batch_size)


__all__ = ["METHODS", "applicable", "check", "explain_instances", "methods_for", "register_family"]
