"""Activation patching, attribution patching, the lens and the probes (textcls.interpret.patching / .lens):

- a planted mechanism, the known answer: a hand-set Transformer ("not" flips the adjective; layer 1's head 1 moves
  "not" to the adjective, layer 2's feed-forward computes the flip) - patching finds the position and the head,
  the lens the layer, the probe's selectivity is high there and not below;
- the identities, for every family: patching a whole layer's stream restores 1, patching nothing restores 0, the
  CNNs' parallel branches add up to 1; attribution patching equals activation patching where the model is linear;
- the pair rules (exit 2 and one line for a pair that does not line up), the hooks gone and the weights untouched
  afterwards, even with another thread predicting meanwhile; the CLI on shipped checkpoints and a user's Hugging
  Face folder.
"""
from __future__ import annotations

import copy
import json
import threading

import numpy as np
import pytest
import torch

from textcls.cli import main
from textcls.data.text import PAD, UNK, Tokenizer, TokenizerConfig, Vocab
from textcls.interpret.lens import layer_lens, planted_source, planted_texts, probe_layers
from textcls.interpret.patching import ALL, BYS, PairError, available_by, patch_pair
from textcls.interpret.sources import as_source
from textcls.models.registry import create_model

from app_pages import REPO

CLEAN, CORRUPT = "the movie was not good", "the movie was very good"
PLANTED_PAIRS = [(CLEAN, CORRUPT), ("the plot is not awful", "the plot is so awful"),
                 ("the film was very dull", "the film was not dull"),
                 ("the story is quite superb", "the story is not superb")]


@pytest.fixture(scope="module")
def planted():
    return planted_source()


def grid(r, row):
    return dict(zip(r.columns, r.restored[r.rows.index(row)]))


# ---------------------------------------------------------------- the planted mechanism

def test_the_planted_model_computes_its_rule(planted):
    texts, labels, negated, _ = planted_texts()
    enc = planted.encode(texts)
    with torch.no_grad():
        pred = planted.model(enc.token_ids, enc.mask).logits.argmax(1).numpy()
    assert (pred == np.array(labels)).all() and 0 < sum(negated) < len(texts)


@pytest.mark.parametrize("clean,corrupt", PLANTED_PAIRS)
def test_patching_finds_where_the_flip_is(planted, clean, corrupt):
    r = patch_pair(planted, clean, corrupt, "layer")
    assert r.rows == ["embeddings", "layer 1", "layer 2"] and r.columns[-1] == ALL and r.differing == [3]
    changed, adjective = r.columns[3], r.columns[4]
    emb = grid(r, "embeddings")
    assert emb[changed] == pytest.approx(1, abs=1e-3)                         # the input: the word that differs
    assert all(abs(v) < 1e-3 for k, v in emb.items() if k not in (changed, ALL))
    for row in ("layer 1", "layer 2"):                                          # from layer 1 on: the adjective
        g = grid(r, row)
        assert g[adjective] == pytest.approx(1, abs=1e-3), (row, g)
        assert all(abs(v) < 1e-3 for k, v in g.items() if k not in (adjective, ALL)), (row, g)
    heads = patch_pair(planted, clean, corrupt, "head")
    assert heads.rows == ["layer 1", "layer 2"] and heads.columns == ["head 1", "head 2", ALL]
    np.testing.assert_allclose(heads.restored, [[1, 0, 1], [0, 0, 0]], atol=1e-3)   # layer 1's head 1 moves "not"


@pytest.mark.parametrize("clean,corrupt", PLANTED_PAIRS[:2])
def test_identities_whole_stream_one_nothing_zero(planted, clean, corrupt):
    r = patch_pair(planted, clean, corrupt, "layer")
    np.testing.assert_allclose(r.restored[:, -1], 1.0, atol=1e-5)               # every position of any layer
    assert abs(r.nothing) < 1e-6                                                # every hook in place, no cell
    assert r.clean_prediction["label"] != r.corrupt_prediction["label"]
    cell = r.cell("layer 2", r.columns[4])
    assert cell["prediction"]["label"] == r.clean_prediction["label"] and cell["restored"] == pytest.approx(1, abs=1e-3)


