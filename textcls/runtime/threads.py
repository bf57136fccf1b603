"""Thread policy: how many CPU threads PyTorch may use for interactive work and for batch work.

Why: torch's default, one intra-op OpenMP thread per core, is fastest only while the machine is idle. When
other processes keep the cores busy, a multi-threaded op waits at every OpenMP barrier for a thread the OS has
descheduled, and work made of many small ops collapses. Measured on a 2-core CPU (`python -m textcls bench
--latency --load 2`, three runs; README.md has the table): one sentence through the six shipped sst2 models
takes 17-24 ms idle with 1 thread, 20-32 ms with 2; with two busy background processes 23-29 ms with 1 thread,
80-1392 ms with 2. Their integrated gradients: 351-440 ms with 1 thread, 289-316 ms with 2 idle; 602-641 ms
with 1 thread, 1.1-1.8 s with 2 under the load (15 s when other work ran too). Batch work gains from a free
second core (the six models over 600 sst2 test sentences: 1.5 s -> 1.1 s; ten training steps of each:
9.7 s -> 6.5 s) and loses more when the core is not free (two busy processes: 2.7 s with 1 thread, 5-20 s with
2; training 22 s vs 113 s).

Kinds of work (the library's entry points open the scope; see below):
- interactive - what a user waits on for one text or a handful: `Predictor.predict` of up to
  `INTERACTIVE_MAX_TEXTS` texts, maps, attributions and the model's own attention for as few, interventions,
  counterfactuals, faithfulness of one example, the Lab's demos, `interpret.evaluate_slice` of up to
  `INTERACTIVE_MAX_TEXTS` texts (more are batch work: it batches across texts). Default: 1 thread.
- batch - a data split or a training run: `metrics.evaluate`, `training.fit` and `predict_encoded`,
  `corpus_views.token_weights` / `filter_ngrams`, `Predictor.predict` (and attributions) of more texts.
  Default: `auto` - torch's default count while the cores are free, fewer (at least 1) when other runnable work
  would leave a thread without a core (`auto_threads`: /proc/loadavg's runnable threads minus this process's
  own, plus the threads of textcls scopes open in its other threads), decided when the outermost scope opens
  (for `fit`: once, at the start of the run). Without /proc (macOS, Windows) `auto` is torch's default.

Configuration: the environment variable TEXTCLS_THREADS, read whenever a scope opens (a launcher or a test may
change it at run time):

    TEXTCLS_THREADS=interactive=1,batch=auto   the defaults; either key alone keeps the other's default
    TEXTCLS_THREADS=interactive=1,batch=2      batch work always on 2 threads
    TEXTCLS_THREADS=2                          both kinds of work on 2 threads
    TEXTCLS_THREADS=off                        no policy: torch's own setting (torch.set_num_threads,
                                               OMP_NUM_THREADS) is left alone everywhere
    values: a positive integer, "auto", "all" (every usable CPU), "torch" (torch's count when textcls first
    needed it: OMP_NUM_THREADS, else one per core, unless the program set one before) or "off" (leave the
    calling thread's setting alone for that kind of work)

A bad value is reported once with a warning (`ThreadPolicyWarning`) and the defaults are used.

How it is applied, and why per call: with PyTorch's OpenMP backend the thread count is a per-OS-thread setting
(torch.set_num_threads sets the calling thread's OpenMP and MKL setting; a thread that has not run a parallel op
yet starts from the value last set by *any* thread). Streamlit runs every script run in a thread of its own and
training jobs run in background threads, so a policy set once at import in the main thread would not hold - a
training job setting 2 threads would silently change what new Streamlit threads start with. The library's
entry points therefore open a scope - `with interactive():` / `with batch():`, or the decorators
`@interactive_work` / `@batch_work` - that sets the calling thread's count and restores the previous value on
exit (about 15 us). Scopes nest: the outermost scope of a thread decides (an evaluation, batch work, that calls
Predictor.predict stays batch work). No Streamlit here.
"""
from __future__ import annotations

import functools
import os
import threading
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, TypeVar

ENV = "TEXTCLS_THREADS"
KINDS = ("interactive", "batch")
DEFAULT_SPEC = {"interactive": "1", "batch": "auto"}
# Predictor.predict (attributions, attention) of more texts than this is batch work, of as many or fewer interactive.
# Measured idle, six sst2 models: a second thread gains ~2 ms on one text (less than auto's 3 ms load probe),
# 15-25 % from 8 texts up; under load the batch setting's `auto` falls back to 1 thread.
INTERACTIVE_MAX_TEXTS = 8

F = TypeVar("F", bound=Callable[..., Any])


class ThreadPolicyWarning(UserWarning):
    """A bad TEXTCLS_THREADS value (the defaults are used instead)."""


