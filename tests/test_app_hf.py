"""AppTest of every page with a Hugging Face checkpoint (a tiny random BERT saved with save_pretrained) beside a
tiny textcls checkpoint: the pages list it with its architecture, predict with it word by word and draw its
attention per layer and head."""
from __future__ import annotations

import html

import pytest

pytest.importorskip("transformers")

from hf_toys import tiny_folder  # noqa: E402

from app_pages import open_page, page_text, shown_html, user_folders  # noqa: E402
from test_app_home_compare_inspect import SENTENCE, build_checkpoints  # noqa: E402


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    root = tmp_path_factory.mktemp("hfckpts")
    names = build_checkpoints(root, ("kim_cnn",))
    hf = tiny_folder(root, "bert", meta={"data": {"name": "tiny"}, "metrics": {"test_accuracy": 0.55}})
    return root, names + [hf.name]


@pytest.fixture
def app(ckpts, monkeypatch, tmp_path):
    user_folders(monkeypatch, tmp_path, ckpts[0])
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    return open_page


def test_home_lists_it_with_its_architecture_and_predicts(app, ckpts):
    at = app()
    table = at.dataframe[0].value
    assert "tiny-bert" in set(table["checkpoint"])
    assert "BERT (Hugging Face)" in set(table["model"])              # the architecture in words, never "hf:Bert"
    assert max(map(len, table["model"])) <= 19                           # whole in the column's 128 px
    at.text_input(key="home_text").input(SENTENCE)
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "tiny-bert" in set(at.dataframe[-1].value["checkpoint"])


def test_compare_shows_it_beside_the_others_word_by_word(app, ckpts):
    at = app("pages/compare.py")
    key = next(m.key for m in at.multiselect if m.key.startswith("cmp_ckpts_"))
    assert "tiny-bert" not in at.multiselect(key=key).value          # the first render loads no pretrained encoder
    add = next(b for b in at.button if b.key and b.key.startswith("cmp_add_pre_"))
    assert "tiny-bert" in add.label
    add.click().run()                                                  # one click adds it
    assert "tiny-bert" in at.multiselect(key=key).value
    assert not any(b.key and b.key.startswith("cmp_add_pre_") for b in at.button)
    at.text_area(key="cmp_text").input("the food was unbelievable")
    at.button(key="FormSubmitter:cmp_one-Compare").click().run()
    assert not at.exception, [e.value for e in at.exception]
    cards, probs, reasons = [html.unescape(h) for h in shown_html(at)]
    for name in ckpts[1]:
        assert f">{name}<" in cards and f"{name} → " in reasons
    assert "unbelievable" in reasons and "##" not in reasons            # words, not word pieces


def test_inspect_draws_layer_and_head_attention_with_the_rule(app, ckpts):
    at = app("pages/inspect.py")
    at.selectbox(key="insp_ckpt").set_value("tiny-bert").run()
    at.text_area(key="insp_text").input("the food was unbelievable").run()
    assert not at.exception, [e.value for e in at.exception]
    text = page_text(at, unescape=True)
    assert "BERT (Hugging Face)" in text and "hf:Bert" not in text          # the architecture in words
    views = [s for s in at.selectbox if s.key and s.key.startswith("insp_view_")]
    assert views and views[0].value == "TR-ATT"                          # layer x head, head view, all-heads grid
    assert "a key word sums its pieces' weights" in text                # the aggregation rule is stated
    assert "Turn on the test above" in text                             # an encoder's test waits to be asked
    assert not [c for c in at.caption if "lower it by" in c.value]
    next(t for t in at.toggle if (t.key or "").startswith("insp_verdict_")).set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    assert [c for c in at.caption if "Faithful on this text?" in c.value and "lower it by" in c.value]
    assert len(at.get("plotly_chart")) == 1                             # the open tab's figure only
    assert {"head view, layer 2", "all layers x heads", "cls row"} <= {t.label for t in at.tabs}


def test_inspect_switches_to_word_pieces_for_the_encoder_only(app, ckpts):
    """An encoder that reads word pieces gets a Words / Word pieces switch; a textcls model does not. Word pieces
    draws the self-attention over [CLS] pieces... [SEP] and says what the word view makes of them."""
    import json

    at = app("pages/inspect.py")
    at.selectbox(key="insp_ckpt").set_value("kim_cnn_tiny").run()
    at.text_area(key="insp_text").input("the film was unbelievable")
    at.button(key="FormSubmitter:insp_form-Inspect").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.get("plotly_chart") or at.get("html")                                 # kim_cnn drew its view
    assert not [r for r in at.radio if r.key and r.key.startswith("insp_units_")]
    at.selectbox(key="insp_ckpt").set_value("tiny-bert").run()
    assert not at.exception, [e.value for e in at.exception]
    (switch,) = [r for r in at.radio if r.key and r.key.startswith("insp_units_")]
    assert switch.options == ["Words", "Word pieces"] and switch.value == "Words"
    switch.set_value("Word pieces").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    charts = at.get("plotly_chart")
    assert charts
    heat = json.loads(charts[0].proto.spec)
    ticks = heat["layout"]["xaxis"]["ticktext"]
    assert ticks == ["[CLS]", "the", "film", "was", "un", "##be", "##liev", "##able", "[SEP]"]
    assert "word pieces" in heat["layout"]["title"]["text"]
    text = page_text(at, unescape=True)
    assert "a key word's weight is the sum of its pieces' columns" in text
    assert "[CLS] and [SEP] included" in text
    assert not [s for s in at.selectbox if s.key and s.key.startswith("insp_view_")]     # the word views are off
    (layer,) = [r for r in at.radio if r.key and r.key.startswith("insp_pc_") and "_layer_" in r.key]
    assert layer.value == 1                                                             # the last layer first
    layer.set_value(0).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "layer 1" in json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["title"]["text"]


