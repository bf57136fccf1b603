"""AppTest of the pages with Hugging Face families other than BERT (issue 44): a decoder with grouped-query
attention (a tiny random Qwen2: causal, the last real piece pooled), DeBERTa-v2 (attention read through
output_attentions, not editable) and FNet (no attention at all) beside a tiny textcls checkpoint."""
from __future__ import annotations

import html

import pytest

pytest.importorskip("transformers")

from hf_toys import family_folder  # noqa: E402

from app_pages import open_page, page_text, user_folders  # noqa: E402
from test_app_home_compare_inspect import build_checkpoints  # noqa: E402


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    root = tmp_path_factory.mktemp("hffam")
    names = build_checkpoints(root, ("kim_cnn",))
    return root, names + [family_folder(root, f).name for f in ("qwen2", "deberta-v2", "fnet")]


@pytest.fixture
def app(ckpts, monkeypatch, tmp_path):
    user_folders(monkeypatch, tmp_path, ckpts[0])
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    return open_page


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def test_compare_shades_a_decoder_by_its_last_piece(app, ckpts):
    at = app("pages/compare.py")
    key = next(m.key for m in at.multiselect if m.key.startswith("cmp_ckpts_"))
    at.multiselect(key=key).set_value(["kim_cnn_tiny", "tiny-qwen2", "tiny-fnet"]).run()
    at.text_area(key="cmp_text").input("the acting wasn't unbelievable")
    at.button(key="FormSubmitter:cmp_one-Compare").click().run()
    _ok(at)
    body = " ".join(html.unescape(h.proto.body) for h in at.get("html"))
    assert "tiny-qwen2" in body and "tiny-fnet" in body and "Ġ" not in body and " acting" not in body.replace(
        "the acting", "")


@pytest.mark.parametrize("name, words", [("tiny-qwen2", ["causal", "last real piece"]),
                                         ("tiny-deberta-v2", ["[CLS]"]),
                                         ("tiny-fnet", [])])
def test_inspect_draws_each_family_and_says_what_is_pooled(app, name, words):
    at = app("pages/inspect.py")
    at.selectbox(key="insp_ckpt").set_value(name).run()
    at.text_area(key="insp_text").input("the acting wasn't unbelievable").run()
    _ok(at)
    text = page_text(at, unescape=True)
    tabs = [k for k in at.session_state._state._state.filtered_state      # the view's figures, one tab each
            if k.startswith("insp_fig_0_") and not k.endswith("_open")]
    for label in ([t.label for t in at.tabs if t.label not in ("Words", "Word pieces")] if tabs else []):
        at.session_state[tabs[0]] = label
        at.run()
        _ok(at)
        text += page_text(at, unescape=True)
    for w in words:
        assert w in text, (name, w)
    if name != "tiny-fnet":
        assert at.get("plotly_chart")


@pytest.mark.parametrize("name", ["tiny-qwen2", "tiny-deberta-v2", "tiny-fnet"])
def test_attribute_explains_faithfulness_and_interventions(app, name):
    at = app("pages/attribute.py")
    at.multiselect(key="attr_ckpts").set_value([name])
    at.multiselect(key="attr_methods").set_value(["attention", "integrated_gradients", "occlusion"])
    at.text_input(key="attr_text").input("the acting wasn't unbelievable")
    at.button(key="FormSubmitter:attr_form-Explain").click().run()
    _ok(at)
    for view in ("Faithfulness", "Interventions"):
        at.session_state["attr_view"] = view
        at.run()
        _ok(at)
