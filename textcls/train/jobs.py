"""Background training jobs: `train_from_spec` in a training process of its own, watched by a thread, with a
thread-safe progress state.

The app's Train page must not train in the Streamlit script thread (a rerun would kill the run, and the page
would freeze), nor in the server's process: a training loop there holds the GIL between its torch calls and
slows every page of every user, its memory cannot be told from the server's, and a crash or the out-of-memory
killer would take the server with it. A `TrainingJob` therefore runs `pipeline.train_from_spec` in a child
process (multiprocessing "spawn"; `isolation="process"`, the default) that sends every event back through a
queue; a daemon thread of the parent relays them to the job's callbacks, which write into a `JobState` under a
lock, and any thread reads a consistent copy with `snapshot()`. A stop is a shared event the training loop checks
before every step. `isolation="thread"` (the default when a custom `runner` is given, e.g. in tests) runs the
runner in the daemon thread itself. A callback that raises fails the run (the training process is killed;
nothing half-written, saves are atomic).

Where jobs live: a `JobRegistry` (jobs by id). A job must outlive the script run - and the page - that started
it, so it cannot live in st.session_state: the app keeps one process-wide registry (`pages/common/cache.py`
`job_registry()`, an st.cache_resource, which also survives the dev server's re-imports of this package) and
keeps only job *ids* in st.session_state. `JOBS` below is the same for library callers (one per import);
`JobRegistry` can also be created on its own (tests do).

Life of a job (`status`):
    running  -> done      the run finished; the checkpoint is saved
             -> stopped   `stop()` was called: the loop stops before its next step; `fit` restores the weights
                          of the best dev epoch so far (or keeps the current ones if no epoch finished) and the
                          checkpoint is saved with them (the test split is not evaluated)
             -> failed    an exception (bad data, no network for a hub id, a bug): nothing new is saved and
                          whatever was on disk stays as it was (checkpoints are written atomically); or the loss
                          became NaN/inf: `fit` stops before the bad update and the checkpoint is saved with the
                          best weights before it; `error` says which.
`phase` says what a running job is doing ("preparing", "training", "stopping", "evaluating and saving").

Events: every step and epoch event of `fit` becomes a small dict in `events` (kind "step" or "epoch"), so a
page can draw loss and dev-accuracy curves; the latest values are also kept as fields.

Budgets (`textcls.runtime.limits`; a job is one of many things a shared server does):
- at most `max_jobs` run at once per registry (per app server);
- memory: the run's training memory is estimated before its first step (`textcls.runtime.sizing`) and must fit in
  `job_max_memory_mb`; while it runs, the training process's resident memory is watched and the run is
  stopped (best weights saved) when it passes `job_max_memory_mb + PROCESS_BASE_MB` (a thread-isolated run:
  when the whole process passes `server_max_memory_mb`), killed if it does not end within KILL_AFTER_S;
- time: after `job_max_seconds` of wall-clock time the run is stopped (best weights saved);
- CPU: a job trains on `job_threads` torch threads (1) at nice +10, so the pages' interactive work goes first
  on a busy machine.
Owners: each job records the `owner` that started it (the app passes its session id). Every session sees every
job (`JobRegistry.ids`), but only the owner may stop one (`stop(job_id, by=owner)`).
"""
from __future__ import annotations

import copy
import dataclasses
import math
import os
import threading
import time
import traceback
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from textcls.runtime import threads
from textcls.runtime.limits import Limits, current
from textcls.runtime.memory import rss_mb

STATUSES = ("running", "done", "stopped", "failed")
FINISHED = ("done", "stopped", "failed")


class JobError(RuntimeError):
    """A job could not be started (too many running, the same output folder, bad arguments)."""


