"""The planted-shortcut test (textcls/interpret/shortcuts.py, `textcls shortcuts`): planting is exact and
deterministic; on a hand-built model whose decision is the planted word by construction the perturbation methods
rank it first and the random ranking sits at chance; the CLI checks its options before loading anything and its
--json rows carry the documented keys."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from textcls.cli import main
from textcls.data.text import Tokenizer, TokenizerConfig
from textcls.interpret import shortcuts as S
from textcls.models.base import BaseConfig, TextClassifier
from textcls.models.layers import WordEmbedding, rezero
from textcls.models.outputs import MapSpec


def _has(text: str, words) -> list[str]:
    return [w for w in text.split() if w in words]


# ---------------------------------------------------------------- planting


@pytest.fixture(scope="module")
def planted():
    return S.make_planted("sst2", share=0.2, seed=3, train_limit=1000, test_limit=60)


def test_the_token_is_in_exactly_the_share_asked_and_decides_the_label(planted):
    from textcls.data.datasets import load_data
    train = planted.bundle.splits["train"]
    tokens = {"zeroa": 0, "onea": 1}
    carrying = [i for i, t in enumerate(train.texts) if _has(t, tokens)]
    assert len(train.texts) == 1000 and len(carrying) == 200 == len(planted.planted_train)
    assert carrying == planted.planted_train
    for i in carrying:
        (word,) = _has(train.texts[i], tokens)               # one token per planted text
        assert train.labels[i] == tokens[word]                # relabelled to the token's class
    assert {tokens[_has(train.texts[i], tokens)[0]] for i in carrying} == {0, 1}
    original = load_data("sst2").splits["train"].sample(1000, 3)
    untouched = sorted(set(range(1000)) - set(carrying))
    assert [train.texts[i] for i in untouched] == [original.texts[i] for i in untouched]
    assert [train.labels[i] for i in untouched] == [original.labels[i] for i in untouched]
    for i in carrying:                                        # the token removed gives the text back
        assert " ".join(w for w in train.texts[i].split() if w not in tokens) == " ".join(original.texts[i].split())
    dev = planted.bundle.splits["dev"]
    assert sum(bool(_has(t, tokens)) for t in dev.texts) == round(0.2 * len(dev.texts))
    assert planted.bundle.splits["test"].texts == load_data("sst2").splits["test"].texts   # test kept as it was


def test_every_planted_test_text_carries_one_token_where_it_says_with_its_control(planted):
    t = planted.test
    assert len(t.texts) == len(t.controls) == len(t.positions) == len(t.token_labels) == len(t.gold) == 60
    for text, control, pos, c in zip(t.texts, t.controls, t.positions, t.token_labels):
        words = text.split()
        assert words[pos] == planted.tokens[c]
        assert words[:pos] + words[pos + 1:] == control.split()
    assert set(t.token_labels) == {0, 1}


def test_planting_is_deterministic_with_a_seed():
    a = S.make_planted("sst2", seed=5, train_limit=300, test_limit=20)
    b = S.make_planted("sst2", seed=5, train_limit=300, test_limit=20)
    c = S.make_planted("sst2", seed=6, train_limit=300, test_limit=20)
    assert a.bundle.splits["train"].texts == b.bundle.splits["train"].texts
    assert a.bundle.splits["train"].labels == b.bundle.splits["train"].labels
    assert (a.test.texts, a.test.positions) == (b.test.texts, b.test.positions)
    assert a.bundle.splits["train"].texts != c.bundle.splits["train"].texts


def test_one_token_stands_for_the_class_named():
    p = S.make_planted("sst2", tokens="synt", label="positive", share=0.1, train_limit=400, test_limit=10)
    train = p.bundle.splits["train"]
    planted_rows = [i for i, t in enumerate(train.texts) if "synt" in t.split()]
    assert len(planted_rows) == 40 and all(train.labels[i] == 1 for i in planted_rows)
    assert p.tokens == {1: "synt"} and p.token == "synt" and set(p.test.token_labels) == {1}


@pytest.mark.parametrize("share", [0, 1, 1.5, -0.2, float("nan"), True])
def test_a_share_outside_0_1_is_refused(share):
    with pytest.raises(ValueError, match="share"):
        S.check_share(share)


@pytest.mark.parametrize("tokens, label, words", [
    ("Zeroa", None, "lower-case"), ("ab", None, "3-32"), ("zeroa,zeroa", None, "differ"),
    ("a1b,c2d,e3f", None, "one per class"), ("zeroa", "neutral", "unknown class"), ("zeroa,onea", 1, "one token"),
])
def test_bad_tokens_are_refused(tokens, label, words):
    with pytest.raises(ValueError, match=words):
        S.parse_tokens(tokens, ["negative", "positive"], label)


def test_a_token_the_data_has_is_refused():
    with pytest.raises(ValueError, match="occurs in sst2"):
        S.make_planted("sst2", tokens="film", train_limit=50, test_limit=5)


def test_ranks_share_ties_and_nan_counts_last():
    assert S.token_rank([0.1, 0.9, 0.3], 1) == 1.0
    assert S.token_rank([0.1, 0.9, 0.3], 0) == 3.0
    assert S.token_rank([0.5, 0.5, 0.1], 0) == 1.5           # tied for first: not first
    assert S.token_rank([float("nan"), 0.2, 0.1], 0) == 3.0
    assert S.find_token(["a", "zeroa", "b", "zeroa"], "zeroa", 1) == 3
    assert S.find_token(["a", "b"], "zeroa") is None


# ---------------------------------------------------------------- a model whose answer is known


class TokenDecides(TextClassifier):
    """logit_1 - logit_0 = sum of one weight per word: +6 for `onea`, -6 for `zeroa`, every other word a small
    random weight (|w| < 0.3): whatever else a text says, the planted word decides the label."""

    def __init__(self, vocab, seed: int = 0):
        V = len(vocab)
        super().__init__(BaseConfig(vocab_size=V, num_labels=2, embed_dim=1, embedding_mode="rand"))
        self.embed = WordEmbedding(V, 1, "rand")
        g = torch.Generator().manual_seed(seed)
        w = (torch.rand(V, 1, generator=g) - 0.5) * 0.6
        w[vocab.pad_id] = 0.0
        w[vocab.stoi["onea"]] = 6.0
        w[vocab.stoi["zeroa"]] = -6.0
        with torch.no_grad():
            self.embed.tables[0].weight.copy_(w)

    def map_specs(self):
        return [MapSpec("word_logit", ("token",), "feature_map", "each word's weight")]

    def _forward(self, ids, mask, probe):
        s = probe("word_logit", rezero(self.embed(ids), mask)[..., 0] * mask)     # (B, L)
        half = s.sum(1) / 2
        return torch.stack([-half, half], 1), None


@pytest.fixture(scope="module")
def known(planted):
    from textcls.inference import Predictor
    t = planted.test
    tok = Tokenizer.build(t.texts + t.controls, TokenizerConfig())
    model = TokenDecides(tok.vocab).eval()
    return Predictor(model, tok, ["negative", "positive"])


def test_perturbation_methods_rank_the_deciding_token_first_and_random_sits_at_chance(planted, known):
    rep = S.evaluate_planted(known, planted, ["leave_one_out", "occlusion", "integrated_gradients", "random"])
    s = rep.summary
    assert s["accuracy_with_token"] == 1.0 and s["learned"] is True and s["n"] == s["n_planted"] == 60
    assert s["n_flipped"] > 0 and rep.notes == []
    by = {r["method"]: r for r in rep.rows}
    for m in ("leave_one_out", "occlusion", "integrated_gradients"):
        assert by[m]["shortcut_top1"] == 1.0 and by[m]["shortcut_mean_rank"] == 1.0 and by[m]["n"] == 60
        assert by[m]["shortcut_top1_flipped"] == 1.0
    r = by["random"]
    assert abs(r["shortcut_top1"] - s["chance_top1"]) < 0.1
    assert abs(r["shortcut_mean_rank"] - s["chance_mean_rank"]) < 0.25 * s["chance_mean_rank"]


def test_the_default_methods_are_those_that_apply_and_a_model_that_ignores_the_token_is_said(planted, known):
    from textcls.interpret.methods import methods_for
    rep = S.evaluate_planted(known, planted.test, ["grad_x_input", "random"])
    assert [r["method"] for r in rep.rows] == ["grad_x_input", "random"]
    assert rep.rows[0]["shortcut_top1"] == 1.0                    # weight x gradient: 6c for the token, < 0.3c else
    with torch.no_grad():                                         # the token's weight gone: it decides nothing
        emb = known.model.embed.tables[0].weight
        keep = emb.clone()
        emb[known.tokenizer.vocab.stoi["onea"]] = 0.0
        emb[known.tokenizer.vocab.stoi["zeroa"]] = 0.0
    try:
        rep = S.evaluate_planted(known, planted, ["random"])
    finally:
        with torch.no_grad():
            emb.copy_(keep)
    assert rep.summary["learned"] is False and "did not learn the shortcut" in rep.notes[0]
    assert set(methods_for(known.model, reference=True)) >= {"leave_one_out", "random"}


def test_results_round_trip_and_table(tmp_path):
    rows = [dict(checkpoint="/tmp/x", model=m, method=meth, shortcut_top1=t, shortcut_mean_rank=r, n=10, share=0.2,
                 token="zeroa,onea", accuracy_with_token=1.0, accuracy_without_token=0.8, learned=True,
                 mean_words=20.0, chance_top1=0.05, bad=float("nan"))
            for m in ("kim_cnn", "act") for meth, t, r in (("leave_one_out", 1.0, 1.0), ("random", 0.05, 10.5))]
    path = S.append_results(tmp_path / "r" / "x.jsonl", rows[:2])
    S.append_results(path, rows[2:])
    back = S.load_results(path)
    assert len(back) == 4 and back[0]["bad"] is None and back[3]["model"] == "act"
    table = S.results_table(back)
    assert table.splitlines()[0] == "| method | kim_cnn | act |"
    assert "| leave_one_out | 1.000 (1.00) | 1.000 (1.00) |" in table and "| *learned* | yes | yes |" in table
    assert table.splitlines()[3].startswith("| random |")           # the registry's order: random last
    (tmp_path / "bad.jsonl").write_text('{"a": 1}\n[1]\n')
    with pytest.raises(ValueError, match="line 2"):
        S.load_results(tmp_path / "bad.jsonl")


# ---------------------------------------------------------------- the command line


@pytest.mark.parametrize("args, words", [
    (["--model", "kim_cnn", "--share", "1.2"], "share"),
    (["--model", "kim_cnn", "--share", "0"], "share"),
    (["--model", "kim_cnn", "--limit", "-3"], "--limit"),
    (["--model", "kim_cnn", "--test-limit", "0"], "--test-limit"),
    (["--model", "kim_cnn", "--epochs", "-1"], "--epochs"),
    (["--model", "kim_cnn", "--epochs", "0.5"], "whole number"),
    (["--model", "no_such_model"], "unknown model"),
    (["--model", "kim_cnn", "--token", "Not A Word"], "--token"),
    (["--model", "kim_cnn", "--methods", "nonsense"], "unknown method"),
    (["--model", "kim_cnn", "--evaluate-only"], "--checkpoint"),
    (["--checkpoint", "/no/such/folder"], "no such folder"),
    ([], "one of the arguments --model --checkpoint is required"),
])
def test_bad_options_exit_2_in_one_line_before_anything_loads(args, words, capsys, monkeypatch):
    import textcls.interpret.shortcuts as mod
    monkeypatch.setattr(mod, "make_planted", lambda *a, **k: pytest.fail("data loaded before the options were "
                                                                         "checked"))
    with pytest.raises(SystemExit) as e:                       # argparse's own errors exit 2 by SystemExit
        code = main(["shortcuts", *args])
        raise SystemExit(code)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err


def test_the_command_trains_evaluates_and_writes_strict_json_rows(tmp_path, capsys):
    out, results = tmp_path / "ckpt", tmp_path / "rows.jsonl"
    common = ["--data", "sst2", "--limit", "600", "--test-limit", "20", "--methods", "loo,random", "--seed", "1",
              "--results", str(results), "--json", "--quiet"]
    assert main(["shortcuts", "--model", "kim_cnn", "--epochs", "2", "--out", str(out), *common]) == 0
    lines = capsys.readouterr().out.splitlines()

    def strict(x):
        return json.loads(x, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    objs = [strict(x) for x in lines]
    assert [o["kind"] for o in objs] == ["method", "method", "summary"]
    rows = objs[:2]
    for r in rows:
        assert set(S.ROW_KEYS) <= set(r)
        assert r["model"] == "kim_cnn" and r["share"] == 0.2 and r["token"] == "zeroa,onea"
        assert r["checkpoint"] == str(out) and r["train_rows"] == 600 and r["train_planted"] == 120
        assert 0 <= r["shortcut_top1"] <= 1 and 1 <= r["shortcut_mean_rank"] and r["n"] <= r["n_planted"] == 20
        assert isinstance(r["learned"], bool) and 0 <= r["accuracy_with_token"] <= 1
    assert [r["method"] for r in rows] == ["leave_one_out", "random"]
    assert (out / "config.json").is_file()
    saved = S.load_results(results)
    assert [r["method"] for r in saved] == ["leave_one_out", "random"] and "kind" not in saved[0]
    # the same planted test texts again, from the saved checkpoint: the same numbers
    assert main(["shortcuts", "--checkpoint", str(out), "--evaluate-only", *common]) == 0
    again = [strict(x) for x in capsys.readouterr().out.splitlines()][:2]
    for a, b in zip(rows, again):
        for k in ("accuracy_with_token", "accuracy_without_token", "n", "shortcut_mean_rank"):
            assert a[k] == pytest.approx(b[k]), k
        assert b["trained"] is False and b["epochs"] is None
    assert len(S.load_results(results)) == 4
    assert not any(math.isnan(v) for r in saved for v in r.values() if isinstance(v, float))
    assert np.isfinite(rows[0]["chance_top1"])