def test_the_lens_finds_the_layer_that_computes_the_flip(planted):
    for text, label in ((CLEAN, "negative"), (CORRUPT, "positive"), ("the plot is not awful", "positive")):
        lens = layer_lens(planted, text)
        gap = lens.logits[:, 1] - lens.logits[:, 0]
        assert abs(gap[0]) < 0.01 and abs(gap[1]) < 0.01                       # undecided before layer 2's FFN
        assert lens.predicted[-1] == label and abs(gap[2]) > 4


def test_probe_selectivity_is_high_where_the_flip_is_computed(planted):
    texts, labels, negated, adjectives = planted_texts()
    label = probe_layers(planted, texts, labels, adjectives)
    assert label.rows == ["embeddings", "layer 1", "layer 2"]
    assert label.accuracy[2] > 0.99 and label.accuracy[0] < 0.85               # XOR: not linear before layer 2
    assert label.selectivity[2] > label.selectivity[0] + 0.1 and label.selectivity[2] > label.selectivity[1] + 0.1
    neg = probe_layers(planted, texts, negated, adjectives)                    # "not" is in the input everywhere
    assert (neg.accuracy > 0.99).all()


def test_attribution_patching_finds_the_cells_but_misses_saturation(planted):
    r = patch_pair(planted, CLEAN, CORRUPT, "layer")
    est, act = r.attribution[:, :-1], r.restored[:, :-1]
    assert (np.abs(est[np.abs(act) < 1e-3]) < 1e-3).all()                     # nothing where patching finds nothing
    assert (est.argmax(1) == act.argmax(1)).all() and r.agreement["spearman"] > 0.7
    # AtP*'s caveat: the corrupted run's attention has no "not" to look at, and layer 2's ReLU units that the clean
    # run uses are off: the first-order estimate sees a fraction of the effect
    assert est[0, 3] < 0.5 and est[1, 4] < 0.8


# ---------------------------------------------------------------- identities for every family (tiny random models)

WORDS = "the a movie film plot was is not very good bad dull great . it".split()


def tiny(name: str, seed: int = 0, hierarchical: bool = False, **overrides):
    torch.manual_seed(seed)
    vocab = Vocab([PAD, UNK] + WORDS)
    model = create_model(name, vocab_size=len(vocab.itos), num_labels=2, preset="small", dropout=0.0,
                         **overrides).double().eval()
    return as_source(model, Tokenizer(TokenizerConfig(hierarchical=hierarchical), vocab), ["negative", "positive"])


FAMILIES = [("transformer", {}), ("transformer", {"pooling": "cls"}), ("transformer", {"pooling": "decoder"}),
            ("transformer", {"pooling": "global"}), ("act", {}), ("lama", {}), ("can", {})]


@pytest.mark.parametrize("name,kw", FAMILIES, ids=[f"{n}-{k.get('pooling', '')}" for n, k in FAMILIES])
def test_a_whole_stream_restores_one_in_every_family(name, kw):
    src = tiny(name, **kw)
    r = patch_pair(src, "the movie was not good", "the movie was very good", "layer")
    rows = [i for i, row in enumerate(r.rows) if row not in ("forward GRU", "backward GRU")]
    np.testing.assert_allclose(r.restored[rows, -1], 1.0, atol=1e-8)
    assert abs(r.nothing) < 1e-10
    for by in available_by(src.model):
        got = patch_pair(src, "the movie was not good", "the movie was very good", by)
        assert got.restored.shape == (len(got.rows), len(got.columns)) and abs(got.nothing) < 1e-10


def test_hcan_levels_restore_one_and_sentences_line_up():
    src = tiny("hcan", hierarchical=True)
    r = patch_pair(src, "the movie was not good . it was bad", "the movie was very good . it was bad")
    assert r.rows == ["word input", "word level", "sentence vectors", "sentence level"]
    np.testing.assert_allclose(r.restored[:, -1], 1.0, atol=1e-8)
    first = list(range(6))                                                     # "the movie was not good ."
    assert np.ptp(r.restored[2, first]) < 1e-12                                # a sentence row: one value per sentence
    with pytest.raises(PairError, match="line up"):
        patch_pair(src, "the movie was not good . it was bad", "the movie was . very good it was bad")


