"""Any PyTorch classifier through the entry-point group textcls.models: the example package of
docs/your_model.md is built from that page, installed with pip into a temporary folder (offline, no build
isolation), found by the registry, trained-free saved as a checkpoint, and opened on Compare and Inspect."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest
import torch

import textcls
from textcls.checkpoint import save_checkpoint
from textcls.data.text import Tokenizer, TokenizerConfig

from app_pages import REPO, open_page, page_text, shown_html
from test_app_home_compare_inspect import CORPUS, SENTENCE

DOC = REPO / "docs" / "your_model.md"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    from textcls.models import plugins
    from textcls.models.registration import _REGISTRY
    root = tmp_path_factory.mktemp("plugin")
    src, site = root / "src", root / "site"
    src.mkdir()
    (toml,), (code,) = blocks("toml"), blocks("python")
    assert 40 <= len(code.splitlines()) <= 80                       # the page's example is about 60 lines
    (src / "pyproject.toml").write_text(toml)
    (src / "textcls_bagpool.py").write_text(code)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--no-build-isolation", "--target", str(site), str(src)], check=True, timeout=300)
    sys.path.insert(0, str(site))
    # The app's model worker is a spawned process: it sees the packages of the path it was started with. A user
    # installs a plugin before starting the app; here it is installed mid-session, so the worker starts again.
    from textcls.serve.client import stop_shared
    stop_shared()
    yield site
    sys.path.remove(str(site))
    stop_shared()
    _REGISTRY.pop("bagpool", None)                                  # leave the registry as other tests expect it
    plugins._seen.clear()
    sys.modules.pop("textcls_bagpool", None)


def test_the_registry_finds_the_installed_family(installed):
    assert "bagpool" in textcls.list_models()
    entry = textcls.get_entry("bagpool")
    assert entry.description.startswith("bag of words")
    model = textcls.create_model("bagpool", vocab_size=30, num_labels=2, preset="small").eval()
    ids = torch.tensor([[2, 3, 4, 0, 0]])
    out = model(ids, ids != 0, return_maps=True)
    assert out.maps["alpha"].shape == (1, 5) and float(out.maps["alpha"].detach().sum()) == pytest.approx(1.0)
    longer = model(torch.tensor([[2, 3, 4, 0, 0, 0, 0]]), return_maps=False).logits
    torch.testing.assert_close(out.logits, longer)                  # padding never changes the logits


def test_its_checkpoint_opens_on_compare_and_inspect(installed, tmp_path, monkeypatch):
    tok = Tokenizer.build(CORPUS, TokenizerConfig())
    torch.manual_seed(0)
    model = textcls.create_model("bagpool", vocab_size=len(tok.vocab), num_labels=2, preset="small").eval()
    save_checkpoint(tmp_path / "bagpool_tiny", model, tok, ["negative", "positive"],
                    meta={"data": {"name": "tiny"}, "metrics": {"test_accuracy": 0.5}})
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(tmp_path))
    monkeypatch.setenv("TEXTCLS_HOME", str(tmp_path / "home"))
    at = open_page("pages/compare.py")
    at.text_area(key="cmp_text").input(SENTENCE)
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    cards, _, reasons = shown_html(at)
    assert "bagpool" in cards.replace("&#95;", "_") and "bagpool&#95;tiny →" in reasons
    at = open_page("pages/inspect.py")
    assert not at.exception and not at.error
    assert "bagpool" in page_text(at, unescape=True)
    assert at.get("plotly_chart") or at.get("html")                 # its maps are drawn from their specs
