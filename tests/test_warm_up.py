"""The app's work ahead of the person (pages/common/warmup): the start-up reads what the first page imports, the
warm-up gives way to running pages and to files being served, and what it computes ahead for Evaluate is exactly
what the page would compute itself."""
import asyncio
import subprocess
import sys
import threading
import textwrap
from pathlib import Path

import numpy as np

from pages.common import cache, warmup
from textcls.checkpoint import load_checkpoint

ROOT = Path(__file__).resolve().parents[1]


def test_the_warm_up_waits_while_a_page_runs():
    """Between its steps the warm-up waits for every script run in progress (app.py wraps each in
    warmup.page_run), so a page clicked straight after Home does not share the interpreter with Captum's import."""
    assert warmup._wait_until_quiet(patience=0)
    entered, leave = threading.Event(), threading.Event()

    def a_page() -> None:
        with warmup.page_run():
            entered.set()
            leave.wait(10)

    t = threading.Thread(target=a_page)
    t.start()
    entered.wait(10)
    assert not warmup._wait_until_quiet(patience=0.2)      # a page is running: the warm-up would wait
    leave.set()
    assert warmup._wait_until_quiet(patience=10)           # the page is done: it goes on at once
    assert not warmup._wait_until_quiet(patience=0.05, quiet=5)     # ... unless it must stay quiet a while
    t.join()
    try:
        with warmup.page_run():
            raise RuntimeError("a page that fails")
    except RuntimeError:
        pass
    assert warmup._wait_until_quiet(patience=0)            # a failed run is no longer counted


def test_the_warm_up_waits_while_the_server_sends_a_file_but_not_for_a_websocket():
    """The middleware of app.py's st.App counts HTTP requests in progress (the browser fetching Streamlit's
    JavaScript chunks); a websocket (the script runs' messages, open as long as the tab) is not counted."""
    started, finish = threading.Event(), threading.Event()

    async def slow_file(scope, receive, send):      # an ASGI app that answers once told to
        started.set()
        await asyncio.get_running_loop().run_in_executor(None, finish.wait, 10)

    served = warmup.Served(slow_file)
    t = threading.Thread(target=asyncio.run, args=(served({"type": "http"}, None, None),))
    t.start()
    started.wait(10)
    assert not warmup._wait_until_quiet(patience=0.2)      # a file is being sent: wait
    finish.set()
    t.join(10)
    assert warmup._wait_until_quiet(patience=10)

    started.clear()
    finish.clear()
    t = threading.Thread(target=asyncio.run, args=(served({"type": "websocket"}, None, None),))
    t.start()
    started.wait(10)
    assert warmup._wait_until_quiet(patience=0)            # an open websocket is no reason to wait
    finish.set()
    t.join(10)


def test_page_imports_lists_a_pages_top_level_modules_without_running_it(tmp_path):
    page = tmp_path / "page.py"
    page.write_text(textwrap.dedent("""
        from __future__ import annotations
        import json.tool
        import streamlit as st
        from pages.common import cache, widgets as w, APP_RAN
        from email import message_from_string
        raise SystemExit("a page is never run to read its imports")
        def f():
            import wave
        """))
    names = warmup.page_imports(page)
    assert names == ["json.tool", "pages.common", "pages.common.cache", "pages.common.widgets", "email"]
    home = warmup.page_imports(ROOT / "pages" / "home.py")
    assert "pandas" in home and "pages.common.widgets" in home and not any(n.startswith("streamlit") for n in home)


