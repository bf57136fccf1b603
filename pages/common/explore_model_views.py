"""Explore's views of one checkpoint over the data set (Concepts: TCAV; Clusters: salience clustering; Mislabelled:
self-influence over the training set): each a registered interpreter (textcls.interpret.interpreters) laid out by its
view module; the checkpoint is one of those chosen on the page."""
from __future__ import annotations

import streamlit as st

from pages.common import widgets as w


def _one(s, key: str, name: str):
    """The checkpoint the view runs on (one of the page's): its folder, or None after saying why it does not apply."""
    from pages.common.interpreters import why_not
    ck = st.selectbox("Checkpoint", list(s.preds), key=f"exp_{key}_ck")
    info = s.by_name[ck]
    why = why_not(name, info.path)
    if why:
        st.info(f"{w.md_escape(ck)}: {w.md_escape(why)}", icon=":material/info:")
        return None
    return info


def _on_split(s) -> None:
    st.caption(f"On the split {w.md_escape(s.bundle.name)} / {w.md_escape(s.split_name)} (up to the number of texts "
               "set below); the slice above is not applied here.")


def concepts(s) -> None:
    """TCAV: is a concept (a few texts) significant for a class, layer by layer?"""
    from pages.common import tcav_view
    info = _one(s, "tcav", "tcav")
    if info is not None:
        _on_split(s)
        tcav_view.show(info.path, data=s.bundle.name, split=s.split_name)


def clusters(s) -> None:
    """Salience clusters: the split's texts grouped by the words an explanation method ranks first."""
    from pages.common import clusters_view
    info = _one(s, "clusters", "clusters")
    if info is not None:
        _on_split(s)
        clusters_view.show(info.path, data=s.bundle.name, split=s.split_name)


def mislabelled(s) -> None:
    """Training examples ranked by self-influence: the likely mislabelled ones first."""
    from pages.common import influence_view
    info = _one(s, "influence", "influence")
    if info is not None:
        st.caption(f"Over the training set {w.md_escape(info.name)} was trained on (not the split above).")
        influence_view.show_mislabelled(info.path, key=f"exp_mislabelled_{info.name}")


VIEWS = {"Concepts": concepts, "Clusters": clusters, "Mislabelled": mislabelled}
