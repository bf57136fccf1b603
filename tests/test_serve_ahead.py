"""The model worker's work ahead gives way to its requests (textcls.serve.ahead): it pauses while a plain request
is answered and for GIVE_WAY_QUIET s after, never while a request loads a model, never more than GIVE_WAY_TOTAL s
in all; in its own thread it pauses before each module it imports, other threads' imports pass."""
from __future__ import annotations

import importlib
import sys
import threading
import time

import pytest

from textcls.serve import ahead, worker


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(ahead, "_serving", 0)
    monkeypatch.setattr(ahead, "_waiting", 0)
    monkeypatch.setattr(ahead, "_served_at", 0.0)
    monkeypatch.setattr(ahead, "_paused", 0.0)
    monkeypatch.setattr(ahead, "_ahead", None)
    monkeypatch.setattr(ahead, "GIVE_WAY_QUIET", 0.05)
    monkeypatch.setattr(ahead, "GIVE_WAY_TOTAL", 30.0)


def _pausing() -> tuple[threading.Thread, dict]:
    """A thread that calls pause() once; its result lands in the dict."""
    out: dict = {}
    t = threading.Thread(target=lambda: out.update(waited=ahead.pause()), daemon=True)
    t.start()
    return t, out


def test_nothing_served_no_pause():
    assert ahead.pause() < 0.05


def test_pauses_while_a_request_is_answered_and_a_quiet_after():
    with ahead.serving():
        t, out = _pausing()
        t.join(0.3)
        assert t.is_alive()                          # the request is still being answered
    ended = time.monotonic()
    t.join(5)
    assert not t.is_alive()
    assert time.monotonic() - ended >= ahead.GIVE_WAY_QUIET - 0.01
    assert out["waited"] >= 0.3
    assert ahead.paused() == pytest.approx(out["waited"])


def test_a_request_loading_a_model_lets_it_go_on():
    with ahead.serving():
        t, out = _pausing()
        t.join(0.2)
        assert t.is_alive()
        with ahead.waiting():                        # it may need what the work ahead is loading
            t.join(5)
            assert not t.is_alive()


def test_pauses_add_up_to_the_total_at_most(monkeypatch):
    monkeypatch.setattr(ahead, "GIVE_WAY_TOTAL", 0.3)
    with ahead.serving():
        start = time.monotonic()
        ahead.pause()
        assert 0.25 <= time.monotonic() - start < 3
        assert ahead.pause() < 0.05                  # spent: no more pauses


def _module(tmp_path, name: str) -> None:
    (tmp_path / f"{name}.py").write_text("VALUE = 1\n")


def test_the_work_ahead_pauses_at_its_imports_others_pass(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    _module(tmp_path, "textcls_ahead_mine")
    _module(tmp_path, "textcls_ahead_other")
    imported = threading.Event()

    def work():
        with ahead.giving_way():
            import textcls_ahead_mine  # noqa: F401
            imported.set()
    try:
        with ahead.serving():
            t = threading.Thread(target=work, daemon=True)
            t.start()
            assert not imported.wait(0.3)            # paused before its import while the request runs
            import textcls_ahead_other  # noqa: F401  (this thread's import passes at once)
        assert imported.wait(5)
        t.join(5)
    finally:
        for name in ("textcls_ahead_mine", "textcls_ahead_other"):
            sys.modules.pop(name, None)


def test_no_pause_while_another_thread_waits_for_a_module_it_is_importing(tmp_path, monkeypatch):
    """The work ahead has begun importing a module (its body imports another: the pause comes there, holding the
    first's lock); a request that imports the same module waits for that lock, so the pause ends at once."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "textcls_ahead_parent.py").write_text("import textcls_ahead_child\nVALUE = 2\n")
    _module(tmp_path, "textcls_ahead_child")
    started = threading.Event()

    def work():
        with ahead.giving_way():
            started.set()
            importlib.import_module("textcls_ahead_parent")     # no audit event for this one: the child's comes
    got = {}
    try:
        with ahead.serving():
            t = threading.Thread(target=work, daemon=True)
            t.start()
            assert started.wait(5)
            time.sleep(0.2)                          # it is paused inside the parent's import by now
            assert t.is_alive()
            start = time.monotonic()
            r = threading.Thread(target=lambda: got.update(value=__import__("textcls_ahead_parent").VALUE))
            r.start()
            r.join(5)
            assert got == {"value": 2} and time.monotonic() - start < 2
            t.join(5)
            assert not t.is_alive()                  # while the request is still being answered
    finally:
        for name in ("textcls_ahead_parent", "textcls_ahead_child"):
            sys.modules.pop(name, None)


def test_the_work_ahead_does_not_wait_for_its_own_loads():
    done = threading.Event()

    def work():
        with ahead.giving_way():
            with ahead.waiting():                    # its own load: not a request's
                pass
            done.set()
    t = threading.Thread(target=work, daemon=True)
    t.start()
    assert done.wait(5)
    assert ahead._waiting == 0


def test_one_thread_gives_way_at_a_time():
    with ahead.giving_way():
        errors = []

        def other():
            try:
                with ahead.giving_way():
                    pass
            except RuntimeError as e:
                errors.append(e)
        t = threading.Thread(target=other)
        t.start()
        t.join(5)
        assert errors
    with ahead.giving_way():                         # free again after
        pass


@pytest.mark.parametrize("serves", [True, False])
def test_worker_calls_that_serve_pause_the_work_ahead(serves):
    """A plain request (a prediction, the listing) pauses the work ahead; a job's start or collection, Evaluate's
    batches and the work ahead's own loads (`serves=False`) do not."""
    seen = {}

    @worker.answers(serves=serves)
    def call():
        t, out = _pausing()
        t.join(0.3)
        seen["paused"] = t.is_alive()
    call()
    assert seen["paused"] is serves


def test_which_worker_calls_are_plain_requests():
    for fn in (worker.start_job, worker.job_result, worker.prefetch_start, worker.prefetch_next, worker.warm):
        assert not _serves(fn), fn.__name__
    for fn in (worker.predict, worker.predict_each, worker.predict_groups, worker.listing):
        assert _serves(fn), fn.__name__


def _serves(fn) -> bool:
    """Whether calling `fn` counts as a plain request: read from its wrapper's closure."""
    cells = dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__ or ())))
    return bool(cells["serves"])


class _Lock:
    def __init__(self, owner):
        self.owner = owner


class _Weak:
    """Python 3.12's importlib._bootstrap._WeakValueDictionary as `_blocked_on` reads it: `data` maps a thread id
    to a weak reference (here: a callable) to the list of locks it waits for."""

    def __init__(self, data):
        self.data = {tid: (lambda v=v: v) for tid, v in data.items()}


@pytest.mark.parametrize("shape", ["3.11", "3.12"])
def test_who_waits_for_whose_module_is_read_in_either_python(shape):
    me, other = 1, 2
    waits = {other: _Lock(me)} if shape == "3.11" else _Weak({other: [_Lock(3), _Lock(me)]})
    free = {other: _Lock(3)} if shape == "3.11" else _Weak({other: [_Lock(3)], 4: None})
    assert ahead._blocked_on(me, waits)
    assert not ahead._blocked_on(me, free)
    assert not ahead._blocked_on(me, {} if shape == "3.11" else _Weak({}))
    assert ahead._blocked_on(me, object())                   # unreadable: no pause