def _open_view(at, view):
    at.session_state["attr_view"] = view
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def test_attribute_every_method_faithfulness_and_head_ablation(app):
    at = app("pages/attribute.py")
    at.multiselect(key="attr_ckpts").set_value(["tiny-bert"])
    at.multiselect(key="attr_methods").set_value(["attention", "integrated_gradients", "saliency", "grad_x_input",
                                                  "occlusion", "shapley", "lime"])
    at.text_input(key="attr_text").input("the food was unbelievable")
    at.button(key="FormSubmitter:attr_form-Explain").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    text = page_text(at, unescape=True)
    assert "unbelievable" in text or at.get("plotly_chart")
    _open_view(at, "Faithfulness")
    _open_view(at, "Interventions")
    at.selectbox(key="attr_int_ckpt").set_value("tiny-bert").run()
    at.radio(key="attr_int_kind").set_value("Ablate a head").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "ablated" in page_text(at, unescape=True)


@pytest.mark.parametrize("page, key", [("pages/evaluate.py", "eval_ckpts"), ("pages/explore.py", "exp_ckpts")])
def test_evaluate_and_explore_open_with_it(app, page, key):
    at = app(page)
    at.multiselect(key=key).set_value(["tiny-bert", "kim_cnn_tiny"]).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def test_evaluate_opens_without_the_pretrained_encoders_and_says_so():
    """A whole split through a pretrained encoder takes tens of times longer than through the small models, so
    Evaluate's first selection leaves it out (one click adds it) and says so."""
    from types import SimpleNamespace as NS
    from pages.common import widgets as w
    infos = [NS(name="act-sst2", data="sst2", model="act", shipped=True),
             NS(name="minilm-sst2", data="sst2", model="hf:BertForSequenceClassification", shipped=True),
             NS(name="act-trec", data="trec", model="act", shipped=True)]
    assert w.main_task_checkpoints(infos) == ["act-sst2", "minilm-sst2"]
    assert w.main_task_checkpoints(infos, pretrained=False) == ["act-sst2"]
    assert w.is_pretrained(infos[1]) and not w.is_pretrained(infos[0])


def test_attribute_opens_without_the_pretrained_encoders(app):
    """Integrated gradients through a pretrained encoder take a hundred times as long: Attribute's first selection
    is the small models, the encoder one pick away."""
    at = app("pages/attribute.py")
    assert not at.exception, [e.value for e in at.exception]
    value = at.multiselect(key="attr_ckpts").value
    assert value and "tiny-bert" not in value
    assert any(o.startswith("tiny-bert ") for o in at.multiselect(key="attr_ckpts").options)


def test_inspect_faithfulness_line_needs_no_flip_test(app, monkeypatch):
    """The line under Inspect's view reads only the erasure curves (about 11 passes): the flip test (7 passes per
    word) took minutes on a 368-word text through MiniLM, so it must not run there. The model work in this process
    (TEXTCLS_WORKER=0), where the trap is set; the model worker runs the same function (textcls.serve.work.attention_verdict)."""
    from textcls.interpret import faithfulness

    def boom(*a, **k):
        raise AssertionError("erasure_flip ran on Inspect")
    monkeypatch.setattr(faithfulness, "erasure_flip", boom)
    monkeypatch.setenv("TEXTCLS_WORKER", "0")
    at = app("pages/inspect.py")
    at.selectbox(key="insp_ckpt").set_value("tiny-bert").run()
    at.text_area(key="insp_text").input("the food was unbelievable " * 30).run()
    next(t for t in at.toggle if (t.key or "").startswith("insp_verdict_")).set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    text = page_text(at, unescape=True)
    assert "Faithful on this text?" in text and "could not be computed" not in text


def test_the_listing_leaves_the_deep_check_to_the_folder_someone_selects(app, ckpts, monkeypatch, tmp_path):
    """The select boxes list a Hugging Face folder from its files (no transformers, no tokenizer probe); its deep
    check runs when someone adds it - in the model worker, before anything of it is built - and a refusal is one
    line for that folder while the other checkpoints answer."""
    import shutil
    from pathlib import Path

    from textcls.checkpoint import hf as hc
    fresh = shutil.copytree(ckpts[0], tmp_path / "fresh")        # folders no process has loaded (or cached) yet
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(fresh))
    deep = []
    real = hc._deep
    monkeypatch.setattr(hc, "_deep", lambda path, *a, **k: (deep.append(Path(path).name), real(path, *a, **k))[1])
    monkeypatch.setenv("TEXTCLS_MAX_PRETRAINED_PARAMETERS", "10000")       # tiny-bert's full check refuses it
    at = app("pages/compare.py")
    assert deep == []                                                     # listed (and offered) from its files
    add = next(b for b in at.button if b.key and b.key.startswith("cmp_add_pre_"))
    assert "tiny-bert" in add.label
    add.click().run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value.replace("\\", "") for e in at.error]
    assert len(errors) == 1 and "tiny-bert" in errors[0] and "max_pretrained_parameters" in errors[0], errors
    assert "\n" not in errors[0] and not [c for c in at.caption if "older version" in c.value]
    cards = html.unescape(at.get("html")[0].proto.body)
    assert ">kim_cnn_tiny<" in cards and ">tiny-bert<" not in cards        # the others still answer
