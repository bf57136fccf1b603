"""Inspect's neuron view (docs/neuron_view.md): `show(path, text, key)` draws bertviz's neuron view of one attention
head for one query word - choosers for the attention site (layer), the head and the query word (and the piece, for a
word a Hugging Face encoder splits), the figure (textcls.viz.neuron_view) with its export buttons, and one line
on how to read it. The numbers come from the "neurons" interpreter through the one door
(pages.common.interpreters.interpret: the model worker computes them when it is on, cached per text and choice);
every head comes back in one call, so switching heads draws without asking the model again."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from pages.common import widgets as w
from pages.common.interpreters import interpret, why_not

CLASSIFIER_QUERY = -1


def _get(path, text: str, layer: int, query: int):
    """The NeuronView, or None with the reason shown as one line."""
    from textcls.interpret.interpreters import InterpreterError
    try:
        return interpret("neurons", path, {"text": text}, {"layer": layer, "head": -1, "query": query})
    except InterpreterError as e:
        st.info(w.md_escape(" ".join(str(e).split())), icon=":material/info:")
    return None


def show(path: str | Path, text: str, key: str = "neurons") -> None:
    from textcls.viz.neuron_view import neuron_figure
    if not str(text or "").strip():
        st.info("Type a text to see the neuron view.")
        return
    with w.or_one_line("The neuron view", stop=False):
        first = _get(path, text, 0, 0)                       # the sites and the words (the default choice, cached)
        if first is None:
            return
        words = list(first.words)
        cols = st.columns(3)
        layer = cols[0].selectbox("Layer (attention site)", range(len(first.sites)), key=f"{key}_layer",
                                  format_func=lambda i: first.sites[i],
                                  help="Each attention the model computes: its layers' self-attentions, then any "
                                       "attention that pools them (ACT's global attention, HCAN's target).")
        options = [CLASSIFIER_QUERY] + list(range(len(words)))
        query = cols[2].selectbox("Query word", options, index=1, key=f"{key}_query",
                                  format_func=lambda i: "the position the classifier reads" if i < 0
                                  else f"{i + 1}. {words[i]}",
                                  help="The word whose query vector q is compared with every key k.")
        view = first if (layer, query) == (0, 0) else _get(path, text, layer, query)
        if view is None:
            return
        head = cols[1].selectbox("Head", range(len(view.heads)), key=f"{key}_head",
                                 format_func=lambda i: f"head {view.heads[i] + 1}")
        row = 0
        if len(view.rows) > 1:
            row = st.radio("Word piece", range(len(view.rows)), horizontal=True, key=f"{key}_piece",
                           format_func=lambda i: view.rows[i],
                           help="This encoder splits the word into pieces; each piece has its own query.")
        if view.row_keys and view.row_keys[0] < 0:
            st.caption(f"This attention has one query, not a word: {w.md_escape(view.query_label)}.")
        item = neuron_figure(view, head=min(head, len(view.heads) - 1), row=min(row, len(view.rows) - 1))
        w.show_figure(item, f"{key}_fig", filename=f"neurons_{Path(str(path)).name}_{item.key}")


__all__ = ["show"]


def panel(path: str | Path, text: str, key: str) -> None:
    """Inspect's collapsed section: computed only when opened; one line where the model has no query-key attention."""
    box = st.expander("Neuron view: how one head's query and keys make its attention (bertviz)", key=f"{key}_open",
                      on_change="rerun")
    if not box.open:
        return
    with box:
        why = why_not("neurons", path)
        if why is not None:
            st.caption(w.md_escape(why))
            return
        show(path, text, key=key)
