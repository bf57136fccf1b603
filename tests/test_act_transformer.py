"""ACT and Transformer: exact equation checks, center loss, paper parameter counts, local attention, char convs."""
import math

import pytest
import torch
import torch.nn.functional as F

import textcls
from textcls.models.act import ACT
from textcls.models.layers import CenterLoss, GlobalAttention, masked_softmax
from textcls.models.transformer import Transformer
from textcls.models.registry import make_config
from textcls.models.outputs import ClassifierOutput

VOCAB, LABELS = 50, 3


def batch(lengths=(9, 6, 2), seed=1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
    for b, n in enumerate(lengths):
        ids[b, :n] = torch.randint(2, VOCAB, (n,), generator=g)
    return ids, ids != 0


def small(name, **kw):
    torch.manual_seed(0)
    return textcls.create_model(name, vocab_size=VOCAB, num_labels=LABELS, preset="small", **kw).eval()


# ---------------------------------------------------------------- ACT


@pytest.mark.parametrize("padding", ["right", "center"])
def test_act_feature_map_is_the_convolution_and_local_output_is_filters_times_map(padding):
    model = small("act", conv_padding=padding)
    ids, mask = batch()
    out = model(ids, mask, return_maps=True)
    M, O = out.maps["feature_map"], out.maps["local_output"]          # (B, N, h, m, L), (B, N, h, L, n*dk)
    c = model.config
    dk, n = c.d_model // c.n_heads, c.kernel_size
    assert M.shape == (3, c.n_layers, c.n_heads, c.n_filters, ids.shape[1])
    assert O.shape == (3, c.n_layers, c.n_heads, ids.shape[1], n * dk)
    # eq. 2, independently through torch's conv1d on layer 0's Q_i, with the filters seen in Conv1d layout
    layer0 = model.layers[0]
    x = model.embed(ids)
    x = (model.proj(x) if model.proj is not None else x) * mask.unsqueeze(-1)
    q = layer0.wq(x) * mask.unsqueeze(-1)                             # (B, L, d)
    left = (n - 1) // 2 if padding == "center" else 0
    for head in range(c.n_heads):
        qi = q[..., head * dk:(head + 1) * dk].transpose(1, 2)          # (B, dk, L)
        conv = F.conv1d(F.pad(qi, (left, n - 1 - left)), layer0.conv_weight(head), layer0.filter_bias[head])
        want = F.gelu(conv) * mask.unsqueeze(1)                          # (B, m, L)
        torch.testing.assert_close(M[:, 0, head], want, atol=1e-5, rtol=1e-5)
    # eq. 3: O_i = F~_i M_i, with F~_i the very tensor of the filters (a view, not a copy)
    for i, layer in enumerate(model.layers):
        for head in range(c.n_heads):
            Ft = layer.filter_matrix(head)
            assert Ft.shape == (n * dk, c.n_filters)
            assert Ft._base is layer.filters and layer.conv_weight(head)._base is layer.filters
            want = torch.einsum("fm,bml->blf", Ft, M[:, i, head])         # (B, L, n*dk)
            torch.testing.assert_close(O[:, i, head], want, atol=1e-6, rtol=1e-5)
    # a change of the parameter shows through both views at once
    with torch.no_grad():
        model.layers[0].filters[1, 2, 3] = 7.5
    assert model.layers[0].filter_matrix(1)[2, 3] == 7.5
    assert model.layers[0].conv_weight(1)[3, 2 % dk, 2 // dk] == 7.5


@pytest.mark.parametrize("variant,padding", [(None, "right"), (None, "center"), ("no_attentive_conv", "right"),
                                             ("single_head", "right"), ("no_global_rep", "right")])
def test_act_fast_path_computes_the_same_function_as_the_literal_equations(variant, padding):
    """Without maps, ACT folds W^O F~ and runs one grouped conv; logits and gradients equal the literal path."""
    torch.manual_seed(0)
    m = textcls.create_model("act", vocab_size=50, num_labels=3, preset="small", variant=variant,
                             conv_padding=padding).eval()
    ids = torch.randint(2, 50, (4, 9))
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, 5:] = False
    mask[2, 2:] = False
    ids = ids.masked_fill(~mask, 0)
    fast = m(ids, mask)
    literal = m(ids, mask, return_maps=True)
    assert torch.allclose(fast.logits, literal.logits, atol=1e-6)
    g_fast = torch.autograd.grad(fast.logits.sum(), list(m.layers.parameters()), allow_unused=True)
    g_lit = torch.autograd.grad(literal.logits.sum(), list(m.layers.parameters()), allow_unused=True)
    for a, b in zip(g_fast, g_lit):
        assert (a is None) == (b is None) and (a is None or torch.allclose(a, b, atol=1e-6))


def test_act_argmax_picks_the_max_of_the_feature_map_and_pads_are_zero():
    model = small("act")
    ids, mask = batch()
    out = model(ids, mask, return_maps=True)
    M, idx = out.maps["feature_map"], out.maps["argmax"]              # (B, N, h, m, L), (B, N, h, m)
    assert (M * (~mask)[:, None, None, None, :]).abs().max() == 0     # zero at pads
    picked = M.gather(-1, idx.unsqueeze(-1)).squeeze(-1)
    real_max = M.masked_fill(~mask[:, None, None, None, :], -1e9).max(-1).values
    torch.testing.assert_close(picked, real_max)
    assert (idx < mask.sum(1)[:, None, None, None]).all()             # never a pad position


def test_global_attention_module_matches_eq6_by_hand():
    torch.manual_seed(3)
    ga = GlobalAttention(d_model=6, d_attn=5, d_pos=4, max_positions=10)
    o, g = torch.randn(2, 7, 6), torch.randn(2, 6)
    mask = torch.tensor([[1] * 7, [1] * 4 + [0] * 3]).bool()
    probe = textcls.models.base.Probe(record=True)
    r = ga(o, mask, g, probe)
    maps = probe.maps()
    p = ga.positions.weight[:7]                                        # (L, d_p)
    ctx = F.gelu(o @ ga.w_o.weight.T + ga.w_o.bias + p @ ga.w_p.weight.T) @ ga.context
    glob = (o * g[:, None]).sum(-1) / math.sqrt(6)
    m = mask.float()
    torch.testing.assert_close(maps["score_context"], ctx * m)
    torch.testing.assert_close(maps["score_global"], glob * m)
    s = (ctx + glob).masked_fill(~mask, float("-inf"))
    alpha = torch.softmax(s, -1)
    torch.testing.assert_close(maps["alpha"], alpha)
    torch.testing.assert_close(r, (alpha.unsqueeze(-1) * o).sum(1))
    with pytest.raises(ValueError, match="exceeds"):
        ga(torch.randn(1, 11, 6), torch.ones(1, 11, dtype=torch.bool), torch.randn(1, 6), probe)


@pytest.mark.parametrize("variant", [None, "no_global_rep", "no_position", "no_attentive_conv", "single_head"])
def test_act_alpha_is_masked_softmax_of_the_exposed_score_terms(variant):
    model = small("act", variant=variant)
    ids, mask = batch()
    maps = model(ids, mask, return_maps=True).maps
    scores = maps["score_context"] + maps.get("score_global", 0)
    torch.testing.assert_close(maps["alpha"], masked_softmax(scores, mask), atol=1e-6, rtol=1e-5)
    assert ("score_global" in maps) == (variant != "no_global_rep")
    assert ("global_rep" in maps) == (variant != "no_global_rep")
    assert hasattr(model.global_attention, "positions") == (variant != "no_position")


def test_act_ablation_switches_change_the_architecture():
    c = textcls.make_config("act", preset="small")
    full = small("act")
    plain = small("act", variant="no_attentive_conv")
    one = small("act", variant="single_head")
    dk = c.d_model // c.n_heads
    assert full.layers[0].wo.in_features == c.n_heads * c.kernel_size * dk
    assert plain.layers[0].wo.in_features == c.n_heads * c.n_filters
    assert one.layers[0].filters.shape == (1, c.kernel_size * c.d_model, c.n_filters)
    ids, mask = batch()
    o_plain = plain(ids, mask, return_maps=True).maps
    # conventional CNN: the local output is the feature map itself
    torch.testing.assert_close(o_plain["local_output"], o_plain["feature_map"].transpose(-1, -2))
    # "- position embed." removes exactly the P x d_p table and W_p
    nopos = small("act", variant="no_position")
    assert full.num_parameters() - nopos.num_parameters() == c.max_positions * c.d_pos + c.d_pos * c.d_attn


def test_center_loss_value_and_centre_update_rule():
    cl = CenterLoss(num_classes=3, dim=2, weight=0.001, rate=0.1)
    cl.centers.copy_(torch.tensor([[0.0, 0.0], [1.0, 1.0], [5.0, -5.0]]))
    x = torch.tensor([[1.0, 2.0], [3.0, 0.0], [2.0, 2.0]], requires_grad=True)
    y = torch.tensor([0, 0, 1])
    loss = cl(x, y, update=True)
    # 0.001 * 1/2 * mean(||x_i - c_yi||^2) with the centres before the update: (5 + 9 + 2) / 3 / 2
    assert loss.item() == pytest.approx(0.001 * 0.5 * 16 / 3)
    # c_j <- c_j - 0.1 * sum_{y_i=j} (c_j - x_i) / (1 + n_j); class 2 (no samples) stays
    want = torch.tensor([[0.0 - 0.1 * (-4.0) / 3, 0.0 - 0.1 * (-2.0) / 3],
                         [1.0 - 0.1 * (-1.0) / 2, 1.0 - 0.1 * (-1.0) / 2],
                         [5.0, -5.0]])
    torch.testing.assert_close(cl.centers, want)
    loss.backward()                                                    # gradient reaches the features only
    torch.testing.assert_close(x.grad, 0.001 * (x.detach() - torch.tensor([[0.0, 0], [0, 0], [1, 1]])) / 3)
    before = cl.centers.clone()
    cl(x.detach(), y, update=False)
    assert torch.equal(cl.centers, before)
    with pytest.raises(ValueError):
        cl(x.detach(), torch.tensor([0, 1, 3]), update=False)


def test_act_extra_loss_updates_centres_only_in_training():
    model = small("act")
    assert "center_loss.centers" in model.state_dict()
    assert all(p is not model.center_loss.centers for p in model.parameters())
    ids, mask = batch()
    y = torch.tensor([0, 1, 2])
    out = model(ids, mask)
    before = model.center_loss.centers.clone()
    want = 0.001 * 0.5 * ((out.features - before[y]) ** 2).sum(1).mean()
    loss = model.extra_loss(out, y)                                    # eval mode: no update
    torch.testing.assert_close(loss, want)
    assert torch.equal(model.center_loss.centers, before)
    model.train()
    out = model(ids, mask)
    model.extra_loss(out, y)
    z = out.features.detach()
    torch.testing.assert_close(model.center_loss.centers, before - 0.1 * (before - z) / 2)  # one sample each


def test_parameter_counts_at_the_act_paper_configuration():
    act = textcls.create_model("act", vocab_size=100, num_labels=5)     # Yelp F. (Table 5)
    base = textcls.create_model("transformer", vocab_size=100, num_labels=5, preset="act_baseline")
    n_act, n_base = act.num_parameters(), base.num_parameters()
    assert abs(n_act - 1.49e6) / 1.49e6 < 0.03, n_act
    assert abs(n_base - 3.38e6) / 3.38e6 < 0.03, n_base
    # embeddings are excluded, and only they
    assert act.num_parameters(include_embeddings=True) - n_act == 100 * 300
    cfg = make_config("transformer", preset="act_baseline")
    assert (cfg.n_layers, cfg.n_heads, cfg.d_model, cfg.d_ff, cfg.pooling, cfg.fc_dim) == (3, 6, 300, 1200,
                                                                                           "global", 100)
    assert isinstance(base.global_attention, GlobalAttention)
    a, b = act.global_attention, base.global_attention                 # the same global attention
    assert [p.shape for p in a.parameters()] == [p.shape for p in b.parameters()]


def test_act_bad_input_gets_clear_errors():
    model = small("act")
    with pytest.raises(ValueError, match="token ids"):
        model(torch.tensor([[1, VOCAB]]))
    with pytest.raises(ValueError, match="exceeds"):
        model(torch.full((1, 65), 3))
    with pytest.raises(ValueError, match="multiple"):
        textcls.create_model("act", preset="small", n_heads=5)
    with pytest.raises(ValueError, match="conv_mode"):
        textcls.create_model("act", preset="small", conv_mode="nope")


# ---------------------------------------------------------------- Transformer


@pytest.mark.parametrize("pooling", ["cls", "max", "global"])
def test_local_attention_equals_full_attention_when_window_covers_the_input(pooling):
    ids, mask = batch()
    L = ids.shape[1]
    full = small("transformer", pooling=pooling)
    ref = full(ids, mask, return_maps=True)
    for kw in (dict(local_window=L), dict(local_window=L + 5), dict(local_window=2 * L, local_shift=True)):
        local = small("transformer", pooling=pooling, **kw)
        local.load_state_dict(full.state_dict())
        for maps in (False, True):
            out = local(ids, mask, return_maps=maps)
            torch.testing.assert_close(out.logits, ref.logits, atol=1e-6, rtol=1e-5)
        for k, t in out.maps.items():
            torch.testing.assert_close(t.float(), ref.maps[k].float(), atol=1e-6, rtol=1e-5, msg=k)


def test_local_attention_is_block_diagonal_shifted_on_odd_layers_and_padding_free():
    model = small("transformer", local_window=3, local_shift=True, n_layers=3, pooling="cls")
    ids, mask = batch()
    L = ids.shape[1]
    out = model(ids, mask, return_maps=True)
    att = out.maps["attention"]                                        # (B, N, h, L, L)
    pos = torch.arange(L)
    for layer, offset in enumerate((0, 2, 0)):
        cid = (pos + offset) // 3
        outside = cid[:, None] != cid[None, :]
        assert att[:, layer][..., outside].abs().max() == 0, layer
        assert (att[0, layer][..., ~outside] > 0).all()                # unpadded example: every in-block pair
    # cls is a global token: its row covers every real token, and every token gives it weight
    assert (out.maps["cls_attention"][0] > 0).all() and (out.maps["attention_to_cls"][0] > 0).all()
    # the chunked fast path gives the same logits as the full block-diagonal path
    torch.testing.assert_close(model(ids, mask).logits, out.logits, atol=1e-6, rtol=1e-5)
    # more padding with garbage ids changes nothing
    big = F.pad(ids, (0, 5))
    big_mask = F.pad(mask, (0, 5))
    big = torch.where(big_mask, big, torch.randint(2, VOCAB, big.shape))
    out2 = model(big, big_mask, return_maps=True)
    torch.testing.assert_close(out2.logits, out.logits, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(out2.maps["attention"][..., :L, :L], att, atol=1e-6, rtol=1e-5)


def test_cls_maps_split_each_softmax_row_exactly():
    model = small("transformer")
    ids, mask = batch()
    maps = model(ids, mask, return_maps=True).maps
    L = ids.shape[1]
    assert maps["attention"].shape[-2:] == (L, L) and maps["cls_attention"].shape[-1] == L
    rows = maps["attention"].sum(-1) + maps["attention_to_cls"]          # (B, N, h, L)
    want = mask[:, None, None, :].float().expand_as(rows)                # 1 on real query rows, 0 on pads
    torch.testing.assert_close(rows, want)
    torch.testing.assert_close(maps["cls_attention"].sum(-1) + maps["cls_self"], torch.ones_like(maps["cls_self"]))
    assert maps["attention"][1][..., 6:, :].abs().max() == 0 and maps["attention"][1][..., :, 6:].abs().max() == 0


def test_attention_edits_take_effect_in_local_mode():
    model = small("transformer", local_window=3, pooling="mean")
    ids, mask = batch()
    ref = model(ids, mask).logits

    def identity(t, layer, mask):
        eye = torch.eye(t.shape[-1]).expand_as(t)
        return eye * mask[:, None, :, None] * mask[:, None, None, :]

    out = model(ids, mask, edits={"attention": identity}, return_maps=True)
    assert not torch.allclose(out.logits, ref)
    assert torch.equal(out.maps["attention"][0, 0, 0], torch.eye(ids.shape[1]))


def test_decoder_and_max_pooling_maps():
    ids, mask = batch()
    dec = small("transformer", pooling="decoder", decoder_layers=2)
    maps = dec(ids, mask, return_maps=True).maps
    assert maps["decoder_attention"].shape == (3, 2, 2, ids.shape[1])
    torch.testing.assert_close(maps["decoder_attention"].sum(-1), torch.ones(3, 2, 2))
    mx = small("transformer", pooling="max")
    idx = mx(ids, mask, return_maps=True).maps["max_argmax"]           # (B, d)
    assert idx.shape == (3, 16) and (idx < mask.sum(1, keepdim=True)).all()


def test_char_convolutions_are_all_registered_and_trained():
    model = small("transformer", init_convs=6).train()
    convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv1d)]
    assert len(convs) == 7
    params = {id(p) for p in model.parameters()}
    assert all(id(p) in params for conv in convs for p in conv.parameters())
    assert sum(k.startswith("convs.") for k in model.state_dict()) == 14
    d = model.config.d_model
    plain = small("transformer")
    assert model.num_parameters() - plain.num_parameters() == 7 * (d * d * 3 + d)
    ids, mask = batch()
    F.cross_entropy(model(ids, mask).logits, torch.tensor([0, 1, 2])).backward()
    assert all(conv.weight.grad is not None and conv.weight.grad.abs().sum() > 0 for conv in convs)


