"""The Train and Evaluate pages through Streamlit's AppTest: a real (tiny) training run started, stopped and
saved through the page, bad uploads, and the Evaluate page's metrics, mistakes -> Inspect, curves and
data-set views on tiny checkpoints."""
from __future__ import annotations


import numpy as np
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from textcls.checkpoint import load_checkpoint
from textcls.data.datasets import load_data
from textcls.analysis.metrics import evaluate
from textcls.train.pipeline import train_from_spec

from app_pages import metric, open_page, texts_of, user_folders, wait_for

RANDOM = "random"


@pytest.fixture
def env(tmp_path, monkeypatch, bundled_data):
    """The user's checkpoint folder ($TEXTCLS_HOME/checkpoints), where the Train page saves; the shipped folder
    (TEXTCLS_CHECKPOINTS) is an empty tmp_path/shipped that must stay empty."""
    (tmp_path / "shipped").mkdir()
    return user_folders(monkeypatch, tmp_path, tmp_path / "shipped", data=bundled_data)


def app(page: str) -> AppTest:
    return open_page(page)


def button(at: AppTest, label: str):
    found = [b for b in at.button if b.label == label]
    assert found, f"no button {label!r} among {[b.label for b in at.button]}"
    return found[0]




# ---------------------------------------------------------------- Train


