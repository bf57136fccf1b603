"""Beyond one CPU: device selection with CUDA / MPS absent, AMP off the GPU, the sharded batches that make
DDP equal a single-process run, and real `torchrun --nproc_per_node 2` (gloo) runs: the weights equal a
single-process run with the same global batch and seed, one checkpoint is written and loads; a rank that fails
(raising, or SIGKILLed) ends the run with a non-zero exit, one clear line, and no checkpoint or leftovers.

Tolerance: max |w_ddp - w_single| <= 1e-5 over every weight after 28 Adam steps (2 epochs of 14 global batches
of 15 - uneven 8/7 shards - the last of 5, shards 3/2); measured 1.2e-7 (float32 summation order). The weights move
by more than 1e-3 from their initial values in that time, so the check is not vacuous.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import textcls
from textcls.data.batching import DistributedBatchSampler, EncodedSplit, iterate_batches, make_batches
from textcls.cli import main
from textcls.runtime.devices import DeviceError, loader_defaults, resolve_amp, resolve_device

REPO = Path(__file__).resolve().parents[1]
TOLERANCE = 1e-5

dist = pytest.importorskip("torch.distributed", reason="torch.distributed is not built in")
needs_gloo = pytest.mark.skipif(not (dist.is_available() and dist.is_gloo_available()),
                                reason="torch.distributed with the gloo backend is not available")

TRAIN_ARGS = ["train", "--model", "kim_cnn", "--data", "trec", "--preset", "small", "--embeddings", "random",
              "--epochs", "2", "--limit", "200", "--batch-size", "15", "--set", "dropout=0", "--quiet",
              "--device", "cpu", "--seed", "3"]


# ---------------------------------------------------------------- devices (CUDA and MPS absent here)


@pytest.mark.parametrize("device, gpus, words", [("auto", 1, "it has 1 CUDA device"), ("cuda", 1, "it has 1 CUDA"),
                                                 ("cuda:0", 2, "--device cuda:0 puts all of them on one")])
def test_two_ranks_on_one_gpu_are_refused_in_one_line_before_nccl(monkeypatch, device, gpus, words):
    """Seen on a 1-GPU H100: torchrun --nproc_per_node=2 put both ranks on cuda:0 and NCCL failed with "Duplicate GPU
    detected". The group is never joined; the line says why and what to do."""
    from textcls.runtime import distributed
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: pytest.fail("set_device before the check"))
    monkeypatch.setattr(dist, "is_nccl_available", lambda: True)
    monkeypatch.setattr(dist, "init_process_group", lambda *a, **k: pytest.fail("NCCL was started"))
    for k, v in dict(WORLD_SIZE="2", LOCAL_WORLD_SIZE="2", RANK="1", LOCAL_RANK="1").items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ValueError, match=words) as e:
        distributed.init(device)
    assert "--nproc_per_node=" in str(e.value) and "--device cpu" in str(e.value) and "\n" not in str(e.value)


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr("textcls.runtime.devices.mps_available", lambda: False)


def test_auto_is_the_cpu_without_cuda(no_gpu):
    assert resolve_device("auto") == torch.device("cpu") and resolve_device(None).type == "cpu"
    assert resolve_device("auto", local_rank=3).type == "cpu"


@pytest.mark.parametrize("name, words", [("cuda", "CUDA is not available"), ("cuda:1", "CUDA is not available"),
                                         ("mps", "MPS backend is not available"), ("tpu", "unknown device"),
                                         ("cpu:x", "unknown device")])
def test_a_missing_device_is_a_clear_error(no_gpu, name, words):
    with pytest.raises(DeviceError, match=words):
        resolve_device(name)


