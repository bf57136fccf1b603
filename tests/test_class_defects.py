"""Issue 55 item 8, "What the class saw": a walk of a bare clone in Chromium found these; each test is one of them,
through the page as the class used it (AppTest) where the page shows it, or through the figure the page draws
where the defect is in the figure itself (its fonts, its colour scale).

The shipped checkpoints (checkpoints/) unless a test says otherwise, as in the walk.
"""
from __future__ import annotations

import base64
import json
import logging

import numpy as np
import pytest

from app_pages import open_page, page_text, user_folders

GATE_TEXT = "the acting is superb , but the plot is not very good ."
SST2 = ["act-sst2", "agcnn-sst2", "hcan-sst2", "kim_cnn-sst2", "lama-sst2", "transformer-sst2"]


@pytest.fixture(autouse=True)
def _one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def _z(chart) -> np.ndarray:
    """A Plotly chart's first trace's z as the browser gets it (a typed array {dtype, bdata, shape}, or lists)."""
    z = json.loads(chart.proto.spec)["data"][0]["z"]
    if isinstance(z, dict):
        shape = [int(x) for x in str(z["shape"]).replace(" ", "").split(",")]
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"])).astype(float).reshape(shape)
    return np.array([[np.nan if v is None else v for v in row] for row in z], dtype=float)


def _radio(at, label: str):
    return next(r for r in at.radio if r.label == label)


# ---------------------------------------------------------------- Inspect: AGCNN's gates past the end, and off

def test_inspect_agcnn_gates_are_blank_past_the_end_and_the_off_ones_are_said():
    """/inspect?ckpt=agcnn-sst2&text=..., h = 3, k = 5: the gate map's last two columns (no 3-gram starts there)
    are blank, not 0 like a closed gate; the closed gates are marked "off" and the page says how many are off and
    what opening them changes, as the Lab does."""
    at = open_page("pages/inspect.py", params={"ckpt": "agcnn-sst2", "text": GATE_TEXT})
    _radio(at, "window size h").set_value(3).run()
    _radio(at, "gate width k").set_value(5).run()
    assert not at.exception, [e.value for e in at.exception]
    tabs = "insp_fig_0_agcnn-sst2_AG-F4"
    at.session_state[tabs] = "gate D, h = 3, k = 5"                     # the gate map's tab, as a click opens it
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    gate = next(c for c in at.get("plotly_chart") if "gate D, h = 3, k = 5" in c.proto.spec)
    z = _z(gate)
    n = len(GATE_TEXT.split())
    assert z.shape[1] == n
    assert np.isnan(z[:, n - 2:]).all()                                  # past the end: blank, never 0
    assert np.isfinite(z[:, :n - 2]).all() and (z[:, :n - 2] == 0).any()  # closed gates are there, as 0
    spec = json.loads(gate.proto.spec)["data"][0]
    assert "off" in str(spec["text"]) and "%{text}" in spec["hovertemplate"]
    text = page_text(at, unescape=True)
    assert "Dark cells are off" in text and "Grey columns: the last 2 token(s)" in text
    assert "width-5 gate on 3-word features:" in text and "of its gates are off on this text" in text
    assert "Opening them all (gate = 1) moves" in text
    assert "Opening only that gate moves" in text                        # the Lab's gate that matters


def test_kim_cnn_and_generic_maps_leave_positions_past_the_end_blank(shipped_predictors):
    """The same padding in Kim CNN's maps and in the generic view of AGCNN's: blank, not 0."""
    from textcls import viz
    for name, view, opts, key in (("kim_cnn-sst2", "AG-F3", {"h": 4}, "conv_h4"),
                                  ("agcnn-sst2", "generic", {"maps": ["gate_h5_k1"]}, "gate_h5_k1")):
        p = shipped_predictors[name]
        (r,) = p.predict(GATE_TEXT, return_maps=True)
        specs = {s.name: s for s in p.model.map_specs()}
        vi = viz.ViewInput(p.model.registry_name, specs, r.maps, list(r.tokens), r.sentences, title=name,
                           opts=opts)
        fig = next(f for f in viz.build_view(view, vi) if f.meta.get("map") == key)
        z = np.asarray(fig.fig.data[0].z, float)
        h = int(key.split("_h")[1][0])
        assert np.isnan(z[:, len(r.tokens) - h + 1:]).all() and np.isfinite(z[:, :len(r.tokens) - h + 1]).all()


