"""Many users at once on one app server, in real headless Chromium sessions: `python scripts/bench_crowd.py`.

Starts `streamlit run app.py` (as scripts/bench_app.py does: headless, a free port, a fresh user folder) and
runs two scenarios with one browser and one context (its own Streamlit session) per user:

  crowd       --sessions users (default 8) on Compare, all at once, each submitting --rounds new sentences
              (no two alike, so no answer comes from a cache): seconds from the click on Compare until every
              checkpoint's answer is shown. Target: p95 under 3 s.
  training    two sessions start a training run each on the Train page (kim_cnn on sst2 with its defaults and
              many epochs, so they run throughout), then --beside users (default 4) work beside them: half
              submit new sentences on Compare, half switch views in Inspect. Target: p95 under 5 s for each.

--clients socket runs the crowd scenario without browsers: each session speaks Streamlit's protocol over the
app's websocket (scripts/st_client.py) and times each submit until the server's run of it is over. That is the
server's side of a class whose browsers are on the students' machines, not on the server's cores (here eight
Chromium sessions take 85-90 % of the two cores). --sessions 30 is a class.

--floor runs the crowd scenario on a bare Streamlit app instead (written to a temporary folder, this repository's
.streamlit/config.toml): its Compare page draws the same widgets and, for each submitted sentence, six cards of
"confidence" and the sentence's words shaded one by one (HTML, as Compare draws its answers) - no model, no torch.
Its p95 is the least any Streamlit app takes here for that many browser sessions, to read the target against.

Throughout, the resident memory of the server and of its model worker (textcls.serve: the process of its own
that holds the models, a child of the server) is sampled every 0.2 s, summed (target: under 2 GB); the CPU
seconds are reported for each of the two. "Shown": the script
run is over, nothing is stale or loading, every chart is drawn, and the page shows the answer to this action - on
Compare the word shading of this very sentence (each ends in its own 'take K'), in Inspect a figure other than the
one before. (A condition on the page alone: a fast run can start and end within one browser task, so waiting to
see the script state go to "running" and back missed about 1 submit in 20.) Each action also reports "answer
received": from the click until the server's last websocket message of it arrived (the server's share, without
the browser's drawing; on this machine the server waits for the browsers' CPU too). A failed action leaves a
screenshot and its websocket message counts in the report. The trainings are stopped with their Stop buttons at
the end and the server, browser and any busy processes (--load) are stopped by PID. Numbers from a machine that
others share are indicative only.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_app import (CHROMIUM, CHROMIUM_ARGS, FIGURE_PRED, HOME_PRED, MAIN, TRACK_JS, WS_COUNT_JS,  # noqa: E402
                       BusyLoad, cpu_seconds, family, fresh_env, free_port, start_server, stop, wait_healthy,
                       write_floor_app)

# What the figures of the main area show: their text (titles, tick labels, HTML) and the images' addresses.
FIGURE_SIGNATURE = (f"() => Array.from(document.querySelectorAll('{MAIN} .js-plotly-plot, "
                    f"{MAIN} [data-testid=\"stHtml\"], {MAIN} [data-testid=\"stImage\"] img'))"
                    f".map(e => e.tagName === 'IMG' ? e.src : e.textContent).join('|')")
# --floor: Compare's widgets and, per submitted sentence, its answer's shape (six cards, each word shaded) as HTML
FLOOR_CROWD_FILES = {
    "app.py": """import streamlit as st
st.set_page_config(page_title="floor", layout="wide")
st.navigation([st.Page("pages/home.py", title="Home", default=True), st.Page("pages/compare.py", title="Compare")]).run()
""",
    "pages/home.py": """import streamlit as st
st.title("Home")
""",
    "pages/compare.py": """import html
import zlib
import streamlit as st
names = [f"model-{i}" for i in range(6)]
st.title("Compare")
st.segmented_control("Task", ["sst2", "trec", "all"], default="sst2")
st.multiselect("Checkpoints", names, default=names)
st.radio("Input", ["One sentence", "Many sentences"], horizontal=True)
with st.form("one"):
    text = st.text_area("Sentence", "the food was great but the service was slow .")
    st.form_submit_button("Compare", type="primary")
