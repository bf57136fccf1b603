"""The checkpoint package's one reader and one writer (textcls/checkpoint/files.py), for both kinds of folder: a
safetensors header whose tensors overlap, leave a gap or point past the data, and a model file that is a FIFO or a
symlink out of the folder, are refused the same way in a native folder and a Hugging Face one; a save of either
kind fsyncs every file and folder it writes before renaming it into place."""
from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

import textcls
from textcls.checkpoint import CheckpointError, HFError, checkpoint_info, list_checkpoints, save_checkpoint
from textcls.checkpoint import files, hf, native
from textcls.data.text import Tokenizer
from textcls.models.registry import get_entry, make_config
from textcls.train.pipeline import tokenizer_config_for

TEXTS = ["a great and moving film .", "a dull , tedious mess !", "not worth the ticket"]
LABELS = ["negative", "positive"]


def native_folder(root: Path) -> Path:
    tok = Tokenizer.build(TEXTS, tokenizer_config_for(make_config("kim_cnn", preset="small"),
                                                      get_entry("kim_cnn").input_kind))
    model = textcls.create_model("kim_cnn", vocab_size=len(tok.vocab), num_labels=2, preset="small").eval()
    return save_checkpoint(root / "native", model, tok, LABELS)


def hf_folder(root: Path) -> Path:
    pytest.importorskip("transformers")
    from hf_toys import tiny_folder
    return tiny_folder(root)


KINDS = {"native": native_folder, "hf": hf_folder}


@pytest.fixture(params=list(KINDS))
def folder(request, tmp_path):
    return KINDS[request.param](tmp_path / "cks")


def safetensors_bytes(entries: dict, data: bytes) -> bytes:
    raw = json.dumps(entries).encode()
    return struct.pack("<Q", len(raw)) + raw + data


def f32(shape, start):
    n = 4
    for x in shape:
        n *= x
    return {"dtype": "F32", "shape": list(shape), "data_offsets": [start, start + n]}


HEADERS = {   # case -> (header entries, data bytes, what the refusal says)
    "overlapping tensors": ({"a": f32([4], 0), "b": f32([4], 8)}, b"\0" * 24, "overlaps"),
    "a gap between tensors": ({"a": f32([2], 0), "b": f32([2], 16)}, b"\0" * 24, "gap"),
    "offsets past the data": ({"a": f32([64], 0)}, b"\0" * 16, "truncated"),
    "bytes past the last tensor": ({"a": f32([2], 0)}, b"\0" * 64, "after the last tensor"),
    "offsets that do not match the shape": ({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}},
                                            b"\0" * 8, "bad entry"),
    "a header longer than the file": (None, b"", "truncated"),
}


@pytest.mark.parametrize("case", list(HEADERS))
def test_a_bad_safetensors_header_is_refused_the_same_way_in_both_kinds(folder, case):
    entries, data, words = HEADERS[case]
    target = folder / "model.safetensors"
    if entries is None:
        target.write_bytes(struct.pack("<Q", 10_000) + b"{}")
    else:
        target.write_bytes(safetensors_bytes(entries, data))
    with pytest.raises(CheckpointError, match=words) as e:
        files.safetensors_header(target)
    assert "corrupt safetensors file" in str(e.value) and str(target) in str(e.value)
    with pytest.raises(CheckpointError, match=words):       # what listing says, for either kind
        checkpoint_info(folder)
    (info,) = list_checkpoints(folder.parent, include_invalid=True)
    assert not info.valid and words in info.error


def test_a_well_formed_header_is_read(tmp_path):
    p = tmp_path / "w.safetensors"
    p.write_bytes(safetensors_bytes({"__metadata__": {"format": "pt"}, "b": f32([2], 8), "a": f32([2], 0),
                                     "empty": {"dtype": "F16", "shape": [0], "data_offsets": [16, 16]}}, b"\0" * 16))
    assert files.safetensors_header(p) == {"a": ("F32", (2,)), "b": ("F32", (2,)), "empty": ("F16", (0,))}


@pytest.mark.parametrize("how", ["fifo", "symlink out"])
@pytest.mark.parametrize("name", ["model.safetensors", "config.json"])
def test_a_file_that_is_not_a_regular_file_in_the_folder_is_refused_in_both_kinds(folder, tmp_path, how, name):
    target = folder / name
    outside = tmp_path / f"outside-{name}"
    outside.write_bytes(target.read_bytes())                  # a sound file, but not in the folder
    target.unlink()
    if how == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to(outside)
    words = "not a regular file" if how == "fifo" else "symlink out of its folder"
    with pytest.raises(CheckpointError, match=words):
        files.read_capped(target, 10_000_000)
    if name == "model.safetensors":
        with pytest.raises(CheckpointError, match=words):
            files.safetensors_header(target)
    (info,) = list_checkpoints(folder.parent, include_invalid=True)
    if name == "config.json":
        # without a readable config.json neither kind recognises the folder: refused, whichever kind it was
        assert not info.valid
    else:
        assert not info.valid and words in info.error, info.error


