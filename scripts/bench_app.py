"""Time the real app in headless Chromium: `python scripts/bench_app.py [--load N] [--json]`.

Starts `streamlit run app.py` (headless, a free port, the repository's .streamlit/config.toml) and drives it with
Playwright and Debian's Chromium the way a user would, printing each figure with its target:

  home            Popen of the streamlit process -> Home's title and checkpoint table shown (target 4 s)
  page <Title>    click on the page in the sidebar -> its title and first content shown (target 2 s each)
  compare         click on Compare (a new sentence) -> every small sst2 checkpoint's answer shown (target 1 s)
  compare add pretrained / +pretrained
                  click on "Add the pretrained baseline" -> the encoder loaded and every answer shown (5 s);
                  then a new sentence through the small models and the encoder (target 1 s)
  inspect switch  another choice in Inspect's view selector -> the new figure shown (target 1 s)
  attribute       click on Explain (a new sentence) -> six sst2 checkpoints x (own attention, integrated
                  gradients, gradient x input, occlusion) shown (target 3 s)

"Shown" means: Streamlit's script run is over (the app's `data-test-script-state` is notRunning, the running
status widget is gone), no element of the previous run is left (stale), no placeholder (skeleton) is shown,
every Plotly chart shown is drawn, the figure's own content is on the page, and all of that stays so for --quiet
seconds; the time is when it started to hold. A hidden element (display: none; Inspect's one-point Plotly chart
that makes the browser load Plotly's code early) is not what the person waits for, and is not counted.

--floor measures, the same way, a bare three-page Streamlit app written to a temporary folder, with this repository's
.streamlit/config.toml: Home (a title and an 18-row table), Compare (the kinds of widget and HTML Compare's first
render draws) and Chart (one Plotly chart, the first in the tab). No model, no torch, no data: the least any
Streamlit app takes on this machine for those figures, to read the targets against.

At each figure's end the CPU seconds used so far are read from /proc for each role - the server, its model worker,
the browser (Chromium and Playwright's driver), the busy processes - and for the whole machine; the report gives
them per figure (from the previous figure's end) with what the machine's CPUs had left: where the wall time went,
and whether the work fits in it at all.

--load N starts N busy processes (`python -c "while True: pass"`, the latency benchmark's BusyLoad) before the
server, to measure a busy machine; they, the server and the browser are always stopped by PID at the end (also on
an error, Ctrl-C or SIGTERM; killed outright, the busy processes stop themselves when they see this process gone,
and on Linux the server dies with it). The
browser's requests are recorded too: any to a host other than this machine is listed (the app must work
offline). Uses TEXTCLS_CHECKPOINTS when set, and a fresh, empty user folder (TEXTCLS_HOME, TEXTCLS_CACHE) unless
they are set, as on a fresh clone. Exit status 1 when a figure could not be measured, a page showed an exception
or a request left the machine (a figure over its target is only reported). Numbers from a machine that
others share are indicative only.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from textcls.experiments import background  # noqa: E402  (no torch; after the path set-up)
from textcls.experiments.background import BusyLoad  # noqa: E402
from textcls.runtime.memory import rss_mb  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "::", ""}
TARGETS = {"home": 4.0, "page": 2.0, "compare": 1.0, "inspect_switch": 1.0, "attribute": 3.0, "add_pretrained": 5.0}
COMPARE_SENTENCE = "the soundtrack is lovely but the story drags on and on ."
COMPARE_SENTENCE_2 = "a slow start , but the last hour is wonderful ."
PRETRAINED_BUTTON = "Add the pretrained baseline"
ATTRIBUTE_SENTENCE = "a warm , funny and surprisingly moving little film ."
ATTRIBUTE_METHODS = 4      # own attention, integrated gradients, gradient x input, occlusion (the page's default)

# Installed in every page before its own scripts: counts the messages the app's websocket receives
# (window.__wsIn) and when the last one came (window.__wsLast). A script run that starts and ends within one
# browser task never shows its "running" state in the page (seen: 1 submit in 20 with eight tabs on two cores),
# but its messages are always counted.
WS_COUNT_JS = """(() => {
  const Native = window.WebSocket;
  if (!Native || Native.__counted) return;
  window.__wsIn = 0;
  window.__wsLast = 0;
  class Counted extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', () => { window.__wsIn += 1; window.__wsLast = Date.now(); });
    }
  }
  Counted.__counted = true;
  window.WebSocket = Counted;
})();"""

# Installed before an action (checks every 50 ms; predicates read textContent, which needs no layout): keeps
# window.__tr.since = the time (ms since the epoch) from which the app has been
# idle and PRED holds (null while not), and window.__tr.seen = whether a script run was seen since (its state
# in the page, or a message of the server counted by WS_COUNT_JS).
TRACK_JS = """() => {
  if (window.__tr) { window.__tr.obs.disconnect(); clearInterval(window.__tr.iv); }
  const pred = PRED, requireRun = REQUIRE_RUN;
  const t = {seen: false, since: null, mark: window.__wsIn || 0};
  const running = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    const state = app ? app.getAttribute('data-test-script-state') : 'initial';
    const w = document.querySelector('[data-testid="stStatusWidget"]');
    const busy = state !== 'notRunning' || (w && !/StatusWidget-exit/.test(w.className))
      || !!document.querySelector('[data-stale="true"]');
    if ((busy && state !== 'initial') || (window.__wsIn || 0) > t.mark) t.seen = true;
    return busy || Array.from(document.querySelectorAll('[data-testid="stSkeleton"], [data-testid="stAppSkeleton"]'))
           .some(e => e.getClientRects().length > 0)                                // a placeholder shown
      || Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"]'))
           .some(e => e.getClientRects().length > 0 && !e.querySelector('.main-svg'));   // shown, not drawn
  };
  const check = () => {
    if (running() || (requireRun && !t.seen)) { t.since = null; return; }
    let ok = false;
    try { ok = !!pred(); } catch (e) { ok = false; }
    if (!ok) { t.since = null; return; }
    if (t.since === null) t.since = Date.now();
  };
  t.obs = new MutationObserver(() => { if (running()) t.since = null; });
  t.obs.observe(document.documentElement, {subtree: true, childList: true, attributes: true,
                                           attributeFilter: ['data-test-script-state', 'data-stale']});
  t.iv = setInterval(check, 50);   // 50 ms: finer would cost the measured page CPU (8 pages share 2 cores)
  window.__tr = t;
  check();
}"""

MAIN = '[data-testid="stMainBlockContainer"]'
H1_JS = f"(() => {{ const h = document.querySelector('{MAIN} h1'); return h ? h.textContent.trim() : ''; }})"
HOME_PRED = (f"() => !!document.querySelector('{MAIN} h1') && "
             f"!!document.querySelector('{MAIN} [data-testid=\"stDataFrame\"]')")


def page_pred(previous_title: str) -> str:
    """A new page's title is shown, and at least one more element after it."""
    return (f"() => {{ const t = {H1_JS}(); return t !== '' && t !== {json.dumps(previous_title)} && "
            f"document.querySelectorAll('{MAIN} [data-testid=\"stElementContainer\"]').length >= 2; }}")


