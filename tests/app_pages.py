"""AppTest helpers shared by the page tests: open the app on a page the way a user gets there (app.py's navigation
first), and everything a page says as one string. The checkpoint and data folders come from the environment each
test file sets (TEXTCLS_CHECKPOINTS, TEXTCLS_DATA, ...)."""
from __future__ import annotations

import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parents[1]
APP = str(REPO / "app.py")


def open_page(page: str | None = None, *, params: dict | None = None, timeout: float = 120) -> AppTest:
    """The app run once, then switched to `page` (None: Home) with the URL's query `params`; it must show no
    exception."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    at.run()
    if params:
        at.query_params.update(params)
    if page:
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def user_folders(monkeypatch, tmp_path: Path, checkpoints: Path, *, data: Path | None = None) -> Path:
    """One test's folders, as a user has them: the shipped checkpoints `checkpoints`, the user's own folder
    ($TEXTCLS_HOME; its checkpoints/ made and returned: where Train saves) and the cache, both under tmp_path.
    With `data`: the data folder, the hub switched off and Streamlit's data cache cleared (a page computes anew)."""
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(checkpoints))
    monkeypatch.setenv("TEXTCLS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TEXTCLS_CACHE", str(tmp_path / "cache"))
    own = tmp_path / "home" / "checkpoints"
    own.mkdir(parents=True, exist_ok=True)
    if data is not None:
        import streamlit as st
        monkeypatch.setenv("TEXTCLS_DATA", str(data))
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        from pages.common import cache as page_cache
        page_cache.forget(data=True)
    return own


def page_text(at: AppTest, *, unescape: bool = False) -> str:
    """Markdown, captions, text and every message on the page, one per line; `unescape` drops markdown escapes."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [t.value for t in at.text]
    for kind in ("success", "warning", "info", "error"):
        parts += [x.value for x in getattr(at, kind)]
    text = "\n".join(parts)
    return text.replace("\\", "") if unescape else text


def shown_html(at: AppTest) -> list[str]:
    """The bodies of the page's HTML elements a person sees: not the style that hides the one-point Plotly chart a
    page adds so the browser loads Plotly's code ahead (`widgets.prefetch_plotly`)."""
    from pages.common.widgets import PLOTLY_PREFETCH
    return [h.proto.body for h in at.get("html") if PLOTLY_PREFETCH not in h.proto.body]


def shown_charts(at: AppTest) -> list:
    """The page's Plotly charts, less the hidden one-point chart of `widgets.prefetch_plotly`."""
    from pages.common.widgets import PLOTLY_PREFETCH
    return [c for c in at.get("plotly_chart") if PLOTLY_PREFETCH not in c.proto.id]


def texts_of(elements) -> str:
    """The values of a page's elements (errors, infos, ...) as one line, for assertions and their messages."""
    return " | ".join(str(e.value) for e in elements).replace("\\", "")


def wait_for(at: AppTest, cond, timeout: float = 120.0, what: str = ""):
    """Rerun the page every half second until cond(at) holds (a background job's panel), at most `timeout` s."""
    end = time.time() + timeout
    while time.time() < end:
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        if cond(at):
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}; errors: {texts_of(at.error)}")


def metric(at: AppTest, label: str) -> str:
    """The value of the st.metric labelled `label`."""
    return next(m.value for m in at.metric if m.label == label)
