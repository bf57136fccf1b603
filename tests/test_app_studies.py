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
