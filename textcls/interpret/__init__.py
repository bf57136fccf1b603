"""Interpretation: Captum attributions on the embedding layer, each model's own attention as an explanation,
faithfulness metrics (ERASER, DeYoung et al. 2020; Jain & Wallace 2019), live interventions and counterfactuals,
and the Lab's teaching demos. Library only: no Streamlit here (the Attribute and Lab pages call these functions).

Modules: instances (one example, token removal), sources (Predictor or model + tokenizer), probabilities
(a model as a probability function, TVD), embedding_forward (Captum on model.embed), attention_edits, vectors;
methods (the registry of explanation methods, one module each), attributions (the Captum engine, IG
convergence), attention (model attention -> per-token importance),
faithfulness (ERASER, leave-one-out, rank agreement, attention permutation / uniform / erasure tests, Captum
infidelity and sensitivity; one text each), batched (the same over a whole data set, batched across
texts: evaluate_slice; its shapes and length buckets in buckets, its attention tests in attention_tests),
interventions (edits / copies, counterfactual edits), lab; importance (the one per-token
importance rule) and concentration (how peaked attention is), both numpy only.

The names below resolve lazily (PEP 562), so the numpy-only modules (importance, concentration, rankings: how
explanations are compared and judged; records: the results and option names the pages read) import without torch
or Captum.
"""
from __future__ import annotations

import importlib

_LAZY = {
    "Instance": "instances",
    **dict.fromkeys(("Attribution", "BASELINES", "EditComparison", "REMOVALS", "SliceReport", "edit_tokens"),
                    "records"),
    **dict.fromkeys(("agreement", "kendall_tau", "topk_overlap", "tvd", "versus_random"), "rankings"),
    **dict.fromkeys(("Source", "as_source"), "sources"),
    **dict.fromkeys(("HOWS", "attention_importance", "attention_importance_instances", "explanation_source"),
                    "attention"),
    **dict.fromkeys(("METHODS", "attribute",
                     "attribute_instances", "attribute_texts"), "attributions"),
    **dict.fromkeys(("REGISTRY", "explain", "methods_for", "register_method"), "methods"),
    **dict.fromkeys(("SliceRun", "evaluate_slice"), "batched"),
    **dict.fromkeys(("BINS", "comprehensiveness", "erasure_curves", "erasure_flip", "explanation_report",
                     "infidelity", "leave_one_out", "permutation_test", "sensitivity", "sufficiency",
                     "uniform_attention_test"), "faithfulness"),
    **dict.fromkeys(("AblateHead", "Compose", "ForceGate", "Intervention",
                     "InterventionResult", "PermuteAttention", "SwapActivation", "UniformAttention", "ZeroFilter",
                     "compare_edit", "intervene", "intervene_texts"), "interventions"),
}
__all__ = sorted(_LAZY)


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # cache: later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
