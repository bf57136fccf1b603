"""The Train page's second kind of model: a pretrained Hugging Face encoder fine-tuned with a fresh head
(textcls.train.hf) through the page's job path. Offline: a tiny random BERT saved to a temporary folder
(hf_toys.tiny_folder) is the encoder; a seeded sample of sst2 rows and a fraction of an epoch keep runs short."""
from __future__ import annotations

import json
import shutil

import pytest
from streamlit.testing.v1 import AppTest

pytest.importorskip("transformers")

from app_pages import metric, open_page, texts_of, user_folders, wait_for  # noqa: E402
from hf_toys import tiny_folder  # noqa: E402

import textcls  # noqa: E402
from textcls.checkpoint import load_history  # noqa: E402
from textcls.train import hf as hf_train  # noqa: E402
from textcls.train.pipeline import TrainSpec  # noqa: E402

PRETRAINED = "A pretrained Hugging Face encoder, fine-tuned"
FOLDER = "Folder on this machine"


@pytest.fixture
def env(tmp_path, monkeypatch, bundled_data):
    """The user's folder in tmp ($TEXTCLS_HOME/checkpoints, where runs are saved), an empty shipped folder, the
    bundled data, the hub switched off."""
    (tmp_path / "shipped").mkdir()
    return user_folders(monkeypatch, tmp_path, tmp_path / "shipped", data=bundled_data)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_folder(tmp_path_factory.mktemp("hf_base"), "bert")



def hf_page(rows: int = 40) -> AppTest:
    """The Train page with a sample of `rows` sst2 rows per split and the pretrained-encoder kind chosen."""
    at = open_page("pages/train.py")
    at.number_input(key="tr_limit").set_value(rows)
    at.run()
    at.radio(key="tr_kind").set_value(PRETRAINED)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def choose_folder(at: AppTest, folder) -> None:
    at.radio(key="tr_hf_source").set_value(FOLDER)
    at.run()
    at.text_input(key="tr_hf_folder").set_value(str(folder))
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def start(at: AppTest) -> None:
    next(b for b in at.button if b.label == "Start fine-tuning").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def name_box(at: AppTest):
    return next(t for t in at.text_input if t.label == "Checkpoint name")




def test_the_pretrained_kind_is_offered_with_the_installed_bases(env):
    at = open_page("pages/train.py")
    assert PRETRAINED in at.radio(key="tr_kind").options
    assert at.selectbox(key="tr_model").value                   # the textcls families stay the default
    at.radio(key="tr_kind").set_value(PRETRAINED)
    at.run()
    assert not at.exception and not at.error, texts_of(at.error)
    assert not [s for s in at.selectbox if s.key == "tr_model"]  # the textcls form is gone ...
    assert [b.label for b in at.button if b.label.startswith("Start")] == ["Start fine-tuning"]
    bases = hf_train.installed_bases()
    ready = [b["name"] for b in bases if b["installed"]]
    if ready:                                                   # ... the installed bases are offered
        box = at.selectbox(key="tr_hf_base")
        assert box.value == ready[0] and [o.split(" (")[0] for o in box.options] == ready
    captions = texts_of(at.caption)
    for b in bases:                                             # ... and the missing ones say how to install them
        assert (b["install"] in captions) != b["installed"]
    assert at.number_input(key="tr_hf_epochs").value == 0.5
    assert at.number_input(key="tr_hf_lr").value == hf_train.DEFAULTS["lr"]
    assert at.checkbox(key="tr_hf_freeze").value is True
    assert "AdamW" in captions and "warm-up" in captions
    at.radio(key="tr_hf_source").set_value("Hub id")
    at.run()
    assert "only when this server is online" in texts_of(at.caption)
    assert "switched off" in texts_of(at.warning)              # HF_HUB_OFFLINE=1 in this test


def test_a_tiny_folder_fine_tunes_to_a_checkpoint_in_the_user_folder(env, tiny):
    at = hf_page(rows=40)
    choose_folder(at, tiny)
    assert not at.error, texts_of(at.error)
    assert "bert · 2 layers" in texts_of(at.caption)
    assert name_box(at).value == "tiny-bert-sst2"
    at.number_input(key="tr_hf_epochs").set_value(0.5)
    at.number_input(key="tr_hf_lr").set_value(1e-3)
    at.number_input(key="tr_hf_max_len").set_value(24)
    start(at)
    assert not at.error, texts_of(at.error)
    (jid,) = at.session_state["train_jobs"]
    saved = env / "tiny-bert-sst2"
    wait_for(at, lambda a: any("saved" in str(x.value) for x in a.success) or bool(a.error), what="the run",
             timeout=300)
    assert not at.error, texts_of(at.error)
    assert "hf:tiny-bert on sst2 → tiny-bert-sst2" in " ".join(m.value for m in at.markdown).replace("\\", "")
    assert metric(at, "Epochs done") == "1/1"
    assert {"dev", "test"} <= set(at.dataframe[0].value["split"])       # the run's metrics table
    assert not any((env.parents[1] / "shipped").iterdir())
    # the checkpoint: its record holds the data, the recipe with the page's settings, metrics and the history
    meta = json.loads((saved / "textcls.json").read_text())
    assert meta["base"] == f"hf:{tiny}" and meta["data"]["name"] == "sst2"
    assert meta["training"]["epochs"] == 0.5 and meta["training"]["lr"] == 1e-3
    assert meta["training"]["max_len"] == 24 and meta["training"]["freeze_word_embeddings"] is True
    assert 0 <= meta["metrics"]["test"]["accuracy"] <= 1 and meta["metrics"]["test"]["n"] == 40
    assert meta["metrics"]["test_accuracy"] == meta["metrics"]["test"]["accuracy"]
    hist = load_history(saved)
    assert hist.steps == 2 and len(hist.step_losses) == 2     # half of ceil(40 / 16) = 3 steps, rounded up
    assert len(hist.epochs) == 1 and hist.epochs[0].dev_accuracy is not None
    p = textcls.load_checkpoint(saved)                          # a complete checkpoint, listed beside the others
    assert p.labels == ["negative", "positive"] and p.predict("good film")[0].label in p.labels
    assert at.session_state["train_current"] == jid


