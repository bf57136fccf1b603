"""Hugging Face encoders as checkpoints (textcls.checkpoint.hf, textcls.models.hf, textcls.train.hf):
a tiny random BERT and a tiny DistilBERT built from a config and saved to a temporary folder exercise the whole
path offline - list, load, predict, maps, word aggregation, attributions, faithfulness, fine-tuning, save,
reload - and every bad folder is refused with one line."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

pytest.importorskip("transformers")

from hf_toys import tiny_folder  # noqa: E402

import textcls  # noqa: E402
from textcls.checkpoint import CheckpointError, checkpoint_info, list_checkpoints  # noqa: E402

TEXTS = ["This movie was unbelievable, really good!", "bad", "", "the plot is dull and the acting awful ."]


@pytest.fixture(scope="module", params=["bert", "distilbert"])
def folder(request, tmp_path_factory):
    return tiny_folder(tmp_path_factory.mktemp("hf"), request.param)


@pytest.fixture(scope="module")
def predictor(folder):
    return textcls.load_checkpoint(folder)


def test_listed_beside_the_others_with_its_architecture(folder):
    infos = list_checkpoints(folder.parent, include_invalid=True, deep=True)
    (info,) = [i for i in infos if i.name == folder.name]
    assert info.valid and info.model.startswith("hf:") and info.model.endswith("ForSequenceClassification")
    assert info.labels == ["negative", "positive"]
    assert checkpoint_info(folder).model == info.model      # the light listing agrees


def test_predictions_are_words_with_word_maps(predictor):
    preds = predictor.predict(TEXTS, return_maps=True)
    assert preds[0].tokens == ["This", "movie", "was", "unbelievable", ",", "really", "good", "!"]
    assert preds[2].tokens == [] and np.isfinite(list(preds[2].probabilities.values())).all()
    for p in preds:
        n = len(p.tokens)
        layers, heads = predictor.model.config.num_layers, predictor.model.config.num_heads
        assert p.maps["attention"].shape == (layers, heads, n, n)
        assert p.maps["cls_attention"].shape == (layers, heads, n)
        if n:
            np.testing.assert_allclose(p.maps["attention"].sum(-1), 1.0, atol=1e-5)   # rows sum to 1
            np.testing.assert_allclose(p.maps["cls_attention"].sum(-1), 1.0, atol=1e-5)
            share = p.maps["special_share"]
            assert ((share >= -1e-6) & (share <= 1 + 1e-6)).all()
        assert abs(sum(p.probabilities.values()) - 1) < 1e-5


def test_same_logits_as_the_plain_hf_model_on_its_pieces(predictor, folder):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    hf = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    tok = AutoTokenizer.from_pretrained(folder)
    text = TEXTS[0]
    with torch.no_grad():
        ref = torch.softmax(hf(**tok(text, return_tensors="pt")).logits, -1)[0].numpy()
    got = np.array(list(predictor.predict(text)[0].probabilities.values()))
    np.testing.assert_allclose(got, ref, atol=1e-5)


def test_padding_and_maps_never_change_the_logits(predictor):
    alone = [predictor.predict(t)[0].probabilities for t in TEXTS]
    batch = predictor.predict(TEXTS, return_maps=True)
    for a, b in zip(alone, batch):
        np.testing.assert_allclose(list(a.values()), list(b.probabilities.values()), atol=1e-5)


def test_word_aggregation_rule(predictor):
    """A key word's weight is the sum over its pieces, a query word's row the mean of its pieces' rows, [CLS]/[SEP]
    left out, rows renormalised: checked against the piece-level weights recomputed here."""
    text = "unbelievable film"
    enc = predictor.encode([text])
    pieces, owner = predictor.tokenizer.pieces_of(text)
    assert len(pieces) > 2 and owner[:len(pieces)].count(0) >= 2    # "unbelievable" is several pieces
    a = predictor.model.piece_attention(enc.token_ids, enc.mask)[0, -1].numpy()   # (H, L, L): [CLS] pieces [SEP]
    words = predictor.predict(text, return_maps=True)[0].maps["attention"][-1]   # (H, W, W)
    owner = np.array(owner)
    for q in range(2):
        for k in range(2):
            rows = 1 + np.flatnonzero(owner == q)
            cols = 1 + np.flatnonzero(owner == k)
            raw = a[:, rows][:, :, cols].sum(-1).mean(-1)             # (H,)
            total = a[:, rows][:, :, 1:1 + len(owner)].sum(-1).mean(-1)
            np.testing.assert_allclose(words[:, q, k], raw / total, atol=1e-5)


def test_erasing_a_word_removes_all_its_pieces(predictor):
    from textcls.interpret import as_source
    (inst,) = as_source(predictor).instances(["unbelievable film"])
    assert inst.n == 2                                   # two words, though the first is several pieces
    enc = predictor.encode(["film"])
    for how in ("delete",):
        gone = inst.remove([0], how)
        np.testing.assert_allclose(predictor.model(*gone.batch()).logits.detach().numpy(),
                                   predictor.model(enc.token_ids, enc.mask).logits.detach().numpy(), atol=1e-5)
    blank = inst.remove([0], "pad")                      # one [PAD] piece in the word's place
    assert blank.n == 2 and predictor.model.table.pieces(int(blank.ids[0])) == (predictor.tokenizer.hf.pad_token_id,)


@pytest.mark.parametrize("method", ["integrated_gradients", "saliency", "grad_x_input", "occlusion", "shapley",
                                    "lime"])
def test_attributions_are_per_word(predictor, method):
    from textcls.interpret import attribute_texts
    (a,) = attribute_texts(predictor, [TEXTS[0]], method, n_samples=20 if method in ("shapley", "lime") else None)
    assert a.scores.shape == (8,) and np.isfinite(a.scores).all()
    if method == "integrated_gradients":
        assert a.delta is not None and abs(a.delta) <= 0.05 * abs(a.output - a.baseline_output) + 1e-3
    if method == "shapley":          # Shapley values sum to F(x) - F(baseline) with whole words removed
        assert a.total == pytest.approx(a.output - a.baseline_output, abs=1e-4)


def test_own_attention_and_faithfulness(predictor):
    from textcls.interpret import attention_importance_instances, as_source, evaluate_slice
    src = as_source(predictor)
    (att,) = attention_importance_instances(predictor.model, src.instances([TEXTS[0]]))
    assert att.scores.shape == (8,) and att.scores.sum() == pytest.approx(1.0)
    rep = evaluate_slice(predictor, TEXTS[:2] + TEXTS[3:], ("attention", "leave_one_out", "random"),
                         attention_tests=False)
    frame = rep.frame()
    assert {"attention", "leave_one_out", "random"} <= set(frame["method"])
    assert np.isfinite(frame["aopc_comprehensiveness"]).all()


def test_head_ablation_changes_the_computation(predictor):
    from textcls.interpret import AblateHead, as_source, intervene
    (inst,) = as_source(predictor).instances([TEXTS[0]])
    res = intervene(predictor.model, inst, AblateHead(0, layer=0))
    assert np.abs(res.probs_before - res.probs_after).max() > 0
    assert np.allclose(np.asarray(res.maps_after["attention"])[0, 0], 0)


def test_long_text_is_truncated_and_says_so(folder):
    from textcls.checkpoint import load_hf
    model, tok, labels, _ = load_hf(folder)
    text = " ".join(["good film"] * 100)
    p = textcls.Predictor(model, tok, labels).predict(text)[0]
    assert p.truncated and 0 < len(p.tokens) <= model.config.max_len - 2


def test_fine_tune_two_steps_save_and_reload(folder, tmp_path):
    from textcls.train.hf import train_hf
    r = train_hf("sst2", f"hf:{folder}", epochs=1, max_steps=2, out=tmp_path / "ft", limit=24, seed=0)
    assert r["history"].steps == 2 and len(r["history"].step_losses) == 2
    assert "test" in r["metrics"]
    info = checkpoint_info(tmp_path / "ft", deep=True)
    assert info.data == "sst2" and info.test_accuracy == pytest.approx(r["metrics"]["test"]["accuracy"])
    again = textcls.load_checkpoint(tmp_path / "ft")
    before = textcls.Predictor(r["model"], r["tokenizer"], r["labels"]).predict(TEXTS)
    after = again.predict(TEXTS)
    for a, b in zip(before, after):
        np.testing.assert_allclose(list(a.probabilities.values()), list(b.probabilities.values()), atol=1e-5)
    assert textcls.checkpoint.load_history(tmp_path / "ft").steps == 2


def test_fine_tuning_is_fit_and_a_nan_loss_leaves_the_weights_untouched(folder):
    """finetune runs fit's loop: its epochs have the flat shape (dev_accuracy), and a non-finite loss stops the
    run before the optimiser takes a step with it - the weights are exactly the initial ones."""
    import torch

    from textcls.data.datasets import Split
    from textcls.train.hf import finetune
    if folder.name.endswith("distilbert"):
        pytest.skip("the loop is the same for every architecture")
    p = textcls.load_checkpoint(folder)
    model, tok = p.model, p.tokenizer
    texts = ["good film", "bad film", "a fine and lovely story", "dull , awful acting"] * 4
    train, dev = Split(texts, [1, 0, 1, 0] * 4), Split(texts[:4], [1, 0, 1, 0])
    h = finetune(model, tok, train, dev, epochs=2, batch_size=8, lr=1e-3, seed=0)
    assert [e.epoch for e in h.epochs] == [1, 2] and all(e.dev_accuracy is not None for e in h.epochs)
    assert h.best_dev_accuracy == max(e.dev_accuracy for e in h.epochs) and h.config["optimizer"] == "adamw"
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    forward = model.forward

    def nan_forward(*a, **k):
        out = forward(*a, **k)
        if model.training:
            out.logits = out.logits * float("nan")
        return out
    model.forward = nan_forward
    h = finetune(model, tok, train, None, epochs=1, batch_size=8, seed=0)
    model.forward = forward
    assert h.diverged and h.steps == 0 and h.step_losses == [] and "non-finite" in h.stopped_reason
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_cli_fine_tunes_a_fraction_of_an_epoch(folder, tmp_path, capsys):
    """`train --model hf:PATH --epochs 0.25`: a quarter of one epoch's steps; a fraction for a model of our own,
    or below the smallest share, is one line and exit 2."""
    from textcls.cli import main
    base = ["train", "--data", "sst2", "--limit", "48", "--batch-size", "8", "--quiet"]
    if folder.name.endswith("distilbert"):
        pytest.skip("one architecture is enough for the command line")
    assert main(base + ["--model", f"hf:{folder}", "--epochs", "0.25", "--out", str(tmp_path / "q")]) == 0
    hist = textcls.checkpoint.load_history(tmp_path / "q")
    assert hist.config["epochs"] == 0.25 and hist.steps == 2   # 48 train texts / 8 = 6 steps an epoch; a quarter: 2
    capsys.readouterr()
    assert main(base + ["--model", "kim_cnn", "--epochs", "0.5", "--out", str(tmp_path / "k")]) == 2
    assert "whole number of epochs for kim_cnn" in capsys.readouterr().err
    assert main(base + ["--model", f"hf:{folder}", "--epochs", "0.001", "--out", str(tmp_path / "z")]) == 2
    assert "epochs must be a number >= 0.01" in capsys.readouterr().err
    assert not (tmp_path / "k").exists() and not (tmp_path / "z").exists()


def test_delta_rebuilds_from_its_base_and_refuses_another(folder, tmp_path, monkeypatch):
    """A delta (changed tensors only, float16 + the sha256 of each of its base's files) loads from the installed
    base; a base with another hash is refused; a missing base lists as unavailable with the install command."""
    import sys

    from textcls import checkpoint as hf_checkpoint
    from textcls.train import hf as hf_train
    pkg = tmp_path / "site" / "toybase"
    shutil.copytree(folder, pkg / "model")
    (pkg / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    base = {"package": "toybase", "module": "toybase", "subdir": "model",
            "sha256": hf_checkpoint.file_sha256(pkg / "model" / "model.safetensors"),
            "files": hf_checkpoint.base_files(pkg / "model")}
    monkeypatch.setitem(hf_train.BASES, "toy", base)
    r = hf_train.train_hf("sst2", "hf:toy", epochs=1, max_steps=2, out=tmp_path / "ck" / "toy-sst2", limit=24,
                          delta=True)
    cfg = json.loads((tmp_path / "ck" / "toy-sst2" / "config.json").read_text())
    assert cfg["format"] == hf_checkpoint.DELTA_FORMAT and cfg["base"]["sha256"] == base["sha256"]
    header = hf_checkpoint.safetensors_header(tmp_path / "ck" / "toy-sst2" / "model.safetensors")
    assert not any("word_embeddings" in k for k in header) and {d for d, _ in header.values()} == {"F16"}
    p = textcls.load_checkpoint(tmp_path / "ck" / "toy-sst2")
    want = textcls.Predictor(r["model"], r["tokenizer"], r["labels"]).predict(TEXTS[0])[0].probabilities
    np.testing.assert_allclose(list(p.predict(TEXTS[0])[0].probabilities.values()), list(want.values()), atol=2e-3)
    # another base: refused at load, listed as invalid with the reason
    other = tmp_path / "site" / "toybase" / "model" / "model.safetensors"
    data = bytearray(other.read_bytes())
    data[-1] ^= 1
    other.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"differs from the one .* in \['model.safetensors'\]"):
        textcls.load_checkpoint(tmp_path / "ck" / "toy-sst2")
    # no base installed: unavailable, with the one command that installs it
    monkeypatch.setattr(sys, "path", [p_ for p_ in sys.path if p_ != str(tmp_path / "site")])
    (info,) = list_checkpoints(tmp_path / "ck", include_invalid=True)
    assert not info.valid and "pip install --no-deps toybase" in info.error and "\n" not in info.error


# ---------------------------------------------------------------- bad folders: one line each, nothing executed

def _broken(folder, tmp_path, how):
    bad = tmp_path / f"bad-{how}"
    shutil.copytree(folder, bad)
    if how == "pickle_only":
        (bad / "model.safetensors").rename(bad / "pytorch_model.bin")
    elif how == "remote_code":
        cfg = json.loads((bad / "config.json").read_text())
        cfg["auto_map"] = {"AutoModelForSequenceClassification": "evil.Model"}
        (bad / "config.json").write_text(json.dumps(cfg))
        (bad / "evil.py").write_text("raise SystemExit('executed!')\n")
    elif how == "no_tokenizer":
        for f in ("tokenizer.json", "vocab.txt"):
            (bad / f).unlink()
    elif how == "corrupt":
        data = (bad / "model.safetensors").read_bytes()
        (bad / "model.safetensors").write_bytes(data[:len(data) // 2])
    elif how == "garbage_header":
        (bad / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all")
    elif how == "no_head":
        cfg = json.loads((bad / "config.json").read_text())
        cfg["architectures"] = ["BertModel"]
        (bad / "config.json").write_text(json.dumps(cfg))
    return bad


@pytest.mark.parametrize("how, words", [("pickle_only", "safetensors only"), ("remote_code", "trust_remote_code"),
                                        ("no_tokenizer", "tokenizer"), ("corrupt", "corrupt safetensors"),
                                        ("garbage_header", "corrupt safetensors"),
                                        ("no_head", "no classification head")])
def test_bad_folders_are_refused_with_one_line(folder, tmp_path, how, words):
    bad = _broken(folder, tmp_path, how)
    with pytest.raises(CheckpointError) as e:
        textcls.load_checkpoint(bad)
    assert words in str(e.value) and "\n" not in str(e.value) and str(bad) in str(e.value)
    (info,) = [i for i in list_checkpoints(tmp_path, include_invalid=True) if i.name == bad.name]
    assert not info.valid and words in info.error


def test_fine_tune_as_a_background_job_with_progress(folder, tmp_path):
    """The Train page's path: JobRegistry -> train_from_spec(model="hf:...") in its own process, step events,
    the checkpoint written to the user folder."""
    if folder.name != "tiny-bert":
        pytest.skip("the job path is the same for every architecture; one is enough")
    from textcls.train.jobs import JobRegistry
    reg = JobRegistry()
    job = reg.submit(data="sst2", model=f"hf:{folder}", epochs=1, out=tmp_path / "job", limit=24,
                     train_overrides={"max_steps": 2})
    assert reg.get(job).wait(timeout=600)
    state = reg.snapshot(job)
    assert state.status == "done", (state.status, state.error, state.message)
    assert any(e["kind"] == "step" for e in state.events) and state.step == 2
    assert textcls.load_checkpoint(tmp_path / "job").predict("good film")[0].label in ("negative", "positive")


def test_batched_faithfulness_equals_the_per_text_path(predictor):
    """The data-set path (batched across texts, padded) gives each text's own-attention and leave-one-out
    numbers as the per-text functions do (textcls.interpret.batched's contract, as for the six)."""
    from textcls.interpret import batched as B
    from textcls.interpret import faithfulness as FF
    from textcls.interpret.attention import attention_importance_instances
    texts = [t for t in TEXTS if t.strip()]
    run = B.SliceRun(predictor, texts, ("attention", "leave_one_out"), attention_tests=False)
    run.run()
    for i, inst in enumerate(run.insts):
        alone = attention_importance_instances(predictor.model, [inst])[0].scores
        np.testing.assert_allclose(np.asarray(getattr(run.importances["attention"][i], "scores",
                                                      run.importances["attention"][i])), alone, atol=1e-5)
        np.testing.assert_allclose(np.asarray(getattr(run.importances["leave_one_out"][i], "scores",
                                                      run.importances["leave_one_out"][i])),
                                   FF.leave_one_out(predictor.model, inst), atol=1e-5)


def test_variants_are_grouped_by_the_pieces_the_encoder_runs(predictor):
    """An encoder's cost is its pieces: the data-set path groups variants by `sequence_lengths` ([CLS] + pieces +
    [SEP]), and the probabilities stay those of each text alone."""
    import torch
    from textcls.interpret import batched as B
    from textcls.interpret.buckets import own_shape
    from textcls.interpret.probabilities import prob_fn, score
    from textcls.interpret.sources import as_source
    texts = [t for t in TEXTS if t.strip()]
    insts = [own_shape(i) for i in as_source(predictor).instances(texts)]
    model = predictor.model
    for inst in insts:
        ids, mask = inst.ids[None], inst.mask[None]
        want = sum(len(model.table.pieces(int(w))) for w in inst.ids[inst.mask]) + 2
        assert int(model.sequence_lengths(ids, mask)[0]) == want
    V = B.Variants(model, insts)
    vids = [V.add(i, ()) for i in range(len(insts))] + [V.add(i, (0,)) for i in range(len(insts)) if insts[i].n > 1]
    V.run()
    for i, inst in enumerate(insts):
        np.testing.assert_allclose(V.probs(vids[i]), score(prob_fn(model), [inst])[0], atol=1e-5)


def test_declared_interventions_match_the_attention_maps(predictor):
    """An encoder declares its heads and layers like the six, so the Attribute page offers head ablation."""
    from textcls.interpret import interventions as IV
    (p,) = predictor.predict([TEXTS[0]], return_maps=True)
    offer = predictor.model.interventions()
    assert p.maps["attention"].shape[:2] == (offer.layers, offer.heads)
    assert IV.HEAD in IV.menu(predictor.model)
    iv = IV.build(predictor.model, IV.HEAD, head=offer.heads - 1, layer=offer.layers - 1)
    assert iv.head == offer.heads - 1 and iv.layer == offer.layers - 1
