"""textcls.experiments reproduction (papers, cells, results, reproduce): the cells and their paper figures, an
end-to-end tiny run, resuming, the CLI."""
import json
import re
from pathlib import Path

import pytest

from textcls.experiments.cells import SUITES, Cell, all_cells, select_cells
from textcls.experiments.papers import ACT_TABLE2, AGCNN_TABLE3, LAMA_IMDB, MATTON_SST5
from textcls.experiments.reproduce import reproduce
from textcls.experiments.results import gap_line, load_results, save_results, summarize, table_rows
from textcls.cli import main

FIGURES = Path(__file__).resolve().parents[1] / "docs" / "figures.md"


def test_suites_build_with_unique_keys_and_known_models():
    import textcls
    cells = all_cells(SUITES)
    keys = [c.key for c in cells]
    assert len(keys) == len(set(keys))
    assert set(textcls.list_models()) >= {c.model for c in cells}
    assert {c.suite for c in cells} == set(SUITES)
    for c in cells:
        assert c.key.startswith(c.suite + "/") and c.key.endswith("/" + c.data)
        assert c.runs >= 1 and c.epochs >= 1 and c.metric_split in ("dev", "test")
        assert c.gaps or c.embeddings == "random", f"{c.key} has no gap explanation"
    assert "smoke" not in {c.suite for c in all_cells()}    # the default run leaves the smoke test out
    with pytest.raises(ValueError, match="unknown suite"):
        all_cells(["nope"])


def test_agcnn_grid_is_complete():
    cells = select_cells(["agcnn_t3"])
    assert len(cells) == 9 * 7
    assert {c.data for c in cells} == {"mr", "subj", "sst5", "sst5_phrases", "sst2", "sst2_phrases", "trec"}
    by = {(c.setting, c.data): c for c in cells}
    assert by[("CNN-non-static", "trec")].paper == 93.6
    assert by[("AGCNN-NLReLU-static", "sst2_phrases")].paper == 87.2
    assert by[("AGCNN-SELU-rand", "sst5_phrases")].paper == 44.7
    rand = by[("CNN-rand", "mr")]
    assert rand.embeddings == "random" and rand.overrides["embedding_mode"] == "rand"
    assert any("10-fold" in g for g in rand.gaps)
    assert any("sentences" in g for g in by[("CNN-static", "sst2")].gaps)
    assert by[("AGCNN-SELU-static", "subj")].overrides == {"activation": "selu", "embedding_mode": "static"}


def test_act_cells_say_mini_and_average_five_runs():
    for c in select_cells(["act_mini"]):
        assert c.runs == 5 and c.data.endswith("_mini")
        assert any("NOT the benchmark" in g for g in c.gaps)
        assert "not comparable" in c.paper_note
    abl = select_cells(["act_ablation"])
    assert {c.variant for c in abl} == {None, "no_attentive_conv", "single_head", "no_global_rep", "no_position"}
    assert all(c.metric_split == "dev" for c in abl)


@pytest.mark.skipif(not FIGURES.is_file(), reason="docs/figures.md not found")
def test_paper_figures_are_transcribed_from_figures_md():
    text = FIGURES.read_text(encoding="utf-8")
    models_md = FIGURES.with_name("models.md")
    if models_md.is_file():   # the ACT Transformer baseline's figures are in models.md
        text += "\n" + models_md.read_text(encoding="utf-8")
    flat = re.sub(r"\s+", " ", text)
    for row, values in AGCNN_TABLE3.items():
        emb = row.rsplit("-", 1)[-1] if not row.endswith("non-static") else "non-static"
        nums = " / ".join(f"{v:.1f}" for v in values)
        # figures.md writes e.g. "AGCNN-SELU-rand 82.3 / ..." or "-static 86.4 / ..." after the first of a family
        assert f"{row} {nums}" in flat or f"-{emb} {nums}" in flat, (row, nums)
    for p, v in MATTON_SST5.items():
        assert f"{v}" in flat
    for v in list(LAMA_IMDB.values()) + list(ACT_TABLE2.values()):
        assert f"{v}" in flat


def test_select_cells_filters():
    cells = select_cells(["agcnn_t3"], data=["trec", "sst2"],
                           only=["agcnn_t3/cnn-non-static/*", "agcnn_t3/agcnn-nlrelu-non-static/*"])
    assert sorted(c.key for c in cells) == sorted([
        "agcnn_t3/cnn-non-static/trec", "agcnn_t3/agcnn-nlrelu-non-static/trec",
        "agcnn_t3/cnn-non-static/sst2", "agcnn_t3/agcnn-nlrelu-non-static/sst2"])
    assert {c.model for c in select_cells(["lama_imdb"], models=["lama"])} == {"lama"}