def card(i, name):
    p = 0.5 + (zlib.crc32(f"{name}{text}".encode()) % 500) / 1000
    words = "".join(f"<span style='background:rgba(192,57,43,{(zlib.crc32(w.encode()) % 100) / 100:.2f});"
                    f"padding:1px 2px'>{html.escape(w)}</span> " for w in text.split())
    return (f"<div style='display:inline-block;width:30%;border:1px solid #ddd;padding:8px;margin:4px'>"
            f"<b>{name}</b> positive, confidence {p:.2f}<div style='background:#c0392b;width:{int(200 * p)}px;"
            f"height:8px'></div><p>{words}</p></div>")
st.html("".join(card(i, n) for i, n in enumerate(names)))
""",
}
TARGETS = {"crowd compare": 2.0, "training compare": 5.0, "training inspect": 5.0, "memory_mb": 2048}
ADJ = ["warm", "dull", "clever", "tedious", "lovely", "clumsy", "bright", "bleak", "gentle", "loud", "subtle", "flat"]
NOUN = ["film", "story", "cast", "script", "ending", "score", "plot", "pace", "dialogue", "finale"]


def sentence(k: int) -> str:
    """The k-th test sentence: every k gives another one (12 x 10 x 12 x 10 combinations)."""
    a, n, b, m = ADJ[k % 12], NOUN[(k // 12) % 10], ADJ[(k // 120) % 12], NOUN[(k // 1440) % 10]
    return f"the {n} is {a} but the {m} feels {b} , take {k} ."


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    v = sorted(values)
    return round(v[min(len(v) - 1, max(0, int(round(q / 100 * len(v) + 0.5)) - 1))], 3)


def summary(times: list[float]) -> dict:
    return {"n": len(times), "p50": pct(times, 50), "p95": pct(times, 95), "max": round(max(times), 3) if times
            else None}


class RssSampler:
    """The resident memory of a process and its children (the model worker), summed, sampled every `every`
    seconds in a thread; `.peak_mb` and `.mark()`."""

    def __init__(self, pid: int, every: float = 0.2):
        self.pid, self.every, self.peak_mb, self._stop = pid, every, 0.0, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            kb = 0
            for pid in family(self.pid):
                try:
                    with open(f"/proc/{pid}/status") as f:
                        kb += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
                except (OSError, StopIteration, ValueError):
                    pass
            self.peak_mb = max(self.peak_mb, kb / 1024)
            self._stop.wait(self.every)

    def mark(self) -> float:
        """The peak so far, and start a new one."""
        peak, self.peak_mb = self.peak_mb, 0.0
        return round(peak, 1)

    def start(self) -> "RssSampler":
        self.thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()


class CpuMeter:
    """CPU seconds of the server and of all browser processes between `mark()` calls: where a scenario's time
    went (on this machine the browsers share the server's cores; a real crowd's browsers do not)."""

    def __init__(self, server_pid: int):
        self.server_pid = server_pid
        self.last = self._now()

    def _now(self) -> tuple[float, float, float, float, float]:
        workers = [p for p in family(self.server_pid) if p != self.server_pid]
        return (time.time(), cpu_seconds(self.server_pid), cpu_seconds(comm="chrom"),
                sum(cpu_seconds(p) for p in workers), cpu_seconds(os.getpid()))

    def busy(self) -> float:
        """CPU seconds the server and its worker have used so far."""
        return cpu_seconds(self.server_pid) + sum(cpu_seconds(p) for p in family(self.server_pid)
                                                  if p != self.server_pid)

    def mark(self) -> dict:
        now, last = self._now(), self.last
        self.last = now
        wall = max(now[0] - last[0], 1e-9)
        return {"server_cpu_s": round(now[1] - last[1], 2), "browser_cpu_s": round(now[2] - last[2], 2),
                "worker_cpu_s": round(max(0.0, now[3] - last[3]), 2), "clients_cpu_s": round(now[4] - last[4], 2),
                "wall_s": round(wall, 1)}


class User:
    """One browser context (one Streamlit session) driven with Playwright's async API."""

    def __init__(self, browser, url: str, timeout: float, quiet: float):
        self.browser, self.url, self.timeout, self.quiet = browser, url, timeout, quiet

    async def open(self, stem: str) -> None:
        self.ctx = await self.browser.new_context(viewport={"width": 1400, "height": 1600})
        await self.ctx.add_init_script(WS_COUNT_JS)
        self.page = await self.ctx.new_page()
        self.page.set_default_timeout(self.timeout * 1000)
        await self.page.goto(f"{self.url}/{stem}", wait_until="domcontentloaded")
        await self.track(HOME_PRED.replace("stDataFrame", "stElementContainer"), require_run=False)
        await self.done()

    async def track(self, pred: str = "() => true", require_run: bool = True) -> None:
        await self.page.evaluate(TRACK_JS.replace("PRED", pred).replace("REQUIRE_RUN", json.dumps(require_run)))

    async def done(self) -> float:
        since = await self.page.wait_for_function(
            f"() => window.__tr && window.__tr.since !== null && Date.now() - window.__tr.since >= "
            f"{int(self.quiet * 1000)} ? window.__tr.since : null", polling=50, timeout=self.timeout * 1000)
        return await since.json_value() / 1000

    async def compare(self, text: str) -> float:
        """Submit `text` on Compare: seconds until the answer for this text is shown. "For this text": its words,
        ending in the sentence's unique 'take K', are in the page's word-shading block (a fast run can start and
        end within one browser task, so a script state seen running is not required)."""
        mark = json.dumps(text.rsplit(",", 1)[-1].strip(" ."))
        await self.page.get_by_role("textbox", name="Sentence").first.fill(text)
        await self.track(f"() => document.querySelector('{MAIN}').textContent.includes('confidence ') && "
                         f"Array.from(document.querySelectorAll('{MAIN} [data-testid=\"stHtml\"]'))"
                         f".some(e => e.textContent.includes({mark}))", require_run=False)
        t = time.time()
        await self.page.get_by_role("button", name="Compare", exact=True).first.click()
        return await self.finished(t)

    async def switch_view(self) -> float:
        """Pick another view in Inspect's View box: seconds until a figure other than the one before is drawn."""
        pg = self.page
        sel = pg.locator('[data-testid="stSelectbox"]').filter(has=pg.locator("label").filter(has_text="View"))
        await sel.first.click()
        options = pg.get_by_role("option")
        await options.first.wait_for()
        pick = 0
        for k in range(await options.count()):
            if await options.nth(k).get_attribute("aria-selected") != "true":
                pick = k
                break
        before = json.dumps(await pg.evaluate(FIGURE_SIGNATURE))
        await self.track(f"() => ({FIGURE_PRED})() && ({FIGURE_SIGNATURE})() !== {before}", require_run=False)
        t = time.time()
        await options.nth(pick).click()
        return await self.finished(t)

    async def finished(self, t: float) -> float:
        """Seconds from `t` (the click) until the answer is shown; `self.answered`: until the server's last message
        of it reached the page (the server's share, without the browser's drawing; WS_COUNT_JS counts the messages
        since track() marked them, just before the click)."""
        shown = await self.done() - t
        n, last = await self.page.evaluate("() => [(window.__wsIn || 0) - window.__tr.mark, window.__wsLast || 0]")
        self.answered = max(0.0, last / 1000 - t) if n > 0 else float("nan")
        return shown

    async def start_training(self, epochs: int) -> None:
        pg = self.page
        box = pg.get_by_label("Epochs")
        await box.fill(str(epochs))
        await box.press("Tab")
        await pg.get_by_role("button", name="Start training").click()
        try:
            await pg.get_by_text("Epochs done").first.wait_for(timeout=self.timeout * 1000)
        except Exception:
            shot = Path(tempfile.gettempdir()) / "bench_crowd_train.png"
            await pg.screenshot(path=str(shot), full_page=True)
            raise RuntimeError(f"the training run did not start within {self.timeout:g} s (screenshot: {shot})") \
                from None

    async def stop_training(self) -> None:
        btn = self.page.get_by_role("button", name="Stop", exact=True)
        if await btn.count():
            await btn.first.click()

    async def shot(self, name: str) -> str:
        """A full-page screenshot (and the script state) after a failed action: what the user was looking at."""
        path = Path(tempfile.gettempdir()) / f"bench_crowd_{name}.png"
        try:
            await self.page.screenshot(path=str(path), full_page=True)
            state = await self.page.evaluate(
                "() => { const a = document.querySelector('[data-testid=\"stApp\"]');"
                " return JSON.stringify({state: a ? a.getAttribute('data-test-script-state') : 'no app',"
                " seen: window.__tr && window.__tr.seen, since: window.__tr && window.__tr.since,"
                " messages_since_click: (window.__wsIn || 0) - (window.__tr ? window.__tr.mark : 0)}); }")
        except Exception as e:  # noqa: BLE001 - the page may be gone
            return f"(no screenshot: {type(e).__name__})"
        return f"(script state {state}; screenshot {path})"

    async def close(self) -> None:
        await self.ctx.close()


