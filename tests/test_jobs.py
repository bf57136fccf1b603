"""Background training jobs: done / stopped / crashed / diverged runs, two at once, the registry's limits."""
from __future__ import annotations

import json
import os
import threading

import numpy as np
import pytest

from textcls.checkpoint import load_checkpoint, load_history
from textcls.data.datasets import DataError, load_data
from textcls.records import EpochEvent, StepEvent
from textcls.data.files import file_columns
from textcls.train.jobs import JobError, JobRegistry

TIMEOUT = 120


@pytest.fixture(scope="module")
def tiny(bundled_data):
    return load_data("sst2", root=bundled_data, limit=160)


def spec(tiny, out, **kw):
    base = dict(data=tiny, model="kim_cnn", preset="small", embeddings="random", epochs=2, out=out,
                train_overrides={"batch_size": 32}, seed=0)
    base.update(kw)
    return base


def finish(reg, job_id):
    job = reg.get(job_id)
    assert job.wait(TIMEOUT), "job did not finish in time"
    return job.snapshot()


def test_job_runs_in_background_and_saves(tiny, tmp_path):
    reg = JobRegistry()
    main = threading.get_ident()
    threads = set()
    jid = reg.submit(callbacks=[lambda e: threads.add(threading.get_ident())], **spec(tiny, tmp_path / "a"))
    s = finish(reg, jid)
    assert s.status == "done", s.error
    assert main not in threads and len(threads) == 1             # trained in its own thread
    steps, epochs = s.step_events(), s.epoch_events()
    assert len(epochs) == 2 and [e["epoch"] for e in epochs] == [1, 2]
    assert len(steps) == s.total_steps == 2 * int(np.ceil(len(tiny.splits["train"]) / 32))
    assert all(np.isfinite(e["loss"]) for e in steps)
    assert s.fraction == 1.0 and s.epoch == 2 and s.dev_accuracy == epochs[-1]["dev_accuracy"]
    assert s.path == str(tmp_path / "a") and "test" in s.metrics and "saved" in s.message
    p = load_checkpoint(s.path)
    assert p.labels == tiny.labels
    assert len(load_history(s.path).epochs) == 2


def test_two_jobs_at_once_both_finish(tiny, tmp_path):
    reg = JobRegistry(max_running=2)
    started = threading.Barrier(2, timeout=TIMEOUT)

    def meet(event):                                            # both jobs are inside fit at the same time
        if isinstance(event, StepEvent) and event.step == 1:
            started.wait()
    a = reg.submit(callbacks=[meet], **spec(tiny, tmp_path / "a"))
    b = reg.submit(callbacks=[meet], **spec(tiny, tmp_path / "b", model="agcnn", epochs=1))
    assert set(reg.running()) <= {a, b}
    sa, sb = finish(reg, a), finish(reg, b)
    assert (sa.status, sb.status) == ("done", "done"), (sa.error, sb.error)
    assert len(sa.epoch_events()) == 2 and len(sb.epoch_events()) == 1
    assert load_checkpoint(sa.path).model.registry_name == "kim_cnn"
    assert load_checkpoint(sb.path).model.registry_name == "agcnn"


def test_stop_keeps_the_best_weights_so_far(tiny, tmp_path):
    reg = JobRegistry()
    holder: dict = {}

    def stop_after_two(event):
        if isinstance(event, EpochEvent) and event.epoch == 2:
            reg.stop(holder["id"])
    holder["id"] = jid = reg.submit(callbacks=[stop_after_two], **spec(tiny, tmp_path / "s", epochs=6))
    s = finish(reg, jid)
    assert s.status == "stopped" and s.stop_requested
    assert len(s.epoch_events()) == 2 and s.best_epoch in (1, 2)
    assert "Stopped by you after 2" in s.message
    cfg = json.loads((tmp_path / "s" / "config.json").read_text())
    assert "test" not in cfg["metrics"]                           # a stopped run is not tested
    # the saved weights are those of the best dev epoch
    from textcls.analysis.metrics import evaluate
    rep = evaluate(load_checkpoint(tmp_path / "s"), tiny.splits["dev"])
    assert rep["accuracy"] == pytest.approx(s.best_dev_accuracy)


def test_crash_ends_with_a_message_and_keeps_what_was_saved(tiny, tmp_path):
    reg = JobRegistry()
    first = finish(reg, reg.submit(**spec(tiny, tmp_path / "c", epochs=1)))
    assert first.status == "done"
    before = {f: os.stat(tmp_path / "c" / f).st_mtime_ns for f in ("config.json", "model.safetensors")}

    def boom(event):
        if isinstance(event, StepEvent) and event.step == 3:
            raise RuntimeError("simulated crash")
    s = finish(reg, reg.submit(callbacks=[boom], **spec(tiny, tmp_path / "c", epochs=2)))
    assert s.status == "failed" and "simulated crash" in s.error and "RuntimeError" in s.error
    assert "unchanged" in s.message and s.path is None and "boom" in s.traceback
    after = {f: os.stat(tmp_path / "c" / f).st_mtime_ns for f in ("config.json", "model.safetensors")}
    assert after == before
    load_checkpoint(tmp_path / "c")                               # still a valid checkpoint


