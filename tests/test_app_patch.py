"""Issue 58.5: the Patch page (Streamlit AppTest, tiny untrained checkpoints) - it opens without an exception, draws
the activation- and attribution-patching grids with the tokens on the x axis, follows a change of grid and of
checkpoint, shows a cell's patched prediction (the library's), and says in one warning, without a traceback, that a
pair which does not line up cannot be patched. The lesson "Where does 'not good' become negative?" on the shipped
checkpoints: every step gives its figures and notes, and the findings its texts point at hold."""
from __future__ import annotations

import json

import numpy as np
import pytest

from app_pages import open_page, shown_charts
from test_app_home_compare_inspect import build_checkpoints

PAGE = "pages/patch.py"


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    root = tmp_path_factory.mktemp("patch_ckpts")
    return root, build_checkpoints(root, ("transformer", "agcnn"))


@pytest.fixture
def page(ckpts, monkeypatch):
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(ckpts[0]))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    return lambda: open_page(PAGE)


def _axes(chart) -> tuple[list[str], list[str], str]:
    spec = json.loads(chart.proto.spec)
    lay = spec["layout"]
    return list(lay["xaxis"]["ticktext"]), list(lay["yaxis"]["ticktext"]), lay["title"]["text"]


def test_the_page_draws_both_grids_follows_the_grid_and_shows_a_cell(page, ckpts):
    from textcls.checkpoint import load_checkpoint
    from textcls.interpret.patching import patch_pair
    at = page()
    at.selectbox(key="patch_ckpt").set_value("transformer_tiny").run()
    assert not at.exception, [e.value for e in at.exception]
    charts = shown_charts(at)
    assert len(charts) == 2                                              # activation and attribution patching
    x, y, title = _axes(charts[0])
    words = ["the", "movie", "was", "<b>not/very</b>", "good"]                 # the tokens, the changed one bold
    assert x[-1] == "<b>all</b>" and x[-1 - len(words):-1] == words, x
    assert y[:2] == ["embeddings", "layer 1"] and "share restored" in title, y
    assert "attribution" in _axes(charts[1])[2]
    assert any("restored" in m.value for m in at.markdown) and at.get("latex")   # the definitions on screen
    assert list(at.radio(key="patch_by").options) == ["layer x position", "layer x head"]

    r = patch_pair(load_checkpoint(ckpts[0] / "transformer_tiny"), "the movie was not good", "the movie was very good")
    next(s for s in at.selectbox if s.key.startswith("patch_row_")).set_value("layer 1").run()
    next(s for s in at.selectbox if s.key.startswith("patch_col_")).set_value("not/very").run()
    cell = r.cell("layer 1", "not/very")
    shown = {m.label: m.value for m in at.metric}
    assert shown["Restored (activation patching)"] == f"{cell['restored']:.3f}"
    label = cell["prediction"]["label"]
    assert shown["Patched prediction"] == f"{label} ({cell['prediction']['probabilities'][label]:.2f})"
    assert len(at.dataframe) == 1 and len(at.dataframe[0].value) == 3   # corrupted, patched, clean

    at.radio(key="patch_by").set_value("head").run()
    assert not at.exception, [e.value for e in at.exception]
    x, y, _ = _axes(shown_charts(at)[0])
    assert x[:2] == ["head 1", "head 2"] and x[-1] == "<b>all</b>" and y[0] == "layer 1"
    assert at.query_params["by"] in ("head", ["head"])

    at.selectbox(key="patch_ckpt").set_value("agcnn_tiny").run()          # its grids: maps, gates, channels
    assert not at.exception, [e.value for e in at.exception]
    assert at.radio(key="patch_by").value == "layer"                      # "head" is not AGCNN's: back to the first
    assert "gates (gate x start word)" in at.radio(key="patch_by").options
    at.radio(key="patch_by").set_value("position").run()
    assert not at.exception, [e.value for e in at.exception]
    _, y, _ = _axes(shown_charts(at)[0])
    assert y[0].startswith("gate h")


