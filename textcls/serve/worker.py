"""What runs inside the model worker process (textcls.serve.client starts it): the loaded models, bounded least
recently used, and the calls the server makes, each a module-level function of plain arguments that returns plain
picklable data (no model, no tensor crosses).

- `initialize(parent_pid, max_models)`: the process's start: it exits by itself when its server is gone (a
  server killed without a chance to stop it), then imports torch and the model families.
- `listing(roots_env, deep)`: the checkpoint listing (`list_all_checkpoints`), validated in full when `deep`.
- `predict(path, stamp, texts, maps)`: `Predictor.predict` of one checkpoint; `predict_groups` runs several
  sessions' texts of one checkpoint in one batch and hands each its own part (textcls.serve.client batches).
- `start_job(key, job, wait, *args)` / `job_result(key, wait)`: every other piece of model work the pages ask for -
  a model's facts, Inspect's word pieces, verdict and context mixing, Attribute's explanations, faithfulness,
  sanity checks, interventions and data-set runs, Evaluate's data-set views, Explore's representations and
  counterfactuals, the Lab's demos, the lessons' steps - is a job of textcls.serve.work, computed in a thread
  of this process (at most _JOB_THREADS at once) while the requests' loop goes on answering; the server
  collects the answer.
- `prefetch_start` / `prefetch_next`: one batch at a time of a long prediction (Evaluate's split, computed
  ahead), so the server can pause between batches while a person clicks.
- `warm(paths)`: load checkpoints ahead (the main task's models, then the pretrained encoder).

Threads (textcls.runtime.threads): every call runs in the scope of its kind of work - one text or a handful is
interactive work (1 thread by the default policy: two threads collapse when other processes keep the cores busy),
a prediction of more texts and Evaluate's batches (`prefetch_next`) are batch work - so the model code it calls
(a model's load, the word pieces, the rollout) that opens no scope of its own does not run on torch's default.

Every call carries the server's environment variables that choose folders and settings (`TEXTCLS_*`, `HF_*`),
applied before it runs: the worker answers for the server's folders even when they change after its start
(tests set TEXTCLS_HOME per test).
"""
from __future__ import annotations

import functools
import os
import pickle
import threading
import time
from collections import OrderedDict
from contextlib import nullcontext

from textcls.serve import ahead

_MODELS: OrderedDict = OrderedDict()      # (path, stamp, device) -> Predictor, least recently used first
_MODELS_LOCK = threading.Lock()            # the requests' thread and `warm_background`'s
_LOADING: dict = {}                        # key -> a lock held while that model loads (one load per model)
MAX_MODELS = 12                            # models kept (TEXTCLS_WORKER_MODELS); the six sst2 + six trec ones
_PREFETCH: dict = {}                       # key -> (iterator of batches, number of texts)
_PARENT = 0


def plain_error(e: BaseException) -> BaseException:
    """`e` as the server may receive it: itself when it is one of Python's or textcls's own and pickles (the pages
    tell a CheckpointError from an EntitySpanError); otherwise a RuntimeError saying its type and message. An
    error of torch's or transformers' own type would make the server import them to read it, and one that does not
    pickle would break the pool."""
    module = type(e).__module__ or ""
    if module == "builtins" or module.startswith("textcls."):
        try:
            pickle.loads(pickle.dumps(e))
            return e
        except Exception:  # noqa: BLE001 - not picklable: sent as words
            pass
    return RuntimeError(f"{type(e).__name__}: {e}")


def answers(fn=None, *, work: str | None = "interactive", serves: bool = True):
    """A call the server makes: it runs in the thread scope of `work` ("interactive", "batch", or None: the
    function opens its own), and what it raises crosses as `plain_error`. While a call that `serves` runs (a plain
    request, not a job's start or collection), the work ahead pauses (textcls.serve.ahead)."""
    if fn is None:
        return functools.partial(answers, work=work, serves=serves)

    @functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            with (ahead.serving() if serves else nullcontext()):
                if work is None:
                    return fn(*args, **kwargs)
                from textcls.runtime.threads import scope
                with scope(work):
                    return fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - re-raised as plain data
            plain = plain_error(e)
            if plain is e:
                raise
            raise plain from None
    return run


def _watch_parent(parent_pid: int, every: float = 0.5) -> None:
    """Exit when the server that started this process is gone (its parent changes when it dies)."""
    while True:
        time.sleep(every)
        if os.getppid() != parent_pid:
            os._exit(0)


