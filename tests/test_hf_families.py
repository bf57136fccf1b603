"""Every common Hugging Face family with a sequence-classification head opens word by word (issue 44): a tiny random
model of each (2 layers, hidden 32, `hf_toys.FAMILIES`) with a tokenizer trained here, saved with save_pretrained,
then loaded, predicted with maps, checked against transformers' own eager attention, explained, fine-tuned two steps,
saved and reloaded. Offline and deterministic."""
from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("transformers")

from hf_toys import FAMILIES, family_folder  # noqa: E402

import textcls  # noqa: E402

TEXTS = ["This movie wasn't acting unbelievable, really good!", "bad", "", "the plot is dull and the acting awful ."]
DECODERS = {"gpt2", "qwen2", "llama", "mistral", "gemma", "gemma2", "phi", "modernbert-decoder"}
POOLING = {f: "last" if f in DECODERS else "mean" if f == "modernbert" else "first" for f in FAMILIES}
ATTENTION = {f: "hooks" if f in ("deberta-v2", "convbert") else "none" if f == "fnet" else "interface"
             for f in FAMILIES}


@pytest.fixture(scope="module", params=list(FAMILIES))
def fam(request, tmp_path_factory):
    folder = family_folder(tmp_path_factory.mktemp("fam"), request.param)
    return request.param, folder, textcls.load_checkpoint(folder)


def _pooled_name(family: str) -> str:
    return "cls_attention" if POOLING[family] == "first" else "pooled_attention"


def test_the_family_is_read_from_the_model_and_its_tokenizer(fam):
    family, _, p = fam
    f = p.model.family
    assert (f.pooling, f.causal, f.attention) == (POOLING[family], family in DECODERS, ATTENTION[family])
    assert f.pooled_map == _pooled_name(family)
    if family in ("gpt2", "qwen2", "phi", "modernbert-decoder"):
        assert f.specials == 0                      # the text's pieces only, as their tokenizers lay them out
    if family in ("llama", "mistral", "gemma", "gemma2"):
        assert f.names == ("<s>",)                  # a beginning-of-text piece, nothing after


def test_words_are_clean(fam):
    family, _, p = fam
    (pred,) = p.predict([TEXTS[0]])
    assert pred.tokens[:2] == ["This", "movie"] and "unbelievable" in " ".join(pred.tokens)
    for w in pred.tokens:
        assert w == w.strip() and w and not re.search(r"##|Ġ|▁", w), (family, pred.tokens)


def test_same_probabilities_as_the_plain_model_and_padding_changes_nothing(fam):
    """The wrapper gives a text the probabilities transformers gives it on the tokenizer's own pieces; in a batch
    (right-padded), with maps or without, each text keeps them (a decoder's head reads each row's last real piece)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    family, folder, p = fam
    hf = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    tok = AutoTokenizer.from_pretrained(folder)
    alone = [np.array(list(p.predict(t)[0].probabilities.values())) for t in TEXTS]
    for t, got in zip(TEXTS, alone):
        if t:
            with torch.no_grad():
                ref = torch.softmax(hf(**tok(t, return_tensors="pt")).logits, -1)[0].numpy()
            np.testing.assert_allclose(got, ref, atol=1e-5)
    assert np.ptp([a[0] for a in alone]) > 1e-3            # the texts differ: the comparison could fail
    for a, b in zip(alone, p.predict(TEXTS, return_maps=True)):
        np.testing.assert_allclose(a, list(b.probabilities.values()), atol=1e-5)


def _eager_reference(folder, text):
    """transformers' own eager attention over the tokenizer's pieces: (layer, head, L, L)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    hf = AutoModelForSequenceClassification.from_pretrained(folder, attn_implementation="eager").eval()
    tok = AutoTokenizer.from_pretrained(folder)
    with torch.no_grad():
        out = hf(**tok(text, return_tensors="pt"), output_attentions=True)
    return torch.stack(out.attentions, 1)[0].numpy()


def test_piece_attention_is_the_familys_own(fam):
    """Recorded weights equal transformers' eager attention of the family (grouped-query attention expanded to the
    query heads, causal and sliding-window masks, DeBERTa's disentangled attention through output_attentions)."""
    family, folder, p = fam
    enc = p.encode([TEXTS[3]])
    if ATTENTION[family] == "none":
        with pytest.raises(ValueError, match="exposes no attention weights"):
            p.model.piece_attention(enc.token_ids, enc.mask)
        return
    got = p.model.piece_attention(enc.token_ids, enc.mask)[0].numpy()      # (layer, head, L, L)
    ref = _eager_reference(folder, TEXTS[3])
    assert got.shape == ref.shape and got.shape[1] == p.model.interventions().heads
    np.testing.assert_allclose(got, ref, atol=1e-5)
    if family == "mistral":                                                # sliding window of 3 pieces
        q, k = np.tril_indices(got.shape[-1], -3)
        assert np.abs(got[..., q, k]).max() == 0


