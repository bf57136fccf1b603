"""The fast paths of value zeroing and DecompX (issue 59) against straightforward computations written here.

Value zeroing: each layer's matrix against zeroing one position's value at a time and running the whole block
(trace.block_forward, itself tested equal to the model's own block), with every way of making W_1's share
(`w1_route`: the zeroings' terms, the head vectors, W_O's rows) and the last layer's pooled rows only.
DecompX: each block against mapping every part of every position through W_V, mixing them all and mapping
them through W_O (no first-layer own-token shortcut, no mix-first shortcut for the last layer's pooled rows),
and the logit parts against that whole decomposition. On the reference tiny BERT (biases and layer norms
redrawn), a pre-LN and a post-LN textcls Transformer (layer norms redrawn, mean pooling), and minilm-sst2 on
one sentence."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import textcls
from textcls.interpret.context_mixing import decompx as dx
from textcls.interpret.context_mixing import value_zeroing as vz
from textcls.interpret.context_mixing.trace import (attention_input, attention_probs, block_forward,
    row_normalise, trace)
from textcls.interpret.instances import stack

HERE = Path(__file__).parent / "fixtures" / "context_mixing_reference"
SENTENCE = "the acting is superb , but the plot drags and the ending feels like a cheap trick ."
VZ_TOL = 5e-6        # normalised rows: max |fast - straightforward| (seen: 1.3e-6; the float32 straightforward
                     # computation itself is 1.2e-6 from a float64 one)
DX_RTOL = 5e-6       # DecompX parts: max |fast - straightforward| over the largest |part|


# ---------------------------------------------------------------- the straightforward computations

def vz_reference(t, layer: int) -> torch.Tensor:
    """C^l (B, T, T) in float64: position j's value zeroed in the whole block, one position at a time."""
    b, x, out = t.blocks[layer], t.inputs[layer], t.inputs[layer + 1]
    B, T, _ = x.shape
    c = torch.zeros(B, T, T, dtype=torch.float64)
    for j in range(T):
        zero = torch.zeros(B, T)
        zero[:, j] = 1
        y = block_forward(b, x, t.real, zero)                                    # (B, T, d)
        c[:, :, j] = 1 - F.cosine_similarity(y.double(), out.double(), dim=-1)
    real = t.real.double()
    return row_normalise((c * real[:, None, :] * real[:, :, None]).clamp(min=0))


