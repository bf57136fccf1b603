"""Inspect's context-mixing view (docs/context_mixing.md): `inspect_panel(info, facts, text, key)`, for a model
with self-attention (`facts.mixing`: the model's ModelFacts, pages.common.cache.facts), an expander with raw
attention, rollout, norm, ALTI and value zeroing side by side for the pooled position on one word scale, each
row with its faithfulness line on this text (textcls.interpret.context_mixing.compare; computed by the model
worker when it is on: cache.side_by_side). It computes only when the person asks (a toggle). The Attribute page
offers the same methods through the method registry, with plausibility and the sanity check."""
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
        except ValueError as e:                               # no self-attention; over the memory limit
            st.info(str(e))
            return
        except (MemoryError, RuntimeError) as e:              # never a traceback: one line of what went wrong
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
            st.warning(f"The context-mixing view could not be computed for this text ({type(e).__name__}: {first}).")
            return
        show_figure(side_by_side_figure(s), f"cm_{key}")
        for m in list(s.weights) + list(s.skipped):
            st.caption(s.line(m))
