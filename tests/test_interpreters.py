"""The interpreter contract (textcls.interpret.interpreters): its typed options, and one toy interpreter - one module's
worth of code - found in the CLI (a command with its flags), the worker's one job and a page; then every registered
interpreter held to the contract on every shipped checkpoint."""
from __future__ import annotations

import contextlib
import json
import pickle
from dataclasses import dataclass

import pytest

from conftest import REPO, shipped_names
from textcls.interpret import interpreters as I
from textcls.interpret.interpreters import InterpreterError, Option


@dataclass(frozen=True)
class FirstWords:
    words: tuple[str, ...]
    label: str

    def to_dict(self) -> dict:
        return {"words": list(self.words), "label": self.label}


def first_words(predictor, inputs, progress=None, *, k: int, upper: bool):
    """A toy with a known answer: the first k words of the text as the checkpoint tokenises them, and its
    prediction."""
    from textcls.interpret import as_source
    tokens = as_source(predictor).instances([inputs["text"]])[0].tokens[:k]
    label = predictor.predict([inputs["text"]])[0].label
    return FirstWords(tuple(t.upper() if upper else t for t in tokens), label)


@contextlib.contextmanager
def registered_toy():
    I.register_interpreter("toy_first_words", "First words (test)", inputs=("text",), command="toy-first-words",
                           options=(Option("k", 2, "how many words", low=1, high=10),
                                    Option("upper", False, "in capitals")),
                           help="the first k words")(first_words)
    try:
        yield
    finally:
        I.unregister_interpreter("toy_first_words")


def test_options_are_typed_checked_and_one_line_when_wrong():
    from textcls.interpret.options import OptionError
    assert issubclass(InterpreterError, OptionError)          # an interpreter's bad option is one of its bad inputs
    o = Option("k", 10, "k", low=1, high=50)
    assert o.check("7") == 7 and o.type is int and o.flag == "--k"
    for bad, says in ((0, "between 1 and 50"), ("x", "expected int"), (2.5, "expected int")):
        with pytest.raises(OptionError, match=says):
            o.check(bad)
    assert Option("p", 0.5, "p").check("0.25") == 0.25
    with pytest.raises(OptionError, match="expected float"):
        Option("p", 0.5, "p").check("nan")
    b = Option("full", False, "b")
    assert b.check("yes") is True and b.check("0") is False
    with pytest.raises(OptionError):
        b.check("maybe")
    c = Option("layer", "last", "which", choices=("last", "all"))
    with pytest.raises(OptionError, match="choose one of last, all"):
        c.check("first")


def test_registration_refuses_what_no_consumer_could_use():
    fn = lambda p, inputs, progress=None: None   # noqa: E731
    for kwargs, says in ((dict(output="poem"), "output"), (dict(cost="huge"), "cost class"),
                         (dict(inputs=("image",)), "input 'image'"),
                         (dict(options=(Option("k", 1, ""), Option("k", 2, ""))), "distinct"),
                         (dict(options=(Option("k", 0, "", low=1),),), "between")):
        args = dict(inputs=("text",)) | kwargs
        with pytest.raises(ValueError, match=says):
            I.register_interpreter("bad", "Bad", **args)(fn)
    assert "bad" not in I.names()
    with registered_toy():
        with pytest.raises(ValueError, match="registered twice"):
            I.register_interpreter("toy_first_words", "again", inputs=("text",))(fn)