class Log:
    """The times of one scenario's actions: shown (click to answer drawn) and answered (click to the server's last
    message of it), per kind of action, with the round of each."""

    def __init__(self):
        self.rows: list[tuple[str, int, float, float]] = []

    def add(self, action: str, r: int, u: "User", shown: float) -> None:
        self.rows.append((action, r, shown, u.answered))

    def summary(self, action: str) -> dict:
        rows = [x for x in self.rows if x[0] == action]
        out = summary([x[2] for x in rows])
        out["answered"] = summary([x[3] for x in rows if x[3] == x[3]])       # nan: no message arrived
        out["by_round"] = [[x[1], round(x[2], 2)] for x in rows]
        return out


async def scenario_crowd(make_user, args, errors: list[str]) -> Log:
    users = [make_user() for _ in range(args.sessions)]
    await asyncio.gather(*(u.open("compare") for u in users))
    log = Log()

    async def work(i: int, u: User) -> None:
        for r in range(args.rounds):
            try:
                log.add("compare", r, u, await u.compare(sentence(1000 * i + r)))
            except Exception as e:  # noqa: BLE001 - one failed submit is reported, the others go on
                errors.append(f"crowd user {i} round {r}: {type(e).__name__}: {str(e)[:200]} "
                              f"{await u.shot(f'crowd_{i}_{r}')}")

    await asyncio.gather(*(work(i, u) for i, u in enumerate(users)))
    await asyncio.gather(*(u.close() for u in users))
    return log


