"""The real app in a real browser: `streamlit run app.py` headless + Playwright driving Debian's Chromium.

Opens Compare by deep link, pastes a sentence, expects one result card per checkpoint; opens Inspect and finds a
heatmap with the sentence's tokens on its axis. Skipped (with the reason) only when Chromium is missing.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from test_app_home_compare_inspect import build_checkpoints

CHROMIUM = "/usr/bin/chromium"
REPO = Path(__file__).resolve().parents[1]
SENTENCE = "the food was great but the service was slow ."

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser_ckpts")
    names = build_checkpoints(root)
    port = free_port()
    env = dict(os.environ, TEXTCLS_CHECKPOINTS=str(root), OMP_NUM_THREADS="1")
    log = open(tmp_path_factory.mktemp("log") / "streamlit.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(REPO / "app.py"),
                             "--server.headless", "true", "--server.port", str(port),
                             "--browser.gatherUsageStats", "false"], cwd=REPO, env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while True:
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    log.flush()
                    raise RuntimeError("streamlit did not start: " + Path(log.name).read_text()[-2000:])
                time.sleep(0.5)
        yield url, names
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        pg = browser.new_page(viewport={"width": 1400, "height": 2400})
        pg.set_default_timeout(120_000)
        yield pg
        browser.close()


def test_compare_then_inspect_in_a_real_browser(server, page):
    url, names = server
    page.goto(url + "/compare")                        # a deep link on a fresh server
    page.get_by_text("Compare models").wait_for()
    box = page.get_by_role("textbox", name="Sentence")
    box.fill(SENTENCE)
    page.get_by_role("button", name="Compare", exact=True).click()
    cards = page.get_by_text("confidence ", exact=False)
    page.wait_for_function(f"() => document.body.innerText.split('confidence ').length - 1 >= {len(names)}")
    page.wait_for_timeout(1500)
    assert cards.count() == len(names)                 # one result per checkpoint
    for n in names:
        assert page.get_by_text(n, exact=True).count() >= 1
    # the navigation is the app's (not a raw file list): app.py ran even though we entered by a deep link
    assert page.locator('[data-testid="stSidebarNav"]').get_by_text("Inspect").count() == 1
    assert page.locator('[data-testid="stSidebarNav"]').get_by_text("app").count() == 0

    page.locator('[data-testid="stSidebarNav"]').get_by_text("Inspect").click()
    page.get_by_text("Inspect a model").wait_for()
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Checkpoint").first.click()
    page.get_by_role("option", name="transformer_tiny", exact=False).first.click()
    page.get_by_text("transformer · tiny · predicts").wait_for()
    page.locator(".js-plotly-plot .heatmaplayer").first.wait_for()   # TR-ATT: the attention matrix
    assert page.locator(".js-plotly-plot .heatmaplayer").count() >= 1
    ticks = page.eval_on_selector_all(".js-plotly-plot .xtick text", "els => els.map(e => e.textContent)")
    assert "food" in ticks and "service" in ticks      # tokens on the axis
    errors = page.locator('[data-testid="stException"]').count()
    assert errors == 0
