"""AppTest of a relation checkpoint (issue 16) on Home, Compare and Inspect: marker syntax explained, entities
marked in the shaded words, a sentence without (or with broken) markers gets a message, never a traceback."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

import textcls
from textcls.checkpoint import save_checkpoint
from textcls.models.relation import marker_overrides
from textcls.data.text import Tokenizer, TokenizerConfig

from app_pages import open_page, page_text as all_text, shown_html

CORPUS = ["the <e1>burst</e1> has been caused by water hammer <e2>pressure</e2> .",
          "a <e2>red wine</e2> was poured into the <e1>glass</e1> ."]
LABELS = ["Cause-Effect(e1,e2)", "Cause-Effect(e2,e1)", "Other"]


@pytest.fixture(scope="module")
def ckpt_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("relckpts")
    for k, name in enumerate(("act", "transformer")):
        tok = Tokenizer.build(CORPUS, TokenizerConfig(entities="keep"))
        torch.manual_seed(k)
        model = textcls.create_model(name, vocab_size=len(tok.vocab), num_labels=3, preset="small",
                                     variant="relative_positions", **marker_overrides(tok.vocab)).eval()
        save_checkpoint(root / f"{name}-rel", model, tok, LABELS,
                        meta={"data": {"name": "semeval2010"}, "metrics": {"test_accuracy": 0.4}})
    return root


@pytest.fixture
def app(ckpt_dir, monkeypatch):
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(ckpt_dir))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    return open_page


def test_compare_explains_markers_and_marks_the_entities(app):
    at = app("pages/compare.py")
    assert "Mark the two entities" in all_text(at)                      # the syntax, before anything is typed
    assert "<e1>" in at.text_area(key="cmp_text").value                 # a relation example sentence
    at.button[0].click().run()
    assert not at.exception and not at.error
    html = shown_html(at)[-1]                   # the shaded words (after cards, bars)
    assert "outline:2px solid" in html                                  # the entities outlined
    assert "Entity 1 outlined blue" in all_text(at)


@pytest.mark.parametrize("text, message", [("the burst was caused by pressure .", "need the two entities"),
                                           ("the <e1>burst</e1> was caused by pressure .", "not usable")])
def test_compare_sentence_without_markers_gets_a_message(app, text, message):
    at = app("pages/compare.py")
    at.text_area(key="cmp_text").input(text)
    at.button[0].click().run()
    assert not at.exception and not at.error
    assert any(message in w.value for w in at.warning), [w.value for w in at.warning]


def test_inspect_act_t4_and_relative_position_axes(app):
    at = app("pages/inspect.py")
    at.selectbox(key="insp_ckpt").set_value("act-rel").run()
    assert not at.exception and not at.error
    box = at.selectbox(key="insp_view_0_act-rel")
    assert box.value == "ACT-T4"
    assert "outline:2px solid" in [h.proto.body for h in at.get("html")][0]
    generic = [o for o in box.options if o != "ACT-T4"]
    for opt in generic:
        at.selectbox(key="insp_view_0_act-rel").set_value(opt).run()
        assert not at.exception and not at.error
    at.text_area(key="insp_text").input("no markers here")
    at.button[0].click().run()
    assert not at.exception and any("need the two entities" in w.value for w in at.warning)


def test_home_skips_relation_checkpoints_on_plain_text(app):
    at = app()
    at.text_input(key="home_text").input("the food was great")
    at.button[0].click().run()
    assert not at.exception and not at.error
    assert any("need the two entities" in c.value for c in at.caption)
