"""Checkpoints: save -> load round trip, float16, atomic replacement, and every kind of broken folder."""
import json
import os
import pickle
import re
import shutil
import subprocess
import sys

import pytest
import torch

import textcls
from textcls.checkpoint import (MAX_JSON_BYTES, CheckpointError, list_checkpoints, load_checkpoint, load_history,
    save_checkpoint)
from textcls.runtime.limits import Limits
from textcls.train.pipeline import tokenizer_config_for
from textcls.models.registry import get_entry, make_config
from textcls.data.text import Tokenizer, TokenizerConfig
from textcls.records import History

TEXTS = ["a great and moving film .", "a dull , tedious mess !", "great fun . truly great .",
         "not worth the ticket", "the cast is wonderful"]
LABELS = ["negative", "positive"]


def make(name="kim_cnn", **kw):
    """A small model and the tokenizer training would give it (its max_len fits the model's position table)."""
    tok_config = tokenizer_config_for(make_config(name, preset="small", **kw), get_entry(name).input_kind)
    tok = Tokenizer.build(TEXTS, tok_config)
    torch.manual_seed(0)
    model = textcls.create_model(name, vocab_size=len(tok.vocab), num_labels=2, preset="small", **kw).eval()
    return model, tok


def logits(model, tok, texts=TEXTS):
    enc = tok.encode(texts)
    with torch.no_grad():
        return model(enc.token_ids, enc.mask).logits


@pytest.fixture
def saved(tmp_path):
    model, tok = make()
    hist = History(epochs=[{"epoch": 1, "train_loss": 0.5}], stopped_reason="completed 1 epoch(s)")
    path = save_checkpoint(tmp_path / "ck", model, tok, LABELS,
                           meta={"data": {"name": "toy"}, "metrics": {"test_accuracy": 0.75}}, history=hist)
    return path, model, tok


@pytest.mark.parametrize("name", textcls.list_models())
def test_round_trip_gives_identical_logits(tmp_path, name):
    model, tok = make(name)
    path = save_checkpoint(tmp_path / name, model, tok, LABELS)
    pred = load_checkpoint(path)
    assert not pred.model.training and pred.labels == LABELS and pred.name == name
    assert type(pred.model.config) is type(model.config) and pred.model.config == model.config
    assert torch.equal(logits(pred.model, tok), logits(model, tok))
    assert pred.tokenizer.vocab == tok.vocab and pred.tokenizer.config == tok.config


def test_config_records_what_was_asked(saved):
    path, model, _ = saved
    cfg = json.loads((path / "config.json").read_text())
    assert cfg["model"] == "kim_cnn" and cfg["labels"] == LABELS
    assert cfg["data"] == {"name": "toy"} and cfg["metrics"]["test_accuracy"] == 0.75
    assert cfg["library_version"] == textcls.__version__ and cfg["created"]
    assert cfg["model_config"]["windows"] == [2, 3] and cfg["weights_dtype"] == "float32"
    assert sorted(os.listdir(path)) == ["config.json", "history.json", "model.safetensors", "vocab.json"]
    assert load_history(path).stopped_reason == "completed 1 epoch(s)"


def test_float16_storage_loads_back_as_float32(tmp_path, saved):
    _, model, tok = saved
    path = save_checkpoint(tmp_path / "half", model, tok, LABELS, float16=True)
    assert (path / "model.safetensors").stat().st_size < 0.6 * (saved[0] / "model.safetensors").stat().st_size
    pred = load_checkpoint(path)
    assert all(p.dtype == torch.float32 for p in pred.model.parameters())
    torch.testing.assert_close(logits(pred.model, tok), logits(model, tok), atol=2e-2, rtol=1e-2)
    assert pred.info["weights_dtype"] == "float16"


