"""LAMA (Mehta et al. 2019): the maps obey the reconstructed equations, the context and parameter counts are right."""
import math

import pytest
import torch
import torch.nn.functional as F

import textcls
from textcls.models.layers import masked_softmax
from textcls.models.lama import (attention_parameter_count, attention_parameter_table, lama_attention_parameters,
    san_attention_parameters, transformer_attention_parameters)

VOCAB, LABELS = 50, 3


def build(variant=None, **kw):
    torch.manual_seed(0)
    return textcls.create_model("lama", vocab_size=VOCAB, num_labels=LABELS, preset="small", variant=variant,
                                **kw).eval()


def batch(lengths=(7, 4, 1), extra=2, seed=3):
    """Right-padded ids with garbage-free pads, `extra` all-pad columns at the end."""
    g = torch.Generator().manual_seed(seed)
    L = max(lengths) + extra
    ids = torch.zeros(len(lengths), L, dtype=torch.long)
    for b, n in enumerate(lengths):
        ids[b, :n] = torch.randint(2, VOCAB, (n,), generator=g)
    return ids, ids != 0


def run(model, ids, mask, **kw):
    with torch.no_grad():
        return model(ids, mask, return_maps=True, **kw)


@pytest.mark.parametrize("variant", [None, "ctx", "heads20", "temperature"])
def test_attention_is_masked_softmax_of_exposed_scores(variant):
    model = build(variant)
    if variant == "temperature":
        with torch.no_grad():
            model.attn.log_temperature.fill_(math.log(0.25))   # T = 0.25, so a wrong T would show
    ids, mask = batch()
    out = run(model, ids, mask)
    f_hat, a = out.maps["scores"], out.maps["attention"]          # (B, L, m), (B, m, L)
    T = 1.0 if variant != "temperature" else 0.25
    # exact: the same helper on the exposed scores reproduces A bit for bit
    s = f_hat.transpose(1, 2)
    if variant == "temperature":
        s = s / model.attn.temperature()
    assert torch.equal(a, masked_softmax(s, mask.unsqueeze(1)))
    # independently: a plain softmax over each text's real tokens only; pads exactly 0
    for b, n in enumerate(mask.sum(1).tolist()):
        want = torch.softmax(f_hat[b, :n].T.double() / T, dim=-1)   # (m, n)
        torch.testing.assert_close(a[b, :, :n].double(), want, atol=1e-6, rtol=0)
        assert (a[b, :, n:] == 0).all()
        torch.testing.assert_close(a[b, :, :n].sum(-1), torch.ones(a.shape[1]))


def test_temperature_is_learned_and_reaches_attention():
    model = build("temperature").train()
    ids, mask = batch()
    loss = F.cross_entropy(model(ids, mask).logits, torch.tensor([0, 1, 2]))
    loss.backward()
    assert model.attn.log_temperature.grad is not None and model.attn.log_temperature.grad.abs() > 0
    assert build().attn.log_temperature is None        # off by default (the paper)


@pytest.mark.parametrize("variant", [None, "ctx", "heads20"])
def test_scores_have_unit_norm_across_heads_and_follow_the_equations(variant):
    model = build(variant, score_norm="l2_heads")
    ids, mask = batch()
    out = run(model, ids, mask)
    f_hat, h, c = out.maps["scores"], out.maps["hidden"], out.maps["context"]
    norms = f_hat.norm(dim=-1)                                      # (B, L)
    torch.testing.assert_close(norms[mask], torch.ones(int(mask.sum())))
    assert (f_hat[~mask] == 0).all()
    # recompute from H and c with the module's parameters: f = (P^T u) * (Q^T c), u = tanh(W_w h + b_w)
    at = model.attn
    for b, n in enumerate(mask.sum(1).tolist()):
        u = torch.tanh(h[b, :n] @ at.w.weight.T + at.w.bias)         # (n, 2d)
        f = (u @ at.P) * (c[b] @ at.Q)                                # (n, m)
        want = torch.tanh(f) / torch.tanh(f).norm(dim=-1, keepdim=True)
        torch.testing.assert_close(f_hat[b, :n], want, atol=1e-6, rtol=1e-5)
    assert f_hat.shape[-1] == model.config.n_heads


@pytest.mark.parametrize("variant", [None, "ctx"])
def test_default_scores_are_tanh_without_a_norm(variant):
    """The default follows the public PyTorch implementation: f^ = tanh(f), each head on its own (no norm across
    heads), so a head's scores can reach both ends of (-1, 1) whatever the other heads do."""
    model = build(variant)
    assert model.config.score_norm == "tanh"
    ids, mask = batch()
    out = run(model, ids, mask)
    f_hat, h, c = out.maps["scores"], out.maps["hidden"], out.maps["context"]
    at = model.attn
    for b, n in enumerate(mask.sum(1).tolist()):
        u = torch.tanh(h[b, :n] @ at.w.weight.T + at.w.bias)
        want = torch.tanh((u @ at.P) * (c[b] @ at.Q))
        torch.testing.assert_close(f_hat[b, :n], want, atol=1e-6, rtol=1e-5)
    assert (f_hat[~mask] == 0).all()
    assert not torch.allclose(f_hat[mask].norm(dim=-1), torch.ones(int(mask.sum())))