async def scenario_training(browser, url, args, errors: list[str]) -> Log:
    trainers = [User(browser, url, args.timeout, args.quiet) for _ in range(2)]
    for t in trainers:         # one after the other: the page then offers the second a name the first did not take
        await t.open("train")
        await t.start_training(args.train_epochs)
    n_cmp = (args.beside + 1) // 2
    users = [User(browser, url, args.timeout, args.quiet) for _ in range(args.beside)]
    await asyncio.gather(*(u.open("compare" if i < n_cmp else "inspect") for i, u in enumerate(users)))
    log = Log()

    async def work(i: int, u: User) -> None:
        for r in range(args.rounds):
            try:
                if i < n_cmp:
                    log.add("compare", r, u, await u.compare(sentence(50_000 + 1000 * i + r)))
                else:                    # round 0 draws a Plotly view for the first time in this tab
                    log.add("inspect", r, u, await u.switch_view())
            except Exception as e:  # noqa: BLE001
                errors.append(f"training user {i} round {r}: {type(e).__name__}: {str(e)[:200]} "
                              f"{await u.shot(f'training_{i}_{r}')}")

    await asyncio.gather(*(work(i, u) for i, u in enumerate(users)))
    await asyncio.gather(*(t.stop_training() for t in trainers))
    await asyncio.gather(*(u.close() for u in users + trainers))
    return log