def dx_block_reference(parts, b, x, real, first: bool) -> torch.Tensor:
    """Every position's output parts (B, T, K, d): every value part made, mixed, mapped through W_O."""
    B, T, K, d = parts.shape
    H = b.heads
    src = dx.layer_norm(parts, b.ln1, x) if b.pre_ln else parts
    v = src @ b.v.weight.t()                                                     # (B, T, K, d)
    bias = b.o.bias
    if b.v.bias is not None:
        if first:
            i = torch.arange(T)
            v[:, i, i] += real[:, :, None].to(v.dtype) * b.v.bias
        else:
            bias = b.o.bias + b.o.weight @ b.v.bias
    P = attention_probs(b, attention_input(b, x), real)                          # (B, H, T, T)
    mixed = torch.einsum("bhij,bjkhe->bikhe", P, v.view(B, T, K, H, d // H)).reshape(B, T, K, d)
    p = dx.split_bias(parts + mixed @ b.o.weight.t(), bias)
    if b.pre_ln:
        return p + dx.ffn(dx.layer_norm(p, b.ln2, p.sum(2)), b)
    x1 = dx.layer_norm(p, b.ln1, p.sum(2))
    pre2 = x1 + dx.ffn(x1, b)
    return dx.layer_norm(pre2, b.ln2, pre2.sum(2))


def dx_input_parts(t) -> torch.Tensor:
    x0 = t.inputs[0]                                                             # (B, T, d)
    B, T, d = x0.shape
    parts = x0.new_zeros(B, T, T, d)
    i = torch.arange(T)
    parts[:, i, i] = x0 * t.real[:, :, None].to(x0.dtype)
    return parts


def dx_reference(t) -> torch.Tensor:
    """(B, K, C) each position's part of each logit, every block on every position."""
    parts = dx_input_parts(t)
    for n, (b, x) in enumerate(zip(t.blocks, t.inputs)):
        parts = dx_block_reference(parts, b, x, t.real, first=n == 0)
    if t.head.final_ln is not None:
        parts = dx.layer_norm(parts, t.head.final_ln, parts.sum(2))
    v = torch.einsum("bt,btkd->bkd", t.pool.to(parts.dtype), parts).unsqueeze(1)   # (B, 1, K, d)
    for kind, op in t.head.layers:
        v = dx.linear(v, op) if kind == "linear" else dx.nonlinear(v.clone(), op)
    return v[:, 0]


# ---------------------------------------------------------------- models and texts

def _redraw_norms(model, seed: int = 3):
    """Layer norms with weights and biases far from 1 and 0 (the shortcuts use gamma and beta)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.copy_(1 + 0.5 * torch.randn(m.weight.shape, generator=g))
                m.bias.copy_(0.3 * torch.randn(m.bias.shape, generator=g))
    return model


def _transformer(pre_ln: bool):
    torch.manual_seed(0)
    m = textcls.create_model("transformer", vocab_size=30, num_labels=3, preset="small", pooling="mean",
                             pre_ln=pre_ln)
    return _redraw_norms(m.eval())


def _ids(lengths, seed: int = 1):
    """Word ids (B, L), rows of the given lengths (padded with 0)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(2, 30, (len(lengths), max(lengths)), generator=g)
    for r, n in enumerate(lengths):
        ids[r, n:] = 0
    return ids, ids != 0


def _traces(name: str, shipped_predictors) -> list:
    """Traces of a model on batches whose texts take every W_1 route between them."""
    if name == "minilm-sst2":
        from textcls.interpret.sources import as_source
        p = shipped_predictors[name]
        return [trace(p.model, *stack(as_source(p).instances([SENTENCE])))]
    if name == "tiny-bert":
        from textcls.interpret.sources import as_source
        p = textcls.load_checkpoint(HERE / "tiny-bert")
        src = as_source(p)
        batches = [["the film is a good movie but the plot is dull", "bad"], ["a really fun film"]]
        return [trace(p.model, *stack(src.instances(texts))) for texts in batches]
    model = _transformer(pre_ln=name == "pre-LN transformer")
    return [trace(model, *_ids(lengths)) for lengths in ([20, 3], [7, 5])]


MODELS = ["tiny-bert", "pre-LN transformer", "post-LN transformer", "minilm-sst2"]


@pytest.fixture(scope="module", params=MODELS)
def traces(request, shipped_predictors):
    if "transformer" not in request.param:                                       # a Hugging Face model
        pytest.importorskip("transformers")
    return request.param, _traces(request.param, shipped_predictors)


# ---------------------------------------------------------------- value zeroing

def test_value_zeroing_matrices_equal_zeroing_each_position_through_the_block(traces, monkeypatch):
    name, ts = traces
    routes = []
    route = vz.w1_route
    monkeypatch.setattr(vz, "w1_route", lambda *a: routes.append(route(*a)) or routes[-1])
    with torch.no_grad():
        for t in ts:
            read = torch.nonzero(t.pool.ne(0).any(0))[:, 0]
            for layer in range(t.n_layers):
                want = vz_reference(t, layer)                                    # (B, T, T)
                got = vz.value_zeroing_matrix(t, layer).double()
                assert (got - want).abs().max() <= VZ_TOL, (name, layer)
                rows = vz.value_zeroing_matrix(t, layer, rows=read).double()    # the last layer's way
                assert (rows[:, read] - want[:, read]).abs().max() <= VZ_TOL, (name, layer)
                others = torch.ones(rows.shape[1], dtype=torch.bool)
                others[read] = False
                assert torch.all(rows[:, others] == 0)
    if name != "minilm-sst2":                                                    # every way of making W_1's share
        assert {"zeroings", "heads", "weights"} <= set(routes), routes
    else:
        assert "heads" in routes                                                 # 21 positions, 12 heads, d 384


def test_value_zeroing_is_its_rolled_out_pooled_row(traces):
    """The method reads only the pooled rows of the last layer: the same as the whole matrices' rollout."""
    from textcls.interpret.context_mixing.trace import pooled, rollout
    _, ts = traces
    with torch.no_grad():
        for t in ts:
            want = pooled(t, rollout([vz_reference(t, layer) for layer in range(t.n_layers)]))
            got = vz.value_zeroing(t).double()
            assert (got - want).abs().max() <= VZ_TOL * t.n_layers


def test_w1_route_takes_the_fewest_rows():
    assert vz.w1_route(12, 21, 384, 21, 21) == "heads"                           # 252 < 405 < 441
    assert vz.w1_route(12, 21, 384, 1, 21) == "zeroings"                          # the last layer's [CLS] row
    assert vz.w1_route(12, 100, 384, 100, 100) == "weights"                      # 484 < 1,200 < 10,000


# ---------------------------------------------------------------- DecompX

def test_decompx_blocks_equal_mixing_every_part(traces):
    """Each block on the parts the layer receives: every position's outputs, and the pooled rows alone (the
    last layer's way)."""
    name, ts = traces
    with torch.no_grad():
        for t in ts:
            if t.head is None:
                continue
            parts = dx_input_parts(t)
            read = torch.nonzero(t.pool.ne(0).any(0))[:, 0]
            for n, (b, x) in enumerate(zip(t.blocks, t.inputs)):
                want = dx_block_reference(parts, b, x, t.real, first=n == 0)     # (B, T, K, d)
                scale = want.abs().max()
                got = dx.block(parts.clone(), b, x, t.real, first=n == 0)
                assert (got - want).abs().max() <= DX_RTOL * scale, (name, n)
                few = dx.block(parts.clone(), b, x, t.real, first=n == 0, rows=read)
                assert (few[:, read] - want[:, read]).abs().max() <= DX_RTOL * scale, (name, n)
                parts = want


def test_decompx_parts_equal_the_whole_decomposition(traces):
    _, ts = traces
    with torch.no_grad():
        for t in ts:
            if t.head is None:
                continue
            want = dx_reference(t)                                               # (B, K, C)
            got = dx.decompose(t)
            assert (got - want).abs().max() <= DX_RTOL * want.abs().max()
            assert torch.allclose(got.sum(1), t.logits, atol=1e-4)
