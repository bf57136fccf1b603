"""`python -m textcls bench --explanations [--ferret PYTHON]` (textcls/experiments/explain_bench.py,
scripts/ferret_side.py): the argument checks, textcls's timings alone on a shipped checkpoint and their JSON, ferret's
AOPC definition replayed by textcls's erasure curves (known answers from ferret 0.4.2's
evaluators/faithfulness_measures.py and utils_from_soft_to_discrete.py), the export to a plain Hugging Face folder,
the side process's protocol and interleaving (a stand-in side, no ferret needed), and - only where a Python with
ferret-xai is at /tmp/fenv (TEXTCLS_FERRET_PYTHON) - ferret's attributions equal to textcls's."""
from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import textcls
from textcls.cli import main
from textcls.experiments import explain_bench as eb
from textcls.interpret.faithfulness import comprehensiveness, sufficiency
from textcls.interpret.sources import as_source

from hf_toys import tiny_folder

REPO = Path(__file__).resolve().parents[1]
ACT = str(REPO / "checkpoints" / "act-sst2")
TOY_TEXTS = ["this movie was unbelievable , really good !", "the plot is dull and the acting awful .",
             "I don't love it but it wasn't boring"]
FERRET_PYTHON = os.environ.get("TEXTCLS_FERRET_PYTHON", "/tmp/fenv/bin/python")


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    folder = tiny_folder(tmp_path_factory.mktemp("hf"), "bert")
    return folder, textcls.load_checkpoint(folder)


def _run(argv) -> int:
    """The exit code of `python -m textcls bench ARGV` (argparse's own errors exit through SystemExit)."""
    try:
        return main(["bench", *argv])
    except SystemExit as e:
        return int(e.code)


def _one_error_line(capsys, *words) -> None:
    err = "\n".join(x for x in capsys.readouterr().err.strip().splitlines() if not x.startswith("... "))  # progress
    assert len(err.splitlines()) == 1 and err.startswith("textcls bench: error:"), err
    for w in words:
        assert w in err, err


# ---------------------------------------------------------------- the command's argument checks

@pytest.mark.parametrize("argv, words", [
    (["--explanations", "--texts", "0"], ["--texts", "1821"]),
    (["--explanations", "--texts", "5000"], ["--texts", "1821"]),
    (["--explanations", "--texts", "two"], ["--texts"]),
    (["--explanations", "--checkpoint", "no/such/folder"], ["no such folder"]),
    (["--explanations", "--latency"], ["--latency"]),
    (["--texts", "2"], ["--explanations"]),
    (["--ferret", sys.executable], ["--explanations"]),
    (["--explanations", "--ferret", "/no/such/python"], ["--ferret", "not an executable"]),
    (["--explanations", "--ferret", __file__], ["--ferret", "not an executable"]),      # a file, not executable
    (["--explanations", "--ferret", sys.executable, "--checkpoint", ACT], ["Hugging Face checkpoint"]),
])
def test_bad_arguments_exit_2_with_one_line(argv, words, capsys):
    assert _run(argv) == 2
    _one_error_line(capsys, *words)


def test_a_python_without_ferret_is_refused_in_one_line(tiny_bert, capsys):
    import importlib.util
    if importlib.util.find_spec("ferret") is not None:
        pytest.skip("ferret-xai is installed in this Python")
    folder, _ = tiny_bert
    assert main(["bench", "--explanations", "--texts", "1", "--checkpoint", str(folder),
                 "--ferret", sys.executable]) == 2
    _one_error_line(capsys, "cannot run ferret", "ferret-xai is not installed")


# ---------------------------------------------------------------- textcls alone

