"""An explanation method with a typed option of its own (textcls.interpret.options.Option), as one module would add
it: the registry checks the value, and the CLI (`explain --option NAME=VALUE`), the worker's explanation job, the
pages' door (its cache key) and the Attribute page's widgets all read it from the declaration. The toy's answer is
known: word i weighs scale * i. The shipped options (occlusion's window, Shapley's and LIME's samples) keep their
former defaults, so an explanation without --option is the number it was."""
from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from textcls.cli import main
from textcls.interpret import methods as M
from textcls.interpret.options import Option, OptionError

REPO = Path(__file__).resolve().parents[1]
CKPT = str(REPO / "checkpoints" / "kim_cnn-sst2")


@contextmanager
def toy_method():
    @M.register_method("toy_scaled", "Scaled positions (test)", short="toy", kind="reference", signed=False,
                       needs_gradients=False, uses_baseline=False, cost="free", help="word i weighs scale x i",
                       options=(Option("scale", 1.0, "what each position is multiplied by", low=0.0, high=10.0),))
    def explain(model, instances, *, scale: float = 1.0, **options):
        return [np.arange(inst.n, dtype=float) * scale for inst in instances]
    try:
        yield
    finally:
        M.unregister_method("toy_scaled")


def test_registration_refuses_options_no_consumer_could_tell_apart():
    with pytest.raises(ValueError, match="distinct identifiers"):
        M.register_method("bad", "Bad", short="b", kind="reference", signed=False, needs_gradients=False,
                          uses_baseline=False, cost="free", help="",
                          options=(Option("baseline", "x", "clashes with the standard option"),))(lambda *a: [])
    with pytest.raises(OptionError):
        M.register_method("bad", "Bad", short="b", kind="reference", signed=False, needs_gradients=False,
                          uses_baseline=False, cost="free", help="",
                          options=(Option("k", 0, "its default is out of its range", low=1, high=3),))(lambda *a: [])
    assert "bad" not in M.REGISTRY


def test_the_shipped_options_keep_their_former_defaults():
    assert M.get("occlusion").resolve() == {"window": 1}
    assert M.get("shapley").resolve() == {"n_samples": 25} and M.get("lime").resolve() == {"n_samples": 200}
    assert M.options_used("integrated_gradients")["options"] is None


def test_the_option_reaches_the_method_checked(shipped_predictors):
    p = shipped_predictors["kim_cnn-sst2"]
    from textcls.interpret.sources import as_source
    inst = as_source(p).instances(["a dull and lifeless film"])
    with toy_method():
        assert list(M.explain(p.model, inst, "toy_scaled")[0]) == [0, 1, 2, 3, 4]          # the default
        assert list(M.explain(p.model, inst, "toy_scaled", scale=2.5)[0]) == [0, 2.5, 5, 7.5, 10]
        with pytest.raises(OptionError, match="between 0.0 and 10.0"):
            M.explain(p.model, inst, "toy_scaled", scale=11)
        with pytest.raises(OptionError, match="expected float"):
            M.explain(p.model, inst, "toy_scaled", scale="big")
        assert M.options_used("toy_scaled", options={"scale": "3"})["options"] == {"scale": 3.0}


def test_the_cli_builds_the_flag_from_the_declaration(capsys):
    from textcls.cli import build_parser
    with toy_method():
        helptext = " ".join(build_parser()._subparsers._group_actions[0].choices["explain"].format_help().split())
        assert "--option NAME=VALUE" in helptext and "toy_scaled: scale (float, default 1.0" in helptext
        assert main(["explain", CKPT, "a dull film", "--methods", "toy_scaled", "--option", "scale=2",
                     "--no-verdict", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["methods"]["toy_scaled"]["weights"] == [0.0, 2.0, 4.0]
        assert out["methods"]["toy_scaled"]["options"] == {"scale": 2.0}
        assert main(["explain", CKPT, "a dull film", "--methods", "toy_scaled", "--option", "scale=-1"]) == 2
        assert main(["explain", CKPT, "a dull film", "--methods", "occlusion", "--option", "scale=2"]) == 2
        err = capsys.readouterr().err
        assert "between 0.0 and 10.0" in err and "no chosen method has this option (theirs: occlusion: window)" in err


def test_the_worker_job_and_the_door_key_on_the_option(monkeypatch):
    monkeypatch.setenv("TEXTCLS_WORKER", "0")
    from pages.common import cache, work
    cache.forget()
    with toy_method():
        one = work.explanation(CKPT, "a dull film", "toy_scaled", options={"scale": 1})
        three = work.explanation(CKPT, "a dull film", "toy_scaled", options={"scale": 3})
        assert list(one) == [0, 1, 2] and list(three) == [0, 3, 6]
        assert cache.ANSWERS.count("explanation") == 2                  # one answer per option value
        assert list(work.explanation(CKPT, "a dull film", "toy_scaled")) == [0, 1, 2]        # the default
        with pytest.raises(OptionError):
            work.explanation(CKPT, "a dull film", "toy_scaled", options={"scale": 99})
        curves = work.erasure_curves(CKPT, "a dull film", "toy_scaled", options={"scale": 3})
        assert curves["k_tokens"][0] == 0
    cache.forget()


def _widgets_page():
    import streamlit as st

    from pages.common.interpreters import method_option_widgets
    st.session_state["_got"] = method_option_widgets(["integrated_gradients", "occlusion", "toy_scaled"], "attr_opt")


def test_the_page_builds_a_widget_per_option():
    from streamlit.testing.v1 import AppTest
    with toy_method():
        at = AppTest.from_function(_widgets_page).run()
        assert not at.exception
        assert at.number_input(key="attr_opt_occlusion_window").value == 1
        assert at.number_input(key="attr_opt_toy_scaled_scale").value == 1.0
        at.number_input(key="attr_opt_toy_scaled_scale").set_value(4.0).run()
        assert at.session_state["_got"] == {"occlusion": {"window": 1}, "toy_scaled": {"scale": 4.0}}
