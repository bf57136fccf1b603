"""The neuron view (textcls.interpret.neurons; docs/neuron_view.md) against a known answer: the softmax recomputed here,
from nothing but the numbers the view shows (q, k, the scale, the mask or additive term, LAMA's nonlinearity), equals
the attention the model itself shows (the Predictor's maps; a Hugging Face encoder's word-piece attention) to 1e-5 -
on every shipped checkpoint with query-key attention, on tiny random Transformers with the cls token, local chunks
and decoder pooling, tiny LAMAs of the other score readings, and tiny Hugging Face BERT, DistilBERT and RoBERTa
built from configs. Then the word view of the pieces, what does not apply, the interpreter's CLI and JSON, the
figure and the page."""
from __future__ import annotations

import json
import pickle
import threading

import numpy as np
import pytest

from conftest import REPO, shipped_names
from textcls.interpret.neurons import NeuronError, neuron_view, reason

TEXT = "The movie was not unbelievably good. It was fine!"
RELATION = "The <e1>burst</e1> was caused by water hammer <e2>pressure</e2>."
TOL = 1e-5


def text_for(name: str) -> str:
    return RELATION if "semeval" in name else TEXT


def recompute(d: dict) -> np.ndarray:
    """softmax(f(q . k * scale) / T + bias) from the view's JSON alone; q x k must sum to q . k."""
    q, k, prod = (np.array(d[x], dtype=float) for x in ("q", "k", "product"))
    dot = np.einsum("hrd,hkd->hrk", q, k)
    assert np.allclose(prod.sum(-1), dot, atol=1e-6) and np.allclose(d["dot"], dot, atol=1e-6)
    bias = np.array(d["bias"], dtype=float)
    bias = np.where(np.isnan(bias), -np.inf, bias)                                    # None in JSON: masked
    f = dot * d["scale"]
    if d["transform"] == "tanh":
        f = np.tanh(f)
    elif d["transform"] == "l2_heads":
        assert len(d["heads"]) == d["n_heads"], "the norm across heads needs every head"
        t = np.tanh(f)
        f = t / np.linalg.norm(t, axis=0, keepdims=True)
    else:
        assert d["transform"] == "none"
    s = f / d["temperature"] + bias
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def own_attention(p, text: str, v) -> np.ndarray:
    """(h, R, K): the model's attention for the view's site, heads and query rows, read from what textcls shows
    (never from the view)."""
    pred = p.predict([text], return_maps=True)[0]
    m, heads, rows = pred.maps, list(v.heads), list(v.row_keys)
    if v.model.startswith("hf:"):
        from textcls.models.hf.pieces import piece_attention_of
        return piece_attention_of(p, text).attention[v.layer][heads][:, rows]
    if v.site.startswith("global"):
        return m["alpha"][None, None, :]
    if v.site.startswith("decoder"):
        return m["decoder_attention"][v.layer - len(m["attention"])][heads][:, None, :]
    if v.model == "lama":
        return m["attention"][heads][:, None, :]
    if v.model == "transformer":
        att = m["attention"][v.layer][heads]                                           # (h, L, L)
        if "attention_to_cls" not in m:
            return att[:, rows]
        i = v.layer
        full = np.concatenate([np.concatenate([m["cls_self"][i][heads][:, None, None],
                                               m["cls_attention"][i][heads][:, None, :]], -1),
                               np.concatenate([m["attention_to_cls"][i][heads][:, :, None], att], -1)], 1)
        return full[:, rows]
    name = {"self-attention a": "A_a", "self-attention b": "A_b", "target attention": "beta"}
    key = next(n for s, n in name.items() if s in v.site)
    if v.model == "can":
        return m[key][heads][:, rows] if key != "beta" else m["beta"][heads][:, None, :]
    sentences = pred.sentences                                                         # HCAN
    starts = np.cumsum([0] + [len(s) for s in sentences])
    s = next(i for i in range(len(sentences)) if starts[i] <= max(v.query, 0) < starts[i + 1])
    if v.site.startswith("sentence"):
        if key == "beta":
            return m["gamma"][heads][:, None, :]
        return m["sent_" + key][heads][:, rows]
    n = len(sentences[s])
    if key == "beta":
        return m["beta"][s][heads][:, None, :n]
    return m[key][s][:, :n, :n][heads][:, rows]


def check(p, text: str, layer: int, query: int, head: int = -1):
    v = neuron_view(p, text, layer=layer, head=head, query=query)
    d = json.loads(json.dumps(v.to_dict(), allow_nan=False))                         # strict JSON, read back
    mine = recompute(d)
    own = own_attention(p, text, v)
    assert mine.shape == own.shape, (v.site, mine.shape, own.shape)
    assert np.abs(mine - own).max() <= TOL, (v.site, np.abs(mine - own).max())
    assert v.max_error <= TOL
    return v


