"""Widgets of issue 43 (docs/context_mixing.md), self-contained so the pages call one function each:

- `inspect_panel(info, facts, text, key)`: for a model with self-attention (`facts.mixing`: the model's
  ModelFacts, pages.common.cache.facts), an expander with raw attention, rollout, norm, ALTI and value zeroing
  side by side for the pooled position on one word scale, each row with its faithfulness line on this text
  (textcls.interpret.context_mixing.compare; computed by the model worker when it is on: cache.side_by_side).
- `attribute_panel(rows, key)`: every context-mixing method each checkpoint supports, for this text, with its
  AOPC comprehensiveness, its plausibility (SST word evidence in the direction of the predicted label: a typed
  sentence has no gold label) and, on request, the randomisation sanity check.
Both compute only when the person opens them (a toggle): they cost one pass per layer and word (value zeroing)."""
from __future__ import annotations

import streamlit as st


def inspect_panel(info, facts, text: str, key: str) -> None:
    if not facts.mixing:
        return
    with st.expander("What attention weights leave out: raw attention, rollout, norm, ALTI, value zeroing"):
        st.caption("The pooled position's view of the words under five explanations on one scale (each row sums "
                   "to 1). Norm, ALTI and value zeroing count the value vectors and the residual stream that raw "
                   "weights leave out (docs/context_mixing.md).")
        if not st.toggle("Compute for this text", key=f"cm_inspect_{key}"):
            return
        from pages.common import cache
        from pages.common.widgets import show_figure
        from textcls.viz.context_mixing import side_by_side_figure
        try:
            with st.spinner("Tracing the layers…"):
                s = cache.side_by_side(info.path, text)       # the model worker's, when it is on
        except ValueError as e:
            st.info(str(e))
            return
        show_figure(side_by_side_figure(s), f"cm_{key}")
        for m in list(s.weights) + list(s.skipped):
            st.caption(s.line(m))


def attribute_panel(rows, key: str = "attr_cm") -> None:
    """rows: the Attribute page's rows (info, pred, inst)."""
    import pandas as pd
    from textcls.interpret.context_mixing import LABELS, explain_instances, methods_for
    from textcls.interpret.faithfulness import erasure_curves
    from textcls.interpret.plausibility import evidence_labels, plausibility
    usable = [r for r in rows if methods_for(r.pred.model)]
    if not usable:
        return
    box = st.expander("Context mixing: norm, GlobEnc, ALTI, value zeroing, DecompX - with plausibility and sanity")
    with box:
        if not st.toggle("Compute for this text", key=f"{key}_on"):
            return
        sanity = st.toggle("Also the randomisation sanity check (slower)", key=f"{key}_sanity")
        table = []
        for r in usable:
            labels = list(r.pred.labels or [])
            for m in methods_for(r.pred.model):
                a = explain_instances(r.pred.model, [r.inst], m)[0]
                c = erasure_curves(r.pred.model, r.inst, a.scores)
                row = {"checkpoint": r.info.name, "explanation": LABELS[m],
                       "AOPC comprehensiveness": c["aopc_comprehensiveness"],
                       "AOPC sufficiency": c["aopc_sufficiency"]}
                if evidence_labels(labels) is None and r.inst.tokens:
                    p = plausibility(r.inst.tokens, a.scores, labels[a.target])
                    row["plausibility AUPRC"] = None if p is None else p["auprc"]
                if sanity:
                    from textcls.interpret.sanity import cascading_randomisation
                    res = cascading_randomisation(r.pred.model, [r.inst], [m],
                                                  lambda model, xs, mm: explain_instances(model, xs, mm))
                    row["rank corr. after randomisation"] = res["final"][m]
                table.append(row)
        st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch")
        st.caption("Plausibility: average precision against the words SST labels polar in the direction of the "
                   "predicted label (blank: no such word here; none for tasks not labelled negative/positive). "
                   "Randomisation: Spearman rho of the words' weights before and after every layer is "
                   "re-initialised; near 1 means the explanation ignores the model.")