def test_a_stored_config_without_score_norm_loads_the_l2_reconstruction():
    """Checkpoints written before score_norm existed were trained with the L2 norm across heads."""
    from textcls.checkpoint import config_from_dict
    from textcls.models.lama import LAMAConfig
    assert config_from_dict(LAMAConfig, {"vocab_size": VOCAB}).score_norm == "l2_heads"
    assert config_from_dict(LAMAConfig, {"score_norm": "tanh"}).score_norm == "tanh"


def test_single_head_scores_are_signs():
    """m = 1: the norm across one head leaves sign(tanh f) - the degenerate case the docstring describes."""
    out = run(build("heads1", score_norm="l2_heads"), *batch())
    f_hat = out.maps["scores"][batch()[1]]
    assert set(f_hat.abs().flatten().tolist()) == {1.0}


def test_hidden_is_the_gru_run_on_each_text_alone_and_pooled_is_A_H():
    model = build()
    ids, mask = batch(lengths=(7, 4, 1, 6))
    out = run(model, ids, mask)
    h, a, pooled = out.maps["hidden"], out.maps["attention"], out.maps["pooled"]
    with torch.no_grad():
        for b, n in enumerate(mask.sum(1).tolist()):
            alone, _ = model.gru(model.embed(ids[b:b + 1, :n]))      # unpacked, unpadded: (1, n, 2d)
            torch.testing.assert_close(h[b, :n], alone[0], atol=1e-6, rtol=1e-5)
            assert (h[b, n:] == 0).all()
            torch.testing.assert_close(pooled[b], a[b, :, :n] @ alone[0], atol=1e-6, rtol=1e-5)
    assert pooled.shape == (4, model.config.n_heads, 2 * model.config.hidden_dim)
    # the classifier reads flatten(M)
    torch.testing.assert_close(out.logits, model.fc(pooled.flatten(1)))


def test_bigru_halves_are_forward_and_backward():
    """h_i = [forward_i ; backward_i]: the last real token's backward state has read only that token."""
    model = build()
    ids, mask = batch(lengths=(5,), extra=0)
    h = run(model, ids, mask).maps["hidden"]
    d = model.config.hidden_dim
    with torch.no_grad():
        _, h_last = model.gru(model.embed(ids[:, 4:5]))              # final states of the 1-token sequence
    torch.testing.assert_close(h[0, 4, d:], h_last[1, 0], atol=1e-6, rtol=1e-5)   # backward half at the end
    torch.testing.assert_close(h[0, 0, d:], run(model, ids, mask).maps["hidden"][0, 0, d:])


def test_ctx_context_is_masked_mean_of_embeddings():
    model = build("ctx")
    assert model.attn.c is None and model.attn.ctx_proj is None     # small: E = 16 = 2d, no projection
    ids, mask = batch()
    c = run(model, ids, mask).maps["context"]
    with torch.no_grad():
        for b, n in enumerate(mask.sum(1).tolist()):
            torch.testing.assert_close(c[b], model.embed(ids[b, :n]).mean(0))


def test_ctx_projects_the_mean_when_embedding_width_differs():
    model = build("ctx", embed_dim=10)                               # 10 != 2d = 16
    assert model.attn.ctx_proj is not None
    ids, mask = batch()
    c = run(model, ids, mask).maps["context"]
    with torch.no_grad():
        for b, n in enumerate(mask.sum(1).tolist()):
            torch.testing.assert_close(c[b], model.attn.ctx_proj(model.embed(ids[b, :n]).mean(0)))


def test_learned_context_is_the_parameter_for_every_text():
    model = build()
    ids, mask = batch()
    c = run(model, ids, mask).maps["context"]
    torch.testing.assert_close(c, model.attn.c.detach().expand(3, -1))


def test_mask_with_holes_means_tokens_are_absent():
    model = build("ctx")
    ids, mask = batch(lengths=(7,), extra=0)
    holed = mask.clone()
    holed[0, [1, 4]] = False
    out = run(model, ids, holed)
    keep = holed[0]
    compact = ids[:, keep]
    ref = run(model, compact, torch.ones_like(compact, dtype=torch.bool))
    torch.testing.assert_close(out.logits, ref.logits, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(out.maps["attention"][:, :, keep], ref.maps["attention"], atol=1e-6, rtol=1e-5)
    assert (out.maps["attention"][:, :, ~keep] == 0).all()


def test_empty_text_in_batch_gives_zeros_and_finite_gradients():
    model = build("ctx").train()
    model.dropout.p = 0.0
    ids, mask = batch(lengths=(5, 0, 2))
    out = model(ids, mask, return_maps=True)
    assert (out.maps["attention"][1] == 0).all() and (out.maps["pooled"][1] == 0).all()
    assert (out.maps["scores"][1] == 0).all()
    F.cross_entropy(out.logits, torch.tensor([0, 1, 2])).backward()
    for n, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), n