def test_transformer_presets_and_errors():
    paper = textcls.make_config("transformer")
    assert (paper.n_layers, paper.n_heads, paper.d_model, paper.d_ff) == (6, 8, 512, 2048)
    act = textcls.make_config("act")
    assert (act.d_model, act.n_heads, act.n_filters, act.kernel_size, act.n_layers, act.d_attn, act.d_pos,
            act.max_positions, act.fc_dim, act.dropout) == (300, 6, 100, 3, 3, 200, 60, 500, 100, 0.4)
    char = textcls.make_config("transformer", preset="char")
    assert (char.d_model, char.d_ff) == (128, 512)
    with pytest.raises(ValueError, match="pooling"):
        textcls.create_model("transformer", preset="small", pooling="nope")
    with pytest.raises(ValueError, match="local_shift"):
        textcls.create_model("transformer", preset="small", local_shift=True)
    with pytest.raises(ValueError, match="mask shape"):
        small("transformer")(torch.ones(2, 4, dtype=torch.long), torch.ones(2, 5, dtype=torch.bool))
    base = textcls.create_model("transformer", vocab_size=VOCAB, num_labels=LABELS, preset="act_baseline",
                                d_model=12, embed_dim=12, n_heads=2, d_ff=24, d_attn=8, d_pos=4).train()
    out = base(*batch())
    assert out.features.shape == (3, 100)
    assert base.extra_loss(out, torch.tensor([0, 1, 2])) is not None   # center loss, as ACT
    assert isinstance(base, Transformer) and not isinstance(base, ACT)
    assert isinstance(base(*batch()), ClassifierOutput)
