"""Evaluate: checkpoints on a data split - metrics, confusion matrices, mistakes and disagreements (each one a
click away from Inspect), training curves (HCAN Fig. 3, LAMA Fig. 5) and data-set-level views (LAMA Table 4,
LAMA Fig. 2, the n-grams each filter detects). Tables download as CSV, figures as PNG/SVG/CSV/JSON.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from pages.common import cache, inside_app, widgets as w, work
from pages.common.defaults import available_data, data_spec, default_limit, default_split, evaluated_part
from pages.common.evaluate_parts import (filter_ngrams_view, open_in_inspect, pick_row, run_pass,
    top_words_view, training_curves, word_weight_view)
from textcls.analysis.corpus_cache import checkpoint_stamp
from textcls.data import datasets as tdata
from textcls.analysis import slices as sl
from textcls import viz
from textcls.analysis.metrics import default_ignore_label, score_predictions, select_scored, unknown_labels
from textcls.analysis.mistakes import disagreeing_pair, disagreements, error_count, mistakes

inside_app(__file__)

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
                     "examples": rep["n"], "errors": error_count(r),
                     "trained on": w.trained_on(r["info"])})
    summary = pd.DataFrame(rows)
    pct = st.column_config.NumberColumn(format="percent")
    st.dataframe(summary, hide_index=True, width="stretch",
                 column_config={"accuracy": pct, "macro-F1": pct, "macro-F1 (all classes)": pct})
    ign = next((r["report"]["ignore_label"] for r in runs.values() if r["report"]["ignore_label"]), None)
    if ign:
        st.caption(f"macro-F1 leaves out “{w.md_escape(ign)}” (the task's official metric).")
    w.csv_button(summary, "Metrics (CSV)", f"metrics_{bundle.name}_{split_name}", "eval_csv_metrics")

    st.markdown("**Per class**")
    per = pd.DataFrame([{"checkpoint": name, "label": lab, **sc} for name, r in runs.items()
                        for lab, sc in r["report"]["per_class"].items()])
    st.dataframe(per, hide_index=True, width="stretch", height=min(600, 38 + 35 * len(per)),
                 column_config={c: st.column_config.NumberColumn(format="%.3f") for c in ("precision", "recall", "f1")})
    w.csv_button(per, "Per-class scores (CSV)", f"per_class_{bundle.name}_{split_name}", "eval_csv_per_class")
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
    err = mistakes(r, texts, gold_names)                       # most confident first
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
        w.csv_button(err, "Mistakes (CSV)", f"mistakes_{pick}_{bundle.name}_{split_name}", "eval_csv_err")

    if len(runs) >= 2:
        st.markdown("**Where the checkpoints disagree**")
        labels_by = {n: runs[n]["pred_names"] for n in runs}
        dis = disagreements(labels_by, texts, gold_names)
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
            open_in_inspect(texts[i], *disagreeing_pair(labels_by, i))
        with d3:
            w.csv_button(dis, "Disagreements (CSV)", f"disagreements_{bundle.name}_{split_name}", "eval_csv_dis")

# ---------------------------------------------------------------- training curves
with tab_c:
    training_curves(names, chosen, by_name)

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

    where = f"{bundle.name}_{split_name}"
    if view.startswith("Top attended") or view.startswith("A word"):
        st.caption(f"Token weights of {w.md_escape(ck)}: {w.md_escape(source)} (normalised to sum to 1 per text).")
        cw_ = run_pass(info, texts, state, base_key, "tw", "token_weights", list(gold_names))
        if cw_ is not None:
            if cw_.seconds:
                st.caption(f"Computed in {cw_.seconds:.1f} s.")
            if view.startswith("Top attended"):
                top_words_view(cw_, ck, where)
            else:
                word_weight_view(cw_, ck, len(texts))
    else:
        top = st.slider("n-grams per filter", 1, 10, 5, key="eval_fn_top")
        fn_ = run_pass(info, texts, state, base_key, "fn", "filter_ngrams", int(top), settings=(int(top),))
        if fn_ is not None:
            filter_ngrams_view(fn_, ck, int(top), where)