def test_replacing_a_checkpoint_is_atomic(tmp_path, saved, monkeypatch):
    path, model, tok = saved
    before = (path / "model.safetensors").read_bytes()
    # a crash while writing the new one leaves the old checkpoint as it was, and no temporary folder
    import safetensors.torch

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(safetensors.torch, "save_file", boom)
    with torch.no_grad():
        model.fc.weight.add_(1.0)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(path, model, tok, LABELS)
    assert (path / "model.safetensors").read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["ck"]
    monkeypatch.undo()
    # a successful save replaces it
    save_checkpoint(path, model, tok, LABELS)
    assert (path / "model.safetensors").read_bytes() != before
    assert torch.equal(load_checkpoint(path).model.fc.weight, model.fc.weight)
    assert sorted(os.listdir(tmp_path)) == ["ck"]


def test_never_replaces_a_folder_that_is_not_a_checkpoint(tmp_path):
    model, tok = make()
    precious = tmp_path / "notes"
    precious.mkdir()
    (precious / "thesis.txt").write_text("do not delete")
    with pytest.raises(CheckpointError, match="not a textcls checkpoint"):
        save_checkpoint(precious, model, tok, LABELS)
    assert (precious / "thesis.txt").read_text() == "do not delete"
    with pytest.raises(ValueError, match="label names"):
        save_checkpoint(tmp_path / "x", model, tok, ["only-one"])


def _edit_json(path, name, fn):
    p = path / name
    d = json.loads(p.read_text())
    fn(d)
    p.write_text(json.dumps(d))


def corrupt_missing(path, name):
    (path / name).unlink()


CORRUPTIONS = {
    "missing config.json": (lambda p: corrupt_missing(p, "config.json"), "missing config.json"),
    "missing vocab.json": (lambda p: corrupt_missing(p, "vocab.json"), "missing vocab.json"),
    "missing weights": (lambda p: corrupt_missing(p, "model.safetensors"), "missing model.safetensors"),
    "config not JSON": (lambda p: (p / "config.json").write_text("{\"model\": "), "config.json is not valid JSON"),
    "vocab not JSON": (lambda p: (p / "vocab.json").write_text("[[["), "vocab.json is not valid JSON"),
    "vocab not a vocabulary": (lambda p: (p / "vocab.json").write_text('{"words": 3}'), "vocab.json is not a voc"),
    # a Hugging Face config is read as a Hugging Face folder (textcls.checkpoint.hf): refused for what it lacks
    "foreign config": (lambda p: (p / "config.json").write_text('{"architectures": ["Bert"]}'), "no classification head"),
    "unknown model": (lambda p: _edit_json(p, "config.json", lambda d: d.update(model="gpt9")), "unknown model"),
    "unknown config field": (lambda p: _edit_json(p, "config.json",
                                                  lambda d: d["model_config"].update(wings=2)), "wings"),
    "shape mismatch": (lambda p: _edit_json(p, "config.json",
                                            lambda d: d["model_config"].update(n_filters=9)), "shape mismatch"),
    "labels vs classes": (lambda p: _edit_json(p, "config.json", lambda d: d.update(labels=["a", "b", "c"])),
                          "num_labels"),
    "vocab size": (lambda p: _edit_json(p, "vocab.json", lambda d: d["itos"].append("extra")), "vocab_size"),
    "bad tokenizer": (lambda p: _edit_json(p, "config.json", lambda d: d["tokenizer"].update(level="byte")),
                      "tokenizer"),
    "newer format": (lambda p: _edit_json(p, "config.json", lambda d: d.update(format_version=99)),
                     "format_version"),
    "truncated weights": (lambda p: os.truncate(p / "model.safetensors",
                                                (p / "model.safetensors").stat().st_size - 100), "truncated"),
    "weights header only": (lambda p: os.truncate(p / "model.safetensors", 5), "truncated"),
    "pickle as weights": (lambda p: (p / "model.safetensors").write_bytes(pickle.dumps({"fc.weight": [1.0]})),
                          "safetensors"),
}


@pytest.mark.parametrize("case", list(CORRUPTIONS))
def test_broken_checkpoints_raise_checkpoint_error(saved, case):
    path = saved[0]
    corrupt, message = CORRUPTIONS[case]
    corrupt(path)
    with pytest.raises(CheckpointError, match=message) as info:
        load_checkpoint(path)
    assert str(path) in str(info.value)  # the message names the folder