APPLIES = [n for n in shipped_names() if n.split("-")[0] in ("transformer", "act", "lama", "hcan", "can", "minilm")]


def test_the_shipped_checkpoints_split_as_expected():
    assert set(APPLIES) | {n for n in shipped_names() if n.split("-")[0] in ("kim_cnn", "agcnn")} == \
        set(shipped_names())


@pytest.mark.parametrize("name", APPLIES)
def test_recomputed_softmax_is_the_models_own_attention(name, shipped_predictors):
    """Every site of every shipped checkpoint with query-key attention, every head, two query words (and the
    classifier's position where the model has one)."""
    p = shipped_predictors[name]
    assert reason(p) is None
    text = text_for(name)
    sites = neuron_view(p, text).sites
    for layer in range(len(sites)):
        for query in (0, 3):
            check(p, text, layer, query)
    if name.startswith("minilm"):
        v = check(p, text, 2, -1)
        assert v.rows == ("[CLS]",) and v.row_keys == (0,)


def test_what_each_family_shows_and_says(shipped_predictors):
    t = neuron_view(shipped_predictors["transformer-sst2"], TEXT, layer=0, head=1, query=3)
    assert t.heads == (1,) and t.query_label == "not" and t.q.shape == (1, 1, 30) and t.k.shape == (1, 11, 30)
    assert abs(t.scale - 30 ** -0.5) < 1e-12 and np.all(t.bias == 0)
    assert neuron_view(shipped_predictors["transformer-sst2"], TEXT, layer=2).site.startswith("global attention")
    a = neuron_view(shipped_predictors["act-sst2"], TEXT)
    assert a.sites == ("global attention (ACT eq. 6)",) and a.rows == ("g (global representation)",)
    ctx = shipped_predictors["act-sst2"].predict([TEXT], return_maps=True)[0].maps["score_context"]
    assert np.allclose(a.bias[0, 0], ctx, atol=1e-6)                                  # the additive context term
    lama = neuron_view(shipped_predictors["lama-sst2"], TEXT)
    assert lama.transform == "tanh" and lama.scale == 1.0 and "not a scaled dot product" in lama.formula
    scores = shipped_predictors["lama-sst2"].predict([TEXT], return_maps=True)[0].maps["scores"]   # f^ (L, m)
    assert np.allclose(lama.scores[:, 0, :], scores.T, atol=1e-5)                     # the model's own f^
    h = neuron_view(shipped_predictors["hcan-sst2"], TEXT, layer=0, query=8)          # "was" of sentence 2
    assert h.keys == ("it", "was", "fine", "!") and h.key_words == (7, 8, 9, 10)
    s = neuron_view(shipped_predictors["hcan-sst2"], TEXT, layer=3, query=8)
    assert s.key_kind == "sentence" and s.rows == ("S2: it was fine !",)


# ---------------------------------------------------------------- tiny models: the cls token, local chunks, LAMA's readings

@pytest.fixture(scope="module")
def tiny(shipped_predictors):
    """Tiny random textcls models on the shipped tokenizers (nothing trained, nothing saved)."""
    import torch

    import textcls
    from textcls.inference import Predictor
    torch.manual_seed(0)
    tok_t, tok_l = shipped_predictors["transformer-sst2"].tokenizer, shipped_predictors["lama-sst2"].tokenizer
    small = dict(d_model=16, n_heads=2, d_ff=32, embed_dim=16, dropout=0.0)
    out = {}
    for key, kw in (("cls_local", dict(pooling="cls", local_window=3, local_shift=True, n_layers=2)),
                    ("decoder", dict(pooling="decoder", n_layers=1, decoder_layers=2))):
        m = textcls.create_model("transformer", vocab_size=len(tok_t.vocab), num_labels=2, **small, **kw)
        out[key] = Predictor(m, tok_t, ["negative", "positive"])
    for variant in ("l2", "layernorm"):
        m = textcls.create_model("lama", vocab_size=len(tok_l.vocab), num_labels=2, variant=variant, embed_dim=8,
                                 hidden_dim=6, n_heads=3)
        out[variant] = Predictor(m, tok_l, ["negative", "positive"])
    return out


