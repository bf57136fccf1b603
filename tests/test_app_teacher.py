"""A teacher's class, walked (issue 40): what stood between preparing a lesson and projecting it. Each test is one
item of the issue, through the pages as a class uses them (AppTest), or through the library call the page makes.

Tiny untrained checkpoints (test_app_home_compare_inspect.build_checkpoints) for the page flows; the shipped
checkpoints where the item is about them (the AGCNN gate demo, HCAN on a short review, the Home table).
"""
from __future__ import annotations

from urllib.parse import parse_qs

import numpy as np
import pytest

from app_pages import open_page, page_text
from test_app_home_compare_inspect import SENTENCE, build_checkpoints

MINE = "my own sentence : the soup was cold but the waiter was kind ."


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("teacher_ckpts")
    return root, build_checkpoints(root)


@pytest.fixture
def tiny_app(tiny, monkeypatch):
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(tiny[0]))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    return tiny


def navigate(at, page: str):
    """The sidebar's page link as the browser follows it: Streamlit resets the query string on a page switch
    (AppTest's switch_page keeps it)."""
    at.query_params.clear()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _compare(at, text: str):
    at.text_area(key="cmp_text").input(text)
    next(b for b in at.button if b.label == "Compare").click().run()
    assert not at.exception, [e.value for e in at.exception]


# ---------------------------------------------------------------- item 4: pages remember what the person did

def test_the_sentence_and_the_added_checkpoint_follow_the_person_across_pages(tiny_app):
    """Type a sentence on Compare, add a checkpoint, open Inspect: Inspect shows that checkpoint and that
    sentence; back on Compare the sentence and the choice are as they were left."""
    at = open_page("pages/compare.py")
    key = next(m.key for m in at.multiselect if m.key.startswith("cmp_ckpts_"))
    at.multiselect(key=key).unselect("transformer_tiny").run()
    at.multiselect(key=key).select("transformer_tiny").run()          # the person adds a checkpoint
    chosen = list(at.multiselect(key=key).value)
    _compare(at, MINE)
    navigate(at, "pages/inspect.py")
    assert at.selectbox(key="insp_ckpt").value == "transformer_tiny"
    assert at.text_area(key="insp_text").value == MINE
    navigate(at, "pages/compare.py")
    assert at.text_area(key="cmp_text").value == MINE
    assert list(at.multiselect(key=key).value) == chosen
    navigate(at, "pages/attribute.py")
    assert at.text_input(key="attr_text").value == MINE


def test_compare_puts_its_sentence_and_checkpoints_in_the_url_and_a_link_reopens_them(tiny_app):
    at = open_page("pages/compare.py")
    _compare(at, MINE)
    assert at.query_params["text"] in (MINE, [MINE])
    linked = open_page("pages/compare.py", params={"ckpt": "act_tiny,hcan_tiny", "text": SENTENCE})
    key = next(m.key for m in linked.multiselect if m.key.startswith("cmp_ckpts_"))
    assert list(linked.multiselect(key=key).value) == ["act_tiny", "hcan_tiny"]
    assert linked.text_area(key="cmp_text").value == SENTENCE


# ---------------------------------------------------------------- item 10: Compare links to Inspect

def test_compare_links_each_checkpoint_to_inspect_with_the_sentence(tiny_app):
    at = open_page("pages/compare.py")
    _compare(at, MINE)
    links = [x for x in at.get("page_link") if x.proto.page.endswith("inspect.py")
             or "inspect" in x.proto.page]
    assert links, "no link to Inspect"
    names = tiny_app[1]
    assert sorted(x.proto.label for x in links) == sorted(names)
    q = parse_qs(links[0].proto.query_string)
    assert q["ckpt"] == [links[0].proto.label] and q["text"] == [MINE]
    # following the link opens that checkpoint on that sentence
    inspect = open_page("pages/inspect.py", params={"ckpt": q["ckpt"][0], "text": q["text"][0]})
    assert inspect.selectbox(key="insp_ckpt").value == q["ckpt"][0]
    assert inspect.text_area(key="insp_text").value == MINE


