"""The Explore page through Streamlit's AppTest on tiny checkpoints and the embedded sst2/trec: every view draws
without an exception, the URL round-trips the state (checkpoints, data, split, view, slice, text), bad input
gets a message (a regex that does not compile, an empty slice, one class: no ROC, a generator that finds
nothing), and a slice saved on the page becomes the active slice. Selecting points in the projector and opening one in
Inspect needs a browser (tests/test_browser.py)."""
from __future__ import annotations

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from app_pages import open_page, page_text as all_text
from test_app_home_compare_inspect import build_checkpoints

PAGE = "pages/explore.py"


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    root = tmp_path_factory.mktemp("explore_app_ckpts")
    return root, build_checkpoints(root, models=("kim_cnn", "act", "lama"))


@pytest.fixture
def explore(ckpts, monkeypatch, bundled_data):
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(ckpts[0]))
    monkeypatch.setenv("TEXTCLS_DATA", str(bundled_data))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    from pages.common import cache as page_cache
    page_cache.forget(data=True)

    def make(params: dict | None = None) -> AppTest:
        return open_page(PAGE, params=params, timeout=180)
    return make


def text_of(at: AppTest) -> str:
    """Everything the page says, markdown escapes removed."""
    return all_text(at, unescape=True)


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_url_round_trips_the_state(explore, ckpts):
    names = ckpts[1]
    params = {"ckpt": f"{names[2]},{names[0]}", "data": "sst2", "split": "dev", "view": "Neighbours",
              "text": "a gripping film"}
    at = explore(params)
    assert at.multiselect(key="exp_ckpts").value == [names[2], names[0]]
    assert at.selectbox(key="exp_data").value == "sst2"
    assert at.selectbox(key="exp_split").value == "dev"
    assert at.text_input(key="exp_text").value == "a gripping film"
    assert at.query_params["ckpt"] == f"{names[2]},{names[0]}" and at.query_params["view"] == "Neighbours"
    assert at.query_params["text"] == "a gripping film"
    # change the state on the page: the URL follows, and a new session opened on that URL shows the same state
    at.selectbox(key="exp_slice").set_value("label = negative").run()
    ok(at).multiselect(key="exp_ckpts").set_value([names[1]]).run()
    url = dict(ok(at).query_params)
    assert url["ckpt"] == names[1] and url["slice"] == "label = negative" and url["split"] == "dev"
    again = explore(url)
    assert again.multiselect(key="exp_ckpts").value == [names[1]]
    assert again.selectbox(key="exp_slice").value == "label = negative"
    assert again.text_input(key="exp_text").value == "a gripping film"
    # a checkpoint in the URL that is not here is dropped, not an error
    bad = explore({"ckpt": "nope," + names[0], "view": "Slices"})
    assert bad.multiselect(key="exp_ckpts").value == [names[0]]


def test_slices_view_metrics_and_bad_input(explore, ckpts):
    at = explore({"ckpt": ",".join(ckpts[1][:2]), "data": "sst2", "split": "test", "view": "Slices"})
    assert at.get("plotly_chart")                                   # metrics per slice
    table = at.dataframe[0].value
    assert {"slice", "checkpoint", "count", "accuracy", "macro_f1"} <= set(table.columns)
    assert set(table[table["slice"] == "all"]["count"]) == {1821}
    at.selectbox(key="exp_sl_kind").set_value("regex").run()
    ok(at).text_input(key="exp_sl_regex").input("(unclosed").run()
    assert "does not compile" in all_text(ok(at))
    at.text_input(key="exp_sl_regex").input(r"\bzebra\b").run()
    at.text_input(key="exp_sl_name").input("zebras").run()
    [b for b in ok(at).button if b.label == "Save slice"][0].click().run()
    assert ok(at).selectbox(key="exp_slice").value == "zebras"
    assert "is empty on this split" in all_text(at)                 # an empty slice: a message, no table