def initialize(parent_pid: int, max_models: int = MAX_MODELS, imports: bool = True) -> None:
    """ProcessPoolExecutor's initializer: watch the server, bound the models, import torch and the models (the
    work this process exists for), so the first request does not wait for them."""
    global MAX_MODELS, _PARENT
    MAX_MODELS, _PARENT = max(1, int(max_models)), parent_pid
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="textcls-watch-server", daemon=True).start()
    from textcls.runtime.trace import process_start, record, span
    record("in-worker.start-up", process_start())          # the interpreter's start, to here
    if imports:
        with span("in-worker.import-torch"):
            import textcls.inference  # noqa: F401  (torch, the registry, every model)
            import torch.utils._device  # noqa: F401  (the full validation builds models on the meta device)


def set_env(env: dict[str, str]) -> None:
    """Make this process's TEXTCLS_*/HF_* variables those of the server (see the module docstring)."""
    for k in [k for k in os.environ if k.startswith(("TEXTCLS_", "HF_", "TRANSFORMERS_"))]:
        if k not in env:
            del os.environ[k]
    os.environ.update(env)


def predictor(path: str, stamp: float, device: str = "cpu"):
    """The loaded Predictor of a checkpoint folder on `device`, loaded on first use; at most MAX_MODELS are kept
    (the least recently used is dropped), so memory stays flat over a day of use."""
    key = (str(path), float(stamp), device)
    with _MODELS_LOCK:
        p = _MODELS.get(key)
        if p is not None:
            _MODELS.move_to_end(key)
            return p
        loading = _LOADING.setdefault(key, threading.Lock())
    with ahead.waiting(), loading:              # a load under way in the other thread: wait for it, do not repeat
        with _MODELS_LOCK:
            p = _MODELS.get(key)
        if p is None:
            from textcls.checkpoint import load_checkpoint
            from textcls.runtime.trace import span
            with span(f"in-worker.load.{os.path.basename(path)}"):
                p = load_checkpoint(path, device=device)
        with _MODELS_LOCK:
            _MODELS[key] = p
            _MODELS.move_to_end(key)
            while len(_MODELS) > MAX_MODELS:
                _MODELS.popitem(last=False)
            _LOADING.pop(key, None)
    return p


def loaded() -> list[tuple[str, float, str]]:
    """The (path, stamp, device) of the models held now, least recently used first."""
    return list(_MODELS)


def predict_device() -> str:
    """Where plain predictions run: the GPU when there is one (textcls.runtime.devices.app_device); maps and
    explanations stay on the CPU, as in the server."""
    from textcls.runtime.devices import app_device
    return str(app_device())


@answers
def device_description(env: dict[str, str]) -> str:
    set_env(env)
    from textcls.runtime.devices import describe_device
    return describe_device(predict_device())


@answers
def listing(env: dict[str, str], deep: bool | str):
    """`list_all_checkpoints(include_invalid=True, deep=deep)`; the app asks deep="textcls" (a Hugging Face folder's
    deep check waits until someone selects it: its load runs it)."""
    set_env(env)
    from textcls.checkpoint import list_all_checkpoints
    return list_all_checkpoints(include_invalid=True, deep=deep)


@answers(work=None)
def predict(env: dict[str, str], path: str, stamp: float, texts: list[str], maps: bool = False):
    set_env(env)
    from textcls.runtime.threads import for_texts
    with for_texts(len(texts)):             # the load too: one text is interactive work, a split batch work
        p = predictor(path, stamp, "cpu" if maps else predict_device())
        return p.predict(list(texts), return_maps=maps)


@answers(work=None)
def predict_each(env: dict[str, str], checkpoints: list[tuple[str, float]], texts: list[str], maps: bool = False):
    """The same texts' predictions by several checkpoints, one after another in one call (Compare's one round
    trip): a list per checkpoint, or, for one that fails (a folder refused by its check, a text it cannot read),
    the exception, so one checkpoint's failure never fails another's answer."""
    set_env(env)
    from textcls.runtime.threads import for_texts
    out = []
    with for_texts(len(texts)):
        for path, stamp in checkpoints:
            try:
                out.append(predictor(path, stamp, "cpu" if maps else predict_device()).predict(
                    list(texts), return_maps=maps))
            except Exception as e:  # noqa: BLE001 - returned to the page, raised where it shows that checkpoint
                out.append(plain_error(e))
    return out


