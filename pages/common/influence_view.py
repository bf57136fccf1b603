"""Training-data influence (TracIn; docs/influence.md) on the pages: `show_proponents(path, text)` for Attribute - the
training examples behind the sentence's prediction, its proponents (their training steps lowered the loss of the
predicted label) beside its opponents (raised it) - and `show_mislabelled(path)` for Explore - the training
examples ranked by self-influence, likely mislabelled first, computed on a click. The numbers come from the
"influence" interpreter through the one door (pages.common.interpreters: the model worker computes them when it is
on; the training set's pass is kept there, so a second sentence answers at once). A checkpoint without saved
epochs shows the one line that says how to get them."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from pages.common import widgets as w
from pages.common.interpreters import interpret, on_click, options_form

PAGE_SKIPS = ("self", "label", "method")       # the pages trace the prediction with the fast method


def _default_epochs(path, key: str) -> None:
    """A checkpoint without saved epochs starts on "final" (the final checkpoint alone), said in one line."""
    from textcls.interpret.influence import SNAPSHOT_FILE
    if not (Path(path) / SNAPSHOT_FILE).is_file():
        st.session_state.setdefault(f"{key}_epochs", "final")
        st.caption("This checkpoint kept no epochs (it was trained before textcls saved them): the scores use the "
                   "final checkpoint alone, one term of TracIn's sum (docs/influence.md).")


def _one_line(e: Exception) -> None:
    st.info(w.md_escape(" ".join(str(e).split())), icon=":material/info:")


def _table(examples, score: str) -> None:
    rows = [{score: round(e.score, 6), "label": e.label, "model says": e.predicted, "text": e.text}
            for e in examples]
    st.dataframe(rows, hide_index=True, width="stretch",
                 column_config={"text": st.column_config.TextColumn(width="large")})


def _run_line(run) -> str:
    return (f"TracIn over {w.md_escape(run.over)} of the {run.train_size:,} training examples of "
            f"{w.md_escape(run.data)} ({run.snapshots} snapshots, {run.seconds:.1f} s)")


def show_proponents(path: str | Path, text: str, key: str = "influence") -> None:
    """Attribute: the proponents and opponents of the prediction for `text` (two tables side by side)."""
    from textcls.interpret.interpreters import InterpreterError
    if not str(text or "").strip():
        st.info("Type a sentence to see which training examples its prediction rests on.")
        return
    _default_epochs(path, key)
    options = options_form("influence", key, skip=PAGE_SKIPS, columns=2)
    with w.or_one_line("Training-data influence", stop=False):
        try:
            with st.spinner("Tracing the training set (the first sentence passes over it once)…"):
                r = interpret("influence", path, {"text": text}, options)
        except InterpreterError as e:
            _one_line(e)
            return
        what = ("cosine" if r.run.normalize else "dot product (Normalise: training examples that resemble the "
                "sentence, not those with the largest gradients)")
        over = ("at the final weights" if r.run.final_only else "summed over the epochs, each times its learning "
                "rate")
        st.caption(f"Predicted **{w.md_escape(r.predicted)}** (p = {r.probability:.3f}). {_run_line(r.run)}. "
                   f"Score: the {what} of the output layer's loss gradients, {over}.")
        for title, group in (("**Proponents**: training steps on these lowered the loss of the prediction",
                              r.proponents),
                             ("**Opponents**: training steps on these raised it", r.opponents)):
            st.markdown(title)
            if group:
                _table(group, "influence")
            else:
                st.caption("none")


def show_mislabelled(path: str | Path, key: str = "mislabelled", top: int = 50) -> None:
    """Explore: the `top` training examples with the highest self-influence (likely mislabelled or atypical),
    computed on a click."""
    _default_epochs(path, key)
    options = {**options_form("influence", key, skip=PAGE_SKIPS + ("top", "normalize"), columns=2), "self": True,
               "top": top}
    r = on_click("influence", path, {}, options, key=key, button="Rank the training examples",
                 what="Self-influence")
    if r is None:
        st.caption("Ranks every training example by its self-influence (TracIn): an example whose loss training "
                   "kept fighting for - often a wrong label - ranks high.")
        return
    disagree = sum(e.label != e.predicted for e in r.examples)
    st.caption(f"{_run_line(r.run)}. The {len(r.examples)} highest; the model disagrees with the label of "
               f"{disagree}.")
    _table(r.examples, "self-influence")


__all__ = ["show_mislabelled", "show_proponents"]