@dataclass
class JobState:
    """What a job has done so far. Read it through `TrainingJob.snapshot()` (a copy), never share it."""

    id: str
    status: str = "running"
    phase: str = "preparing"                   # preparing | training | stopping | evaluating and saving
    error: str = ""                            # why the job failed (or diverged), one paragraph
    traceback: str = ""                        # the exception's traceback, for the curious
    message: str = ""                          # how it ended, in words
    events: list[dict[str, Any]] = field(default_factory=list)
    epoch: int = 0                             # last completed epoch
    epochs: int = 0
    step: int = 0
    total_steps: int = 0
    loss: float | None = None                  # last step's training loss
    dev_accuracy: float | None = None          # last epoch's dev accuracy
    best_epoch: int | None = None
    best_dev_accuracy: float | None = None
    elapsed: float = 0.0                       # seconds of training (fit's clock)
    started: float = 0.0                       # time.time() at start
    finished: float | None = None
    path: str | None = None                    # the checkpoint folder, once saved
    metrics: dict[str, Any] = field(default_factory=dict)   # {"dev": {...}, "test": {...}} summaries
    spec: dict[str, Any] = field(default_factory=dict)      # what was asked for (JSON-able summary)
    stop_requested: bool = False
    stopped_by: str = ""                       # "you" | "time budget" | "memory budget" when stopped
    owner: str = ""                            # who started it (the app: a session id); only they may stop it
    peak_rss_mb: float | None = None           # the process's largest resident memory seen during the run

    @property
    def finished_ok(self) -> bool:
        return self.status == "done"

    @property
    def is_running(self) -> bool:
        return self.status == "running"

    @property
    def fraction(self) -> float:
        """Share of the planned optimiser steps done (0..1)."""
        if self.status in FINISHED:
            return 1.0
        return min(1.0, self.step / self.total_steps) if self.total_steps else 0.0

    @property
    def seconds_left(self) -> float | None:
        """Training time still to go at the pace so far; None before the first step or without a total."""
        if not (self.step and self.total_steps and self.elapsed > 0):
            return None
        return self.elapsed / self.step * (self.total_steps - self.step)

    @property
    def wall_seconds(self) -> float:
        end = self.finished if self.finished is not None else time.time()
        return max(0.0, end - self.started) if self.started else 0.0

    def step_events(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e["kind"] == "step"]

    def epoch_events(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e["kind"] == "epoch"]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _whole_epochs(epochs: Any) -> int:
    """The epochs a run starts (a fraction of an epoch, allowed for hf: encoders, is one started epoch)."""
    try:
        return max(1, math.ceil(float(epochs)))
    except (TypeError, ValueError, OverflowError):
        raise JobError(f"epochs must be a number, got {epochs!r}") from None