@pytest.mark.parametrize("name", ["kim_cnn", "agcnn"])
def test_cnn_branches_add_up_to_one(name):
    src = tiny(name, seed=1)
    r = patch_pair(src, "the movie was not good it", "the movie was very good it", "layer")
    assert r.rows[0].startswith("window") and r.restored[:, -1].sum() == pytest.approx(1, abs=1e-8)
    f = patch_pair(src, "the movie was not good it", "the movie was very good it", "filter", groups=4)
    assert len(f.columns) == 5 and f.restored[:, -1].sum() == pytest.approx(1, abs=1e-8)
    if name == "agcnn":
        for by in ("gate", "position"):
            g = patch_pair(src, "the movie was not good it", "the movie was very good it", by)
            assert g.rows[0] == "gate h1 k1" and abs(g.nothing) < 1e-10


def test_attribution_equals_activation_patching_where_the_model_is_linear():
    # LAMA's classifier is linear in the pooled M: there the first-order estimate is exact
    r = patch_pair(tiny("lama"), "the movie was not good", "the movie was very good", "head")
    pooled = r.rows.index("pooled M")
    np.testing.assert_allclose(r.attribution[pooled], r.restored[pooled], atol=1e-9)
    assert r.restored[pooled, -1] == pytest.approx(1, abs=1e-9)


# ---------------------------------------------------------------- the pair rules and the model left alone

def test_pairs_that_do_not_line_up_are_refused_in_one_line():
    src = tiny("transformer")
    for clean, corrupt, match in [("the movie was good", "the movie was very good", "line up word by word"),
                                  ("the movie was good", "the movie was good", "same to the model"),
                                  ("the zork was good", "the blorp was good", "unknown")]:
        with pytest.raises(PairError, match=match) as e:
            patch_pair(src, clean, corrupt)
        assert "\n" not in str(e.value)
    with pytest.raises(PairError, match="transformer offers layer, position, head"):
        patch_pair(src, CLEAN, CORRUPT, "gate")
    with pytest.raises(PairError, match="unknown grid"):
        patch_pair(src, CLEAN, CORRUPT, "neuron")


def _hooks(model) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


@pytest.mark.parametrize("name", ["transformer", "act", "agcnn"])
def test_hooks_are_removed_and_weights_untouched(name):
    src = tiny(name)
    before = {k: v.clone() for k, v in src.model.state_dict().items()}
    hooks = _hooks(src.model)
    for by in available_by(src.model):
        patch_pair(src, "the movie was not good", "the movie was very good", by)
    assert _hooks(src.model) == hooks
    assert all(torch.equal(before[k], v) for k, v in src.model.state_dict().items())
    assert all(p.grad is None for p in src.model.parameters())
    with pytest.raises(PairError):                                              # a refused pair leaves none either
        patch_pair(src, "the movie", "the movie was")
    assert _hooks(src.model) == hooks


def test_another_thread_predicting_meanwhile_is_not_patched():
    src = tiny("transformer")
    enc = src.encode(["the movie was very good"] * 3)
    with torch.no_grad():
        want = src.model(enc.token_ids, enc.mask).logits
    seen, stop = [], threading.Event()

    def predict():
        while not stop.is_set():
            with torch.no_grad():
                seen.append(torch.equal(src.model(enc.token_ids, enc.mask).logits, want))
    t = threading.Thread(target=predict)
    t.start()
    try:
        for _ in range(10):
            patch_pair(src, "the movie was not good", "the movie was very good", "layer")
    finally:
        stop.set()
        t.join()
    assert seen and all(seen)


# ---------------------------------------------------------------- Hugging Face models