async def run_async(args, url: str, rss: RssSampler, out: dict, cpu: "CpuMeter") -> None:
    if args.clients == "socket":
        from st_client import SocketUser

        await warm_up(lambda: SocketUser(url, args.timeout), rss, cpu, args.settle, out)
        await crowd(lambda: SocketUser(url, args.timeout), args, rss, out, cpu)
        return
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        await warm_up(lambda: User(browser, url, args.timeout, args.quiet), rss, cpu, args.settle, out)
        if "crowd" in args.scenarios:
            await crowd(lambda: User(browser, url, args.timeout, args.quiet), args, rss, out, cpu)
        if "training" in args.scenarios:
            t = time.time()
            log = await scenario_training(browser, url, args, out["errors"])
            out["scenarios"]["training"] = {"users": args.beside, "trainings": 2, "compare": log.summary("compare"),
                                            "inspect": log.summary("inspect"), "seconds": round(time.time() - t, 1),
                                            "peak_rss_mb": rss.mark(), "cpu": cpu.mark()}
        await browser.close()


async def warm_up(make_user, rss: RssSampler, cpu: "CpuMeter", settle: float = 0.0, out: dict | None = None) -> None:
    """One session answers once before timing (the models loaded); with `settle`, then up to that many seconds
    until the server and its worker are quiet (the start-up's work ahead done: under 0.05 cores for two
    seconds running); then the meters start."""
    warm = make_user()
    await warm.open("compare")
    await warm.compare(sentence(999_999))
    await warm.close()
    if settle > 0:
        t0, quiet = time.time(), 0
        before = cpu.busy()
        while time.time() - t0 < settle and quiet < 2:
            await asyncio.sleep(1.0)
            now = cpu.busy()
            quiet = quiet + 1 if now - before < 0.05 else 0
            before = now
        if out is not None:
            out["settled_s"] = round(time.time() - t0, 1) if quiet >= 2 else None
    rss.mark()
    cpu.mark()


async def crowd(make_user, args, rss: RssSampler, out: dict, cpu: "CpuMeter") -> None:
    """The crowd scenario with sessions from `make_user()`: its figures into out["scenarios"]["crowd"]."""
    t = time.time()
    log = await scenario_crowd(make_user, args, out["errors"])
    out["scenarios"]["crowd"] = {"users": args.sessions, "compare": log.summary("compare"),
                                 "seconds": round(time.time() - t, 1), "peak_rss_mb": rss.mark(), "cpu": cpu.mark()}


