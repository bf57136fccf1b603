"""Data-set-level views (textcls.analysis.corpus_views) on hand-checked small cases: fixed weight maps, a toy attention
model whose weights are known in closed form, and a Kim CNN with hand-set one-hot filters."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
import torch

from textcls.analysis import corpus_views as cv
from textcls.analysis.corpus_cache import CorpusCache
from textcls.inference import Predictor
from textcls.models.base import BaseConfig, TextClassifier
from textcls.models.layers import WordEmbedding, masked_softmax
from textcls.models.kim_cnn import KimCNN, KimCNNConfig
from textcls.models.outputs import MapSpec
from textcls.models.registry import create_model
from textcls.data.text import PAD, UNK, Tokenizer, TokenizerConfig, Vocab

WORDS = [PAD, UNK, "good", "bad", "the", "movie", "very", "not", "a", "plot"]
ID = {w: i for i, w in enumerate(WORDS)}
LABELS = ["neg", "pos"]


def tokenizer(**kw) -> Tokenizer:
    return Tokenizer(TokenizerConfig(**kw), Vocab(WORDS))


# ---------------------------------------------------------------- fixed maps


def fixed() -> cv.CorpusWeights:
    tokens = [["good", "movie"], ["good", "fun", "movie", "!"], ["bad", "movie"], ["bad", "plot"]]
    weights = [np.array(w) for w in ([0.75, 0.25], [0.4, 0.3, 0.2, 0.1], [0.9, 0.1], [0.5, 0.5])]
    return cv.CorpusWeights(tokens, weights, gold=np.array([1, 1, 0, 0]), pred=np.array([1, 1, 0, 1]),
                            labels=LABELS, source="hand")


def words(df, label):
    return df[df["label"] == label]["word"].tolist()


def test_top_words_relative_mean_total():
    cw = fixed()
    t = cv.top_words(cw, k=3, min_count=1)
    # relative = weight x text length: good 1.5 and 1.6, fun 1.2, movie 0.5 / 0.8 / 0.2, bad 1.8 / 1.0, plot 1.0
    assert words(t, "pos") == ["good", "fun", "movie"]            # "!" is punctuation: skipped
    assert words(t, "neg") == ["bad", "plot", "movie"]
    row = t[(t["label"] == "pos") & (t["word"] == "good")].iloc[0]
    assert row["score"] == pytest.approx(1.55) and row["count"] == 2 and row["texts"] == 2
    assert row["mean_weight"] == pytest.approx(0.575) and row["total_weight"] == pytest.approx(1.15)
    assert t[(t["label"] == "neg") & (t["word"] == "movie")]["score"].item() == pytest.approx(0.2)
    assert t["rank"].tolist() == [1, 2, 3, 1, 2, 3]
    assert words(cv.top_words(cw, k=3, min_count=1, score="total"), "pos") == ["good", "movie", "fun"]
    assert words(cv.top_words(cw, k=3, min_count=1, score="mean"), "neg") == ["bad", "plot", "movie"]
    assert words(cv.top_words(cw, k=5, min_count=2), "pos") == ["good", "movie"]
    assert words(cv.top_words(cw, k=5, min_count=1, skip_punct=False), "pos")[-1] == "!"
    assert "fun" not in words(cv.top_words(cw, k=5, min_count=1, skip=["fun"]), "pos")


def test_top_words_by_prediction_and_errors():
    cw = fixed()
    t = cv.top_words(cw, by="pred", k=5, min_count=1)
    # text 3 ("bad plot", gold neg) is predicted pos: its words move to pos
    assert set(words(t, "pos")) == {"good", "fun", "movie", "bad", "plot"}
    assert words(t, "neg") == ["bad", "movie"]
    with pytest.raises(ValueError, match="by must be"):
        cv.top_words(cw, by="label")
    with pytest.raises(ValueError, match="score must be"):
        cv.top_words(cw, score="max")
    nogold = cv.CorpusWeights(cw.tokens, cw.weights, np.full(4, -1), cw.pred, LABELS)
    with pytest.raises(ValueError, match="no gold labels"):
        cv.top_words(nogold)


def test_word_weights_histogram_and_summary():
    cw = fixed()
    d = cv.word_weights(cw, "movie")
    assert set(d) == {"neg", "pos"}
    np.testing.assert_allclose(d["pos"], [0.25, 0.2])
    np.testing.assert_allclose(d["neg"], [0.1])
    np.testing.assert_allclose(cv.word_weights(cw, "movie", relative=True)["pos"], [0.5, 0.8])
    assert cv.word_weights(cw, "plot") == {"neg": pytest.approx([0.5])}
    assert cv.word_weights(cw, "absent") == {}

    h = cv.weight_histogram({"a": np.array([0.1, 0.2, 0.2, 0.9]), "b": np.array([0.5]), "c": np.array([])},
                            bins=4, value_range=(0.0, 1.0))
    assert set(h["label"]) == {"a", "b"}                            # empty label left out
    a = h[h["label"] == "a"]
    assert a["count"].tolist() == [3, 0, 0, 1]
    np.testing.assert_allclose(a["density"], [3.0, 0, 0, 1.0])      # count / (n * width) = 3 / (4 * 0.25)
    assert h[h["label"] == "b"]["count"].tolist() == [0, 0, 1, 0]
    for _, part in h.groupby("label"):                              # each curve integrates to 1
        assert (part["density"] * (part["right"] - part["left"])).sum() == pytest.approx(1.0)
    auto = cv.weight_histogram({"x": np.array([0.3, 0.3])}, bins=2)  # one value: a range around it
    assert auto["count"].sum() == 2
    s = cv.weight_summary(d)
    assert s.set_index("label").loc["pos", "mean"] == pytest.approx(0.225)
    assert cv.word_counts(cw).to_dict() == {"movie": 3, "good": 2, "bad": 2, "fun": 1, "plot": 1}
    # mean relative weight over all texts: good (1.5 + 1.6) / 2 = 1.55 > bad (1.8 + 1.0) / 2 = 1.4 > movie 0.5
    assert cv.salient_words(cw, k=3, min_count=2) == ["good", "bad", "movie"]
    assert cv.salient_words(cw, k=2, min_count=50) == ["good", "bad"]     # small corpus: fewer occurrences


# ---------------------------------------------------------------- a toy attention model


class ToyAttention(TextClassifier):
    """alpha = masked softmax(score), score = ln 3 for "good", ln 2 for "bad", 0 otherwise; so on "good movie"
    alpha = (3/4, 1/4). logit_pos = #good - #bad (through the embedding's second column)."""

    calls = 0                                             # forward calls, counted on the class (tests only)

    def __init__(self):
        V = len(WORDS)
        super().__init__(BaseConfig(vocab_size=V, num_labels=2, embed_dim=2, embedding_mode="rand"))
        self.embed = WordEmbedding(V, 2, "rand")
        w = torch.zeros(V, 2)
        w[ID["good"]] = torch.tensor([np.log(3.0), 1.0])
        w[ID["bad"]] = torch.tensor([np.log(2.0), -1.0])
        with torch.no_grad():
            self.embed.tables[0].weight.copy_(w)

    def map_specs(self):
        return [MapSpec("alpha", ("token",), "attention", "softmax of the score column")]

    def _forward(self, ids, mask, probe):
        type(self).calls += 1
        e = self.embed(ids) * mask.unsqueeze(-1)                                # (B, L, 2)
        alpha = probe("alpha", masked_softmax(e[..., 0], mask), mask=mask)      # (B, L)
        logit = e[..., 1].sum(1)
        return torch.stack([torch.zeros_like(logit), logit], 1), None


