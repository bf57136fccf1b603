"""The command line: a train -> evaluate -> predict -> list round trip in subprocesses, then exit codes and
one-line errors in-process (fast)."""
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from textcls.cli import main

REPO = Path(__file__).resolve().parents[1]


def run(*args, env_extra=None, input=None):
    env = {**os.environ, "OMP_NUM_THREADS": "1", **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "textcls", *map(str, args)], cwd=REPO, env=env, input=input,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, bundled_data):
    root = tmp_path_factory.mktemp("cks")
    out = root / "kim_sst2"
    r = run("train", "--model", "kim_cnn", "--data", "sst2", "--epochs", 1, "--out", out, "--limit", 200,
            "--preset", "small", "--data-root", bundled_data)
    assert r.returncode == 0, r.stderr
    return root, out, r


def test_train_writes_a_checkpoint_and_reports_progress_on_stderr(trained):
    root, out, r = trained
    assert f"saved {out}" in r.stdout and "test accuracy" in r.stdout
    assert "epoch 1/1" in r.stderr and "step" in r.stderr        # tqdm bar + epoch line on stderr
    assert "Traceback" not in r.stderr
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["model"] == "kim_cnn" and cfg["data"]["name"] == "sst2" and cfg["data"]["limit"] == 200
    assert cfg["embeddings"]["source"] == "glove" and cfg["model_config"]["embed_dim"] == 50
    assert 0 <= cfg["metrics"]["test_accuracy"] <= 1


def test_evaluate_json_matches_the_recorded_test_accuracy(trained, bundled_data):
    root, out, _ = trained
    r = run("evaluate", out, "--data", "sst2", "--split", "test", "--json", "--limit", 200,
            "--data-root", bundled_data)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert {"accuracy", "macro_f1", "per_class", "confusion"} <= set(rep)
    assert set(rep["per_class"]) == {"negative", "positive"} and rep["n"] == 200
    assert sum(map(sum, rep["confusion"])) == 200
    cfg = json.loads((out / "config.json").read_text())
    assert rep["accuracy"] == pytest.approx(cfg["metrics"]["test_accuracy"])   # same 200-example sample


def test_predict(trained):
    root, out, _ = trained
    r = run("predict", out, "a gripping , funny and moving film", "--json")
    assert r.returncode == 0, r.stderr
    p = json.loads(r.stdout)
    assert p["label"] in ("negative", "positive") and sum(p["probabilities"].values()) == pytest.approx(1.0)
    assert p["tokens"][:2] == ["a", "gripping"] and p["truncated"] is False