@dataclass(frozen=True)
class ThreadPolicy:
    """Threads per kind of work: a positive int, "auto" (decided at each scope's start, `auto_threads`), or
    None = leave the calling thread's setting alone."""
    interactive: int | str | None
    batch: int | str | None
    spec: str = ""                                   # the text it was parsed from ("" = the defaults)

    def threads(self, kind: str) -> int | str | None:
        """The setting for `kind` of work, as configured ("auto" stays "auto"; see `resolve`)."""
        if kind not in KINDS:
            raise ValueError(f"unknown kind of work {kind!r}; choose one of {KINDS}")
        return getattr(self, kind)

    def resolve(self, kind: str) -> int | None:
        """The thread count to use for `kind` of work now ("auto" probes the machine's load)."""
        n = self.threads(kind)
        return auto_threads() if n == "auto" else n

    def describe(self) -> str:
        parts = [f"{k}={'off' if getattr(self, k) is None else getattr(self, k)}" for k in KINDS]
        return ",".join(parts)


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


_TORCH_DEFAULT: list[int] = []


def torch_default_threads() -> int:
    """torch's intra-op thread count when textcls first needed it (OMP_NUM_THREADS, else one per core, unless
    the program set one before): read once, before this module ever changes it; later calls return the same."""
    if not _TORCH_DEFAULT:
        import torch
        _TORCH_DEFAULT.append(max(1, int(torch.get_num_threads())))
    return _TORCH_DEFAULT[0]


def _own_running() -> int | None:
    """Threads of this process in state R (running or runnable) now, from /proc/self/task; None if unknown."""
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return None
    n = 0
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                n += f.read().rsplit(")", 1)[1].split()[0] == "R"
        except (OSError, IndexError):
            pass                                   # the thread ended meanwhile
    return n


