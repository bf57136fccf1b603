"""Work ahead in the model worker that gives way to its requests. The pretrained encoder's load (transformers'
import, about 1,700 modules and 2-3 s of one core) runs in a thread of the worker (`worker.warm_background`) and
pauses before each module it imports while a plain request is being answered, and until none has been for
GIVE_WAY_QUIET seconds. A class whose 30 sessions submit at once right after the server's start has its answers
computed first and the load done in the gaps (docs/performance.md, "Many users at once"); one person's next click
finds the load under way.

- `serving()`: around a plain request on the requests' loop (predictions, the listing).
- `waiting()`: around a request's own model load. Meanwhile the work ahead does not pause: the request may need the
  very model (or the modules) the work ahead is loading, and would otherwise wait for a load that waits for it.
- `giving_way()`: around the work ahead, in its own thread. `pause()` runs before each module it imports (Python's
  "import" audit event, raised before the module is looked for: no import lock is held then but those of the
  modules whose import is under way in that thread) and may be called between its steps.
- It does not pause while another thread waits for a module whose import it has begun (importlib's lock of that
  module), and its pauses add up to GIVE_WAY_TOTAL seconds at most: nothing waits behind it for longer.
"""
from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator

GIVE_WAY_QUIET = 0.1        # seconds without a request before the work ahead goes on
GIVE_WAY_TOTAL = 10.0       # seconds the work ahead pauses in all, at most
POLL = 0.02                 # seconds between two looks, while paused, at whether a thread waits for its imports

_CHANGED = threading.Condition()
_serving = 0                # plain requests being answered now
_waiting = 0                # requests loading a model now (the work ahead does not pause meanwhile)
_served_at = 0.0            # time.monotonic() when the last plain request ended
_ahead: int | None = None   # the work-ahead thread's ident (its own loads do not count as a request's)
_paused = 0.0               # seconds the work ahead has paused so far
_hooked = False             # the audit hook is added once per process (it cannot be removed)


@contextmanager
def serving() -> Iterator[None]:
    """Around a plain request: the work ahead pauses until it has ended, and GIVE_WAY_QUIET seconds more."""
    global _serving, _served_at
    with _CHANGED:
        _serving += 1
    try:
        yield
    finally:
        with _CHANGED:
            _serving -= 1
            _served_at = time.monotonic()
            _CHANGED.notify_all()


@contextmanager
def waiting() -> Iterator[None]:
    """Around a request's model load (a no-op in the work-ahead thread): the work ahead goes on meanwhile."""
    global _waiting
    if threading.get_ident() == _ahead:
        yield
        return
    with _CHANGED:
        _waiting += 1
        _CHANGED.notify_all()
    try:
        yield
    finally:
        with _CHANGED:
            _waiting -= 1


def _blocked_on(me: int, blocking=None) -> bool:
    """Whether another thread waits for a module lock that thread `me` holds (a module whose import `me` has
    begun). Read from importlib's own deadlock bookkeeping, `importlib._bootstrap._blocking_on` (Python 3.11: thread
    id -> the lock it waits for; 3.12 on: its `data` maps a thread id to a weak reference to a list of locks);
    where that cannot be read, True (do not pause)."""
    try:
        if blocking is None:
            import importlib._bootstrap as bootstrap
            blocking = bootstrap._blocking_on
        if isinstance(blocking, dict):
            pairs = list(blocking.items())
        else:
            pairs = [(tid, ref()) for tid, ref in list(blocking.data.items())]
        for tid, on in pairs:
            for lock in (on if isinstance(on, (list, tuple, set)) else [on] if on is not None else []):
                if tid != me and getattr(lock, "owner", None) == me:
                    return True
        return False
    except Exception:  # noqa: BLE001 - an importlib this does not know
        return True


def pause() -> float:
    """In the work-ahead thread: wait while a plain request is answered or one ended less than GIVE_WAY_QUIET s
    ago, unless a request is loading a model, another thread waits for a module this one is importing, or the
    pauses have reached GIVE_WAY_TOTAL s. Returns the seconds waited."""
    global _paused
    start = time.monotonic()
    me = threading.get_ident()
    with _CHANGED:
        while True:
            now = time.monotonic()
            left = GIVE_WAY_TOTAL - _paused - (now - start)
            calm = _served_at + GIVE_WAY_QUIET - now
            if _waiting or left <= 0 or (_serving == 0 and calm <= 0) or _blocked_on(me):
                break
            _CHANGED.wait(timeout=min(left, POLL, calm if _serving == 0 else POLL))
        waited = time.monotonic() - start
        _paused += waited
    return waited


def _at_import(event: str, args) -> None:
    """The audit hook: in the work-ahead thread, "import" pauses (`pause`); anything else passes at once. Never
    raises: an exception here would fail the import."""
    if event == "import" and _ahead is not None and threading.get_ident() == _ahead:
        try:
            pause()
        except Exception:  # noqa: BLE001
            pass


@contextmanager
def giving_way() -> Iterator[None]:
    """Around the work ahead, in its own thread: it pauses before each module it imports (see the module
    docstring). One thread at a time."""
    global _ahead, _hooked
    with _CHANGED:
        if _ahead is not None:
            raise RuntimeError("work ahead is already giving way in another thread")
        if not _hooked:
            sys.addaudithook(_at_import)
            _hooked = True
        _ahead = threading.get_ident()
    try:
        yield
    finally:
        with _CHANGED:
            _ahead = None


def paused() -> float:
    """Seconds the work ahead has paused so far in this process."""
    return _paused


__all__ = ["GIVE_WAY_QUIET", "GIVE_WAY_TOTAL", "POLL", "serving", "waiting", "pause", "giving_way", "paused"]
