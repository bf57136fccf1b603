"""The word-piece view of a Hugging Face checkpoint (textcls.models.hf.pieces, textcls.viz.pieces): the pieces are
those the encoder read (truncation included), their attention rows sum to one, and the word-level maps every
page shows are the documented aggregation of these weights. Tiny random BERT / DistilBERT, offline."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")

from hf_toys import tiny_folder  # noqa: E402

import textcls  # noqa: E402
from textcls.models.hf.pieces import (has_word_pieces, piece_attention_of, piece_window,  # noqa: E402
    shown_note)

TEXT = "the film was unbelievable , really unbelievable fun"     # "unbelievable" = un ##be ##liev ##able


@pytest.fixture(scope="module", params=["bert", "distilbert"])
def predictor(request, tmp_path_factory):
    return textcls.load_checkpoint(tiny_folder(tmp_path_factory.mktemp("hfp"), request.param))


def test_pieces_are_what_the_encoder_read_and_rows_sum_to_one(predictor):
    pa = piece_attention_of(predictor, TEXT)
    assert has_word_pieces(predictor)
    assert pa.pieces[0] == "[CLS]" and pa.pieces[-1] == "[SEP]" and pa.owner[0] == pa.owner[-1] == -1
    word = pa.words.index("unbelievable")
    assert [p for p, o in zip(pa.pieces, pa.owner) if o == word] == ["un", "##be", "##liev", "##able"]
    L = len(pa.pieces)
    cfg = predictor.model.config
    assert pa.attention.shape == (cfg.num_layers, cfg.num_heads, L, L)
    np.testing.assert_allclose(pa.attention.sum(-1), 1.0, atol=1e-5)            # rows sum to 1 over the pieces
    assert (pa.attention >= 0).all()
    assert pa.words == predictor.predict(TEXT)[0].tokens and not pa.truncated


def test_piece_strings_joined_back_give_the_words(predictor):
    pa = piece_attention_of(predictor, TEXT)
    hf = predictor.tokenizer.hf
    for w, (lo, hi) in enumerate(pa.spans()):
        assert "".join(p[2:] if p.startswith("##") else p for p in pa.pieces[lo:hi]) == pa.words[w].lower()
        assert hf.convert_tokens_to_string(pa.pieces[lo:hi]).strip() == pa.words[w].lower()
    assert sorted({o for o in pa.owner if o >= 0}) == list(range(len(pa.words)))


def test_the_word_maps_are_the_documented_aggregation_of_the_piece_attention(predictor):
    """attention[q, k] = mean over q's pieces of (sum over k's pieces), [CLS]/[SEP] columns left out, the row
    renormalised; cls_attention = the [CLS] row summed over each word's pieces, renormalised; special_share = the
    share (mean over q's pieces) on [CLS]/[SEP]. Every layer, head and word pair, on a text with a 4-piece word."""
    pa = piece_attention_of(predictor, TEXT)
    maps = predictor.predict(TEXT, return_maps=True)[0].maps
    A = pa.attention.astype(np.float64)                                         # (layer, head, L, L)
    owner = np.array(pa.owner)
    W = len(pa.words)
    real = owner >= 0
    want = np.zeros(A.shape[:2] + (W, W))
    share = np.zeros(A.shape[:2] + (W,))
    for q in range(W):
        rows = A[:, :, owner == q]                                              # (layer, head, |q|, L)
        total = rows[..., real].sum(-1).mean(-1)                                # (layer, head)
        share[..., q] = 1.0 - total
        for k in range(W):
            want[..., q, k] = rows[..., owner == k].sum(-1).mean(-1) / total
    cls = np.stack([A[:, :, 0, owner == k].sum(-1) for k in range(W)], -1)      # (layer, head, W)
    cls = cls / A[:, :, 0, real].sum(-1, keepdims=True)
    np.testing.assert_allclose(maps["attention"], want, atol=1e-5)
    np.testing.assert_allclose(maps["cls_attention"], cls, atol=1e-5)
    np.testing.assert_allclose(maps["special_share"], share, atol=1e-5)
    assert np.abs(share).max() > 1e-3                        # [CLS]/[SEP] took some weight: renormalising mattered


def test_a_long_text_shows_the_pieces_that_were_read_and_the_words_window(predictor):
    long = " ".join(["unbelievable film"] * 40)                                  # 200 pieces, 64 positions
    pa = piece_attention_of(predictor, long)
    limit = predictor.model.config.max_len
    assert pa.truncated and len(pa.pieces) <= limit and pa.max_len == limit
    assert pa.words == predictor.predict(long)[0].tokens                        # the words the prediction read
    np.testing.assert_allclose(pa.attention.sum(-1), 1.0, atol=1e-5)
    assert "cut to the model's" in shown_note(pa, None, 200)
    lo, size = piece_window(pa, (3, 4))                                         # words 4-7
    assert {pa.owner[i] for i in range(lo, lo + size)} == {3, 4, 5, 6}
    assert pa.owner[lo - 1] == 2 and pa.owner[lo + size] == 7
    assert piece_window(pa, (0, 2))[0] == 0                                     # [CLS] with the first word
    lo, size = piece_window(pa, (len(pa.words) - 2, 50))
    assert lo + size == len(pa.pieces)                                          # [SEP] with the last word
    assert piece_window(pa, None) is None
    lo, size = piece_window(pa, (3, 4))
    assert f"pieces {lo + 1}-{lo + size} of {len(pa.pieces)} (words 4-7)" in shown_note(pa, (lo, size), 200)
    assert f"pieces {len(pa.pieces) - 9}-{len(pa.pieces)} of" in shown_note(pa, (len(pa.pieces) - 3, 10), 200)
    assert "pieces 1-5 of" in shown_note(pa, None, 5)                          # the heatmap's own limit


def test_the_view_draws_the_pieces_on_its_axes(predictor):
    from textcls import viz
    pa = piece_attention_of(predictor, TEXT)
    figs = viz.piece_figures(pa.pieces, pa.attention, title="tiny", opts={"layer": 0, "head": 1})
    heat = figs[0]
    assert heat.key.startswith("pieces_") and "word pieces" in heat.fig.layout.title.text
    ticks = list(heat.fig.layout.xaxis.ticktext)
    assert ticks[0] == "[CLS]" and ticks[-1] == "[SEP]" and "##liev" in ticks
    np.testing.assert_allclose(heat.fig.data[0].z, pa.attention[0, 1])
    assert "pieces" in heat.caption and "words" not in heat.caption.split(".")[0]
    assert {c.name for c in viz.piece_controls(pa.pieces, pa.attention)} == {"layer", "head", "query"}
    with pytest.raises(ValueError):
        viz.piece_figures(pa.pieces[:-1], pa.attention, title="tiny")
