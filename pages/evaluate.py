"""Evaluate: checkpoints on a data split - metrics, confusion matrices, mistakes and disagreements (each one a
click away from Inspect), training curves (HCAN Fig. 3, LAMA Fig. 5) and data-set-level views (LAMA Table 4,
LAMA Fig. 2, the n-grams each filter detects). Tables download as CSV, figures as PNG/SVG/CSV/JSON.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from pages.common import cache, inside_app, widgets as w, work
from pages.common.defaults import available_data, data_spec, default_limit, default_split, evaluated_part
from textcls.analysis import corpus_views as cv
from textcls.analysis.corpus_cache import checkpoint_stamp
from textcls.data import datasets as tdata
from textcls.analysis import slices as sl
from textcls import viz
from textcls.data.readable import readable
from textcls.checkpoint import CheckpointError, load_history
from textcls.analysis.metrics import (agreement_rows, default_ignore_label, score_predictions, select_scored,
    unknown_labels)

inside_app(__file__)

INSPECT = "pages/inspect.py"

st.title("Evaluate")
st.caption("Checkpoints on a split of a data set: accuracy, macro-F1, per-class scores and confusion matrices; "
           "the examples each model gets wrong and where models disagree; training curves; and what a model "
           "attends to over the whole split.")

valid = w.require_checkpoints()
by_name = {i.name: i for i in valid}
names = list(by_name)


chosen = st.multiselect("Checkpoints", names, default=w.main_task_checkpoints(valid, pretrained=False),
                        key="eval_ckpts", format_func=lambda n: w.ckpt_label(by_name[n]))
heavy = [n for n in w.main_task_checkpoints(valid) if n not in chosen and w.is_pretrained(by_name[n])]
if heavy:
    st.caption(f"Not selected at first: {', '.join(heavy)} (a pretrained encoder: a whole split takes it tens of "
               "times longer than the small models). Add it above to evaluate it too.")
if not chosen:
    st.info("Pick at least one checkpoint.", icon=":material/checklist:")
    st.stop()
infos = [by_name[n] for n in chosen]

# ---------------------------------------------------------------- data set and split
bundled = tdata.list_datasets()
options = list(dict.fromkeys([a for a in (available_data(data_spec(i), bundled) for i in infos) if a] + bundled))
source = st.radio("Evaluate on", ["A data set", "Your labelled file"], horizontal=True, key="eval_source",
                  index=0 if options else 1)
if source == "A data set":
    if not options:
        st.warning("No data set to evaluate on: the checkpoints' own data is not available here and no data set "
                   f"was found in {w.md_escape(', '.join(map(str, tdata.data_roots())))}. Upload your own "
                   "labelled file instead.")
        st.stop()
    c1, c2, c3 = st.columns([2, 1, 1])
    spec = c1.selectbox("Data set", options, key="eval_data",
                        format_func=lambda s: s if s in bundled else f"{Path(s).name} (file)")
    try:
        bundle = cache.dataset(spec)
    except (tdata.DataError, ValueError) as e:
        st.error(f"This data set cannot be read: {w.md_escape(e)}")
        st.stop()
else:
    bundle = w.labelled_file("eval", "all of it is evaluated (as the test split)", as_split="test")
    if bundle is None:
        st.stop()
    spec = bundle.name
    c2, c3 = st.columns(2)
splits = list(bundle.splits)
split_name = c2.selectbox("Split", splits, index=splits.index(default_split(splits)), key="eval_split")
split = bundle.splits[split_name]
n_all = len(split)
limit = c3.number_input("Examples (0 = all)", min_value=0, max_value=n_all, step=100,
                        value=default_limit(n_all), key=f"eval_limit_{spec}_{split_name}",
                        help="A seeded random sample of the split (kept in file order).")
part = evaluated_part(split, limit)
texts = list(part.texts)
gold_names = [bundle.labels[y] for y in part.labels]
if not texts:
    st.info("This split is empty.")
    st.stop()
st.caption(f"{len(texts):,} of {n_all:,} examples of **{w.md_escape(bundle.name)}** / {w.md_escape(split_name)}.")

# ---------------------------------------------------------------- predictions
runs = {}              # name -> dict(info, labels, gold (model indices), pred, conf, probs, report)
with st.spinner(f"Running {len(infos)} checkpoint(s) on {len(texts):,} texts…"):
    for info in infos:
        unknown = unknown_labels(gold_names, info.labels)
        if unknown:
            st.warning(f"{info.name} does not know the label(s) {w.md_escape(', '.join(unknown[:5]))} of this data "
                       f"set (its labels: {w.md_escape(', '.join(info.labels[:8]))}); it is left out.")
            continue
        preds = w.safe_predict(info, texts)
        if preds is None:
            continue
        runs[info.name] = dict(info=info, **score_predictions(
            preds, gold_names, info.labels, ignore_label=default_ignore_label(bundle.name, info.labels)))
if not runs:
    st.stop()

# ---------------------------------------------------------------- a saved slice (defined on the Explore page)
saved_slices = sl.load_slices(bundle.name) if source == "A data set" else []
if saved_slices:
    pick_slice = st.selectbox("Slice", ["all"] + [s.name for s in saved_slices], key="eval_slice",
                              help="Slices saved for this data set on the Explore page.")
    if pick_slice != "all":
        chosen_slice = next(s for s in saved_slices if s.name == pick_slice)
        try:
            sl.check_split(chosen_slice, split_name, sampled=len(part) < n_all)
            keep = sl.slice_rows(chosen_slice, sl.SliceContext(texts, gold_names,
                                                               {n: r["pred_names"] for n, r in runs.items()}))
        except sl.SliceError as e:
            st.error(f"The slice cannot be applied: {w.md_escape(e)}")
            st.stop()
        if not len(keep):
            st.info(f"The slice “{w.md_escape(pick_slice)}” is empty here.")
            st.stop()
        texts, gold_names = [texts[i] for i in keep], [gold_names[i] for i in keep]
        for r in runs.values():
            r.update(select_scored(r, keep))
        st.caption(f"Slice **{w.md_escape(pick_slice)}** ({w.md_escape(chosen_slice.describe())}): "
                   f"{len(keep):,} examples.")


def csv_button(df: pd.DataFrame, label: str, file: str, key: str) -> None:
    st.download_button(label, data=df.to_csv(index=False).encode("utf-8"), file_name=f"{viz.safe_filename(file)}.csv",
                       mime="text/csv", key=key, icon=":material/download:", on_click="ignore")


def pick_row(table: pd.DataFrame, event, key: str, label: str) -> int | None:
    """The row to act on: a selectbox over the table's rows (first 1,000) that follows a row selected in the
    table itself. Returns a position in `table`, or None when it is empty."""
    if table.empty:
        return None
    opts = list(range(min(len(table), 1000)))
    rows = list(getattr(getattr(event, "selection", None), "rows", []) or [])
    if rows and st.session_state.get(key + "_last") != rows[0]:
        st.session_state[key + "_last"] = rows[0]
        if rows[0] in opts:
            st.session_state[key] = rows[0]
    if st.session_state.get(key) not in opts:
        st.session_state.pop(key, None)
    names = [f"#{n} · {viz.short(str(t), 90)}"                    # one pass over the columns, not a row lookup each
             for n, t in zip(table["#"].iloc[:len(opts)], table["text"].iloc[:len(opts)])]
    return st.selectbox(label, opts, key=key, format_func=names.__getitem__)


def open_in_inspect(text: str, first: str, second: str | None = None) -> None:
    """Hand a text and checkpoint(s) to the Inspect page (it reads these session keys) and go there."""
    st.session_state["insp_text"] = text
    st.session_state["insp_ckpt"] = first
    st.session_state["insp_two"] = second is not None
    if second is not None:
        st.session_state["insp_ckpt2"] = second
    st.switch_page(INSPECT)


tab_m, tab_e, tab_c, tab_d = st.tabs(["Metrics", "Mistakes and disagreements", "Training curves",
                                      "Data-set views"])

# ---------------------------------------------------------------- metrics
with tab_m:
    rows = []
    for name, r in runs.items():
        rep = r["report"]
        rows.append({"checkpoint": name, "model": r["info"].model, "accuracy": rep["accuracy"],
                     "macro-F1": rep["macro_f1"], **({"macro-F1 (all classes)": rep["macro_f1_all"]}
                                                      if rep["ignore_label"] else {}),
                     "examples": rep["n"], "errors": int((r["gold"] != r["pred"]).sum()),
                     "trained on": w.trained_on(r["info"])})
    summary = pd.DataFrame(rows)
    pct = st.column_config.NumberColumn(format="percent")
    st.dataframe(summary, hide_index=True, width="stretch",
                 column_config={"accuracy": pct, "macro-F1": pct, "macro-F1 (all classes)": pct})
    ign = next((r["report"]["ignore_label"] for r in runs.values() if r["report"]["ignore_label"]), None)
    if ign:
        st.caption(f"macro-F1 leaves out “{w.md_escape(ign)}” (the task's official metric).")
    csv_button(summary, "Metrics (CSV)", f"metrics_{bundle.name}_{split_name}", "eval_csv_metrics")

    st.markdown("**Per class**")
    per = pd.DataFrame([{"checkpoint": name, "label": lab, **sc} for name, r in runs.items()
                        for lab, sc in r["report"]["per_class"].items()])
    st.dataframe(per, hide_index=True, width="stretch", height=min(600, 38 + 35 * len(per)),
                 column_config={c: st.column_config.NumberColumn(format="%.3f") for c in ("precision", "recall", "f1")})
    csv_button(per, "Per-class scores (CSV)", f"per_class_{bundle.name}_{split_name}", "eval_csv_per_class")
    rel = [{"checkpoint": name, "relation": k, **sc, "macro-F1 (relations)": r["report"]["macro_f1_official"]}
           for name, r in runs.items() for k, sc in (r["report"].get("per_relation") or {}).items()]
    if rel:
        st.markdown("**Per relation** (official-style: both directions together, a hit needs the right direction)")
        st.dataframe(pd.DataFrame(rel), hide_index=True, width="stretch",
                     column_config={c: st.column_config.NumberColumn(format="%.3f")
                                    for c in ("precision", "recall", "f1", "macro-F1 (relations)")})

    st.markdown("**Confusion matrices**")
    norm = st.toggle("Show row shares instead of counts", value=False, key="eval_cm_norm")
    per_row = 3
    items = []
    names_run = list(runs)
    for start in range(0, len(names_run), per_row):
        cols = st.columns(per_row)
        for col, name in zip(cols, names_run[start:start + per_row]):
            with col:
                r = runs[name]
                if r["report"].get("confusion") is None:        # too many classes for a matrix: its top mistakes
                    st.markdown(f"**{w.md_escape(name)}**")
                    st.caption(w.md_escape(r["report"].get("confusion_note") or "No confusion matrix."))
                    st.dataframe(pd.DataFrame(r["report"].get("confusions") or [],
                                              columns=["true", "predicted", "count"]),
                                 hide_index=True, width="stretch", height=300)
                    continue
                item = viz.confusion_figure(r["report"]["confusion"], r["labels"], title=name, normalize=norm,
                                            key=f"confusion_{name}_{bundle.name}_{split_name}")
                items.append(item)
                w.show_figure(item, f"eval_cm_{name}")
    if items:
        w.zip_button(items, f"confusion_{bundle.name}_{split_name}", label="All confusion matrices (ZIP)")

# ---------------------------------------------------------------- mistakes and disagreements
with tab_e:
    st.markdown("**What each checkpoint gets wrong**")
    pick = st.selectbox("Checkpoint", list(runs), key="eval_err_ckpt")
    r = runs[pick]
    wrong = np.nonzero(r["gold"] != r["pred"])[0]
    err = pd.DataFrame({"#": wrong, "text": [readable(texts[i]) for i in wrong], "gold": [gold_names[i] for i in wrong],
                        "predicted": [r["pred_names"][i] for i in wrong],
                        "confidence": r["probs"][wrong, r["pred"][wrong]] if len(wrong) else [],
                        "p(gold)": r["probs"][wrong, r["gold"][wrong]] if len(wrong) else []})
    err = err.sort_values("confidence", ascending=False).reset_index(drop=True)
    st.caption(f"{len(err):,} of {len(texts):,} examples wrong, most confident first. Select a row (or pick it "
               "below) to open it in Inspect.")
    ev = st.dataframe(err, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
                      key=f"eval_err_table_{pick}",
                      column_config={"confidence": st.column_config.ProgressColumn(format="percent", min_value=0,
                                                                                   max_value=1),
                                     "p(gold)": st.column_config.NumberColumn(format="percent"),
                                     "text": st.column_config.TextColumn(width="large")})
    b1, b2, b3 = st.columns([4, 1, 1], vertical_alignment="bottom")
    with b1:
        row = pick_row(err, ev, f"eval_err_pick_{pick}", "Example")
    if b2.button("Open in Inspect", key="eval_err_inspect", disabled=row is None, icon=":material/visibility:",
                 help="Shows this text on the Inspect page with this checkpoint."):
        open_in_inspect(texts[int(err.iloc[row]["#"])], pick)     # the text as evaluated
    with b3:
        csv_button(err, "Mistakes (CSV)", f"mistakes_{pick}_{bundle.name}_{split_name}", "eval_csv_err")

    if len(runs) >= 2:
        st.markdown("**Where the checkpoints disagree**")
        P = np.stack([np.array(runs[n]["pred_names"], dtype=object) for n in runs], axis=1)     # (N, models)
        differ = np.nonzero([d for _, _, d in agreement_rows({n: runs[n]["pred_names"] for n in runs})])[0]
        dis = pd.DataFrame({"#": differ, "text": [readable(texts[i]) for i in differ], "gold": [gold_names[i] for i in differ],
                            **{n: P[differ, k] for k, n in enumerate(runs)},
                            "right": [sum(P[i, k] == gold_names[i] for k in range(len(runs))) for i in differ]})
        st.caption(f"{len(dis):,} of {len(texts):,} examples get different labels; `right` counts the checkpoints "
                   "that are correct. Select a row to open it in Inspect with two disagreeing checkpoints side by "
                   "side.")
        ev2 = st.dataframe(dis, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
                           key="eval_dis_table", column_config={"text": st.column_config.TextColumn(width="large")})
        d1, d2, d3 = st.columns([4, 1, 1], vertical_alignment="bottom")
        with d1:
            row2 = pick_row(dis, ev2, "eval_dis_pick", "Example")
        if d2.button("Open in Inspect", key="eval_dis_inspect", disabled=row2 is None, icon=":material/visibility:",
                     help="Shows this text on the Inspect page, two disagreeing checkpoints side by side."):
            i = int(dis.iloc[row2]["#"])
            labs = {n: runs[n]["pred_names"][i] for n in runs}
            first = next(iter(labs))
            second = next(n for n in labs if labs[n] != labs[first])
            open_in_inspect(texts[i], first, second)
        with d3:
            csv_button(dis, "Disagreements (CSV)", f"disagreements_{bundle.name}_{split_name}", "eval_csv_dis")

# ---------------------------------------------------------------- training curves
with tab_c:
    st.caption("From each checkpoint's saved history (per epoch). HCAN Fig. 3 is dev accuracy against wall-clock "
               "time; LAMA Fig. 5 is the training loss per epoch.")
    k1, k2, k3 = st.columns([3, 2, 1])
    curve_ckpts = k1.multiselect("Checkpoints", names, default=chosen, key="eval_curve_ckpts",
                                 format_func=lambda n: w.ckpt_label(by_name[n]))
    quantities = k2.multiselect("Curves", list(viz.CURVE_TITLES)[:5], default=["train_loss", "dev_accuracy"],
                                key="eval_curve_y", format_func=lambda k: viz.CURVE_TITLES[k])
    x_label = k3.radio("x axis", ["epoch", "wall-clock"], key="eval_curve_x")
    x = "epoch" if x_label == "epoch" else "elapsed"
    hist_runs = []
    for n in curve_ckpts:
        try:
            h = load_history(by_name[n].path)
        except CheckpointError as e:
            st.warning(f"{n}: {w.md_escape(e)}")
            continue
        if not h.epochs:
            st.caption(f"{w.md_escape(n)} has no training history.")
            continue
        hist_runs.append((n, h.epoch_rows()))
    # runs trained on different data (sst2 vs its phrases) have different training and dev sets: say so, and name
    # each run's training data in the legend
    trained = {n: w.trained_on(by_name[n]) for n, _ in hist_runs}
    if len(set(trained.values())) > 1:
        groups = {}
        for n, d in trained.items():
            groups.setdefault(d, []).append(n)
        st.warning("These runs were trained on different data - " + "; ".join(
            f"**{w.md_escape(d)}**: {w.md_escape(', '.join(ns))}" for d, ns in groups.items())
            + ". Their losses and dev accuracies come from different training and dev sets: compare curves within "
            "one data set.", icon=":material/warning:")
        hist_runs = [(f"{n} ({trained[n]})", ep) for n, ep in hist_runs]
    curve_items = []
    if hist_runs and quantities:
        cols = st.columns(min(2, len(quantities)))
        for k, y in enumerate(quantities):
            tag = {("train_loss", "epoch"): " (LAMA Fig. 5)", ("dev_accuracy", "elapsed"): " (HCAN Fig. 3)"}
            item = viz.training_curves(hist_runs, y=y, x=x, key=f"curves_{y}_vs_{x}",
                                       title=f"{viz.CURVE_TITLES[y]} vs {viz.CURVE_TITLES[x]}{tag.get((y, x), '')}")
            # the legend goes above the plot (horizontal): below it, it sat on the x-axis title
            item.fig.update_layout(margin=dict(t=95), title=dict(y=0.985, yanchor="top"),
                                   legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0))
            curve_items.append(item)
            with cols[k % len(cols)]:
                w.show_figure(item, f"eval_curve_{y}_{x}")
        w.zip_button(curve_items, f"training_curves_{x}", label="All curves (ZIP)")

# ---------------------------------------------------------------- data-set views
with tab_d:
    ck = st.selectbox("Checkpoint", list(runs), key="eval_ds_ckpt")
    info = runs[ck]["info"]
    try:
        ok_att, source, banks = work.corpus_support(info.path)
    except Exception as e:  # noqa: BLE001 - a checkpoint that cannot load: one line
        st.error(f"Could not load {w.md_escape(ck)}: {type(e).__name__}: {w.md_escape(e)}")
        st.stop()
    views = []
    if ok_att:
        views += ["Top attended words (LAMA Table 4)", "A word's weight by label (LAMA Fig. 2)"]
    if banks:
        views += ["Filter n-grams"]
    if not views:
        st.info(f"{w.md_escape(viz.model_title(info.model))} has neither its own token weights nor convolution filters to summarise.")
        st.stop()
    view = st.radio("View", views, horizontal=True, key="eval_ds_view")
    state = st.session_state.setdefault("_eval_corpus", {})
    base_key = (str(info.path), tuple(map(tuple, checkpoint_stamp(info.path))), spec, split_name, int(limit or 0),
                st.session_state.get("eval_slice", "all"))

    def run_pass(kind: str, job: str, *args, settings: tuple = ()):
        """The result of a corpus pass (the model job `job` with `args`): from this session, else the disk cache,
        else computed on a click, with a progress bar."""
        key = (kind,) + base_key + settings
        if key in state:
            return state[key]
        at = (str(info.path), cache.stamp(info.path), list(texts), *args)
        with w.or_one_line("Reading the cached pass"):
            res = cache.model_job(job, *at, True)
        if res is None:
            what = "token weights" if kind == "tw" else "filter activations"
            if not st.button(f"Compute the {what} over {len(texts):,} texts", key=f"eval_run_{kind}",
                             type="primary", icon=":material/play_arrow:"):
                st.caption("Runs the model over the split once (batched) and keeps the result on disk for this "
                           "checkpoint and split.")
                return None
            bar = st.progress(0.0, text="Starting…")

            def progress(done: int, total: int) -> None:
                bar.progress(done / max(total, 1), text=f"{done:,} / {total:,} texts")
            with w.or_one_line("The pass over the split"):
                res = cache.model_job(job, *at, False, progress=progress)
            state[key] = res
            st.rerun()             # draw the result without the button
        state[key] = res
        return res

    if view.startswith("Top attended") or view.startswith("A word"):
        st.caption(f"Token weights of {w.md_escape(ck)}: {w.md_escape(source)} (normalised to sum to 1 per text).")
        cw_ = run_pass("tw", "token_weights", list(gold_names))
        if cw_ is not None:
            if cw_.seconds:
                st.caption(f"Computed in {cw_.seconds:.1f} s.")
            if view.startswith("Top attended"):
                q1, q2, q3, q4 = st.columns(4)
                by = q1.radio("Group texts by", ["gold", "pred"], horizontal=True, key="eval_tw_by",
                              format_func=lambda b: "gold label" if b == "gold" else "predicted label")
                k = q2.number_input("Words per class", 1, 100, 10, key="eval_tw_k")
                min_count = q3.number_input("Seen at least", 1, 10_000, 5, key="eval_tw_min",
                                            help="Occurrences in that class's texts.")
                score = q4.selectbox("Score", list(cv.SCORES), key="eval_tw_score", help=(
                    "relative: mean of weight x text length (1 = a uniform share; default); mean: mean raw weight "
                    "(favours words of short texts); total: summed weight (favours frequent words)."))
                table = cv.top_words(cw_, by=by, k=int(k), min_count=int(min_count), score=score)
                if table.empty:
                    st.info("No word is frequent enough; lower “Seen at least”.")
                else:
                    item = viz.top_words_figure(table, key=f"lama-t4_{ck}_{bundle.name}_{split_name}",
                                                title=f"Top attended words per class · {ck} (LAMA Table 4)")
                    w.show_figure(item, f"eval_t4_{ck}")
                    with st.expander("The table"):
                        st.dataframe(table, hide_index=True, width="stretch")
            else:
                counts = cv.word_counts(cw_, min_count=2)
                r1, r2, r3 = st.columns([2, 2, 1])
                common = list(counts.index[:300])
                best = [x for x in cv.salient_words(cw_, min_count=min(20, max(2, len(texts) // 50))) if x in common]
                word = r1.selectbox("Word", common, key="eval_f2_word", index=common.index(best[0]) if best else 0,
                                    format_func=lambda x: f"{x} ({counts[x]})",
                                    help="The 300 most frequent words (occurrences in brackets); the default is "
                                         "frequent word with the highest mean weight.") if common else None
                typed = r2.text_input("…or type any word", key="eval_f2_typed").strip().lower()
                if len(typed.split()) > 1:
                    st.info(f"Type one word: “{w.md_escape(viz.short(typed, 60))}” is "
                            f"{len(typed.split()):,} words.")
                    word = None
                else:
                    word = typed or word
                by = r3.radio("Label", ["gold", "pred"], key="eval_f2_by",
                              format_func=lambda b: "gold" if b == "gold" else "predicted")
                s1, s2 = st.columns(2)
                relative = s1.toggle("Weight x text length (1 = uniform share)", value=False, key="eval_f2_rel")
                bins = s2.slider("Bins", 5, 60, 12, key="eval_f2_bins")
                if word:
                    dist = cv.word_weights(cw_, word, by=by, relative=relative)
                    if not dist:
                        st.info(f"The word “{w.md_escape(viz.short(word, 60))}” does not occur in these texts.")
                    else:
                        hist = cv.weight_histogram(dist, bins=int(bins))
                        item = viz.word_weight_figure(hist, word, relative=relative,
                                                      key=f"lama-f2_{ck}_{viz.safe_filename(word)}",
                                                      title=f"Weight of “{viz.short(word, 40)}” by {by} label · {ck} (LAMA Fig. 2)")
                        w.show_figure(item, f"eval_f2_{ck}")
                        summ = cv.weight_summary(dist)
                        st.dataframe(summ, hide_index=True, width="content")
                        csv_button(summ, "Summary (CSV)", f"lama-f2_summary_{ck}_{word}", "eval_csv_f2")
    else:
        top = st.slider("n-grams per filter", 1, 10, 5, key="eval_fn_top")
        fn_ = run_pass("fn", "filter_ngrams", int(top), settings=(int(top),))
        if fn_ is not None:
            if fn_.seconds:
                st.caption(f"Computed in {fn_.seconds:.1f} s.")
            summ = fn_.summary(per_filter=min(3, int(top)))
            table = fn_.table
            f1, f2, f3 = st.columns(3)
            bank_opts = ["all"] + list(dict.fromkeys(table["bank"]))
            bank = f1.selectbox("Filter bank", bank_opts, key="eval_fn_bank",
                                help="Kim CNN: conv_h{h} (window h); AGCNN: gated_h{h}_k{k}; ACT: feature_map.")
            if (table["layer"] > 0).any():
                layers = sorted(set(table["layer"]))
                heads = sorted(set(table["head"]))
                layer = f2.selectbox("Layer", ["all"] + layers, key="eval_fn_layer")
                head = f3.selectbox("Head", ["all"] + heads, key="eval_fn_head")
            else:
                layer = head = "all"
            mask_s = np.ones(len(summ), dtype=bool)
            mask_t = np.ones(len(table), dtype=bool)
            for col, v in (("bank", bank), ("layer", layer), ("head", head)):
                if v != "all":
                    mask_s &= (summ[col] == v).to_numpy()
                    mask_t &= (table[col] == v).to_numpy()
            item = viz.filter_ngrams_figure(summ[mask_s], key=f"filter-ngrams_{ck}_{bundle.name}_{split_name}",
                                            title=f"Filters of {ck} and the n-grams that activate them most")
            w.show_figure(item, f"eval_fn_{ck}")
            st.caption("Each filter's max-pool picks one n-gram per text; listed are the distinct n-grams with the "
                       "highest values over the split. `hits`: texts on which the filter picked that n-gram.")
            st.dataframe(table[mask_t], hide_index=True, width="stretch")
            csv_button(table[mask_t], "All n-grams (CSV)", f"filter_ngrams_{ck}_{bundle.name}_{split_name}",
                       "eval_csv_fn")
