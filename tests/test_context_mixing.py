"""Context-mixing explanations (textcls.interpret.context_mixing): each method against its definition on models
whose answer is known - the blocks recomputed from their modules equal the model's own, DecompX's parts add up
to the logits, a token whose value vector is zero gets no norm, and a one-layer model whose label is decided by
one token ranks that token first under every method."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import textcls
from textcls.interpret.instances import Instance, stack
from textcls.interpret.context_mixing import METHODS, applicable, explain_instances, methods_for
from textcls.interpret.context_mixing.decompx import decompose
from textcls.interpret.context_mixing.norm import norm
from textcls.interpret.context_mixing.trace import block_forward, trace


def _transformer(**kw):
    torch.manual_seed(0)
    m = textcls.create_model("transformer", vocab_size=30, num_labels=3, preset="small", **kw)
    return m.eval()


def _batch():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(2, 30, (3, 7), generator=g)
    ids[1, 5:] = 0
    ids[2, 3:] = 0
    return ids, ids != 0


@pytest.mark.parametrize("kw", [dict(pooling="cls"), dict(pooling="global", fc_dim=5), dict(pooling="mean"),
                                dict(pooling="cls", pre_ln=False)])
def test_transformer_blocks_recomputed_equal_the_model_and_decompx_adds_up(kw):
    model = _transformer(**kw)
    ids, mask = _batch()
    t = trace(model, ids, mask)
    for i, b in enumerate(t.blocks):
        y = block_forward(b, t.inputs[i], t.real)
        assert torch.allclose(y[t.real], t.inputs[i + 1][t.real], atol=1e-5)
    parts = decompose(t)                                                      # (B, K, C)
    assert torch.allclose(parts.sum(1), t.logits, atol=1e-4)


@pytest.fixture(scope="module", params=["bert", "distilbert"])
def hf_model(request, tmp_path_factory):
    pytest.importorskip("transformers")
    from hf_toys import tiny_folder
    return textcls.load_checkpoint(tiny_folder(tmp_path_factory.mktemp("cm"), request.param))


def _hf_batch(predictor, texts=("this movie was unbelievable , really good", "bad plot")):
    from textcls.interpret.sources import as_source
    return stack(as_source(predictor).instances(list(texts)))


def test_hf_blocks_recomputed_equal_the_model(hf_model):
    ids, mask = _hf_batch(hf_model)
    hf_model = hf_model.model
    t = trace(hf_model, ids, mask)
    assert len(t.blocks) == 2
    for i, b in enumerate(t.blocks):
        y = block_forward(b, t.inputs[i], t.real)
        assert torch.allclose(y[t.real], t.inputs[i + 1][t.real], atol=1e-5)
    if applicable(hf_model)["decompx"] is None:                              # BERT: through pooler and classifier
        assert torch.allclose(decompose(t).sum(1), t.logits, atol=1e-4)
    else:
        assert hf_model.hf.config.model_type == "distilbert"


def test_hf_word_weights_sum_pieces_and_leave_specials_out(hf_model):
    ids, mask = _hf_batch(hf_model, ["unbelievable film"])
    hf_model = hf_model.model
    t = trace(hf_model, ids, mask)
    pieces = [len(hf_model.table.pieces(int(i))) for i in ids[0]]
    assert pieces[0] > 1                                                     # un ##be ##liev ##able
    assert t.owner.shape[-1] == 2 and t.owner[0, 0].sum() == 0               # [CLS] belongs to no word
    assert t.owner[0].sum(0).tolist() == pieces
    assert t.owner[0, sum(pieces) + 1].sum() == 0                            # nor does [SEP]
    inst = Instance(ids[0], mask[0])
    for m in methods_for(hf_model):
        a = explain_instances(hf_model, [inst], m)[0]
        assert a.scores.shape == (2,) and abs(np.abs(a.scores).sum() - 1) < 1e-9


def test_a_token_whose_value_vector_is_zero_gets_no_norm():
    model = _transformer(pooling="cls")
    ids, mask = _batch()
    hook = model.layers[-1].attn.v.register_forward_hook(lambda mod, a, out: out.index_fill(1, torch.tensor([3]), 0.0))
    try:
        got = norm(trace(model, ids, mask))                                    # (B, T); position 3 = token 2
    finally:
        hook.remove()
    assert torch.all(got[:, 3] == 0)                                           # cls is position 0
    assert torch.all(got[0, [1, 2, 4, 5, 6, 7]] > 0)


def _decided_by_one_token(pre_ln: bool = True):
    """A one-layer Transformer trained to read one token: label 1 iff token 3 is in the text (once), else 0; the
    rest is filler 5..19. In a positive text token 3 alone decides the label."""
    torch.manual_seed(0)
    model = textcls.create_model("transformer", vocab_size=20, num_labels=2, preset="small", n_layers=1,
                                 pooling="cls", dropout=0.0, attention_dropout=0.0, pre_ln=pre_ln)
    g = torch.Generator().manual_seed(0)

    def data(n):
        ids = torch.randint(5, 20, (n, 6), generator=g)
        y = torch.randint(0, 2, (n,), generator=g)
        where = torch.randint(0, 6, (n,), generator=g)
        ids[torch.arange(n), where] = torch.where(y == 1, 3, ids[torch.arange(n), where])
        return ids, y, where
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(150):
        ids, y, _ = data(64)
        loss = torch.nn.functional.cross_entropy(model(ids, ids != 0).logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval(), data(40)


@pytest.mark.parametrize("pre_ln", [True, False])
def test_a_one_layer_model_decided_by_one_token_ranks_it_first(pre_ln):
    model, (ids, y, where) = _decided_by_one_token(pre_ln)
    assert (model(ids, ids != 0).logits.argmax(-1) == y).all()
    ids, where = ids[y == 1], where[y == 1]                                  # the texts token 3 decides
    insts = Instance.from_batch(ids, ids != 0)
    for m in METHODS:
        got = np.array([a.scores.argmax() for a in explain_instances(model, insts, m)])
        assert (got == where.numpy()).all(), m


def test_act_has_norm_only_and_other_models_none():
    act = textcls.create_model("act", vocab_size=30, num_labels=2, preset="small").eval()
    why = applicable(act)
    assert why["norm"] is None and all(why[m] for m in METHODS if m != "norm")
    ids, mask = _batch()
    t = trace(act, ids, mask)
    assert torch.allclose(norm(t), t.pool * t.inputs[-1].norm(dim=-1))
    cnn = textcls.create_model("kim_cnn", vocab_size=30, num_labels=2, preset="small")
    assert methods_for(cnn) == []
    with pytest.raises(ValueError, match="does not apply"):
        explain_instances(cnn, Instance.from_batch(ids[:1]), "alti")
    local = _transformer(local_window=3)
    assert methods_for(local) == []


def test_rollout_on_the_trace_equals_textcls_own_rollout():
    from textcls.interpret.attention import attention_importance_instances
    from textcls.interpret.context_mixing.compare import attention_rollout
    model = _transformer(pooling="cls")
    inst = Instance.from_batch(torch.tensor([[3, 4, 5, 6, 7]]))[0]
    own = attention_importance_instances(model, [inst], how="rollout")[0].scores
    mine = attention_rollout(model, inst)
    assert np.allclose(mine / np.abs(mine).sum(), own, atol=1e-6)
