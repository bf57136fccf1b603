"""Benchmarks: accuracy next to the papers' figures, model size and speed, ACT Table 5, LAMA Fig. 4, and a
button that re-measures on the machine running the app.

Reads the files `python -m textcls reproduce` and `python -m textcls bench --json docs/bench.json` write
(docs/results.json and docs/bench.json; env TEXTCLS_RESULTS_FILE / TEXTCLS_BENCH_FILE point elsewhere).
LAMA Fig. 4 is counted live on built modules (cheap), timing checkpoints and the re-measure button
(`bench.run_bench(quick=True)`, random-weight models) run in the model worker (pages.common.work): this page
imports no torch; nothing cached is touched.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pandas as pd
import streamlit as st

from pages.common import inside_app, widgets as w, work
from pages.common.benchmarks_parts import (act_t5, checkpoints_table, env_caption, models_table, planted_shortcuts,
    read_bench, studies, targets, which_explanation, which_model)
from textcls.experiments.bench_report import load_note, model_rows
from textcls.experiments.results import load_results, table_rows
from textcls.viz import accuracy_figure, lama_f4_figure, models_figure

inside_app(__file__)

REPO = Path(__file__).resolve().parents[1]


def _path(env: str, default: str) -> Path:
    raw = os.environ.get(env, "").strip()
    return Path(raw).expanduser() if raw else REPO / default


RESULTS = _path("TEXTCLS_RESULTS_FILE", "docs/results.json")
BENCH = _path("TEXTCLS_BENCH_FILE", "docs/bench.json")
FAITH = sorted((REPO / "docs").glob("faithfulness*.json"))   # scripts/faithfulness_table.py: whole test splits
EXPLAIN = sorted((REPO / "docs" / "results_context_mixing").glob("*.jsonl"))   # `faithfulness --json`, every method
SHORTCUTS = sorted((REPO / "docs" / "results_shortcuts").glob("*.jsonl"))       # `shortcuts --results`: a known answer


st.title("Benchmarks")
st.markdown("Accuracy next to the papers' figures, model size and speed, and the two size/speed figures of "
            "the papers (ACT Table 5, LAMA Fig. 4). The stored numbers come from the command line; the last "
            "tab measures again on this machine.")

t_acc, t_speed, t_act, t_lama, t_here = st.tabs(["Accuracy vs the papers", "Size and speed", "ACT Table 5",
                                                  "LAMA Fig. 4", "Measure here"])

with t_acc:
    try:
        results = load_results(RESULTS)
    except ValueError as e:
        st.error(w.md_escape(e))
        results = {"cells": {}}
    rows = table_rows(results)
    if not rows:
        st.info(f"No reproduction results in {w.md_escape(RESULTS)} yet. Run for example:")
        st.code("python -m textcls reproduce --suite agcnn_t3 --data trec,sst2 --epochs 3", language="bash")
    else:
        targets(results)
        tables = list(dict.fromkeys(r["table"] for r in rows))
        table = st.selectbox("Paper table", tables, key="bench_table")
        sel = [r for r in rows if r["table"] == table]
        st.dataframe(pd.DataFrame([{
            "setting": r["setting"], "data": r["data"], "ours": r["ours"], "spread": r["spread"],
            "paper": r["paper"], "paper's figure is on": r["paper_note"] or "the same data set's "
            + r["metric"] + " split", "Δ": r["delta"], "epochs": r["epochs_run"], "s / epoch": r["seconds_per_epoch"],
            "why the numbers differ": r["gap"]} for r in sel]), hide_index=True, width="stretch",
            column_config={"ours": st.column_config.NumberColumn(format="%.1f"),
                           "paper": st.column_config.NumberColumn(format="%.2f"),
                           "Δ": st.column_config.NumberColumn(format="%+.1f")})
        with st.expander("Why each number differs from the paper's", expanded=len(sel) <= 8):
            st.markdown("\n".join(f"- **{w.md_escape(r['setting'])} / {w.md_escape(r['data'])}**: "
                                   f"{w.md_escape(r['gap'] or 'nothing recorded')}" for r in sel))
        if any(r["paper"] is not None for r in sel):
            w.show_figure(accuracy_figure(sel, f"{table}: ours vs the paper"), "bench_acc")
        loads = [r["loadavg"] for r in rows if r["loadavg"] is not None]
        st.caption("Accuracy in %, test split unless the table says dev. The papers used 300-d vectors and GPU "
                   "training to convergence; here 50-d GloVe and a few CPU epochs - each row says what differs. "
                   + (f"Seconds per epoch were measured at load average up to {max(loads):.1f}: "
                      "distorted by other jobs." if loads else ""))
        tuning = RESULTS.with_name("tuning.md")
        if tuning.is_file():
            with st.expander("How the settings were tuned (chosen on dev accuracy)"):
                st.markdown(tuning.read_text(encoding="utf-8").split("\n", 1)[-1])
        md = RESULTS.with_suffix(".md")
        if md.is_file():
            st.download_button("results.md", data=md.read_bytes(), file_name="results.md", mime="text/markdown",
                               icon=":material/download:", key="dl_results_md")

    studies()

stored = read_bench(BENCH)

with t_speed:
    if stored is None:
        st.info(f"No stored benchmark in {w.md_escape(BENCH)}. Make one with "
                "`python -m textcls bench --json docs/bench.json`, or use the last tab.")
    st.subheader("Which checkpoint to pick")
    st.caption("The checkpoints this app ships and the ones you trained, as they are: trained weights, the sizes "
               "we chose for a laptop (about 1-2 M parameters).")
    which_model(stored.get("checkpoints") if stored else None, FAITH)
    which_explanation(EXPLAIN)
    planted_shortcuts(SHORTCUTS)
    if stored is not None:
        env_caption(stored)
        if "checkpoints" in stored:
            with st.expander("Every shipped checkpoint's timings"):
                checkpoints_table(stored["checkpoints"])
        st.subheader("The papers' configurations")
        st.caption("Not the shipped checkpoints: each model at the size its paper describes (e.g. the Transformer "
                   "at 18.9 M parameters), with random weights - how the published designs compare in size and "
                   "speed.")
        models_table(stored)
        if stored.get("models"):
            w.show_figure(models_figure(model_rows(stored), batch_size=stored["settings"]["batch_size"],
                                        caption=load_note(stored["environment"])), "bench_models")

with t_act:
    st.markdown("ACT's Table 5: 1.49M vs 3.38M parameters, 0.07 s vs 0.19 s per batch of 100 on a GPU (2.7x). "
                "Ours: the same configurations with random weights on this project's code, timed on CPU.")
    if stored is None or "act_t5" not in stored:
        st.info("No stored ACT Table 5 measurement; use the last tab to measure one here.")
    else:
        env_caption(stored)
        act_t5(stored["act_t5"], "bench_act_t5_stored")

with t_lama:
    heads = st.slider("Heads (up to)", min_value=5, max_value=40, value=30, step=5, key="bench_lama_heads")
    f4 = work.lama_f4(tuple(sorted({1, 2, *range(5, heads + 1, 5)})))
    w.show_figure(lama_f4_figure(f4), "bench_lama_f4")
    st.dataframe(pd.DataFrame({"heads": f4["heads"], "LAMA (P, Q, c)": f4["lama"], "LAMA (+ W_w)": f4["lama_with_mlp"],
                               "LAMA + Ctx": f4["lama_ctx"], "SAN": f4["san"], "Transformer": f4["transformer"]}),
                 hide_index=True, width="stretch")
    st.caption("Counted on the real modules (LAMA's attention layer of a built model, SAN's and a Transformer "
               "multi-head attention with fixed d_k); the paper's formula gives the same numbers.")

with t_here:
    st.markdown("Re-measure on the machine that runs this app: random-weight models, a quick run "
                "(3 timed calls per figure). Other work on the machine inflates the times; the load is shown. "
                "Every model with ACT Table 5 and the training step takes one to a few minutes on a laptop "
                "CPU; fewer models or no training step is quicker.")
    labels = work.bench_models()
    with st.form("bench_form"):
        chosen = st.multiselect("Models", labels, default=labels, key="bench_models")
        c1, c2, c3 = st.columns(3)
        seq_len = c1.number_input("Tokens per text", min_value=5, max_value=500, value=56, step=1, key="bench_len")
        do_t5 = c2.checkbox("ACT Table 5", value=True, key="bench_do_t5")
        do_train = c3.checkbox("Training step and memory", value=True, key="bench_do_train")
        go = st.form_submit_button("Re-measure on this machine (quick bench)", type="primary",
                                   icon=":material/speed:")
    if go:
        if not chosen and not do_t5:
            st.warning("Choose at least one model or ACT Table 5.")
        else:
            with st.status("Measuring…", expanded=False) as status:
                t0 = time.perf_counter()

                def say(msg: str) -> None:
                    status.update(label=f"Measuring ({time.perf_counter() - t0:.0f} s so far): {msg}…")
                st.session_state["bench_here"] = work.run_bench(
                    say, quick=True, models=chosen or [], seq_len=int(seq_len), act_t5=do_t5, lama=False,
                    checkpoints=None, memory=do_train, training=do_train)
                status.update(label=f"Measured in {time.perf_counter() - t0:.0f} s", state="complete")
    here = st.session_state.get("bench_here")
    if here is not None:
        env_caption(here)
        if "act_t5" in here:
            st.subheader("ACT Table 5 here")
            act_t5(here["act_t5"], "bench_act_t5_here")
        if here.get("models"):
            st.subheader("Models here")
            models_table(here)
        st.download_button("Download these measurements (JSON)", data=json.dumps(here, indent=1, default=float),
                           file_name="bench.json", mime="application/json", key="dl_bench_here",
                           icon=":material/data_object:")
