"""Studies: the papers' sweeps (many short trainings behind one figure) run in the background, each point drawn
as its run ends beside the paper's numbers, with a one-line reading of whether the paper's trend holds here.
The library does the work: textcls.experiments.study_defs / study_run / study_results / study_worker."""
from __future__ import annotations

import streamlit as st

from pages.common import inside_app, widgets as w
from textcls import viz
from textcls.experiments import study_worker as worker
from textcls.experiments.study_defs import STUDIES
from textcls.experiments.study_results import reading, rows
from textcls.experiments.study_run import LONG_RUN_S, StudyError, cache_path

inside_app(__file__)
st.title("Studies")
st.caption("A study is a grid of short trainings behind one of the papers' figures: change one knob, watch the "
           "curve move, compare with the paper. Finished runs are kept on disk; a stopped study resumes.")

c1, c2, c3 = st.columns([2, 1, 1])
name = c1.selectbox("Study", list(STUDIES), format_func=lambda n: f"{n}: {STUDIES[n].title}", key="study_name")
scale = c2.radio("Scale", ["quick", "full"], horizontal=True, key="study_scale",
                 help="quick: a slice of a bundled data set, small models, few epochs (minutes on a CPU); "
                      "full: the paper's configuration on the full data set (hours on a CPU)")
device = c3.selectbox("Device", ["cpu", "auto", "cuda"], key="study_device")
study = STUDIES[name]
sc = study.scales[scale]
st.markdown(f"**{study.figure}** - {sc.describe()}.  \n{study.notes}")

worker.reap()
prog = worker.progress(study, scale)
st.progress(prog.done / max(prog.total, 1), text=f"{prog.done} of {prog.total} runs finished"
            + (" - running" if prog.this_running else ""))
long = prog.estimate_s > LONG_RUN_S
confirm = st.checkbox(f"Start anyway (about {prog.estimate_s / 3600:.1f} h)", key="study_confirm") if long else False
if long:
    st.warning(f"This grid would take about {prog.estimate_s / 3600:.1f} hours on this machine "
               f"({prog.total - prog.done} runs left). A GPU or the quick scale is faster.")
b1, b2, _ = st.columns([1, 1, 4])
if b1.button("Resume" if 0 < prog.done < prog.total else "Start", disabled=prog.running is not None
             or prog.done == prog.total or (long and not confirm), type="primary", key="study_start"):
    try:
        worker.start(study, scale, device=device, confirm_long=confirm)
        st.rerun()
    except StudyError as e:
        st.error(str(e))
if b2.button("Stop", disabled=not prog.this_running, key="study_stop",
             help="The run in progress is discarded; finished runs stay and Resume goes on from there."):
    worker.stop()
    st.info("Stopping: finished points are kept.")
if prog.running and not prog.this_running:
    st.info(f"Another study is running ({prog.running}); one study at a time.")
if prog.last_log and ("error" in prog.last_log.lower() or "stopped" in prog.last_log.lower()):
    (st.error if "error" in prog.last_log.lower() else st.info)(prog.last_log)
elif prog.this_running and prog.last_log:
    st.caption(f"Now: {prog.last_log}")


@st.fragment(run_every=3 if prog.this_running else None)
def figure() -> None:
    rs = rows(study, scale)
    series = list(dict.fromkeys(p.series for p in study.points))
    y = "test accuracy (%)" if study.measure == "test_accuracy" else "dev accuracy (%)"
    note = ("QUICK scale: " if scale == "quick" else "") + sc.describe()
    short = f"{scale.upper()}: {sc.short()}"
    item = viz.study_figure(study.name, study.figure, study.measure, series, rs, note, y, short)
    w.show_figure(item, f"study_{study.name}_{scale}")
    st.markdown(f"**Reading:** {reading(study, scale)}")
    st.caption(f"Paper: {study.paper_source}")
    if rs:
        st.dataframe([{"point": r["key"], "ours (%)": round(r["mean"], 1), "spread (sd)": round(r["std"], 2),
                       "seeds": r["n"], "paper (%)": r["paper"], "s / epoch": round(r["seconds_per_epoch"], 2),
                       "parameters": r["parameters"]} for r in rs], hide_index=True)
    st.caption(f"Cached in {cache_path(study, scale)}")
    if worker.progress(study, scale).this_running != prog.this_running:
        st.rerun()


figure()
