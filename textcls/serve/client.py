"""The server's side of the model worker: one process, started with the server, that imports torch and
transformers, loads and validates checkpoints and answers predictions (textcls.serve.worker), so that the
server's own interpreter only lays pages out. Built on the standard library's `concurrent.futures`
ProcessPoolExecutor (one worker process, the "spawn" start method: a fresh interpreter, never a fork of a server
with threads). This module imports neither torch nor Streamlit.

What it survives:
- **Killed or crashed** (the pool breaks): the next call, or the one waiting, starts a new process; a request
  that was waiting when the process died is sent again once (`call`).
- **A request that never answers** (`timeout`, TEXTCLS_WORKER_TIMEOUT, 120 s by default, plus PER_TEXT per text
  of a prediction; a model job - `run_job`: an explanation, a data-set chunk - TEXTCLS_WORKER_JOB_TIMEOUT, 600 s):
  the process is killed, a new one started, and the call raises `WorkerTimeout` (one line) rather than waiting
  for ever. Every request that was waiting on the stuck process ends the same way, with the same `Restart`.

Who is told (one message per restart, true to what happened, only to whom it concerned): each restart is a
`Restart` (which process, why, whether it was stuck). A call it touched notes it in its caller's context
(`take_notes`): "resent" (the request went to the new process) or "failed" (the call raised a WorkerError
carrying `.restart`). The app shows the first such error of a page run, quiets the others of the same restart
(`first_report`), and at the end of the run says in one line what the page has not said yet
(pages.common.warmup.worker_notice). A session that asked nothing meanwhile is told nothing; a process that dies
while idle is replaced silently (`check`), with a line in the server's log.
- **Memory:** the worker keeps at most `max_models` models, least recently used dropped (TEXTCLS_WORKER_MODELS).
- **Two servers on one machine:** each server starts its own process as its child and talks to it over pipes
  only it holds (no port, no file name): nothing can be shared by accident.
- **Stopping:** `stop()` (the server's lifespan ends, or at exit) shuts it down; a server killed outright is
  noticed by the worker itself, which exits within a second (worker.initialize watches its parent).

Many sessions at once: `predict` calls for the same checkpoint that arrive while the worker is busy wait for the
call in flight and then go together as one batch (`worker.predict_groups`; `waiting` says how many wait); with
nobody else asking, a call goes at once, alone. Every other piece of model work (`run_job`: textcls.serve.work)
computes in a thread of the worker, so one session's long explanation does not hold up another's predictions.

`TEXTCLS_WORKER=0` (or off) keeps all model work in the server's process (`enabled()`).
"""
from __future__ import annotations

import contextvars
import multiprocessing
import os
import sys
import threading
import time
import uuid
from concurrent.futures import CancelledError, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass

from textcls.runtime.trace import span
from textcls.serve import worker

ENV = "TEXTCLS_WORKER"
TIMEOUT = 120.0              # seconds a call may take before the worker is deemed stuck (TEXTCLS_WORKER_TIMEOUT)
MAX_MODELS = 12              # models the worker keeps (TEXTCLS_WORKER_MODELS)
JOB_TIMEOUT = 600.0          # seconds a model job (an explanation, a data-set chunk) may take (TEXTCLS_WORKER_JOB_TIMEOUT)
JOB_POLL = 0.02              # how long the worker waits on a job per call (a prediction queued behind waits no more)
PER_TEXT = 0.1               # seconds more a prediction call may take per text (a pretrained encoder, a busy machine)


@dataclass(frozen=True)
class Restart:
    """One restart of the model worker: process `number` (1: the first started) replaced, `reason` in words ("did
    not answer within 120 s", "stopped unexpectedly (killed by signal 9)"), `stuck`: it was alive but did not
    answer (a timeout), not dead."""
    number: int
    reason: str
    stuck: bool = False

    def message(self, outcome: str) -> str:
        """One line: what happened to the worker, then `outcome` (what it meant for the request)."""
        return f"the model worker {self.reason} and was restarted; {outcome}"


class WorkerError(RuntimeError):
    """The model worker could not answer (it stopped twice during one request, or cannot start). `restart`: the
    restart that ended the request, when one did (the pages show one message per restart: `first_report`)."""

    def __init__(self, message: str, restart: Restart | None = None):
        super().__init__(message)
        self.restart = restart