def test_cls_token_and_local_chunks_are_in_the_mask(tiny):
    p = tiny["cls_local"]
    for layer in (0, 1):                                  # layer 1's chunks are shifted
        v = check(p, TEXT, layer, 5)
        masked = ~np.isfinite(v.bias[0, 0])
        assert masked.any() and not masked[0] and v.keys[0] == "[cls]"                # the cls key is global
        assert np.all(v.weights[:, :, masked] == 0)
        c = check(p, TEXT, layer, -1)                                                  # the cls token's row
        assert c.rows == ("[cls]",) and np.all(np.isfinite(c.bias))


def test_decoder_query_and_lamas_other_score_readings(tiny):
    v = check(tiny["decoder"], TEXT, 1, 0)
    assert v.site.startswith("decoder layer 1") and v.rows == ("<s>",)
    check(tiny["decoder"], TEXT, 2, 0)
    v = check(tiny["l2"], TEXT, 0, 0)                                                  # recomputed here from JSON
    assert v.transform == "l2_heads"
    v = neuron_view(tiny["layernorm"], TEXT)                                           # LayerNorm's gain: not in JSON
    assert v.transform == "layernorm_heads" and v.max_error <= TOL
    assert np.abs(v.model_weights - own_attention(tiny["layernorm"], TEXT, v)).max() <= TOL


# ---------------------------------------------------------------- Hugging Face encoders from configs

@pytest.fixture(scope="module", params=["bert", "distilbert", "roberta"])
def hf_tiny(request, tmp_path_factory):
    pytest.importorskip("transformers")
    import sys
    sys.path.insert(0, str(REPO / "tests"))
    from hf_toys import family_folder

    import textcls
    return request.param, textcls.load_checkpoint(family_folder(tmp_path_factory.mktemp("nv"), request.param))


def test_hf_pieces_reproduce_the_attention_and_the_word_view(hf_tiny):
    """Each piece keeps its q and k (the piece softmax is the model's own, exact); the word view of the rows is the
    word map every page shows (a key word sums its pieces, a query word averages its rows, specials left out)."""
    family, p = hf_tiny
    text = "This movie wasn't acting unbelievably, really goodness!"
    words = p.predict([text])[0].tokens
    multi = next(i for i, w in enumerate(words) if w.startswith("goodness"))         # good ##n ##e ##s ##s
    maps = p.predict([text], return_maps=True)[0].maps
    for layer in (0, 1):
        for query in (0, multi, -1):
            v = check(p, text, layer, query)
            assert v.key_kind == "piece" and len(v.keys) > len(words)
            want = maps["cls_attention"][layer] if query == -1 else maps["attention"][layer][:, query]
            assert np.abs(v.word_weights - want).max() <= TOL, family
    v = neuron_view(p, text, 0, 0, multi)
    assert len(v.rows) > 1 and all(v.key_words[j] == multi for j in v.row_keys)      # the word's pieces


def test_what_does_not_apply_says_why_in_one_line(shipped_predictors, tmp_path):
    for name, says in (("kim_cnn-sst2", "no attention"), ("agcnn-trec", "gates")):
        why = reason(shipped_predictors[name])
        assert says in why and "\n" not in why
        with pytest.raises(NeuronError, match=says):
            neuron_view(shipped_predictors[name], TEXT)
    pytest.importorskip("transformers")
    import sys
    sys.path.insert(0, str(REPO / "tests"))
    from hf_toys import family_folder

    import textcls
    llama = textcls.load_checkpoint(family_folder(tmp_path, "llama"))
    assert "rotary" in reason(llama)


def test_bad_layer_head_query_and_text_are_one_line(shipped_predictors):
    p = shipped_predictors["transformer-sst2"]
    for kw, says in ((dict(layer=3), "3 attention site"), (dict(head=4), "4 head"), (dict(query=11), "11 word"),
                     (dict(query=-1), "no position the classifier reads")):
        with pytest.raises(NeuronError, match=says) as e:
            neuron_view(p, TEXT, **kw)
        assert "\n" not in str(e.value)
    with pytest.raises(NeuronError, match="entity"):
        neuron_view(shipped_predictors["act-semeval2010"], "no markers here")