def test_a_pair_that_does_not_line_up_is_one_warning(page):
    at = page()
    at.selectbox(key="patch_ckpt").set_value("transformer_tiny").run()
    at.text_input(key="patch_corrupt").input("the movie was good")
    next(b for b in at.button if b.label == "Patch").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [x for x in at.warning if "do not line up word by word" in x.value], [x.value for x in at.warning]
    assert not at.error and not shown_charts(at)
    at.selectbox(key="patch_example").set_value("a great film / a dull film").run()   # an example pair: drawn again
    assert not at.exception and not at.warning and len(shown_charts(at)) == 2


def test_the_worker_job_returns_plain_data(ckpts):
    import pickle

    from textcls.checkpoint import load_checkpoint
    from textcls.interpret.patching import PairError
    from textcls.serve import work
    assert "patch" in work.JOBS and not work.JOBS["patch"].own_scope
    load = lambda path, stamp: load_checkpoint(path)  # noqa: E731
    path = str(ckpts[0] / "transformer_tiny")
    r = work.run(load, "patch", path, 1.0, "the movie was not good", "the movie was very good", "layer")
    assert r.rows[0] == "embeddings" and np.allclose(r.restored[:, -1], 1.0, atol=1e-4)   # a whole layer: 1
    back = pickle.loads(pickle.dumps(r))                                 # it crosses to the server
    assert back.rows == r.rows and type(back).__module__ == "textcls.interpret.patching"
    with pytest.raises(PairError):
        work.run(load, "patch", path, 1.0, "the movie was not good", "the movie was good", "layer")


# ---------------------------------------------------------------- the lesson, on the shipped checkpoints

def test_the_lesson_is_listed_and_its_kind_registered():
    from textcls.teach import lessons
    lesson = lessons.get("patching")
    assert lesson.title == "Where does 'not good' become negative?" and lesson in lessons.LESSONS
    assert "patching" in lessons.KINDS and {s.kind for s in lesson.steps} == {"patching"}
    assert [s.input["checkpoint"][0] for s in lesson.steps] == ["transformer", "act", "agcnn",
                                                                "hf:BertForSequenceClassification"]


def test_every_step_gives_figures_and_notes_and_its_findings_hold():
    from textcls.interpret.patching import patch_pair
    from textcls.teach import lessons
    from textcls.teach.steps import default_library, run_step
    lib = default_library()
    lesson = lessons.get("patching")
    results = [run_step(s, lib) for s in lesson.steps]
    for step, res in zip(lesson.steps, results):
        assert res.missing is None, res.missing
        assert res.figures and res.notes and res.used, step.title
        assert all(f.table is not None and len(f.table) for f in res.figures)
        assert any("reads 'the movie was not good' (clean) as negative" in n for n in res.notes), res.notes
    assert [len(r.figures) for r in results] == [1, 1, 2, 2]              # AGCNN: maps and gates; MiniLM: + estimate

    def grid(step, by="layer"):
        info, pred = lib.predictor(*step.input["checkpoint"])
        return patch_pair(pred, step.input["clean"], step.input["corrupt"], by)
    tr, act, ag, lm = lesson.steps
    r = grid(tr)                                   # "not" carries it through layer 1; layer 2 spreads it
    assert r.restored[0, 3] > 0.95 and r.restored[1, 3] > 0.9 and r.restored[2, 3] < 0.8
    assert np.nanmax(np.delete(r.restored[2, :-1], 3)) > 0.1
    r = grid(act)                                  # local: "not" in every layer, some at "was", g a share
    assert all(r.restored[i, 3] > 0.85 for i in range(3)) and r.columns[5] == "g" and r.restored[2, 5] > 0.1
    maps, gates = grid(ag), grid(ag, "position")   # the maps carry it, the gates do not
    assert int(np.nanargmax(maps.restored[:, -1])) == 0 and maps.restored[0, 3] > 0.4
    assert np.isclose(np.nansum(maps.restored[:, -1]), 1.0, atol=1e-3)
    assert np.nanmax(gates.restored[:, :-1]) < 0.05
    r = grid(lm)                                   # at "not" for three layers, [CLS] takes it in the last
    assert [r.rows[i] for i in (0, -1)] == ["embeddings", "layer 6"] and r.columns[0] == "[CLS]"
    assert all(r.restored[i, 4] > 0.7 for i in range(4)) and r.restored[5, 0] < 0.05 and r.restored[6, 0] > 0.95
    assert r.agreement["pearson"] < 0.8 and abs(r.attribution[0, 4]) < 0.2           # the estimate misses "not"