def test_projector_neighbours_counterfactuals_and_thresholds_draw(explore, ckpts):
    names = ckpts[1]
    at = explore({"ckpt": ",".join(names[:2]), "data": "sst2", "view": "Projector"})
    charts = at.get("plotly_chart")
    assert len(charts) == 2                                          # two models side by side
    at.segmented_control(key="exp_view").set_value("Neighbours").run()
    assert len(ok(at).table) >= 2                                    # whole texts, wrapped (issue 55)
    at.segmented_control(key="exp_view").set_value("Counterfactuals").run()
    text = all_text(ok(at))
    assert at.dataframe[0].value["generator"].tolist().count("negation") == 2
    at.multiselect(key="exp_cf_gens").set_value(["word_replacer"]).run()
    at.text_input(key="exp_cf_rules").input("zebra -> horse").run()
    assert "found nothing to change" in all_text(ok(at))
    at.text_input(key="exp_cf_rules").input("no arrow here").run()
    assert "word -> replacement" in text_of(ok(at))
    at.segmented_control(key="exp_view").set_value("Thresholds").run()
    assert len(ok(at).get("plotly_chart")) == 3                      # ROC, PR, reliability
    at.selectbox(key="exp_slice").set_value("label = negative").run()
    text = all_text(ok(at))
    assert "Only one class" in text and len(at.get("plotly_chart")) == 1



def test_a_saved_slice_is_reused_on_evaluate(explore, ckpts):
    from textcls.analysis import slices as sl
    sl.save_slice("sst2", sl.Slice("short", "length", [1, 5]))
    at = explore({"ckpt": ckpts[1][0], "data": "sst2", "view": "Slices"})
    assert "short" in at.selectbox(key="exp_slice").options[-1]             # listed on Explore
    at.switch_page("pages/evaluate.py").run()
    at.selectbox(key="eval_data").set_value("sst2").run()
    ok(at).selectbox(key="eval_slice").set_value("short").run()
    n = int((ok(at).dataframe[0].value["examples"]).iloc[0])
    from textcls.data.datasets import load_data
    assert n == sum(1 for t in load_data("sst2").splits["test"].texts if 1 <= len(t.split()) <= 5)


def test_inspect_keeps_its_checkpoints_and_text_in_the_url(explore, ckpts):
    a, b = ckpts[1][0], ckpts[1][1]
    at = open_page("pages/inspect.py", params={"ckpt": f"{a},{b}", "text": "a gripping film"}, timeout=180)
    assert at.selectbox(key="insp_ckpt").value == a and at.toggle(key="insp_two").value
    assert at.selectbox(key="insp_ckpt2").value == b
    assert at.text_area(key="insp_text").value == "a gripping film"
    at.toggle(key="insp_two").set_value(False).run()
    assert dict(ok(at).query_params) == {"ckpt": a, "text": "a gripping film"}


def test_a_six_class_task_gets_a_reliability_diagram_and_no_roc(tmp_path, monkeypatch, bundled_data):
    import torch

    import textcls
    from textcls.checkpoint import save_checkpoint
    from textcls.data.datasets import load_data
    from textcls.data.text import Tokenizer, TokenizerConfig
    trec = load_data("trec")
    tok = Tokenizer.build(trec.splits["train"].texts[:200], TokenizerConfig())
    torch.manual_seed(0)
    model = textcls.create_model("kim_cnn", vocab_size=len(tok.vocab), num_labels=6, preset="small").eval()
    save_checkpoint(tmp_path / "ck" / "kim_trec_tiny", model, tok, trec.labels, meta={"data": {"name": "trec"}})
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(tmp_path / "ck"))
    monkeypatch.setenv("TEXTCLS_DATA", str(bundled_data))
    from pages.common import cache as page_cache
    page_cache.forget(data=True)
    at = open_page(PAGE, params={"ckpt": "kim_trec_tiny", "data": "trec", "view": "Thresholds"}, timeout=180)
    assert "two-class tasks" in text_of(ok(at))
    assert len(at.get("plotly_chart")) == 1                         # the reliability diagram only