# ---------------------------------------------------------------- Compare: one short-text note

def test_compare_says_the_short_text_note_once_for_all_checkpoints_of_a_task():
    at = open_page("pages/compare.py", params={"ckpt": ",".join(SST2), "text": "<b>bold</b> claim"})
    notes = [c.value for c in at.caption if "This text has" in c.value]
    assert len(notes) == 1, notes
    assert all(n.replace("\\", "") in notes[0].replace("\\", "") for n in SST2)


def test_length_notes_group_by_data_set():
    from types import SimpleNamespace as NS
    from textcls.analysis.lengths import length_note, length_notes
    infos = [NS(name=n, model=n.split("-")[0], data="sst2", labels=["negative", "positive"]) for n in SST2[:3]]
    lines = length_notes(infos, 2, infos)
    assert len(lines) == 1 and all(i.name in lines[0] for i in infos) and "were trained on sst2" in lines[0]
    assert length_notes(infos[:1], 2, infos) == [length_note(infos[0], 2, infos)]
    assert length_notes(infos, 40, infos) == []


# ---------------------------------------------------------------- Compare: the task set one way only

@pytest.mark.parametrize("page,params,key", [
    ("pages/compare.py", {"ckpt": "act-sst2,kim_cnn-sst2", "text": "a fine film"}, "cmp_task"),
    ("pages/explore.py", {"ckpt": "kim_cnn-sst2", "data": "sst2", "split": "dev", "view": "Neighbours",
                          "text": "a fine film"}, "exp_text")])
def test_a_linked_widget_value_is_set_one_way_only(monkeypatch, page, params, key):
    """A link to Compare (as the walk's Home -> Compare did) set cmp_task through Session State while the widget
    also had a default: Streamlit logged a warning with a stack trace (and Explore's text box the same, seen in the
    walk's server log once Compare's was gone). AppTest runs without a runtime, where Streamlit skips that check:
    it is switched on here."""
    import streamlit.elements.lib.policies as policies
    monkeypatch.setattr(policies.runtime, "exists", lambda: True)
    monkeypatch.setattr(policies, "_shown_default_value_warning", False)
    said: list[str] = []

    class Catch(logging.Handler):
        def emit(self, record):
            said.append(record.getMessage())
    handler = Catch()
    logging.getLogger(policies.__name__).addHandler(handler)
    try:
        at = open_page(page, params=params, timeout=300)
        linked = (at.segmented_control(key=key) if key == "cmp_task" else at.text_input(key=key)).value
        at.switch_page("pages/home.py").run()
        at.switch_page(page).run()
    finally:
        logging.getLogger(policies.__name__).removeHandler(handler)
    assert not at.exception
    assert not [m for m in said if key in m], said
    assert linked == ("sst2" if key == "cmp_task" else "a fine film")          # the link's value is shown


# ---------------------------------------------------------------- Train: one submit, one run

def test_train_enter_and_then_the_button_start_one_run(tmp_path, monkeypatch, bundled_data):
    """Enter in the Epochs box submitted the form (a run), then "Start training" submitted it again: a second,
    identical run (lama-small-sst2 and lama-small-sst2-2). Enter no longer submits, and a second submit of the same
    settings while the first run trains is refused with a message."""
    (tmp_path / "shipped").mkdir()
    user_folders(monkeypatch, tmp_path, tmp_path / "shipped", data=bundled_data)
    at = open_page("pages/train.py")
    forms = [b for b in _blocks(at) if b.type == "form"]
    assert forms and all(not b.proto.form.enter_to_submit for b in forms), [b.proto.form for b in forms]
    at.radio(key="tr_emb").set_value("random")
    at.number_input(key="tr_limit").set_value(300)
    at.selectbox(key="tr_model").set_value("lama").run()
    at.number_input(key="tr_epochs").set_value(200)                     # long enough to still run at the 2nd submit
    start = next(b for b in at.button if b.label == "Start training")
    start.click().run()
    assert not at.error, [e.value for e in at.error]
    first = list(at.session_state["train_jobs"])
    try:
        next(b for b in at.button if b.label == "Start training").click().run()
        assert not at.exception
        assert list(at.session_state["train_jobs"]) == first                # no second run
        said = " ".join(str(x.value) for x in at.warning).replace("\\", "")
        assert "already training" in said and "lama-small-sst2" in said
    finally:
        from pages.common import cache
        reg = cache.job_registry()
        for j in at.session_state["train_jobs"]:
            reg.stop(j)
            job = reg.get(j)
            if job is not None:
                job.wait(120)