@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_hugging_face_stream_and_heads(tmp_path, family):
    from hf_toys import family_folder

    from textcls.checkpoint import load_checkpoint
    p = load_checkpoint(family_folder(tmp_path, family), device="cpu")
    p.model.double()
    r = patch_pair(p, "this movie was not good", "this movie was very good", "layer")
    np.testing.assert_allclose(r.restored[:, -1], 1.0, atol=1e-8)
    assert r.rows[0] == "embeddings" and len(r.rows) == 3 and abs(r.nothing) < 1e-10
    if family == "bert":
        assert r.columns[0] == "[CLS]" and r.columns[-2] == "[SEP]"
        np.testing.assert_allclose(r.restored[-1, 0], 1.0, atol=1e-8)          # the last layer: [CLS] is all
    h = patch_pair(p, "this movie was not good", "this movie was very good", "head")
    assert h.columns == ["head 1", "head 2", "head 3", "head 4", ALL] and np.isfinite(h.attribution).all()
    with pytest.raises(PairError, match="word piece"):
        patch_pair(p, "this movie was not good", "this movie was zebra good")


# ---------------------------------------------------------------- the shipped checkpoints and the CLI

def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_json_on_the_shipped_transformer(capsys):
    code, out, err = run(capsys, "patch", str(REPO / "checkpoints" / "transformer-sst2"), "--clean", CLEAN,
                         "--corrupt", CORRUPT, "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["axes"] == {"rows": "layer", "columns": "position"} and d["rows"] == ["embeddings", "layer 1", "layer 2"]
    assert d["clean_prediction"]["label"] == "negative" and d["corrupt_prediction"]["label"] == "positive"
    assert all("restored" in c for c in d["cells"]) and len(d["cells"]) == 3 * 6
    assert [row[-1] for row in d["restored"]] == pytest.approx([1.0, 1.0, 1.0], abs=1e-4)
    assert d["restored"][0][3] == pytest.approx(1.0, abs=1e-4) and d["definition"]


@pytest.mark.parametrize("ckpt", ["act-sst2", "agcnn-sst2", "kim_cnn-sst2", "lama-sst2", "hcan-sst2"])
def test_cli_on_every_shipped_family(capsys, ckpt):
    code, out, err = run(capsys, "patch", str(REPO / "checkpoints" / ckpt), "--clean", CLEAN, "--corrupt", CORRUPT,
                         "--json")
    assert code == 0, err
    d = json.loads(out)
    last = np.array([row[-1] for row in d["restored"]], dtype=float)
    if ckpt.startswith(("kim_cnn", "agcnn")):
        assert last.sum() == pytest.approx(1, abs=1e-4)
    else:
        assert np.isclose(last, 1, atol=1e-4).any()


def test_cli_refuses_a_pair_that_does_not_line_up(capsys):
    code, out, err = run(capsys, "patch", str(REPO / "checkpoints" / "kim_cnn-sst2"), "--clean", "the movie was good",
                         "--corrupt", CORRUPT)
    assert code == 2 and out == "" and err.count("\n") == 1 and "line up" in err
    code, out, err = run(capsys, "patch", str(REPO / "checkpoints" / "kim_cnn-sst2"), "--clean", CLEAN,
                         "--corrupt", CORRUPT, "--by", "head")
    assert code == 2 and "kim_cnn offers" in err


def test_cli_text_and_lens_on_a_users_hugging_face_folder(capsys, tmp_path):
    from hf_toys import family_folder
    folder = family_folder(tmp_path, "bert")
    code, out, err = run(capsys, "patch", str(folder), "--clean", "this movie was not good", "--corrupt",
                         "this movie was very good", "--by", "head", "--lens")
    assert code == 0, err
    assert "restored (activation patching" in out and "attribution patching" in out and "lens (" in out


def test_the_cli_offers_the_library_grids():
    from textcls.cli import patch
    assert patch.BYS == BYS


def test_results_cross_as_plain_data(planted):
    import pickle
    r = patch_pair(planted, CLEAN, CORRUPT, "head")
    back = pickle.loads(pickle.dumps(r))
    assert back.rows == r.rows and np.array_equal(back.restored, r.restored)
    assert json.dumps(r.to_dict(), allow_nan=False)
    assert not any(isinstance(v, torch.Tensor) for v in vars(r).values())
    assert copy.deepcopy(r).columns == r.columns
