"""textcls.experiments benchmarks (specs, measure, paper_bench, bench, latency, background) and their figures in
textcls.viz: parameter counts, the per-model table, ACT Table 5, LAMA Fig. 4, memory, checkpoints, latency, CLI."""
import json
import time

import pytest
import torch

import textcls
from textcls import viz
from textcls.experiments import background, bench, latency, measure, paper_bench, specs
from textcls.cli import main
from textcls.models.lama import attention_parameter_count

SMALL = dict(quick=True, preset="small", seq_len=9, batch_size=3, train_batch_size=2, epoch_examples=10,
             vocab_size=50, act_t5=False, lama=False, checkpoints=None, memory=False)


def test_parameter_counts_agree_with_num_parameters():
    for spec in specs.default_models("small"):
        model = specs.build(spec, vocab_size=50, num_labels=3)
        counts = specs.parameter_counts(model)
        assert counts["without_embeddings"] == model.num_parameters(), spec.label
        assert counts["total"] == model.num_parameters(include_embeddings=True), spec.label
        emb = sum(p.numel() for p in model.embed.parameters())
        assert counts["embeddings"] == emb > 0, spec.label
        assert counts["total"] == sum(p.numel() for p in model.parameters())


def test_default_models_cover_every_registered_model_and_the_papers_pairs():
    rows = specs.default_models()
    assert {s.model for s in rows} == set(textcls.list_models())
    assert any(s.model == "transformer" and s.preset == "act_baseline" for s in rows)
    assert any(s.model == "lama" and s.variant == "ctx" for s in rows)
    assert len({s.label for s in rows}) == len(rows)
    small = specs.default_models("small")
    assert all(s.preset in ("small", "act_baseline") for s in small)


def test_run_bench_table_has_every_model():
    result = bench.run_bench(**SMALL)
    labels = [r["label"] for r in result["models"]]
    assert labels == [s.label for s in specs.default_models("small")]
    for r in result["models"]:
        assert r["seconds_per_batch"] > 0 and r["ms_per_sentence"] > 0
        assert r["seconds_per_epoch"] == pytest.approx(r["train_step"]["median"] * 5)  # ceil(10 / 2) steps
        assert r["inference_batch"]["repeats"] == bench.QUICK["repeats"]
    env = result["environment"]
    assert env["torch_threads"] == torch.get_num_threads() and len(env["loadavg"]) == 3
    text = bench.format_report(result)
    for label in labels:
        assert label in text
    assert "load average" in text
    json.dumps(result)  # JSON-able
    rows = bench.model_rows(result)
    assert [r["model"] for r in rows] == labels
    fig = viz.models_figure(rows, batch_size=3, caption=measure.load_note(env))   # plain rows, no experiments
    assert list(fig.table["model"]) == labels and "load average" in fig.caption


def test_accuracy_figure_from_plain_rows():
    rows = [{"suite": "smoke", "key": "smoke/a/trec", "setting": "a <b>", "data": "trec", "ours": 90.0, "sd": None,
             "se": 1.2, "paper": 91.2, "delta": -1.2},
            {"suite": "smoke", "key": "smoke/b/trec", "setting": "b", "data": "trec", "ours": 92.0, "sd": 0.5,
             "se": None, "paper": 92.5, "delta": -0.5}]
    fig = viz.accuracy_figure(rows, "Smoke: ours vs the paper")
    assert fig.key == "accuracy-smoke" and len(fig.table) == 2
    assert list(fig.fig.data[0].error_x.array) == [1.2, 0.5]              # horizontal bars, one row per cell
    assert "&lt;b&gt;" in fig.fig.data[0].y[0]                         # user text is escaped


def test_the_cli_parser_does_not_import_torch():
    import subprocess
    import sys
    code = "import sys\nfrom textcls.cli import build_parser\nbuild_parser()\nassert 'torch' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0


def test_run_bench_rejects_unknown_models():
    with pytest.raises(ValueError, match="unknown model"):
        bench.run_bench(**{**SMALL, "models": ["kim_cnn", "nope"]})


def test_make_inputs_shapes():
    ids, mask = specs.make_inputs("tokens", 4, 10, 30)
    assert ids.shape == mask.shape == (4, 10) and mask.all() and ids.min() >= 2
    ids, mask = specs.make_inputs("sentences", 2, 30, 30, words_per_sentence=14)
    assert ids.shape == (2, 3, 14)
    assert int(mask.sum()) == 2 * 30                      # exactly seq_len real tokens per text
    assert (ids[~mask] == 0).all()
    with pytest.raises(ValueError):
        specs.make_inputs("tokens", 0, 10, 30)