FIGURE_PRED = (f"() => !!document.querySelector('{MAIN} .js-plotly-plot, {MAIN} [data-testid=\"stHtml\"], "
               f"{MAIN} [data-testid=\"stImage\"]')")


class Step(Exception):
    """A figure that could not be measured (its reason is printed; the other figures go on)."""


# ---------------------------------------------------------------- processes

def _die_with_parent() -> None:
    """In a child (Linux): SIGKILL it when this process dies, however it dies."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)     # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux: the finally: block still stops them
        pass


def family(pid: int) -> list[int]:
    """`pid` and every process below it (the server and its model worker), from /proc; [pid] elsewhere."""
    parents: dict[int, int] = {}
    for d in Path("/proc").glob("[0-9]*"):
        try:
            stat = (d / "stat").read_text()
            parents[int(d.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    out, todo = [pid], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        out += kids
        todo += kids
    return out


def cpu_seconds(pid: int | None = None, comm: str | None = None) -> float:
    """CPU seconds (user + system) used so far by process `pid` (its own threads only), or by every process
    named `comm` (e.g. all of Chromium's processes) plus their children that have ended (a closed browser tab's
    renderer is reaped by a Chromium process, whose children's time then includes it); from /proc, Linux only
    (0.0 elsewhere)."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    pids = [pid] if pid is not None else [int(d.name) for d in Path("/proc").glob("[0-9]*")]
    total = 0
    for p in pids:
        try:
            stat = Path(f"/proc/{p}/stat").read_text()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1: stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        if comm is None or name.startswith(comm):
            total += int(rest[11]) + int(rest[12])            # utime, stime (fields 14 and 15)
            if comm is not None:
                total += int(rest[13]) + int(rest[14])        # cutime, cstime: children already reaped
    return total / tick


def loaded_torch(pid: int) -> bool | None:
    """Whether process `pid` has torch's library mapped (it imported torch); None when it cannot be read."""
    try:
        return "libtorch" in Path(f"/proc/{pid}/maps").read_text(errors="replace")
    except OSError:
        return None


def cpu_by_role(server_pid: int | None, load_pids: list[int]) -> dict[str, float]:
    """CPU seconds (user + system) used so far by each role: the server, the processes below it (the model
    worker), the busy processes, the browser (every other process this one started: Chromium and Playwright's
    driver), and the whole machine (/proc/stat, every process). Linux; {} elsewhere. A process that has ended is
    not counted."""
    machine = background.cpu_seconds()
    if machine is None:
        return {}
    server = family(server_pid) if server_pid else []
    mine = [p for p in family(os.getpid())[1:] if p not in server and p not in load_pids]
    return {"server": cpu_seconds(server_pid) if server_pid else 0.0,
            "worker": sum(cpu_seconds(p) for p in server[1:]), "busy": sum(cpu_seconds(p) for p in load_pids),
            "browser": sum(cpu_seconds(p) for p in mine), "machine": machine[1]}


def stop(procs: list[subprocess.Popen], grace: float = 10.0) -> list[int]:
    """Terminate each process by its PID, then kill what is left; returns the PIDs stopped."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
    deadline = time.time() + grace
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)
    return [p.pid for p in procs]


def start_server(env: dict, port: int, log_path: Path, app: Path | None = None) -> subprocess.Popen:
    """`streamlit run app.py` (this repository's, or `app`), headless on `port`, in the app's folder (its
    .streamlit/config.toml), its output in log_path; it dies with this process (Linux)."""
    app = app or REPO / "app.py"
    with open(log_path, "w") as log:
        return subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(app),
                                 "--server.headless", "true", "--server.port", str(port)],
                                cwd=app.parent, env=env, stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=_die_with_parent)


# --floor: the least any Streamlit app takes on this machine for the same figures, with nothing else (no model, no
# torch, no data). Home: a title and the checkpoint table's shape (18 rows). Compare: the kinds of element Compare's
# first render draws (a segmented control, a multiselect, a button, radio buttons, a form with a text area, result
# cards and bars as HTML; Compare draws no Plotly chart). Chart: a title and one Plotly chart, the first in the tab
# (the browser then loads Plotly's 4.7 MB chunk, as on the first textcls page that draws one).
FLOOR_PAGES = [("pages/home.py", "Home"), ("pages/compare.py", "Compare"), ("pages/chart.py", "Chart")]
FLOOR_FILES = {
    "app.py": """import streamlit as st
st.set_page_config(page_title="floor", layout="wide")
st.navigation([st.Page("pages/home.py", title="Home", default=True), st.Page("pages/compare.py", title="Compare"),
               st.Page("pages/chart.py", title="Chart")]).run()
""",
    "pages/home.py": """import pandas as pd
import streamlit as st
st.title("Home")
st.dataframe(pd.DataFrame({"checkpoint": [f"model-{i}" for i in range(18)], "from": ["shipped"] * 18,
                           "model": ["cnn"] * 18, "data set": ["sst2"] * 18, "accuracy": [0.8] * 18,
                           "labels": ["negative, positive"] * 18, "parameters": [1_000_000] * 18}),
             hide_index=True)
""",
    "pages/compare.py": """import streamlit as st
names = [f"model-{i}" for i in range(6)]
st.title("Compare")
st.segmented_control("Task", ["sst2", "trec", "all"], default="sst2")
st.multiselect("Checkpoints", names, default=names)
st.button("Add another")
st.radio("Input", ["One sentence", "Many sentences"], horizontal=True)
with st.form("one"):
    st.text_area("Sentence", "the food was great but the service was slow .")
    st.form_submit_button("Compare", type="primary")
st.html("".join(f"<div style='display:inline-block;border:1px solid #ddd;padding:8px;margin:4px'><b>{n}</b>"
                f"<div style='background:#c0392b;width:{60 + 5 * i}px;height:8px'></div></div>"
                for i, n in enumerate(names)))
""",
    "pages/chart.py": """import plotly.graph_objects as go
import streamlit as st
st.title("Chart")
st.plotly_chart(go.Figure(go.Bar(x=[0.2, 0.8], y=["negative", "positive"], orientation="h")))
""",
}


def write_floor_app(folder: Path, files: dict[str, str] | None = None) -> Path:
    """The bare app of --floor (or `files`) in `folder`, with this repository's .streamlit/config.toml; its app.py."""
    for name, text in (files or FLOOR_FILES).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    (folder / ".streamlit").mkdir(exist_ok=True)
    (folder / ".streamlit" / "config.toml").write_text((REPO / ".streamlit" / "config.toml").read_text())
    return folder / "app.py"


def wait_healthy(server: subprocess.Popen, url: str, log_path: Path, timeout: float) -> None:
    """Wait for the server's health check to answer; RuntimeError with its log's tail if it does not."""
    t0 = time.time()
    while True:
        try:
            urllib.request.urlopen(url + "/_stcore/health", timeout=2)
            return
        except OSError:
            if server.poll() is not None or time.time() - t0 > timeout:
                raise RuntimeError("streamlit did not start: " + log_path.read_text()[-2000:]) from None
            time.sleep(0.05)


def fresh_env(tmp: str) -> dict:
    """The environment for the server: a fresh, empty user folder unless TEXTCLS_HOME / TEXTCLS_CACHE are set."""
    env = dict(os.environ)
    for var in ("TEXTCLS_HOME", "TEXTCLS_CACHE"):
        env.setdefault(var, str(Path(tmp) / var.lower()))
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def app_pages() -> list[tuple[str, str]]:
    """(file, title) of app.py's PAGES whose file exists, in the sidebar's order."""
    tree = ast.parse((REPO / "app.py").read_text())
    pages = next(ast.literal_eval(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "PAGES" for t in n.targets))
    return [(f, t) for f, t, _ in pages if (REPO / f).is_file()]


def sst2_checkpoints() -> dict[str, str]:
    """{name: model} of the sst2 checkpoints (a Hugging Face encoder's model is hf:ARCHITECTURE)."""
    root = Path(os.environ.get("TEXTCLS_CHECKPOINTS", "").strip() or REPO / "checkpoints").expanduser()
    out = {}
    for cfg in sorted(root.glob("*/config.json")):
        try:
            meta = json.loads(cfg.read_text())
        except (OSError, ValueError):
            continue
        data = meta.get("data")
        if (data.get("name") if isinstance(data, dict) else data) == "sst2":
            hf = meta.get("hf_config") if isinstance(meta.get("hf_config"), dict) else meta
            arch = hf.get("architectures") if isinstance(hf.get("architectures"), list) else None
            out[cfg.parent.name] = "hf:" + str(arch[0] if arch else "?") if arch or "hf_config" in meta \
                else str(meta.get("model"))
    return out


# ---------------------------------------------------------------- the browser side

class Bench:
    def __init__(self, page, url: str, timeout: float, quiet: float):
        self.page, self.url, self.timeout, self.quiet = page, url, timeout, quiet
        self.clicked = time.time()          # when the last action was taken (--trace's timeline)

    def track(self, pred: str = "() => true", require_run: bool = True) -> None:
        self.page.evaluate(TRACK_JS.replace("PRED", pred).replace("REQUIRE_RUN", json.dumps(require_run)))

    def done(self) -> float:
        """Wait until the tracked condition has held for --quiet seconds; the time (epoch s) it started to."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        try:
            since = self.page.wait_for_function(
                f"() => window.__tr && window.__tr.since !== null && Date.now() - window.__tr.since >= "
                f"{int(self.quiet * 1000)} ? window.__tr.since : null", polling=50, timeout=self.timeout * 1000)
        except PlaywrightTimeout:
            state = self.page.evaluate("""() => ({url: location.href, seen: window.__tr && window.__tr.seen,
              state: (document.querySelector('[data-testid="stApp"]') || {getAttribute: () => null})
                       .getAttribute('data-test-script-state'),
              stale: document.querySelectorAll('[data-stale="true"]').length})""")
            raise Step(f"not shown within {self.timeout:.0f} s ({state})") from None
        return since.json_value() / 1000

    def exceptions(self) -> int:
        return self.page.locator('[data-testid="stException"]').count()

    def title(self) -> str:
        return self.page.evaluate(f"() => {H1_JS}()")

    def main_text(self) -> str:
        return self.page.locator(MAIN).first.inner_text()

    def goto_page(self, title: str, file: str) -> float:
        """Click the page in the sidebar (or open its URL when there is no such link); seconds to shown."""
        self.track(page_pred(self.title()), require_run=False)
        link = self.page.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True)
        t = self.clicked = time.time()
        if link.count():
            link.first.click()
        else:
            self.page.goto(f"{self.url}/{Path(file).stem}", wait_until="domcontentloaded")
            self.track(page_pred(""), require_run=False)
        return self.done() - t

    def submit(self, button: str, box: str | None, text: str | None) -> float:
        """Type text into the text box labelled box (if given), click the button; seconds to the run shown."""
        if box is not None:
            self.page.get_by_role("textbox", name=box).first.fill(text)
        btn = self.page.get_by_role("button", name=button, exact=True)
        if not btn.count():
            raise Step(f"no button {button!r} on the page")
        self.track(require_run=True)
        t = self.clicked = time.time()
        btn.first.click()
        return self.done() - t

    def click(self, prefix: str) -> float:
        """Click the button whose label starts with prefix; seconds to the run shown."""
        btn = self.page.get_by_role("button", name=re.compile("^" + re.escape(prefix)))
        if not btn.count():
            raise Step(f"no button starting {prefix!r} on the page")
        self.track(require_run=True)
        t = self.clicked = time.time()
        btn.first.click()
        return self.done() - t

    def switch_view(self) -> tuple[float, str]:
        """Pick another option of the selector labelled View (select box, radio or segmented control)."""
        pg = self.page
        label = re.compile(r"^\s*View\s*$")
        sel = pg.locator('[data-testid="stSelectbox"]').filter(has=pg.locator("label").filter(has_text=label))
        radio = pg.locator('[data-testid="stRadio"]').filter(has=pg.locator("label").filter(has_text=label))
        seg = pg.locator('[data-testid="stButtonGroup"]').filter(has=pg.locator("label").filter(has_text=label))
        if sel.count():
            sel.first.click()
            options = pg.get_by_role("option")
            options.first.wait_for()
            names = [o.strip() for o in options.all_inner_texts()]
            pick = next((k for k in range(options.count())
                         if options.nth(k).get_attribute("aria-selected") != "true"), None)
            if pick is None:
                raise Step(f"the view selector has a single option ({names})")
            self.track(FIGURE_PRED, require_run=True)
            t = self.clicked = time.time()
            options.nth(pick).click()
        elif radio.count():                               # st.radio: click the label of an unchecked option
            opts = radio.first.locator('label[data-baseweb="radio"]')
            names = [o.strip() for o in opts.all_inner_texts()]
            pick = next((k for k in range(opts.count()) if not opts.nth(k).locator("input").is_checked()), None)
            if pick is None:
                raise Step(f"the view selector has a single option ({names})")
            self.track(FIGURE_PRED, require_run=True)
            t = self.clicked = time.time()
            opts.nth(pick).click()
        elif seg.count():                                 # st.segmented_control / st.pills: an inactive button
            opts = seg.first.get_by_role("button")
            names = [o.strip() for o in opts.all_inner_texts()]
            pick = next((k for k in range(opts.count())
                         if not (opts.nth(k).get_attribute("data-testid") or "").endswith("Active")), None)
            if pick is None:
                raise Step(f"the view selector has a single option ({names})")
            self.track(FIGURE_PRED, require_run=True)
            t = self.clicked = time.time()
            opts.nth(pick).click()
        else:
            raise Step("no selector labelled 'View' on the page")
        return self.done() - t, names[pick]


# ---------------------------------------------------------------- the run

def run(args) -> dict:
    from playwright.sync_api import sync_playwright

    pages = FLOOR_PAGES if args.floor else app_pages()
    sst2 = sst2_checkpoints()
    pretrained = [n for n, model in sst2.items() if str(model).startswith("hf:")]
    out: dict = {"floor": args.floor, "load": args.load, "cpus": os.cpu_count(), "quiet_s": args.quiet,
                 "figures": {}, "details": {}, "errors": {}, "exceptions": {}, "outside_requests": [], "cpu": []}
    server: subprocess.Popen | None = None
    tmp = tempfile.TemporaryDirectory(prefix="textcls-bench-")
    env = fresh_env(tmp.name)
    log_path = Path(tmp.name) / "streamlit.log"
    trace_path = Path(tmp.name) / "trace.txt"
    if args.trace:
        env["TEXTCLS_TRACE"] = str(trace_path)
    requests: list[str] = []

    def figure(key: str, seconds: float, target: float) -> None:
        out["figures"][key] = {"seconds": round(seconds, 3), "target_s": target, "ok": seconds <= target}
        cpu_mark(key, seconds)

    def cpu_mark(key: str, seconds: float) -> None:     # CPU seconds each role has used since the start, and when
        now = cpu_by_role(server.pid if server is not None else None, load.pids)
        if now:
            out["cpu"].append({"after": key, "at_s": round(time.time() - t0, 3),
                               **{k: round(v - cpu0.get(k, 0.0), 3) for k, v in now.items()}})
        if args.trace:
            start = t0 if key == "home" else b.clicked
            with open(trace_path, "a", encoding="utf-8") as f:
                f.write(f"FIGURE:{key.replace(' ', '_')} {start:.3f} {start + seconds:.3f}\n")

    load = BusyLoad(args.load)      # the busy processes of `bench --latency`: always stopped, also if we are killed
    try:
        load.start()
        out["load_pids"] = load.pids
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1400, "height": 1800})
            context.add_init_script(WS_COUNT_JS)
            context.on("request", lambda r: requests.append(r.url))
            page = context.new_page()
            page.set_default_timeout(args.timeout * 1000)
            port = args.port or free_port()
            url = f"http://127.0.0.1:{port}"
            b = Bench(page, url, args.timeout, args.quiet)

            cpu0 = cpu_by_role(None, load.pids)
            t0 = time.time()
            app = write_floor_app(Path(tmp.name) / "floor") if args.floor else None
            server = start_server(env, port, log_path, app)
            wait_healthy(server, url, log_path, args.timeout)
            out["details"]["server_up_s"] = round(time.time() - t0, 3)
            page.goto(url, wait_until="domcontentloaded")
            b.track(HOME_PRED, require_run=False)
            try:
                figure("home", b.done() - t0, TARGETS["home"])
            except Step as e:
                out["errors"]["home"] = str(e)
            out["exceptions"]["Home"] = b.exceptions()

            for file, title in [(f, t) for f, t in pages[1:] if not args.pages or t in args.pages]:
                stem = Path(file).stem
                try:
                    figure(f"page {title}", b.goto_page(title, file), TARGETS["page"])
                except Step as e:
                    out["errors"][f"page {title}"] = str(e)
                    continue
                finally:
                    out["exceptions"][title] = b.exceptions()
                if args.floor:
                    continue
                try:
                    if stem == "compare":
                        figure("compare", b.submit("Compare", "Sentence", COMPARE_SENTENCE), TARGETS["compare"])
                        answers = b.main_text().count("confidence ")
                        out["details"]["compare_answers"] = answers
                        out["details"]["compare_expected"] = len(sst2) - len(pretrained)
                        if pretrained:      # one click adds the pretrained baseline (it loads), then a new sentence
                            figure("compare add pretrained", b.click(PRETRAINED_BUTTON), TARGETS["add_pretrained"])
                            figure("compare +pretrained", b.submit("Compare", "Sentence", COMPARE_SENTENCE_2),
                                   TARGETS["compare"])
                            out["details"]["compare_pretrained_answers"] = b.main_text().count("confidence ")
                    elif stem == "inspect":
                        seconds, view = b.switch_view()
                        figure("inspect switch", seconds, TARGETS["inspect_switch"])
                        out["details"]["inspect_view"] = view
                    elif stem == "attribute":
                        figure("attribute", b.submit("Explain", "Sentence", ATTRIBUTE_SENTENCE),
                               TARGETS["attribute"])
                        rows = page.eval_on_selector_all(f"{MAIN} .js-plotly-plot .ytick text",
                                                         "els => els.map(e => e.textContent)")
                        rows = {r for r in rows if " · " in r and r.split(" · ")[0] in sst2}
                        out["details"]["attribute_rows"] = len(rows)
                        out["details"]["attribute_expected"] = (len(sst2) - len(pretrained)) * ATTRIBUTE_METHODS
                except Step as e:
                    out["errors"][stem] = str(e)
                out["exceptions"][title] = max(out["exceptions"][title], b.exceptions())
            browser.close()
    finally:
        if server is not None:
            out["server_loaded_torch"] = loaded_torch(server.pid)
            out["server_rss_mb"] = round(rss_mb(server.pid) or 0.0, 1)
            kids = family(server.pid)[1:]           # the model worker (textcls.serve): it stops with the server
            out["server_pid_stopped"] = stop([server])[0]
            end = time.time() + 5
            while time.time() < end and any(Path(f"/proc/{k}").exists() for k in kids):
                time.sleep(0.1)
            out["worker_pids"] = kids
            out["worker_left_running"] = [k for k in kids if Path(f"/proc/{k}").exists()]
        procs = list(load.procs)
        load.stop()
        out["load_pids_stopped"] = [p.pid for p in procs]
        out["load_left_running"] = [p.pid for p in procs if p.poll() is None]
        log = log_path.read_text() if log_path.exists() else ""
        out["details"]["inotify_lines"] = log.count("Inotify")
        if args.trace and trace_path.exists():
            from textcls.runtime.trace import read
            start = t0 if "t0" in locals() else 0.0
            out["timeline"] = [(what, round(a - start, 3), round(b_ - start, 3)) for what, a, b_ in read(str(trace_path))]
        tmp.cleanup()
    out["outside_requests"] = sorted({u for u in requests if urlsplit(u).scheme not in ("data", "blob")
                                      and (urlsplit(u).hostname or "") not in LOCAL_HOSTS})
    out["details"]["requests"] = len(requests)
    return out


def report(out: dict) -> str:
    what = "a bare Streamlit app (--floor)" if out.get("floor") else "textcls app"
    lines = [f"{what} in headless Chromium: {out['load']} busy background process(es), {out['cpus']} CPUs "
             f"(a figure = until shown and idle for {out['quiet_s']} s)"]
    for key, f in out["figures"].items():
        lines.append(f"  {key:<24} {f['seconds']:7.2f} s   target {f['target_s']:g} s   "
                     f"{'ok' if f['ok'] else 'SLOW'}")
    for key, e in out["errors"].items():
        lines.append(f"  {key:<24} not measured: {e}")
    d = out["details"]
    if "server_up_s" in d:
        lines.append(f"  (server answered its health check {d['server_up_s']:.2f} s after the start)")
    if "compare_answers" in d:
        lines.append(f"  compare answers shown: {d['compare_answers']} (sst2 checkpoints: {d['compare_expected']})")
    if "inspect_view" in d:
        lines.append(f"  inspect switched to the view: {d['inspect_view']}")
    if "attribute_rows" in d:
        lines.append(f"  attribute: {d['attribute_rows']} 'checkpoint · method' rows in the grid (sst2 checkpoints x "
                     f"{ATTRIBUTE_METHODS} methods: {d['attribute_expected']})")
    if out.get("cpu"):
        lines.append(f"  CPU seconds between one figure's end and the next's (the first from the start), by role; "
                     f"'left' = {out['cpus']} CPUs x wall - the machine's use:")
        prev = {"at_s": 0.0}
        for c in out["cpu"]:
            d_ = {k: c.get(k, 0.0) - prev.get(k, 0.0) for k in ("at_s", "server", "worker", "browser", "busy",
                                                                  "machine")}
            left = out["cpus"] * d_["at_s"] - d_["machine"] if "machine" in c else float("nan")
            lines.append(f"    to {c['after']:<24} wall {d_['at_s']:6.2f}  server {d_['server']:5.2f}  worker "
                         f"{d_['worker']:5.2f}  browser {d_['browser']:5.2f}  busy {d_['busy']:5.2f}  left {left:5.2f}")
            prev = c
    if out.get("timeline"):
        lines.append("  timeline (--trace; seconds from the start: FIGURE = click to shown, server.page-run = a "
                     "script run, worker.X = a call to the model worker, in-worker.X = work inside it):")
        lines += [f"    {a:7.2f} {b_:7.2f} {b_ - a:6.2f}  {what}" for what, a, b_ in out["timeline"]]
    if "server_loaded_torch" in out:
        lines.append(f"  the server's process at the end: torch imported {out['server_loaded_torch']}, resident memory "
                     f"{out.get('server_rss_mb')} MB")
    bad = {k: v for k, v in out["exceptions"].items() if v}
    lines.append(f"  exceptions shown: {bad or 'none'}")
    lines.append(f"  requests to other hosts: {out['outside_requests'] or 'none'} (of {d.get('requests', 0)})")
    lines.append(f"  'Inotify' lines in the server log: {d.get('inotify_lines', 0)}")
    lines.append(f"  stopped: server {out.get('server_pid_stopped')} (its children - the model worker and "
                 f"multiprocessing's resource tracker - {out.get('worker_pids')}), "
                 f"busy processes {out['load_pids_stopped']}"
                 + (f"; STILL RUNNING: {out['load_left_running']}" if out["load_left_running"] else "")
                 + (f"; WORKER STILL RUNNING: {out['worker_left_running']}" if out.get("worker_left_running") else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--load", type=int, default=0, metavar="N", help="busy background processes during the run")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    ap.add_argument("--port", type=int, default=0, help="the server's port (default: a free one)")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds allowed for each step")
    ap.add_argument("--quiet", type=float, default=0.5, help="seconds a figure must stay shown and idle")
    ap.add_argument("--trace", action="store_true",
                    help="also print the timeline of the app's work (TEXTCLS_TRACE: page runs, model-worker calls, "
                         "the worker's imports and loads) beside the figures")
    ap.add_argument("--pages", type=lambda v: [p.strip() for p in v.split(",") if p.strip()], default=None,
                    metavar="TITLES", help="only these pages after Home, comma-separated titles (default: all)")
    ap.add_argument("--floor", action="store_true",
                    help="measure a bare Streamlit app instead (Home's table, Compare's kinds of widget, one Plotly "
                         "chart; this repository's config): the least any app takes here for those figures")
    args = ap.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)", file=sys.stderr)
        return 2
    if args.load < 0:
        ap.error("--load must be >= 0")
    # SIGTERM/SIGHUP end the run like Ctrl-C does, so the finally: block stops every process it started.
    def interrupted(signum, frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)
    try:
        out = run(args)
    except KeyboardInterrupt as e:
        print(f"interrupted ({e or 'Ctrl-C'}): the server, the browser and the busy processes were stopped",
              file=sys.stderr)
        return 130
    print(json.dumps(out, indent=1) if args.json else report(out))
    return 0 if not out["errors"] and not out["outside_requests"] and not any(out["exceptions"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