def test_uniform_attention_edit_reaches_pooled():
    model = build()
    ids, mask = batch()

    def uniform(a, layer=None, mask=None):
        m = mask.unsqueeze(1).float()
        return m.expand_as(a) / m.sum(-1, keepdim=True).clamp(min=1)

    out = run(model, ids, mask, edits={"attention": uniform})
    h = out.maps["hidden"]
    mean_h = (h * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
    torch.testing.assert_close(out.maps["pooled"], mean_h.unsqueeze(1).expand(-1, model.config.n_heads, -1))


def test_bad_input_and_config_errors():
    model = build()
    with pytest.raises(ValueError, match="\\(B, L\\)"):
        model(torch.ones(2, 3, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="mask shape"):
        model(torch.ones(2, 3, dtype=torch.long), torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="L = 0"):
        model(torch.ones(2, 0, dtype=torch.long))
    with pytest.raises(ValueError, match="context"):
        build(context="global")
    with pytest.raises(ValueError, match="heads"):
        build(n_heads=0)


def test_paper_defaults():
    cfg = textcls.make_config("lama")
    assert (cfg.embed_dim, cfg.hidden_dim, cfg.n_heads, cfg.context) == (100, 50, 10, "learned")
    assert cfg.embedding_mode == "non-static" and cfg.learn_temperature is False


# ---------------------------------------------------------------- LAMA-F4 parameter counts

@pytest.mark.parametrize("m,d,context,embed_dim,temp", [
    (10, 50, "learned", 100, False), (1, 8, "learned", 16, False), (20, 8, "mean", 16, False),
    (7, 5, "mean", 12, True), (3, 4, "learned", 30, True)])
def test_lama_formula_matches_the_module(m, d, context, embed_dim, temp):
    model = textcls.create_model("lama", vocab_size=VOCAB, num_labels=LABELS, n_heads=m, hidden_dim=d,
                                 context=context, embed_dim=embed_dim, learn_temperature=temp)
    counted = sum(p.numel() for p in model.attn.parameters())
    assert counted == attention_parameter_count(m, d, "lama", context=context, embed_dim=embed_dim,
                                                learn_temperature=temp)
    # the paper's count (P, Q, c) is the module minus W_w, b_w (and our extras)
    if context == "learned" and not temp:
        assert attention_parameter_count(m, d, include_mlp=False) == 2 * d * (2 * m + 1)
        assert counted - attention_parameter_count(m, d, include_mlp=False) == (2 * d) ** 2 + 2 * d


def test_transformer_formula_matches_torch_multihead_attention():
    for m, d_model in [(1, 100), (4, 100), (10, 100), (16, 64)]:
        mha = torch.nn.MultiheadAttention(d_model, m, bias=True)
        assert sum(p.numel() for p in mha.parameters()) == transformer_attention_parameters(m, d_model, bias=True)
        mha = torch.nn.MultiheadAttention(d_model, m, bias=False)
        assert sum(p.numel() for p in mha.parameters()) == transformer_attention_parameters(m, d_model)


def test_san_formula_matches_a_self_attentive_layer():
    d, d_a, r = 50, 350, 30
    ws1, ws2 = torch.nn.Linear(2 * d, d_a, bias=False), torch.nn.Linear(d_a, r, bias=False)
    assert ws1.weight.numel() + ws2.weight.numel() == san_attention_parameters(r, d, d_a=d_a)


def test_fig4_table_lama_smallest_and_growing():
    t = attention_parameter_table(range(1, 41))
    assert t["heads"] == list(range(1, 41))
    for key in ("lama", "san", "transformer"):
        steps = {b - a for a, b in zip(t[key], t[key][1:])}
        assert len(steps) == 1 and steps.pop() > 0, key                # linear in the heads
    assert all(lama < min(san, tr) for lama, san, tr in zip(t["lama"], t["san"], t["transformer"]))
    slope = {k: t[k][1] - t[k][0] for k in ("lama", "san", "transformer")}
    assert slope == {"lama": 4 * 50, "san": 350, "transformer": 4 * 100 * 64}   # 2*2d, d_a, 4 d_model d_k
    assert t["lama"][9] == 2 * 50 * (2 * 10 + 1)                        # m = 10, d = 50: 2,100
    with pytest.raises(ValueError):
        attention_parameter_count(3, 50, "transformer")                # 100 not divisible by 3 with d_k=None
    with pytest.raises(ValueError):
        attention_parameter_count(3, 50, "cnn")
    assert lama_attention_parameters(10, 50, context="mean", include_mlp=False) == 2 * 100 * 10
