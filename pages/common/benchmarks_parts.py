"""The Benchmarks page's pieces of layout: a stored benchmark read (one error line when it cannot be), its
machine's caption, the papers' configurations' table, ACT Table 5, the accuracy target, the shipped checkpoints'
timings, the paper studies' verdicts, and the three "which one" views (checkpoint, explanation, shortcut). Each
lays out what textcls.experiments and textcls.viz compute; pages/benchmarks.py arranges them in tabs."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import pandas as pd
import streamlit as st

from pages.common import cache, widgets as w, work
from textcls.experiments.bench_report import act_t5_met, checkpoint_rows, load_note, model_rows
from textcls.experiments.results import TARGET_POINTS, accuracy_targets, targets_met
from textcls.experiments.study_results import summary_rows
from textcls.experiments.tradeoffs import attention_faithfulness, explanation_rows, pareto_front, reading, tradeoff_rows
from textcls.viz import act_t5_figure, explanation_tradeoff_figure, shortcut_facts, shortcut_figure, tradeoff_figure


def read_bench(path: Path) -> dict | None:
    """A `textcls bench --json` file, or None (absent; unreadable or of another kind: one error line)."""
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


def env_caption(result: dict) -> None:
    env = result["environment"]
    when = str(env["time"]).replace("T", " ")
    st.caption(w.md_escape(f"Measured {when} with torch {env['torch']}, {env['torch_threads']} thread(s), "
                           f"{env['cpu_count']} CPU(s), load average {env['loadavg'][0]}. "
                           + result.get("load_note", load_note(env))))


def models_table(result: dict) -> None:
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


def act_t5(t5: dict, key: str) -> None:
    c1, c2, c3 = st.columns(3)
    c1.metric("Transformer / ACT time", f"{t5['speed_ratio']:.2f}x", help="paper: 2.7x (0.19 s vs 0.07 s)")
    c2.metric("Paper", f"{t5['speed_ratio_paper']:.1f}x")
    c3.metric("Parameter ratio", f"{t5['parameter_ratio']:.2f}x", help=f"paper {t5['parameter_ratio_paper']:.2f}x")
    met = act_t5_met(t5)
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


def targets(results: dict) -> None:
    """The issue's accuracy target at a glance: within 2 points of the papers' non-static CNN / AGCNN."""
    t = accuracy_targets(results)
    met, ran = targets_met(t)
    if not ran:
        return
    st.markdown(f"**Target: within {TARGET_POINTS:g} points of the papers' non-static CNN / AGCNN on "
                f"SST-2, Subj and TREC - met in {met} of {ran} measured cells**"
                + (f" ({len(t) - ran} not run)." if len(t) > ran else "."))
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


def checkpoints_table(ck: dict) -> None:
    """A stored run's timings of every shipped checkpoint, and the checkpoints saved after it."""
    if not ck.get("checkpoints"):
        st.info(f"No checkpoint was timed (none in {w.md_escape(ck.get('root', 'checkpoints'))}).")
        return
    st.dataframe(pd.DataFrame(checkpoint_rows(ck)), hide_index=True, width="stretch", column_config={
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


def studies() -> None:
    """The papers' sweeps at medium scale: per study and series, the verdict its shipped results give."""
    st.subheader("Paper studies (medium scale)")
    st.dataframe(pd.DataFrame(summary_rows("medium")), hide_index=True, width="stretch")
    st.caption("Each study's grid measured here with 3 or more seeds per point (shipped with textcls); the difference "
               "is the paper's best setting minus the best other one, with the Welch 95 % interval over seeds. The "
               "Studies page draws every point and runs a study again on this machine.")


def which_explanation(files: Sequence[Path]) -> None:
    """Per shipped checkpoint measured over a test split: every explanation method's faithfulness against its
    cost, coloured by plausibility, flagged by the randomisation check (docs/faithfulness.md)."""
    from textcls.interpret.methods import labels
    rows = explanation_rows(files)
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


def planted_shortcuts(files: Sequence[Path]) -> None:
    """The planted-shortcut test's results (docs/results_shortcuts/*.jsonl, `python -m textcls shortcuts`):
    which explanation finds a word known to decide the label."""
    from textcls.interpret.methods import labels
    from textcls.interpret.shortcuts import load_results
    st.subheader("Which explanation finds a known shortcut")
    rows = []
    for f in files:
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


def which_model(ck: dict | None, faith_files: Sequence[Path]) -> None:
    """Per task: test accuracy against latency of every shipped and user checkpoint, the Pareto front, a reading."""
    valid, _ = cache.checkpoints()
    here = st.session_state.setdefault("bench_timed_here", {})
    tasks = [t for t in w.tasks(valid) if t]
    if not tasks:
        st.info("No checkpoint with a data set to compare.")
        return
    task = st.segmented_control("Task", tasks, default=tasks[0], key="bench_task") or tasks[0]
    infos = [i for i in valid if i.data == task]
    timed = {r["name"]: r for r in (ck or {}).get("checkpoints", [])} | here      # timed here first
    rows, untimed = tradeoff_rows(infos, timed, attention_faithfulness(faith_files, infos))
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