def test_act_table5_counts_match_the_paper():
    t5 = paper_bench.act_table5(seq_len=6, batch_size=2, warmup=0, repeats=1)
    rows = {r["key"]: r for r in t5["rows"]}
    assert abs(rows["act"]["parameters"] - 1.49e6) / 1.49e6 < 0.03
    assert abs(rows["transformer"]["parameters"] - 3.38e6) / 3.38e6 < 0.03
    assert rows["act"]["parameters_paper"] == 1.49e6 and rows["transformer"]["seconds_per_batch_paper"] == 0.19
    assert t5["speed_ratio"] == pytest.approx(rows["transformer"]["seconds_per_batch"]
                                              / rows["act"]["seconds_per_batch"])
    assert t5["speed_ratio_paper"] == pytest.approx(2.714, abs=1e-3)
    fig = viz.act_t5_figure(t5)
    assert len(fig.table) == 2 and "paper" in fig.caption


def test_lama_f4_modules_match_the_formulas():
    f4 = paper_bench.lama_f4(heads=(1, 3, 10))
    assert f4["lama"] == f4["formula"]["lama"]
    assert f4["san"] == f4["formula"]["san"]
    assert f4["transformer"] == f4["formula"]["transformer"]
    w = 2 * f4["d"]
    assert [b - a for a, b in zip(f4["lama"], f4["lama_with_mlp"])] == [w * w + w] * 3
    assert f4["lama_with_mlp"] == [attention_parameter_count(m, f4["d"], "lama", include_mlp=True) for m in (1, 3, 10)]
    # LAMA grows by 2 * 2d per head, SAN by d_a, the Transformer by 4 * 2d * d_k
    assert f4["lama"][1] - f4["lama"][0] == 2 * 2 * w
    assert f4["san"][1] - f4["san"][0] == 2 * f4["d_a"]
    assert f4["transformer"][1] - f4["transformer"][0] == 2 * 4 * w * f4["d_k"]
    fig = viz.lama_f4_figure(f4)
    assert list(fig.table["heads"]) == [1, 3, 10]
    with pytest.raises(ValueError):
        paper_bench.lama_f4(heads=(0,))


def test_time_call_and_alternating():
    calls = []
    t = measure.time_call(lambda: calls.append(1), warmup=2, repeats=3)
    assert len(calls) == 5 and t["repeats"] == 3 and len(t["times"]) == 3
    assert t["min"] <= t["median"] <= t["max"]
    order = []
    alt = measure.time_alternating({"a": lambda: order.append("a"), "b": lambda: order.append("b")},
                                   warmup=1, repeats=2)
    assert order == ["a", "b"] * 3 and set(alt) == {"a", "b"}
    with pytest.raises(ValueError):
        measure.time_call(lambda: None, repeats=0)