def _spec_summary(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A JSON-able description of the job's arguments (a loaded DataBundle is shown by its name)."""
    out: dict[str, Any] = {}
    for k, v in kwargs.items():
        if k in ("callbacks", "stop_event"):
            continue
        if k == "data" and not isinstance(v, (str, Path)):
            v = getattr(v, "name", type(v).__name__)
        out[k] = str(v) if isinstance(v, Path) else copy.deepcopy(v)
    return out


def _metric_summary(metrics: dict[str, Any]) -> dict[str, Any]:
    return {split: {k: rep.get(k) for k in ("accuracy", "macro_f1", "loss", "n")}
            for split, rep in (metrics or {}).items() if isinstance(rep, dict)}


ISOLATIONS = ("process", "thread")
NICE = 10                 # the training's OS priority: interactive work (nice 0) goes first
PROCESS_BASE_MB = 600     # resident memory of a training process before its model: Python, torch, data, GloVe
KILL_AFTER_S = 30         # a run stopped for a budget that has not ended after this long is killed


def lower_priority(nice: int = NICE) -> bool:
    """Lower the calling OS thread's CPU priority (Linux: setpriority on the thread id; threads it starts,
    such as torch's OpenMP workers, inherit it). False where the platform does not allow it."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
        return True
    except (AttributeError, OSError):
        return False


class TrainingJob:
    """One `train_from_spec` run in a daemon thread. See the module docstring.

    kwargs: the keyword arguments of `train_from_spec` (data, model, out, epochs, ...); `out` is required.
    callbacks: extra callbacks given every event after the job's own (tests use them).
    """

    def __init__(self, job_id: str, kwargs: dict[str, Any], callbacks: Iterable[Callable[[Any], None]] = (),
                 runner: Callable[..., Any] | None = None, owner: str = "", limits: Limits | None = None,
                 isolation: str | None = None):
        if not kwargs.get("out"):
            raise JobError("a training job needs an output folder (out=...)")
        if not kwargs.get("model") or kwargs.get("data") is None:
            raise JobError("a training job needs data= and model=")
        self.id = job_id
        self.kwargs = dict(kwargs)
        self.out = Path(kwargs["out"])
        self._callbacks = list(callbacks)
        self._runner = runner
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.limits = limits or current()
        self.isolation = isolation or ("thread" if runner is not None else "process")
        if self.isolation not in ISOLATIONS:
            raise JobError(f"isolation must be one of {ISOLATIONS}, got {self.isolation!r}")
        self.pid: int | None = None               # the training process (isolation "process"), once started
        self._mp_stop = None
        self._state = JobState(job_id, spec=_spec_summary(kwargs), epochs=_whole_epochs(kwargs.get("epochs", 5)),
                               owner=owner)
        self._next_check = 0.0
        self._stop_time = 0.0
        self._thread = threading.Thread(target=self._run, name=f"textcls-train-{job_id}", daemon=True)
        self.result = None                      # thread isolation: the TrainResult once done/stopped (a process
                                                # run leaves its model in the checkpoint it saved)

    # ------------------------------------------------------------ control
    def start(self) -> "TrainingJob":
        with self._lock:
            self._state.started = time.time()
        self._thread.start()
        return self

    def stop(self, reason: str = "you") -> None:
        """Ask the run to stop before its next optimiser step; the best weights so far are saved. `reason`:
        who or what stopped it ("you", "time budget", "memory budget")."""
        with self._lock:
            if self._state.status != "running" or self._state.stop_requested:
                return
            self._state.stop_requested = True
            self._state.stopped_by = reason
            self._state.phase = "stopping"
        self._stop_time = time.time()
        self._stop.set()
        if self._mp_stop is not None:
            self._mp_stop.set()

    def _memory_cap_mb(self) -> int:
        """The resident memory the run may use: its training process's (job_max_memory_mb plus what torch, the
        data and the vocabulary take, PROCESS_BASE_MB), or in a thread the whole server's."""
        if self.isolation == "process":
            return self.limits.job_max_memory_mb + PROCESS_BASE_MB
        return self.limits.server_max_memory_mb

    def _check_budgets(self, pid: int | None = None) -> None:
        """Stop the run when it is over its time budget or its memory budget (`_memory_cap_mb`: the training
        process `pid`, else this process); at most once a second. A stopped run that does not end within
        KILL_AFTER_S seconds of a budget stop is killed (nothing half-written: saves are atomic)."""
        now = time.time()
        if now < self._next_check:
            return
        self._next_check = now + 1.0
        rss = rss_mb(pid)
        with self._lock:
            s = self._state
            if rss is not None:
                s.peak_rss_mb = max(s.peak_rss_mb or 0.0, rss)
            over_time = s.started and now - s.started > self.limits.job_max_seconds
            budget_stop = s.stop_requested and s.stopped_by != "you"
        if budget_stop and pid is not None and now - self._stop_time > KILL_AFTER_S:
            try:
                os.kill(pid, 9)
            except OSError:
                pass                                    # it ended by itself meanwhile
        if over_time:
            self.stop("time budget")
        elif rss is not None and rss > self._memory_cap_mb():
            self.stop("memory budget")

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job ends (or timeout seconds); True when it has ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def snapshot(self) -> JobState:
        """A consistent copy of the state (safe to read while the job runs)."""
        with self._lock:
            s = copy.copy(self._state)
            s.events = list(self._state.events)
            s.metrics = copy.deepcopy(self._state.metrics)
            return s

    # ------------------------------------------------------------ the worker
    def _on_event(self, event: Any, pid: int | None = None) -> None:
        # duck-typed (EpochEvent has `epochs`, StepEvent does not): the app's dev server may re-import textcls
        # while a run goes on, and the run's event classes are then not the freshly imported ones
        is_epoch = hasattr(event, "epochs") and hasattr(event, "train_loss")
        is_step = not is_epoch and hasattr(event, "loss") and hasattr(event, "total_steps")
        self._check_budgets(pid)
        with self._lock:
            s = self._state
            if is_step:
                s.events.append({"kind": "step", "epoch": event.epoch, "step": event.step, "loss": event.loss,
                                 "lr": event.lr, "elapsed": event.elapsed})
                s.step, s.total_steps, s.loss, s.elapsed = event.step, event.total_steps, event.loss, event.elapsed
                if s.phase == "preparing":
                    s.phase = "training"
            elif is_epoch:
                dev = event.dev or {}
                s.events.append({"kind": "epoch", "epoch": event.epoch, "step": event.step,
                                 "train_loss": event.train_loss, "train_accuracy": event.train_accuracy,
                                 "dev_accuracy": dev.get("accuracy"), "dev_loss": dev.get("loss"),
                                 "dev_macro_f1": dev.get("macro_f1"), "lr": event.lr, "elapsed": event.elapsed,
                                 "improved": event.improved})
                s.epoch, s.epochs, s.total_steps = event.epoch, event.epochs, event.total_steps
                s.dev_accuracy, s.elapsed = dev.get("accuracy"), event.elapsed
                s.best_epoch = event.best_epoch
                if event.improved:
                    s.best_dev_accuracy = dev.get("accuracy")
                if event.epoch >= event.epochs and s.phase != "stopping":
                    s.phase = "evaluating and saving"
        for cb in self._callbacks:
            cb(event)

    def _run(self) -> None:
        try:
            if self.isolation == "process":
                path, metrics, hist = self._run_process()
            else:
                path, metrics, hist = self._run_thread()
        except _ChildError as e:
            self._failed(str(e), e.child_traceback)
            return
        except BaseException as e:  # noqa: BLE001 - every failure ends the job with its message
            self._failed(f"{type(e).__name__}: {e}", traceback.format_exc())
            return
        self._finished(path, metrics, hist)

    def _run_thread(self):
        runner = self._runner
        if runner is None:
            from textcls.train.pipeline import train_from_spec
            runner = train_from_spec
        lower_priority()
        with threads.batch(self.limits.job_threads):
            result = runner(**self.kwargs, callbacks=[self._on_event], stop_event=self._stop)
        self.result = result
        return result.path, result.metrics, result.history

    def _run_process(self):
        """Train in a child process (see the module docstring); relay its events, watch its budgets."""
        import multiprocessing as mp
        import queue

        ctx = mp.get_context("spawn")      # never fork a multi-threaded server
        events = ctx.Queue()
        self._mp_stop = ctx.Event()
        if self._stop.is_set():
            self._mp_stop.set()
        child = ctx.Process(target=_train_in_child, name=f"textcls-train-{self.id}", daemon=True,
                            args=(self.kwargs, events, self._mp_stop, self.limits.job_threads))
        child.start()
        self.pid = child.pid
        outcome: tuple | None = None
        try:
            while outcome is None:
                try:
                    kind, payload = events.get(timeout=0.5)
                except queue.Empty:
                    self._check_budgets(child.pid)
                    if not child.is_alive():
                        try:                                   # the last messages may still be in the pipe
                            kind, payload = events.get(timeout=2.0)
                        except queue.Empty:
                            raise RuntimeError(f"the training process ended unexpectedly (exit code "
                                               f"{child.exitcode}; killed for memory?); nothing new was saved") \
                                from None
                    else:
                        continue
                if kind == "event":
                    self._on_event(payload, child.pid)        # a callback that raises fails the run (below)
                elif kind in ("result", "error"):
                    outcome = (kind, payload)
        except BaseException:
            child.kill()                                      # checkpoints are written atomically: nothing half
            child.join(10)
            raise
        child.join(30)
        if child.is_alive():
            child.kill()
        kind, payload = outcome
        if kind == "error":
            raise _ChildError(*payload)
        from textcls.records import History
        return payload["path"], payload["metrics"], History.from_dict(payload["history"])

    def _failed(self, error: str, tb: str) -> None:
        with self._lock:
            s = self._state
            s.status, s.phase = "failed", "failed"
            s.error, s.traceback = error, tb
            existing = self.out.is_dir() and (self.out / "config.json").exists()
            s.message = ("The run failed; nothing new was saved" +
                         (f" and the existing checkpoint {self.out.name} is unchanged." if existing else "."))
            s.finished = time.time()

    def _finished(self, path, metrics, hist) -> None:
        with self._lock:
            s = self._state
            s.path = str(path) if path is not None else None
            s.metrics = _metric_summary(metrics)
            s.best_epoch, s.best_dev_accuracy = hist.best_epoch, hist.best_dev_accuracy
            s.elapsed = hist.elapsed
            s.finished = time.time()
            if hist.best_epoch is not None and hist.best_dev_accuracy is not None:
                kept = (f"the weights of epoch {hist.best_epoch} (best dev accuracy "
                        f"{100 * hist.best_dev_accuracy:.1f} %)")
            elif hist.diverged:
                kept = "the weights of the last completed epoch, from before the divergence"
            else:
                kept = "the weights as they were when it stopped"
            where = f" in {Path(s.path).name}" if s.path else ""
            if hist.diverged:
                s.status, s.phase = "failed", "failed"
                s.error = f"Training diverged: {hist.stopped_reason}."
                s.message = (f"Saved {kept}{where}." if s.path else
                             "Nothing was saved: it diverged before its first epoch completed (try a smaller "
                             "learning rate).")
            elif hist.stopped_by_user:
                s.status, s.phase = "stopped", "stopped"
                by = {"you": "by you", "time budget": f"after its time budget ({self.limits.job_max_seconds:,} s)",
                      "memory budget": f"because it went over its memory budget ({self._memory_cap_mb():,} MB)"
                      }.get(s.stopped_by, "")
                s.message = f"Stopped {by} after {len(hist.epochs)} complete epoch(s); saved {kept}{where}."
            else:
                s.status, s.phase = "done", "done"
                s.message = f"{hist.stopped_reason.capitalize()}; saved {kept}{where}."