def test_train_page_runs_stops_and_saves_a_checkpoint(env):
    at = app("pages/train.py")
    assert "No run yet" in texts_of(at.info)
    at.radio(key="tr_emb").set_value(RANDOM)
    at.number_input(key="tr_limit").set_value(300)
    at.run()
    at.selectbox(key="tr_model").set_value("kim_cnn")
    at.run()
    assert at.selectbox(key="tr_preset_kim_cnn").value == "small"
    at.number_input(key="tr_epochs").set_value(200)            # long enough to be stopped
    name_box = next(t for t in at.text_input if t.label == "Checkpoint name")
    name_box.set_value("tiny_run")
    button(at, "Start training").click()
    at.run()
    assert not at.error, texts_of(at.error)
    jid = at.session_state["train_jobs"][-1]
    # the page polls the background job: wait for a completed epoch, then press Stop
    wait_for(at, lambda a: int(metric(a, "Epochs done").split("/")[0]) >= 1, what="the first epoch")
    assert metric(at, "Dev accuracy") != "—"
    at.button(key=f"tr_stop_{jid}").click()
    wait_for(at, lambda a: any("Stopped by you" in str(x.value) for x in a.warning), what="the stop")
    saved = env / "tiny_run"
    assert not any((env.parents[1] / "shipped").iterdir())       # the shipped folder is never written
    p = load_checkpoint(saved)                                  # a complete checkpoint, best weights so far
    assert p.model.registry_name == "kim_cnn" and p.info["data"]["limit"] == 300
    assert p.info["training"]["stopped_reason"].startswith("stopped by user")
    assert 1 <= len(p.info["metrics"]) and "test" not in p.info["metrics"]
    # ... and it is on the other pages at once
    at.switch_page("pages/evaluate.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.multiselect(key="eval_ckpts").value == ["tiny_run"]
    assert at.dataframe[0].value["checkpoint"].tolist() == ["tiny_run"]


@pytest.mark.parametrize("model", __import__("textcls").list_models())
def test_every_model_trains_at_the_page_defaults(env, model):
    """Each registered model, chosen on the Train page with every other control at its default (bar a small
    sample and one epoch), starts a run that saves a checkpoint: no default value is rejected by the form."""
    at = app("pages/train.py")
    at.radio(key="tr_emb").set_value(RANDOM)
    at.number_input(key="tr_limit").set_value(60)
    at.run()
    at.selectbox(key="tr_model").set_value(model)
    at.run()
    at.number_input(key="tr_epochs").set_value(1)
    button(at, "Start training").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, texts_of(at.error)
    assert len(at.session_state["train_jobs"]) == 1
    name = next(t for t in at.text_input if t.label == "Checkpoint name").value
    wait_for(at, lambda a: (env / name / "config.json").exists() or bool(a.error), what=f"{model}'s checkpoint")
    assert not at.error, texts_of(at.error)
    assert load_checkpoint(env / name).model.registry_name == model


def test_train_page_passes_the_extra_glove_vocabulary(env):
    at = app("pages/train.py")
    at.number_input(key="tr_limit").set_value(100)
    at.run()
    at.selectbox(key="tr_model").set_value("kim_cnn")
    at.run()
    at.number_input(key="tr_extra_vocab").set_value(2000)
    at.number_input(key="tr_epochs").set_value(1)
    next(t for t in at.text_input if t.label == "Checkpoint name").set_value("glove_run")
    button(at, "Start training").click()
    at.run()
    assert not at.error, texts_of(at.error)
    wait_for(at, lambda a: (env / "glove_run" / "config.json").exists(), what="the saved checkpoint")
    vocab = load_checkpoint(env / "glove_run").info["vocab"]
    assert vocab["extra_vocab"] == 2000 and 0 < vocab["extra_added"] <= 2000


def test_train_page_rejects_a_name_in_use_and_bad_settings(env):
    at = app("pages/train.py")
    (env / "taken").mkdir()
    next(t for t in at.text_input if t.label == "Checkpoint name").set_value("taken")
    button(at, "Start training").click()
    at.run()
    assert "exists already" in texts_of(at.error)
    next(t for t in at.text_input if t.label == "Checkpoint name").set_value("bad name!")
    button(at, "Start training").click()
    at.run()
    assert "checkpoint name must start" in texts_of(at.error)
    for hostile in ("x" * 300, "..", "../escape"):                 # too long for the disk; outside the folder
        next(t for t in at.text_input if t.label == "Checkpoint name").set_value(hostile)
        button(at, "Start training").click()
        at.run()
        assert not at.exception and "checkpoint name must start" in texts_of(at.error)
        assert "exists already" not in texts_of(at.error)
    assert at.session_state["train_jobs"] == []


def hyper(at: AppTest, name: str, model: str = "kim_cnn", preset: str = "small"):
    """The hyper-parameter field `name` of the Train form (kim_cnn, "small" preset, no variant)."""
    key = f"tr_f_{model}_{preset}_None_{name}"
    found = [x for x in [*at.text_input, *at.number_input] if x.key == key]
    assert found, f"no field {key}"
    return found[0]


def test_train_errors_escape_markdown_and_shorten_user_input(env):
    at = app("pages/train.py")
    at.radio(key="tr_emb").set_value(RANDOM)
    at.run()
    hostile = "3, 4, `a` ![x](https://example.com/x.png) [link](javascript:alert(3)) <b>bold</b>"
    hyper(at, "windows").set_value(hostile)
    button(at, "Start training").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    raw = " | ".join(str(e.value) for e in at.error)
    assert "windows: expected numbers" in texts_of(at.error)
    # every markdown / HTML character of the user's value is escaped: no image, link, code span or tag renders
    for needle in ("![x]", "](https", "[link]", "`a`", "<b>"):
        assert needle not in raw, (needle, raw)
    assert "\\!\\[x\\]" in raw and "\\<b\\>" in raw
    # a 100,000-character value is quoted shortened, not in full
    hyper(at, "windows").set_value("9" * 50_000 + "x" * 50_000)
    button(at, "Start training").click()
    at.run()
    msg = texts_of(at.error)
    assert "windows: expected numbers" in msg and "…" in msg and len(msg) < 400
    assert at.session_state["train_jobs"] == []


@pytest.mark.parametrize("field, value, expected", [
    ("n_filters", 0, "n_filters must be at least 1 (got 0)"),
    ("embed_dim", -3, "embed_dim must be at least 1 (got -3)"),
    ("windows", "2, 0", "windows must be at least 1 (got 0)"),
])
def test_train_rejects_non_positive_sizes_before_a_run(env, field, value, expected):
    at = app("pages/train.py")
    at.radio(key="tr_emb").set_value(RANDOM)
    at.run()
    hyper(at, field).set_value(value)
    button(at, "Start training").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert expected in texts_of(at.error)
    assert at.session_state["train_jobs"] == [] and not any(env.iterdir())   # no run started, nothing saved


def test_malformed_and_good_uploads(env):
    at = app("pages/train.py")
    at.radio(key="tr_source").set_value("Upload a file")
    at.run()
    at.file_uploader(key="tr_upload").set_value(("reviews.csv", b"text,label\nfine film,pos\nbad,row,extra\n",
                                                  "text/csv"))
    at.run()
    assert not at.exception
    err = texts_of(at.error)
    assert "reviews.csv, line 3: expected 2 fields" in err and "textcls-upload" not in err
    at.file_uploader(key="tr_upload").set_value(("notes.jsonl", b'{"x": "a"}\nnot json\n', "application/json"))
    at.run()
    assert "line 2" in texts_of(at.error) and "not valid JSON" in texts_of(at.error)
    good = "sentence,stars\n" + "".join(f"review number {i} is {'good' if i % 2 else 'bad'},{i % 2}\n"
                                        for i in range(40))
    at.file_uploader(key="tr_upload").set_value(("stars.csv", good.encode(), "text/csv"))
    at.run()
    assert not at.error, texts_of(at.error)
    assert at.selectbox(key="tr_text_col").value == "sentence"
    assert at.selectbox(key="tr_label_col").value == "stars"
    table = at.dataframe[0].value
    assert table["rows"].sum() == 40 and list(table["split"]) == ["train", "dev", "test"]
    at.selectbox(key="tr_label_col").set_value("sentence")
    at.run()
    assert "must differ" in texts_of(at.error)


# ---------------------------------------------------------------- Evaluate


@pytest.fixture(scope="module")
def trained(tmp_path_factory, bundled_data):
    root = tmp_path_factory.mktemp("eval_ckpts")
    for model in ("kim_cnn", "lama"):
        train_from_spec("sst2", model, preset="small", embeddings="random", epochs=2, limit=200,
                        data_root=bundled_data, out=root / f"{model}_tiny", train_overrides={"batch_size": 25})
    return root


@pytest.fixture
def eval_app(trained, tmp_path, monkeypatch, bundled_data):
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(trained))
    monkeypatch.setenv("TEXTCLS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TEXTCLS_DATA", str(bundled_data))
    from pages.common import cache as page_cache
    page_cache.forget(data=True)
    at = app("pages/evaluate.py")
    at.selectbox(key="eval_split").set_value("dev")
    at.run()
    at.number_input(key="eval_limit_sst2_dev").set_value(120)
    at.run()
    assert not at.exception and not at.error, texts_of(at.error)
    return at


