"""Shared pieces of the dashboard pages: `cache` (the only st.cache_* wrappers) and `widgets`.

`inside_app(__file__)`, called first by every page, keeps a page inside app.py's navigation. Because the pages
live in a folder named `pages/`, a server whose first request is a deep link (e.g. /compare) starts in
Streamlit's legacy pages-folder mode and runs the page without app.py (no page config, a raw file list as
navigation). The page then notes where the user was going and switches to app.py, whose st.navigation takes
over and opens that page: public APIs only (st.session_state, st.switch_page). The deep link's query string
(shareable state, `urlstate`) travels with it.
"""
from pathlib import Path

import streamlit as st

APP_RAN = "_textcls_app_ran"          # set by app.py on every run of a session
DEEP_LINK = "_textcls_deep_link"      # the page a deep link asked for, handed to app.py
DEEP_LINK_PARAMS = "_textcls_deep_link_params"   # and its query string ({name: value})


def inside_app(page_file: str) -> None:
    """Make sure this page runs under app.py's navigation (see the module docstring)."""
    if not st.session_state.get(APP_RAN):
        st.session_state[DEEP_LINK] = f"pages/{Path(page_file).name}"
        st.session_state[DEEP_LINK_PARAMS] = {k: st.query_params[k] for k in st.query_params}
        st.switch_page(Path(page_file).resolve().parents[1] / "app.py")
