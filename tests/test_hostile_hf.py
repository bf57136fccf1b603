"""Hostile Hugging Face folders (issue 41): every case of scripts/hostile_hf.py is refused with one line naming
what is wrong, control characters escaped, before anything of it is allocated or run; listing gives the same
verdict as loading; the tokenizer probe survives a bomb; half-precision weights load and predict."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("transformers")

import textcls  # noqa: E402
from textcls.checkpoint import CheckpointError, list_checkpoints  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import hostile_hf  # noqa: E402

CONTROL = tuple(chr(c) for c in [*range(0, 9), *range(11, 32), 127])


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    return root, hostile_hf.build(root)


def _refusal(root: Path, case, folder: Path, monkeypatch) -> str:
    monkeypatch.syspath_prepend(str(root / "site"))
    with pytest.raises(CheckpointError) as e:
        if case.kind == "train":
            from textcls.train.hf import check_trainable
            check_trainable(folder, ["negative", "positive"])
        else:
            textcls.load_checkpoint(folder)
    return str(e.value)


@pytest.mark.parametrize("name", sorted(hostile_hf.CASES))
def test_each_hostile_folder_is_refused_in_one_line(hostile, name, monkeypatch):
    root, folders = hostile
    case = hostile_hf.CASES[name]
    msg = _refusal(root, case, folders[name], monkeypatch)
    assert "\n" not in msg and not any(c in msg for c in CONTROL), msg
    assert re.search(case.expect, msg), msg
    assert "curl" not in msg and "attacker" not in msg


def test_listing_gives_the_verdict_loading_gives(hostile, monkeypatch):
    """Item 11: `list` validates what loading validates (deep), so no hostile folder lists as valid."""
    root, folders = hostile
    monkeypatch.syspath_prepend(str(root / "site"))
    listed = {i.name: i for i in list_checkpoints(root, include_invalid=True, deep=True)}
    for name, case in hostile_hf.CASES.items():
        if case.kind == "train":
            continue
        info = listed[name]
        assert not info.valid, name
        assert re.search(case.expect, info.error), (name, info.error)
    (good,) = list_checkpoints(root / "_good", include_invalid=True, deep=True)
    assert good.valid and good.name == "tiny-bert", good.error                  # the same checks pass a sound folder


def test_the_apps_listing_defers_the_deep_check_and_loading_still_refuses(hostile, monkeypatch):
    """The app's select boxes list with deep="textcls" - a Hugging Face folder from its files, without
    transformers or the tokenizer probe. A hostile folder that passes those checks is offered, and its load (the
    worker's, when someone selects it) refuses it with the deep listing's own line, before anything is built."""
    from textcls.checkpoint import hf as hc
    root, folders = hostile
    monkeypatch.syspath_prepend(str(root / "site"))
    real = hc._deep
    monkeypatch.setattr(hc, "_deep", lambda *a, **k: (_ for _ in ()).throw(AssertionError("deep check at listing")))
    shallow = {i.name: i for i in list_checkpoints(root, include_invalid=True, deep="textcls")}
    monkeypatch.setattr(hc, "_deep", real)
    deep = {i.name: i for i in list_checkpoints(root, include_invalid=True, deep=True)}
    deferred = [n for n, c in hostile_hf.CASES.items() if c.kind != "train" and shallow[n].valid]
    assert deferred                                                         # the cases only the deep check finds
    for name in deferred:
        with pytest.raises(CheckpointError) as e:
            textcls.load_checkpoint(folders[name])
        assert str(e.value) == deep[name].error, name


def test_the_probe_survives_a_tokenizer_bomb(hostile, monkeypatch):
    """Item 1: the 30 x Replace("a" -> "aa") normaliser, run in the capped child process (static check
    bypassed), kills the probe - not this process - within the time cap, and is refused in one line."""
    from textcls.checkpoint import guard as hf_guard
    from textcls.checkpoint.guard import PROBE_SECONDS, probe_tokenizer
    monkeypatch.setattr(hf_guard, "PROBE_MEMORY", 384 * 2**20)       # dies sooner; the mechanism is the same
    root, folders = hostile
    t = time.perf_counter()
    with pytest.raises(CheckpointError, match="tokenizer") as e:
        probe_tokenizer("bomb", folders["normalizer_bomb"] / "tokenizer.json")
    assert time.perf_counter() - t < PROBE_SECONDS + 5 and "\n" not in str(e.value)


def test_the_probe_refuses_a_normaliser_that_grows_a_text(hostile, tmp_path):
    """A growth the static rule does not count (Prepend is not a Replace) is measured on the probe text."""
    from textcls.checkpoint import probe_tokenizer
    root, _ = hostile
    tok = tmp_path / "tokenizer.json"
    base = json.loads((root / "_good" / "tiny-bert" / "tokenizer.json").read_text())
    base["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "x" * 100_000}]}
    tok.write_text(json.dumps(base))
    with pytest.raises(CheckpointError, match="lengthened a probe text"):
        probe_tokenizer("grow", tok)


def test_the_cli_refuses_the_bomb_with_exit_2_and_one_line(hostile):
    """Item 1 end to end: `predict` on the bomb folder exits 2 with one line (it used to abort, 3.5 GB)."""
    root, folders = hostile
    r = subprocess.run([sys.executable, "-m", "textcls", "predict", str(folders["normalizer_bomb"]), "a good film"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "lengthen" in r.stderr


def test_the_parameter_limit_is_named_and_applied_before_building(hostile, monkeypatch):
    """Issue 44 item 3: a model over the limit is refused from its config on the meta device, naming the limit."""
    root, folders = hostile
    good = root / "_good" / "tiny-bert"
    monkeypatch.setenv("TEXTCLS_MAX_PRETRAINED_PARAMETERS", "10000")
    with pytest.raises(CheckpointError, match=r"over max_pretrained_parameters = 10,000 .*TEXTCLS_MAX_PRE"):
        textcls.load_checkpoint(good)
    monkeypatch.delenv("TEXTCLS_MAX_PRETRAINED_PARAMETERS")
    assert textcls.load_checkpoint(good).predict("a good film")[0].label in ("negative", "positive")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_weights_load_and_predict(hostile, tmp_path, dtype):
    """Issue 44 item 3: float16 and bfloat16 folders load (as float32) and predict what the float32 folder does."""
    import torch
    from safetensors.torch import load_file, save_file
    root, _ = hostile
    good = root / "_good" / "tiny-bert"
    half = tmp_path / f"tiny-{dtype}"
    shutil.copytree(good, half)
    state = load_file(str(good / "model.safetensors"))
    save_file({k: v.to(getattr(torch, dtype)) for k, v in state.items()}, str(half / "model.safetensors"))
    want = textcls.load_checkpoint(good).predict("a good film")[0].probabilities
    p = textcls.load_checkpoint(half)
    got = p.predict("a good film")[0].probabilities
    assert next(p.model.parameters()).dtype == torch.float32
    np.testing.assert_allclose(list(got.values()), list(want.values()), atol=2e-2)


@pytest.mark.parametrize("flag, value, words", [("--lr", "1e30", "lr must be a number > 0 and < 1"),
                                                 ("--max-len", "2", "max_len must be >= 3")])
def test_train_settings_are_checked_before_the_run(hostile, capsys, flag, value, words):
    """Item 10: `train --model hf:... --lr 1e30` / `--max-len 2` exit 2 with one line before any data is read
    (they failed inside the run: exit 1, ValueError)."""
    from textcls.cli import main
    root, _ = hostile
    assert main(["train", "--model", f"hf:{root / '_good' / 'tiny-bert'}", "--data", "no-such-data-set", "--epochs", "1", flag,
                 value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]


def test_a_deep_verdict_is_stored_for_the_other_processes_and_never_reused_for_changed_files(tmp_path, monkeypatch):
    """The app's server and its model worker both list the folders in full; the deep check imports transformers
    and probes the tokenizer (seconds), so its verdict is stored per folder and file identity - and only reused
    while the files are the same."""
    import time

    from hf_toys import tiny_folder
    from textcls.checkpoint import hf as hc
    monkeypatch.setenv("TEXTCLS_CACHE", str(tmp_path / "cache"))
    folder = tiny_folder(tmp_path / "tiny")
    first = hc.hf_summary(folder, deep=True)
    hc._VERDICTS.clear()                                                  # another process: nothing in memory
    monkeypatch.setattr(hc, "_summary", lambda *a, **k: (_ for _ in ()).throw(AssertionError("checked again")))
    assert hc.hf_summary(folder, deep=True) == first                      # read from the stored verdict
    time.sleep(0.01)
    (folder / "config.json").write_text((folder / "config.json").read_text() + " ")   # the files changed
    hc._VERDICTS.clear()
    with pytest.raises(AssertionError, match="checked again"):
        hc.hf_summary(folder, deep=True)
