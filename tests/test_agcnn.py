"""AGCNN specifics: NLReLU, Theorem 1 padding, tied gate kernels, gating, classifier inputs, frozen channels."""
import copy
import math

import pytest
import torch
import torch.nn.functional as F

import textcls
from textcls.models.agcnn import AGCNNConfig, same_padding
from textcls.models.layers import nlrelu

VOCAB, LABELS = 50, 3
LENGTHS = (9, 5, 1)  # example 0 unpadded, example 2 shorter than every window > 1


def build(**kw):
    torch.manual_seed(0)
    return textcls.create_model("agcnn", vocab_size=VOCAB, num_labels=LABELS, preset="small", **kw).eval()


def batch(lengths=LENGTHS):
    g = torch.Generator().manual_seed(3)
    ids = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
    for b, n in enumerate(lengths):
        ids[b, :n] = torch.randint(2, VOCAB, (n,), generator=g)
    return ids, ids != 0


def n_windows(n, h):
    """Valid window starts of a sentence of n real tokens for window h (a short sentence keeps window 0)."""
    return max(n - h + 1, 1) if n > 0 else 0


def test_defaults_are_the_papers():
    c = textcls.make_config("agcnn")
    assert c.windows == (1, 2, 3, 4, 5) and c.n_filters == 100 and c.gate_windows == (1, 3, 5)
    assert c.n_gates == 1 and c.activation == "nlrelu" and c.dropout == 0.5
    model = textcls.create_model("agcnn", vocab_size=VOCAB, num_labels=LABELS)
    # 5 windows x 3 gate windows x 100 filters feed the classifier; C^h itself does not
    assert model.fc.in_features == 5 * 3 * 100


def test_nlrelu_is_log_of_one_plus_relu_exactly():
    xs = [-1e6, -3.5, -1e-7, 0.0, 1e-7, 0.3, 1.0, 2.5, 100.0, 1e6]
    got = nlrelu(torch.tensor(xs, dtype=torch.float64))
    want = torch.tensor([math.log1p(max(0.0, x)) for x in xs], dtype=torch.float64)
    assert torch.equal(got, want)  # bit for bit (log1p: the accurate form of ln(1 + x))
    naive = torch.tensor([math.log(1 + max(0.0, x)) for x in xs], dtype=torch.float64)
    torch.testing.assert_close(got, naive, rtol=1e-8, atol=0)
    # and the model's C^h is exactly NLReLU of the pre-activation on valid windows, 0 past them
    model = build()
    ids, mask = batch()
    maps = model(ids, mask, return_maps=True).maps
    for h in model.config.windows:
        pre, post = maps[f"conv_pre_h{h}"], maps[f"conv_h{h}"]
        for b, n in enumerate(LENGTHS):
            nw = n_windows(n, h)
            assert torch.equal(post[b, :, :nw], torch.log1p(torch.relu(pre[b, :, :nw])))
            assert (post[b, :, nw:] == 0).all() and (pre[b, :, nw:] == 0).all()
        assert (post > 0).any()


def hand_gate(C_row, nw, v, b2, k, act, before):
    """D_j = act(sum_i v_i * C[j - before + i] + b2), C = 0 outside its nw valid positions (plain loops)."""
    out = []
    for j in range(nw):
        s = 0.0
        for i in range(k):
            p = j - before + i
            if 0 <= p < nw:
                s += float(v[i]) * float(C_row[p])
        out.append(act(s + float(b2)))
    return out


PY_ACTS = {"nlrelu": lambda s: math.log1p(max(0.0, s)), "sigmoid": lambda s: 1 / (1 + math.exp(-s))}