def test_evaluate_metrics_match_the_library(eval_app, trained, bundled_data):
    at = eval_app
    assert at.multiselect(key="eval_ckpts").value == ["kim_cnn_tiny", "lama_tiny"]
    dev = load_data("sst2", root=bundled_data).splits["dev"].sample(120, seed=0)
    summary = at.dataframe[0].value.set_index("checkpoint")
    per_class = at.dataframe[1].value
    for name in ("kim_cnn_tiny", "lama_tiny"):
        rep = evaluate(load_checkpoint(trained / name), dev)
        assert summary.loc[name, "accuracy"] == pytest.approx(rep["accuracy"])
        assert summary.loc[name, "macro-F1"] == pytest.approx(rep["macro_f1"])
        assert summary.loc[name, "examples"] == 120
        assert summary.loc[name, "errors"] == round(120 * (1 - rep["accuracy"]))
        rows = per_class[per_class["checkpoint"] == name].set_index("label")
        assert rows.loc["positive", "f1"] == pytest.approx(rep["per_class"]["positive"]["f1"])
    labels = [c.label for c in at.get("download_button")]
    assert "Metrics (CSV)" in labels and "Per-class scores (CSV)" in labels


def test_evaluate_mistake_opens_in_inspect(eval_app):
    at = eval_app
    pick = at.selectbox(key="eval_err_pick_kim_cnn_tiny")
    assert pick.options                                          # the tiny model makes mistakes
    at.selectbox(key="eval_err_pick_kim_cnn_tiny").set_value(pick.options[1] if len(pick.options) > 1 else
                                                             pick.options[0])
    at.run()
    errors = at.dataframe[2].value
    chosen = errors.iloc[1 if len(errors) > 1 else 0]
    at.button(key="eval_err_inspect").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    from textcls.data.text import readable
    assert readable(at.session_state["insp_text"]) == chosen["text"]  # the text evaluated (shown readable)
    assert at.session_state["insp_ckpt"] == "kim_cnn_tiny"
    assert any(t.value == "Inspect a model" for t in at.title)        # we are on the Inspect page ...
    assert at.text_area(key="insp_text").value == at.session_state["insp_text"]      # ... with that text