TEXTS = ["good movie", "the plot", "a very bad movie , not good", "bad", "good good the movie"]
GOLD = ["pos", "neg", "neg", "neg", "pos"]


def toy_predictor(path=None) -> Predictor:
    return Predictor(ToyAttention().eval(), tokenizer(), LABELS, name="toy", path=path)


def expected_weights(tokens):
    s = np.array([3.0 if t == "good" else 2.0 if t == "bad" else 1.0 for t in tokens])
    return s / s.sum()


def test_token_weights_match_the_closed_form_in_the_callers_order():
    seen = []
    cw = cv.token_weights(toy_predictor(), TEXTS, GOLD, batch_size=2, progress=lambda d, n: seen.append((d, n)))
    assert len(cw) == 5 and cw.labels == LABELS and "alpha" in cw.source
    assert cw.tokens[2] == ["a", "very", "bad", "movie", ",", "not", "good"]
    for toks, w in zip(cw.tokens, cw.weights):
        np.testing.assert_allclose(w, expected_weights(toks), rtol=1e-6)
    np.testing.assert_allclose(cw.weights[0], [0.75, 0.25], rtol=1e-6)
    assert cw.gold.tolist() == [1, 0, 0, 0, 1]
    assert cw.pred.tolist() == [1, 0, 0, 0, 1]        # #good - #bad > 0 -> pos; "the plot": tie -> neg (argmax 0)
    assert seen[0] == (0, 5) and seen[-1] == (5, 5) and len(seen) == 4   # 3 batches of <= 2
    # the LAMA-T4 table on it. neg texts: "a very bad movie , not good" (weights 1,1,2,1,1,1,3 / 10) and "bad":
    # good 0.3 x 7 = 2.1; bad (0.2 x 7 + 1.0 x 1) / 2 = 1.2. pos: "good movie" -> good 0.75 x 2 = 1.5;
    # "good good the movie" (weights 3,3,1,1 / 8) -> good 0.375 x 4 = 1.5 twice: mean 1.5.
    t = cv.top_words(cw, k=2, min_count=1)
    assert words(t, "neg")[:2] == ["good", "bad"] and words(t, "pos")[0] == "good"
    np.testing.assert_allclose(t[t["label"] == "neg"]["score"], [2.1, 1.2], rtol=1e-6)
    assert t[t["label"] == "pos"]["score"].iloc[0] == pytest.approx(1.5)