@answers(work=None)
def predict_groups(env: dict[str, str], path: str, stamp: float, groups: list[list[str]], maps: bool = False):
    """Several requests' texts of one checkpoint in one `predict` (one batch, one pass): a list per group, or, for
    a group whose texts fail (a relation sentence without entity tags, ...), the exception, so one session's bad
    input never fails another's answer."""
    set_env(env)
    from textcls.runtime.threads import for_texts
    with for_texts(sum(map(len, groups))):
        return _predict_groups(path, stamp, groups, maps)


def _predict_groups(path: str, stamp: float, groups: list[list[str]], maps: bool):
    p = predictor(path, stamp, "cpu" if maps else predict_device())
    flat = [t for g in groups for t in g]
    try:
        preds = p.predict(flat, return_maps=maps)
    except Exception:  # noqa: BLE001 - find which group fails, answer the others
        out = []
        for g in groups:
            try:
                out.append(p.predict(list(g), return_maps=maps))
            except Exception as e:  # noqa: BLE001 - returned to that group's caller, raised there
                out.append(plain_error(e))
        return out
    out, k = [], 0
    for g in groups:
        out.append(preds[k:k + len(g)])
        k += len(g)
    return out


class JobLost(RuntimeError):
    """`job_result` of a job this process does not hold: it was started in a process since restarted."""


_JOB_THREADS = 4                  # jobs computed at once (each in its own thread: torch ops let go of the GIL)
_JOB_POOL = None
_JOBS: dict = {}                  # key -> the Future of a job started and not yet collected, oldest first
MAX_UNCOLLECTED = 64              # finished jobs nobody collected (a page stopped while it waited) kept at most
_PROGRESS: dict = {}              # key -> what a running job that reports progress last said: (done, total) or (line,)
_JOBS_LOCK = threading.Lock()


@answers(work=None, serves=False)
def start_job(env: dict[str, str], key: str, job: str, wait: float, *args) -> tuple[bool, object]:
    """Start `textcls.serve.work.<job>(load, *args)` in a thread of this process and wait at most `wait` s for it:
    a short job answers in this one call, a long one leaves the requests' loop free for other sessions'
    predictions while it computes, and `job_result(key)` collects it. Returns what `job_result` returns."""
    from concurrent.futures import ThreadPoolExecutor

    from textcls.serve import work
    global _JOB_POOL
    set_env(env)
    if job not in work.JOBS:
        raise ValueError(f"unknown model job {job!r}")
    with _JOBS_LOCK:
        if _JOB_POOL is None:
            _JOB_POOL = ThreadPoolExecutor(_JOB_THREADS, thread_name_prefix="textcls-job")
        _JOBS[key] = _JOB_POOL.submit(_run_job, key, job, args)
        for old in [k for k, f in _JOBS.items() if f.done()][:max(0, len(_JOBS) - MAX_UNCOLLECTED)]:
            del _JOBS[old]                  # their answers would stay in memory for ever
    return job_result(key, wait)


def run_here(job: str, args: tuple, progress=None):
    """`textcls.serve.work.<job>(load, *args)` in the calling thread on the models kept here (`predictor`): in the
    interactive thread scope unless it is work over many texts that opens its own."""
    from contextlib import nullcontext

    from textcls.runtime.threads import scope
    from textcls.runtime.trace import span
    from textcls.serve import work
    spec = work.get_job(job)
    with span(f"in-worker.job.{job}"), (nullcontext() if spec.own_scope else scope("interactive")):
        return work.run(predictor, job, *args, progress=progress)


def _run_job(key: str, job: str, args: tuple):
    """One job (`run_here`) in a thread of the job pool; the progress it reports is kept for `job_result` (which
    hands on what it raises as `plain_error`)."""
    def progress(*state) -> None:                  # (done, total), or a line saying what it does now
        _PROGRESS[key] = state
    try:
        return run_here(job, args, progress)
    finally:
        _PROGRESS.pop(key, None)