def _run(tmp_path, bundled_data, **kw):
    log = []
    res = reproduce(select_cells(["smoke"]), out=tmp_path / "results.json", limit=30, data_root=bundled_data,
                    log=log.append, **kw)
    return res, log


def test_tiny_suite_end_to_end_then_resume(tmp_path, bundled_data):
    res, log = _run(tmp_path, bundled_data)
    out, md = tmp_path / "results.json", tmp_path / "results.md"
    assert out.is_file() and md.is_file()
    stored = json.loads(out.read_text())
    assert set(stored["cells"]) == {"smoke/cnn-rand/trec", "smoke/agcnn-nlrelu-rand/trec"}
    for entry in stored["cells"].values():
        (run,) = entry["runs"]
        assert run["seed"] == 0 and 0.0 <= run["accuracy"] <= 1.0 and run["n"]["test"] == 30
        assert run["signature"]["limit"] == 30 and run["signature"]["epochs"] == 1
        assert len(run["loadavg_end"]) == 3 and run["torch_threads"] >= 1
        assert entry["cell"]["paper"] in (91.2, 92.5)
        assert run["device"] == "cpu" and run["world_size"] == 1 and run["amp"] == "off"
    text = md.read_text()
    assert "| CNN-rand | trec (TREC) |" in text and "| 91.2 |" in text
    assert "--limit 30" in text and "binomial s.e." in text and "SMOKE TEST" in text
    assert "| measured on |" in text and "| cpu |" in text
    assert "`act_full` (full benchmarks, needs GPUs): 6 of 6 cells" in text
    assert "## Not run yet" in text and "`agcnn_t3`: 63 of 63 cells" in text
    assert stored["sessions"][-1]["ran"] == 2

    # resuming: nothing to do, nothing changed
    before = out.read_text()
    res2, log2 = _run(tmp_path, bundled_data)
    assert log2[0].startswith("0 run(s) to do, 2 already")
    assert json.loads(out.read_text())["cells"] == json.loads(before)["cells"]
    assert len(res2["sessions"]) == 1       # a session that ran nothing is not recorded

    # a second seed is added beside the first; changed settings replace stale runs
    res3, log3 = _run(tmp_path, bundled_data, runs=2)
    assert log3[0].startswith("2 run(s) to do, 2 already")
    assert res3["sessions"][-1]["skipped"] == 2 and res3["sessions"][-1]["ran"] == 2
    runs = res3["cells"]["smoke/cnn-rand/trec"]["runs"]
    assert [r["seed"] for r in runs] == [0, 1]
    assert runs[0] == json.loads(before)["cells"]["smoke/cnn-rand/trec"]["runs"][0]
    rows = {r["key"]: r for r in table_rows(res3)}
    assert rows["smoke/cnn-rand/trec"]["runs"] == 2 and rows["smoke/cnn-rand/trec"]["sd"] is not None
    assert "(2 runs)" in (tmp_path / "results.md").read_text()
    res4, log4 = _run(tmp_path, bundled_data, epochs=2)
    assert log4[0].startswith("2 run(s) to do, 0 already")
    assert [r["signature"]["epochs"] for r in res4["cells"]["smoke/cnn-rand/trec"]["runs"]] == [2]


def test_a_failing_cell_is_recorded_and_the_others_run(tmp_path, bundled_data):
    good = select_cells(["smoke"], models=["kim_cnn"])[0]
    bad = Cell(suite="smoke", table="Smoke test (not a reproduction)", setting="broken", data="no_such_data",
                 model="kim_cnn", preset="small", embeddings="random", epochs=1, gaps=("test",))
    log = []
    res = reproduce([bad, good], out=tmp_path / "r.json", limit=20, data_root=bundled_data, log=log.append)
    assert list(res["cells"]) == [good.key]
    assert len(res["sessions"][-1]["failed"]) == 1 and "no_such_data" in res["sessions"][-1]["failed"][0]
    assert any("FAILED" in m for m in log)


def test_a_run_written_meanwhile_by_another_process_is_kept(tmp_path, bundled_data):
    """Two `reproduce` processes may share one results file: each re-reads it under a lock before writing."""
    good = select_cells(["smoke"], models=["kim_cnn"])[0]
    twin = select_cells(["smoke"], models=["agcnn"])[0]
    out = tmp_path / "r.json"
    other = {"cell": {**twin.to_dict(), "order": 1},
             "runs": [{"seed": 0, "accuracy": 0.5, "signature": twin.signature(1, 20), "n": {"test": 20},
                       "epochs_run": 1}]}

    def meanwhile(event):   # the first training step: another process stores its own cell and session
        if not (tmp_path / "done").exists():
            (tmp_path / "done").touch()
            res = load_results(out)
            res["cells"][twin.key] = other
            res["sessions"].append({"id": "other", "ran": 1})
            save_results(res, out)

    res = reproduce([good], out=out, limit=20, data_root=bundled_data, log=lambda m: None, callbacks=[meanwhile])
    stored = json.loads(out.read_text())
    assert set(stored["cells"]) == {good.key, twin.key} and stored["cells"][twin.key] == other
    assert [x["id"] for x in stored["sessions"]][0] == "other" and stored["sessions"][-1]["ran"] == 1
    assert res["cells"].keys() == stored["cells"].keys()


