"""Limits that protect the machine (textcls.runtime.limits, textcls.runtime.sizing): one place, the same verdict from the library,
the CLI and the app; model size counted before anything is built; training memory estimated before the first
step; data files over the size limit refused before they are read; background jobs within their budgets."""
from __future__ import annotations

import dataclasses
import os
import threading
import time
import tomllib
from pathlib import Path

import pytest
import torch

import textcls
from textcls.runtime import limits as L
from textcls.runtime import sizing
from textcls.cli import main
from textcls.data.datasets import DataError, load_data
from textcls.data.files import load_file
from textcls.train.jobs import JobRegistry
from textcls.runtime.limits import LimitError, Limits
from textcls.train.pipeline import tokenizer_config_for, train_from_spec
from textcls.records import StepEvent
from textcls.models.registry import get_entry, make_config

REPO = Path(__file__).resolve().parents[1]


def test_every_limit_is_described_and_the_upload_limit_matches_the_server_config():
    rows = L.describe(Limits())
    assert [r[0] for r in rows] == [f.name for f in dataclasses.fields(Limits)]
    assert all(isinstance(v, int) and v >= 1 and len(h) > 20 for _, v, h in rows)
    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == Limits().max_upload_mb


def test_the_environment_overrides_a_limit_and_a_bad_value_is_ignored(monkeypatch):
    monkeypatch.setenv("TEXTCLS_MAX_PARAMETERS", "1234")
    monkeypatch.setenv("TEXTCLS_MAX_FILE_MB", "lots")
    monkeypatch.setenv("TEXTCLS_MAX_JOBS", "0")
    lim = L.current()
    assert lim.max_parameters == 1234 and lim.max_file_mb == Limits().max_file_mb and lim.max_jobs == Limits().max_jobs


@pytest.mark.parametrize("name", textcls.list_models())
def test_parameters_counted_on_the_meta_device_equal_the_built_model(name):
    config = make_config(name, preset="small" if "small" in get_entry(name).presets else None,
                         vocab_size=300, num_labels=3)
    built = sum(p.numel() for p in get_entry(name).cls(config).parameters())
    assert sizing.count_parameters(get_entry(name).cls, config) == built
    skeleton = sizing.meta_model(get_entry(name).cls, config)
    assert all(p.device.type == "meta" for p in skeleton.parameters())
    real = get_entry(name).cls(config).state_dict()
    assert {k: (tuple(v.shape), v.dtype) for k, v in skeleton.state_dict().items()} == \
        {k: (tuple(v.shape), v.dtype) for k, v in real.items()}


