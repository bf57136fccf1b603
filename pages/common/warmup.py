"""What the app does ahead of the person, once per server process, so that no first visit waits for it.

Two moments:
- **Start-up** (`lifespan`, run by the server before any browser has connected; app.py serves itself as an
  `st.App`): import the modules the first page imports and read every checkpoint's summary (no torch). Home's
  first run then only draws. It shares the interpreter with the server sending the browser the app's JavaScript.
- **After the first page is drawn** (`warm_up`, called by app.py after each run; once per process): import torch
  and the models (what Compare needs), validate every checkpoint of ours in full (a Hugging Face folder's deep
  check waits until someone selects it: pages.common.cache), import Captum (Attribute) and
  what every page imports at its top, then compute Evaluate's default predictions (`_prefetch_evaluate`).

With the model worker (textcls.serve.client; on unless TEXTCLS_WORKER=0) the start-up also starts that process
and has it work ahead in its own interpreter (`warm_worker`): import torch, load the main task's small models,
validate every other checkpoint of ours, then, in a thread of its own there, transformers and the pretrained
encoder. None of it holds this interpreter's lock: Home and a Compare clicked at once only share the cores with
it. The warm-up after the first page then has the worker compute Evaluate's predictions, one batch at a time, and
imports the other pages' modules here once the server has been quiet for `QUIET_HEAVY` seconds. None of them
imports torch: with the worker on, this process never does (Train reads the models' torch-free configs,
textcls.models.configs, and asks the worker for a parameter count).

The second part gives way. Before each step (and each batch of predictions) it waits until the server is quiet:
no page running (app.py wraps each run in `page_run`), no file being served over HTTP (`Served`: the browser
fetching Streamlit's JavaScript chunks, the dataframe's and Plotly's among them) and neither for `QUIET` seconds,
or until `PATIENCE` seconds have passed. The start-up runs while the browser loads the app's JavaScript, in the
interpreter that serves those files.

Why the steps come in this order and wait this long, with the measurements behind each choice: docs/performance.md,
"Why the start-up and the worker are arranged as they are".
"""
from __future__ import annotations

import ast
import atexit
import importlib
import importlib.util
import inspect
import threading
import time
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

_ACTIVE = 0                     # page runs and HTTP requests in progress, of any session
_LAST_ACTIVE_END = 0.0          # time.monotonic() when the last one ended
_CHANGED = threading.Condition()
PATIENCE = 30.0                 # seconds a step waits for quiet before it goes on regardless
QUIET = 0.1                     # seconds without a page run or an HTTP request before a step starts (see below)
QUIET_HEAVY = 1.0               # with the worker: quiet seconds before this process imports the other pages' modules


def _begin() -> None:
    global _ACTIVE
    with _CHANGED:
        _ACTIVE += 1


def _end() -> None:
    global _ACTIVE, _LAST_ACTIVE_END
    with _CHANGED:
        _ACTIVE -= 1
        _LAST_ACTIVE_END = time.monotonic()
        _CHANGED.notify_all()


@contextmanager
def page_run():
    """Around each script run (app.py): each checkpoint's stamp is read once in it (cache.one_reading), and the
    warm-up gives way to it between its steps. A page clicked straight after Home then shares the two cores and
    the interpreter lock with nothing but the step already under way (importing torch, which it needs itself), not
    with Captum's import, the validation or Evaluate's predictions."""
    from pages.common.cache import one_reading
    from textcls.runtime.trace import span
    _begin()
    try:
        with span("server.page-run"), one_reading():
            yield
    finally:
        _end()