def test_summarize_and_gap_line():
    cell = select_cells(["agcnn_t3"], data=["mr"], only=["*/cnn-static/*"])[0]
    sig = cell.signature(3, None)
    entry = {"cell": cell.to_dict(), "runs": [
        {"seed": 0, "accuracy": 0.80, "n": {"test": 1066}, "signature": sig, "epochs_run": 3},
        {"seed": 1, "accuracy": 0.78, "n": {"test": 1066}, "signature": sig, "epochs_run": 2}]}
    s = summarize(entry)
    assert s["mean"] == pytest.approx(79.0) and s["sd"] == pytest.approx(1.41421, rel=1e-4)
    assert s["delta"] == pytest.approx(79.0 - 81.0)
    line = gap_line(entry)
    assert "50-d GloVe" in line and "10-fold" in line and "3 CPU epoch(s), stopped early after 2/3" in line


def test_load_results_rejects_a_corrupt_file(tmp_path):
    p = tmp_path / "r.json"
    assert load_results(p)["cells"] == {}
    p.write_text("{not json")
    with pytest.raises(ValueError, match="cannot read"):
        load_results(p)
    p.write_text("[]")
    with pytest.raises(ValueError, match="not a textcls results file"):
        load_results(p)


def test_cli_reproduce(tmp_path, bundled_data, capsys):
    out = tmp_path / "r.json"
    args = ["reproduce", "--suite", "smoke", "--model", "kim_cnn", "--limit", "20", "--out", str(out),
            "--data-root", str(bundled_data)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "smoke/cnn-rand/trec" in printed and "paper  91.2" in printed
    assert out.is_file() and out.with_suffix(".md").is_file()
    assert main(args + ["--list"]) == 0
    assert "smoke/cnn-rand/trec" in capsys.readouterr().out
    out.with_suffix(".md").unlink()
    assert main(["reproduce", "--out", str(out), "--report"]) == 0 and out.with_suffix(".md").is_file()
    assert main(["reproduce", "--suite", "nope", "--out", str(out)]) == 2
    assert main(["reproduce", "--suite", "smoke", "--data", "imdb", "--out", str(out)]) == 2  # no cell matches
    assert main(["reproduce", "--epochs", "0", "--out", str(out)]) == 2
    out.write_text("{broken")
    assert main(args) == 2
    assert "cannot read the results file" in capsys.readouterr().err


def test_full_benchmark_suites_are_defined_for_gpus():
    from textcls.experiments.cells import DEFAULT_SUITES, GPU_SUITES
    full = select_cells(["act_full"])
    assert {(c.model, c.data) for c in full} == {(m, d) for m in ("act", "transformer")
                                                 for d in ("ag_news", "dbpedia", "yelp_f")}
    assert all(c.runs == 5 and c.source.startswith("hf:") and c.needs_gpu for c in full)
    assert {c.source for c in full} == {"hf:fancyzhx/ag_news", "hf:fancyzhx/dbpedia_14", "hf:Yelp/yelp_review_full"}
    assert next(c for c in full if c.data == "dbpedia").text_column == "content"
    assert {c.paper for c in full if c.model == "act"} == {94.25, 99.19, 68.16}
    hcan = select_cells(["hcan_yelp"])
    assert {c.model for c in hcan} == {"hcan", "kim_cnn"} and all(c.source == "hf:Yelp/yelp_review_full" for c in hcan)
    assert set(GPU_SUITES) == {"act_full", "hcan_yelp"} and not set(GPU_SUITES) & set(DEFAULT_SUITES)
    assert "source" in full[0].signature(5, None)
    assert "source" not in select_cells(["smoke"])[0].signature(1, None)   # older cells keep their signature


def test_measured_on_says_device_world_size_and_amp():
    from textcls.experiments.results import measured_on
    assert measured_on([{"seed": 0}]) == "cpu"
    assert measured_on([{"device": "cpu", "device_name": "cpu (2 threads)", "world_size": 2}]) == "cpu x 2"
    assert measured_on([{"device": "cuda:0", "device_name": "cuda:0 (NVIDIA H100)", "world_size": 8,
                         "amp": "bf16"}]) == "cuda:0 (NVIDIA H100) x 8, bf16"
