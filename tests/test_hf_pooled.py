"""The pooled-only last layer of BERT-like encoders (textcls.models.hf.pooled): a plain call computes the last layer
for [CLS] only, and gives the full layer's logits and input gradients; maps, edits, hooks and deep copies get the
full layer. Tiny random models of every family (tests/hf_toys.py), no network."""
from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from hf_toys import FAMILIES, family_folder  # noqa: E402

import textcls  # noqa: E402
from textcls.interpret.embedding_forward import EmbeddingForward  # noqa: E402
from textcls.models.hf import model as hf_model, pooled  # noqa: E402

BERT_LIKE = ("bert", "electra", "roberta", "xlm-roberta")       # the families whose last layer has the BERT parts
TEXTS = ["this movie was unbelievable , really good !", "the plot is dull", "a great story , the best film ever",
         "un be liev able"]


@pytest.fixture(scope="module", params=list(FAMILIES))
def family(request, tmp_path_factory):
    p = textcls.load_checkpoint(family_folder(tmp_path_factory.mktemp("pooled"), request.param))
    return request.param, p


def _batch(p):
    from textcls.interpret.sources import as_source
    insts = as_source(p, None).instances(TEXTS)
    L = max(i.ids.shape[0] for i in insts)
    ids = torch.stack([torch.nn.functional.pad(i.ids, (0, L - i.ids.shape[0])) for i in insts])   # (4, L) padded
    return ids, ids != 0


def _both(model, fn):
    """fn() with the pooled-only layer on, then off (the full layer)."""
    was = model.pooled_last
    try:
        model.pooled_last = was
        fast = fn()
        model.pooled_last = False
        full = fn()
    finally:
        model.pooled_last = was
    return fast, full


def test_which_families_take_it(family):
    name, p = family
    assert p.model.pooled_last == (name in BERT_LIKE)


def test_logits_and_gradients_equal_the_full_layer(family, monkeypatch):
    name, p = family
    m = p.model
    ids, mask = _batch(p)
    calls = []
    real = pooled.forward_first
    monkeypatch.setattr(hf_model, "forward_first", lambda *a, **k: calls.append(1) or real(*a, **k))

    def logits():
        with torch.no_grad():
            return m(ids, mask).logits                                       # (4, C)

    fast, full = _both(m, logits)
    assert torch.allclose(fast, full, atol=1e-5, rtol=1e-5)
    assert bool(calls) == (name in BERT_LIKE)          # the short path was really taken where it applies

    f = EmbeddingForward(m, output="logit")                                 # what every gradient method runs

    def grad():
        emb = f.embed(ids).requires_grad_(True)                              # (4, W, P * E)
        f(emb, ids, mask)[:, 0].sum().backward()
        return emb.grad

    g_fast, g_full = _both(m, grad)
    assert torch.allclose(g_fast, g_full, atol=1e-5, rtol=1e-4)


