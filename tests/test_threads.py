"""textcls.runtime.threads: TEXTCLS_THREADS parsing, scopes that set and restore torch's per-thread count, and the library's
entry points running interactive work (one text) and batch work (a split, training) under their settings.

Deterministic: thread counts are read with torch.get_num_threads() from a forward pre-hook; nothing is timed."""
import os
import threading
import warnings

import pytest
import torch

import textcls
from textcls.runtime import threads
from textcls.inference import Predictor
from textcls.data.text import Tokenizer, TokenizerConfig

TRAIN = ["a great and moving film .", "a dull , tedious mess !", "great fun . truly great . see it",
         "not worth the ticket", "the cast is wonderful and the story is great"]
LABELS = ["negative", "positive"]


@pytest.fixture(autouse=True)
def _restore_threads(monkeypatch):
    """Each test starts from a known count in the calling thread, a fresh policy cache, and torch's default
    pinned to 2; the count is put back afterwards."""
    before = torch.get_num_threads()
    monkeypatch.setattr(threads, "_CACHE", {})
    monkeypatch.setattr(threads, "_TORCH_DEFAULT", [2])
    monkeypatch.delenv(threads.ENV, raising=False)
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def predictor(name="kim_cnn"):
    tok = Tokenizer.build(TRAIN, TokenizerConfig(max_len=40))
    torch.manual_seed(0)
    model = textcls.create_model(name, vocab_size=len(tok.vocab), num_labels=2, preset="small")
    return Predictor(model, tok, LABELS, name=name)


def record(model) -> list[int]:
    """torch.get_num_threads() in the thread running each forward of `model`."""
    seen: list[int] = []
    model.register_forward_pre_hook(lambda module, args: seen.append(torch.get_num_threads()))
    return seen


