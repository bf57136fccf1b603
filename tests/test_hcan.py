"""HCAN / CAN specifics beyond the contract tests: sentence splitting, exact attention maths recomputed from the
exposed maps, one-sentence and empty-sentence documents, interventions, input errors, the paper config."""
import math

import pytest
import torch
import torch.nn.functional as F

import textcls
from textcls.models.hcan import CAN, HCAN, HCANConfig
from textcls.data.text import split_sentences, to_hierarchical

VOCAB, LABELS = 50, 3


def build(name="hcan", **kw):
    torch.manual_seed(0)
    return textcls.create_model(name, vocab_size=VOCAB, num_labels=LABELS, preset="small", **kw).eval()


def random_docs(shape, seed=1):
    """Documents given as lists of sentence lengths -> lists of per-sentence id lists."""
    g = torch.Generator().manual_seed(seed)
    return [[torch.randint(2, VOCAB, (n,), generator=g).tolist() for n in doc] for doc in shape]


DOCS = random_docs([[4, 2, 5], [3, 0, 1], [6]])  # doc 1 has an empty sentence in the middle


def capture(module, store, key):
    """Forward hook storing a module's output under store[key]."""
    return module.register_forward_hook(lambda m, i, o: store.__setitem__(key, o))


def reference_softmax(scores, mask):
    """Independent masked softmax: -inf at pads, all-pad rows -> 0."""
    p = scores.masked_fill(~mask, float("-inf")).softmax(-1)
    return torch.nan_to_num(p, nan=0.0) * mask


# ---------------------------------------------------------------- sentence splitting

@pytest.mark.parametrize("tokens, expected", [
    (["a", "b", ".", "c", "!", "d", "?", "e", "f"], [["a", "b", "."], ["c", "!"], ["d", "?"], ["e", "f"]]),
    (["a", "b", "."], [["a", "b", "."]]),
    (["a", "b"], [["a", "b"]]),
    ([], []),
    (["."], [["."]]),
    (["wow", "!", "!"], [["wow", "!"], ["!"]]),
    (["e.g.", "this", "..."], [["e.g.", "this", "..."]]),   # only the exact tokens . ! ? end a sentence
])
def test_split_sentences(tokens, expected):
    assert split_sentences(tokens) == expected


def test_split_sentences_truncates_and_validates():
    toks = "a b c . d e ! f".split()
    assert split_sentences(toks, max_sentences=2) == [["a", "b", "c", "."], ["d", "e", "!"]]
    assert split_sentences(toks, max_words=2) == [["a", "b"], ["d", "e"], ["f"]]
    assert split_sentences(toks, max_sentences=1, max_words=1) == [["a"]]
    with pytest.raises(TypeError, match="list of tokens"):
        split_sentences("a b .")
    with pytest.raises(ValueError, match="max_words"):
        split_sentences(toks, max_words=0)


def test_to_hierarchical():
    ids, mask = to_hierarchical([[[5, 6, 7], [8]], [], [[9]]])
    assert ids.shape == mask.shape == (3, 2, 3) and ids.dtype == torch.long and mask.dtype == torch.bool
    assert ids[0].tolist() == [[5, 6, 7], [8, 0, 0]]
    assert mask.sum((1, 2)).tolist() == [4, 0, 1]
    ids, mask = to_hierarchical([[[5, 6, 7], [8]]], max_sentences=1, max_words=2)
    assert ids.tolist() == [[[5, 6]]] and mask.all()
    ids, mask = to_hierarchical([])
    assert ids.shape == (0, 1, 1)


# ---------------------------------------------------------------- exact maths from the exposed maps

