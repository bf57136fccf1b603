"""The Concepts view (TCAV, the "tcav" interpreter: textcls.interpret.tcav): a concept chosen (a shipped concept file,
texts typed one per line, or a slice saved on Explore), the interpreter's options, a run on a click over the split,
then a table and, per class, a bar per layer of the concept's score against the random runs' mean, "not
significant" where p > 0.05. Computes nothing itself: `pages.common.interpreters` runs it where models live."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from pages.common import cache
from pages.common import widgets as w
from pages.common.interpreters import on_click, options_form, split_inputs
from textcls.viz.concepts import tcav_figure

SOURCES = ("A shipped concept", "Texts typed here", "A slice saved on Explore")
DEFAULT_TYPED = "the film was wonderful\na brilliant , moving story\nwhat a delightful cast"


def _concept(path, data: str | None, key: str):
    """The concept as the interpreter reads it (a shipped name or a list of texts), or None with a message."""
    from textcls.interpret.interpreters.tcav import concept_of, shipped_concepts
    source = st.radio("Concept", SOURCES, horizontal=True, key=f"{key}_source")
    if source == SOURCES[0]:
        shipped = shipped_concepts()
        name = st.selectbox("Concept file", list(shipped), key=f"{key}_file",
                            help="textcls/data/concepts/: positive and negative adjectives in neutral contexts, "
                                 "random words in the same contexts, random sentences of sst2's dev split")
        with st.expander(f"Its {len(concept_of(name))} texts"):
            st.text("\n".join(concept_of(name)))
        return name
    if source == SOURCES[1]:
        raw = st.text_area("Concept texts, one per line (at least 3)", DEFAULT_TYPED, key=f"{key}_typed")
        texts = w.split_lines(raw)
        if len(texts) < 3:
            st.info(f"A concept needs at least 3 texts; {len(texts)} given.", icon=":material/info:")
            return None
        return texts
    from textcls.analysis import slices as sl
    saved = sl.load_slices(data) if data else []
    if not saved:
        st.info(f"No slice saved for {w.md_escape(data or 'this data set')}: save one in the Slices view.",
                icon=":material/info:")
        return None
    names = [s.name for s in saved]
    chosen = saved[names.index(st.selectbox("Saved slice", names, key=f"{key}_slice"))]
    try:
        _, texts = sl.slice_texts(chosen, cache.dataset(data), name=str(path),
                                  predict=lambda t: cache.predict(path, t))
    except Exception as e:  # noqa: BLE001  (a slice that cannot apply: one line)
        st.warning(f"The slice cannot be used: {w.md_escape(' '.join(str(e).split()))}", icon=":material/info:")
        return None
    st.caption(f"{len(texts):,} texts of the slice.")
    return list(texts)




def show(path, data: str | None = None, split: str | None = None, *, key: str = "tcav") -> None:
    """The concept chooser, the options, a Run button, the table and a bar per class (module docstring)."""
    st.caption("TCAV (Kim et al. 2018, as LIT runs it): a linear direction that separates the concept's texts from "
               "random texts of the split at one layer; the score is the share of the class's texts whose logit "
               "grows along it, tested against directions between random texts (a t-test over the runs).")
    concept = _concept(path, data, key)
    labels = list(cache.facts(path).labels)
    label = st.selectbox("Class", ["every class"] + labels, index=len(labels) if len(labels) == 2 else 0,
                         key=f"{key}_label")
    options = options_form("tcav", key, skip=("label",))
    options["label"] = "" if label == "every class" else label
    inputs = split_inputs(key, data, split, help="A seeded sample of the split: the texts the scores count and the "
                                                 "random comparison texts are drawn from.")
    if concept is None:
        return
    r = on_click("tcav", path, {"concept": concept, **inputs}, options, key=key,
                 button="Run TCAV", what="TCAV")
    if r is None:
        return
    st.caption(f"{r.n_concept} concept texts against {r.n_per_run} random texts per run, {r.runs} runs and "
               f"{r.runs} random runs, {r.n_texts:,} texts of the split, {r.seconds:.1f} s.")
    df = pd.DataFrame([{"class": x.label, "layer": x.layer, "score (LIT)": x.score, "mean score": x.score_mean,
                        "random mean": x.random_mean, "p": x.p_value,
                        "verdict": x.verdict,
                        "CAV accuracy": x.cav_accuracy, "texts of the class": x.n_examples} for x in r.rows])
    st.dataframe(df, hide_index=True, width="stretch")
    for lab in r.labels:
        w.show_figure(tcav_figure(r, lab), key=f"{key}_fig_{lab}")
    for note in r.notes:
        st.caption(w.md_escape(note))
