"""The real app in a real browser: `streamlit run app.py` headless + Playwright driving Debian's Chromium.

Opens Compare by deep link, pastes a sentence, expects one result card per checkpoint; opens Inspect and finds a
heatmap with the sentence's tokens on its axis. Then visits every page of app.py's PAGES (with a typical click on
Home and Attribute) and checks that no page shows a Streamlit exception and that nothing leaves the machine: no
request from the browser to a host other than localhost/127.0.0.1 (fonts, icons, telemetry, CDNs), and no DNS
lookup or connection to another host from the server. One server and one browser for the module. Skipped (with
the reason) only when Chromium is missing.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest

from test_app_home_compare_inspect import build_checkpoints

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from bench_app import CHROMIUM, LOCAL_HOSTS, WS_COUNT_JS, app_pages, free_port  # noqa: E402  (the benchmark's helpers)

REPO = Path(__file__).resolve().parents[1]
SENTENCE = "the food was great but the service was slow ."

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)")

# `streamlit run`, with an audit hook that logs every DNS lookup and connection the server makes to another host.
BOOT = r"""
import json, os, socket, sys
LOG, LOCAL = os.environ["NET_AUDIT_LOG"], set(json.loads(os.environ["NET_AUDIT_LOCAL"])) | {socket.gethostname()}
def hook(event, args):
    if event == "socket.getaddrinfo":
        host = args[0].decode() if isinstance(args[0], bytes) else args[0]
    elif event == "socket.connect" and isinstance(args[1], tuple):
        host = args[1][0]
    else:
        return
    if host is not None and str(host) not in LOCAL:
        with open(LOG, "a") as f:
            f.write(f"{event} {args[1:] if event == 'socket.connect' else args}\n")
sys.addaudithook(hook)
from streamlit.web.cli import main
sys.argv[0] = "streamlit"
main()
"""

# Installed by mark_run before an action: window.__seen becomes true once a script run is seen (the
# app's data-test-script-state leaves notRunning: the frontend sets rerunRequested as soon as a widget is used),
# or once the server has sent a message since the mark.
TRACK_JS = """() => {
  if (window.__obs) return;
  window.__seen = false;
  window.__obs = new MutationObserver(() => {
    const app = document.querySelector('[data-testid="stApp"]');
    const state = app && app.getAttribute('data-test-script-state');
    if ((state && state !== 'notRunning' && state !== 'initial') || document.querySelector('[data-stale="true"]'))
      window.__seen = true;
  });
  window.__obs.observe(document.documentElement, {subtree: true, childList: true, attributes: true,
                                                  attributeFilter: ['data-test-script-state', 'data-stale']});
}"""

# True once the app is idle: its script is not running, no "running" status widget (one fading out counts as gone),
# no stale element of the previous run, no skeleton of a lazily loaded element, no server message in the last
# 300 ms.
IDLE_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  const w = document.querySelector('[data-testid="stStatusWidget"]');
  return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
    && Date.now() - (window.__wsLast || 0) >= 300
    && !(w && !/StatusWidget-exit/.test(w.className))
    && !document.querySelector('[data-stale="true"], [data-testid="stSkeleton"], [data-testid="stAppSkeleton"]');
}"""


