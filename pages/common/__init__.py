"""Shared pieces of the dashboard pages: `cache` (the only st.cache_* wrappers) and `widgets`.

Importing this package also fixes a Streamlit quirk: because the app keeps its pages in a folder named
`pages/`, a server whose first request is a deep link (e.g. /compare) starts in the legacy multipage mode and
runs the page without app.py (no page config, a raw file list as navigation). The first import switches the
process to st.navigation mode and reruns, so app.py takes over and opens the page that was asked for.
"""
import streamlit as st


def _leave_legacy_pages_mode() -> None:
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # a future Streamlit without the legacy mode
        return
    if getattr(PagesManager, "uses_pages_directory", False):
        PagesManager.uses_pages_directory = False
        st.rerun()


_leave_legacy_pages_mode()
