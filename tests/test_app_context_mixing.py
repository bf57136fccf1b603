"""AppTest of issue 43's widgets: Inspect's side-by-side view of raw attention, rollout, norm, ALTI and value
zeroing (for a model with self-attention only), with the library's numbers."""
from __future__ import annotations

import pytest

from app_pages import open_page
from test_app_home_compare_inspect import build_checkpoints


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    root = tmp_path_factory.mktemp("cm_ckpts")
    return root, build_checkpoints(root, ("kim_cnn", "transformer"))


def test_inspect_shows_the_side_by_side_view_for_self_attention_only(ckpts, monkeypatch):
    from pages.common import widgets as w
    from textcls.checkpoint import load_checkpoint
    from textcls.interpret.context_mixing.compare import side_by_side
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(ckpts[0]))
    at = open_page("pages/inspect.py")
    at.selectbox(key="insp_ckpt").set_value("kim_cnn_tiny").run()
    assert not [e for e in at.expander if "What attention weights leave out" in e.label]
    at.selectbox(key="insp_ckpt").set_value("transformer_tiny").run()
    assert [e for e in at.expander if "What attention weights leave out" in e.label]
    at.toggle(key="cm_inspect_insp0").set_value(True).run()
    assert not at.exception
    shown = {c.value for c in at.caption}
    s = side_by_side(load_checkpoint(ckpts[0] / "transformer_tiny"), w.EXAMPLE)
    assert list(s.weights) == ["attention", "rollout", "norm", "alti", "value_zeroing"]
    assert all(s.line(m) in shown for m in s.weights)                  # the numbers shown are the library's