# ---------------------------------------------------------------- item 7: agreement, not correctness

def test_compare_cards_say_agreement_in_words_never_a_check_mark(tiny_app):
    at = open_page("pages/compare.py")
    _compare(at, MINE)
    cards = at.get("html")[0].proto.body
    assert "✓" not in cards and "✗" not in cards
    if at.warning:                                                     # the tiny models disagree on it
        assert "differs from most checkpoints" in cards


# ---------------------------------------------------------------- item 2: one rule, on screen

def test_inspect_states_the_one_verdict_rule_where_it_gives_the_verdict(tiny_app):
    from textcls.interpret.faithfulness import N_RANDOM
    at = open_page("pages/inspect.py", params={"ckpt": "act_tiny", "text": SENTENCE})
    text = page_text(at, unescape=True)
    assert "Faithful on this text?" in text
    assert f"else {N_RANDOM} random orders" in text and "cannot show that the explanation is faithful " \
                                                      "in general" in text
    assert "p = " in text and "NAOPC" in text


# ---------------------------------------------------------------- item 8: words a class can read

def test_home_classifies_a_sentence_with_one_tasks_checkpoints_and_names_models_in_words(monkeypatch):
    """The shipped checkpoints: a movie review goes to the sentiment checkpoints only (never 'disagree: 4 say
    ENTY'); MiniLM's model reads as a BERT encoder, not hf:Bert; 'trained on sst2_phrases' is explained; the
    entity syntax has no literal backticks."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    at = open_page()
    table = at.dataframe[0].value
    models = dict(zip(table["checkpoint"], table["model"]))
    assert models["minilm-sst2"] == "BERT (Hugging Face)" and models["act-sst2"] == "ACT"
    assert not any(str(m).startswith("hf:") for m in models.values())
    text = page_text(at, unescape=True)
    assert "sst2_phrases (" in text and "is what sst2's checkpoints were trained on" in text
    assert at.segmented_control(key="home_task").value == "sst2"
    at.text_input(key="home_text").input("a gripping , beautifully acted film")
    at.button[0].click().run()
    assert not at.exception
    result = at.dataframe[-1].value
    assert set(result["data set"]) == {"sst2"}
    assert not any(lab in page_text(at) for lab in ("ENTY", "HUM", "DESC"))


def test_entity_syntax_is_plain_text_everywhere():
    from textcls.data.relation import MARKER_SYNTAX
    assert "`" not in MARKER_SYNTAX and "<e1> ... </e1>" in MARKER_SYNTAX


# ---------------------------------------------------------------- item 9: a short text on a document model

def test_hcan_imdb_on_a_short_review_says_so_and_suggests_hcan_sst2(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    review = "The plot was thin. The actors were wonderful though. I left smiling."
    at = open_page("pages/inspect.py", params={"ckpt": "hcan-imdb", "text": review})
    notes = " ".join(x.value for x in at.info).replace("\\", "")
    assert "This text has 12 words; hcan-imdb was trained on imdb" in notes and "try hcan-sst2" in notes
    at2 = open_page("pages/inspect.py", params={"ckpt": "hcan-sst2", "text": review})
    assert "was trained on" not in " ".join(x.value for x in at2.info)        # sentences: the right length


def test_sentence_labels_are_cut_between_words():
    from textcls.viz.axes import axis_labels
    labels = axis_labels("sentence", 2, sentences=[["the", "plot", "was", "thin", "."],
                                                   ["the", "actors", "were", "wonderful", "though", "."]])
    assert labels[1] == "S2: the actors were wonderful though ."      # whole, as it fits
    long = axis_labels("sentence", 1, sentences=[("a rather long sentence whose words run on and on well past the room".split())])
    assert long[0].endswith("…") and "  " not in long[0] and long[0][:-1].split()[-1] in "a rather long sentence whose words run on and on".split()


# ---------------------------------------------------------------- item 6: a gate switching a feature off

def test_the_gate_demo_finds_a_closed_gate_that_moves_the_prediction(shipped_predictors):
    """Lab's AGCNN demo on its default sentence: the gate map that matters moves the prediction by more than a
    tenth, a closed gate (exactly 0) is found, and opening it alone moves the prediction; the words name the
    gate and the n-gram, never gate_h3_k5 or 'TVD'."""
    from textcls.interpret import as_source
    from textcls.interpret.lab import GATE_SENTENCE, gate_closure_lines, gate_closures
    from textcls.viz.explanations import gate_closure_figure
    p = shipped_predictors["agcnn-sst2"]
    src = as_source(p)
    (inst,) = src.instances([GATE_SENTENCE])
    res = gate_closures(p.model, inst, labels=src.labels)
    top = max(res["maps"], key=lambda r: r["tvd_open"])
    assert top["tvd_open"] > 0.1 and res["map"] == top["map"]
    b = res["best"]
    assert b is not None and res["gate"][b["filter"], b["position"]] == 0 and b["activation"] > 0
    assert b["tvd"] > 0.01                                            # opening that one gate moves it
    lines = " ".join(gate_closure_lines(res))
    assert b["ngram"] in lines and "gate_h" not in lines and "TVD" not in lines
    fig = gate_closure_figure(res)
    assert fig.fig.layout.shapes and "off" in str(fig.fig.data[0].text)
    assert res["gate"].shape[1] == len(res["ngrams"]) == inst.n - int(res["map"].split("_h")[1][0]) + 1


def test_gate_profile_leaves_positions_past_the_end_empty_not_closed():
    from textcls.viz.explanations import gate_profile_figure
    res = {"profile": {"gate_h1_k1": np.array([0.2, 0.3, 0.4]), "gate_h3_k3": np.array([0.5])},
           "tokens": ["a", "b", "c"]}
    z = np.asarray(gate_profile_figure(res).fig.data[0].z, float)
    assert z[0].tolist() == [0.2, 0.3, 0.4]
    assert z[1, 0] == 0.5 and np.isnan(z[1, 1:]).all()                 # a 3-gram fits once in 3 words
    assert "width-3 gate on 3-word features" in str(gate_profile_figure(res).fig.data[0].y)


# ---------------------------------------------------------------- item 3: presenter mode

def test_presenter_figures_have_no_small_text():
    from textcls import viz
    from textcls.teach.presenter import PRESENTER_MIN_FONT, presenter_figure
    from textcls.models.outputs import MapSpec
    fig = viz.heatmap(np.eye(3), MapSpec("m", ("query_token", "key_token"), "attention"), ["a", "b", "c"])
    fig.update_xaxes(tickfont=dict(size=8))
    big = presenter_figure(fig).to_plotly_json()

    def sizes(node):
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("font", "tickfont", "textfont") and isinstance(v, dict) and "size" in v:
                    yield v["size"]
                yield from sizes(v)
        elif isinstance(node, list):
            for v in node:
                yield from sizes(v)
    found = list(sizes(big))
    assert found and min(found) >= PRESENTER_MIN_FONT
    assert big["layout"]["xaxis"]["tickfont"]["size"] >= PRESENTER_MIN_FONT


def test_next_scrolls_the_lesson_back_to_its_title():
    """The step's page carries a script that scrolls to the top, new for each step (so it runs after Next)."""
    at = open_page("pages/lessons.py", params={"lesson": "gates", "step": "2", "presenter": "1"})
    scripts = [h.proto.body for h in at.get("html") if "scrollTo" in h.proto.body]
    assert len(scripts) == 1 and "gates-1" in scripts[0]
    next(b for b in at.button if b.label == "Next").click().run()
    scripts = [h.proto.body for h in at.get("html") if "scrollTo" in h.proto.body]
    assert len(scripts) == 1 and "gates-2" in scripts[0]