def in_fresh_thread(fn):
    """Run fn in a new threading.Thread (as Streamlit runs a script, or a training job); return its result."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            box["error"] = e
    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


# ---------------------------------------------------------------- parsing


@pytest.mark.parametrize("text, expected", [
    (None, (1, "auto")),                            # the defaults
    ("", (1, "auto")),
    ("  ", (1, "auto")),
    ("3", (3, 3)),
    ("interactive=1,batch=4", (1, 4)),
    (" Interactive = 2 , BATCH=1 ", (2, 1)),
    ("batch=3", (1, 3)),
    ("interactive=2", (2, "auto")),
    ("auto", ("auto", "auto")),
    ("off", (None, None)),
    ("OFF", (None, None)),
    ("interactive=off,batch=2", (None, 2)),
    ("batch=torch", (1, 2)),                        # torch's default, pinned to 2 by the fixture
    ("interactive=all", (threads.usable_cpus(), "auto")),
])
def test_parse_policy_good(text, expected):
    pol = threads.parse_policy(text)
    assert (pol.interactive, pol.batch) == expected
    assert (pol.threads("interactive"), pol.threads("batch")) == expected


@pytest.mark.parametrize("text", ["0", "-1", "1.5", "abc", "two", "interactive=0", "interactive=", "batch=x",
                                  "foo=1", "interactive=1,foo=2", "interactive=1,", ",batch=2",
                                  "interactive=1,interactive=2", "interactive:1", "1,2", "+-1"])
def test_parse_policy_bad(text):
    with pytest.raises(ValueError, match=threads.ENV):
        threads.parse_policy(text)


def test_policy_reads_the_environment_and_warns_once_on_a_bad_value(monkeypatch):
    monkeypatch.setenv(threads.ENV, "interactive=2,batch=1")
    assert threads.policy().describe() == "interactive=2,batch=1"
    monkeypatch.setenv(threads.ENV, "interactive=zero")
    msg = r"ignoring TEXTCLS_THREADS='interactive=zero': interactive must be.*got 'zero'.*using the defaults"
    with pytest.warns(threads.ThreadPolicyWarning, match=msg):
        pol = threads.policy()
    assert (pol.interactive, pol.batch) == (1, "auto")
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # the same bad value again: no second warning
        assert threads.policy() == pol
    with pytest.raises(ValueError, match="kind of work"):
        pol.threads("bulk")


def test_auto_uses_the_free_cores(monkeypatch):
    real_probe = threads.others_running
    monkeypatch.setattr(threads, "usable_cpus", lambda: 2)
    for others, want in ((None, 2), (0, 2), (1, 1), (2, 1), (7, 1)):
        monkeypatch.setattr(threads, "others_running", lambda others=others: others)
        assert threads.auto_threads() == want, others
        with threads.batch() as n:                 # the default batch=auto, decided at the scope's start
            assert n == want and torch.get_num_threads() == want
    monkeypatch.setattr(threads, "_TORCH_DEFAULT", [1])
    assert threads.auto_threads() == 1
    n = real_probe()                               # the real probe: a count, or None without /proc/loadavg
    assert n is None or (isinstance(n, int) and n >= 0)
    monkeypatch.setattr(threads, "_active", {-1: 2})  # a scope of 2 threads open in another thread counts
    n = real_probe()
    assert n is None or n >= 2


# ---------------------------------------------------------------- scopes


def test_scopes_set_and_restore_the_calling_threads_count(monkeypatch):
    monkeypatch.setenv(threads.ENV, "interactive=1,batch=3")
    assert torch.get_num_threads() == 2 and threads.current_kind() is None
    with threads.interactive() as n:
        assert n == 1 and torch.get_num_threads() == 1 and threads.current_kind() == "interactive"
    assert torch.get_num_threads() == 2 and threads.current_kind() is None
    with threads.batch() as n:
        assert n == 3 and torch.get_num_threads() == 3
    assert torch.get_num_threads() == 2
    with threads.interactive(4):                  # an explicit count (the latency benchmark)
        assert torch.get_num_threads() == 4
    assert torch.get_num_threads() == 2
    with pytest.raises(RuntimeError):             # restored on an exception too
        with threads.batch():
            raise RuntimeError("boom")
    assert torch.get_num_threads() == 2 and threads.current_kind() is None
    with pytest.raises(ValueError):
        with threads.scope("bulk"):
            pass
    with pytest.raises(ValueError):
        with threads.interactive(0):
            pass
    assert torch.get_num_threads() == 2 and threads.current_kind() is None


def test_the_outermost_scope_decides(monkeypatch):
    monkeypatch.setenv(threads.ENV, "interactive=1,batch=3")
    with threads.batch():
        with threads.interactive() as n:
            assert n is None and torch.get_num_threads() == 3 and threads.current_kind() == "batch"
        assert torch.get_num_threads() == 3
    with threads.interactive():
        with threads.batch():
            assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2


def test_off_leaves_the_setting_alone(monkeypatch):
    monkeypatch.setenv(threads.ENV, "off")
    torch.set_num_threads(3)
    with threads.interactive() as n:
        assert n is None and torch.get_num_threads() == 3
    with threads.batch():
        assert torch.get_num_threads() == 3


def test_decorators_and_for_texts(monkeypatch):
    monkeypatch.setenv(threads.ENV, "interactive=1,batch=3")

    @threads.interactive_work
    def one(x):
        """doc"""
        return x, torch.get_num_threads()

    @threads.batch_work
    def many():
        return torch.get_num_threads()

    assert one(5) == (5, 1) and one.__doc__ == "doc" and many() == 3
    assert torch.get_num_threads() == 2
    with threads.for_texts(threads.INTERACTIVE_MAX_TEXTS):
        assert torch.get_num_threads() == 1
    with threads.for_texts(threads.INTERACTIVE_MAX_TEXTS + 1):
        assert torch.get_num_threads() == 3


def test_scopes_are_per_os_thread(monkeypatch):
    """torch's count is per OS thread (OpenMP): a scope in one thread does not change another's."""
    monkeypatch.setenv(threads.ENV, "interactive=1,batch=3")
    inside, go_on = threading.Event(), threading.Event()
    seen = {}

    def worker():
        with threads.batch():
            seen["worker"] = torch.get_num_threads()
            inside.set()
            go_on.wait(10)

    t = threading.Thread(target=worker)
    with threads.interactive():
        t.start()
        assert inside.wait(10)
        seen["main"] = torch.get_num_threads()
        go_on.set()
        t.join()
    assert seen == {"worker": 3, "main": 1}


# ---------------------------------------------------------------- the library's entry points


def test_predict_in_a_fresh_thread_runs_with_the_interactive_setting(monkeypatch):
    """Streamlit runs each script run in a new thread: a policy set in the main thread would not reach it."""
    monkeypatch.setenv(threads.ENV, "interactive=1,batch=3")
    pred = predictor()
    seen = record(pred.model)

    def job():
        before = torch.get_num_threads()
        pred.predict(["a great film"])
        one = list(seen)
        seen.clear()
        pred.predict(TRAIN * 20, batch_size=64)     # 100 texts: a split, batch work
        return before, one, list(seen), torch.get_num_threads()

    before, one, split, after = in_fresh_thread(job)
    assert one == [1]
    assert split and set(split) == {3}
    assert after == before                           # the thread's own count is restored


def test_predict_under_a_batch_scope_stays_batch(monkeypatch):
    monkeypatch.setenv(threads.ENV, "interactive=1,batch=3")
    pred = predictor()
    seen = record(pred.model)
    with threads.batch():
        pred.predict(["one text"])
    assert seen == [3]


def test_evaluate_and_training_use_the_batch_setting(monkeypatch):
    from textcls.data.datasets import Split
    from textcls.analysis.metrics import evaluate
    from textcls.data.batching import encode_split, predict_encoded
    from textcls.train.config import TrainConfig
    from textcls.train.fit import fit

    monkeypatch.setenv(threads.ENV, "interactive=1,batch=3")
    pred = predictor()
    seen = record(pred.model)
    split = Split(TRAIN, [1, 0, 1, 0, 1])
    report = in_fresh_thread(lambda: evaluate(pred, split, batch_size=2))
    assert report["n"] == 5 and seen and set(seen) == {3}

    seen.clear()
    predict_encoded(pred.model, encode_split(pred.tokenizer, split), batch_size=2)
    assert set(seen) == {3} and torch.get_num_threads() == 2

    # a training job runs fit in a background thread; dev evaluation inside it stays batch work
    seen.clear()
    model = textcls.create_model("kim_cnn", vocab_size=len(pred.tokenizer.vocab), num_labels=2, preset="small")
    seen_train = record(model)
    enc = encode_split(pred.tokenizer, split)
    hist = in_fresh_thread(lambda: fit(model, enc, enc, TrainConfig(epochs=1, batch_size=2, seed=0)))
    assert hist.steps == 3 and seen_train and set(seen_train) == {3}
    assert torch.get_num_threads() == 2


def test_interpret_entry_points_are_interactive(monkeypatch):
    from textcls import interpret as I

    monkeypatch.setenv(threads.ENV, "interactive=1,batch=3")
    pred = predictor()
    seen = record(pred.model)
    inst = I.as_source(pred).instances(["a great and moving film"])[0]

    def job():
        out = {}
        for name, fn in {
            "ig": lambda: I.attribute_instances(pred.model, [inst], "integrated_gradients", n_steps=4, max_steps=4),
            "occlusion": lambda: I.attribute_texts(pred, ["a dull mess"], "occlusion"),
            "attention": lambda: I.attention_importance_instances(pred.model, [inst]),
            "loo": lambda: I.leave_one_out(pred.model, inst),
            "erasure": lambda: I.erasure_curves(pred.model, inst, list(range(inst.n))),
            "intervene": lambda: I.intervene(pred.model, inst, I.ZeroFilter("conv_h2", filter=0)),
            "counterfactual": lambda: I.compare_edit([pred], "a great film", "a dull film"),
            "slice": lambda: I.evaluate_slice(pred, ["a great film", "a dull mess"], methods=("occlusion",),
                                              reference="random", attention_tests=False),
        }.items():
            seen.clear()
            fn()
            out[name] = set(seen)
        return out

    got = in_fresh_thread(job)
    assert got and all(v == {1} for v in got.values()), got
    seen.clear()
    with threads.batch():                            # the same calls inside batch work (a slice of a data set)
        I.leave_one_out(pred.model, inst)
    assert set(seen) == {3}


def test_corpus_views_are_batch_work(monkeypatch):
    from textcls.analysis import corpus_views as cv

    monkeypatch.setenv(threads.ENV, "interactive=1,batch=3")
    pred = predictor()
    seen = record(pred.model)
    cw = in_fresh_thread(lambda: cv.token_weights(pred, TRAIN[:3], batch_size=2))
    assert len(cw) == 3 and set(seen) == {3}
    seen.clear()
    in_fresh_thread(lambda: cv.filter_ngrams(pred, TRAIN[:3], batch_size=2))
    assert set(seen) == {3}


def test_the_env_variable_is_read_at_run_time(monkeypatch):
    pred = predictor()
    seen = record(pred.model)
    for spec, want in (("interactive=3", 3), ("interactive=1", 1), ("off", 2)):
        monkeypatch.setenv(threads.ENV, spec)
        seen.clear()
        pred.predict(["x"])
        assert seen == [want], spec
    assert os.environ[threads.ENV] == "off"


def test_background_work_beside_requests_switches_threads_faster_and_restores_the_interval():
    """beside_requests: 0.2 ms switches while any background work is under way (nested, or in two threads at
    once); the interval found before is back once the last one leaves, also after an error."""
    import sys
    before = sys.getswitchinterval()
    inside = threading.Event()
    leave = threading.Event()

    def other():
        with threads.beside_requests():
            inside.set()
            leave.wait(10)

    t = threading.Thread(target=other)
    with threads.beside_requests():
        assert sys.getswitchinterval() == pytest.approx(threads.BESIDE_REQUESTS_SWITCH)
        t.start()
        assert inside.wait(10)
        with pytest.raises(RuntimeError):
            with threads.beside_requests():
                raise RuntimeError("a failed import")
        assert sys.getswitchinterval() == pytest.approx(threads.BESIDE_REQUESTS_SWITCH)
    assert sys.getswitchinterval() == pytest.approx(threads.BESIDE_REQUESTS_SWITCH)    # the other is still inside
    leave.set()
    t.join(10)
    assert sys.getswitchinterval() == pytest.approx(before)