def test_a_meta_build_imports_neither_dynamo_nor_sympy_and_leaves_other_threads_alone():
    """Listing checkpoints in full builds each model on the meta device; torch's Python references for random
    init and arithmetic would import torch._dynamo and sympy (seconds on the first page that lists them). In a
    fresh process: every model builds without them. A model built in another thread meanwhile is initialised."""
    import subprocess
    import sys
    code = ("import sys, textcls\n"
            "from textcls.runtime import sizing\n"
            "from textcls.models.registry import get_entry, make_config\n"
            "for n in textcls.list_models():\n"
            "    sizing.meta_model(get_entry(n).cls, make_config(n, vocab_size=300, num_labels=3))\n"
            "print(sorted(m for m in ('torch._dynamo', 'sympy') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
    built = {}
    started, release = threading.Event(), threading.Event()

    def other():
        started.set()
        release.wait(10)
        torch.manual_seed(0)
        built["w"] = torch.nn.Linear(8, 8).weight.detach().clone()
    t = threading.Thread(target=other)
    t.start()
    started.wait(10)
    with torch.device("meta"), sizing._NoRandomInit():
        release.set()
        t.join(10)
        assert torch.randn(3).is_meta
    torch.manual_seed(0)
    assert torch.equal(built["w"], torch.nn.Linear(8, 8).weight) and built["w"].abs().sum() > 0


def test_a_billion_parameter_config_is_refused_without_allocating_it():
    config = make_config("kim_cnn", vocab_size=20_000, num_labels=2, n_filters=400_000)
    t = time.perf_counter()
    n = sizing.count_parameters(get_entry("kim_cnn").cls, config)
    assert n > 10**9 and time.perf_counter() - t < 30       # shapes only (a real build takes ~6 GB)
    with pytest.raises(LimitError, match="--max-parameters"):
        L.check_parameters(n, Limits())
    L.check_parameters(n, Limits(max_parameters=n))


@pytest.mark.parametrize("name", textcls.list_models())
def test_the_training_memory_estimate_is_close_to_what_autograd_saves(name):
    """The probe (three short lengths, a quadratic fit) against the bytes actually saved for a real batch."""
    torch.manual_seed(0)
    net = textcls.create_model(name, vocab_size=200, num_labels=2,
                               preset="small" if "small" in get_entry(name).presets else None)
    tok = tokenizer_config_for(net.config, get_entry(name).input_kind, None)
    hier = tok.hierarchical
    n = min(120, getattr(net.config, "position_limit", None) or 120)
    longest = {"max_sentences": 4, "max_words": 40} if hier else {"max_len": n}
    est = sizing.training_bytes(net, 6, dataclasses.replace(tok, **longest))
    shape = (6, 4, 40) if hier else (6, n)
    actual = sizing._saved_bytes(net.train(), torch.randint(2, 200, shape), torch.ones(shape, dtype=torch.bool))
    assert est["parameters"] == sum(p.numel() for p in net.parameters())
    assert est["weights_and_optimiser"] == 16 * est["parameters"]
    assert 0.8 * actual <= est["activations"] <= 3.5 * actual, (est["activations"], actual)


def test_training_over_the_memory_limit_stops_before_the_first_step(bundled_data):
    steps = []
    with pytest.raises(LimitError, match="training would need about"):
        train_from_spec("sst2", "kim_cnn", embeddings="random", epochs=1, data_root=bundled_data,
                        limit=200, callbacks=[steps.append], limits=Limits(max_train_memory_mb=1))
    assert steps == []
    with pytest.raises(LimitError, match="parameters"):
        train_from_spec("sst2", "kim_cnn", embeddings="random", epochs=1, data_root=bundled_data, limit=200,
                        overrides={"n_filters": 400_000}, callbacks=[steps.append])
    assert steps == []


def test_cli_limits_exit_2_and_the_flags_change_them(bundled_data, tmp_path, capsys):
    base = ["train", "--model", "kim_cnn", "--data", "sst2", "--data-root", str(bundled_data), "--epochs", "1",
            "--limit", "100", "--embeddings", "random", "--quiet", "--out", str(tmp_path / "ck")]
    assert main(base + ["--set", "n_filters=400000"]) == 2
    err = capsys.readouterr().err
    assert "parameters" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert main(base + ["--preset", "small", "--max-parameters", "1000"]) == 2
    assert "over the limit of 1,000 parameters" in capsys.readouterr().err
    assert main(base + ["--max-train-memory-mb", "1"]) == 2
    assert "training would need" in capsys.readouterr().err
    assert not (tmp_path / "ck").exists()
    assert main(["limits", "--json"]) == 0
    assert '"max_parameters"' in capsys.readouterr().out


def test_a_data_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path, monkeypatch, capsys):
    f = tmp_path / "big.csv"
    f.write_text("text,label\n" + "".join(f"some words number {i},{i % 2}\n" for i in range(60_000)))
    assert f.stat().st_size > 2**20
    monkeypatch.setenv("TEXTCLS_MAX_FILE_MB", "1")
    with pytest.raises(DataError, match="over the 1 MB limit"):
        load_file(f)
    assert main(["train", "--model", "kim_cnn", "--data", str(f), "--epochs", "1", "--quiet",
                 "--out", str(tmp_path / "ck")]) == 2
    assert "--max-file-mb" in capsys.readouterr().err
    monkeypatch.delenv("TEXTCLS_MAX_FILE_MB")
    assert len(load_data(str(f)).splits["train"]) > 40_000


# ---------------------------------------------------------------- jobs


