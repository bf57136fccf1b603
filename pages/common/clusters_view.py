"""The Clusters view (salience clustering, the "clusters" interpreter: textcls.interpret.salience_clusters): the
interpreter's options, a run on a click over the split, then one row per cluster (size, predicted labels, top
tokens) and, per cluster, a bar of its top tokens and its texts. Computes nothing itself:
`pages.common.interpreters` runs it where models live."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from pages.common import widgets as w
from pages.common.interpreters import on_click, options_form, split_inputs
from textcls.viz.concepts import cluster_figure

SHOWN = 50                # texts listed per cluster




def show(path, data: str | None = None, split: str | None = None, *, key: str = "clusters") -> None:
    """The options, a Run button, the clusters and their texts (module docstring)."""
    st.caption("Salience clustering (Ebert et al. 2022, as LIT runs it): each text's top tokens by an explanation "
               "method, as a vector over the vocabulary; k-means groups texts the model decides on the same words.")
    options = options_form("clusters", key)
    inputs = split_inputs(key, data, split, help="A seeded sample of the split. Integrated gradients, occlusion, "
                                                 "Shapley and LIME take much longer per text than gradient x input.")
    r = on_click("clusters", path, inputs, options, key=key,
                 button="Cluster", what="Salience clustering")
    if r is None:
        return
    st.caption(f"{len(r.texts):,} texts, {r.k} clusters of their top {r.top_k} tokens by {w.md_escape(r.method)}: "
               f"{r.seconds['total']:.1f} s.")
    st.dataframe(pd.DataFrame([{"cluster": c.id, "texts": c.size,
                                "predicted": ", ".join(f"{k} {v}" for k, v in sorted(c.labels.items())),
                                "top tokens": " ".join(t for t, _ in c.top_tokens)} for c in r.clusters]),
                 hide_index=True)
    for c in r.clusters:
        with st.expander(f"Cluster {c.id}: {c.size} texts · {' '.join(t for t, _ in c.top_tokens[:5])}"):
            w.show_figure(cluster_figure(r, c), key=f"{key}_fig_{c.id}", export=False)
            st.dataframe(pd.DataFrame([{"text": r.texts[i], "predicted": r.predicted[i], "gold": r.gold[i],
                                        "top tokens": " ".join(f"{t} {v:+.2f}" for t, v in r.example_tokens[i])}
                                       for i in c.examples[:SHOWN]]), hide_index=True)
            if c.size > SHOWN:
                st.caption(f"The first {SHOWN} of {c.size} texts.")
    for note in r.notes:
        st.caption(w.md_escape(note))