def wait_idle(page, quiet_ms: int = 600, timeout_ms: int = 180_000, after_run: bool = False) -> None:
    """Wait until the app has been idle for quiet_ms (after_run: and a run was seen since mark_run)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(f"""() => {{
            const seen = window.__seen === true || (window.__wsIn || 0) > (window.__wsMark || 0);
            const idle = ({IDLE_JS})() && (!{str(after_run).lower()} || seen);
            const now = Date.now();
            if (!idle) {{ window.__idle = null; return false; }}
            if (!window.__idle) window.__idle = now;
            return now - window.__idle >= {quiet_ms};
        }}""", polling=50, timeout=timeout_ms)
    except PlaywrightTimeout:
        state = page.evaluate("""() => ({url: location.href, seen: window.__seen,
            messages_since_mark: (window.__wsIn || 0) - (window.__wsMark || 0),
            state: (document.querySelector('[data-testid="stApp"]') || {getAttribute: () => null})
                     .getAttribute('data-test-script-state'),
            status: Array.from(document.querySelectorAll('[data-testid="stStatusWidget"]'), e => e.innerText),
            stale: document.querySelectorAll('[data-stale="true"]').length,
            skeletons: document.querySelectorAll('[data-testid="stSkeleton"], [data-testid="stAppSkeleton"]').length
        })""")
        raise AssertionError(f"the app did not settle in {timeout_ms / 1000:.0f} s: {state}") from None


def mark_run(page) -> None:
    """Before an action that must run the script: wait_idle(after_run=True) then waits for a run to be seen."""
    page.evaluate(TRACK_JS)
    page.evaluate("() => { window.__seen = false; window.__idle = null; window.__wsMark = window.__wsIn || 0; }")


def inotify_watches(pid: int) -> int:
    """How many inotify watches the process holds (Linux /proc)."""
    n = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(fd) == "anon_inode:inotify":
                n += sum(line.startswith("inotify wd:") for line in (fd.parent.parent / "fdinfo" / fd.name).open())
        except OSError:                                  # closed meanwhile
            pass
    return n


def exceptions(page) -> list[str]:
    return page.locator('[data-testid="stException"]').all_inner_texts()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser_ckpts")
    names = build_checkpoints(root)
    port = free_port()
    logs = tmp_path_factory.mktemp("log")
    net_log = logs / "server_network.log"
    env = dict(os.environ, TEXTCLS_CHECKPOINTS=str(root), OMP_NUM_THREADS="1",
               TEXTCLS_HOME=str(tmp_path_factory.mktemp("home")), TEXTCLS_CACHE=str(tmp_path_factory.mktemp("cache")),
               NET_AUDIT_LOG=str(net_log), NET_AUDIT_LOCAL=json.dumps(sorted(LOCAL_HOSTS)))
    log = open(logs / "streamlit.log", "w")
    # No --browser.* / --server.fileWatcherType flags: the repository's .streamlit/config.toml is what is tested.
    proc = subprocess.Popen([sys.executable, "-c", BOOT, "run", str(REPO / "app.py"),
                             "--server.headless", "true", "--server.port", str(port)],
                            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
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
        yield SimpleNamespace(url=url, names=names, net_log=net_log, log=Path(log.name), pid=proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def session():
    """One browser for the module; every request any of its pages or workers makes is recorded."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        context = browser.new_context(viewport={"width": 1400, "height": 2400})
        context.add_init_script(WS_COUNT_JS)
        requests: list[str] = []
        context.on("request", lambda r: requests.append(r.url))
        pg = context.new_page()
        pg.set_default_timeout(120_000)
        yield SimpleNamespace(page=pg, requests=requests)
        browser.close()


@pytest.fixture(scope="module")
def page(session):
    return session.page


def test_compare_then_inspect_in_a_real_browser(server, page):
    url, names = server.url, server.names
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
    # the view's other figures are tabs: one chart drawn at a time, the next one when its tab is opened
    assert page.locator('[data-testid="stMainBlockContainer"] .js-plotly-plot').count() == 1
    mark_run(page)
    page.get_by_role("tab", name="all layers x heads").click()
    wait_idle(page, after_run=True)
    titles = page.locator(".js-plotly-plot .gtitle").all_text_contents()
    assert len(titles) == 1 and "all layers x heads" in titles[0], titles
    errors = page.locator('[data-testid="stException"]').count()
    assert errors == 0


def test_every_page_renders_offline_without_an_exception(server, session):
    page, url = session.page, server.url
    pages = app_pages()
    assert len(pages) >= 8, pages
    shown = {}
    for n, (file, title) in enumerate(pages):
        page.goto(url + "/" + ("" if n == 0 else Path(file).stem))      # a deep link to each page
        page.locator('[data-testid="stMainBlockContainer"] h1').first.wait_for()
        wait_idle(page)
        assert page.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True).count() == 1
        assert page.evaluate("() => window.__wsIn") > 0                # the app's messages are counted (WS_COUNT_JS)
        if file.endswith("home.py"):                   # a typical click: classify a sentence with every checkpoint
            classify = page.get_by_role("button", name="Classify with every checkpoint")
            if classify.count():
                mark_run(page)
                page.get_by_role("textbox", name="Sentence").first.fill(SENTENCE)
                classify.first.click()
                wait_idle(page, after_run=True)
        elif file.endswith("attribute.py"):            # a typical click: explain a new sentence
            explain = page.get_by_role("button", name="Explain", exact=True)
            if explain.count():
                mark_run(page)
                page.get_by_role("textbox", name="Sentence").first.fill("the service was slow .")
                explain.first.click()
                wait_idle(page, after_run=True)
        shown[title] = exceptions(page)
    assert all(not e for e in shown.values()), {t: e for t, e in shown.items() if e}

    # Nothing leaves the machine (this covers every request of the module's browser, the test above included).
    outside = sorted({u for u in session.requests if urlsplit(u).scheme not in ("data", "blob")
                      and (urlsplit(u).hostname or "") not in LOCAL_HOSTS})
    assert outside == [], "requests to other hosts: " + ", ".join(outside)
    assert any(u.startswith(url) for u in session.requests)          # the listener did record
    icon = page.evaluate("() => (document.querySelector(\"link[rel='shortcut icon']\") || {}).href || ''")
    assert icon.startswith("data:image/svg+xml"), icon[:80]    # the shipped icon, inline: no fetch at all
    server_net = server.net_log.read_text() if server.net_log.exists() else ""
    assert server_net == "", "the server looked up or connected to other hosts:\n" + server_net
    # Streamlit watches no folder (config.toml: fileWatcherType = "none"; the default puts an inotify watch on every
    # folder under the repository, .venv included: thousands)
    if Path(f"/proc/{server.pid}/fd").is_dir():
        assert inotify_watches(server.pid) == 0
    assert "Inotify" not in server.log.read_text()


