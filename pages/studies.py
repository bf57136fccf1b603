"""Studies: the papers' sweeps (many short trainings behind one figure) run in the background, each point drawn
as its run ends beside the paper's numbers, with a one-line reading of whether the paper's trend holds here.
The library does the work: textcls.experiments.study_defs / study_run / study_results / study_worker."""
from __future__ import annotations

import streamlit as st

from pages.common import inside_app, widgets as w
from textcls import viz
from textcls.experiments import study_worker as worker
from textcls.experiments.study_defs import STUDIES
from textcls.experiments.study_results import reading_from, rows_from, series_readings
from textcls.experiments.study_run import LONG_RUN_S, StudyError, cache_path
from textcls.experiments.study_shipped import results

inside_app(__file__)
st.title("Studies")
st.caption("A study is a grid of short trainings behind one of the papers' figures: change one knob, watch the "
           "curve move, compare with the paper. Finished runs are kept on disk; a stopped study resumes.")

c1, c2, c3 = st.columns([2, 1, 1])
# opens on the first study whose medium results ship (measured points on a bare clone), not on an empty grid
first = next((k for k, n in enumerate(STUDIES) if "medium" in STUDIES[n].scales
              and results(STUDIES[n], "medium")[1] == "shipped"), 0)
name = c1.selectbox("Study", list(STUDIES), index=first, format_func=lambda n: f"{n}: {STUDIES[n].title}",
                    key="study_name")
scales = list(STUDIES[name].scales)
scale = c2.radio("Scale", scales, horizontal=True, key="study_scale",
                 index=scales.index("medium") if "medium" in scales else 0,
                 help="quick: a slice of a bundled data set, small models, few epochs (minutes on a CPU); "
                      "medium: a whole small data set, GloVe, 3+ seeds (about an hour per study; measured results "
                      "ship with textcls); full: the paper's configuration on the full data set (hours on a CPU)")
device = c3.selectbox("Device", ["cpu", "auto", "cuda"], key="study_device")
study = STUDIES[name]
sc = study.scales[scale]
st.markdown(f"**{study.figure}** - {sc.describe()}.  \n{study.notes}")
if sc.help:
    with st.expander("How this scale was chosen"):
        st.markdown(sc.help)

worker.reap()
prog = worker.progress(study, scale)
cache0, source0 = results(study, scale)
if source0 == "shipped" and not prog.this_running:
    st.success(f"Measured here at {scale} scale: {len(cache0['runs'])} runs shipped with textcls "
               f"({cache0.get('date')}; {cache0.get('machine')}; torch {cache0.get('torch')}; "
               f"{cache0.get('minutes')} min of runs on a shared CPU). Running it again on this machine keeps "
               "its results in your user folder, where they replace these.")
else:
    st.progress(prog.done / max(prog.total, 1), text=f"{prog.done} of {prog.total} runs finished on this machine"
                + (" - running" if prog.this_running else ""))
long = prog.estimate_s > LONG_RUN_S
confirm = st.checkbox(f"Start anyway (about {prog.estimate_s / 3600:.1f} h)", key="study_confirm") if long else False
if long:
    st.warning(f"This grid would take about {prog.estimate_s / 3600:.1f} hours on this machine "
               f"({prog.total - prog.done} runs left). A GPU or the quick scale is faster.")
b1, b2, _ = st.columns([2, 1, 3])
label = ("Run it again on this machine" if source0 == "shipped" and prog.done == 0
         else "Resume" if 0 < prog.done < prog.total else "Start")
if b1.button(label, disabled=prog.running is not None
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
    cache, source = results(study, scale)
    rs = rows_from(study, scale, cache)
    series = list(dict.fromkeys(p.series for p in study.points))
    y = "test accuracy (%)" if study.measure == "test_accuracy" else "dev accuracy (%)"
    measured = f"measured here at {scale} scale, " if source == "shipped" else ""
    note = ("QUICK scale: " if scale == "quick" else "") + measured + sc.describe()
    short = f"{scale.upper()}{' (measured here, shipped)' if source == 'shipped' else ''}: {sc.short()}"
    if rs or any(p.paper is not None for p in study.points):
        item = viz.study_figure(study.name, study.figure, study.measure, series, rs, note, y, short)
        w.show_figure(item, f"study_{study.name}_{scale}")
    else:                                   # no point of ours and none of the paper's: an empty frame says nothing
        st.info(f"Nothing to draw yet: no run of this grid has finished on this machine, and the paper gives no "
                f"numbers for {study.figure}. {label} draws each point as its run ends.",
                icon=":material/insights:")
    st.markdown(f"**Reading:** {reading_from(study, scale, rs)}")
    items = series_readings(study, rs) if rs else []
    if any(it["claim"] for it in items):
        st.dataframe([{"series": it["series"], "paper's claim": it["claim"] or "-", "verdict here": it["verdict"],
                       "compared with": str(it.get("against", "")), "difference (points)": it.get("diff"),
                       "95 % interval": (f"[{it['lo']:+.1f}, {it['hi']:+.1f}]" if "lo" in it else
                                         it.get("why", "")),
                       "rank correlation": it.get("spearman", {}).get("rho")} for it in items],
                     hide_index=True)
    st.caption(f"Paper: {study.paper_source}")
    if rs:
        st.dataframe([{"point": r["key"], "ours (%)": round(r["mean"], 1), "spread (sd)": round(r["std"], 2),
                       "seeds": r["n"], "per seed (%)": ", ".join(f"{v:.1f}" for v in r["values"]),
                       "paper (%)": r["paper"], "s / epoch": round(r["seconds_per_epoch"], 2),
                       "parameters": r["parameters"]} for r in rs], hide_index=True)
    st.caption("Shipped with textcls (measured here; per-seed numbers in the package's shipped_studies folder)"
               if source == "shipped" else f"Cached in {cache_path(study, scale)}")
    if worker.progress(study, scale).this_running != prog.this_running:
        st.rerun()


figure()
