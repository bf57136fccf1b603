"""Inspect's context-mixing view (docs/context_mixing.md): `inspect_panel(info, pred, text, key)`, for a model
with self-attention, an expander with raw attention, rollout, norm, ALTI and value zeroing side by side for the
pooled position on one word scale, each row with its faithfulness line on this text
(textcls.interpret.context_mixing.compare). It computes only when the person asks (a toggle). The Attribute page
offers the same methods through the method registry, with plausibility and the sanity check."""
from __future__ import annotations

import streamlit as st


@st.cache_data(show_spinner=False, max_entries=64)
def _side_by_side(path: str, text: str):
    from pages.common import cache
    from textcls.interpret.context_mixing.compare import side_by_side
    return side_by_side(cache.predictor(path), text)


def inspect_panel(info, pred, text: str, key: str) -> None:
    from textcls.interpret.context_mixing import methods_for
    if not methods_for(pred.model):
        return
    with st.expander("What attention weights leave out: raw attention, rollout, norm, ALTI, value zeroing"):
        st.caption("The pooled position's view of the words under five explanations on one scale (each row sums "
                   "to 1). Norm, ALTI and value zeroing count the value vectors and the residual stream that raw "
                   "weights leave out (docs/context_mixing.md).")
        if not st.toggle("Compute for this text", key=f"cm_inspect_{key}"):
            return
        from pages.common.widgets import show_figure
        from textcls.viz.context_mixing import side_by_side_figure
        try:
            with st.spinner("Tracing the layers…"):
                s = _side_by_side(str(info.path), text)
        except ValueError as e:
            st.info(str(e))
            return
        show_figure(side_by_side_figure(s), f"cm_{key}")
        for m in list(s.weights) + list(s.skipped):
            st.caption(s.line(m))
