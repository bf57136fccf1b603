"""The second hostile pass (issue 28): silent wrong answers, resource bombs, errors that do not say what is wrong,
the relation generators and overwrites. Each test is one failure that pass found; in-process and fast (the
shipped checkpoints, tiny trainings on the bundled data)."""
import gzip
import json
import os
import shutil
import struct
import threading
from pathlib import Path

import pytest
import torch

import textcls
from textcls.checkpoint import CheckpointError, checkpoint_info, list_checkpoints, load_checkpoint, load_history
from textcls.cli import main
from textcls.data.datasets import DataError, load_data
from textcls.runtime.limits import LimitError

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "checkpoints"
TINY = ["--epochs", "1", "--limit", "40", "--preset", "small", "--embeddings", "random", "--quiet"]


def error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.fixture
def ck(tmp_path) -> Path:
    """A copy of a shipped checkpoint to break."""
    return Path(shutil.copytree(SHIPPED / "kim_cnn-trec", tmp_path / "cks" / "kim"))


def rewrite_weights(path: Path, convert) -> None:
    from safetensors.torch import load_file, save_file
    state = load_file(str(path / "model.safetensors"))
    save_file({k: convert(v) for k, v in state.items()}, str(path / "model.safetensors"))


def in_thread(fn, seconds: float = 60):
    """fn() in a daemon thread: (finished, result or exception) - a reader that hangs fails the test, not the
    suite."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn()
        except Exception as e:  # noqa: BLE001
            box["value"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    return not t.is_alive(), box.get("value")


# ---------------------------------------------------------------- 1-2 silent wrong answers


def test_a_negative_batch_size_is_refused_not_answered(capsys, shipped_predictors):
    assert main(["evaluate", str(SHIPPED / "kim_cnn-trec"), "--batch-size", "-1", "--limit", "20"]) == 2
    assert "--batch-size must be >= 1" in error_line(capsys)
    from textcls.data.batching import encode_split, predict_encoded
    p = shipped_predictors["kim_cnn-trec"]
    enc = encode_split(p.tokenizer, load_data("trec", limit=5).splits["test"])
    with pytest.raises(LimitError, match="batch_size"):
        predict_encoded(p.model, enc, batch_size=-1)


def test_duplicated_label_names_are_not_a_valid_checkpoint(ck):
    cfg = json.loads((ck / "config.json").read_text())
    cfg["labels"][1] = cfg["labels"][0]
    (ck / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match="twice"):
        load_checkpoint(ck)
    assert not list_checkpoints(ck.parent, include_invalid=True)[0].valid


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool])
def test_integer_or_bool_weights_are_not_a_valid_checkpoint(ck, dtype):
    rewrite_weights(ck, lambda v: v.to(dtype))
    for deep in (True,):
        info = list_checkpoints(ck.parent, include_invalid=True, deep=deep)[0]
        assert not info.valid and "floating point" in info.error
    with pytest.raises(CheckpointError, match="floating point"):
        load_checkpoint(ck)


# ---------------------------------------------------------------- 3-6 resource bombs


def test_a_gzip_bomb_stops_at_the_file_limit_counted_decompressed(tmp_path, monkeypatch):
    path = tmp_path / "bomb.csv.gz"
    with gzip.open(path, "wt") as f:
        f.write("text,label\n")
        row = "a" * 1000 + ",x\n"
        for _ in range(3_000):                 # 3 MB of CSV, a few KB compressed
            f.write(row)
    assert path.stat().st_size < 100_000
    monkeypatch.setenv("TEXTCLS_MAX_FILE_MB", "1")
    with pytest.raises(DataError, match="decompressed"):
        load_data(str(path))


def test_rows_are_counted_against_their_limit(tmp_path, monkeypatch):
    path = tmp_path / "many.csv"
    path.write_text("text,label\n" + "".join(f"w{i},{i % 2}\n" for i in range(500)))
    monkeypatch.setenv("TEXTCLS_MAX_FILE_ROWS", "100")
    with pytest.raises(DataError, match="rows"):
        load_data(str(path))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_history_neither_hangs_listing_nor_the_reader(ck):
    (ck / "history.json").unlink()
    os.mkfifo(ck / "history.json")
    done, value = in_thread(lambda: list_checkpoints(ck.parent, include_invalid=True))
    assert done, "listing hung on a FIFO"
    assert not value[0].valid and "regular file" in value[0].error
    done, value = in_thread(lambda: load_history(ck))
    assert done and isinstance(value, CheckpointError)


def test_a_history_symlink_out_of_the_folder_is_refused(ck):
    (ck / "history.json").unlink()
    (ck / "history.json").symlink_to("/dev/zero")
    done, value = in_thread(lambda: load_history(ck), 20)
    assert done and isinstance(value, CheckpointError) and "symlink" in str(value)
    assert not list_checkpoints(ck.parent, include_invalid=True)[0].valid


@pytest.mark.parametrize("history", [{"epochs": [1, 2]}, {"epochs": "many"}, {"epochs": [{"train_loss": "low"}]},
                                     {"step_losses": [None, "x"]}, {"best_epoch": "3"}])
def test_a_history_of_the_wrong_shape_is_a_checkpoint_error(ck, history):
    (ck / "history.json").write_text(json.dumps(history))
    with pytest.raises(CheckpointError, match="history.json"):
        load_history(ck)
    assert not list_checkpoints(ck.parent, include_invalid=True)[0].valid


@pytest.mark.parametrize("args, flag", [
    (["faithfulness", "CK", "--permutations", "1000000000"], "--permutations"),
    (["faithfulness", "CK", "--random-orders", "1000000000"], "--random-orders"),
    (["faithfulness", "CK", "--steps", "1000000000"], "--steps"),
    (["predict", "CK", "text", "--batch-size", "0"], "--batch-size"),
    (["train", "--model", "kim_cnn", "--data", "trec", "--workers", "100000", "--out", "OUT", *TINY], "--workers"),
    (["train", "--model", "kim_cnn", "--data", "trec", "--max-vocab", "1", "--out", "OUT", *TINY], "--max-vocab"),
    (["train", "--model", "kim_cnn", "--data", "trec", "--min-freq", "0", "--out", "OUT", *TINY], "--min-freq"),
])
def test_every_count_option_is_bounded_with_exit_2(args, flag, tmp_path, capsys):
    args = [str(SHIPPED / "kim_cnn-trec") if a == "CK" else str(tmp_path / "o") if a == "OUT" else a for a in args]
    assert main(args) == 2
    assert flag in error_line(capsys)
    assert not (tmp_path / "o").exists()


def test_the_library_bounds_the_same_counts(shipped_predictors):
    from textcls.interpret.batched import SliceRun
    from textcls.train.config import TrainConfig
    with pytest.raises(LimitError, match="workers"):
        TrainConfig(workers=100_000)
    p = shipped_predictors["kim_cnn-trec"]
    for kw in ({"n_permutations": 10**9}, {"n_steps": 10**9}, {"random_orders": 10**9}):
        with pytest.raises(LimitError):
            SliceRun(p, ["a text"], ["random"], **kw)


def test_create_model_is_held_to_the_parameter_limit(monkeypatch):
    monkeypatch.setenv("TEXTCLS_MAX_PARAMETERS", "5000")
    with pytest.raises(LimitError, match="parameters"):
        textcls.create_model("kim_cnn", vocab_size=2000, num_labels=2, n_filters=50)
    assert textcls.create_model("kim_cnn", vocab_size=20, num_labels=2, preset="small") is not None


# ---------------------------------------------------------------- 7-10 errors that say what is wrong


def write_header(ck: Path, header_text: str) -> None:
    raw = header_text.encode()
    (ck / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * 64)


HEADERS = {
    "string offsets": '{"fc.weight": {"dtype": "F32", "shape": [2, 2], "data_offsets": ["0", "16"]}}',
    "list dtype": '{"fc.weight": {"dtype": ["F32"], "shape": [2, 2], "data_offsets": [0, 16]}}',
    "infinite shape": '{"fc.weight": {"dtype": "F32", "shape": [Infinity], "data_offsets": [0, 16]}}',
    "nested brackets": "[" * 100_000 + "]" * 100_000,
    "unknown dtype": '{"fc.weight": {"dtype": "X99", "shape": [4], "data_offsets": [0, 16]}}',
}


@pytest.mark.parametrize("case", list(HEADERS))
def test_a_malformed_safetensors_header_is_a_checkpoint_error_naming_the_folder(ck, case, capsys):
    write_header(ck, HEADERS[case])
    with pytest.raises(CheckpointError, match=str(ck)):
        load_checkpoint(ck)
    assert not list_checkpoints(ck.parent, include_invalid=True)[0].valid
    assert main(["predict", str(ck), "a question"]) == 2
    assert str(ck) in error_line(capsys)


def test_what_list_calls_usable_loads(ck, tmp_path):
    nan_cfg = Path(shutil.copytree(ck, tmp_path / "cks" / "nan_config"))
    cfg = json.loads((nan_cfg / "config.json").read_text())
    cfg["model_config"]["dropout"] = float("nan")
    (nan_cfg / "config.json").write_text(json.dumps(cfg))
    nan_w = Path(shutil.copytree(ck, tmp_path / "cks" / "nan_weights"))
    rewrite_weights(nan_w, lambda v: torch.full_like(v, float("nan")) if v.is_floating_point() else v)
    inf_w = Path(shutil.copytree(ck, tmp_path / "cks" / "inf_weights"))
    rewrite_weights(inf_w, lambda v: v.masked_fill(torch.ones_like(v, dtype=torch.bool), float("inf"))
                    if v.is_floating_point() else v)
    for info in list_checkpoints(tmp_path / "cks", include_invalid=True, deep=True):
        loads = True
        try:
            load_checkpoint(info.path).predict(["what is a test ?"])
        except Exception:  # noqa: BLE001
            loads = False
        assert info.valid == loads, (info.name, info.error)
    assert [i.name for i in list_checkpoints(tmp_path / "cks", deep=True)] == ["kim"]


@pytest.mark.parametrize("setting, message", [
    ("n_filters=-1", "n_filters"), ("windows=[]", "windows"), ("dropout=nan", "dropout"),
])
def test_a_model_config_the_model_rejects_exits_2_before_training(setting, message, tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["train", "--model", "kim_cnn", "--data", "trec", "--set", setting, "--out", str(out), *TINY]) == 2
    assert message in error_line(capsys)
    assert not out.exists()


def test_deeply_nested_json_data_exits_2(tmp_path, capsys):
    path = tmp_path / "deep.jsonl"
    path.write_text('{"text": "a", "label": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    assert main(["train", "--model", "kim_cnn", "--data", str(path), "--out", str(tmp_path / "o"), *TINY]) == 2
    assert "nested too deeply" in error_line(capsys)


def test_an_empty_parquet_file_is_one_line(tmp_path, capfd):
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"text": pa.array([], pa.string()), "label": pa.array([], pa.string())}), path)
    assert main(["train", "--model", "kim_cnn", "--data", str(path), "--out", str(tmp_path / "o"), *TINY]) == 2
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and "no rows" in err, err


HOSTILE = "what is \x1b[2J\x1b]0;pwned\x07 a bell\x00 ?"


def test_predict_text_output_escapes_control_characters(capsys):
    assert main(["predict", str(SHIPPED / "kim_cnn-trec"), HOSTILE]) == 0
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x1b\x07\x00") and "\\x1b" in out


def test_counterfactual_examples_escape_control_characters(tmp_path, capsys):
    path = tmp_path / "hostile.csv"
    path.write_text("text,label\n" + "".join(f'"{HOSTILE} number {i}",{i % 2}\n' for i in range(30)))
    assert main(["counterfactuals", str(SHIPPED / "kim_cnn-trec"), "--data", str(path), "--split", "train",
                 "--generator", "scrambler", "--examples", "3"]) == 0
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x1b\x07\x00") and "\\x1b" in out


# ---------------------------------------------------------------- 11 relation generators


@pytest.mark.parametrize("name", ["act-semeval2010", "transformer-semeval2010"])
@pytest.mark.parametrize("generator", ["ablation_flip", "hotflip", "glove"])
def test_relation_generators_edit_words_never_tags(name, generator, capsys):
    assert main(["counterfactuals", str(SHIPPED / name), "--data", "semeval2010", "--split", "test",
                 "--generator", generator, "--limit", "8", "--examples", "8", "--json"]) == 0, capsys.readouterr().err
    rep = json.loads(capsys.readouterr().out)
    assert rep["n"] == rep["n_texts"] == 8
    from textcls.data.relation import parse_spans
    for ex in rep["examples"]:
        parse_spans(ex["edited"].split())              # all four tags, each entity non-empty


def test_a_relation_text_longer_than_the_window_keeps_its_entities(shipped_predictors):
    p = shipped_predictors["act-semeval2010"]
    n = p.tokenizer.config.max_len
    text = " ".join(["filler"] * (n + 50)) + " the <e1>burst</e1> was caused by water <e2>pressure</e2> ."
    pred = p.predict([text])[0]
    assert pred.truncated and len(pred.tokens) <= n
    assert [t for t in pred.tokens if t.startswith("<")] == ["<e1>", "</e1>", "<e2>", "</e2>"]
    short = p.predict(["the <e1>burst</e1> was caused by water <e2>pressure</e2> ."])[0]
    assert pred.label == short.label


# ---------------------------------------------------------------- 12 overwrites


def test_train_refuses_the_shipped_folder_and_an_existing_out_without_overwrite(tmp_path, monkeypatch, capsys):
    shipped = tmp_path / "shipped"
    shutil.copytree(SHIPPED / "kim_cnn-trec", shipped / "kim_cnn-trec")
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(shipped))
    before = (shipped / "kim_cnn-trec" / "model.safetensors").read_bytes()
    assert main(["train", "--model", "kim_cnn", "--data", "trec", "--out", str(shipped / "kim_cnn-trec"),
                 "--overwrite", *TINY]) == 2
    assert "shipped" in error_line(capsys)
    assert (shipped / "kim_cnn-trec" / "model.safetensors").read_bytes() == before

    out = tmp_path / "mine"
    assert main(["train", "--model", "kim_cnn", "--data", "trec", "--out", str(out), *TINY]) == 0
    first = (out / "config.json").read_text()
    capsys.readouterr()
    assert main(["train", "--model", "kim_cnn", "--data", "trec", "--out", str(out), "--seed", "1", *TINY]) == 2
    assert "--overwrite" in error_line(capsys)
    assert (out / "config.json").read_text() == first
    assert main(["train", "--model", "kim_cnn", "--data", "trec", "--out", str(out), "--seed", "1", "--overwrite",
                 *TINY]) == 0
    assert (out / "config.json").read_text() != first


def test_a_second_training_to_the_same_out_is_refused_while_the_first_runs(tmp_path, capsys):
    from textcls.cli.train import claim_file
    out = tmp_path / "race"
    claim_file(out).write_text(str(os.getppid()))            # a live process is training into `out`
    assert main(["train", "--model", "kim_cnn", "--data", "trec", "--out", str(out), *TINY]) == 2
    assert "another training" in error_line(capsys)
    claim_file(out).write_text("999999999")                   # its process is gone: the claim is taken over
    assert main(["train", "--model", "kim_cnn", "--data", "trec", "--out", str(out), *TINY]) == 0
    assert not claim_file(out).exists() and (out / "config.json").is_file()