class Served:
    """ASGI middleware (app.py's st.App): counts the HTTP requests being served, so the warm-up waits while the
    browser fetches files. Websockets (the script runs' messages) pass uncounted: `page_run` covers those."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope.get("type") != "http":
            return await self.app(scope, receive, send)
        _begin()
        try:
            return await self.app(scope, receive, send)
        finally:
            _end()


def _give_way(quiet: float | None = None) -> bool:
    """Before a step of the warm-up: wait until the server has been quiet for QUIET seconds (or PATIENCE has
    passed: it goes on regardless). False only when the process is stopping."""
    return _wait_until_quiet(quiet=QUIET if quiet is None else quiet) or not _STOPPING.is_set()


def _wait_until_quiet(patience: float | None = None, quiet: float = 0.0) -> bool:
    """Block until no page runs, no HTTP request is being served and none of either ended in the last `quiet`
    seconds (True: the person is reading), or until `patience` seconds have passed (False)."""
    deadline = time.monotonic() + (PATIENCE if patience is None else patience)
    with _CHANGED:
        while not _STOPPING.is_set():
            now = time.monotonic()
            calm = _LAST_ACTIVE_END + quiet - now
            if _ACTIVE == 0 and calm <= 0:
                return True
            if now >= deadline:
                return False
            _CHANGED.wait(timeout=min(deadline - now, calm if _ACTIVE == 0 else deadline - now))
    return False


_STOPPING = threading.Event()     # set at exit: the threads stop between two steps or batches
_THREADS: list[threading.Thread] = []


@atexit.register
def _stop(timeout: float = 10.0) -> None:
    """At exit (a server stopped, a test run ending): stop the threads and wait for them. A daemon thread still
    inside torch when the interpreter finalises aborts the process ("terminate called without an active
    exception", exit status 134)."""
    _STOPPING.set()
    with _CHANGED:
        _CHANGED.notify_all()
    for t in list(_THREADS):
        if t is not threading.current_thread():
            t.join(timeout)


def _start(name: str, target) -> threading.Thread:
    t = threading.Thread(target=target, name=name, daemon=True)
    _THREADS.append(t)
    t.start()
    return t


# ---------------------------------------------------------------- start-up: what a page imports

def page_imports(page: str | Path) -> list[str]:
    """The modules a page script imports at its top level (`import a.b`, `from a import b` with b a module: both
    a and a.b), in order, without running it. Streamlit itself is left out (the server has imported it)."""
    tree = ast.parse(Path(page).read_text(encoding="utf-8"))
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module != "__future__":
            names.append(node.module)
            for a in node.names:
                try:
                    if importlib.util.find_spec(f"{node.module}.{a.name}") is not None:
                        names.append(f"{node.module}.{a.name}")
                except (ImportError, ValueError):   # the parent is not a package: `a.name` is not a module
                    pass
    return [n for n in dict.fromkeys(names) if n.split(".")[0] != "streamlit"]


def _import_page_modules(page: str | Path) -> None:
    """Import what `page` imports at its top; best effort (the page imports each itself and shows what fails)."""
    try:
        names = page_imports(page)
    except (OSError, SyntaxError, ValueError):
        return
    for name in names:
        if _STOPPING.is_set():
            return
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001
            pass


def _worker():
    """The server's model worker, or None when it is off (textcls.serve.client)."""
    from textcls.serve import client
    return client.shared() if client.enabled() else None


def warm_worker() -> None:
    """In the worker, ahead of any click: torch (its start), the main task's small models (Compare's first answers;
    each load runs its folder's full check first), the full validation of every other checkpoint of ours (the
    pages list from the files meanwhile: cache.validating_ahead), then - in a thread of its own there - Captum and
    the explanation jobs' modules (so Attribute's first explanation does not wait for them) and the main task's
    pretrained encoder (transformers' import, seconds), so "Add the pretrained baseline" finds it loaded.
    Best effort: a page that needs a model loads it and shows what fails."""
    w = _worker()
    if w is None:
        return
    from textcls.checkpoint import list_all_checkpoints
    from textcls.serve import worker
    from pages.common.defaults import is_pretrained, main_task_checkpoints
    from pages.common.cache import LISTING_DEEP, stamp, validating_ahead
    with validating_ahead():
        infos = [i for i in list_all_checkpoints(include_invalid=True) if i.valid]     # from the files, no torch
        main = set(main_task_checkpoints(infos))
        small = [(str(i.path), stamp(i.path)) for i in infos if i.name in main and not is_pretrained(i)]
        large = [(str(i.path), stamp(i.path)) for i in infos if i.name in main and is_pretrained(i)]
        w.call_env(worker.warm, small)
        _give_way()                           # a page's requests (Compare's next answer) go first
        w.call_env(worker.listing, LISTING_DEEP)          # an HF folder: checked at its load
    if _give_way():                           # a page's requests go first
        w.call_env(worker.warm_background, large)        # Captum's import, then the encoder: in a thread there


def start_up(first_page: str | Path) -> None:
    """At the server's start: start the model worker and have it work ahead (`warm_worker`, in a thread that only
    waits for it), import what the first page imports (Home: pandas and pyarrow for its table, plotly, the app's
    own modules) and read every checkpoint's summary (remembered by textcls.checkpoint per file; no torch), then
    build inspect's map of the loaded modules (Streamlit's first element asks for it). The worker is spawned first,
    so its torch import overlaps all the rest. Best effort: the page does each itself and reports what fails."""
    try:
        if _worker() is not None:               # spawning it first: its torch import overlaps all the rest
            _WORKER_WARM.append(_start("textcls-worker-warm-up", _quietly(warm_worker)))
    except Exception:  # noqa: BLE001 - the pages call the worker themselves and show what fails
        pass
    _import_page_modules(first_page)
    try:
        from textcls.checkpoint import list_all_checkpoints
        list_all_checkpoints(include_invalid=True)
    except Exception:  # noqa: BLE001
        pass
    # Streamlit's first element in a process asks inspect.stack() whether it runs in a REPL, and inspect maps
    # every loaded module to its file to answer. inspect keeps that map, so building it here leaves the page only
    # the modules loaded since.
    inspect.stack(0)


def _quietly(fn):
    def run():
        try:
            fn()
        except Exception:  # noqa: BLE001 - work ahead only; the page does it again and shows what fails
            pass
    return run


def lifespan(first_page: str | Path):
    """The st.App lifespan of app.py: `start_up(first_page)` in a thread as the server starts; when it stops, the
    model worker stopped and the threads waited for."""
    @asynccontextmanager
    async def run(_app):
        _start("textcls-start-up", lambda: start_up(first_page))
        try:
            yield
        finally:
            from textcls.serve import client
            client.stop_shared()
            _stop()
    return run


def worker_notice(state=None) -> str | None:
    """At the end of a page run: one line for what a restart of the model worker (killed, crashed or stuck:
    textcls.serve.client) meant for this run's requests and the page has not shown yet (an error line it showed
    is the message), else None. A session whose requests no restart touched is told nothing, however recent the
    restart. (`state`, the session's st.session_state, is not needed: the run's own calls noted what they met.)"""
    from textcls.serve import client
    if not client.enabled():
        return None
    noted = client.take_notes()                  # this run's: taken even when nothing is said, so none carry over
    client.shared(start=False).check()           # died while idle: replaced now; no request was lost, none told
    return client.untold(noted)


# ---------------------------------------------------------------- after the first page

PREFETCH_BATCH = 64      # texts per step: the page's own batch (Predictor.predict), 20-50 ms of work


def _batches(path, saved: float, texts: tuple[str, ...]):
    """`Predictor.batches` of the checkpoint that `cache.predict` uses, one batch per step: asked of the model
    worker when it is on (it keeps the batches' order between calls), else run here under the batch setting."""
    from pages.common import cache
    w = cache.worker()
    from textcls.serve import worker
    key = f"{path}|{saved}|{cache.texts_key(texts)}"
    w.call_env(worker.prefetch_start, key, str(path), saved, list(texts), PREFETCH_BATCH)
    while (item := w.call(worker.prefetch_next, key)) is not None:
        yield item


def _prefetch_evaluate() -> tuple[tuple[str, ...], list[str]]:
    """Evaluate's first render, computed ahead: its default checkpoints' predictions on its default split. One
    batch at a time, each only when the server has been quiet for QUIET seconds, so a page clicked meanwhile waits
    for one batch at most. The batches are the page's own (`Predictor.batches`: texts sorted by length, the batch
    thread setting), so the predictions are the numbers the page would compute (up to the last bits, when the
    load lets the page use another thread count); `cache.hand_over` keeps them for the page's first `predict`.
    Returns the texts and the checkpoints done."""
    from textcls.data.datasets import DataError, list_datasets
    from pages.common import cache, defaults as d
    from textcls.serve import worker                # validated in full by the worker (no torch here)
    valid = [i for i in cache.worker().call_env(worker.listing, cache.LISTING_DEEP) if i.valid]
    infos = [i for i in valid if i.name in d.main_task_checkpoints(valid, pretrained=False)]
    bundled = list_datasets()
    spec = next((a for a in (d.available_data(d.data_spec(i), bundled) for i in infos) if a), None)
    if spec is None:
        return (), []
    try:
        bundle = cache.dataset(spec)
    except (DataError, ValueError):
        return (), []
    split = bundle.splits[d.default_split(list(bundle.splits))]
    part = d.evaluated_part(split, d.default_limit(len(split)))
    texts, gold = tuple(part.texts), {bundle.labels[y] for y in part.labels}
    done = []
    for info in infos:
        if not gold <= set(info.labels):            # the page leaves such a checkpoint out
            continue
        try:
            if not _give_way():
                return texts, done
            saved = cache.stamp(info.path)
            out: list = [None] * len(texts)
            for index, preds in _batches(info.path, saved, texts):
                for i, p in zip(index, preds):
                    out[i] = p
                if not _give_way():
                    return texts, done
            if any(p is None for p in out):         # a restarted worker forgot the prefetch: the page computes
                continue
            if cache.stamp(info.path) != saved:     # saved again meanwhile: these are another file's answers
                continue
            cache.hand_over(info.path, texts, out)
        except Exception:  # noqa: BLE001 - the page reports a checkpoint that fails; the warm-up only skips it
            continue
        done.append(info.name)
    return texts, done


def _steps(pages: list[Path]) -> None:
    if _worker() is not None:
        # The worker computes Evaluate's predictions (this thread only waits for each batch) after its own warm-up
        # (queued before it, its listing would hold back a Compare clicked meanwhile); this process imports the
        # other pages' modules (no torch: every page's model work is the worker's) only when the person has been
        # reading for QUIET_HEAVY s after that.
        for t in list(_WORKER_WARM):
            t.join()
        try:
            if _give_way():
                _prefetch_evaluate()
        except Exception:  # noqa: BLE001 - work done ahead: the page does it itself and reports what fails
            pass
        if not _give_way(QUIET_HEAVY):
            return
    else:
        if not _give_way():
            return
        # Without the worker, this process does the model work: torch, the full listing and Captum first.
        import textcls.inference  # noqa: F401  (torch and the registry; the listing below imports the models)
        import torch.utils._device  # noqa: F401  (`with torch.device("meta")`: the full checkpoint validation)
        if not _give_way():
            return
        from textcls.checkpoint import list_all_checkpoints
        from pages.common.cache import LISTING_DEEP                 # the pages' listing: no transformers here
        list_all_checkpoints(include_invalid=True, deep=LISTING_DEEP)   # remembered per file: the listing is free
        if not _give_way():
            return
        import textcls.interpret.attributions  # noqa: F401  (Captum; textcls.interpret itself resolves lazily)
        import textcls.interpret.faithfulness  # noqa: F401
    for page in pages:                      # what the other pages import at their top (Train: the registry)
        if not _give_way():
            return
        _import_page_modules(page)
    if _worker() is None:
        try:
            _prefetch_evaluate()
        except Exception:  # noqa: BLE001 - work done ahead: the page does it itself and reports what fails
            pass


_WARM_UP: list[threading.Thread] = []
_WORKER_WARM: list[threading.Thread] = []      # warm_worker's thread: Evaluate's predictions wait for it
_WARM_UP_LOCK = threading.Lock()


def warm_up(pages: list[str | Path] = ()) -> threading.Thread:
    """Once per process, after the first page's run (app.py calls it after every run, with the app's page files):
    in a background thread, what the first visits to the other pages would otherwise do while the person waits
    (`_steps`), each step when the server is quiet. Not torch._dynamo: the full validation on the meta device does
    not need it (textcls.runtime.sizing.meta_model). Not transformers: it would share the CPU and the interpreter
    lock with the page clicked next (docs/performance.md)."""
    with _WARM_UP_LOCK:
        if not _WARM_UP:
            files = [Path(p) for p in pages]
            _WARM_UP.append(_start("textcls-warm-up", lambda: _steps(files)))
        return _WARM_UP[0]