def test_hooks_record_only_their_own_threads_call(shipped_predictors):
    """The app's model worker runs jobs in threads on one shared model: two views at once each read their own."""
    p = shipped_predictors["transformer-sst2"]
    texts = ["a dull and lifeless film", "one of the best films of the year , funny and warm"]
    alone = [neuron_view(p, t, 1, -1, 2) for t in texts]
    got: dict = {}

    def run(i):
        for _ in range(5):
            got[i] = neuron_view(p, texts[i], 1, -1, 2)
    threads = [threading.Thread(target=run, args=(i,)) for i in (0, 1)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    for i in (0, 1):
        assert got[i].keys == alone[i].keys and np.array_equal(got[i].q, alone[i].q)


# ---------------------------------------------------------------- the interpreter, the figure, the page

def test_the_cli_command_json_and_exit_2(capsys):
    from textcls.cli import main
    ckpt = str(REPO / "checkpoints" / "transformer-sst2")
    assert main(["neurons", ckpt, TEXT, "--layer", "0", "--head", "0", "--query", "3", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["query_label"] == "not" and d["heads"] == [0] and np.array(d["product"]).shape == (1, 1, 11, 30)
    assert np.abs(recompute(d) - np.array(d["model_weights"])).max() <= TOL
    assert main(["neurons", ckpt, TEXT, "--query", "3"]) == 0
    assert "softmax" in capsys.readouterr().out
    for bad, says in ((["--layer", "9"], "attention site"), (["--head", "7"], "head"), (["--query", "40"], "word"),
                      (["--head", "x"], "expected int")):
        assert exit_code(main, ["neurons", ckpt, TEXT, *bad]) == 2
        err = capsys.readouterr().err.strip()
        assert says in err and len(err.splitlines()) == 1, err
    assert exit_code(main, ["neurons", str(REPO / "checkpoints" / "kim_cnn-sst2"), TEXT]) == 2
    assert "no attention" in capsys.readouterr().err


def exit_code(main, argv) -> int:
    """What the command exits with (a usage error returns 2, an argparse error raises SystemExit(2))."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


def test_the_result_crosses_the_worker_boundary(shipped_predictors):
    from textcls.serve import work
    p = shipped_predictors["lama-sst2"]
    r = work.run(lambda path, stamp: p, "interpret", "neurons", "CK", 1.0, {"text": TEXT}, {"head": 2})
    back = pickle.loads(pickle.dumps(r))
    assert back.heads == (2,) and np.array_equal(back.q, r.q)


def test_the_figure_draws_bertviz_columns_whole_labels_and_its_numbers(shipped_predictors):
    from textcls import viz
    from textcls.viz.neuron_view import neuron_figure
    v = neuron_view(shipped_predictors["minilm-sst2"], TEXT, layer=1, query=4)      # "unbelievably": 5 pieces
    item = neuron_figure(v, head=3, row=1)
    texts = " ".join(str(t) for tr in item.fig.data if tr.type == "scatter" for t in (tr.text or ()))
    for label in ("Query q", "Key k", "q × k (elementwise)", "Softmax", "unbelievably", "##bel", "[CLS]"):
        assert label in texts                                                          # whole, never cut
    heat = [tr for tr in item.fig.data if tr.type == "heatmap"]
    assert len(heat) == 4 and np.array(heat[1].z).shape == (len(v.keys), 32)          # q, k, q x k, the score
    t = item.table
    assert len(t) == len(v.keys) * 32 and set(t["key"]) == set(v.keys)
    assert np.allclose(t.groupby("key_index")["q_x_k"].sum(), v.dot[3, 1], atol=1e-5)
    assert np.allclose(t.groupby("key_index")["softmax"].first(), v.weights[3, 1])
    assert "Plotly" in viz.figure_html(item.fig, "svg", "n")[:3000] or "plotly" in viz.figure_html(item.fig)[:3000]
    assert json.loads(item.json())["rows"] and item.caption
    with pytest.raises(ValueError, match="head"):
        neuron_figure(v, head=12)
    fixed = neuron_figure(neuron_view(shipped_predictors["act-sst2"], TEXT))          # one query, not a word
    assert "g (global representation)" in " ".join(str(x) for tr in fixed.fig.data if tr.type == "scatter"
                                                   for x in (tr.text or ()))


def _page():
    from pages.common.neuron_view import show
    from textcls.runtime.paths import REPO as root
    show(root / "checkpoints" / "transformer-sst2", "the movie was not good", key="nv")


def test_the_page_part_has_its_choosers_and_draws_the_figure(monkeypatch):
    from streamlit.testing.v1 import AppTest
    monkeypatch.setenv("TEXTCLS_WORKER", "0")
    at = AppTest.from_function(_page, default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="nv_layer").options == ["layer 1 self-attention", "layer 2 self-attention",
                                                    "global attention (ACT eq. 6)"]
    assert len(at.get("plotly_chart")) == 1 and "q × k" in " ".join(c.value for c in at.caption)
    at.selectbox(key="nv_query").set_value(3).run()
    at.selectbox(key="nv_head").set_value(2).run()
    assert not at.exception and len(at.get("plotly_chart")) == 1
    at.selectbox(key="nv_layer").set_value(2).run()
    assert not at.exception and "one query, not a word" in " ".join(c.value for c in at.caption)