def report(out: dict) -> str:
    clients = "sessions over websockets, no browser" if out.get("clients") == "socket" else "browser sessions"
    lines = [f"{'a bare Streamlit app (--floor)' if out.get('floor') else 'textcls app'}, many {clients} at once: "
             f"{out['load']} busy background process(es), {out['cpus']} CPUs"]
    for name, sc in out["scenarios"].items():
        lines.append(f"  {name}: {sc['users']} users" + (f" beside {sc['trainings']} trainings" if "trainings" in sc
                                                         else "") + f", {sc['seconds']} s")
        for action in ("compare", "inspect"):
            if action in sc and sc[action]["n"]:
                s, target = sc[action], TARGETS[f"{name} {action}"]
                lines.append(f"    {action:<8} n={s['n']:<3} p50 {s['p50']:6.2f} s  p95 {s['p95']:6.2f} s  "
                             f"max {s['max']:6.2f} s   target p95 < {target:g} s  "
                             f"{'ok' if s['p95'] < target else 'SLOW'}")
                a = s["answered"]
                if a["n"]:
                    lines.append(f"      answer received (server's share): p50 {a['p50']:6.2f} s  "
                                 f"p95 {a['p95']:6.2f} s  max {a['max']:6.2f} s")
        lines.append(f"    server + model worker memory peak {sc['peak_rss_mb']:,.0f} MB "
                     f"(target < {TARGETS['memory_mb']:,} MB)")
        c = sc["cpu"]
        lines.append(f"    CPU seconds over {c['wall_s']:g} s: server {c['server_cpu_s']:g}, model worker "
                     f"{c.get('worker_cpu_s', 0):g}, browsers {c['browser_cpu_s']:g}"
                     + (f", the websocket clients {c['clients_cpu_s']:g}" if out.get("clients") == "socket" else "")
                     + f" (of {out['cpus'] * c['wall_s']:g} available)")
        acts = sum(sc[a]["n"] for a in ("compare", "inspect") if a in sc)
        if acts:
            lines.append(f"    per action: server {1000 * c['server_cpu_s'] / acts:.0f} ms, model worker "
                         f"{1000 * c.get('worker_cpu_s', 0) / acts:.0f} ms of CPU")
    if "settled_s" in out:
        lines.append(f"  timed after the start-up's work ahead: quiet after {out['settled_s']} s" if out["settled_s"]
                     is not None else "  the server and its worker did not fall quiet within --settle")
    lines.append(f"  server memory at start {out['start_rss_mb']:,.0f} MB; errors: {out['errors'] or 'none'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=8, help="users in the crowd scenario (default 8)")
    ap.add_argument("--beside", type=int, default=4, help="users beside the two trainings (default 4)")
    ap.add_argument("--rounds", type=int, default=5, help="actions per user (default 5)")
    ap.add_argument("--train-epochs", type=int, default=30, help="epochs of each training run (they are stopped)")
    ap.add_argument("--scenarios", default="crowd,training", help="comma-separated: crowd, training")
    ap.add_argument("--load", type=int, default=0, metavar="N", help="busy background processes during the run")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds allowed for each action")
    ap.add_argument("--quiet", type=float, default=0.3, help="seconds a result must stay shown and idle")
    ap.add_argument("--settle", type=float, default=0.0, metavar="S",
                    help="after the warm-up answer, wait up to S seconds for the server and its worker to finish the "
                         "start-up's work ahead (quiet for 2 s) before timing: a class arriving at a server that "
                         "has been up a while (default 0: at once, as a class arriving with the server's start)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--floor", action="store_true",
                    help="the crowd scenario on a bare Streamlit app (Compare's widgets and answer HTML, no model)")
    ap.add_argument("--clients", choices=["browser", "socket"], default="browser",
                    help="browser: headless Chromium sessions; socket: the crowd scenario's sessions over Streamlit's "
                         "websocket protocol, no browser (the server's side of a class on its own machines)")
    args = ap.parse_args(argv)
    if args.clients == "socket":
        args.scenarios = "crowd"
    elif not Path(CHROMIUM).exists():
        print(f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)", file=sys.stderr)
        return 2
    if args.floor:
        args.scenarios = "crowd"
    out: dict = {"load": args.load, "cpus": os.cpu_count(), "floor": args.floor, "clients": args.clients,
                 "scenarios": {}, "errors": []}
    tmp = tempfile.TemporaryDirectory(prefix="textcls-crowd-")
    log_path = Path(tmp.name) / "streamlit.log"
    load = BusyLoad(args.load)
    server = None
    try:
        load.start()
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        app = write_floor_app(Path(tmp.name) / "floor", FLOOR_CROWD_FILES) if args.floor else None
        server = start_server(fresh_env(tmp.name), port, log_path, app)
        wait_healthy(server, url, log_path, args.timeout)
        rss = RssSampler(server.pid).start()
        time.sleep(0.5)
        out["start_rss_mb"] = rss.peak_mb
        try:
            asyncio.run(run_async(args, url, rss, out, CpuMeter(server.pid)))
        finally:
            rss.stop()
    finally:
        if server is not None:
            stop([server])
        load.stop()
        tmp.cleanup()
    print(json.dumps(out, indent=1) if args.json else report(out))
    return 1 if out["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
