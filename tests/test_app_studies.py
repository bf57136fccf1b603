"""The Studies page (Streamlit AppTest): a study with one finished point shows it and its progress; Resume starts
the background worker (progress says running), Stop ends it and the finished point is kept."""
import threading

import pytest

from textcls.experiments import study_worker
from textcls.experiments.study_defs import get_study
from textcls.experiments.study_run import plan, run_study, running_study

from app_pages import open_page


def _progress(at) -> str:
    return at.get("progress")[0].proto.text


def test_studies_page_starts_shows_progress_and_stops():
    study = get_study("SMOKE")
    stop = threading.Event()
    run_study(study, "quick", stop_event=stop, on_run=lambda rec: stop.set())     # one of two points finished
    at = open_page("pages/studies.py")
    at.selectbox(key="study_name").set_value("SMOKE").run()
    assert not at.exception, [e.value for e in at.exception]
    assert _progress(at).startswith("1 of 2 runs finished")
    assert len(at.get("plotly_chart")) == 1 and any("Reading:" in m.value for m in at.markdown)
    assert at.button(key="study_start").label == "Resume"
    at.button(key="study_start").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert running_study().startswith("SMOKE (quick)")
    assert "running" in _progress(at) and at.button(key="study_start").disabled
    at.button(key="study_stop").click().run()
    for proc in list(study_worker._children.values()):
        proc.wait(timeout=120)
    study_worker.reap()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert running_study() is None and plan(study, "quick")[1] >= 1                 # the finished point is kept
    assert at.button(key="study_stop").disabled
    assert "running" not in _progress(at)


def test_studies_page_shows_shipped_results_on_a_bare_user_folder(tmp_path, monkeypatch):
    """Hand-made per-seed numbers shipped for ACT-T3 (medium): the page draws them at once, labelled as measured
    here, with the per-series verdict, and offers to run the study again on this machine."""
    from textcls.experiments import study_shipped
    from textcls.experiments.study_run import _save, cache_path, run_key, signature
    study = get_study("ACT-T3")
    sc = study.scales["medium"]
    runs = {}
    for i, pt in enumerate(study.points):
        for seed in range(sc.seeds):
            acc = (0.9 if i == 0 else 0.85) + 0.002 * seed
            runs[run_key(pt, seed)] = {"seed": seed, "dev_accuracy": acc, "test_accuracy": acc, "seconds": 60.0,
                                       "curve": [{"epoch": 1, "dev_accuracy": acc, "elapsed": 50.0}],
                                       "seconds_per_epoch": 5.0, "parameters": 1000, "finished": "x",
                                       "signature": signature(pt, sc), "point": pt.key}
    monkeypatch.setattr(study_shipped, "SHIPPED_DIR", tmp_path / "shipped")
    _save(study, "medium", {"study": study.name, "scale": "medium", "runs": runs})
    study_shipped.ship(study, "medium")
    cache_path(study, "medium").unlink()                 # a bare clone: nothing of its own
    at = open_page("pages/studies.py")
    at.selectbox(key="study_name").set_value("ACT-T3").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.radio(key="study_scale").value == "medium"
    assert any("Measured here at medium scale" in m.value for m in at.success)
    assert at.button(key="study_start").label == "Run it again on this machine"
    assert len(at.get("plotly_chart")) == 1
    reading_md = next(m.value for m in at.markdown if "Reading:" in m.value)
    assert "ablation: paper: ACT is best" in reading_md and "- holds" in reading_md


def test_studies_page_opens_on_shipped_results_and_never_draws_an_empty_frame(tmp_path, monkeypatch):
    """On a bare clone the page opens on a study whose medium results ship (not on an empty grid); a study with
    neither a finished run nor a number in the paper says so instead of drawing empty axes."""
    from textcls.experiments import study_shipped
    from textcls.experiments.study_defs import STUDIES
    shipped = [n for n in STUDIES if "medium" in STUDIES[n].scales
               and study_shipped.results(STUDIES[n], "medium")[1] == "shipped"]
    assert shipped                                        # textcls ships measured studies
    at = open_page("pages/studies.py")
    assert at.selectbox(key="study_name").value == shipped[0]
    assert any("Measured here at medium scale" in m.value for m in at.success)
    assert len(at.get("plotly_chart")) == 1
    monkeypatch.setattr(study_shipped, "SHIPPED_DIR", tmp_path / "nothing shipped")
    bare = next(n for n in STUDIES if all(p.paper is None for p in STUDIES[n].points) and n != "SMOKE")
    at.selectbox(key="study_name").set_value(bare).run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.get("plotly_chart")) == 0
    assert any("Nothing to draw yet" in i.value for i in at.info)