def test_textcls_alone_prints_its_timings_and_writes_json(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(["bench", "--explanations", "--checkpoint", ACT, "--texts", "2", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    for label in eb.LABELS.values():
        assert label in text
    assert "ferret" not in text.split("\n\n")[1]                     # the table has textcls's columns only
    data = json.loads(out.read_text())
    assert data["texts"] == 2 and data["torch_threads"] == 1 and data["ferret"] is None
    assert data["environment"]["torch_threads"] == 1                  # measured inside the one-thread scope
    assert [r["index"] for r in data["rows"]] == [0, 1] and {r["first"] for r in data["rows"]} == {"textcls"}
    for r in data["rows"]:
        assert set(r["textcls_ms"]) == set(eb.METHODS) and all(v > 0 for v in r["textcls_ms"].values())
        assert r["ferret_ms"] == {} and len(r["textcls_aopc"]) == 2 and r["words"] > 0
    for m in eb.METHODS:
        s = data["summary"][m]["textcls"]
        assert set(s) == {"median_ms", "mean_ms"} and s["median_ms"] > 0
        assert "ferret" not in data["summary"][m]
    assert "correctness" not in data and torch.get_num_threads() != 0


def test_load_runs_busy_processes_around_the_timed_run_only(monkeypatch, shipped_predictors):
    seen = []

    class Busy:                                           # stands in for background.BusyLoad (tested in test_bench)
        def __init__(self, n):
            self.n, self.pids = n, [os.getpid()]

        def __enter__(self):
            seen.append(("start", self.n))
            return self

        def __exit__(self, *exc):
            seen.append(("stop", self.n))

    monkeypatch.setattr(eb, "BusyLoad", Busy)
    monkeypatch.setattr(eb, "load_checkpoint", lambda path: shipped_predictors["act-sst2"])
    monkeypatch.setattr(eb, "_one_text",
                        lambda *a: seen.append("text") or {"textcls_ms": dict.fromkeys(eb.METHODS, 1.0)})
    r = eb.run_explain_bench(ACT, texts=["good", "bad"], load=2)
    assert seen == [("start", 2), "text", "text", "text", ("stop", 2)] and r["load"] == 2     # warm-up + 2 texts
    assert r["summary"]["aopc"]["textcls"] == {"median_ms": 1.0, "mean_ms": 1.0}


# ---------------------------------------------------------------- ferret's AOPC, replayed by textcls

def _ferret_counts_reference(scores) -> list[int]:
    """ferret 0.4.2's rationale sizes: _get_id_tokens_percentage(only_pos=True) over np.arange(0.1, 1.1, 0.1), a
    rationale equal to the previous one skipped (AOPC_Comprehensiveness_Evaluation.compute_evaluation)."""
    sizes, last = [], None
    for p in np.arange(0.1, 1.1, 0.1):
        v = int(p * len(scores))
        if not 0 < v <= len(scores):
            continue
        top = [i for i in np.array(scores).argsort()[-v:][::-1] if scores[i] > 0]
        if not top or (last is not None and set(top) == last):
            continue
        last = set(top)
        sizes.append(len(top))
    return sizes


def test_ferret_counts_known_answers():
    assert eb.ferret_counts(10, 10) == list(range(1, 11))
    assert eb.ferret_counts(5, 5) == [1, 2, 3, 4, 5]         # 10 % of 5 is 0 tokens: skipped; 1.5 -> 1, 3.5 -> 3
    assert eb.ferret_counts(5, 2) == [1, 2]                  # positive scores only
    assert eb.ferret_counts(3, 0) == [] and eb.ferret_counts(0, 0) == []
    rng = np.random.default_rng(0)
    for n in range(1, 40):
        scores = rng.normal(size=n)
        assert eb.ferret_counts(n, int((scores > 0).sum())) == _ferret_counts_reference(scores), n


def test_ferret_aopc_is_the_mean_of_textcls_erasures(shipped_predictors):
    p = shipped_predictors["act-sst2"]
    inst = as_source(p).instances(["a gorgeous , witty , seductive movie ."])[0]
    scores = np.array([-0.3, 0.9, -0.1, 0.5, 0.2, -0.4, 0.7, 0.05])
    assert inst.n == len(scores)
    c, s, ks = eb.ferret_aopc(p.model, inst, scores, target=1)
    assert ks == eb.ferret_counts(inst.n, int((scores > 0).sum())) and ks
    comp = [comprehensiveness(p.model, inst, scores, pct=100 * k / inst.n, target=1) for k in ks]
    suff = [sufficiency(p.model, inst, scores, pct=100 * k / inst.n, target=1) for k in ks]
    assert c == pytest.approx(np.mean(comp), abs=1e-6) and s == pytest.approx(np.mean(suff), abs=1e-6)
    assert eb.ferret_aopc(p.model, inst, -np.abs(scores), target=1) == (0.0, 1.0, [])   # ferret's defaults


# ---------------------------------------------------------------- export and piece -> word sums

def test_export_is_a_plain_folder_with_textcls_logits(tiny_bert, tmp_path, shipped_predictors):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    _, p = tiny_bert
    folder = eb.export_hf(p, tmp_path / "plain")
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    tok = AutoTokenizer.from_pretrained(folder)
    with torch.no_grad():
        theirs = np.stack([model(**tok(t, return_tensors="pt")).logits[0].double().numpy() for t in TOY_TEXTS])
        long = tok("a long text " * 30, return_tensors="pt", truncation=True)      # cut at the toy's 64 positions
        assert tok.model_max_length == 64 and long["input_ids"].shape == (1, 64)
        assert model(**long).logits.shape == (1, 2)
    assert np.abs(eb.logits_of(p, TOY_TEXTS) - theirs).max() < 1e-5
    with pytest.raises(ValueError, match="Hugging Face"):
        eb.export_hf(shipped_predictors["act-sst2"], tmp_path / "act")


def test_word_sums_add_each_words_pieces(tiny_bert):
    _, p = tiny_bert
    text = "unbelievable films"
    pieces = p.tokenizer.split([text])[0][1]
    ids = [2] + [i for w in pieces for i in w] + [3]                 # [CLS] ... [SEP]
    scores = np.arange(len(ids), dtype=float)
    got = eb.word_sums(p, text, scores, ids)
    want, at = [], 1
    for w in pieces:
        want.append(scores[at:at + len(w)].sum())
        at += len(w)
    assert len(pieces) == 2 and len(pieces[0]) > 1 and list(got) == want
    assert eb.word_sums(p, text, scores, [2, 5, 3]) is None          # other pieces: not compared


# ---------------------------------------------------------------- the side process (a stand-in for ferret)

STAND_IN = """
import json, os, sys
log = open(os.environ["STAND_IN_LOG"], "a")
for line in sys.stdin:
    req = json.loads(line)
    if req.get("quit"):
        break
    log.write(req.get("method", "start") + "\\n"); log.flush()
    if MODE == "refuse":
        print(json.dumps({"error": "ImportError: no module named ferret"}), flush=True)
    elif "model" in req:
        print(json.dumps({"ready": True, "versions": {"ferret-xai": "stand-in"}, "threads": req["threads"],
                          "logits": [[0.0, 0.0] for _ in req["texts"]], "ferret_import": "package"}), flush=True)
    elif MODE == "die":
        sys.exit(3)
    elif req["method"] == "aopc":
        print(json.dumps({"seconds": 0.001, "comprehensiveness": 0.5, "sufficiency": 0.1}), flush=True)
    else:
        print(json.dumps({"seconds": 0.002, "scores": [0.0, 0.0], "input_ids": [2, 3]}), flush=True)
"""


def _stand_in(tmp_path, monkeypatch, mode: str) -> Path:
    script = tmp_path / f"side_{mode}.py"
    script.write_text(f"MODE = {mode!r}\n" + textwrap.dedent(STAND_IN))
    log = tmp_path / f"side_{mode}.log"
    monkeypatch.setattr(eb, "SIDE_SCRIPT", script)
    monkeypatch.setenv("STAND_IN_LOG", str(log))
    return log


def test_side_process_is_asked_text_by_text_alternating_who_goes_first(tiny_bert, tmp_path, monkeypatch):
    folder, _ = tiny_bert
    log = _stand_in(tmp_path, monkeypatch, "answer")
    r = eb.run_explain_bench(folder, texts=3, ferret=sys.executable)
    assert [row["first"] for row in r["rows"]] == ["textcls", "ferret", "textcls"]
    assert log.read_text().split() == ["start"] + list(eb.METHODS) * 4          # warm-up + 3 texts, in order
    for row in r["rows"]:
        assert row["ferret_ms"] == {"integrated_gradients": 2.0, "grad_x_input": 2.0, "aopc": 1.0}
        assert row["ferret_aopc"] == [0.5, 0.1] and row["diff"] == {}          # other pieces: nothing compared
    s = r["summary"]["aopc"]
    assert s["ferret"] == {"median_ms": 1.0, "mean_ms": 1.0}
    assert s["ratio_median"] == pytest.approx(s["textcls"]["median_ms"] / 1.0)
    assert r["correctness"]["integrated_gradients"] == {"max_abs_diff": None, "texts": 0, "max_abs_score": None}
    assert "textcls : ferret" in eb.format_explain_bench(r)
    json.dumps(r)


@pytest.mark.parametrize("mode, code, words", [("refuse", 2, ["cannot run ferret", "no module named ferret"]),
                                               ("die", 1, ["ferret's process stopped"])])
def test_side_failures_are_one_line(mode, code, words, tiny_bert, tmp_path, monkeypatch, capsys):
    folder, _ = tiny_bert
    _stand_in(tmp_path, monkeypatch, mode)
    assert main(["bench", "--explanations", "--texts", "1", "--checkpoint", str(folder),
                 "--ferret", sys.executable]) == code
    _one_error_line(capsys, *words)


# ---------------------------------------------------------------- ferret itself (skipped without it)

@pytest.mark.skipif(not os.access(FERRET_PYTHON, os.X_OK), reason=f"no Python with ferret-xai at {FERRET_PYTHON} "
                                                                   "(CI has none; docs/performance.md sets one up)")
def test_ferret_attributions_equal_textcls(tiny_bert):
    folder, _ = tiny_bert
    r = eb.run_explain_bench(folder, texts=TOY_TEXTS, ferret=FERRET_PYTHON)     # fit the toy's 64 positions
    assert r["export_max_abs_logit_diff"] < 1e-5
    for m in ("integrated_gradients", "grad_x_input"):
        c = r["correctness"][m]
        assert c["texts"] == 3 and 0 < c["max_abs_score"] and c["max_abs_diff"] <= 1e-4 * c["max_abs_score"], (m, c)
    c = r["correctness"]["aopc"]
    assert c["texts"] == 0 or c["max_abs_diff"] < 1e-5
