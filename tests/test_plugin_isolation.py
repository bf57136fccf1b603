"""Plugins isolated (issue 41, item 9; item 4 for their outputs): a model package that exits, is interrupted or
raises at import is skipped with its error kept (one line, shown on Home); a plugin's model that fails at run time,
returns NaN or logits of the wrong shape is refused naming the checkpoint, the family and the package. Fake entry
points over modules written to a temporary folder: no pip, fast."""
from __future__ import annotations

import importlib.metadata
import sys
import textwrap

import pytest

import textcls
from textcls.inference import ModelOutputError, Predictor

FAMILY = textwrap.dedent('''
    from dataclasses import dataclass
    import torch
    import torch.nn as nn
    from textcls.models.base import BaseConfig, TextClassifier, param
    from textcls.models.registration import register_model


    @dataclass
    class OddConfig(BaseConfig):
        hidden: int = param(4, "unused")


    @register_model("{name}", OddConfig, description="a misbehaving plugin for tests")
    class Odd(TextClassifier):
        def __init__(self, config, embeddings=None):
            super().__init__(config)
            self.w = nn.Linear(1, config.num_labels)

        def map_specs(self):
            return []

        def _forward(self, token_ids, mask, probe):
            logits = self.w(mask.float().sum(-1, keepdim=True))                 # (B, C)
            {body}
            return logits, None
''')
BODIES = {"nanfam": "logits = logits * float('nan')",
          "shapefam": "logits = torch.zeros(logits.shape[0], 5)",
          "ghostfam": "raise KeyError('ghost')"}
BROKEN = {"exits": "import sys\nsys.exit(3)\n", "interrupts": "raise KeyboardInterrupt\n",
          "escapes": "raise ValueError('bad\\x1b[2J\\nline')\n"}


@pytest.fixture
def fake_plugins(tmp_path, monkeypatch):
    from textcls.models import plugins
    from textcls.models.registration import _REGISTRY
    eps = []
    for name, body in BODIES.items():
        (tmp_path / f"pkg_{name}.py").write_text(FAMILY.replace("{name}", name).replace("{body}", body))
        eps.append(importlib.metadata.EntryPoint(f"pkg-{name}", f"pkg_{name}", plugins.GROUP))
    for name, code in BROKEN.items():
        (tmp_path / f"pkg_{name}.py").write_text(code)
        eps.append(importlib.metadata.EntryPoint(f"pkg-{name}", f"pkg_{name}", plugins.GROUP))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group=None: [e for e in eps if e.group == group])
    monkeypatch.setattr(plugins, "_seen", set())
    monkeypatch.setattr(plugins, "_errors", {})
    monkeypatch.setattr(plugins, "_owners", {})
    yield plugins
    for name in BODIES:
        _REGISTRY.pop(name, None)
    for name in [*BODIES, *BROKEN]:
        sys.modules.pop(f"pkg_{name}", None)


def test_a_package_that_exits_or_is_interrupted_at_import_is_skipped(fake_plugins):
    with pytest.warns(RuntimeWarning):
        loaded = fake_plugins.load_plugins()
    assert set(loaded) == {"pkg-nanfam", "pkg-shapefam", "pkg-ghostfam"}
    errors = fake_plugins.plugin_errors()
    assert errors["pkg-exits"].startswith("SystemExit: 3") and errors["pkg-interrupts"].startswith("KeyboardInterrupt")
    problems = fake_plugins.plugin_problems()
    assert len(problems) == 3 and all("\n" not in p and "\x1b" not in p for p in problems)
    assert any("'pkg-escapes'" in p and "\\x1b[2J" in p for p in problems)
    assert fake_plugins.plugin_of("nanfam") == "pkg-nanfam" and fake_plugins.plugin_of("act") is None


def _predictor(family: str) -> Predictor:
    from textcls.data.text import Tokenizer
    tok = Tokenizer.build(["a good film", "a bad film"])
    model = textcls.create_model(family, vocab_size=len(tok.vocab), num_labels=2)
    return Predictor(model, tok, ["negative", "positive"], name=f"my-{family}")


@pytest.mark.parametrize("family, words", [
    ("nanfam", "NaN or infinite logits for 2 of 2"),
    ("shapefam", r"logits of shape \(2, 5\), expected \(2, 2\)"),
    ("ghostfam", "failed: KeyError: 'ghost'"),
])
def test_a_plugin_model_that_misbehaves_is_refused_naming_it(fake_plugins, family, words):
    with pytest.warns(RuntimeWarning):
        fake_plugins.load_plugins()
    p = _predictor(family)
    with pytest.raises(ModelOutputError, match=words) as e:
        p.predict(["a good film", "a bad film"])
    assert f"'my-{family}' ({family}, from the model package 'pkg-{family}')" in str(e.value)


def test_the_cli_reports_a_misbehaving_model_as_bad_input_in_one_line(fake_plugins, tmp_path, capsys):
    """`evaluate`/`predict` on a checkpoint whose plugin returns NaN: exit 2, one line naming the package (it gave
    accuracy 0.54 and exit 0)."""
    from textcls.checkpoint import save_checkpoint
    from textcls.cli import main
    with pytest.warns(RuntimeWarning):
        fake_plugins.load_plugins()
    p = _predictor("nanfam")
    save_checkpoint(tmp_path / "nan-ckpt", p.model, p.tokenizer, p.labels)
    assert main(["predict", str(tmp_path / "nan-ckpt"), "a good film"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "from the model package 'pkg-nanfam'" in err[0] and "NaN" in err[0]


def test_a_builtin_model_returning_nan_is_refused_too():
    import torch
    from textcls.data.text import Tokenizer
    tok = Tokenizer.build(["a good film"])
    model = textcls.create_model("kim_cnn", vocab_size=len(tok.vocab), num_labels=2, preset="small").eval()
    with torch.no_grad():
        for q in model.parameters():
            q.fill_(float("nan"))
    with pytest.raises(ModelOutputError, match=r"'kim_cnn' \(kim_cnn\) returned NaN"):
        Predictor(model, tok, ["negative", "positive"]).predict("a good film")


def test_home_shows_the_packages_that_failed_to_load(fake_plugins):
    """Item 9: plugin_errors() reaches the person - Home warns, one line per package, escaped."""
    from app_pages import open_page, page_text
    with pytest.warns(RuntimeWarning):
        fake_plugins.load_plugins()
    text = page_text(open_page(), unescape=True)
    assert "the model package 'pkg-exits' failed to load and was skipped: SystemExit: 3" in text
    assert "pkg-interrupts" in text and "\x1b" not in text