def test_padding_never_changes_logits_on_the_short_path(family):
    name, p = family
    m = p.model
    ids, mask = _batch(p)
    with torch.no_grad():
        batch = m(ids, mask).logits
        for r in range(ids.shape[0]):
            n = int(mask[r].sum())
            alone = m(ids[r:r + 1, :n], mask[r:r + 1, :n]).logits
            assert torch.allclose(batch[r], alone[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["bert"])
def test_hooks_maps_and_copies_get_the_full_layer(name, tmp_path, monkeypatch):
    p = textcls.load_checkpoint(family_folder(tmp_path, name))
    m = p.model
    ids, mask = _batch(p)
    last = m.hf.bert.encoder.layer[-1]
    calls = []
    real = pooled.forward_first
    monkeypatch.setattr(hf_model, "forward_first", lambda *a, **k: calls.append(1) or real(*a, **k))
    with torch.no_grad():
        m.pooled_last = False
        full_rows = last(*_layer_input(m, ids, mask))                         # (4, L, d) every row computed
        m.pooled_last = True
        seen = []
        h = last.register_forward_hook(lambda mod, a, o: seen.append(o))
        try:
            m(ids, mask)
        finally:
            h.remove()
        assert not calls                                                     # a hook reads the layer: full layer
        assert torch.allclose(seen[0], full_rows, atol=1e-5)
        m(ids, mask, return_maps=True)                                      # maps read every row
        assert not calls
        m(ids, mask)
        assert calls                                                         # no hook, no maps: the short path
    twin = copy.deepcopy(m, _memo(m))                                        # the randomisation check's copy
    with torch.no_grad():
        for w in twin.hf.bert.encoder.layer[-1].parameters():
            w.mul_(0.5)
        a = twin(ids, mask).logits
        twin.pooled_last = False
        b = twin(ids, mask).logits
    assert torch.allclose(a, b, atol=1e-5)                                  # the copy's forward runs the copy's weights
    assert not torch.allclose(a, m(ids, mask).logits.detach(), atol=1e-3)


def _layer_input(m, ids, mask):
    """The last layer's (hidden_states, attention_mask) for this batch, recorded with a pre-hook."""
    got = {}
    last = m.hf.bert.encoder.layer[-1]
    h = last.register_forward_pre_hook(lambda mod, a: got.setdefault("a", a))
    try:
        m(ids, mask)
    finally:
        h.remove()
    return got["a"][:2]


def _memo(m):
    from textcls.interpret.sanity import _shared_objects
    return _shared_objects(m)


LONG = "a great story , the best film ever and the acting was really very good but the plot was dull and boring"


def test_texts_of_mixed_length_are_packed_and_score_as_alone(family, monkeypatch):
    """One long text and short ones (erasure variants look like this): packed side by side when the family allows
    it, each text's logits those of the text alone, and its input gradients those of the full layer."""
    name, p = family
    m = p.model
    from textcls.interpret.sources import as_source
    insts = as_source(p, None).instances([LONG, "good", "the plot", "bad film", "fun", LONG[:40]])
    L = max(i.ids.shape[0] for i in insts)
    ids = torch.stack([torch.nn.functional.pad(i.ids, (0, L - i.ids.shape[0])) for i in insts])  # (6, L)
    mask = ids != 0
    packed = []
    real = pooled.pack
    monkeypatch.setattr(hf_model, "pack", lambda *a: packed.append(real(*a)) or packed[-1])
    with torch.no_grad():
        batch = m(ids, mask).logits                                          # (6, C)
        for r in range(ids.shape[0]):
            n = int(mask[r].sum())
            alone = m(ids[r:r + 1, :n], mask[r:r + 1, :n]).logits
            assert torch.allclose(batch[r], alone[0], atol=1e-5, rtol=1e-5)
    assert any(x is not None for x in packed) == (name in BERT_LIKE)
    f = EmbeddingForward(m, output="logit")

    def grad():
        emb = f.embed(ids).requires_grad_(True)
        f(emb, ids, mask)[:, 1].sum().backward()
        return emb.grad

    g_fast, g_full = _both(m, grad)
    assert torch.allclose(g_fast, g_full, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("sizes, packs", [([30, 3, 4, 5, 2, 7, 30, 1], True), ([12] * 5, False),
                                          ([100, 7], False), ([100, 2], True), ([5, 90, 90, 3, 3, 3, 60, 64], True)])
def test_pack_places_every_text_once_without_overlap(sizes, packs):
    """Equal lengths, or a short text that fits beside no other (two rows either way): not packed; a text of 2
    positions goes beside one of 100 (a row of 102)."""
    used = torch.tensor(sizes)
    got = pooled.pack(used)
    assert (got is not None) == packs
    if got is None:
        return
    P, T, row, start = got
    cells = set()
    for b, n in enumerate(sizes):
        assert 0 <= int(row[b]) < P and int(start[b]) + n <= T
        span = {(int(row[b]), int(start[b]) + j) for j in range(n)}
        assert not span & cells
        cells |= span
    assert T <= max(max(sizes) + pooled.PACK_SLACK, pooled.PACK_POSITIONS)
    assert P * T <= pooled.PACK_WHEN * len(sizes) * max(sizes)


def test_an_erasure_curve_fills_its_rows():
    """A text of L positions and its variants: without the top k words (L - m pieces) and with only them (m + 2,
    the specials): each pair fills a row of L + 2 exactly, so nothing is padded but the text's own row."""
    L = 20
    pieces = [2, 5, 8, 11]                                          # m: the top k words' pieces
    sizes = [L] + [L - m for m in pieces] + [m + 2 for m in pieces]
    P, T, row, start = pooled.pack(torch.tensor(sizes))
    assert (P, T) == (1 + len(pieces), L + 2)
    assert P * T - sum(sizes) == 2


def test_a_copy_made_before_a_word_is_met_scores_it_like_the_model(tmp_path):
    """A copy of the model (`sanity.weights_copy`: the randomisation check's) shares the word table, which is
    append-only: a copied table mapped the words met after the copy to [UNK] (median error 0.35 in probability)."""
    from textcls.interpret.probabilities import prob_fn
    from textcls.interpret.sanity import weights_copy
    from textcls.interpret.sources import as_source
    p = textcls.load_checkpoint(family_folder(tmp_path, "bert"))
    twin = weights_copy(p.model).eval()
    (inst,) = as_source(p).instances(["zebras quarrel about unbelievable giraffes"])      # words the table lacks
    ids, mask = inst.ids[None], inst.mask[None]
    assert torch.allclose(prob_fn(twin)(ids, mask), prob_fn(p.model)(ids, mask), atol=1e-6)


def test_small_attention_eager_equals_sdpa(family, monkeypatch):
    """A plain call over at most SMALL_ATTENTION keys runs its attention as eager products on the CPU (faster than
    sdpa there): logits and input gradients are sdpa's, in every family (decoders' causal masks included)."""
    name, p = family
    m = p.model
    ids, mask = _batch(p)
    assert ids.shape[1] + 4 <= hf_model.SMALL_ATTENTION               # these texts take the eager path
    sdpa_calls = []
    real = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention",
                        lambda *a, **k: sdpa_calls.append(1) or real(*a, **k))
    f = EmbeddingForward(m, output="logit")

    def run():
        sdpa_calls.clear()
        emb = f.embed(ids).requires_grad_(True)
        out = f(emb, ids, mask)                                          # (4, C)
        out[:, 0].sum().backward()
        return out.detach(), emb.grad, len(sdpa_calls)

    small = run()
    monkeypatch.setattr(hf_model, "SMALL_ATTENTION", 0)
    sdpa = run()
    assert torch.allclose(small[0], sdpa[0], atol=1e-5, rtol=1e-5)
    assert torch.allclose(small[1], sdpa[1], atol=1e-5, rtol=1e-4)
    if m.family.attention == "interface":
        assert small[2] == 0                                            # eager, really
        assert sdpa[2] > 0 or name == "gemma2"                          # then sdpa (Gemma 2's soft cap: eager)