def test_self_attention_maps_are_masked_softmax_of_conv_features():
    model = build()
    ids, mask = to_hierarchical(DOCS)
    got = {}
    hooks = [capture(model.word_level.branch_a.qkv, got, "a"), capture(model.word_level.branch_b.qkv, got, "b")]
    out = model(ids, mask, return_maps=True)
    for h in hooks:
        h.remove()
    B, S, W = ids.shape
    sel = mask.any(-1).reshape(-1).nonzero().squeeze(1)
    m = mask.reshape(B * S, W)[sel]                                    # (N, W): here W is already the real max
    heads, d = model.config.n_heads, model.config.d_model
    for branch in "ab":
        q, k, _ = got[branch].transpose(1, 2).split(d, -1)             # (N, W, d)
        q = F.elu(q).view(len(sel), W, heads, -1).transpose(1, 2)      # (N, h, W, dh)
        k = F.elu(k).view(len(sel), W, heads, -1).transpose(1, 2)
        want = reference_softmax(q @ k.transpose(-1, -2) / math.sqrt(d // heads), m[:, None, None, :])
        want = want * m[:, None, :, None]                               # pad query rows are zero
        full = out.maps[f"A_{branch}"].reshape(B * S, heads, W, W)
        torch.testing.assert_close(full[sel], want)
        assert full[1 * S + 1].abs().sum() == 0                         # the empty sentence has no attention


@pytest.mark.parametrize("variant", [None, "normal_target"])
def test_beta_is_masked_softmax_over_words_per_head(variant):
    """Default: U[0, 1) targets, one learned scale (init 1); normal_target: N(0, 1/d), 1/sqrt(d_h)."""
    model = build(variant=variant)
    if variant is None:
        with torch.no_grad():
            model.word_level.pool.scale.fill_(0.7)                      # a learned value, so a wrong scale shows
    ids, mask = to_hierarchical(DOCS)
    got = {}
    hook = capture(model.word_level.pool.key, got, "k")
    out = model(ids, mask, return_maps=True)
    hook.remove()
    B, S, W = ids.shape
    heads, d = model.config.n_heads, model.config.d_model
    sel = mask.any(-1).reshape(-1).nonzero().squeeze(1)
    m = mask.reshape(B * S, W)[sel]
    k = F.elu(got["k"].transpose(1, 2)).view(len(sel), W, heads, -1)   # (N, W, h, dh)
    target = model.word_level.pool.target.view(heads, -1)
    scale = 0.7 if variant is None else 1 / math.sqrt(d // heads)
    scores = torch.einsum("nwhe,he->nhw", k, target) * scale
    want = torch.zeros(B * S, heads, W)
    want[sel] = reference_softmax(scores, m[:, None, :])
    torch.testing.assert_close(out.maps["beta"], want.view(B, S, heads, W))
    sums = out.maps["beta"].sum(-1)                                     # (B, S, h)
    torch.testing.assert_close(sums, mask.any(-1)[..., None].float().expand_as(sums))


def test_target_init_and_scale_follow_the_config():
    d = build().config.d_model
    new, old = build().word_level.pool, build(variant="normal_target").word_level.pool
    assert (new.target >= 0).all() and (new.target < 1).all()           # U[0, 1)
    assert new.scale is not None and new.scale.item() == 1.0                       # Keras use_scale=True
    assert build(variant="scaled_target").word_level.pool.scale.item() == pytest.approx(1 / math.sqrt(d))
    assert old.scale is None and (old.target < 0).any()                 # N(0, 1/d): both signs
    assert "word_level.pool.scale" in dict(build().named_parameters())               # trained with the rest
    assert "word_level.pool.scale" not in dict(build(variant="normal_target").named_parameters())


def test_fixed_scale_is_not_learned_and_scales_the_scores():
    model = build(target_scale="fixed", target_scale_value=3.0)
    pool = model.word_level.pool
    assert pool.scale is None and pool.score_scale() == 3.0
    assert "word_level.pool.scale" not in dict(model.named_parameters())
    with pytest.raises(ValueError, match="target_scale_value"):
        build(target_scale="fixed", target_scale_value=0.0)


def test_a_stored_config_without_the_new_fields_loads_the_old_target():
    """Checkpoints written before target_init / target_scale existed rebuild the model they were trained as."""
    from textcls.checkpoint import config_from_dict
    from textcls.models.hcan import HCANConfig
    cfg = config_from_dict(HCANConfig, {"vocab_size": VOCAB, "num_labels": LABELS})
    assert (cfg.target_init, cfg.target_scale) == ("normal", "head")
    assert config_from_dict(HCANConfig, {"target_scale": "keras"}).target_scale == "keras"


def test_sentence_and_document_vectors_are_attention_weighted_sums_of_Z():
    model = build()
    ids, mask = to_hierarchical(DOCS)
    got = {}
    hooks = [capture(model.word_level.norm, got, "z_words"), capture(model.word_level.pool, got, "pool"),
             capture(model.sent_level.norm, got, "z_sents")]
    out = model(ids, mask, return_maps=True)
    for h in hooks:
        h.remove()
    B, S, W = ids.shape
    heads = model.config.n_heads
    nonempty = mask.any(-1)
    sel = nonempty.reshape(-1).nonzero().squeeze(1)
    # word level: sentence vector = concat_h sum_w beta_hw Z_w,h (Z re-zeroed at pads, eval: no dropout)
    z = got["z_words"] * mask.reshape(B * S, W)[sel][..., None]                  # (N, W, d)
    beta = out.maps["beta"].reshape(B * S, heads, W)[sel]                        # (N, h, W)
    want = torch.einsum("nhw,nwhe->nhe", beta, z.view(len(sel), W, heads, -1)).reshape(len(sel), -1)
    torch.testing.assert_close(got["pool"][0], want)
    # sentence level: document vector = sum_s gamma_hs Z_s over the non-empty sentences, in their order
    zs = got["z_sents"]                                                          # (B, S_packed, d)
    for b in range(B):
        real = nonempty[b].nonzero().squeeze(1)                                  # original sentence indices
        gamma = out.maps["gamma"][b][:, real]                                    # (h, n_b)
        zb = zs[b, :len(real)].view(len(real), heads, -1)                        # (n_b, h, dh)
        doc = torch.einsum("hs,she->he", gamma, zb).reshape(-1)
        torch.testing.assert_close(out.features[b], doc)
        assert out.maps["gamma"][b][:, ~nonempty[b]].abs().sum() == 0
    torch.testing.assert_close(out.logits, model.fc(out.features))


def test_level_inputs_are_vectors_plus_positions_and_Z_is_the_normalised_product():
    model = build()
    ids, mask = to_hierarchical(DOCS)
    got = {}
    hooks = [model.word_level.branch_a.qkv.register_forward_hook(lambda m, i, o: got.__setitem__("x_w", i[0])),
             model.sent_level.branch_a.qkv.register_forward_hook(lambda m, i, o: got.__setitem__("x_s", i[0])),
             capture(model.word_level.pool, got, "pool"), capture(model.sent_level.branch_a, got, "a"),
             capture(model.sent_level.branch_b, got, "b"),
             model.sent_level.norm.register_forward_hook(lambda m, i, o: got.__setitem__("norm_in", i[0]))]
    model(ids, mask)
    for h in hooks:
        h.remove()
    B, S, W = ids.shape
    nonempty = mask.any(-1)
    sel = nonempty.reshape(-1).nonzero().squeeze(1)
    m = mask.reshape(B * S, W)[sel]
    words = model.embed(ids).reshape(B * S, W, -1)[sel] + model.word_pos[:W]    # positions on real words only
    torch.testing.assert_close(got["x_w"].transpose(1, 2), words * m[..., None])
    vecs = got["pool"][0]                                                       # (N, d) in document order
    counts = nonempty.sum(1).tolist()
    want = torch.zeros(B, max(counts), vecs.shape[1])
    for b, chunk in enumerate(vecs.split(counts)):                             # packed, then sentence positions
        want[b, :len(chunk)] = chunk + model.sent_pos[:len(chunk)]
    torch.testing.assert_close(got["x_s"].transpose(1, 2), want)
    torch.testing.assert_close(got["norm_in"], got["a"][0] * got["b"][0])       # Z = LayerNorm(H_a * H_b)


def test_one_sentence_documents():
    model = build()
    ids, mask = to_hierarchical(random_docs([[5], [2], [1]]))
    assert ids.shape[1] == 1
    out = model(ids, mask, return_maps=True)
    assert torch.isfinite(out.logits).all()
    torch.testing.assert_close(out.maps["gamma"], torch.ones(3, model.config.n_heads, 1))
    torch.testing.assert_close(out.maps["sent_A_a"], torch.ones(3, model.config.n_heads, 1, 1))


@pytest.mark.parametrize("where", [0, 1, 3])
def test_an_empty_sentence_anywhere_changes_nothing(where):
    model = build()
    docs = random_docs([[4, 2, 5], [3, 3]])
    ref = model(*to_hierarchical(docs), return_maps=True)
    with_empty = [d[:where] + [[]] + d[where:] for d in docs]
    ids, mask = to_hierarchical(with_empty)
    out = model(ids, mask, return_maps=True)
    torch.testing.assert_close(out.logits, ref.logits)
    keep = [s for s in range(ids.shape[1]) if s != where]
    torch.testing.assert_close(out.maps["beta"][:, keep], ref.maps["beta"])
    torch.testing.assert_close(out.maps["A_b"][:, keep], ref.maps["A_b"])
    torch.testing.assert_close(out.maps["gamma"][..., keep], ref.maps["gamma"])
    torch.testing.assert_close(out.maps["sent_A_a"][..., keep, :][..., keep], ref.maps["sent_A_a"])
    assert out.maps["gamma"][..., where].abs().sum() == 0
    assert out.maps["beta"][:, where].abs().sum() == 0


def test_word_level_runs_only_on_non_empty_sentences_and_real_words():
    model = build()
    ids, mask = to_hierarchical(DOCS)
    ids, mask = F.pad(ids, (0, 5, 0, 3)), F.pad(mask, (0, 5, 0, 3))     # lots of extra padding
    seen = []
    hook = model.word_level.branch_a.qkv.register_forward_hook(lambda m, i, o: seen.append(i[0].shape))
    model(ids, mask)
    hook.remove()
    assert seen == [torch.Size([int(mask.any(-1).sum()), model.embed.out_dim, 6])]  # 6 sentences, 6 words


def test_maps_do_not_change_the_logits_and_dropout_only_in_training():
    model = build()
    ids, mask = to_hierarchical(DOCS)
    torch.testing.assert_close(model(ids, mask).logits, model(ids, mask, return_maps=True).logits)
    model.train()
    torch.manual_seed(1)
    a = model(ids, mask).logits
    b = model(ids, mask).logits
    assert not torch.allclose(a, b)


@pytest.mark.parametrize("kernel", [3, 5])
def test_packed_convolution_equals_conv1d_on_real_positions(kernel):
    from textcls.models import hcan as module
    conv = torch.nn.Conv1d(40, 24, kernel, padding=kernel // 2)
    mask = torch.arange(9)[None] < torch.tensor([1, 7, 2, 3, 9, 4])[:, None]   # 48% real: the packed path
    x = torch.randn(6, 9, 40)
    want = conv((x * mask[..., None]).transpose(1, 2)).transpose(1, 2)
    torch.testing.assert_close(module._conv(x, mask, conv)[mask], want[mask])


def test_packed_and_plain_paths_give_the_same_model(monkeypatch):
    from textcls.models import hcan as module
    model = build(embed_dim=32, d_model=32, n_heads=4)                     # wide enough to pack
    ids, mask = to_hierarchical(random_docs([[9, 1, 2], [1, 8], [3]]))
    packed = model(ids, mask, return_maps=True)
    monkeypatch.setattr(module, "PACK_BELOW", 0.0)                              # never pack
    plain = model(ids, mask, return_maps=True)
    torch.testing.assert_close(packed.logits, plain.logits)
    for name in packed.maps:
        torch.testing.assert_close(packed.maps[name], plain.maps[name])


# ---------------------------------------------------------------- interventions

def test_edits_receive_full_shaped_maps_and_change_the_model():
    model = build()
    ids, mask = to_hierarchical(DOCS)
    ref = model(ids, mask)
    shapes = {}

    def identity(t, layer=None, mask=None, name=""):
        shapes[name] = (tuple(t.shape), tuple(mask.shape))
        return t

    names = [s.name for s in model.map_specs()]
    edits = {n: (lambda t, layer=None, mask=None, n=n: identity(t, layer, mask, n)) for n in names}
    torch.testing.assert_close(model(ids, mask, edits=edits).logits, ref.logits)
    B, S, W = ids.shape
    h = model.config.n_heads
    assert shapes["A_a"] == ((B, S, h, W, W), (B, S, W))
    assert shapes["beta"] == ((B, S, h, W), (B, S, W))
    assert shapes["sent_A_b"] == ((B, h, S, S), (B, S))
    assert shapes["gamma"] == ((B, h, S), (B, S))

    def uniform_words(t, layer=None, mask=None):
        m = mask[:, :, None, :].float().expand_as(t)
        return m / m.sum(-1, keepdim=True).clamp(min=1)

    out = model(ids, mask, return_maps=True, edits={"beta": uniform_words})
    assert not torch.allclose(out.logits, ref.logits)
    torch.testing.assert_close(out.maps["beta"], uniform_words(out.maps["beta"], mask=mask))

    def first_sentence(t, layer=None, mask=None):
        one = torch.zeros_like(t)
        one[..., 0] = 1.0
        return one

    out = model(ids, mask, return_maps=True, edits={"gamma": first_sentence})
    assert (out.maps["gamma"][..., 0] == 1).all()
    assert not torch.allclose(out.logits, ref.logits)


# ---------------------------------------------------------------- errors, configs, variants

def test_bad_inputs_give_clear_errors():
    hcan, can = build("hcan", max_words=6, max_sentences=3), build("can", max_positions=4)
    with pytest.raises(ValueError, match=r"\(B, S, W\)"):
        hcan(torch.ones(2, 5, dtype=torch.long))
    with pytest.raises(ValueError, match=r"\(B, L\)"):
        can(torch.ones(2, 1, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="mask shape"):
        hcan(torch.ones(2, 2, 3, dtype=torch.long), torch.ones(2, 2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="max_words=6"):
        hcan(*to_hierarchical(random_docs([[7]])))
    with pytest.raises(ValueError, match="max_sentences=3"):
        hcan(*to_hierarchical(random_docs([[1, 1, 1, 1]])))
    with pytest.raises(ValueError, match="max_positions=4"):
        can(torch.ones(1, 5, dtype=torch.long))
    # padding beyond the tables is fine: only real positions count
    ids, mask = to_hierarchical(random_docs([[6, 2, 1]]))
    out = hcan(F.pad(ids, (0, 4, 0, 2)), F.pad(mask, (0, 4, 0, 2)))
    torch.testing.assert_close(out.logits, hcan(ids, mask).logits)


@pytest.mark.parametrize("bad, match", [(dict(n_heads=3), "multiple of n_heads"), (dict(pooling="mean"), "pooling"),
                                        (dict(self_attentions=3), "self_attentions"),
                                        (dict(kernel_size=2), "odd")])
def test_bad_configs_are_refused(bad, match):
    with pytest.raises(ValueError, match=match):
        build(**bad)


@pytest.mark.parametrize("variant, names", [
    (None, {"A_a", "A_b", "beta", "sent_A_a", "sent_A_b", "gamma"}),
    ("one_self_attention", {"A_a", "beta", "sent_A_a", "gamma"}),
    ("maxpool", {"A_a", "A_b", "sent_A_a", "sent_A_b"}),
    ("one_self_attention_maxpool", {"A_a", "sent_A_a"}),
    ("eq5_value_conv", {"A_a", "A_b", "beta", "sent_A_a", "sent_A_b", "gamma"}),
])
def test_variants_list_only_their_maps(variant, names):
    model = build(variant=variant)
    assert {s.name for s in model.map_specs()} == names
    flat = textcls.create_model("can", vocab_size=VOCAB, num_labels=LABELS, preset="small", variant=variant)
    assert {s.name for s in flat.map_specs()} == {n for n in names if not n.startswith("sent_") and n != "gamma"}


def test_maxpool_and_eq5_variants_compute_what_they_say():
    model = build(variant="maxpool")
    ids, mask = to_hierarchical(DOCS)
    got = {}
    hook = capture(model.sent_level.norm, got, "z")
    out = model(ids, mask)
    hook.remove()
    counts = mask.any(-1).sum(1)
    for b in range(ids.shape[0]):                                      # doc vector = max over real sentences
        torch.testing.assert_close(out.features[b], got["z"][b, :counts[b]].max(0).values)
    eq5 = build(variant="eq5_value_conv")
    assert eq5.word_level.pool.value is not None and build().word_level.pool.value is None


def test_paper_config_and_parameter_count():
    cfg = textcls.make_config("hcan")
    assert isinstance(cfg, HCANConfig)
    assert (cfg.d_model, cfg.n_heads, cfg.dropout, cfg.kernel_size, cfg.embed_dim) == (512, 8, 0.1, 3, 512)
    assert (cfg.self_attentions, cfg.pooling, cfg.target_value_conv) == (2, "target", False)
    model = textcls.create_model("hcan", vocab_size=VOCAB, num_labels=5)
    d = 512
    conv = lambda i, o: i * o * 3 + o                                   # noqa: E731
    level = 2 * conv(d, 3 * d) + 2 * d + conv(d, d) + d + 1             # 2 branches, LayerNorm, target attention
    assert (cfg.target_init, cfg.target_scale) == ("uniform", "keras")     # + 1: the learned scale
    expected = 2 * level + (cfg.max_words + cfg.max_sentences) * d + d * 5 + 5
    assert model.num_parameters() == expected                           # ~11.1M without embeddings
    out = model.eval()(*to_hierarchical(random_docs([[3, 4], [2]])), return_maps=True)
    assert out.maps["A_a"].shape == (2, 2, 8, 4, 4)


# ---------------------------------------------------------------- CAN (flat)

def test_can_is_hcan_word_level_on_one_sentence():
    """CAN shares HCAN's blocks: with the same weights, its maps and text vector are HCAN's word level on S = 1."""
    hcan, can = build("hcan"), build("can")
    with torch.no_grad():
        can.embed.load_state_dict(hcan.embed.state_dict())
        can.level.load_state_dict(hcan.word_level.state_dict())
        can.pos[: hcan.config.max_words].copy_(hcan.word_pos)
    ids3, mask3 = to_hierarchical(random_docs([[6], [3], [1]]))
    got = {}
    hook = capture(hcan.word_level.pool, got, "vec")
    out3 = hcan(ids3, mask3, return_maps=True)
    hook.remove()
    out2 = can(ids3[:, 0], mask3[:, 0], return_maps=True)
    torch.testing.assert_close(out2.maps["beta"], out3.maps["beta"][:, 0])
    torch.testing.assert_close(out2.maps["A_a"], out3.maps["A_a"][:, 0])
    torch.testing.assert_close(out2.features, got["vec"][0])
    assert isinstance(can, CAN) and isinstance(hcan, HCAN)
    assert [s.axes for s in can.map_specs()] == [("head", "query_token", "key_token")] * 2 + [("head", "token")]