def test_bad_data_fails_with_the_data_error(tmp_path):
    reg = JobRegistry()
    s = finish(reg, reg.submit(data=str(tmp_path / "missing.csv"), model="kim_cnn", preset="small",
                               embeddings="random", epochs=1, out=tmp_path / "x"))
    assert s.status == "failed" and "DataError" in s.error and "missing.csv" in s.error
    assert not (tmp_path / "x").exists()


def test_nan_loss_ends_the_run_as_failed_with_a_reason(tiny, tmp_path):
    reg = JobRegistry()
    s = finish(reg, reg.submit(**spec(tiny, tmp_path / "n", epochs=2,
                                      train_overrides={"optimizer": "sgd", "lr": 1e30, "momentum": 0.0})))
    assert s.status == "failed" and "diverged" in s.error and "non-finite" in s.error
    # it diverged in its first epoch: nothing trained, so nothing saved (issue 55: it was saved, listed and served)
    assert s.path is None and "Nothing was saved" in s.message and "first epoch" in s.message
    assert not (tmp_path / "n").exists()


def test_a_run_that_diverges_after_an_epoch_keeps_that_epoch(tiny, tmp_path):
    """A divergence after a completed epoch (here: NaN weights once epoch 1 is done) keeps that epoch's weights."""
    reg = JobRegistry()

    def nan_in_epoch_two(event):
        if isinstance(event, EpochEvent) and event.epoch == 1:
            import torch
            with torch.no_grad():                                # the next step's loss is NaN
                for prm in holder["model"].parameters():
                    prm.fill_(float("nan"))
    holder: dict = {}

    def runner(callbacks, stop_event, **kw):
        from textcls.train import pipeline
        real = pipeline.fit

        def fit(net, *a, **k):
            holder["model"] = net
            return real(net, *a, **k)
        pipeline.fit = fit
        try:
            return pipeline.train_from_spec(callbacks=callbacks, stop_event=stop_event, **kw)
        finally:
            pipeline.fit = real
    s = finish(reg, reg.submit(runner=runner, callbacks=[nan_in_epoch_two], **spec(tiny, tmp_path / "e", epochs=3)))
    assert s.status == "failed" and "diverged" in s.error and s.path == str(tmp_path / "e"), (s.error, s.message)
    assert "Saved the weights of epoch 1" in s.message
    p = load_checkpoint(tmp_path / "e")                          # the weights of the completed epoch, all finite
    for t in p.model.state_dict().values():
        assert np.isfinite(t.float().numpy()).all()


def test_registry_limits_and_lookups(tiny, tmp_path):
    reg = JobRegistry(max_running=1)
    gate = threading.Event()
    jid = reg.submit(callbacks=[lambda e: gate.wait(TIMEOUT)], **spec(tiny, tmp_path / "r", epochs=1))
    try:
        with pytest.raises(JobError, match="at most 1"):
            reg.submit(**spec(tiny, tmp_path / "other"))
        reg.max_running = 2
        with pytest.raises(JobError, match="another running job"):
            reg.submit(**spec(tiny, tmp_path / "r"))
        assert reg.forget(jid) is False                            # running jobs are kept
    finally:
        gate.set()
    assert finish(reg, jid).status == "done"
    assert reg.snapshot(jid).status == "done" and reg.forget(jid) and reg.get(jid) is None
    with pytest.raises(JobError, match="output folder"):
        reg.submit(data="sst2", model="kim_cnn")


def test_file_columns(tmp_path):
    (tmp_path / "a.csv").write_text("sentence,y\nhello,1\n")
    (tmp_path / "b.tsv").write_text("t\tl\nhi\tpos\n")
    (tmp_path / "c.jsonl").write_text('{"x": "hi", "lab": "a"}\n{"x": "yo", "lab": "b", "extra": 1}\n')
    (tmp_path / "d.jsonl").write_text('{"x": "hi"}\nnot json\n')
    (tmp_path / "e.csv").write_text("")
    (tmp_path / "f.txt").write_text("x")
    assert file_columns(tmp_path / "a.csv") == ["sentence", "y"]
    assert file_columns(tmp_path / "b.tsv") == ["t", "l"]
    assert file_columns(tmp_path / "c.jsonl") == ["x", "lab", "extra"]
    with pytest.raises(DataError, match="line 2"):
        file_columns(tmp_path / "d.jsonl")
    with pytest.raises(DataError, match="empty"):
        file_columns(tmp_path / "e.csv")
    with pytest.raises(DataError, match="unknown file type"):
        file_columns(tmp_path / "f.txt")
