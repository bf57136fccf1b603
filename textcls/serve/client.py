"""The server's side of the model worker: one process, started with the server, that imports torch and
transformers, loads and validates checkpoints and answers predictions (textcls.serve.worker), so that the
server's own interpreter only lays pages out. Built on the standard library's `concurrent.futures`
ProcessPoolExecutor (one worker process, the "spawn" start method: a fresh interpreter, never a fork of a server
with threads). This module imports neither torch nor Streamlit.

What it survives:
- **Killed or crashed** (the pool breaks): the next call, or the one waiting, starts a new process; a request
  that was waiting when the process died is sent again once (`call`), and `notice()` says in one line what
  happened.
- **A request that never answers** (`timeout`, TEXTCLS_WORKER_TIMEOUT, 120 s by default, plus PER_TEXT per text
  of a prediction; a model job - `run_job`: an explanation, a data-set chunk - TEXTCLS_WORKER_JOB_TIMEOUT, 600 s):
  the process is killed, a new one started, and the call raises `WorkerTimeout` (one line) rather than waiting
  for ever.
- **Memory:** the worker keeps at most `max_models` models, least recently used dropped (TEXTCLS_WORKER_MODELS).
- **Two servers on one machine:** each server starts its own process as its child and talks to it over pipes
  only it holds (no port, no file name): nothing can be shared by accident.
- **Stopping:** `stop()` (the server's lifespan ends, or at exit) shuts it down; a server killed outright is
  noticed by the worker itself, which exits within a second (worker.initialize watches its parent).

Many sessions at once: `predict` calls for the same checkpoint that arrive while the worker is busy wait for the
call in flight and then go together as one batch (`worker.predict_groups`); with nobody else asking, a call
goes at once, alone. Every other piece of model work (`run_job`: textcls.serve.work) computes in a thread of the
worker, so one session's long explanation does not hold up another's predictions.

`TEXTCLS_WORKER=0` (or off) keeps all model work in the server's process (`enabled()`).
"""
from __future__ import annotations

import multiprocessing
import os
import threading
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool

from textcls.runtime.trace import span
from textcls.serve import worker

ENV = "TEXTCLS_WORKER"
TIMEOUT = 120.0              # seconds a call may take before the worker is deemed stuck (TEXTCLS_WORKER_TIMEOUT)
MAX_MODELS = 12              # models the worker keeps (TEXTCLS_WORKER_MODELS)
NOTICE_SECONDS = 120.0       # how long a restart is reported by notice()
JOB_TIMEOUT = 600.0          # seconds a model job (an explanation, a data-set chunk) may take (TEXTCLS_WORKER_JOB_TIMEOUT)
JOB_POLL = 0.02              # how long the worker waits on a job per call (a prediction queued behind waits no more)
PER_TEXT = 0.1               # seconds more a prediction call may take per text (a pretrained encoder, a busy machine)


class WorkerError(RuntimeError):
    """The model worker could not answer (it stopped twice during one request, or cannot start)."""


class WorkerTimeout(WorkerError):
    """A request took longer than the worker's timeout; the worker was restarted."""


def enabled() -> bool:
    """Whether the app's model work runs in the worker process (TEXTCLS_WORKER, on unless 0/off/false/no)."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "off", "false", "no")


def _float_env(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def passed_env() -> dict[str, str]:
    """The server's variables that the worker applies before each call (folders, settings, offline switches)."""
    return {k: v for k, v in os.environ.items() if k.startswith(("TEXTCLS_", "HF_", "TRANSFORMERS_"))}


class _Group:
    """Requests for one (function, checkpoint) waiting to go together."""

    def __init__(self):
        self.items: list[tuple[list[str], dict]] = []      # (texts, slot: {"result"|"error": ...})
        self.done = threading.Event()


