"""The Benchmarks page (Streamlit AppTest): stored tables and figures, missing files, the re-measure button."""
import json
from pathlib import Path

import pytest

from textcls.experiments import bench
from textcls.experiments.cells import select_cells
from textcls.experiments.reproduce import reproduce

from app_pages import open_page

PAGE = "pages/benchmarks.py"


@pytest.fixture(scope="module")
def stored(tmp_path_factory, bundled_data):
    d = tmp_path_factory.mktemp("bench_page")
    reproduce(select_cells(["smoke"]), out=d / "results.json", limit=20, data_root=bundled_data,
              log=lambda m: None)
    result = bench.run_bench(quick=True, preset="small", models=["kim_cnn", "lama"], seq_len=6, batch_size=2,
                             train_batch_size=2, epoch_examples=4, vocab_size=30, act_t5=True, lama=True,
                             checkpoints=None, memory=False)
    # ACT-T5 at the paper's size is timed in test_bench; here the page only has to draw what is stored
    bench.write_json(result, d / "bench.json")
    return d


def _app(monkeypatch, results: Path, bench_file: Path):
    monkeypatch.setenv("TEXTCLS_RESULTS_FILE", str(results))
    monkeypatch.setenv("TEXTCLS_BENCH_FILE", str(bench_file))
    return open_page(PAGE)


def _frames(at):
    return [df.value for df in at.dataframe]


def test_page_shows_stored_results(monkeypatch, stored):
    at = _app(monkeypatch, stored / "results.json", stored / "bench.json")
    frames = _frames(at)
    acc = next(f for f in frames if "why the numbers differ" in f.columns)
    assert set(acc["setting"]) == {"CNN-rand", "AGCNN-NLReLU-rand"}
    assert sorted(acc["paper"]) == [91.2, 92.5]
    assert acc["why the numbers differ"].str.contains("SMOKE TEST").all()
    gaps = [m.value for m in at.markdown if "SMOKE TEST" in m.value]     # the full reasons, not a cut-off cell
    assert len(gaps) == 1 and gaps[0].count("\n- ") == len(acc) - 1
    speed = next(f for f in frames if "params (no emb.)" in f.columns)
    assert list(speed["model"]) == ["kim_cnn", "lama", "lama + ctx"]
    t5 = next(f for f in frames if "s / batch (paper, GPU)" in f.columns)
    assert list(t5["s / batch (paper, GPU)"]) == [0.07, 0.19]
    f4 = next(f for f in frames if "SAN" in f.columns)
    assert list(f4["heads"])[:3] == [1, 2, 5] and f4["SAN"].is_monotonic_increasing
    assert len(at.get("plotly_chart")) >= 4       # accuracy, models, ACT-T5, LAMA-F4
    assert any("Transformer / ACT" in m.label for m in at.metric)


def test_page_without_files_explains_what_to_run(monkeypatch, tmp_path):
    at = _app(monkeypatch, tmp_path / "none.json", tmp_path / "none_bench.json")
    infos = " ".join(i.value for i in at.info)
    assert "No reproduction results" in infos and "No stored benchmark" in infos
    assert any("textcls reproduce" in c.value for c in at.code)


def test_page_with_a_corrupt_results_file(monkeypatch, tmp_path):
    (tmp_path / "r.json").write_text("{oops")
    (tmp_path / "b.json").write_text(json.dumps([1, 2]))
    at = _app(monkeypatch, tmp_path / "r.json", tmp_path / "b.json")
    errors = " ".join(e.value for e in at.error)
    assert "cannot read the results file" in errors and "not a" in errors


def test_remeasure_button_runs_a_quick_bench(monkeypatch, stored):
    at = _app(monkeypatch, stored / "results.json", stored / "bench.json")
    at.multiselect(key="bench_models").set_value(["kim_cnn"])
    at.number_input(key="bench_len").set_value(8)
    at.checkbox(key="bench_do_t5").uncheck()
    at.checkbox(key="bench_do_train").uncheck()
    next(b for b in at.button if "Re-measure" in b.label).click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    here = at.session_state["bench_here"]
    assert [r["model"] for r in here["models"]] == ["kim_cnn"] and here["settings"]["seq_len"] == 8
    assert "act_t5" not in here
    assert any(list(f["model"]) == ["kim_cnn"] for f in _frames(at) if "params (no emb.)" in f.columns
               and len(f) == 1)


def test_stored_checkpoint_timings_name_checkpoints_saved_since(monkeypatch, stored, tmp_path):
    """A checkpoint saved after the stored run is named, with the command that times it."""
    import torch

    import textcls
    from textcls.checkpoint import save_checkpoint
    from textcls.data.text import Tokenizer, TokenizerConfig

    tok = Tokenizer.build(["good film", "bad film"], TokenizerConfig())
    torch.manual_seed(0)
    model = textcls.create_model("kim_cnn", vocab_size=len(tok.vocab), num_labels=2, preset="small").eval()
    save_checkpoint(tmp_path / "ckpts" / "newer_tiny", model, tok, ["negative", "positive"], meta={})
    result = json.loads((stored / "bench.json").read_text())
    result["checkpoints"] = {"root": "checkpoints", "sentence": "x", "errors": [], "all_predict_ms": 1.0, "n": 1,
                             "checkpoints": [{"name": "older", "model": "kim_cnn", "data": "sst2",
                                              "test_accuracy": 0.8, "parameters": 10, "predict_ms": 1.0}]}
    (tmp_path / "bench.json").write_text(json.dumps(result))
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(tmp_path / "ckpts"))
    at = _app(monkeypatch, stored / "results.json", tmp_path / "bench.json")
    table = next(f for f in _frames(at) if "ms / sentence" in f.columns and "checkpoint" in f.columns)
    assert list(table["checkpoint"]) == ["older"] and list(table["test accuracy"]) == [80.0]
    assert any("newer_tiny" in i.value.replace("\\", "") and "textcls bench" in i.value for i in at.info)


def test_page_lists_the_paper_studies_at_medium_scale(monkeypatch, stored):
    at = _app(monkeypatch, stored / "results.json", stored / "bench.json")
    assert not at.exception, [e.value for e in at.exception]
    df = next(d.value for d in at.dataframe if "verdict here" in d.value.columns)
    assert {"ACT-F3", "TR-CMP", "LAMA-F3", "HCAN-F3", "AGCNN-T5", "ACT-T3"} <= set(df["study"])
    assert set(df["verdict here"]) <= {"holds", "does not hold", "cannot be resolved", "no claim to check",
                                       "not measured yet"}
