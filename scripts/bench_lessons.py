"""How fast each lesson step answers: `python scripts/bench_lessons.py [--browser] [--shots DIR] [--port N]`.

Library: every step of every lesson (textcls.teach.lessons.run_step) on the shipped checkpoints, in lesson order as a
class walks them - "first" includes loading a checkpoint not used by an earlier step, "again" is the step
computed once more with every model loaded (what a step costs the app when its result is not cached yet).
--browser: the real app (`streamlit run app.py`, headless, on --port) in headless Chromium: each lesson opened
by its URL, then walked with Next; the time from the click to the step's figure drawn and the app idle.
--shots DIR: a full-page screenshot of every step there (and one step in presenter mode).
Target (issue 31): each step answers in under 2 s on an idle machine. Report the machine's load with the numbers.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

TARGET_S = 2.0


def bench_library() -> list[dict]:
    import torch
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1") or 1))
    from textcls.teach import lessons

    lib = lessons.default_library()
    rows = []
    for lesson in lessons.LESSONS:
        for k, step in enumerate(lesson.steps):
            t0 = time.perf_counter()
            r = lessons.run_step(step, lib)
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            lessons.run_step(step, lib)
            again = time.perf_counter() - t0
            rows.append({"lesson": lesson.id, "step": k + 1, "kind": step.kind, "first_s": first, "again_s": again,
                         "figures": len(r.figures), "missing": r.missing})
    return rows


IDLE_STEP_JS = """(want) => {
  const app = document.querySelector('[data-testid="stApp"]');
  const h = document.querySelector('[data-testid="stMainBlockContainer"] h3');
  const fig = document.querySelector('.st-key-lesson_figure .js-plotly-plot .main-svg, '
                                     + '.st-key-lesson_figure [data-testid="stHtml"] span');
  return !!app && app.getAttribute('data-test-script-state') === 'notRunning' && !!h && h.textContent.startsWith(want)
    && !!fig && !document.querySelector('[data-stale="true"], [data-testid="stSkeleton"]');
}"""


LAB_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
    && !!document.querySelector('[data-testid="stMainBlockContainer"] .js-plotly-plot .main-svg .scatterlayer path');
}"""


def bench_browser(port: int, shots: Path | None) -> list[dict]:
    from playwright.sync_api import sync_playwright

    from bench_app import CHROMIUM, CHROMIUM_ARGS, fresh_env, start_server, stop, wait_healthy
    from textcls.teach import lessons

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        env = fresh_env(tmp)
        env.setdefault("OMP_NUM_THREADS", "1")
        log = Path(tmp) / "streamlit.log"
        server = start_server(env, port, log)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(server, url, log, 120)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 2600 if shots else 1000})
                page.set_default_timeout(120_000)
                for lesson in lessons.LESSONS:
                    for k, step in enumerate(lesson.steps):
                        t0 = time.perf_counter()
                        if k == 0:
                            page.goto(f"{url}/lessons?lesson={lesson.id}&step=1")
                        else:
                            page.get_by_role("button", name="Next").click()
                        page.wait_for_function(IDLE_STEP_JS, arg=f"Step {k + 1} of")
                        dt = time.perf_counter() - t0
                        rows.append({"lesson": lesson.id, "step": k + 1, "browser_s": dt,
                                     "how": "opened by URL" if k == 0 else "Next"})
                        if shots is not None:
                            page.wait_for_timeout(400)                   # Plotly's transitions settle
                            page.screenshot(path=str(shots / f"{lesson.id}_{k + 1}.png"), full_page=True)
                # the baseline, in the same conditions: the Lab page opened by URL until its first figure is drawn
                t0 = time.perf_counter()
                page.goto(f"{url}/lab")
                page.wait_for_function(LAB_JS)
                rows.append({"lesson": "(Lab page)", "step": 1, "browser_s": time.perf_counter() - t0,
                             "how": "baseline: Lab opened by URL"})
                if shots is not None:
                    page.goto(f"{url}/lessons?lesson=explanation&step=1&presenter=1")
                    page.wait_for_function(IDLE_STEP_JS, arg="Step 1 of")
                    page.wait_for_timeout(400)
                    page.screenshot(path=str(shots / "presenter_explanation_1.png"), full_page=True)
                browser.close()
        finally:
            stop([server])
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--browser", action="store_true", help="also time the real app in headless Chromium")
    ap.add_argument("--shots", type=Path, help="save a screenshot of every step here (implies --browser)")
    ap.add_argument("--skip-library", action="store_true", help="only the browser part")
    ap.add_argument("--port", type=int, default=0, help="the Streamlit port (default: a free one)")
    args = ap.parse_args(argv)
    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs")
    rows = [] if args.skip_library else bench_library()
    print("\nLibrary (run_step; 'first' loads the checkpoints a step is the first to use):")
    print(f"{'lesson':16} {'step':>4} {'kind':18} {'first s':>8} {'again s':>8}  figures")
    for r in rows:
        print(f"{r['lesson']:16} {r['step']:>4} {r['kind']:18} {r['first_s']:8.2f} {r['again_s']:8.2f}  "
              f"{r['figures']}{'  MISSING: ' + r['missing'] if r['missing'] else ''}")
    worst = max(rows, key=lambda r: r["again_s"], default=None)
    if worst:
        print(f"slowest step with the models loaded: {worst['lesson']} {worst['step']} {worst['again_s']:.2f} s "
              f"(target {TARGET_S} s); steps over: {sum(r['again_s'] > TARGET_S for r in rows)} of {len(rows)}")
    if args.browser or args.shots:
        if args.shots:
            args.shots.mkdir(parents=True, exist_ok=True)
        from bench_app import free_port
        brows = bench_browser(args.port or free_port(), args.shots)
        print("\nBrowser (click or URL -> the step's figure drawn and the app idle; a fresh server):")
        for r in brows:
            print(f"{r['lesson']:16} {r['step']:>4} {r['browser_s']:8.2f} s  {r['how']}")
        nxt = [r["browser_s"] for r in brows if r["how"] == "Next"]
        base = [r["browser_s"] for r in brows if r["how"].startswith("baseline")]
        if base:
            print(f"baseline (same server, same load): the Lab page opened by URL to its first figure {base[0]:.2f} s")
        print(f"Next: median {sorted(nxt)[len(nxt) // 2]:.2f} s, max {max(nxt):.2f} s over {len(nxt)} steps")
    print(f"load average after: {os.getloadavg()[0]:.2f} (1 min)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