def test_a_long_run_is_stopped_from_the_page_and_saved(env, tiny):
    at = hf_page(rows=40)
    choose_folder(at, tiny)
    at.number_input(key="tr_hf_epochs").set_value(2000.0)      # far too long to end by itself
    at.number_input(key="tr_hf_lr").set_value(1e-3)            # the tiny model's dev accuracy moves
    name_box(at).set_value("stopped_hf")
    start(at)
    assert not at.error, texts_of(at.error)
    (jid,) = at.session_state["train_jobs"]
    wait_for(at, lambda a: int(metric(a, "Epochs done").split("/")[0]) >= 1, what="the first epoch", timeout=300)
    assert metric(at, "Epochs done").endswith("/2000")
    at.button(key=f"tr_stop_{jid}").click()
    wait_for(at, lambda a: any("Stopped by you" in str(x.value) for x in a.warning), what="the stop", timeout=300)
    hist = load_history(env / "stopped_hf")
    assert hist.stopped_by_user and hist.steps < 2000 * 3
    # it ends, as the textcls models do, with the weights of its best dev epoch: the saved dev accuracy is the best
    meta = json.loads((env / "stopped_hf" / "textcls.json").read_text())
    assert meta["metrics"]["dev"]["accuracy"] == pytest.approx(hist.best_dev_accuracy)
    assert hist.best_dev_accuracy == max(e.dev_accuracy for e in hist.epochs)
    assert textcls.load_checkpoint(env / "stopped_hf").predict("bad")[0].label in ("negative", "positive")


@pytest.mark.parametrize("how, words", [("no_safetensors", "missing model.safetensors"),
                                        ("remote_code", "trust_remote_code"),
                                        ("missing", "no such folder")])
def test_a_bad_folder_gives_one_error_and_no_job(env, tiny, tmp_path, how, words):
    bad = tmp_path / f"bad-{how}"
    if how != "missing":
        shutil.copytree(tiny, bad)
    if how == "no_safetensors":
        (bad / "model.safetensors").unlink()
    elif how == "remote_code":
        cfg = json.loads((bad / "config.json").read_text())
        cfg["auto_map"] = {"AutoModelForSequenceClassification": "evil.Model"}
        (bad / "config.json").write_text(json.dumps(cfg))
        (bad / "evil.py").write_text("raise SystemExit('executed!')\n")
    at = hf_page()
    choose_folder(at, bad)
    assert len(at.error) == 1 and words in texts_of(at.error), texts_of(at.error)
    start(at)
    assert len(at.error) == 1 and words in texts_of(at.error), texts_of(at.error)
    assert at.session_state["train_jobs"] == [] and not any(env.iterdir())


def test_bad_settings_and_a_textcls_checkpoint_in_the_way_are_refused(env, tiny):
    textcls.train_from_spec("sst2", "kim_cnn", preset="small", embeddings="random", epochs=1, limit=20,
                            out=env / "taken")
    at = hf_page()
    choose_folder(at, tiny)
    name_box(at).set_value("taken")
    start(at)
    assert "exists already" in texts_of(at.error)
    at.checkbox(key="tr_hf_replace").set_value(True)
    at.number_input(key="tr_hf_lr").set_value(0.0)
    start(at)
    msg = texts_of(at.error)
    assert "not a Hugging Face checkpoint" in msg and "lr must be a number > 0" in msg
    assert at.session_state["train_jobs"] == []
    assert (env / "taken" / "vocab.json").is_file()             # the textcls checkpoint is untouched


def test_epochs_may_be_a_fraction_only_for_an_encoder():
    assert TrainSpec("sst2", "hf:x", epochs=0.5).epochs == 0.5
    assert TrainSpec("sst2", "kim_cnn", epochs=3.0).epochs == 3
    with pytest.raises(ValueError, match="whole number"):
        TrainSpec("sst2", "kim_cnn", epochs=0.5)
    with pytest.raises(ValueError, match="epochs must be a number"):
        TrainSpec("sst2", "hf:x", epochs=float("nan"))
    assert hf_train.settings_problems(0.5, dict(hf_train.DEFAULTS)) == []
    assert any("epochs" in p for p in hf_train.settings_problems(0.0, {}))
    assert any("max_len" in p for p in hf_train.settings_problems(1, {"max_len": 2}))