def fake_runner(seen: dict, seconds: float = 30.0):
    """A stand-in for train_from_spec: emits a step event every 10 ms until stopped (or `seconds` pass)."""
    def run(callbacks, stop_event, **kwargs):
        seen["nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        seen["threads"] = torch.get_num_threads()
        seen["limits"] = kwargs.get("limits")
        t0, step = time.time(), 0
        while not stop_event.is_set() and time.time() - t0 < seconds:
            step += 1
            for cb in callbacks:
                cb(StepEvent(epoch=1, step=step, total_steps=10**6, loss=0.5, lr=1e-3, elapsed=time.time() - t0))
            time.sleep(0.01)
        raise RuntimeError("stopped" if stop_event.is_set() else "ran out")
    return run


def test_a_job_runs_on_its_thread_budget_at_lower_priority_with_the_job_memory_cap(tmp_path):
    seen: dict = {}
    reg = JobRegistry(limits=Limits(job_max_seconds=1, job_threads=1, job_max_memory_mb=700))
    jid = reg.submit(runner=fake_runner(seen), data="x", model="kim_cnn", out=tmp_path / "a")
    job = reg.get(jid)
    assert job.wait(60)
    s = job.snapshot()
    assert s.stopped_by == "time budget" and s.peak_rss_mb and s.peak_rss_mb > 10
    assert seen["threads"] == 1
    if hasattr(os, "getpriority") and Path("/proc").is_dir():
        assert seen["nice"] >= 10
    assert seen["limits"].max_train_memory_mb == 700


def test_the_server_memory_budget_stops_running_jobs(tmp_path):
    seen: dict = {}
    reg = JobRegistry(limits=Limits(server_max_memory_mb=1))
    jid = reg.submit(runner=fake_runner(seen), data="x", model="kim_cnn", out=tmp_path / "a")
    assert reg.get(jid).wait(60)
    assert reg.snapshot(jid).stopped_by == "memory budget"


def test_only_the_owner_may_stop_a_job_and_every_session_sees_it(tmp_path):
    seen: dict = {}
    reg = JobRegistry()
    jid = reg.submit(runner=fake_runner(seen, seconds=20), owner="alice", data="x", model="kim_cnn",
                     out=tmp_path / "a")
    try:
        assert jid in reg.running() and reg.snapshot(jid).owner == "alice"
        assert not reg.may_stop(jid, "bob") and reg.may_stop(jid, "alice")
        assert reg.stop(jid, by="bob") is False
        time.sleep(0.2)
        assert reg.get(jid).is_alive() and not reg.snapshot(jid).stop_requested
        assert reg.stop(jid, by="alice") is True
        assert reg.get(jid).wait(30) and reg.snapshot(jid).stopped_by == "you"
    finally:
        reg.get(jid)._stop.set()


def test_the_default_number_of_jobs_comes_from_the_limits(monkeypatch):
    assert JobRegistry().max_running == Limits().max_jobs
    monkeypatch.setenv("TEXTCLS_MAX_JOBS", "5")
    assert JobRegistry().max_running == 5


def test_a_training_process_killed_from_outside_fails_the_job_and_leaves_no_checkpoint(bundled_data, tmp_path):
    """The default isolation trains in a child process at a lower priority; the server survives its death."""
    import signal
    reg = JobRegistry()
    data = load_data("sst2", root=bundled_data, limit=400)
    gate = threading.Event()

    def first_step(event):
        if isinstance(event, StepEvent) and event.step == 1:
            gate.set()
    jid = reg.submit(callbacks=[first_step], data=data, model="kim_cnn", preset="small", embeddings="random",
                     epochs=50, out=tmp_path / "k")
    job = reg.get(jid)
    assert gate.wait(120) and job.isolation == "process" and job.pid != os.getpid()
    assert os.getpriority(os.PRIO_PROCESS, job.pid) >= 10
    os.kill(job.pid, signal.SIGKILL)
    assert job.wait(60)
    s = job.snapshot()
    assert s.status == "failed" and "ended unexpectedly" in s.error and "exit code -9" in s.error
    assert not (tmp_path / "k").exists() and not list(tmp_path.glob(".k.*"))


def test_a_run_over_the_job_memory_budget_fails_before_training(bundled_data, tmp_path):
    reg = JobRegistry(limits=Limits(job_max_memory_mb=1))
    jid = reg.submit(data="sst2", data_root=bundled_data, limit=200, model="kim_cnn", embeddings="random",
                     epochs=1, out=tmp_path / "m")
    assert reg.get(jid).wait(120)
    s = reg.snapshot(jid)
    assert s.status == "failed" and "LimitError" in s.error and "over the limit of 1 MB" in s.error
    assert s.step == 0 and not (tmp_path / "m").exists()
