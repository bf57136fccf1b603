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

from pages.common import cache, inside_app, widgets as w, work
from textcls.experiments.bench_report import load_note, model_rows
from textcls.experiments.results import TARGET_POINTS, accuracy_targets, load_results, table_rows
from textcls.experiments.study_results import shipped_summary
from textcls.experiments.tradeoffs import attention_faithfulness, explanation_rows, pareto_front, reading
from textcls.viz import (accuracy_figure, act_t5_figure, explanation_tradeoff_figure, lama_f4_figure, models_figure,
    shortcut_facts, shortcut_figure, tradeoff_figure)

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


def _read_bench(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        st.error(f"Cannot read {w.md_escape(path)}: {w.md_escape(e)}")
        return None
    if not isinstance(data, dict) or "environment" not in data:
        st.error(f"{w.md_escape(path)} is not a `textcls bench --json` file.")
        return None
    return data


def _env_caption(result: dict) -> None:
    env = result["environment"]
    when = str(env["time"]).replace("T", " ")
    st.caption(w.md_escape(f"Measured {when} with torch {env['torch']}, {env['torch_threads']} thread(s), "
                           f"{env['cpu_count']} CPU(s), load average {env['loadavg'][0]}. "
                           + result.get("load_note", load_note(env))))


def _models_table(result: dict) -> None:
    df = pd.DataFrame(model_rows(result))
    if df.empty:
        st.info("No per-model measurements in this run.")
        return
    st.dataframe(df, hide_index=True, width="stretch", column_config={
        "model": st.column_config.TextColumn(width="medium"),
        "params (no emb.)": st.column_config.NumberColumn(format="%d"),
        "params (total)": st.column_config.NumberColumn(format="%d"),
        "s / batch": st.column_config.NumberColumn(format="%.3f"),
        "ms / sentence": st.column_config.NumberColumn(format="%.1f"),
        "s / epoch (est.)": st.column_config.NumberColumn(format="%.0f"),
        "MB infer": st.column_config.NumberColumn(format="%.0f"),
        "MB train step": st.column_config.NumberColumn(format="%.0f")})
    s = result["settings"]
    st.caption(w.md_escape(
        f"Paper configurations with random weights, a {s['vocab_size']}-word vocabulary, inputs of "
        f"{s['seq_len']} tokens. s / batch: a batch of {s['batch_size']}, median of {s['repeats']} calls after "
        f"{s['warmup']} warm-up; "
        f"ms / sentence: one sentence alone; s / epoch: {s['epoch_examples']} examples in batches of "
        f"{s['train_batch_size']}, estimated from {s['train_steps']} Adam steps; MB: growth of the process's "
        "resident memory during one batch / one training step (a lower bound)."))


def _act_t5(t5: dict, key: str) -> None:
    c1, c2, c3 = st.columns(3)
    c1.metric("Transformer / ACT time", f"{t5['speed_ratio']:.2f}x", help="paper: 2.7x (0.19 s vs 0.07 s)")
    c2.metric("Paper", f"{t5['speed_ratio_paper']:.1f}x")
    c3.metric("Parameter ratio", f"{t5['parameter_ratio']:.2f}x", help=f"paper {t5['parameter_ratio_paper']:.2f}x")
    met = t5["speed_ratio"] >= 2
    (st.success if met else st.warning)(
        f"Target: ACT at least 2x faster than the Transformer on batch inference - "
        f"{'met' if met else 'not met'} in this measurement ({t5['speed_ratio']:.2f}x).")
    st.dataframe(pd.DataFrame([{"model": r["model"], "parameters": r["parameters"],
                                "paper": r["parameters_paper"], "s / batch (ours, CPU)": r["seconds_per_batch"],
                                "s / batch (paper, GPU)": r["seconds_per_batch_paper"]} for r in t5["rows"]]),
                 hide_index=True, width="stretch",
                 column_config={"parameters": st.column_config.NumberColumn(format="%d"),
                                "paper": st.column_config.NumberColumn(format="%d"),
                                "s / batch (ours, CPU)": st.column_config.NumberColumn(format="%.3f")})
    w.show_figure(act_t5_figure(t5), key)


def _targets(results: dict) -> None:
    """The issue's accuracy target at a glance: within 2 points of the papers' non-static CNN / AGCNN."""
    t = accuracy_targets(results)
    ran = [r for r in t if r["met"] is not None]
    if not ran:
        return
    met = sum(r["met"] for r in ran)
    st.markdown(f"**Target: within {TARGET_POINTS:g} points of the papers' non-static CNN / AGCNN on "
                f"SST-2, Subj and TREC - met in {met} of {len(ran)} measured cells**"
                + (f" ({len(t) - len(ran)} not run)." if len(t) > len(ran) else "."))
    st.dataframe(pd.DataFrame([{"setting": r["setting"], "paper column": r["column"], "our data": r["data"] or "—",
                                "ours": r["ours"], "paper": r["paper"], "Δ": r["delta"],
                                "met": "not run" if r["met"] is None else ("yes" if r["met"] else "no")}
                               for r in t]),
                 hide_index=True, width="stretch",
                 column_config={"ours": st.column_config.NumberColumn(format="%.1f"),
                                "paper": st.column_config.NumberColumn(format="%.1f"),
                                "Δ": st.column_config.NumberColumn(format="%+.1f")})
    st.caption("SST-2 takes the better of training on all labelled phrases (the papers' protocol) and on "
               "sentences. The main reason for the gaps: 50-d GloVe here, 300-d word2vec in the papers.")


def _checkpoints(ck: dict) -> None:
    if not ck.get("checkpoints"):
        st.info(f"No checkpoint was timed (none in {w.md_escape(ck.get('root', 'checkpoints'))}).")
        return
    df = pd.DataFrame(ck["checkpoints"])
    if "test_accuracy" in df:
        df["test_accuracy"] = df["test_accuracy"] * 100
    df = df.rename(columns={"name": "checkpoint", "data": "data set", "test_accuracy": "test accuracy",
                            "parameters_without_embeddings": "params (no emb.)", "load_seconds": "load s",
                            "predict_ms": "ms / sentence", "predict_with_maps_ms": "ms with maps",
                            "n_maps": "maps"})
    st.dataframe(df, hide_index=True, width="stretch", column_config={
        "test accuracy": st.column_config.NumberColumn(format="%.1f %%"),
        "parameters": st.column_config.NumberColumn(format="%d"),
        "params (no emb.)": st.column_config.NumberColumn(format="%d"),
        "load s": st.column_config.NumberColumn(format="%.3f"),
        "ms / sentence": st.column_config.NumberColumn(format="%.1f"),
        "ms with maps": st.column_config.NumberColumn(format="%.1f")})
    st.caption(w.md_escape(f"All {ck['n']} checkpoints on one sentence: {ck['all_predict_ms']:.1f} ms after "
                           "warm-up (the Compare page); 'with maps' is one sentence with its internals "
                           "(the Inspect page)."))
    timed = {r.get("name") for r in ck["checkpoints"]}
    valid, _ = cache.checkpoints()
    new = sorted(i.name for i in valid if i.name not in timed)
    if new:
        st.info(f"Not in this stored run: {w.md_escape(', '.join(new))} (saved after it). Time them with "
                "`python -m textcls bench --json docs/bench.json`.", icon=":material/update:")


def _studies() -> None:
    """The papers' sweeps at medium scale: per study and series, the verdict its shipped results give."""
    st.subheader("Paper studies (medium scale)")
    table = []
    for d in shipped_summary("medium"):
        if not d["shipped"]:
            table.append({"study": d["study"], "figure": d["figure"], "series": "-", "paper's claim": "-",
                          "verdict here": "not measured yet", "difference (points)": None, "95 % interval": "",
                          "measured": f"~{d['minutes_estimate']} min: sh scripts/run_medium_studies.sh {d['study']}"})
            continue
        for it in d["verdicts"]:
            table.append({"study": d["study"], "figure": d["figure"], "series": it["series"],
                          "paper's claim": it["claim"] or "-", "verdict here": it["verdict"],
                          "difference (points)": it.get("diff"),
                          "95 % interval": f"[{it['lo']:+.1f}, {it['hi']:+.1f}]" if "lo" in it else it.get("why", ""),
                          "measured": f"{d['date']}, {d['minutes']} min"})
    st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch")
    st.caption("Each study's grid measured here with 3 or more seeds per point (shipped with textcls); the difference "
               "is the paper's best setting minus the best other one, with the Welch 95 % interval over seeds. The "
               "Studies page draws every point and runs a study again on this machine.")


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
        _targets(results)
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

    _studies()

stored = _read_bench(BENCH)

def _which_explanation() -> None:
    """Per shipped checkpoint measured over a test split: every explanation method's faithfulness against its
    cost, coloured by plausibility, flagged by the randomisation check (docs/faithfulness.md)."""
    from textcls.interpret.methods import labels
    rows = explanation_rows(EXPLAIN)
    st.subheader("Which explanation to trust")
    if not rows:
        st.info("No explanation measurements yet. Make them with `python -m textcls faithfulness DIR --methods "
                "attention,norm,alti,integrated_gradients,leave_one_out,random --json > "
                "docs/results_context_mixing/NAME.jsonl`.")
        return
    names = list(dict.fromkeys(r["checkpoint"] for r in rows))
    pick = st.segmented_control("Checkpoint", names, default=names[0], key="bench_explain_ckpt") or names[0]
    mine = [r for r in rows if r["checkpoint"] == pick]
    n = sorted({r["n"] for r in mine})
    texts = f"{n[0]:,} test texts" if len(n) == 1 else f"{n[0]:,}-{n[-1]:,} test texts (the costly methods on fewer)"
    w.show_figure(explanation_tradeoff_figure(mine, labels(), f"{pick}: faithfulness against cost, {texts}"),
                  f"bench_explain_{pick}")


def _planted_shortcuts() -> None:
    """The planted-shortcut test's results (docs/results_shortcuts/*.jsonl, `python -m textcls shortcuts`):
    which explanation finds a word known to decide the label."""
    from textcls.interpret.methods import labels
    from textcls.interpret.shortcuts import load_results
    st.subheader("Which explanation finds a known shortcut")
    rows = []
    for f in SHORTCUTS:
        try:
            rows += load_results(f)
        except (OSError, ValueError) as e:
            st.caption(f"{w.md_escape(f.name)}: not read ({w.md_escape(e)})")
    if not rows:
        st.info("No planted-shortcut results yet. Make them with `python -m textcls shortcuts --model kim_cnn "
                "--results docs/results_shortcuts/sst2.jsonl`.")
        return
    w.show_figure(shortcut_figure(rows, labels(), "The planted word ranked first, per method and model (sst2)"),
                  "bench_shortcuts")
    st.dataframe(shortcut_facts(rows), hide_index=True, width="stretch", column_config={
        c: st.column_config.NumberColumn(format="%.3f") for c in (
            "words per text", "chance of ranking it first", "accuracy with the token", "accuracy without it")})


def _which_model(ck: dict | None) -> None:
    """Per task: test accuracy against latency of every shipped and user checkpoint, the Pareto front, a reading."""
    valid, _ = cache.checkpoints()
    timed = {r["name"]: r for r in (ck or {}).get("checkpoints", [])}
    here = st.session_state.setdefault("bench_timed_here", {})
    tasks = [t for t in w.tasks(valid) if t]
    if not tasks:
        st.info("No checkpoint with a data set to compare.")
        return
    task = st.segmented_control("Task", tasks, default=tasks[0], key="bench_task") or tasks[0]
    infos = [i for i in valid if i.data == task]
    faith = attention_faithfulness(FAITH, infos)
    rows, untimed = [], []
    for i in infos:
        t = here.get(i.name) or timed.get(i.name)
        if i.test_accuracy is None:
            continue
        if t is None:
            untimed.append(i)
            continue
        rows.append({"name": i.name, "from": "shipped" if i.shipped else "yours", "accuracy": 100 * i.test_accuracy,
                     "ms": t.get("ms", t.get("predict_ms")), "parameters": t.get("parameters"),
                     "faith": faith.get(i.name)})
    if untimed and st.button(f"Time {len(untimed)} checkpoint(s) not in the stored run on this machine",
                             key=f"bench_time_{task}", icon=":material/timer:",
                             help=", ".join(i.name for i in untimed)):
        with st.spinner("Timing…"):
            for r in work.time_checkpoints(untimed):
                here[r["name"]] = r
        st.rerun()
    if not rows:
        st.info("No checkpoint of this task has both a test accuracy and a latency yet.")
        return
    front = pareto_front(rows)
    st.markdown(f"**{w.md_escape(reading(rows))}**")
    w.show_figure(tradeoff_figure(rows, front, f"{task}: test accuracy against latency"), f"bench_tradeoff_{task}")
    mine = [r["name"] for r in rows if r["name"] in here]
    st.caption(w.md_escape("Latency: one sentence, median after a warm-up, "
                           + (f"timed on this machine for {', '.join(mine)} and " if mine else "")
                           + "from the stored run otherwise (times from another machine or load are not "
                           f"comparable). Pareto front: {', '.join(front)}."))


with t_speed:
    if stored is None:
        st.info(f"No stored benchmark in {w.md_escape(BENCH)}. Make one with "
                "`python -m textcls bench --json docs/bench.json`, or use the last tab.")
    st.subheader("Which checkpoint to pick")
    st.caption("The checkpoints this app ships and the ones you trained, as they are: trained weights, the sizes "
               "we chose for a laptop (about 1-2 M parameters).")
    _which_model(stored.get("checkpoints") if stored else None)
    _which_explanation()
    _planted_shortcuts()
    if stored is not None:
        _env_caption(stored)
        if "checkpoints" in stored:
            with st.expander("Every shipped checkpoint's timings"):
                _checkpoints(stored["checkpoints"])
        st.subheader("The papers' configurations")
        st.caption("Not the shipped checkpoints: each model at the size its paper describes (e.g. the Transformer "
                   "at 18.9 M parameters), with random weights - how the published designs compare in size and "
                   "speed.")
        _models_table(stored)
        if stored.get("models"):
            w.show_figure(models_figure(model_rows(stored), batch_size=stored["settings"]["batch_size"],
                                        caption=load_note(stored["environment"])), "bench_models")

with t_act:
    st.markdown("ACT's Table 5: 1.49M vs 3.38M parameters, 0.07 s vs 0.19 s per batch of 100 on a GPU (2.7x). "
                "Ours: the same configurations with random weights on this project's code, timed on CPU.")
    if stored is None or "act_t5" not in stored:
        st.info("No stored ACT Table 5 measurement; use the last tab to measure one here.")
    else:
        _env_caption(stored)
        _act_t5(stored["act_t5"], "bench_act_t5_stored")

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
        _env_caption(here)
        if "act_t5" in here:
            st.subheader("ACT Table 5 here")
            _act_t5(here["act_t5"], "bench_act_t5_here")
        if here.get("models"):
            st.subheader("Models here")
            _models_table(here)
        st.download_button("Download these measurements (JSON)", data=json.dumps(here, indent=1, default=float),
                           file_name="bench.json", mime="application/json", key="dl_bench_here",
                           icon=":material/data_object:")