def test_token_weights_gold_by_index_and_bad_gold():
    cw = cv.token_weights(toy_predictor(), TEXTS[:2], [1, 0])
    assert cw.gold.tolist() == [1, 0]
    assert cv.token_weights(toy_predictor(), TEXTS[:2], ["pos", "other"]).gold.tolist() == [1, -1]
    with pytest.raises(ValueError, match="2 texts but 1 gold"):
        cv.token_weights(toy_predictor(), TEXTS[:2], ["pos"])
    with pytest.raises(ValueError, match="out of range"):
        cv.token_weights(toy_predictor(), TEXTS[:2], [0, 5])


def test_disk_cache_hits_and_invalidates(tmp_path):
    ck = tmp_path / "ckpt"
    ck.mkdir()
    (ck / "config.json").write_text("{}")
    (ck / "model.safetensors").write_bytes(b"weights")
    cache = CorpusCache(tmp_path / "cache")
    ToyAttention.calls = 0
    assert cv.token_weights(toy_predictor(ck), TEXTS, GOLD, cache=cache, cached_only=True) is None
    assert ToyAttention.calls == 0
    a = cv.token_weights(toy_predictor(ck), TEXTS, GOLD, cache=cache)
    n = ToyAttention.calls
    assert n > 0 and len(list((tmp_path / "cache").glob("*.json"))) == 1
    done = []
    b = cv.token_weights(toy_predictor(ck), TEXTS, GOLD, cache=cache, progress=lambda d, t: done.append(d))
    assert ToyAttention.calls == n and done == [5]                   # read back, no model call
    assert b.tokens == a.tokens and b.labels == a.labels and b.source == a.source
    assert all(np.allclose(x, y, atol=1e-7) for x, y in zip(a.weights, b.weights))
    assert (b.gold == a.gold).all() and (b.pred == a.pred).all()
    cv.token_weights(toy_predictor(ck), TEXTS[:3], GOLD[:3], cache=cache)   # other texts: computed
    assert ToyAttention.calls > n
    n = ToyAttention.calls
    st = os.stat(ck / "model.safetensors")
    os.utime(ck / "model.safetensors", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # re-saved checkpoint
    cv.token_weights(toy_predictor(ck), TEXTS, GOLD, cache=cache)
    assert ToyAttention.calls > n
    # a damaged entry is recomputed, not an error
    for f in (tmp_path / "cache").glob("*.npz"):
        f.write_bytes(b"garbage")
    n = ToyAttention.calls
    assert len(cv.token_weights(toy_predictor(ck), TEXTS, GOLD, cache=cache)) == 5
    assert ToyAttention.calls > n
    # no checkpoint folder -> never cached
    cv.token_weights(toy_predictor(None), TEXTS, GOLD, cache=CorpusCache(tmp_path / "c2"))
    assert not (tmp_path / "c2").exists()


@pytest.mark.parametrize("name", ["lama", "transformer", "act", "hcan"])
def test_token_weights_of_real_models_sum_to_one_and_match_single_predictions(name):
    torch.manual_seed(0)
    hier = name == "hcan"
    model = create_model(name, vocab_size=len(WORDS), num_labels=2, preset="small").eval()
    p = Predictor(model, tokenizer(hierarchical=hier), LABELS)
    ok, what = cv.supports_token_weights(model)
    assert ok, what
    texts = TEXTS + ["good . bad movie ! the plot"]
    cw = cv.token_weights(p, texts, batch_size=3)
    for t, toks, w in zip(texts, cw.tokens, cw.weights):
        assert len(w) == len(toks) and w.sum() == pytest.approx(1.0) and (w >= 0).all()
    if name == "lama":                                   # LAMA: the mean over heads of A, text by text
        for t, w in zip(texts, cw.weights):
            A = p.predict([t], return_maps=True)[0].maps["attention"]
            np.testing.assert_allclose(w, A.mean(0) / A.mean(0).sum(), rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------- filters and their n-grams


def hand_cnn() -> Predictor:
    """Kim CNN on one-hot embeddings, windows of 2, two filters:
    f1 = "very" at the first position + "good" at the second; f2 = "not" first (1) or second (0.5)."""
    V = len(WORDS)
    cfg = KimCNNConfig(vocab_size=V, num_labels=2, embed_dim=V, windows=(2,), n_filters=2, embedding_mode="static")
    m = KimCNN(cfg, embeddings=np.eye(V, dtype=np.float32))
    with torch.no_grad():
        w = torch.zeros(2, V, 2)
        w[0, ID["very"], 0] = 1.0
        w[0, ID["good"], 1] = 1.0
        w[1, ID["not"], 0] = 1.0
        w[1, ID["not"], 1] = 0.5
        m.convs[0].weight.copy_(w)
        m.convs[0].bias.zero_()
    return Predictor(m.eval(), tokenizer(), LABELS)


CNN_TEXTS = ["very good movie", "a very good plot", "not very bad", "the good", "bad not"]


def test_filter_ngrams_of_a_hand_set_cnn():
    p = hand_cnn()
    banks = cv.filter_banks(p.model)
    assert banks == [cv.FilterBank("conv_h2", "argmax_h2", 2)]
    seen = []
    fn = cv.filter_ngrams(p, CNN_TEXTS, top=5, batch_size=2, progress=lambda d, n: seen.append(d))
    assert seen[-1] == 5 and fn.n_texts == 5
    t = fn.table
    f1 = t[t["filter"] == 1]
    # very good: 2 (texts 0 and 1); very bad: 1 (text 2); the good: 1 (text 3); ties keep text order
    assert f1["ngram"].tolist() == ["very good", "very bad", "the good"]
    assert f1["activation"].tolist() == pytest.approx([2.0, 1.0, 1.0])
    assert f1["hits"].tolist() == [2, 1, 1] and f1["text"].tolist() == [0, 2, 3]
    assert f1["position"].tolist() == [0, 1, 0] and f1["rank"].tolist() == [1, 2, 3]
    f2 = t[t["filter"] == 2]                              # texts where f2 never fires (max 0) are skipped
    assert f2["ngram"].tolist() == ["not very", "bad not"]
    assert f2["activation"].tolist() == pytest.approx([1.0, 0.5])
    assert (t["layer"] == 0).all() and (t["head"] == 0).all() and (t["bank"] == "conv_h2").all()
    top1 = cv.filter_ngrams(p, CNN_TEXTS, top=1).table
    assert top1["ngram"].tolist() == ["very good", "not very"]
    s = fn.summary(per_filter=2)
    assert s["top_ngrams"].tolist() == ["very good | very bad", "not very | bad not"]
    assert s["max_activation"].tolist() == pytest.approx([2.0, 1.0])


def test_filter_ngrams_cache_round_trip(tmp_path):
    ck = tmp_path / "k"
    ck.mkdir()
    (ck / "model.safetensors").write_bytes(b"w")
    p = hand_cnn()
    p.path = ck
    cache = CorpusCache(tmp_path / "cache")
    assert cv.filter_ngrams(p, CNN_TEXTS, cache=cache, cached_only=True) is None
    a = cv.filter_ngrams(p, CNN_TEXTS, cache=cache)
    b = cv.filter_ngrams(p, CNN_TEXTS, cache=cache, cached_only=True)
    pd.testing.assert_frame_equal(a.table.reset_index(drop=True), b.table.reset_index(drop=True),
                                  check_dtype=False)


def test_filter_ngrams_of_act_and_agcnn_agree_with_their_maps():
    torch.manual_seed(0)
    act = Predictor(create_model("act", vocab_size=len(WORDS), num_labels=2, preset="small").eval(), tokenizer(),
                    LABELS)
    (bank,) = cv.filter_banks(act.model)
    assert bank.layered and bank.value_map == "feature_map"
    text = "a very good movie , not the bad plot"
    t = cv.filter_ngrams(act, [text], top=1).table
    r = act.predict([text], return_maps=True)[0]
    M, arg = r.maps["feature_map"], r.maps["argmax"].astype(int)           # (N, h, m, L), (N, h, m)
    toks = r.tokens
    n = bank.width
    for row in t.itertuples():
        l, h, f = row.layer - 1, row.head - 1, row.filter - 1
        j = arg[l, h, f]
        assert row.activation == pytest.approx(float(M[l, h, f, j]), rel=1e-5, abs=1e-6)
        assert row.ngram == " ".join(toks[j:j + n])
    assert len(t) == int((M.max(-1) != 0).sum())                         # one row per filter that fired
    torch.manual_seed(0)
    ag = Predictor(create_model("agcnn", vocab_size=len(WORDS), num_labels=2, preset="small").eval(), tokenizer(),
                   LABELS)
    banks = cv.filter_banks(ag.model)
    assert {b.value_map for b in banks} == {f"gated_h{h}_k{k}" for h in (1, 2, 3) for k in (1, 3, 5)}
    t = cv.filter_ngrams(ag, CNN_TEXTS, top=2).table
    assert all(len(row.ngram.split()) <= int(row.bank.split("_h")[1].split("_")[0]) for row in t.itertuples())
    with pytest.raises(ValueError, match="no convolution filters"):
        cv.filter_ngrams(toy_predictor(), CNN_TEXTS)