def test_explore_projector_select_points_and_open_one_in_inspect(server, page, tmp_path):
    """A deep link with the state in its query string opens the projector (two models); a box dragged over one
    chart selects points; "Open in Inspect" shows the chosen text on the Inspect page."""
    a, b = server.names[0], server.names[1]
    page.goto(f"{server.url}/explore?ckpt={a},{b}&data=sst2&split=test&view=Projector")
    page.get_by_text("Explore a data set across models").wait_for()
    wait_idle(page)
    charts = page.locator(".js-plotly-plot")
    charts.nth(1).wait_for()
    assert charts.count() == 2                                        # two models side by side
    assert "ckpt=" in page.url and "view=Projector" in page.url       # the state stayed in the URL
    drag = charts.first.locator(".nsewdrag").first
    drag.scroll_into_view_if_needed()
    box = drag.bounding_box()
    mark_run(page)
    page.mouse.move(box["x"] + 0.05 * box["width"], box["y"] + 0.05 * box["height"])
    page.mouse.down()
    page.mouse.move(box["x"] + 0.5 * box["width"], box["y"] + 0.5 * box["height"], steps=8)
    page.mouse.move(box["x"] + 0.95 * box["width"], box["y"] + 0.95 * box["height"], steps=8)
    page.mouse.up()
    wait_idle(page, after_run=True)
    page.get_by_text("point(s) selected").wait_for()
    page.screenshot(path=str(tmp_path / "explore_selected.png"), full_page=False)
    mark_run(page)
    page.get_by_role("button", name="Open in Inspect").first.click()
    page.get_by_text("Inspect a model").wait_for()
    wait_idle(page)
    shown = page.get_by_role("textbox", name="Text").input_value()
    from textcls.data.datasets import load_data
    assert shown in load_data("sst2").splits["test"].texts         # a text of the split, not the page's example
    assert exceptions(page) == []


def test_inspect_word_picker_follows_a_new_text(server, page, tmp_path):
    """Issue 27.2: after a new text, HCAN's "chosen word" picker names a word of the new text, the same word the
    figure's title names (the browser kept showing the previous text's word under an unchanged widget key)."""
    hcan = next(n for n in server.names if n.startswith("hcan"))
    page.goto(f"{server.url}/inspect?ckpt={hcan}")
    page.get_by_text("Inspect a model").wait_for()
    wait_idle(page)
    picker = page.locator('[data-testid="stSelectbox"]').filter(has_text="chosen word").first
    picker.wait_for()
    assert picker.locator("input").input_value() == "1: the"        # the page's example text
    mark_run(page)
    page.get_by_role("textbox", name="Text").fill("My brother hated this movie. I loved every minute of it.")
    page.get_by_role("button", name="Inspect", exact=True).click()
    wait_idle(page, after_run=True)
    page.screenshot(path=str(tmp_path / "inspect_new_text.png"), full_page=False)
    shown = picker.locator("input").input_value()
    mark_run(page)
    page.get_by_role("tab", name="A_a row").click()             # the chosen word's row (one tab of the view)
    wait_idle(page, after_run=True)
    titles = " ".join(page.locator(".js-plotly-plot .gtitle").all_text_contents())
    assert shown == "1: my", shown
    assert "where 'my'" in titles, titles
    assert exceptions(page) == []


def test_no_deploy_button_in_a_local_app(server, page):
    """Issue 27.10: the app runs on the user's machine: Streamlit's "Deploy" button is hidden by the repository's
    .streamlit/config.toml (client.toolbarMode), and the main menu is still there."""
    page.goto(server.url + "/")
    page.locator('[data-testid="stMainBlockContainer"] h1').first.wait_for()
    wait_idle(page)
    assert page.locator('[data-testid="stMainMenu"]').count() == 1
    assert page.locator('[data-testid="stAppDeployButton"]').count() == 0
    assert page.get_by_role("button", name="Deploy").count() == 0