def _blocks(at):
    """Every block node of an AppTest's tree (forms, columns, ...)."""
    from streamlit.testing.v1.element_tree import Block
    out, todo = [], list(at._tree.children.values())
    while todo:
        node = todo.pop()
        if isinstance(node, Block):
            out.append(node)
            todo.extend(node.children.values())
    return out


# ---------------------------------------------------------------- Inspect: the second checkpoint of the same task

def test_inspect_side_by_side_with_minilm_preselects_a_sentiment_model():
    at = open_page("pages/inspect.py", params={"ckpt": "minilm-sst2", "text": "a gripping , beautifully acted film"})
    at.toggle(key="insp_two").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    second = at.selectbox(key="insp_ckpt2").value
    assert second != "act-semeval2010" and second.endswith("-sst2"), second


# ---------------------------------------------------------------- Attribute: relation tagging only for relation models

def test_attribute_shows_the_entity_tagging_only_for_a_relation_checkpoint():
    from streamlit.testing.v1 import AppTest
    from app_pages import APP
    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["attr_ckpts"] = ["kim_cnn-sst2"]                   # one small model keeps the test short
    at.session_state["attr_methods"] = ["attention"]
    at.run()
    at.switch_page("pages/attribute.py").run()
    assert not at.exception, [e.value for e in at.exception]
    tagging = "Relation checkpoints classify the relation between two marked entities"
    assert tagging not in page_text(at)
    at.multiselect(key="attr_ckpts").set_value(["kim_cnn-sst2", "act-semeval2010"])
    next(b for b in at.button if b.label == "Explain").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert tagging in page_text(at)


# ---------------------------------------------------------------- the all-heads grid's type

def test_all_heads_grid_labels_are_at_least_11_px(shipped_predictors):
    """Inspect's Transformer view, all layers x heads, on a short sentence: the token labels were 8 px (about 7 on
    screen). Every label of the grid is at least 11 px, and still fits its tile."""
    from textcls import viz
    p = shipped_predictors["transformer-sst2"]
    (r,) = p.predict("a gripping , beautifully acted film", return_maps=True)
    specs = {s.name: s for s in p.model.map_specs()}
    for width in (900, 470):
        vi = viz.ViewInput("transformer", specs, r.maps, list(r.tokens), r.sentences, title="t",
                           opts={"max_width": width})
        grid = next(f for f in viz.build_view("TR-ATT", vi) if f.key.endswith("tr-grid")).fig
        lay = grid.layout
        sizes = [a.font.size for a in lay.annotations]
        if lay.xaxis.showticklabels is not False:
            sizes += [lay.xaxis.tickfont.size, lay.yaxis.tickfont.size]
            rows = len(r.tokens)
            assert (lay.height - 90 - 80) / (rows * 2) >= 11               # a row of type per token
        assert sizes and min(sizes) >= 11, sizes
        assert lay.width <= width
    assert viz.attention_grid(np.full((2, 4, 6, 6), 1 / 6), list("abcdef")).layout.xaxis.tickfont.size >= 11


# ---------------------------------------------------------------- Explore: whole neighbour texts