@pytest.mark.parametrize("name", ["cuda", "cuda:0", "mps", "banana"])
def test_cli_device_missing_exits_2_with_one_line(no_gpu, capsys, name):
    assert main([*TRAIN_ARGS, "--device", name, "--out", "/nonexistent/never"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("textcls train: error: --device:") and "\n" not in err and "Traceback" not in err


def test_amp_off_the_gpu_is_float32_with_a_warning():
    with pytest.warns(RuntimeWarning, match="no effect on cpu"):
        s = resolve_amp("bf16", torch.device("cpu"))
    assert not s.enabled and s.name == "off" and not s.scaler
    assert not resolve_amp(None, torch.device("cpu")).enabled and not resolve_amp("off", torch.device("cpu")).note
    with pytest.raises(ValueError, match="amp must be one of"):
        resolve_amp("fp8", torch.device("cpu"))


def test_loader_defaults_are_off_on_the_cpu():
    assert loader_defaults(torch.device("cpu")) == (0, False)
    assert loader_defaults(torch.device("cpu"), workers=2, pin_memory=True) == (2, False)   # never pin on CPU


def test_cli_amp_on_cpu_warns_and_trains(tmp_path, capsys, bundled_data):
    out = tmp_path / "ck"
    args = [*TRAIN_ARGS, "--amp", "--max-steps", "2", "--limit", "60", "--out", str(out)]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "warning: --amp auto has no effect on cpu" in err and (out / "model.safetensors").is_file()


# ---------------------------------------------------------------- the sharding rule


@pytest.mark.parametrize("n, batch, world", [(160, 15, 2), (101, 16, 3), (7, 4, 2), (33, 2, 4)])
def test_the_ranks_shards_are_the_single_process_batches(n, batch, world):
    lengths = [(i * 7919) % 23 + 1 for i in range(n)]
    gen = torch.Generator().manual_seed(5)
    single = [make_batches(lengths, batch, gen) for _ in range(3)]          # three epochs of one process
    samplers = [DistributedBatchSampler(lengths, batch, 5, r, world) for r in range(world)]
    for epoch in (1, 2, 3):
        for s in samplers:
            s.set_epoch(epoch)
        per_rank = [list(s) for s in samplers]
        assert {len(p) for p in per_rank} == {len(single[epoch - 1])}       # every rank: the same step count
        for t, b in enumerate(single[epoch - 1]):
            shards = [p[t] for p in per_rank]
            real = sorted(i for sh in shards for i, w in zip(sh.index, sh.weight) if w)
            assert real == sorted(b) and all(sh.global_size == len(b) for sh in shards)
            assert max(len(sh.index) for sh in shards) - min(len(sh.index) for sh in shards) <= 1
            assert all(sh.weight == [0.0] for sh in shards if not sum(sh.weight))  # an empty shard: weight 0
    samplers[0].set_epoch(1)                                                # going back replays from the seed
    assert [sh.index for sh in samplers[0]] == [b[0::world] or b[:1] for b in single[0]]


def test_worker_batches_equal_the_plain_loop():
    split = EncodedSplit.from_tensors(torch.randint(1, 50, (20, 9)), labels=torch.arange(20) % 3)
    batches = make_batches(split.lengths, 6, torch.Generator().manual_seed(0))
    plain = list(iterate_batches(split, batches))
    workers = list(iterate_batches(split, batches, workers=1))
    assert len(plain) == len(workers) == len(batches)
    for a, b in zip(plain, workers):
        assert all(torch.equal(x, y) for x, y in zip(a, b))


# ---------------------------------------------------------------- torchrun, 2 processes, gloo


def torchrun(args, out: Path, env_extra=None, nproc: int = 2) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TEXTCLS_THREADS": "1", **(env_extra or {})}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(nproc),
           "-m", "textcls", *args, "--out", str(out)]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=240)


def weights(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file
    return load_file(str(path / "model.safetensors"))


@needs_gloo
def test_torchrun_two_processes_equal_one_process(tmp_path, monkeypatch):
    from textcls.checkpoint import load_checkpoint
    monkeypatch.setenv("TEXTCLS_THREADS", "1")
    single, ddp = tmp_path / "single", tmp_path / "ddp"
    assert main([*TRAIN_ARGS, "--out", str(single)]) == 0
    r = torchrun(TRAIN_ARGS, ddp)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count("saved ") == 1 and "Traceback" not in r.stderr     # rank 0 alone reports
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ddp", "single"]   # one checkpoint, no leftovers
    a, b = weights(single), weights(ddp)
    assert a.keys() == b.keys()
    diff = max(float((a[k] - b[k]).abs().max()) for k in a)
    assert diff <= TOLERANCE, f"max |w_ddp - w_single| = {diff:.3g}"
    cfg = json.loads((single / "config.json").read_text())
    torch.manual_seed(3)                                                     # the initial weights, as trained
    init = textcls.create_model("kim_cnn", vocab_size=cfg["model_config"]["vocab_size"],
                                num_labels=len(cfg["labels"]), preset="small", dropout=0.0).state_dict()
    moved = max(float((a[k] - init[k].float()).abs().max()) for k in a)
    assert moved > 100 * TOLERANCE, moved
    p = load_checkpoint(ddp)                                                 # it loads like any checkpoint
    assert p.info["training"]["world_size"] == 2 and p.predict(["what is the capital of France ?"])[0].label


@needs_gloo
@pytest.mark.parametrize("mode", ["raise", "kill"])
def test_a_failed_rank_stops_the_run_and_leaves_no_checkpoint(tmp_path, mode):
    out = tmp_path / "runs" / "ck"
    r = torchrun(TRAIN_ARGS, out, {"TEXTCLS_FAIL_RANK": "1", "TEXTCLS_FAIL_STEP": "3",
                                   **({"TEXTCLS_FAIL_MODE": "kill"} if mode == "kill" else {})})
    assert r.returncode != 0
    ours = [line for line in r.stderr.splitlines() if line.startswith("textcls train:")]
    if mode == "raise":
        assert ours.count("textcls train: error: rank 1 of 2: InjectedFailure: injected failure on rank 1 before "
                          "step 3 (TEXTCLS_FAIL_RANK/TEXTCLS_FAIL_STEP)") == 1
    assert all(line.startswith("textcls train: error: rank ") for line in ours)
    assert "saved " not in r.stdout
    assert not out.exists()
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())   # no temp folders


@needs_gloo
def test_reproduce_under_torchrun_records_the_world_size(tmp_path):
    out = tmp_path / "results.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TEXTCLS_THREADS": "1"}
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                        "-m", "textcls", "reproduce", "--suite", "smoke", "--only", "smoke/cnn-rand/*",
                        "--limit", "40", "--device", "cpu", "--out", str(out)],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count("wrote ") == 1                                     # rank 0 alone reports
    stored = json.loads(out.read_text())
    (run,) = stored["cells"]["smoke/cnn-rand/trec"]["runs"]
    assert run["world_size"] == 2 and run["device"] == "cpu" and len(stored["sessions"]) == 1
    assert "| cpu x 2 |" in out.with_suffix(".md").read_text()
