"""Tokenizer tricks the folder checks missed (issue 55, item 5). textcls lays a text out itself (prefix specials,
each word's pieces, suffix specials) and runs the model on their embeddings; a folder is accepted only when that
equals transformers' own `tokenizer(text) -> model` on a probe text, checked at load - else it is refused in one
line. An added token whose id is past the embedding table (named only in tokenizer_config.json or
special_tokens_map.json, where the file checks do not look) is refused at load, not an IndexError at predict; a
text that its tokenizer leaves nothing of gets no verdict (the CLI exits 2 with one line)."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("transformers")

from hf_toys import family_folder  # noqa: E402

import textcls  # noqa: E402
from textcls.checkpoint import CheckpointError  # noqa: E402
from textcls.cli import main  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TEXTS = ["a good film , not bad", "the plot is dull and the acting awful .", "this movie was really fun"]


def _tok_json(change):
    def edit(p: Path) -> None:
        d = json.loads((p / "tokenizer.json").read_text(encoding="utf-8"))
        change(d)
        (p / "tokenizer.json").write_text(json.dumps(d), encoding="utf-8")
    return edit


def _no_post_processor(d):
    d["post_processor"] = None


def _text_twice(d):                                     # [CLS] $A [SEP] $A [SEP]
    single = d["post_processor"]["single"]
    d["post_processor"]["single"] = single + [{"Sequence": {"id": "A", "type_id": 0}}, single[-1]]


def _erasing_normalizer(d):
    d["normalizer"] = {"type": "Replace", "pattern": {"Regex": "[\\s\\S]"}, "content": ""}


def _erasing_pre_tokenizer(d):
    d["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": "[\\s\\S]"}, "behavior": "Removed", "invert": False}


def _added_in_tokenizer_config(p: Path) -> None:
    rows = json.loads((p / "config.json").read_text())["vocab_size"]
    tc = json.loads((p / "tokenizer_config.json").read_text())
    tc.setdefault("added_tokens_decoder", {})[str(rows)] = {"content": " ", "lstrip": False, "normalized": False,
                                                            "rstrip": False, "single_word": False, "special": True}
    (p / "tokenizer_config.json").write_text(json.dumps(tc))


def _added_in_special_tokens_map(p: Path) -> None:
    (p / "special_tokens_map.json").write_text(json.dumps({"additional_special_tokens": [" "]}))


CASES = {  # name -> (how the good folder is changed, what the one-line refusal says)
    "no_post_processor": (_tok_json(_no_post_processor), r"adds no special pieces .*no post-processor"),
    "text_twice": (_tok_json(_text_twice), r"template repeats the text"),
    "erasing_normalizer": (_tok_json(_erasing_normalizer), r"into no word pieces"),
    "erasing_pre_tokenizer": (_tok_json(_erasing_pre_tokenizer), r"into no word pieces"),
    "added_in_tokenizer_config": (_added_in_tokenizer_config, r"id past the embedding table's \d+ rows: ' '"),
    "added_in_special_tokens_map": (_added_in_special_tokens_map, r"id past the embedding table's \d+ rows: ' '"),
}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("tricks")
    good = family_folder(root, "bert")
    out = {}
    for name, (change, _) in CASES.items():
        out[name] = root / name
        shutil.copytree(good, out[name])
        change(out[name])
    return good, out


def _transformers_probabilities(folder: Path, texts) -> np.ndarray:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    hf = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    tok = AutoTokenizer.from_pretrained(folder)
    with torch.no_grad():
        return np.stack([torch.softmax(hf(**tok(t, return_tensors="pt")).logits, -1)[0].numpy() for t in texts])


def test_the_sound_folder_is_accepted_with_transformers_probabilities(folders):
    good, _ = folders
    got = np.array([list(p.probabilities.values()) for p in textcls.load_checkpoint(good).predict(TEXTS)])
    np.testing.assert_allclose(got, _transformers_probabilities(good, TEXTS), atol=1e-5)


@pytest.mark.parametrize("name", list(CASES))
def test_each_trick_is_refused_in_one_line_at_load(folders, name, capsys):
    _, made = folders
    with pytest.raises(CheckpointError) as e:
        textcls.load_checkpoint(made[name])
    msg = str(e.value)
    assert "\n" not in msg and re.search(CASES[name][1], msg), msg
    assert main(["predict", str(made[name]), "a good film"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(CASES[name][1], err) and "Traceback" not in err, err


@pytest.mark.parametrize("name", ["no_post_processor", "text_twice"])
def test_what_is_refused_would_have_differed_from_transformers(folders, name, monkeypatch):
    """The two template tricks are refused because textcls's probabilities would differ: with the check off, they
    do (the issue measured [0.3613, 0.6387] against [0.309, 0.691])."""
    from textcls.checkpoint import hf as hc
    _, made = folders
    monkeypatch.setattr(hc, "check_encoding", lambda *a, **k: None)
    got = np.array([list(p.probabilities.values()) for p in textcls.load_checkpoint(made[name]).predict(TEXTS)])
    assert np.abs(got - _transformers_probabilities(made[name], TEXTS)).max() > 1e-3


def test_probabilities_that_differ_from_transformers_are_refused(folders, monkeypatch):
    """The last check compares the probe text's probabilities themselves (whatever else made them differ)."""
    from textcls.checkpoint import hf as hc
    good, _ = folders
    monkeypatch.setattr(hc, "PROBE_TOLERANCE", -1.0)
    with pytest.raises(CheckpointError, match=r"textcls gives p = [\d.]+ where transformers gives [\d.]+"):
        textcls.load_checkpoint(good)


@pytest.mark.parametrize("ckpt", ["hf", REPO / "checkpoints" / "kim_cnn-sst2"])
@pytest.mark.parametrize("text", ["<br />", "\u200b"])
def test_a_text_with_no_words_gets_no_verdict(folders, ckpt, text, capsys):
    path = folders[0] if ckpt == "hf" else ckpt
    assert textcls.load_checkpoint(path).predict([text])[0].tokens == []
    assert main(["predict", str(path), text]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "has no words the model reads" in err, err
    assert main(["predict", str(path), "a good film", ""]) == 0              # a blank line keeps its row


def test_a_position_table_shorter_than_the_probe_text_is_compared_on_the_words_that_fit(tmp_path):
    """A model of 12 positions reads fewer pieces than the probe text has: the probe is cut to the words that fit
    before the two encodings are compared, so a sound folder is not refused for it (nor for a short max_len)."""
    from hf_toys import tiny_folder
    folder = tiny_folder(tmp_path, name="short-bert", positions=12)
    p = textcls.load_checkpoint(folder)
    got = np.array([list(p.predict(t)[0].probabilities.values()) for t in TEXTS[:1]])
    np.testing.assert_allclose(got, _transformers_probabilities(folder, TEXTS[:1]), atol=1e-5)
    from textcls.checkpoint.hf import load_hf
    model, tokenizer, _, _ = load_hf(folder, max_len=4)                       # a short max_len: not refused
    assert tokenizer.config.max_len == 4