class _ChildError(RuntimeError):
    """The training process's exception, re-raised in the job's thread with the child's own traceback."""

    def __init__(self, message: str, tb: str):
        super().__init__(message)
        self.child_traceback = tb


def _train_in_child(kwargs: dict[str, Any], events, stop_event, n_threads: int) -> None:
    """The training process of a process-isolated job: the run (`kwargs` are TrainSpec's fields) at a lower
    priority on `n_threads`, every event and the outcome sent back through `events`."""
    try:
        os.nice(NICE)
    except (AttributeError, OSError):
        pass
    try:
        from textcls.train.pipeline import TrainSpec, run_training
        with threads.batch(n_threads):
            r = run_training(TrainSpec(**kwargs), callbacks=[lambda e: events.put(("event", e))],
                             stop_event=stop_event)
        events.put(("result", {"path": None if r.path is None else str(r.path), "metrics": r.metrics,
                               "history": r.history.to_dict()}))
    except BaseException as e:  # noqa: BLE001 - reported to the parent, which ends the job with it
        events.put(("error", (f"{type(e).__name__}: {e}", traceback.format_exc())))
    finally:
        events.close()
        events.join_thread()


class JobRegistry:
    """Jobs by id. `max_running` jobs at most at once (default: limits.max_jobs, env TEXTCLS_MAX_JOBS): CPU
    training is heavy. Each job runs under `limits` (default: the environment's, `textcls.runtime.limits`); its training
    memory estimate must fit in `limits.job_max_memory_mb`."""

    def __init__(self, max_running: int | None = None, keep_finished: int = 100, limits: Limits | None = None):
        self.limits = limits or current()
        self.max_running = max(1, max_running if max_running is not None else self.limits.max_jobs)
        self.keep_finished = keep_finished
        self._jobs: dict[str, TrainingJob] = {}
        self._lock = threading.Lock()

    def submit(self, callbacks: Iterable[Callable[[Any], None]] = (), runner: Callable[..., Any] | None = None,
               owner: str = "", isolation: str | None = None, **kwargs: Any) -> str:
        """Start a job with `run_training(TrainSpec(**kwargs))`; returns its id. Raises JobError when it cannot start.
        The run's training memory is capped at `limits.job_max_memory_mb` (passed as train_from_spec's limits).
        isolation: "process" (default for train_from_spec) or "thread" (default when a `runner` is given)."""
        job_id = uuid.uuid4().hex[:12]
        lim = self.limits
        kwargs.setdefault("limits", dataclasses.replace(
            lim, max_train_memory_mb=min(lim.max_train_memory_mb, lim.job_max_memory_mb)))
        job = TrainingJob(job_id, kwargs, callbacks, runner, owner=owner, limits=lim, isolation=isolation)
        with self._lock:
            running = [j for j in self._jobs.values() if j.is_alive()]
            if len(running) >= self.max_running:
                raise JobError(f"{len(running)} training run(s) are going already (at most {self.max_running} at "
                               "once on this server); wait for one to finish or stop one")
            target = job.out.resolve()
            if any(j.out.resolve() == target for j in running):
                raise JobError(f"another running job is writing {job.out}; choose another checkpoint name")
            self._prune()
            self._jobs[job_id] = job
        job.start()
        return job_id

    def _prune(self) -> None:
        done = [k for k, j in self._jobs.items() if not j.is_alive()]
        for k in done[:max(0, len(done) - self.keep_finished)]:
            del self._jobs[k]

    def get(self, job_id: str) -> TrainingJob | None:
        with self._lock:
            return self._jobs.get(job_id)

    def snapshot(self, job_id: str) -> JobState | None:
        job = self.get(job_id)
        return None if job is None else job.snapshot()

    def stop(self, job_id: str, by: str | None = None) -> bool:
        """Ask a job to stop. `by`: who asks; when given it must be the job's owner (False otherwise)."""
        job = self.get(job_id)
        if job is None or (by is not None and not self.may_stop(job_id, by)):
            return False
        job.stop()
        return True

    def may_stop(self, job_id: str, who: str) -> bool:
        """Whether `who` may stop the job: its owner only (a job started without an owner: anyone)."""
        job = self.get(job_id)
        return job is not None and job._state.owner in ("", who)

    def forget(self, job_id: str) -> bool:
        """Drop a finished job from the registry (a running one is kept)."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None or job.is_alive():
                return False
            del self._jobs[job_id]
            return True

    def ids(self) -> list[str]:
        with self._lock:
            return list(self._jobs)

    def running(self) -> list[str]:
        with self._lock:
            return [k for k, j in self._jobs.items() if j.is_alive()]


JOBS = JobRegistry()
"""The process-wide table of training jobs for library callers (the app uses pages/common/cache.job_registry())."""


__all__ = ["FINISHED", "JOBS", "STATUSES", "JobError", "JobRegistry", "JobState", "TrainingJob"]