def test_explore_neighbours_show_whole_texts(tmp_path_factory, monkeypatch, bundled_data):
    import streamlit as st
    from test_app_home_compare_inspect import build_checkpoints
    root = tmp_path_factory.mktemp("nn_ckpts")
    names = build_checkpoints(root, models=("kim_cnn",))
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(root))
    monkeypatch.setenv("TEXTCLS_DATA", str(bundled_data))
    from pages.common import cache as page_cache
    page_cache.forget(data=True)
    query = ("the film is a gripping , beautifully acted drama whose plot never quite comes together , but the "
             "actors keep it alive from the first scene to the last .")
    at = open_page("pages/explore.py", params={"ckpt": names[0], "data": "sst2", "split": "dev",
                                               "view": "Neighbours", "text": query}, timeout=300)
    assert at.table, "the neighbours are not in a table that wraps whole texts"
    texts = [str(t) for t in at.table[0].value["text"]]
    from textcls.data.datasets import find_dataset, load_bundled
    from textcls.data.readable import readable
    pool = {readable(t) for t in load_bundled(find_dataset("sst2")).splits["train"].texts}
    assert len(texts) == 8 and set(texts) <= pool                          # each one whole
    assert not any(t.endswith("…") for t in texts)


# ---------------------------------------------------------------- the lesson "What attention weights leave out"

def _side_by_side(weights: dict[str, list[float]]):
    from textcls.interpret.context_mixing.compare import SideBySide
    words = ["the", "plot", "was", "boring"]
    return SideBySide(words=words, weights={m: np.asarray(v, float) for m, v in weights.items()}, label="negative",
                      faithfulness={m: {"aopc_comprehensiveness": 0.25, "aopc_sufficiency": 0.1} for m in weights},
                      skipped={"alti": "needs self-attention"})


def test_context_mixing_figure_uses_a_sequential_scale_for_weights_that_are_never_negative():
    from textcls.viz.context_mixing import side_by_side_figure
    pos = side_by_side_figure(_side_by_side({"attention": [0.1, 0.5, 0.2, 0.2], "norm": [0.4, 0.3, 0.2, 0.1]}))
    tr = pos.fig.data[0]
    assert tr.zmin == 0 and "RdBu" not in str(tr.colorscale) and tr.zmid is None
    signed = side_by_side_figure(_side_by_side({"value_zeroing": [0.5, -0.3, 0.1, 0.1]}))
    assert signed.fig.data[0].zmin < 0 and signed.fig.data[0].zmid == 0       # a diverging scale where it is used


def test_context_mixing_lines_are_printed_once_in_the_lesson():
    """The lesson's step 1 on minilm-sst2: each method's AOPC line once on the page (it was in the notes and again
    in the figure's caption), and its figure on a scale from 0 (every weight there is >= 0)."""
    at = open_page("pages/lessons.py", params={"lesson": "values", "step": "1"}, timeout=300)
    assert not at.warning, [x.value for x in at.warning]
    text = page_text(at, unescape=True)
    for m in ("raw attention", "norm (Kobayashi)"):
        assert text.count(f"{m}: AOPC comprehensiveness") == 1, text
    (chart,) = [c for c in at.get("plotly_chart") if "What the pooled position takes" in c.proto.spec]
    trace = json.loads(chart.proto.spec)["data"][0]
    assert trace["zmin"] == 0 and "zmid" not in trace


# ---------------------------------------------------------------- Home: the device sentence and word pieces

def test_describe_device_counts_threads_in_words():
    import torch
    from textcls.runtime.devices import describe_device
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert describe_device("cpu") == "cpu (1 thread)"
        torch.set_num_threads(2)
        assert describe_device("cpu") == "cpu (2 threads)"
    finally:
        torch.set_num_threads(before)


def test_home_says_where_it_predicted_in_a_sentence_and_word_pieces_have_no_unknown_words():
    at = open_page()
    at.text_input(key="home_text").input("a gripping , beautifully acted film")
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    text = page_text(at, unescape=True)
    line = next(x for x in text.splitlines() if x.startswith("Predicted on"))
    assert "(1 threads)" not in line and "chooses)" not in line and ") (" not in line, line
    assert "TEXTCLS_DEVICE" in line and line.count(". ") >= 1, line
    table = at.dataframe[-1].value
    unknown = dict(zip(table["checkpoint"], table["unknown words"]))
    assert unknown["minilm-sst2"] == "- (word pieces: no unknown words)"
    assert "None" not in {str(v) for v in unknown.values()}
    assert unknown["act-sst2"] == "0"
