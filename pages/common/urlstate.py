"""Shareable state: a page's widget values (checkpoints, data set, text, view, slice) in the URL's query string
(st.query_params), so a copied link reopens the same view - a teacher sends one link to a class.

`restore(page, params)` copies the URL's values into the widgets' session-state keys before the widgets are
drawn, whenever the URL differs from what this page last wrote there (a link just opened, or edited by hand);
values a widget cannot take (a checkpoint that is not here) are dropped. `publish(page, values)` writes the
current values back, only when they changed (writing the same URL again would not trigger anything, but
costs a message to the browser). Lists are comma-separated; a value longer than MAX_VALUE characters (a long
text) is left out of the URL.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import streamlit as st

MAX_VALUE = 2000


def _last_key(page: str) -> str:
    return f"_url_last_{page}"


def _current() -> dict[str, str]:
    return {k: st.query_params[k] for k in st.query_params}


def restore(page: str, params: dict[str, str], *, lists: Iterable[str] = (),
            options: dict[str, Sequence[str]] | None = None) -> bool:
    """Copy URL query params into session-state keys ({param: session key}). Returns True when it did."""
    url = _current()
    if not url or url == st.session_state.get(_last_key(page)):
        return False
    lists, options = set(lists), options or {}
    for param, key in params.items():
        if param not in url:
            continue
        raw = url[param]
        if param in lists:
            value = [v for v in raw.split(",") if v]
            if param in options:
                value = [v for v in value if v in options[param]]
            if not value:
                continue
        else:
            value = raw
            if param in options and value not in options[param]:
                continue
        st.session_state[key] = value
    st.session_state[_last_key(page)] = url
    return True


def publish(page: str, values: dict[str, object]) -> None:
    """Write {param: value} to the URL (lists comma-joined; None / "" / [] left out), when it changed."""
    new: dict[str, str] = {}
    for k, v in values.items():
        if v is None or v == "" or v == []:
            continue
        v = ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)
        if len(v) <= MAX_VALUE:
            new[k] = v
    if new != _current():
        st.query_params.from_dict(new)
    st.session_state[_last_key(page)] = new
