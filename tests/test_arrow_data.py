"""The memory-mapped path for big data (textcls/data/arrow.py), on a generated local CSV (no network): the same
splits, vocabulary and token ids as the in-memory path, a tokenisation cache on disk that a second run reads
back, a training run through it, and the hub failing offline with one clear error."""
from __future__ import annotations

import csv
import random

import pytest
import torch

from textcls.data.arrow import build_tokenizer, encode_arrow, load_arrow
from textcls.data.batching import encode_split
from textcls.data.datasets import DataError
from textcls.data.files import load_file
from textcls.data.text import Tokenizer, TokenizerConfig

WORDS = "good bad great awful fine movie plot actor dull brilliant boring superb , . !".split()


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory):
    rng = random.Random(0)
    path = tmp_path_factory.mktemp("big") / "reviews.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "text", "label"])
        for i in range(2500):
            t = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 25)))
            w.writerow([i, t, rng.choice(["pos", "neg", "neutral"])])
    return path


@pytest.mark.parametrize("hierarchical", [False, True])
def test_same_splits_vocabulary_and_ids_as_in_memory(csv_file, tmp_path, hierarchical):
    ab = load_arrow(csv_file, seed=4, cache_dir=tmp_path)
    mb = load_file(csv_file, seed=4)
    assert ab.labels == mb.labels and set(ab.splits) == set(mb.splits)
    for k in mb.splits:
        assert list(ab.splits[k]["text"]) == mb.splits[k].texts
        assert list(ab.splits[k]["label"]) == mb.splits[k].labels
    cfg = TokenizerConfig(max_len=12, hierarchical=hierarchical)
    tok = build_tokenizer(ab.splits["train"], cfg)
    assert tok.vocab == Tokenizer.build(mb.splits["train"].texts, cfg).vocab
    ea = encode_arrow(tok, ab.splits["dev"], num_proc=1, cache_dir=tmp_path)
    em = encode_split(tok, mb.splits["dev"])
    assert list(ea.lengths) == em.lengths and torch.equal(ea.labels, em.labels)
    assert list(ea.truncated) == em.truncated
    index = [3, 0, 17, 249]
    assert all(torch.equal(a, b) for a, b in zip(ea.batch(index), em.batch(index)))


def test_tokenisation_is_cached_on_disk(csv_file, tmp_path):
    ab = load_arrow(csv_file, cache_dir=tmp_path, limit=2000)
    tok = build_tokenizer(ab.splits["train"])
    encode_arrow(tok, ab.splits["train"], num_proc=2, batch_size=200, cache_dir=tmp_path)
    files = sorted(tmp_path.glob("tok-*.arrow"))
    assert len(files) == 2                                   # one per tokenising process
    stamps = [f.stat().st_mtime_ns for f in files]
    again = encode_arrow(tok, ab.splits["train"], num_proc=2, batch_size=200, cache_dir=tmp_path)
    assert [f.stat().st_mtime_ns for f in sorted(tmp_path.glob("tok-*.arrow"))] == stamps   # read back
    assert len(again) == len(ab.splits["train"])


def test_train_through_the_arrow_path(csv_file, tmp_path, monkeypatch):
    monkeypatch.setenv("TEXTCLS_CACHE", str(tmp_path / "cache"))
    from textcls.checkpoint import load_checkpoint
    from textcls.train.pipeline import train_from_spec
    res = train_from_spec(str(csv_file), "kim_cnn", preset="small", embeddings="random", epochs=1,
                          out=tmp_path / "ck", arrow=True, num_proc=1, train_overrides={"max_steps": 5})
    assert res.history.steps == 5 and "test" in res.metrics
    p = load_checkpoint(tmp_path / "ck")
    assert p.info["data"]["arrow"] is True and p.labels == ["neg", "neutral", "pos"]


def test_unknown_file_and_offline_hub_are_clear_errors(tmp_path, monkeypatch):
    with pytest.raises(DataError, match="not a bundled data set"):
        load_arrow(tmp_path / "missing.csv", cache_dir=tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataError, match="offline"):
        load_arrow("hf:fancyzhx/ag_news", cache_dir=tmp_path)
