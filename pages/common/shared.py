"""What follows the person from page to page in one session: the text they last typed, the checkpoints each page
was left with, and the checkpoint they chose last.

Streamlit forgets a page's widget values when another page runs, so Compare -> Inspect -> Compare lost the
sentence and the encoder just added, and Inspect opened on its own default. These values live in session keys
that no widget owns: a page seeds its widgets from them when it holds no value (a first visit, or back from
another page) and records what the person did after drawing them. A link's values (urlstate.restore) are set
before the seeding and so come first.
"""
from __future__ import annotations

from typing import Callable, Sequence

import streamlit as st

TEXT = "_shared_text"
LATEST = "_shared_latest_checkpoint"


def _kept(key: str) -> str:
    return f"_kept_{key}"


def seed_text(key: str, default: str, fits: Callable[[str], bool] | None = None) -> None:
    """Before the text widget `key` is drawn: when the page holds no value for it, start it from the text last
    typed on any page (when `fits` accepts it: a relation page wants marked entities), else from `default`."""
    if key not in st.session_state:
        text = st.session_state.get(TEXT)
        st.session_state[key] = text if text and (fits is None or fits(text)) else default


def keep_text(value: object) -> None:
    """Record the text the page ran on (an empty one is not recorded)."""
    if isinstance(value, str) and value.strip():
        st.session_state[TEXT] = value


def seed_choice(key: str, options: Sequence[str], default: Sequence[str]) -> None:
    """Before the multiselect `key` over `options` is drawn: when the page holds no value for it, the choice it
    was left with (still among `options`), else `default`."""
    if key not in st.session_state:
        kept = st.session_state.get(_kept(key))
        st.session_state[key] = [n for n in (kept if kept is not None else default) if n in options]


def keep_choice(key: str, chosen: Sequence[str]) -> None:
    """Record the multiselect's choice; a checkpoint added to it becomes the latest choice (Inspect opens on it)."""
    before = st.session_state.get(_kept(key))
    added = [n for n in chosen if n not in (before or ())]
    if before is not None and added:                  # added by the person (the first draw adds nothing)
        st.session_state[LATEST] = added[-1]
    st.session_state[_kept(key)] = list(chosen)


def note_latest(name: str) -> None:
    """Record `name` as the checkpoint the person chose last (a pick on Inspect, a link)."""
    st.session_state[LATEST] = name


def latest(options: Sequence[str]) -> str | None:
    """The checkpoint chosen last on any page, when it is among `options`."""
    name = st.session_state.get(LATEST)
    return name if name in options else None


def seed_value(key: str, default: object, options: Sequence[object] | None = None) -> None:
    """Before the widget `key` is drawn: the value the page was left with (when among `options`), else
    `default`."""
    if key not in st.session_state:
        kept = st.session_state.get(_kept(key), default)
        st.session_state[key] = kept if options is None or kept in options else default


def keep_value(key: str, value: object) -> None:
    """Record the widget's value for the next visit of its page."""
    st.session_state[_kept(key)] = value