def test_evaluate_disagreement_opens_two_checkpoints(eval_app):
    at = eval_app
    dis = at.dataframe[3].value
    assert len(dis) > 0 and set(dis.columns) >= {"kim_cnn_tiny", "lama_tiny", "gold", "right"}
    assert (dis["kim_cnn_tiny"] != dis["lama_tiny"]).all()
    at.button(key="eval_dis_inspect").click()
    at.run()
    assert at.session_state["insp_two"] is True
    assert {at.session_state["insp_ckpt"], at.session_state["insp_ckpt2"]} == {"kim_cnn_tiny", "lama_tiny"}


def test_evaluate_curves_and_corpus_views(eval_app):
    at = eval_app
    assert at.multiselect(key="eval_curve_y").value == ["train_loss", "dev_accuracy"]
    # LAMA: the token weights over the split, then LAMA-T4 and LAMA-F2
    at.selectbox(key="eval_ds_ckpt").set_value("lama_tiny")
    at.run()
    assert at.radio(key="eval_ds_view").options[:2] == ["Top attended words (LAMA Table 4)",
                                                         "A word's weight by label (LAMA Fig. 2)"]
    button(at, "Compute the token weights over 120 texts").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not [b for b in at.button if b.label.startswith("Compute")]   # computed: the button is gone
    at.number_input(key="eval_tw_min").set_value(2)
    at.run()
    tables = [d.value for d in at.dataframe if "word" in d.value.columns and "rank" in d.value.columns]
    assert tables and set(tables[0]["label"]) == {"negative", "positive"}
    at.radio(key="eval_ds_view").set_value("A word's weight by label (LAMA Fig. 2)")
    at.run()
    at.text_input(key="eval_f2_typed").set_value("the")
    at.run()
    summary = next(d.value for d in at.dataframe if "occurrences" in d.value.columns)
    assert summary["occurrences"].sum() > 0 and set(summary["label"]) <= {"negative", "positive"}
    # Kim CNN: filter n-grams
    at.selectbox(key="eval_ds_ckpt").set_value("kim_cnn_tiny")
    at.run()
    assert at.radio(key="eval_ds_view").options[-1] == "Filter n-grams"
    at.radio(key="eval_ds_view").set_value("Filter n-grams")
    at.run()
    button(at, "Compute the filter activations over 120 texts").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(d.value for d in at.dataframe if "ngram" in d.value.columns)
    assert set(table["bank"]) == {"conv_h2", "conv_h3"} and (table["rank"] >= 1).all()
    assert all(len(g.split()) <= int(b[-1]) for g, b in zip(table["ngram"], table["bank"]))
    assert np.isfinite(table["activation"]).all()


def test_hub_data_set_offline_fails_with_a_message(env):
    at = app("pages/train.py")
    at.radio(key="tr_source").set_value("Hugging Face hub")
    at.run()
    assert "switched off" in texts_of(at.warning)              # HF_HUB_OFFLINE is set by the fixture
    at.text_input(key="tr_hub").set_value("not a/valid id")
    at.run()
    assert "owner/name" in texts_of(at.error)
    at.text_input(key="tr_hub").set_value("ag_news")
    at.radio(key="tr_emb").set_value(RANDOM)
    at.run()
    button(at, "Start training").click()
    at.run()
    wait_for(at, lambda a: bool(a.error), timeout=60, what="the hub failure")
    msg = texts_of(at.error)
    assert "DataError" in msg and "HF_HUB_OFFLINE" in msg and "nothing new was saved" in msg
    assert not any(env.iterdir())