def test_predict_from_stdin_and_list_in_process(trained, monkeypatch, capsys):
    root, out, _ = trained
    monkeypatch.setattr(sys, "stdin", io.StringIO("good\n\nbad\n"))
    assert main(["predict", str(out), "-", "--json"]) == 0
    assert [x["text"] for x in json.loads(capsys.readouterr().out)] == ["good", "", "bad"]
    assert main(["list", "--checkpoints", str(root), "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert "kim_cnn" in [m["name"] for m in listing["models"]] and "sst2" in listing["datasets"]
    assert [(c["name"], c["model"], c["valid"]) for c in listing["checkpoints"]] == [("kim_sst2", "kim_cnn", True)]


def test_subprocess_error_is_one_line_with_exit_code_2(tmp_path):
    r = run("predict", tmp_path / "nothing", "hello")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "no such checkpoint" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("command", [[], ["train"], ["evaluate"], ["predict"], ["list"]])
def test_help(command, capsys):
    with pytest.raises(SystemExit) as e:
        main(command + ["--help"])
    assert e.value.code == 0 and "usage:" in capsys.readouterr().out


def one_error_line(capsys):
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("args, message", [
    (["train", "--model", "kim_cnn"], "required"),
    (["train", "--model", "kim_cnn", "--data", "sst2", "--epochs", "one", "--out", "x"], "invalid number"),
    (["frobnicate"], "invalid choice"),
    (["train", "--model", "kim_cnn", "--data", "sst2", "--epochs", "1", "--out", "x", "--optimizer", "lbfgs"],
     "invalid choice"),
])
def test_usage_errors_exit_2(args, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2 and message in one_error_line(capsys)


@pytest.mark.parametrize("extra, message", [
    (["--model", "gpt9"], "unknown model 'gpt9'"),
    (["--set", "wings=2"], "wings"),
    (["--set", "n_filters"], "expects key=value"),
    (["--preset", "huge"], "unknown preset 'huge'"),
    (["--embeddings", "/no/such/vectors.txt"], "--embeddings"),
    (["--lr", "-1"], "lr must be"),
    (["--model", "act", "--preset", "small", "--max-len", "100"], "max_positions"),
    (["--data", "/no/such/file.csv"], "file.csv"),
    (["--max-norm", "0"], "max_norm must be"),
    (["--extra-vocab", "-3"], "--extra-vocab must be >= 0"),
    (["--extra-vocab", "10", "--embeddings", "random"], "needs --embeddings glove"),
])
def test_bad_train_input_exits_2(extra, message, tmp_path, bundled_data, capsys):
    base = {"--model": "kim_cnn", "--data": "sst2", "--epochs": "1", "--out": str(tmp_path / "o")}
    for k, v in zip(extra[::2], extra[1::2]):
        base[k] = v
    args = ["train", "--data-root", str(bundled_data)] + [x for kv in base.items() for x in kv]
    assert main(args) == 2
    assert message in one_error_line(capsys)
    assert not (tmp_path / "o").exists()


def test_bad_checkpoints_exit_2(tmp_path, capsys):
    assert main(["evaluate", str(tmp_path / "missing"), "--data", "sst2"]) == 2
    assert "no such checkpoint" in one_error_line(capsys)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{")
    (broken / "vocab.json").write_text("{}")
    (broken / "model.safetensors").write_bytes(b"")
    assert main(["predict", str(broken), "hi"]) == 2
    assert "config.json is not valid JSON" in one_error_line(capsys)


def test_evaluate_unknown_split_exits_2(trained, bundled_data, capsys):
    _, out, _ = trained
    assert main(["evaluate", str(out), "--split", "validation", "--data-root", str(bundled_data)]) == 2
    assert "no split 'validation'" in one_error_line(capsys)


def test_list_reports_invalid_checkpoints(trained, capsys):
    root, _, _ = trained
    assert main(["list", "--checkpoints", str(root)]) == 0
    out = capsys.readouterr().out
    assert "kim_sst2" in out and "kim_cnn" in out and "sst2" in out


def test_out_folder_that_is_not_a_checkpoint_is_refused_before_training(tmp_path, bundled_data, capsys):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("keep")
    args = ["train", "--model", "kim_cnn", "--data", "sst2", "--epochs", "1", "--out", str(notes),
            "--data-root", str(bundled_data)]
    assert main(args) == 2
    assert "not a textcls checkpoint" in one_error_line(capsys)
    assert os.listdir(notes) == ["a.txt"]


def test_train_without_out_writes_to_the_user_folder_and_list_shows_it(tmp_path, monkeypatch, capsys):
    """A bare `train` never writes into the repository: the checkpoint goes to $TEXTCLS_HOME/checkpoints and is
    listed beside the shipped ones."""
    home = tmp_path / "home"
    monkeypatch.setenv("TEXTCLS_HOME", str(home))
    before = sorted(p.name for p in (REPO / "checkpoints").iterdir())
    assert main(["train", "--model", "kim_cnn", "--data", "trec", "--epochs", "1", "--limit", "40", "--preset",
                 "small", "--embeddings", "random", "--quiet"]) == 0
    made = list((home / "checkpoints").iterdir())
    assert len(made) == 1 and made[0].name.startswith("kim_cnn-trec-"), made
    assert f"saved {made[0]}" in capsys.readouterr().out
    assert sorted(p.name for p in (REPO / "checkpoints").iterdir()) == before
    assert main(["list", "--json"]) == 0
    listed = {c["name"] for c in json.loads(capsys.readouterr().out)["checkpoints"]}
    assert made[0].name in listed and "act-sst2" in listed


def test_data_a_classifier_cannot_learn_from_is_refused_with_exit_2(tmp_path, capsys):
    """One verdict for the CLI, the Train page and the API (data.check_trainable): a one-label file, JSONL labels
    1 and "1" (the same class), and 10,000 labels of one row each are refused before any training starts."""
    one = tmp_path / "one.csv"
    one.write_text("text,label\n" + "".join(f"review {i},pos\n" for i in range(30)))
    same = tmp_path / "same.jsonl"
    same.write_text("".join(json.dumps({"text": f"t {i}", "label": 1 if i % 2 else "1"}) + "\n" for i in range(30)))
    ids = tmp_path / "ids.csv"
    ids.write_text("text,label\n" + "".join(f"text number {i},id{i}\n" for i in range(10_000)))
    for path, message in ((one, "one label only"), (same, "one label only"), (ids, "fewer than two rows per label")):
        code = main(["train", "--model", "kim_cnn", "--data", str(path), "--epochs", "1", "--preset", "small",
                     "--embeddings", "random", "--out", str(tmp_path / "never"), "--quiet"])
        assert code == 2 and message in capsys.readouterr().err, path
        assert not (tmp_path / "never").exists()