class WorkerTimeout(WorkerError):
    """A request took longer than the worker's timeout, or waited on a process that did; the worker was
    restarted."""


# ------------------------------------------------------------ who a restart concerned

_NOTES: contextvars.ContextVar[list | None] = contextvars.ContextVar("textcls_worker_notes", default=None)
MAX_NOTES = 64                # notes kept per context (a background thread's are never taken)


def notes() -> list:
    """This context's notes - (Restart, "resent" | "failed" | "shown") - created on first use. Hand it to
    `noting_into` in a thread that works for this caller (Compare's requests asked together)."""
    sink = _NOTES.get()
    if sink is None:
        sink = []
        _NOTES.set(sink)
    return sink


@contextmanager
def noting_into(sink: list):
    """Note the restarts the calls made here touch into `sink` (another thread's `notes()`)."""
    token = _NOTES.set(sink)
    try:
        yield
    finally:
        _NOTES.reset(token)


def _note(restart: Restart | None, how: str) -> None:
    if restart is None:
        return
    sink = notes()
    sink.append((restart, how))
    del sink[:-MAX_NOTES]


def take_notes() -> list[tuple[Restart, str]]:
    """This context's notes, which are then forgotten (the app takes them at the end of each page run)."""
    sink = _NOTES.get()
    if not sink:
        return []
    out = list(sink)
    sink.clear()
    return out


def first_report(e: BaseException) -> bool:
    """Whether a page should show the error `e` in full: False for a WorkerError whose restart this context has
    shown already (six checkpoints waiting on one stuck worker give one message, not six). Marks it shown."""
    restart = getattr(e, "restart", None)
    if not isinstance(e, WorkerError) or restart is None:
        return True
    seen = _NOTES.get() or []
    if any(r == restart and how == "shown" for r, how in seen):
        return False
    _note(restart, "shown")
    return True


def handled(e: BaseException) -> None:
    """A caller that got over the WorkerError `e` by itself (the listing done in the server instead): its restart
    lost this page nothing, so nothing is said about it (unless another request of the page met it too)."""
    restart = getattr(e, "restart", None)
    if isinstance(e, WorkerError) and restart is not None:
        _note(restart, "handled")