class ModelWorker:
    """One worker process and the calls to it; thread-safe (every session's script thread calls it)."""

    def __init__(self, *, timeout: float | None = None, max_models: int | None = None, imports: bool = True):
        self.timeout = timeout if timeout is not None else _float_env("TEXTCLS_WORKER_TIMEOUT", TIMEOUT)
        self.max_models = int(max_models if max_models is not None
                              else _float_env("TEXTCLS_WORKER_MODELS", MAX_MODELS))
        self.imports = imports
        self.job_timeout = _float_env("TEXTCLS_WORKER_JOB_TIMEOUT", JOB_TIMEOUT)
        self.restarts = 0                     # processes started after the first
        self.generation = 0                   # +1 per process started
        self.last_reason = ""                 # why the last restart happened, in words
        self._restarted_at = 0.0
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._stopped = False
        self._batch_lock = threading.Lock()
        self._pending: dict[tuple, _Group] = {}     # (path, stamp, maps) -> requests waiting to go
        self._busy: set[tuple] = set()              # (path, stamp, maps) with a call in flight

    # ------------------------------------------------------------ the process

    def start(self) -> "ModelWorker":
        """Start the process now (it imports torch at once); idempotent."""
        self._current()
        return self

    def _new_pool(self) -> ProcessPoolExecutor:
        pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=worker.initialize,
                                   initargs=(os.getpid(), self.max_models, self.imports))
        pool.submit(worker.pid)               # the executor starts its process on the first submit
        # The executor keeps no public handle on its process (3.14 adds terminate_workers): keep ours, to kill a
        # stuck one and to say how one ended (the executor forgets a broken pool's processes).
        pool._textcls_processes = list(getattr(pool, "_processes", {}).values())
        self.generation += 1
        return pool

    def _current(self) -> tuple[ProcessPoolExecutor, int]:
        with self._lock:
            if self._stopped:
                raise WorkerError("the model worker has stopped (the server is stopping)")
            if self._pool is None:
                self._pool = self._new_pool()
            return self._pool, self.generation

    def _restart(self, generation: int, reason: str) -> None:
        """Replace the process of `generation` (unless another thread already has): kill it, start a new one."""
        with self._lock:
            if self._stopped or generation != self.generation or self._pool is None:
                return
            old, self._pool = self._pool, None
            _kill(old)
            self.restarts += 1
            self.last_reason = reason
            self._restarted_at = time.monotonic()
            self._pool = self._new_pool()

    def pid(self) -> int:
        """The worker process's id (starts it if needed)."""
        return self.call(worker.pid)

    def stop(self) -> None:
        """Stop the process (the server is stopping); later calls raise WorkerError."""
        with self._lock:
            self._stopped = True
            pool, self._pool = self._pool, None
        if pool is not None:
            _kill(pool)

    def check(self) -> str | None:
        """Replace a process that has died while idle (nobody asked it anything since), so the next request finds
        a live one; returns notice() then. Cheap: reads the executor's state, sends nothing."""
        with self._lock:
            pool, generation = self._pool, self.generation
        if pool is None:
            return None
        procs = _processes(pool)
        if getattr(pool, "_broken", False) or any(not p.is_alive() for p in procs):
            self._restart(generation, f"stopped unexpectedly{_exit_code(pool)}")
            return self.notice()
        return None

    def notice(self, seen: int = 0) -> str | None:
        """One line for the page when the worker was restarted recently (and after generation `seen`), else None."""
        if self.restarts and self.generation > max(seen, 1) and \
                time.monotonic() - self._restarted_at < NOTICE_SECONDS:
            return (f"The model worker {self.last_reason} and was restarted; models load again on first use "
                    "(a request it was answering was sent again).")
        return None

    # ------------------------------------------------------------ calls

    def call(self, fn, *args, timeout: float | None = None):
        """fn(*args) in the worker (a module-level function of textcls.serve.worker, or any picklable callable).
        The process died meanwhile: restarted and sent again, once. No answer within `timeout` (default
        self.timeout): the process is restarted and WorkerTimeout raised. What fn raises is raised here."""
        with span(f"worker.{getattr(fn, '__name__', 'call')}"):
            return self._call(fn, args, self.timeout if timeout is None else timeout)

    def _call(self, fn, args, limit: float):
        for attempt in (1, 2):
            pool, generation = self._current()
            try:
                future = pool.submit(fn, *args)
            except (BrokenProcessPool, RuntimeError):     # broken, or shut down by a restart in another thread
                self._restart(generation, "stopped")
                continue
            try:
                return future.result(timeout=limit)
            except BrokenProcessPool:
                self._restart(generation, f"stopped unexpectedly{_exit_code(pool)}")
                if attempt == 2:
                    raise WorkerError("the model worker stopped twice while answering this request") from None
            except FutureTimeout:
                future.cancel()
                self._restart(generation, f"did not answer within {limit:g} s")
                raise WorkerTimeout(f"the model worker did not answer within {limit:g} s and was restarted; "
                                    "try again") from None
        raise WorkerError("the model worker could not be started")

    def call_env(self, fn, *args, timeout: float | None = None):
        """`call(fn, passed_env(), *args)`: the worker functions that read folders take the server's settings."""
        return self.call(fn, passed_env(), *args, timeout=timeout)

    def run_job(self, job: str, *args, timeout: float | None = None, progress=None):
        """`textcls.serve.work.<job>(load, *args)` computed in a thread of the worker (`worker.start_job`), so the
        worker goes on answering other sessions meanwhile: a job done within JOB_POLL s answers in that one call, a
        longer one is polled every JOB_POLL s until done. A worker restarted meanwhile: the job is started again,
        once. No answer within `timeout` (default self.job_timeout): the worker is restarted and WorkerTimeout
        raised. What the job raises is raised here. `progress(*state)`: called at each poll with what a
        job that reports progress last said - (done, total) of a pass over a data set, or a line."""
        limit = self.job_timeout if timeout is None else timeout
        with span(f"worker.job.{job}"):
            for attempt in (1, 2):
                key = uuid.uuid4().hex
                deadline = time.monotonic() + limit
                done, value = self.call_env(worker.start_job, key, job, JOB_POLL, *args)   # a short job: answered
                try:
                    while not done:
                        if value is not None and progress is not None:
                            progress(*value)
                        left = deadline - time.monotonic()
                        if left <= 0:
                            _, generation = self._current()
                            self._restart(generation, f"did not finish its {job} job within {limit:g} s")
                            raise WorkerTimeout(f"the model worker did not finish this within {limit:g} s and was "
                                                "restarted; try again")
                        done, value = self.call(worker.job_result, key, min(JOB_POLL, left))
                    return value
                except worker.JobLost:
                    if attempt == 2:
                        raise WorkerError("the model worker restarted twice while computing this") from None
            raise WorkerError("the model worker could not compute this")

    def predict(self, path: str, stamp: float, texts: list[str], maps: bool = False):
        """Predictions of one checkpoint for texts. Requests for the same checkpoint from several sessions that
        arrive while one is in flight go together as one batch when it returns (see the module docstring)."""
        key = (str(path), float(stamp), bool(maps))
        slot: dict = {}
        with self._batch_lock:
            if key not in self._busy:                       # nobody else: go now, alone
                self._busy.add(key)
                group = None
            else:
                group = self._pending.setdefault(key, _Group())
                group.items.append((list(texts), slot))
        if group is None:
            try:
                return self.call_env(worker.predict, key[0], key[1], list(texts), maps,
                                     timeout=self.timeout + PER_TEXT * len(texts))
            finally:
                self._next(key)
        group.done.wait()
        if "error" in slot:
            raise slot["error"]
        return slot["result"]

    def _next(self, key: tuple) -> None:
        """The call for `key` returned: what waited meanwhile goes as one batch, from a thread of its own (the
        caller returns its answer at once), and so on until nothing waits; then `key` is idle."""
        with self._batch_lock:
            group = self._pending.pop(key, None)
            if group is None:
                self._busy.discard(key)
                return
        threading.Thread(target=self._serve, args=(key, group), name="textcls-batch", daemon=True).start()

    def _serve(self, key: tuple, group: _Group) -> None:
        try:
            groups = [t for t, _ in group.items]
            out = self.call_env(worker.predict_groups, key[0], key[1], groups, key[2],
                                timeout=self.timeout + PER_TEXT * sum(map(len, groups)))
            for (_, slot), res in zip(group.items, out):
                slot["error" if isinstance(res, BaseException) else "result"] = res
        except BaseException as e:  # noqa: BLE001 - every waiting request gets the error
            for _, slot in group.items:
                slot["error"] = e
        finally:
            group.done.set()
            self._next(key)