def test_evaluate_on_the_users_own_file(trained, tmp_path, monkeypatch):
    """Evaluate accepts an uploaded labelled file (columns chosen), evaluates all of it, and reports a malformed
    file by its line, like Train."""
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(trained))
    from pages.common import cache as page_cache
    page_cache.forget(data=True)
    at = app("pages/evaluate.py")
    at.radio(key="eval_source").set_value("Your labelled file")
    at.run()
    at.file_uploader(key="eval_upload").set_value(("mine.csv", b"review,y\ngreat,positive\nbad,row,x\n", "text/csv"))
    at.run()
    assert not at.exception and "mine.csv, line 3: expected 2 fields" in texts_of(at.error)
    dev = load_data("sst2").splits["dev"].sample(30, seed=0)
    rows = "".join(f'"{t}",{["negative", "positive"][y]}\n' for t, y in zip(dev.texts, dev.labels))
    at.file_uploader(key="eval_upload").set_value(("mine.csv", ("review,y\n" + rows).encode(), "text/csv"))
    at.run()
    assert not at.exception and not at.error, texts_of(at.error)
    assert at.selectbox(key="eval_text_col").value == "review" and at.selectbox(key="eval_label_col").value == "y"
    summary = at.dataframe[0].value.set_index("checkpoint")
    rep = evaluate(load_checkpoint(trained / "kim_cnn_tiny"), dev)
    assert summary.loc["kim_cnn_tiny", "examples"] == 30
    assert summary.loc["kim_cnn_tiny", "accuracy"] == pytest.approx(rep["accuracy"])


def test_evaluate_tables_show_readable_text_and_hand_over_the_evaluated_one(eval_app):
    """Issue 27.8: the SST files' Penn Treebank escapes (-lrb-, ``) are not shown raw in Evaluate's tables; Open in
    Inspect hands over the text exactly as it was evaluated."""
    from textcls.data.text import readable
    at = eval_app
    at.number_input(key="eval_limit_sst2_dev").set_value(872)       # the whole dev split
    at.run()
    assert not at.exception
    tables = [d.value for d in at.dataframe if "text" in getattr(d.value, "columns", [])]
    assert len(tables) >= 2                                          # mistakes, disagreements
    dev = load_data("sst2").splits["dev"].texts
    assert any("-lrb-" in t or "``" in t for t in dev)              # the split has them ...
    for t in tables:
        for junk in ("-lrb-", "-rrb-", "``", "<br"):
            assert not t["text"].str.contains(junk, regex=False).any(), junk   # ... the tables do not
    errors = at.dataframe[2].value
    raw = next((k for k in range(len(errors)) if dev[int(errors.iloc[k]["#"])] != errors.iloc[k]["text"]), None)
    if raw is not None:                                              # a mistake whose text was made readable
        at.selectbox(key="eval_err_pick_kim_cnn_tiny").set_value(raw).run()
        at.button(key="eval_err_inspect").click().run()
        assert at.session_state["insp_text"] == dev[int(errors.iloc[raw]["#"])]
        assert readable(at.session_state["insp_text"]) == errors.iloc[raw]["text"]


def test_comparison_pages_open_on_every_main_task_checkpoint_and_curves_name_their_data(trained, tmp_path,
                                                                                        monkeypatch, bundled_data):
    """Issue 27.6: Evaluate and Explore open with every checkpoint of the main task (not the first 3 or 2), and the
    training-curve overlay says when runs were trained on different data (sst2_phrases vs sst2)."""
    import json
    import shutil
    root = tmp_path / "ck"
    for k in range(4):
        shutil.copytree(trained / ("kim_cnn_tiny" if k % 2 else "lama_tiny"), root / f"m{k}_sst2")
    cfg = json.loads((root / "m3_sst2" / "config.json").read_text())
    cfg["data"]["trained_on"] = "sst2_phrases"
    (root / "m3_sst2" / "config.json").write_text(json.dumps(cfg))
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(root))
    monkeypatch.setenv("TEXTCLS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TEXTCLS_DATA", str(bundled_data))
    from pages.common import cache as page_cache
    page_cache.forget(data=True)
    every = [f"m{k}_sst2" for k in range(4)]
    at = app("pages/explore.py")
    assert at.multiselect(key="exp_ckpts").value == every
    at = app("pages/evaluate.py")
    assert at.multiselect(key="eval_ckpts").value == every
    warn = texts_of(at.warning)
    assert "trained on different data" in warn and "sst2_phrases" in warn and "m3_sst2" in warn
    metrics = at.dataframe[0].value                       # the metrics table names the data each was trained on
    assert dict(zip(metrics["checkpoint"], metrics["trained on"]))["m3_sst2"] == "sst2_phrases"