def _word_rows(a, owner, rows):
    """The word rule applied here to piece attention a (head, L, L): the mean of the given piece rows, summed over
    each word's piece columns, specials left out, renormalised."""
    owner = np.asarray(owner)
    cols = np.stack([(owner == w) for w in range(owner.max() + 1)], 1).astype(float)    # (L, W)
    row = a[:, rows].mean(1) @ cols                                                      # (head, W)
    return row / row.sum(-1, keepdims=True)


def test_maps_rows_sum_to_one_and_the_pooled_row_is_what_the_head_reads(fam):
    family, _, p = fam
    if ATTENTION[family] == "none":
        pytest.skip("no attention weights (test_a_family_without_attention_says_so)")
    name = _pooled_name(family)
    for pred in p.predict(TEXTS, return_maps=True):
        n = len(pred.tokens)
        assert set(pred.maps) >= {"attention", name}
        assert (name == "cls_attention") == ("pooled_attention" not in pred.maps)
        if n:
            np.testing.assert_allclose(pred.maps["attention"].sum(-1), 1.0, atol=1e-5)
            np.testing.assert_allclose(pred.maps[name].sum(-1), 1.0, atol=1e-5)
    text = TEXTS[0]
    enc = p.encode([text])
    a = p.model.piece_attention(enc.token_ids, enc.mask)[0, -1].numpy()          # (head, L, L), last layer
    L = a.shape[-1]
    k = len(p.model.prefix)
    n_pieces = L - p.model.family.specials
    owner = [-1] * k + list(np.repeat(np.arange(enc.mask[0].sum()),
                                      [len(p.model.table.pieces(int(w))) for w in enc.token_ids[0]])) + \
        [-1] * len(p.model.suffix)
    assert len(owner) == L and n_pieces > 0
    rows = {"first": [0], "last": [L - 1], "mean": list(range(L))}[POOLING[family]]
    want = _word_rows(a, owner, rows)
    got = p.predict(text, return_maps=True)[0].maps[name][-1]                     # (head, W)
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert np.abs(got).sum() > 0.5 * got.shape[0]                                  # never the all-zero map


def test_causal_attention_is_a_lower_triangle_and_described_as_causal(fam):
    family, _, p = fam
    if ATTENTION[family] == "none":
        pytest.skip("no attention weights")
    A = p.predict(TEXTS[0], return_maps=True)[0].maps["attention"]               # (layer, head, W, W)
    upper = np.triu(np.ones(A.shape[-2:], bool), 1)
    spec = {s.name: s for s in p.model.map_specs()}["attention"]
    if family in DECODERS:
        assert np.abs(A[..., upper]).max() < 1e-6 and "causal" in spec.description
        assert "last real piece" in {s.name: s for s in p.model.map_specs()}["pooled_attention"].description
    else:
        assert A[..., upper].max() > 1e-3 and "causal" not in spec.description


def test_attributions_and_faithfulness_are_per_word(fam):
    family, _, p = fam
    from textcls.interpret import attribute_texts, evaluate_slice
    n = len(p.predict(TEXTS[0])[0].tokens)
    for method in ("integrated_gradients", "occlusion"):
        (a,) = attribute_texts(p, [TEXTS[0]], method)
        assert a.scores.shape == (n,) and np.isfinite(a.scores).all()
    methods = ("leave_one_out", "random") + (("attention",) if ATTENTION[family] != "none" else ())
    frame = evaluate_slice(p, [TEXTS[0], TEXTS[3]], methods, attention_tests=False).frame()
    assert set(methods) <= set(frame["method"]) and np.isfinite(frame["aopc_comprehensiveness"]).all()


def test_edits_act_where_the_family_computes_attention_through_the_interface(fam):
    """Head ablation (and uniform attention) act inside the model where textcls computes or hooks the weights
    (DeBERTa: its probability dropout); a family without attention offers none and says why in one line."""
    family, _, p = fam
    from textcls.interpret import AblateHead, UniformAttention, as_source, intervene
    (inst,) = as_source(p).instances([TEXTS[0]])
    if ATTENTION[family] == "none":
        assert p.model.interventions().heads == 0 and "\n" not in p.model.attention_note
        return
    res = intervene(p.model, inst, AblateHead(0, layer=0))
    assert np.abs(res.probs_before - res.probs_after).max() > 0
    assert np.allclose(np.asarray(res.maps_after["attention"])[0, 0], 0)
    res = intervene(p.model, inst, UniformAttention())
    assert np.abs(res.probs_before - res.probs_after).max() > 0


def test_a_family_read_through_output_attentions_refuses_edits_in_one_line(tmp_path, monkeypatch):
    """Where no probability dropout can be hooked, the weights come from output_attentions and an edit is refused
    with one line (never silently ignored)."""
    from textcls.models.hf import model as M
    monkeypatch.setattr(M, "hook_attention_probs", lambda hf: 0)
    p = textcls.load_checkpoint(family_folder(tmp_path, "deberta-v2"))
    assert p.model.family.attention == "output" and p.model.interventions().heads == 0
    (pred,) = p.predict([TEXTS[0]], return_maps=True)
    np.testing.assert_allclose(pred.maps["cls_attention"].sum(-1), 1.0, atol=1e-5)
    enc = p.encode([TEXTS[0]])
    with pytest.raises(ValueError, match="cannot be edited") as e:
        p.model(enc.token_ids, enc.mask, edits={"attention": lambda w, **_: w})
    assert "\n" not in str(e.value)