def _kill(pool: ProcessPoolExecutor) -> None:
    """Stop a pool now: kill its process (a stuck one never returns to read a shutdown) and let it go."""
    for p in _processes(pool):
        try:
            p.kill()
        except Exception:  # noqa: BLE001 - already gone
            pass
    try:
        pool.shutdown(wait=False, cancel_futures=True)
    except Exception:  # noqa: BLE001 - a broken pool may refuse
        pass


def _processes(pool: ProcessPoolExecutor) -> list:
    return list(getattr(pool, "_textcls_processes", None) or getattr(pool, "_processes", {}).values())


def _exit_code(pool: ProcessPoolExecutor) -> str:
    procs = _processes(pool)
    for p in procs:
        p.join(1.0)                           # dead already (the pool broke): reaped at once
    codes = [p.exitcode for p in procs if p.exitcode is not None]
    if not codes:
        return ""
    c = codes[0]
    return f" (killed by signal {-c})" if c < 0 else f" (exit status {c})"


_SHARED: list[ModelWorker] = []
_SHARED_LOCK = threading.Lock()


def shared(start: bool = True) -> ModelWorker:
    """The process-wide worker of this server (one per server process), started on first use."""
    with _SHARED_LOCK:
        if not _SHARED or _SHARED[0]._stopped:
            _SHARED[:] = [ModelWorker()]
        w = _SHARED[0]
    return w.start() if start else w


def stop_shared() -> None:
    """Stop this server's worker, if one was started (the server's lifespan ends; at exit)."""
    with _SHARED_LOCK:
        w = _SHARED[0] if _SHARED else None
    if w is not None:
        w.stop()


# Stop the worker before concurrent.futures joins its threads at exit: that join waits for the request in flight,
# for ever if the worker is stuck. threading's exit hooks run in reverse order of registration, before atexit's.
try:
    threading._register_atexit(stop_shared)    # type: ignore[attr-defined]  (the hook concurrent.futures uses)
except (AttributeError, RuntimeError):          # RuntimeError: registered while the interpreter is stopping
    import atexit
    atexit.register(stop_shared)