def test_nan_weights_and_wrong_tensor_names(saved):
    from safetensors.torch import load_file, save_file
    path = saved[0]
    state = load_file(str(path / "model.safetensors"))
    state["fc.bias"] = torch.full_like(state["fc.bias"], float("nan"))
    save_file(state, str(path / "model.safetensors"))
    with pytest.raises(CheckpointError, match="NaN"):
        load_checkpoint(path)
    state["fc.bias2"] = state.pop("fc.bias")
    save_file(state, str(path / "model.safetensors"))
    with pytest.raises(CheckpointError, match="fc.bias"):
        load_checkpoint(path)


def test_not_a_folder(tmp_path):
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        load_checkpoint(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(CheckpointError, match="not a folder"):
        load_checkpoint(tmp_path / "file")


def test_list_checkpoints_skips_and_reports_invalid(tmp_path, saved):
    root = tmp_path
    model, tok = make()
    save_checkpoint(root / "b_second", model, tok, LABELS)
    bad = root / "broken"
    bad.mkdir()
    (bad / "config.json").write_text("not json")
    (root / ".ck.tmp-123").mkdir()       # a save in progress
    (root / "README.txt").write_text("x")
    infos = list_checkpoints(root)
    assert [i.name for i in infos] == ["b_second", "ck"]
    ck = infos[1]
    assert ck.model == "kim_cnn" and ck.data == "toy" and ck.test_accuracy == 0.75 and ck.path == saved[0]
    everything = list_checkpoints(root, include_invalid=True)
    assert [(i.name, i.valid) for i in everything] == [("b_second", True), ("broken", False), ("ck", True)]
    assert "missing vocab.json" in everything[1].error
    os.truncate(saved[0] / "model.safetensors", 50)
    assert [i.name for i in list_checkpoints(root)] == ["b_second"]
    assert list_checkpoints(tmp_path / "missing") == []


def test_hostile_folders_are_listed_as_unreadable_and_never_hide_the_others(tmp_path, saved):
    """A config.json of 100,000 nested brackets, an oversize config and a folder whose files cannot be read each
    become one 'invalid' row with a reason; the good checkpoint beside them stays listed and loadable."""
    good = saved[0]
    nested = tmp_path / "nested"
    shutil.copytree(good, nested)
    (nested / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    big = tmp_path / "big"
    shutil.copytree(good, big)
    cfg = json.loads((big / "config.json").read_text())
    cfg["padding"] = "x" * (MAX_JSON_BYTES["config.json"] + 1)
    (big / "config.json").write_text(json.dumps(cfg))
    infos = {i.name: i for i in list_checkpoints(tmp_path, include_invalid=True)}
    assert infos["ck"].valid and not infos["nested"].valid and not infos["big"].valid
    assert "nested too deeply" in infos["nested"].error
    assert "over the" in infos["big"].error and "byte limit" in infos["big"].error
    assert [i.name for i in list_checkpoints(tmp_path)] == ["ck"]
    with pytest.raises(CheckpointError, match="nested too deeply"):
        load_checkpoint(nested)


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.mark.parametrize("crash_after", ["tmp written", "old moved aside", "new renamed in"])
def test_a_save_killed_between_any_two_steps_leaves_a_complete_checkpoint(tmp_path, saved, crash_after):
    """The disk as a `kill -9` leaves it after each file-system step of an overwrite (by a process that is gone):
    the next listing shows NAME complete - the old one or the new one - and no hidden leftovers."""
    root, old_logits = tmp_path, logits(saved[1], saved[2])
    torch.manual_seed(1)                                                          # other weights than the old
    new_model = textcls.create_model("kim_cnn", vocab_size=len(saved[2].vocab), num_labels=2, preset="small").eval()
    pid = _dead_pid()
    new = save_checkpoint(root / f".ck.tmp-{pid}-abc", new_model, saved[2], LABELS)   # the new one, complete
    if crash_after in ("old moved aside", "new renamed in"):
        os.rename(root / "ck", root / f".ck.old-{pid}-1234")
    if crash_after == "new renamed in":
        os.rename(new, root / "ck")
    infos = list_checkpoints(root, include_invalid=True)
    assert [i.name for i in infos] == ["ck"] and infos[0].valid
    assert sorted(p.name for p in root.iterdir()) == ["ck"]                      # nothing hidden left over
    got = logits(load_checkpoint(root / "ck").model, saved[2])
    want = logits(new_model, saved[2]) if crash_after == "new renamed in" else old_logits
    assert torch.allclose(got, want, atol=1e-6)


def test_a_save_in_progress_by_a_live_process_is_left_alone(tmp_path, saved):
    busy = tmp_path / f".ck.tmp-{os.getpid()}-zz"
    busy.mkdir()
    list_checkpoints(tmp_path)
    assert busy.is_dir()


def test_a_tokenizer_longer_than_the_model_is_clipped_at_load(tmp_path):
    """max_len 10^12 beside a model with a 40-row position table: loading clips it, and a 20,000-token text is cut
    to what the model reads instead of failing after allocating for all of it."""
    tok = Tokenizer.build(TEXTS, TokenizerConfig())
    model = textcls.create_model("act", vocab_size=len(tok.vocab), num_labels=2, preset="small",
                                 max_positions=40).eval()
    path = save_checkpoint(tmp_path / "act", model, tok, LABELS)
    cfg = json.loads((path / "config.json").read_text())
    cfg["tokenizer"]["max_len"] = 10 ** 12
    (path / "config.json").write_text(json.dumps(cfg))
    p = load_checkpoint(path)
    assert p.tokenizer.config.max_len == 40
    pred = p.predict(["good " * 20_000])[0]
    assert len(pred.tokens) == 40 and pred.truncated


def test_full_listing_marks_every_broken_folder_unreadable_beside_a_good_one(tmp_path, saved):
    """The deep listing (CLI `list`, the app's model pages) validates each folder in full, in isolation: every
    corruption above is listed as unreadable with the message loading would give, and the good one stays."""
    root = tmp_path / "root"
    root.mkdir()
    shutil.copytree(saved[0], root / "good")
    for i, (case, (corrupt, _)) in enumerate(CORRUPTIONS.items()):
        folder = root / f"bad{i:02d}"
        shutil.copytree(saved[0], folder)
        corrupt(folder)
    infos = {i.name: i for i in list_checkpoints(root, include_invalid=True, deep=True)}
    assert infos["good"].valid
    for i, (case, (_, message)) in enumerate(CORRUPTIONS.items()):
        info = infos[f"bad{i:02d}"]
        assert not info.valid and re.search(message, info.error), (case, info.error)
    assert [i.name for i in list_checkpoints(root, deep=True)] == ["good"]
    # the torch-free listing (Home's first render) already catches the count mismatches
    shallow = {i.name: i for i in list_checkpoints(root, include_invalid=True)}
    for case in ("labels vs classes", "vocab size"):
        assert not shallow[f"bad{list(CORRUPTIONS).index(case):02d}"].valid, case


def test_a_crafted_huge_config_is_refused_before_any_model_is_built(tmp_path, saved):
    """n_filters = 2,000,000 (a 5 GB model) beside weights that do not match it: refused by counting the
    parameters on the meta device, never by allocating them."""
    path = saved[0]
    _edit_json(path, "config.json", lambda d: d["model_config"].update(n_filters=2_000_000))
    with pytest.raises(CheckpointError, match="parameters"):
        load_checkpoint(path)
    info = list_checkpoints(path.parent, include_invalid=True, deep=True)[0]
    assert not info.valid and "over the limit" in info.error
    # under a raised limit the shapes are compared, still without building the model
    with pytest.raises(CheckpointError, match="shape mismatch"):
        load_checkpoint(path, limits=Limits(max_parameters=10**12))


def test_the_shipped_checkpoints_stay_under_80_mb():
    """The product's budget for checkpoints/ (the repository ships them): 80 MB in all."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[1] / "checkpoints"
    total = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
    assert total < 80e6, f"checkpoints/ holds {total / 1e6:.1f} MB"


def test_a_full_validation_is_remembered_per_file_and_redone_when_a_file_changes(saved, monkeypatch):
    """validate_checkpoint remembers its verdict per (folder, limit, each file's identity): the second listing
    validates nothing, a checkpoint saved over is validated again, each caller gets its own config."""
    from textcls.checkpoint import native as ck
    path, model, tok = saved
    calls = []
    real = ck._validate
    monkeypatch.setattr(ck, "_validate", lambda p, limits: calls.append(p) or real(p, limits))
    first = ck.validate_checkpoint(path)
    first.cfg["labels"].append("edited by a caller")
    second = ck.validate_checkpoint(path)
    assert len(calls) == 1 and second.cfg["labels"] == LABELS        # remembered, and not the caller's copy
    with pytest.raises(CheckpointError, match="parameters"):       # another limit is another verdict
        ck.validate_checkpoint(path, Limits(max_parameters=10))
    assert len(calls) == 2
    cfg = json.loads((path / "config.json").read_text())
    cfg["labels"] = ["a", "b", "c"]                                  # saved over: three labels for two classes
    (path / "config.json").write_text(json.dumps(cfg))
    os.utime(path / "config.json", ns=(1, 1))
    with pytest.raises(CheckpointError, match="labels"):
        ck.validate_checkpoint(path)
    assert len(calls) == 3


def test_a_summary_is_remembered_per_file_and_redone_when_a_file_changes(saved, monkeypatch):
    """checkpoint_info(deep=False), what every page's listing does, reads a folder's files once per file identity:
    a second listing reads nothing, a caller's edit never reaches the next caller, and a file saved over (here a
    history.json that is no longer a history) is read and judged again."""
    from textcls.checkpoint import native as ck
    path, model, tok = saved
    reads = []
    real = ck.read_config
    monkeypatch.setattr(ck, "read_config", lambda p: reads.append(p) or real(p))
    first = ck.checkpoint_info(path)
    first.info["labels"].append("edited by a caller")
    first.labels.append("edited too")
    second = ck.checkpoint_info(path)
    assert len(reads) == 1 and second.labels == LABELS and second.info["labels"] == LABELS
    (path / "history.json").write_text('{"epochs": "not a list"}')
    os.utime(path / "history.json", ns=(1, 1))
    with pytest.raises(CheckpointError, match="history"):
        ck.checkpoint_info(path)
    with pytest.raises(CheckpointError, match="history"):          # the verdict is remembered too
        ck.checkpoint_info(path)
    assert len(reads) == 2


def test_a_model_with_a_tensor_outside_its_state_dict_is_built_the_slow_way(tmp_path, saved, monkeypatch):
    """Loading builds the model on the meta device and hands it the file's tensors; a tensor the file cannot
    fill (a plain attribute) must not stay on the meta device: that model is built and initialised as usual."""
    from textcls.checkpoint import native as ck
    path, model, tok = saved
    checked = ck.validate_checkpoint(path)
    cls = checked.entry.cls

    class WithConstant(cls):
        def __init__(self, config):
            super().__init__(config)
            self.constant = torch.arange(3.0)          # not a parameter, not a buffer

    entry = type("Entry", (), {"cls": WithConstant})()
    from safetensors.torch import load_file
    built = ck._model_with(path, ck.Validated(checked.cfg, entry, checked.config, checked.tokenizer,
                                              checked.shapes), load_file(str(path / "model.safetensors")))
    assert torch.equal(built.constant, torch.arange(3.0))
    assert torch.equal(logits(built.eval(), tok), logits(model, tok))
    plain = load_checkpoint(path).model                # the fast way: nothing left on the meta device
    assert not any(t.is_meta for t in list(plain.parameters()) + list(plain.buffers()))