def test_a_toy_interpreter_is_one_module_and_appears_in_the_cli(capsys, shipped_predictors):
    """The CLI command, its flags (type, default, range) and its JSON come from the registration alone."""
    from textcls.cli import build_parser, main
    ckpt = str(REPO / "checkpoints" / "act-sst2")
    with registered_toy():
        assert "toy-first-words" in build_parser().format_help()
        assert main(["toy-first-words", ckpt, "the acting is superb", "--k", "3", "--upper", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["words"] == ["THE", "ACTING", "IS"]
        assert out["label"] == shipped_predictors["act-sst2"].predict(["the acting is superb"])[0].label
        with pytest.raises(SystemExit) as e:
            main(["toy-first-words", ckpt, "the acting", "--k", "0"])
        assert e.value.code == 2 and "between 1 and 10" in capsys.readouterr().err
        assert main(["toy-first-words", ckpt, "   "]) == 2
        assert "the text is empty" in capsys.readouterr().err
    assert "toy-first-words" not in build_parser().format_help()


def test_the_worker_runs_any_interpreter_through_one_job(shipped_predictors):
    """`interpret` is the one job: (interpreter, checkpoint, inputs, options) -> the result; bad input and a missing
    input are InterpreterError, whose one line reaches the page."""
    from textcls.serve import work
    p = shipped_predictors["act-sst2"]

    def load(path, stamp):
        assert path == "CK" and stamp == 1.0
        return p
    with registered_toy():
        r = work.run(load, "interpret", "toy_first_words", "CK", 1.0, {"text": "a dull film"}, {"k": 1})
        assert r == FirstWords(("a",), p.predict(["a dull film"])[0].label) and pickle.loads(pickle.dumps(r)) == r
        with pytest.raises(InterpreterError, match="needs one text"):
            work.run(load, "interpret", "toy_first_words", "CK", 1.0, {}, {})
        with pytest.raises(InterpreterError, match="has no option 'q'"):
            work.run(load, "interpret", "toy_first_words", "CK", 1.0, {"text": "x"}, {"q": 1})
        with pytest.raises(InterpreterError, match="reads no 'data'"):
            work.run(load, "interpret", "toy_first_words", "CK", 1.0, {"text": "x", "data": "sst2"}, {})


def _toy_page():
    import streamlit as st

    from pages.common.interpreters import interpret, options_form
    from textcls.runtime.paths import REPO
    options = options_form("toy_first_words", key="toy")
    r = interpret("toy_first_words", REPO / "checkpoints" / "act-sst2", {"text": "the acting is superb"}, options)
    st.write(" ".join(r.words))


def test_a_page_builds_the_widgets_from_the_options_and_shows_the_result(monkeypatch):
    """The page door: one widget per declared option, the result of the one job laid out (run in this process:
    TEXTCLS_WORKER=0; the worker runs the same `work.interpret`)."""
    from streamlit.testing.v1 import AppTest
    monkeypatch.setenv("TEXTCLS_WORKER", "0")
    with registered_toy():
        at = AppTest.from_function(_toy_page, default_timeout=120).run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.number_input(key="toy_k").value == 2 and at.checkbox(key="toy_upper").value is False
        assert at.markdown[-1].value == "the acting"
        at.number_input(key="toy_k").set_value(3)
        at.checkbox(key="toy_upper").check().run()
        assert at.markdown[-1].value == "THE ACTING IS"


# ---------------------------------------------------------------- every registered interpreter

@pytest.mark.parametrize("name", I.names())
def test_every_interpreter_declares_what_it_is(name):
    it = I.get(name)
    assert it.label and it.help and it.output in I.OUTPUTS and it.cost in I.COSTS
    assert set(it.inputs) | set(it.optional) <= set(I.INPUTS)
    assert it.resolve() == {o.name: o.default for o in it.options}
    for o in it.options:
        assert o.help and o.check(o.default) == o.default
    assert it.example is not None, f"{name}: declare an example run (the contract tests and the docs use it)"


@pytest.mark.parametrize("name", I.names())
@pytest.mark.parametrize("ckpt", shipped_names())
def test_every_interpreter_applies_or_says_why_not_in_one_line(name, ckpt, shipped_predictors):
    why = I.why_not(shipped_predictors[ckpt], name)
    assert why is None or (isinstance(why, str) and why.strip() and "\n" not in why)


@pytest.mark.parametrize("name", I.names())
def test_every_interpreters_example_runs_and_gives_plain_data(name, shipped_predictors):
    """Its example on its checkpoint: a result that pickles (it crosses the worker boundary) and whose to_dict is
    strict JSON."""
    it = I.get(name)
    ex = it.example or {}
    p = shipped_predictors[ex.get("checkpoint", "act-sst2")]
    r = I.run(p, name, ex.get("inputs", {}), ex.get("options", {}))
    assert pickle.loads(pickle.dumps(r)) is not None
    json.dumps(r.to_dict(), allow_nan=False)
    assert "torch" not in repr(type(r)).lower()
