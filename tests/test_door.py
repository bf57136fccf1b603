"""The one door between the pages and the models: the jobs of textcls.serve.work (one registry, each declaring how
many answers are kept), the one cache (textcls.serve.answers) and `pages.common.cache.ask`; and a page driven with a
stub endpoint draws exactly what the endpoint returned (the page holds no model arithmetic)."""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager

import pytest

from textcls.serve import work
from textcls.serve.answers import Answers, frozen


# ---------------------------------------------------------------- the cache


def test_answers_keep_what_the_job_declares_least_recently_used_first():
    a, calls = Answers(), []

    def compute(x):
        calls.append(x)
        return {"x": x}
    for x in (1, 2, 1, 3):                                       # 1 is used again before 3 comes: 2 goes
        assert a.get("j", x, lambda x=x: compute(x), keep=2) == {"x": x}
    assert calls == [1, 2, 3] and a.count("j") == 2 and a.has("j", 1) and not a.has("j", 2)
    assert a.get("k", 1, lambda: compute("k"), keep=0) == {"x": "k"} and a.count("k") == 0   # keep 0: not kept


def test_every_caller_gets_its_own_copy_and_an_error_is_not_kept():
    a = Answers()
    first = a.get("j", "key", lambda: {"scores": [1.0, 2.0]}, keep=4)
    first["scores"].append(99.0)                                 # a page that changed what it got
    assert a.get("j", "key", lambda: pytest.fail("kept"), keep=4) == {"scores": [1.0, 2.0]}
    tries = []

    def flaky():
        tries.append(1)
        if len(tries) == 1:
            raise ValueError("the worker timed out")
        return 7
    with pytest.raises(ValueError):
        a.get("j", "flaky", flaky, keep=4)
    assert a.get("j", "flaky", flaky, keep=4) == 7 and len(tries) == 2


def test_two_sessions_asking_the_same_at_once_compute_it_once():
    a, calls, gate = Answers(), [], threading.Event()

    def slow():
        calls.append(1)
        gate.wait(5)
        return "answer"
    out = []
    threads = [threading.Thread(target=lambda: out.append(a.get("j", "same", slow, keep=2))) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    gate.set()
    for t in threads:
        t.join(5)
    assert out == ["answer"] * 4 and len(calls) == 1


def test_a_request_key_ignores_dict_order_and_tells_lists_from_dicts():
    assert frozen({"a": 1, "b": [1, 2]}) == frozen({"b": (1, 2), "a": 1})
    assert frozen({"a": 1}) != frozen([("a", 1)])
    hash(frozen(("p", 1.0, {"k": [1, {"z": 2}]}, {3, 1})))


# ---------------------------------------------------------------- the registry and the door


def test_every_job_is_registered_once_with_what_it_declares():
    assert len(work.JOBS) >= 30
    for name, j in work.JOBS.items():
        assert j.name == name and getattr(work, name) is j.fn and isinstance(j.keep, int) and j.keep >= 0
    with pytest.raises(ValueError, match="unknown model job"):
        work.run(lambda *a: None, "no_such_job")


@contextmanager
def toy_job(keep: int):
    """A new kind of model work, as a page would add it: one function with the `job` decorator."""
    calls = []

    @work.job(keep=keep)
    def toy_words(load, path: str, stamp: float, text: str) -> list[str]:
        calls.append(text)
        return text.split()[:2]
    try:
        yield calls
    finally:
        del work.JOBS["toy_words"]


def test_a_new_job_is_one_function_and_the_door_keeps_its_answers(monkeypatch):
    monkeypatch.setenv("TEXTCLS_WORKER", "0")                    # in this process: the same code the worker runs
    from pages.common import cache
    cache.forget()
    with toy_job(keep=2) as calls:
        assert cache.ask("toy_words", "CK", 1.0, "a dull film") == ["a", "dull"]
        assert cache.ask("toy_words", "CK", 1.0, "a dull film") == ["a", "dull"]         # kept
        cache.ask("toy_words", "CK", 2.0, "a dull film")                                # the checkpoint saved again
        cache.ask("toy_words", "CK", 1.0, "other words", keep=0)                         # the page keeps this one
        assert calls == ["a dull film", "a dull film", "other words"]
        assert cache.ANSWERS.count("toy_words") == 2
    with pytest.raises(ValueError, match="unknown model job 'toy_words'"):
        cache.ask("toy_words", "CK", 1.0, "x")
    cache.forget()


def test_a_page_draws_what_the_endpoint_returned(monkeypatch, tmp_path):
    """Benchmarks' LAMA Fig. 4 tab with the endpoint stubbed: its table holds the stub's numbers, unchanged."""
    from app_pages import open_page
    from pages.common import cache
    answered = cache.model_job
    stub = {"heads": [1, 2, 5], "d": 50, "width": 100, "d_a": 350, "d_k": 64, "lama": [11, 22, 33],
            "lama_with_mlp": [44, 55, 66], "lama_ctx": [77, 88, 99], "san": [101, 202, 303],
            "transformer": [404, 505, 606], "formula": {}, "note": "stub"}

    def endpoint(job, *args, **kwargs):
        return dict(stub) if job == "lama_f4" else answered(job, *args, **kwargs)
    monkeypatch.setattr(cache, "model_job", endpoint)
    monkeypatch.setenv("TEXTCLS_RESULTS_FILE", str(tmp_path / "none.json"))
    monkeypatch.setenv("TEXTCLS_BENCH_FILE", str(tmp_path / "none_bench.json"))
    cache.forget()
    at = open_page("pages/benchmarks.py")
    (table,) = [df.value for df in at.dataframe if "LAMA (P, Q, c)" in df.value.columns]
    assert table["heads"].tolist() == [1, 2, 5] and table["LAMA (P, Q, c)"].tolist() == [11, 22, 33]
    assert table["SAN"].tolist() == [101, 202, 303] and table["Transformer"].tolist() == [404, 505, 606]
    cache.forget()
