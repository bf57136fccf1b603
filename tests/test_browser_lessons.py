"""The Lessons page in a real browser (`streamlit run app.py` headless + Playwright driving Debian's Chromium), on
the shipped checkpoints: a lesson opened by its URL and walked with Next draws each step's figure (a Plotly chart
with its bars, or the shaded words), the URL follows each step, and the presenter setting hides the sidebar.
Skipped (with the reason) only when Chromium is missing."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from test_browser import exceptions, mark_run, wait_idle

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from bench_app import CHROMIUM, CHROMIUM_ARGS, WS_COUNT_JS, free_port, start_server, stop, wait_healthy  # noqa: E402

from textcls.teach import lessons  # noqa: E402

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)")

LESSON = "attention"       # a toy (Plotly bars) and a trained model's shaded words
FIGURE = ".st-key-lesson_figure"


@pytest.fixture(scope="module")
def app_url():
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, OMP_NUM_THREADS="1", TEXTCLS_HOME=str(Path(tmp) / "home"),
                   TEXTCLS_CACHE=str(Path(tmp) / "cache"))
        env.pop("TEXTCLS_CHECKPOINTS", None)                       # the shipped checkpoints
        port = int(os.environ.get("TEXTCLS_TEST_PORT") or free_port())      # a fixed port on a shared machine
        log = Path(tmp) / "streamlit.log"
        server = start_server(env, port, log)
        try:
            wait_healthy(server, f"http://127.0.0.1:{port}", log, 120)
            yield f"http://127.0.0.1:{port}"
        finally:
            stop([server])


def _drawn(page) -> str:
    """What the step's figure container holds: "plotly" (a chart with at least one bar or cell drawn), "words" (shaded
    words), or ""."""
    return page.evaluate(f"""() => {{
        const box = document.querySelector('{FIGURE}');
        if (!box) return '';
        const drawn = '.js-plotly-plot .main-svg .point, .js-plotly-plot .main-svg .hm, '
                      + '.js-plotly-plot .main-svg image, .js-plotly-plot .main-svg .boxlayer path';
        if (box.querySelector(drawn)) return 'plotly';
        return box.querySelector('[data-testid="stHtml"] span[title]') ? 'words' : '';
    }}""")


def test_walk_one_lesson_with_next(app_url):
    from playwright.sync_api import sync_playwright

    lesson = lessons.get(LESSON)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 2400})
        page.add_init_script(WS_COUNT_JS)
        page.set_default_timeout(120_000)
        page.goto(f"{app_url}/lessons?lesson={LESSON}")
        kinds = []
        for k, step in enumerate(lesson.steps):
            page.locator("h3", has_text=f"Step {k + 1} of {len(lesson.steps)}: {step.title}").wait_for()
            page.wait_for_function(f"() => !!document.querySelector('{FIGURE} .js-plotly-plot .main-svg, "
                                   f"{FIGURE} [data-testid=\"stHtml\"] span[title]')")
            wait_idle(page)
            assert exceptions(page) == []
            assert f"lesson={LESSON}" in page.url and (k == 0 or f"step={k + 1}" in page.url), page.url
            kinds.append(_drawn(page))
            assert kinds[-1], f"step {k + 1} drew no figure"
            if k < len(lesson.steps) - 1:
                mark_run(page)
                page.get_by_role("button", name="Next").click()
                wait_idle(page, after_run=True)
        assert page.get_by_role("button", name="Next").is_disabled()
        assert set(kinds) == {"plotly", "words"}, kinds            # the toy's bars, the model's shaded words

        assert page.locator('[data-testid="stSidebar"]').is_visible()
        mark_run(page)
        page.get_by_text("Presenter", exact=True).click()
        wait_idle(page, after_run=True)
        assert "presenter=1" in page.url and not page.locator('[data-testid="stSidebar"]').is_visible()
        browser.close()


def test_presenter_next_shows_the_new_steps_title_not_the_old_scroll_position(app_url):
    """Issue 40 item 3: on a projector (1280 x 720) the teacher scrolls down to Next; the next step must open at
    its title and the text to read aloud, not at the bottom where the button was."""
    from playwright.sync_api import sync_playwright

    lesson = lessons.get("gates")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.add_init_script(WS_COUNT_JS)
        page.set_default_timeout(120_000)
        page.goto(f"{app_url}/lessons?lesson=gates&step=1&presenter=1")
        page.locator("h3", has_text=f"Step 1 of {len(lesson.steps)}").wait_for()
        wait_idle(page)
        nxt = page.get_by_role("button", name="Next")
        nxt.scroll_into_view_if_needed()
        assert page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTop") > 200
        mark_run(page)
        nxt.click()
        page.locator("h3", has_text=f"Step 2 of {len(lesson.steps)}").wait_for()
        wait_idle(page, after_run=True)
        page.wait_for_timeout(300)
        box = page.locator("h3", has_text=f"Step 2 of {len(lesson.steps)}").bounding_box()
        assert box is not None and 0 <= box["y"] < 720, box            # the new step's title is on screen
        assert exceptions(page) == []
        browser.close()