@pytest.mark.parametrize("act_name", list(PY_ACTS))  # sigmoid: f(0) = 0.5, so C^h must be re-zeroed after f
@pytest.mark.parametrize("k", [1, 3, 4, 5])
def test_gate_follows_theorem1_padding(k, act_name):
    assert same_padding(k) == ((k - 1) // 2, math.ceil((k - 1) / 2))
    model = build(gate_windows=(k,), activation=act_name)
    with torch.no_grad():  # a kernel whose taps all differ, so a shifted padding cannot give the same values
        for h in model.config.windows:
            model.gates[f"h{h}_k{k}"].weight.copy_(torch.linspace(-0.7, 0.9, k).view(1, 1, k))
            model.gates[f"h{h}_k{k}"].bias.fill_(0.05)
    ids, mask = batch()
    with torch.no_grad():
        maps = model(ids, mask, return_maps=True).maps
    act = PY_ACTS[act_name]
    before = (k - 1) // 2
    for h in model.config.windows:
        v, b2 = (t.detach() for t in model.gate_kernel(h, k))
        C, D = maps[f"conv_h{h}"], maps[f"gate_h{h}_k{k}"]
        for b, n in enumerate(LENGTHS):
            nw = n_windows(n, h)
            for f in range(C.shape[1]):
                want = torch.tensor(hand_gate(C[b, f], nw, v, b2, k, act, before))
                torch.testing.assert_close(D[b, f, :nw], want, atol=1e-5, rtol=1e-5)
                if k % 2 == 0 and nw > 1 and f == 0 and b == 0:  # the other rounding is really different
                    other = torch.tensor(hand_gate(C[b, f], nw, v, b2, k, act, k // 2))
                    assert not torch.allclose(D[b, f, :nw], other, atol=1e-4)
            assert (D[b, :, nw:] == 0).all() and (C[b, :, nw:] == 0).all()


def test_gate_kernel_is_one_kernel_tied_across_filters():
    model = build(n_gates=2)
    for h in model.config.windows:
        for k in model.config.gate_windows:
            w = model.gates[f"h{h}_k{k}"].weight
            assert w.shape == (2, 1, k)  # G kernels of width k, none per filter
            assert model.gates[f"h{h}_k{k}"].bias.shape == (2,)
    # every filter row of C^2 set to the same sequence -> every filter row of each gate is the same
    ids, mask = batch()
    row = torch.linspace(0.1, 2.0, ids.shape[1])

    def same_rows(t, layer=None, mask=None):
        return row.expand_as(t) * mask.unsqueeze(1).to(t.dtype)

    maps = model(ids, mask, return_maps=True, edits={"conv_h2": same_rows}).maps
    for k in model.config.gate_windows:
        for g in (1, 2):
            D = maps[f"gate_h2_k{k}_g{g}"]
            assert torch.allclose(D, D[:, :1].expand_as(D), atol=1e-6)
            assert D[0].abs().sum() > 0
        assert not torch.allclose(maps[f"gate_h2_k{k}_g1"], maps[f"gate_h2_k{k}_g2"])  # each gate its own kernel


def test_gated_map_is_conv_times_gate_and_feeds_the_max_pool():
    model = build(n_gates=2)
    ids, mask = batch()
    out = model(ids, mask, return_maps=True)
    maps, feats = out.maps, out.features
    nf = model.config.n_filters
    col = 0
    for h in model.config.windows:
        C = maps[f"conv_h{h}"]
        for k in model.config.gate_windows:
            for g in (1, 2):
                m = maps[f"gated_h{h}_k{k}_g{g}"]
                torch.testing.assert_close(m, C * maps[f"gate_h{h}_k{k}_g{g}"], atol=0, rtol=0)
                idx = maps[f"argmax_h{h}_k{k}_g{g}"]
                picked = m.gather(-1, idx.unsqueeze(-1)).squeeze(-1)          # (B, F)
                torch.testing.assert_close(feats[:, col:col + nf], picked)
                for b, n in enumerate(LENGTHS):
                    assert (idx[b] < n_windows(n, h)).all()                   # never a pad window
                col += nf
    assert col == feats.shape[1] == model.fc.in_features


def test_classifier_input_is_only_the_gated_features():
    model = build()
    ids, mask = batch()
    ref = model(ids, mask)
    nf = model.config.n_filters
    zero = lambda t, layer=None, mask=None: torch.zeros_like(t)  # noqa: E731
    # closing gate (h=1, k=1) zeroes exactly the first feature block and nothing else
    out = model(ids, mask, edits={"gate_h1_k1": zero})
    want = ref.features.clone()
    want[:, :nf] = 0
    assert (ref.features[:, :nf] != 0).any()
    torch.testing.assert_close(out.features, want)
    torch.testing.assert_close(out.logits, model.fc(want))
    assert not torch.allclose(out.logits, ref.logits)
    # every gate closed: the ungated C^h (still non-zero) has no path to the logits
    edits = {f"gate_h{h}_k{k}": zero for h in model.config.windows for k in model.config.gate_windows}
    out = model(ids, mask, return_maps=True, edits=edits)
    assert (out.maps["conv_h1"] != 0).any()
    torch.testing.assert_close(out.logits, model.fc.bias.expand_as(out.logits), atol=0, rtol=0)


def test_activation_is_read_from_the_config_at_forward_time():
    model = build()
    ids, mask = batch()
    ref = model(ids, mask, return_maps=True)
    other = copy.deepcopy(model)
    other.config.activation = "selu"
    assert other.act_name == "selu" and model.act_name == "nlrelu"
    out = other(ids, mask, return_maps=True)
    torch.testing.assert_close(out.maps["conv_pre_h1"], ref.maps["conv_pre_h1"])  # same weights
    nw = n_windows(LENGTHS[0], 1)
    torch.testing.assert_close(out.maps["conv_h1"][0, :, :nw], F.selu(out.maps["conv_pre_h1"][0, :, :nw]))
    assert not torch.allclose(out.logits, ref.logits)
    torch.testing.assert_close(model(ids, mask).logits, ref.logits)  # the original is untouched
    other.config.activation = "no_such_fn"
    with pytest.raises(ValueError, match="unknown activation"):
        other(ids, mask)


def test_multichannel_static_channels_stay_frozen_after_a_step():
    torch.manual_seed(0)
    model = textcls.create_model("agcnn", vocab_size=VOCAB, num_labels=LABELS, preset="small",
                                 embedding_mode="multichannel", channels=3,
                                 embeddings=torch.randn(VOCAB, 16)).train()
    tables = model.embed.tables
    assert len(tables) == 3 and model.convs[0].in_channels == 3 * 16  # the first conv spans the channels
    before = [t.weight.detach().clone() for t in tables]
    assert torch.equal(before[0], before[1])  # all channels start from the same vectors
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)  # frozen tables included on purpose
    ids, mask = batch()
    F.cross_entropy(model(ids, mask).logits, torch.tensor([0, 1, 2])).backward()
    opt.step()
    used = ids[mask].unique()
    assert not torch.equal(tables[0].weight[used], before[0][used])  # the fine-tuned channel moved
    for i in (1, 2):
        assert not tables[i].weight.requires_grad
        assert torch.equal(tables[i].weight, before[i])


def test_short_inputs_are_padded_to_the_widest_window():
    model = build()  # windows 1..3
    ids, mask = batch(lengths=(2, 1))
    out = model(ids, mask, return_maps=True)
    assert out.maps["conv_h3"].shape[-1] == 2
    # the 1-token sentence keeps its first (zero-padded) window and is pooled from it
    assert out.maps["argmax_h3_k1"][1].eq(0).all()
    assert (out.maps["conv_h3"][1, :, 1:] == 0).all()


def test_fig4_variant_exposes_the_papers_maps():
    model = textcls.create_model("agcnn", vocab_size=VOCAB, num_labels=LABELS, preset="small", variant="fig4")
    names = {s.name for s in model.map_specs()}
    assert names == {"conv_pre_h1", "conv_h1", "gate_h1_k1", "gate_h1_k3", "gated_h1_k1", "gated_h1_k3",
                     "argmax_h1_k1", "argmax_h1_k3"}
    kinds = {s.name: s.kind for s in model.map_specs()}
    assert kinds["gate_h1_k3"] == "gate"


@pytest.mark.parametrize("bad, match", [
    (dict(activation="prelu"), "activation"),
    (dict(windows=()), "windows"),
    (dict(gate_windows=(0, 3)), "gate_windows"),
    (dict(gate_windows=(3, 3)), "repeated"),
    (dict(n_gates=0), "n_gates"),
    (dict(dropout=1.0), "dropout"),
    (dict(gate_init="xavier"), "gate_init"),
    (dict(embedding_mode="multichannel", channels=1), "channels"),
])
def test_bad_config_is_a_clear_error(bad, match):
    with pytest.raises(ValueError, match=match):
        textcls.make_config("agcnn", **bad)


def test_config_from_json_lists():
    c = AGCNNConfig(windows=[1, 2], gate_windows=[3])
    assert c.windows == (1, 2) and c.gate_windows == (3,)