def test_one_reader_one_error_type():
    assert HFError is CheckpointError
    assert native.safetensors_header is hf.safetensors_header is files.safetensors_header


def _fsynced(monkeypatch) -> set[int]:
    """Patch os.fsync to record the inode of every file descriptor it is given."""
    seen: set[int] = set()
    real = os.fsync

    def fsync(fd):
        seen.add(os.fstat(fd).st_ino)
        return real(fd)
    monkeypatch.setattr(os, "fsync", fsync)
    return seen


def _inodes(folder: Path) -> set[int]:
    return {os.stat(folder).st_ino} | {os.stat(p).st_ino for p in folder.rglob("*") if not p.is_symlink()}


def test_the_folder_writer_fsyncs_every_file_and_folder(tmp_path, monkeypatch):
    seen = _fsynced(monkeypatch)

    def write(tmp: Path) -> None:
        (tmp / "config.json").write_text("{}")
        (tmp / "sub").mkdir()
        (tmp / "sub" / "x.bin").write_bytes(b"x" * 10)
    out = files.write_folder(tmp_path / "out", write)
    assert _inodes(out) <= seen and os.stat(tmp_path).st_ino in seen     # the files, the folders, the parent


def test_a_native_save_fsyncs_every_file(tmp_path, monkeypatch):
    seen = _fsynced(monkeypatch)
    out = native_folder(tmp_path)
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "history.json", "model.safetensors", "vocab.json"]
    assert _inodes(out) <= seen


def test_a_hugging_face_save_fsyncs_every_file(tmp_path, monkeypatch):
    src = hf_folder(tmp_path / "src")
    model, tokenizer, labels, _ = hf.load_hf(src)
    seen = _fsynced(monkeypatch)
    out = hf.save_hf(tmp_path / "cks" / "saved", model, tokenizer, labels, meta={"data": {"name": "toy"}})
    assert (out / "textcls.json").is_file() and (out / "model.safetensors").is_file()
    assert _inodes(out) <= seen
    assert checkpoint_info(out).labels == labels


def test_neither_kind_replaces_a_folder_of_the_other_kind_or_a_plain_one(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("mine")
    with pytest.raises(CheckpointError, match="not a textcls checkpoint"):
        native.check_target(plain)
    with pytest.raises(CheckpointError, match="not a Hugging Face checkpoint"):
        hf.check_hf_target(plain)


# ---------------------------------------------------------------- one name per idea: old field names still load

def test_old_field_names_read_under_todays_names():
    from textcls.checkpoint import FIELD_ALIASES, config_from_dict
    from textcls.models.hcan import CANConfig, HCANConfig
    from textcls.models.lama import LAMAConfig
    assert FIELD_ALIASES["ConvAttentionConfig"] == {"attention_dim": "d_model", "heads": "n_heads"}
    for cls in (HCANConfig, CANConfig):                             # the subclasses inherit their parent's row
        c = config_from_dict(cls, {"vocab_size": 20, "num_labels": 2, "attention_dim": 32, "heads": 4})
        assert (c.d_model, c.n_heads) == (32, 4)
    assert config_from_dict(LAMAConfig, {"vocab_size": 20, "heads": 3, "hidden_dim": 7}).n_heads == 3
    with pytest.raises(CheckpointError, match="twice"):
        config_from_dict(HCANConfig, {"heads": 4, "n_heads": 4})
    with pytest.raises(CheckpointError, match="unknown field"):     # a name no version had is still refused
        config_from_dict(LAMAConfig, {"attention_dim": 3})


@pytest.mark.parametrize("name", ["hcan-sst2", "can-imdb", "lama-sst2"])
def test_shipped_checkpoints_with_old_names_load_unchanged(name):
    from textcls.runtime.paths import shipped_checkpoints
    path = shipped_checkpoints() / name
    raw = json.loads((path / "config.json").read_text())["model_config"]
    assert "heads" in raw and "n_heads" not in raw                  # the file keeps its old names
    config = native.validate_checkpoint(path).config
    assert config.n_heads == raw["heads"]
    if "attention_dim" in raw:
        assert config.d_model == raw["attention_dim"]