def others_running(samples: int = 3, interval: float = 0.001) -> int | None:
    """Threads of other work runnable on the machine right now; None where unknown (no /proc).

    = the machine's runnable threads (/proc/loadavg) minus this process's own (/proc/self/task: the calling
    thread and the OpenMP workers that still spin for a few ms after a parallel op, which are not other work),
    plus the threads used by textcls scopes open in this process's other threads (another session's work or a
    training job); the median of `samples` reads `interval` seconds apart."""
    counts = []
    try:
        for i in range(max(1, samples)):
            if i:
                time.sleep(interval)
            own = _own_running()                   # first: a worker still spinning now was spinning a moment ago
            with open("/proc/loadavg") as f:
                total = int(f.read().split()[3].split("/")[0])
            counts.append(total - (1 if own is None else own))
    except (OSError, ValueError, IndexError):
        return None
    counts.sort()
    me = threading.get_ident()
    in_scopes = sum(n for tid, n in list(_active.items()) if tid != me)
    return max(0, counts[len(counts) // 2]) + in_scopes


def auto_threads() -> int:
    """`auto`: torch's default thread count while the CPUs are free, fewer (at least 1) when other runnable
    work would leave a thread without a core: min(torch default, usable CPUs - others_running())."""
    top = torch_default_threads()
    if top <= 1:
        return 1
    others = others_running()
    if others is None:
        return top
    return max(1, min(top, usable_cpus() - others))


def _value(raw: str, where: str) -> int | str | None:
    v = raw.strip().lower()
    if v == "off":
        return None
    if v == "auto":
        return "auto"
    if v == "all":
        return usable_cpus()
    if v == "torch":
        return torch_default_threads()
    try:
        n = int(v)
    except ValueError:
        n = 0
    if n < 1 or not v.lstrip("+").isdigit():
        raise ValueError(f"{ENV}: {where} must be a positive integer, auto, all, torch or off; got {raw.strip()!r}")
    return n


def parse_policy(text: str | None) -> ThreadPolicy:
    """A ThreadPolicy from TEXTCLS_THREADS' syntax (see the module docstring). ValueError on bad input.

    None or "" gives the defaults (interactive=1, batch=auto)."""
    spec = (text or "").strip()
    values = dict(DEFAULT_SPEC)
    if spec:
        if spec.lower() == "off":
            return ThreadPolicy(None, None, spec)
        if "=" not in spec and "," not in spec:
            _value(spec, "the value")                 # validate
            values = {k: spec for k in KINDS}
        else:
            seen = set()
            for item in spec.split(","):
                key, sep, raw = item.partition("=")
                key = key.strip().lower()
                if not item.strip():
                    raise ValueError(f"{ENV}: empty item in {spec!r}; expected e.g. interactive=1,batch=2")
                if not sep or key not in KINDS:
                    raise ValueError(f"{ENV}: expected interactive=N and/or batch=N separated by commas, or one "
                                     f"N for both; got {item.strip()!r} in {spec!r}")
                if key in seen:
                    raise ValueError(f"{ENV}: {key} is given twice in {spec!r}")
                seen.add(key)
                _value(raw, key)                      # validate
                values[key] = raw
    return ThreadPolicy(_value(values["interactive"], "interactive"), _value(values["batch"], "batch"), spec)


_CACHE: dict[str, ThreadPolicy] = {}
_CACHE_LOCK = threading.Lock()


def policy() -> ThreadPolicy:
    """The policy in force now: TEXTCLS_THREADS parsed (cached per value); a bad value warns once and gives
    the defaults."""
    raw = os.environ.get(ENV, "")
    hit = _CACHE.get(raw)
    if hit is not None:
        return hit
    try:
        pol = parse_policy(raw)
    except ValueError as e:
        pol = parse_policy("")
        detail = str(e).removeprefix(f"{ENV}: ")
        warnings.warn(f"ignoring {ENV}={raw!r}: {detail}; using the defaults ({pol.describe()})",
                      ThreadPolicyWarning, stacklevel=3)
    with _CACHE_LOCK:
        _CACHE[raw] = pol
    return pol


# ---------------------------------------------------------------- scopes

_local = threading.local()
_active: dict[int, int] = {}     # thread ident -> torch threads, for the outermost scopes open in this process


def current_kind() -> str | None:
    """The kind of work ("interactive", "batch") whose scope the calling thread is in, or None."""
    return getattr(_local, "kind", None)


@contextmanager
def scope(kind: str, threads: int | None | str = "policy") -> Iterator[int | None]:
    """Run the body with the calling thread's torch thread count set for `kind` of work, then restore it.

    threads: "policy" (default: from TEXTCLS_THREADS), "auto", or an explicit count (None = leave it alone) -
    the latency benchmark uses that. Inside another scope of the same thread this is a no-op: the outermost scope
    decides. Yields the count in force (None when left alone)."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind of work {kind!r}; choose one of {KINDS}")
    if current_kind() is not None:
        yield None
        return
    n = policy().resolve(kind) if isinstance(threads, str) and threads == "policy" else threads
    if n == "auto":
        n = auto_threads()
    if n is not None and (not isinstance(n, int) or n < 1):
        raise ValueError(f"threads must be a positive integer or None, got {n!r}")
    _local.kind = kind
    try:
        if n is None:
            yield None
            return
        import torch
        torch_default_threads()                        # record torch's own default before the first change
        prev = torch.get_num_threads()                 # (also initialises this thread's OpenMP setting)
        if prev != n:
            torch.set_num_threads(n)
        me = threading.get_ident()
        _active[me] = n
        try:
            yield n
        finally:
            _active.pop(me, None)
            if prev != n:
                torch.set_num_threads(prev)
    finally:
        _local.kind = None


def interactive(threads: int | None | str = "policy"):
    """`with interactive():` - single-text work a user waits on (see the module docstring)."""
    return scope("interactive", threads)


def batch(threads: int | None | str = "policy"):
    """`with batch():` - work over a data split or a training run (see the module docstring)."""
    return scope("batch", threads)


def for_texts(n: int):
    """The scope for running a model over n texts: interactive up to INTERACTIVE_MAX_TEXTS, batch above."""
    return scope("interactive" if n <= INTERACTIVE_MAX_TEXTS else "batch")


def _decorator(kind: str) -> Callable[[F], F]:
    def deco(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with scope(kind):
                return fn(*args, **kwargs)
        return wrapper  # type: ignore[return-value]
    return deco


interactive_work = _decorator("interactive")
batch_work = _decorator("batch")


# ---------------------------------------------------------------- background work beside requests

BESIDE_REQUESTS_SWITCH = 0.0002     # sys.setswitchinterval while background work runs beside requests (default 0.005)
_switch_lock = threading.Lock()
_beside = 0                          # background works under way
_saved_switch = 0.005                # the interval to restore when the last one ends


@contextmanager
def beside_requests() -> Iterator[None]:
    """Around background work that shares this interpreter with threads answering requests: an import (torch,
    transformers, Captum) or a model's load, in the model worker or the app's server. Meanwhile the interpreter
    switches threads every BESIDE_REQUESTS_SWITCH s instead of Python's 5 ms. A request thread that lets go of the
    interpreter lock (each torch op, each socket read) waits for it again. With an import beside it, each wait
    lasted a whole switch interval: a Compare answered during the encoder's load took 5.1 s instead of 1.2 s.
    Nested and concurrent uses share one setting; the last to leave restores the interval it found."""
    import sys
    global _beside, _saved_switch
    with _switch_lock:
        if _beside == 0:
            _saved_switch = sys.getswitchinterval()
            sys.setswitchinterval(BESIDE_REQUESTS_SWITCH)
        _beside += 1
    try:
        yield
    finally:
        with _switch_lock:
            _beside -= 1
            if _beside == 0:
                sys.setswitchinterval(_saved_switch)

__all__ = ["ENV", "KINDS", "DEFAULT_SPEC", "INTERACTIVE_MAX_TEXTS", "ThreadPolicy", "ThreadPolicyWarning",
           "parse_policy", "policy", "usable_cpus", "torch_default_threads", "others_running", "auto_threads",
           "current_kind", "scope",
           "interactive", "batch", "for_texts", "interactive_work", "batch_work", "BESIDE_REQUESTS_SWITCH",
           "beside_requests"]
