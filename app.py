"""The textcls dashboard: `streamlit run app.py`. Page config, navigation over the pages that exist, run.

To add a page, add one (file, title, icon) line to PAGES; a listed file that does not exist yet is skipped.

This file is read twice. `streamlit run app.py` first imports it to serve it: it finds `app`, an st.App, whose
start-up reads ahead what the first page needs and whose middleware lets the background work give way while the
browser loads (pages.common.warmup). Then each page view runs it as the script (`__name__ == "__main__"`), as
AppTest does.
"""
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent
PAGES = [
    ("pages/home.py", "Home", ":material/home:"),
    ("pages/compare.py", "Compare", ":material/compare_arrows:"),
    ("pages/inspect.py", "Inspect", ":material/visibility:"),
    ("pages/attribute.py", "Attribute", ":material/highlight:"),
    ("pages/patch.py", "Patch", ":material/call_split:"),
    ("pages/train.py", "Train", ":material/model_training:"),
    ("pages/evaluate.py", "Evaluate", ":material/fact_check:"),
    ("pages/explore.py", "Explore", ":material/scatter_plot:"),
    ("pages/lab.py", "Lab", ":material/science:"),
    ("pages/lessons.py", "Lessons", ":material/school:"),
    ("pages/studies.py", "Studies", ":material/insights:"),
    ("pages/benchmarks.py", "Benchmarks", ":material/speed:"),
]

if __name__ != "__main__":          # imported by `streamlit run` (or an ASGI server): the server, no page
    from starlette.middleware import Middleware

    from pages.common.warmup import Served, lifespan

    app = st.App(__file__, lifespan=lifespan(ROOT / PAGES[0][0]), middleware=[Middleware(Served)])
else:
    from pages.common import APP_RAN, DEEP_LINK, DEEP_LINK_PARAMS
    from pages.common.warmup import page_run, warm_up, worker_notice

    # A local file (sent inline as a data: URL): a ":material/...:" page icon makes the browser fetch it from
    # fonts.gstatic.com, and the app must make no request outside the machine.
    st.set_page_config(page_title="textcls", page_icon=str(ROOT / "static" / "textcls.svg"), layout="wide")
    present = [(f, t, i) for f, t, i in PAGES if (ROOT / f).is_file()]
    nav = st.navigation([st.Page(f, title=t, icon=i, default=(n == 0)) for n, (f, t, i) in enumerate(present)])
    st.session_state[APP_RAN] = True
    deep_link = st.session_state.pop(DEEP_LINK, None)   # a first request that was a deep link (pages/common)
    deep_params = st.session_state.pop(DEEP_LINK_PARAMS, None) or None
    if deep_link:
        st.switch_page(deep_link, query_params=deep_params)
    with page_run():                                    # the warm-up waits while a page runs
        try:
            nav.run()
        finally:                                        # the model worker restarted: one line, never a traceback
            note = worker_notice(st.session_state)
            if note:
                st.toast(note, icon=":material/restart_alt:")
    warm_up([ROOT / f for f, _, _ in present])     # torch, the validation, Captum, the pages' modules, Evaluate's
                                                    # predictions, while the person reads