def test_peak_memory_sees_a_large_allocation():
    def alloc():
        x = torch.ones(64 * 2 ** 20 // 4)   # 64 MiB, touched
        time.sleep(0.05)
        return float(x[0])
    m = measure.peak_memory(alloc)
    if m["method"].startswith("RSS"):
        assert m["bytes"] >= 48 * 2 ** 20, m
    else:   # ru_maxrss growth is only a lower bound
        assert m["bytes"] >= 0


def test_load_note_flags_a_loaded_machine():
    assert "DISTORTED" in measure.load_note({"loadavg": [8.0], "cpu_count": 2})
    assert "quiet" in measure.load_note({"loadavg": [0.1], "cpu_count": 2})


def test_bench_checkpoints(tmp_path, bundled_data):
    from textcls.train.pipeline import train_from_spec
    train_from_spec("trec", "kim_cnn", preset="small", embeddings="random", epochs=1, out=tmp_path / "ck" / "a",
                    data_root=bundled_data, limit=20, train_overrides={"max_steps": 1})
    (tmp_path / "ck" / "broken").mkdir()
    out = bench.bench_checkpoints(tmp_path / "ck", warmup=0, repeats=1)
    assert [c["name"] for c in out["checkpoints"]] == ["a"]
    c = out["checkpoints"][0]
    assert c["model"] == "kim_cnn" and c["predict_ms"] > 0 and c["predict_with_maps_ms"] > 0 and c["n_maps"] > 0
    assert out["n"] == 1 and out["all_predict_ms"] > 0
    assert bench.bench_checkpoints(tmp_path / "missing")["checkpoints"] == []


def test_cli_bench(tmp_path, capsys):
    out = tmp_path / "bench.json"
    rc = main(["bench", "--quick", "--models", "kim_cnn", "--seq-len", "6", "--batch-size", "2", "--no-memory",
               "--no-training", "--checkpoints", str(tmp_path / "none"), "--json", str(out)])
    printed = capsys.readouterr().out
    assert rc == 0
    assert "ACT Table 5" in printed and "kim_cnn" in printed and "speed ratio" in printed
    data = json.loads(out.read_text())
    assert [r["model"] for r in data["models"]] == ["kim_cnn"]
    assert data["act_t5"]["batch_size"] == 2 and data["lama_f4"]["heads"]
    assert main(["bench", "--models", "nope"]) == 2
    assert main(["bench", "--seq-len", "0"]) == 2
    assert "error" in capsys.readouterr().err


# ---------------------------------------------------------------- latency and the thread policy (--latency)


def _tiny_checkpoint(root, bundled_data, name="tiny-sst2"):
    from textcls.train.pipeline import train_from_spec
    train_from_spec("sst2", "kim_cnn", preset="small", embeddings="random", epochs=1, out=root / name,
                    data_root=bundled_data, limit=20, train_overrides={"max_steps": 1})
    return root


def test_busy_load_starts_and_always_stops_its_processes():
    import os
    with pytest.raises(RuntimeError):
        with background.BusyLoad(1, settle=0.05) as busy:
            pids = busy.pids
            assert len(pids) == 1 and busy.procs[0].poll() is None          # spinning
            raise RuntimeError("interrupted")
    assert busy.pids == []
    for pid in pids:                                                       # terminated and reaped
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    with background.BusyLoad(0) as none:
        assert none.pids == []
    with pytest.raises(ValueError):
        background.BusyLoad(-1)


def test_bench_latency_structure(tmp_path, bundled_data):
    root = _tiny_checkpoint(tmp_path / "ck", bundled_data)
    (root / "other-trec").mkdir()                                          # not matching the pattern
    r = latency.bench_latency(root, thread_settings=[2, 1, 1], warmup=0, repeats=1, ig_repeats=1)
    assert r["models"] == ["tiny-sst2"] and r["threads"] == [1, 2] and r["load"] == 0
    assert [(x["load"], x["threads"]) for x in r["rows"]] == [(0, 1), (0, 2)]
    for x in r["rows"]:
        assert x["torch_threads"] == x["threads"] and x["predict_ms"] > 0 and x["ig_ms"] > 0 and x["maps_ms"] > 0
        assert isinstance(x["policy"], list) and x["busy_pids"] == []
    text = latency.format_latency(r)
    assert "predict ms" in text and "IG ms" in text and "idle" in text and "tiny-sst2" in text
    json.dumps(r)
    r0 = latency.bench_latency(root, pattern="nothing-*", repeats=1)
    assert r0["models"] == [] and r0["rows"] == [] and "No checkpoint" in latency.format_latency(r0)
    with pytest.raises(ValueError):
        latency.bench_latency(root, load=-1)


def test_cli_bench_latency(tmp_path, capsys, bundled_data):
    root = _tiny_checkpoint(tmp_path / "ck", bundled_data)
    out = tmp_path / "lat.json"
    rc = main(["bench", "--latency", "--quick", "--no-ig", "--checkpoints", str(root), "--latency-threads", "1",
               "--json", str(out)])
    printed = capsys.readouterr().out
    assert rc == 0 and "predict ms" in printed and "thread policy" in printed
    data = json.loads(out.read_text())
    assert [(x["load"], x["threads"]) for x in data["rows"]] == [(0, 1)] and "ig_ms" not in data["rows"][0]
    assert main(["bench", "--latency", "--load", "-1", "--checkpoints", str(root)]) == 2
    assert main(["bench", "--latency", "--latency-threads", "0", "--checkpoints", str(root)]) == 2
    assert main(["bench", "--latency", "--checkpoints", str(tmp_path / "missing")]) == 2
    assert main(["bench", "--load", "2"]) == 2                              # --load needs --latency
    assert "error" in capsys.readouterr().err


def test_bench_checkpoints_times_a_relation_checkpoint_with_tagged_entities(tmp_path):
    """A relation checkpoint refuses a sentence without <e1>..</e2>: the checkpoint timing gives it a tagged one
    (the whole `bench` stopped with 'missing entity marker(s)' once relation checkpoints shipped)."""
    import shutil
    from pathlib import Path
    from textcls.experiments.bench import bench_checkpoints
    src = Path(__file__).resolve().parents[1] / "checkpoints" / "act-semeval2010"
    shutil.copytree(src, tmp_path / "act-semeval2010")
    out = bench_checkpoints(tmp_path, repeats=1)
    (row,) = out["checkpoints"]
    assert row["predict_ms"] > 0 and "<e1>" in row["sentence"] and not out["errors"]