def test_padding_that_the_family_does_not_mask_is_never_used(fam):
    """ConvBERT's convolutions read pad positions, FNet takes no mask: checked at load, their rows run unpadded
    (grouped by length); the others are batched padded."""
    family, _, p = fam
    assert p.model.masked == (family not in ("convbert", "fnet"))


def test_a_family_without_attention_says_so():
    """FNet mixes tokens with a Fourier transform: no attention maps, one line saying so, every other view works
    (checked by the tests above); it takes no attention mask, so its rows run unpadded."""
    from textcls.checkpoint import load_hf
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        model, tok, labels, _ = load_hf(family_folder(tmp, "fnet"))
    assert model.map_specs() == [] and not model.masked
    assert model.attention_note.startswith("FNetForSequenceClassification exposes no attention weights")


# one family per way the wrapper runs a model (a fine-tuning step costs seconds on a shared CPU): [CLS] pooling, a
# hooked attention, mean pooling, a decoder without pad token or specials, a decoder with <s> and grouped-query
# attention, unmasked padding (rows unpadded)
FINE_TUNED = ("bert", "deberta-v2", "modernbert", "gpt2", "llama", "convbert")


def test_fine_tune_two_steps_save_and_reload(fam, tmp_path):
    """A decoder fine-tunes as an encoder does (a pad token set where it has none, right padding); the saved
    folder reopens with the same probabilities and the same family."""
    family, folder, _ = fam
    if family not in FINE_TUNED:
        pytest.skip(f"fine-tuning runs the way one of {FINE_TUNED} does")
    from transformers import AutoTokenizer
    from textcls.train.hf import train_hf
    r = train_hf("sst2", f"hf:{folder}", epochs=1, max_steps=2, out=tmp_path / "ft", limit=16, seed=0,
                 train_overrides={"batch_size": 4}, evaluate_test=False)
    assert r["history"].steps == 2 and np.isfinite(r["history"].step_losses).all()
    again = textcls.load_checkpoint(tmp_path / "ft")
    assert again.model.family == r["model"].family
    before = textcls.Predictor(r["model"], r["tokenizer"], r["labels"]).predict(TEXTS)
    for a, b in zip(before, again.predict(TEXTS)):
        np.testing.assert_allclose(list(a.probabilities.values()), list(b.probabilities.values()), atol=1e-5)
    saved = AutoTokenizer.from_pretrained(tmp_path / "ft")
    assert saved.pad_token is not None and saved.padding_side == "right"


def test_clean_words_drop_the_leading_space_and_give_blank_pieces_to_the_next_word():
    from textcls.models.hf.text import _clean_words
    text = "the  acting"
    words, pieces = _clean_words(text, [[0, 3], [3, 4], [4, 11]], [[5], [9], [7, 8]])
    assert words == ["the", "acting"] and pieces == [[5], [9, 7, 8]]
    words, pieces = _clean_words("good ", [[0, 4], [4, 5]], [[1], [2]])
    assert words == ["good"] and pieces == [[1, 2]]


def test_a_family_that_cannot_run_on_embeddings_is_refused_in_one_line(tmp_path, monkeypatch):
    """Wrapping runs the model once on one word (where its attention comes from, whether padding is masked); a
    family that fails there (CANINE has no input embeddings, I-BERT's quantised embeddings return tuples) is a
    CheckpointError of one line naming the class, never a traceback."""
    from textcls.checkpoint import CheckpointError
    from textcls.models.hf import model as M
    folder = family_folder(tmp_path, "bert")

    def fail(self):
        raise NotImplementedError("`get_input_embeddings` not auto-handled\nsecond line")
    monkeypatch.setattr(M.HFClassifier, "_settle_attention", fail)
    with pytest.raises(CheckpointError, match="BertForSequenceClassification: textcls cannot run it word by word") \
            as e:
        textcls.load_checkpoint(folder)
    assert "\n" not in str(e.value)


def test_the_models_own_importance_reads_the_pooled_row(fam):
    """Compare's shading, the own-attention faithfulness and the verdicts read one map per model
    (textcls.interpret.importance): for every family with attention it is the row of what the head reads."""
    from textcls.interpret.importance import plan
    family, _, p = fam
    specs = {s.name: s for s in p.model.map_specs()}
    if ATTENTION[family] == "none":
        with pytest.raises(ValueError, match="exposes no attention"):
            plan(specs, model=family)
        return
    assert plan(specs, model=family) == ("pooled", f"'{_pooled_name(family)}', mean over heads, last layer")