def untold(notes_taken: list[tuple[Restart, str]]) -> str | None:
    """One line for what `notes_taken` (a page run's `take_notes()`) says that the page has not shown: per restart
    the page did not show (`first_report`), what it meant for this page's requests - work lost (a failure no caller
    got over: `handled`), or a request sent to the new process. None when there is nothing to say."""
    by_restart: dict[Restart, list[str]] = {}
    for r, how in notes_taken:
        by_restart.setdefault(r, []).append(how)
    lines = []
    for r, hows in by_restart.items():
        if "shown" in hows:                         # the page's own error line said it
            continue
        if hows.count("failed") > hows.count("handled"):
            line = r.message("what it was computing for this page was lost: try again.")
        elif "resent" in hows:
            line = r.message("this page's request was sent to the new one (models load again on first use).")
        else:
            continue
        lines.append(line[0].upper() + line[1:])
    return " ".join(lines) or None


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
        self._replaced: dict[int, Restart] = {}     # generation -> the restart that replaced it (the last few)
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

    def _restart(self, generation: int, reason, stuck: bool = False) -> Restart | None:
        """Replace the process of `generation` (unless another thread already has): kill it, start a new one.
        `reason`: words, or a function giving them (computed only when this call restarts). Returns the Restart
        that replaced `generation` - this one, or the one another thread made - or None (the server stopped)."""
        with self._lock:
            if self._stopped or generation != self.generation or self._pool is None:
                return self._replaced.get(generation)
            old = self._pool
        words = reason() if callable(reason) else reason          # may wait a moment for a dead process's code
        with self._lock:
            if self._stopped or generation != self.generation or self._pool is not old:
                return self._replaced.get(generation)
            self._pool = None
            _kill(old)
            self.restarts += 1
            self.last_reason = words
            restart = Restart(generation, words, stuck)
            self._replaced[generation] = restart
            for g in sorted(self._replaced)[:-16]:
                del self._replaced[g]
            self._pool = self._new_pool()
        print(f"textcls: the model worker {words}; process {generation + 1} started", file=sys.stderr)
        return restart

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

    def check(self) -> Restart | None:
        """Replace a process that has died while idle (nobody asked it anything since), so the next request finds
        a live one; returns that Restart (no session is told: no request was lost; the server's log says it).
        Cheap: reads the executor's state, sends nothing."""
        with self._lock:
            pool, generation = self._pool, self.generation
        if pool is None:
            return None
        procs = _processes(pool)
        if getattr(pool, "_broken", False) or any(not p.is_alive() for p in procs):
            return self._restart(generation, lambda: f"stopped unexpectedly{_exit_code(pool)}")
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
            except (BrokenProcessPool, RuntimeError):     # broken, or shut down by a restart in another thread:
                self._restart(generation, lambda: f"stopped unexpectedly{_exit_code(pool)}")    # never sent
                continue
            try:
                return future.result(timeout=limit)
            except (BrokenProcessPool, CancelledError):   # the process died, or another thread's restart killed it
                if self._stopped:
                    raise WorkerError("the model worker has stopped (the server is stopping)") from None
                restart = self._restart(generation, lambda: f"stopped unexpectedly{_exit_code(pool)}")
                if restart is not None and restart.stuck:  # it waited on a stuck process: it ends like the request
                    _note(restart, "failed")               # that timed out (one event, one message)
                    raise WorkerTimeout(restart.message("try again"), restart) from None
                if attempt == 2:
                    _note(restart, "failed")
                    raise WorkerError("the model worker stopped twice while answering this request",
                                      restart) from None
                _note(restart, "resent")
            except FutureTimeout:
                future.cancel()
                restart = self._restart(generation, f"did not answer within {limit:g} s", stuck=True)
                if restart is None:
                    raise WorkerError("the model worker has stopped (the server is stopping)") from None
                _note(restart, "failed")
                raise WorkerTimeout(restart.message("try again"), restart) from None
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
                _, started_on = self._current()
                try:
                    while not done:
                        if value is not None and progress is not None:
                            progress(*value)
                        left = deadline - time.monotonic()
                        if left <= 0:
                            _, generation = self._current()
                            restart = self._restart(generation, f"did not finish a {job} job within {limit:g} s",
                                                    stuck=True)
                            _note(restart, "failed")
                            raise WorkerTimeout(f"the model worker did not finish this within {limit:g} s and was "
                                                "restarted; try again", restart)
                        done, value = self.call(worker.job_result, key, min(JOB_POLL, left))
                    return value
                except worker.JobLost:                      # the process that held it was replaced meanwhile
                    restart = self._replaced.get(started_on)
                    if attempt == 2:
                        _note(restart, "failed")
                        raise WorkerError("the model worker restarted twice while computing this", restart) \
                            from None
                    if not any(r == restart for r, _ in (_NOTES.get() or [])):
                        _note(restart, "resent")            # (a crash during this call's own poll noted it)
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
        for restart, how in slot.get("notes", ()):         # what the batch's call met, noted for this caller
            _note(restart, how)
        if "error" in slot:
            raise slot["error"]
        return slot["result"]

    def waiting(self, path: str, stamp: float, maps: bool = False) -> int | None:
        """How many `predict` requests for this checkpoint wait for the call in flight (they go together as one
        batch when it returns), or None when no call for it is in flight: what the batching is doing now
        (diagnostics, tests)."""
        key = (str(path), float(stamp), bool(maps))
        with self._batch_lock:
            if key not in self._busy:
                return None
            group = self._pending.get(key)
            return 0 if group is None else len(group.items)

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
        met: list = []                                      # the restarts this batch's call met: its callers'
        try:
            groups = [t for t, _ in group.items]
            with noting_into(met):
                out = self.call_env(worker.predict_groups, key[0], key[1], groups, key[2],
                                    timeout=self.timeout + PER_TEXT * sum(map(len, groups)))
            for (_, slot), res in zip(group.items, out):
                slot["error" if isinstance(res, BaseException) else "result"] = res
        except BaseException as e:  # noqa: BLE001 - every waiting request gets the error
            for _, slot in group.items:
                slot["error"] = e
        finally:
            for _, slot in group.items:
                slot["notes"] = list(met)
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