@answers(work=None, serves=False)
def job_result(key: str, wait: float) -> tuple[bool, object]:
    """(True, the answer) of the job `key` once it is done (what it raised is raised here), else (False, its last
    progress - (done, total) or (a line,) - or None) after waiting at most `wait` s. JobLost: no such job here
    (this process was restarted since it started)."""
    from concurrent.futures import TimeoutError as FutureTimeout
    with _JOBS_LOCK:
        future = _JOBS.get(key)
    if future is None:
        raise JobLost(f"no model job {key} in this worker")
    try:
        value = future.result(timeout=wait)
    except FutureTimeout:
        return False, _PROGRESS.get(key)
    except BaseException:
        with _JOBS_LOCK:
            _JOBS.pop(key, None)
        raise
    with _JOBS_LOCK:
        _JOBS.pop(key, None)
    return True, value


@answers(serves=False)
def prefetch_start(env: dict[str, str], key: str, path: str, stamp: float, texts: list[str],
                   batch_size: int = 64) -> int:
    """Begin a long prediction kept here under `key`; `prefetch_next(key)` computes its batches one by one, in
    `Predictor.batches`' order, under the batch thread setting (what the page's own `predict` of as many texts
    does). Returns the number of texts."""
    set_env(env)
    from textcls.runtime.threads import batch
    p = predictor(path, stamp, predict_device())
    _PREFETCH.clear()                       # one at a time
    _PREFETCH[key] = (p.batches(list(texts), batch_size=batch_size), batch)
    return len(texts)


@answers(work=None, serves=False)
def prefetch_next(key: str):
    """The next (positions, predictions) of a prefetch, or None when it is done (or unknown: a restarted worker)."""
    entry = _PREFETCH.get(key)
    if entry is None:
        return None
    batches, batch = entry
    with batch():
        item = next(batches, None)
    if item is None:
        _PREFETCH.pop(key, None)
    return item


@answers(serves=False)
def warm(env: dict[str, str], paths: list[tuple[str, float]]) -> list[str]:
    """Load these checkpoints ahead, in order; returns the errors (one line each) of those that fail."""
    set_env(env)
    errors = []
    for path, stamp in paths:
        try:
            predictor(path, stamp, "cpu")      # Compare's maps: on the CPU
        except Exception as e:  # noqa: BLE001 - the page that uses it loads it again and shows the error
            errors.append(f"{path}: {type(e).__name__}: {e}")
    return errors


def warm_background(env: dict[str, str], paths: list[tuple[str, float]]) -> None:
    """`import_ahead`, then `warm`, in a thread of this process, returning at once: a large model (the pretrained
    encoder: transformers' import, seconds) loads while the requests go on being answered. It gives way to them
    (textcls.serve.ahead): before each module it imports it waits while a request is answered and for
    GIVE_WAY_QUIET s after, unless a request needs a model loaded. Meanwhile the interpreter switches threads
    faster (`textcls.runtime.threads.beside_requests`), so a request answered during one of its steps is not held
    up by it. Why a thread here and not a process of its own: docs/performance.md ("Why the start-up and the
    worker are arranged as they are")."""
    threading.Thread(target=_warm_beside_requests, args=(env, paths), name="textcls-warm-large", daemon=True).start()


AHEAD = ("textcls.interpret.attributions", "textcls.interpret.faithfulness", "textcls.interpret.interventions",
         "textcls.interpret.sanity", "textcls.interpret.batched")    # Captum and the explanation jobs' modules


def import_ahead() -> None:
    """Import the explanation jobs' modules (AHEAD: Captum and the modules that use it), so the first explanation
    a page asks for does not wait for them. `warm_background` runs it before the encoder's load."""
    import importlib

    from textcls.runtime.trace import span
    with span("in-worker.import-interpret"):
        for name in AHEAD:
            importlib.import_module(name)


def _warm_beside_requests(env: dict[str, str], paths: list[tuple[str, float]]) -> None:
    from textcls.runtime.threads import beside_requests
    from textcls.runtime.trace import record
    start = time.time()
    with beside_requests(), ahead.giving_way():
        import_ahead()
        warm(env, paths)
    record("in-worker.ahead-paused", start, start + ahead.paused())   # how long it gave way, from its start


@answers
def request_threads(env: dict[str, str]) -> tuple[int, int]:
    """(torch threads a request of one text runs on here, torch's own default in this process): what the thread
    policy gives the worker's requests (tests, diagnostics)."""
    set_env(env)
    import torch
    from textcls.runtime.threads import torch_default_threads
    return torch.get_num_threads(), torch_default_threads()


def imported(module: str) -> bool:
    """Whether this process has imported `module` (diagnostics, tests: the worker, not the server, imports torch)."""
    import sys
    return module in sys.modules


def pid() -> int:
    return os.getpid()