def test_the_start_up_imports_the_first_pages_modules_and_reads_every_checkpoint(tmp_path):
    """In a fresh interpreter: after start_up, the page's imports are loaded and the checkpoint listing it does
    is answered from memory (the summaries are remembered per file), all without importing torch."""
    page = tmp_path / "page.py"
    page.write_text("import pandas\nfrom textcls.analysis import metrics\n")
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from pages.common import warmup
        from textcls.checkpoint import native as checkpoint
        warmup.start_up({str(page)!r})
        assert "pandas" in sys.modules and "textcls.analysis.metrics" in sys.modules
        reads = []
        original = checkpoint.read_config
        checkpoint.read_config = lambda p: reads.append(p) or original(p)
        infos = checkpoint.list_all_checkpoints(include_invalid=True)
        print(len(infos), len(reads), "torch" in sys.modules)
        """)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    n, reads, torch = out.stdout.split()
    assert int(n) > 0 and reads == "0" and torch == "False"


def test_evaluate_predictions_computed_ahead_are_the_pages_own_numbers(shipped_predictors):
    """The warm-up predicts Evaluate's default checkpoints on its default split batch by batch while no page runs;
    the page's first `predict` then takes those, and they are the numbers the page would compute (the same
    batches and thread setting; a different thread count under another load changes only the last bits)."""
    texts, done = warmup._prefetch_evaluate()
    assert len(done) >= 2 and len(texts) > 1000        # the main task's small checkpoints (six sst2 ones shipped)
    info = next(i for i in cache.checkpoints(deep=True)[0] if i.name == done[0])
    assert cache.handed_over(info.path, texts)
    path = Path(info.path)
    shipped = path.parent.resolve() == (ROOT / "checkpoints").resolve()
    own = (shipped_predictors[path.name] if shipped else load_checkpoint(path)).predict(list(texts))
    ahead = cache.predict(info.path, texts)              # the page's call: takes what was computed ahead
    assert not cache.handed_over(info.path, texts)
    assert [p.label for p in ahead] == [p.label for p in own]
    # the same batches; the thread count the machine's load allows may differ, and with it the last bits
    assert np.allclose([list(p.probabilities.values()) for p in ahead],
                       [list(p.probabilities.values()) for p in own], rtol=0, atol=1e-6)


def test_predictions_handed_over_are_taken_once_and_only_for_the_same_files(tmp_path):
    """`cache.hand_over` is keyed by the checkpoint's modification time and the texts: the first `predict` of the
    same texts takes them (later ones come from Streamlit's cache), another text list does not, nor does a
    checkpoint saved again meanwhile; a list of the wrong length is refused."""
    import os
    import shutil

    src = next(i for i in cache.checkpoints(deep=True)[0] if i.model == "kim_cnn")
    path = tmp_path / "ckpt"
    shutil.copytree(src.path, path)
    texts = ("a fine film", "a dull one")
    marker = ["ahead 1", "ahead 2"]                      # not predictions: shows where an answer came from
    cache.hand_over(path, texts, marker)
    assert cache.handed_over(path, texts) and not cache.handed_over(path, texts[:1])
    st = os.stat(path / "model.safetensors")
    os.utime(path / "model.safetensors", (st.st_atime, st.st_mtime + 5))     # saved again
    assert not cache.handed_over(path, texts)
    computed = cache.predict(path, texts)
    assert [p.label for p in computed] and computed != marker            # the model's, not what waited
    cache.hand_over(path, texts[::-1], marker)
    assert cache.predict(path, texts[::-1]) == marker and not cache.handed_over(path, texts[::-1])
    assert cache.predict(path, texts[::-1]) == marker                     # Streamlit's cache from now on
    try:
        cache.hand_over(path, texts, marker[:1])
    except ValueError as e:
        assert "1 predictions for 2 texts" in str(e)
    else:
        raise AssertionError("a list of the wrong length was taken")


def test_texts_key_tells_apart_what_a_join_would_confuse():
    assert cache.texts_key(["a b", "c"]) != cache.texts_key(["a", "b c"])
    assert cache.texts_key(["ab"]) != cache.texts_key(["a", "b"]) != cache.texts_key([])
    assert cache.texts_key(("x", "y")) == cache.texts_key(["x", "y"])
    assert cache.texts_key(["\ud800 lone surrogate"])       # any str, even one that is not valid UTF-8
