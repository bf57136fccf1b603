"""Interpretation: Captum attributions on the embedding layer, each model's own attention as an explanation,
faithfulness metrics (anchors.md), live interventions and counterfactuals, and the Lab's teaching demos.
Library only: no Streamlit here (the Attribute and Lab pages call these functions).

Modules: attributions (Captum methods, IG convergence), attention (model attention -> per-token importance),
faithfulness (ERASER, leave-one-out, rank agreement, attention permutation / uniform / erasure tests, Captum
infidelity and sensitivity; one text each), batched (the same over a whole data set, batched across
texts: evaluate_slice), interventions (edits / copies, counterfactual edits), lab.
"""
from ._common import REMOVALS, Instance, Source, as_source, tvd
from .attention import HOWS, attention_importance, attention_importance_instances, explanation_source
from .attributions import (ALIASES, BASELINES, METHOD_LABELS, METHODS, Attribution, attribute, attribute_instances,
                           explain)
from .batched import SliceReport, SliceRun, evaluate_slice
from .faithfulness import (BINS, agreement, comprehensiveness, erasure_curves, erasure_flip, explanation_report,
                           infidelity, kendall_tau, leave_one_out, permutation_test, sensitivity, sufficiency, topk_overlap, uniform_attention_test)
from .interventions import (AblateHead, Compose, CounterfactualResult, ForceGate, Intervention, InterventionResult,
                            PermuteAttention, SwapActivation, UniformAttention, ZeroFilter, counterfactual,
                            edit_tokens, intervene, intervene_texts)

__all__ = [
    "REMOVALS", "Instance", "Source", "as_source", "tvd",
    "HOWS", "attention_importance", "attention_importance_instances", "explanation_source",
    "ALIASES", "BASELINES", "METHOD_LABELS", "METHODS", "Attribution", "attribute", "attribute_instances", "explain",
    "BINS", "SliceReport", "SliceRun", "agreement", "comprehensiveness", "erasure_curves", "erasure_flip", "evaluate_slice",
    "explanation_report", "infidelity", "kendall_tau", "leave_one_out", "permutation_test", "sensitivity",
    "sufficiency", "topk_overlap", "uniform_attention_test",
    "AblateHead", "Compose", "CounterfactualResult", "ForceGate", "Intervention", "InterventionResult",
    "PermuteAttention", "SwapActivation", "UniformAttention", "ZeroFilter", "counterfactual", "edit_tokens",
    "intervene", "intervene_texts",
]
