"""Explore: a data split across several models at once - slices with metrics per checkpoint, the embedding
projector (two to four models side by side; select points to make a slice, open one in Inspect or Attribute),
nearest training texts in each model's space, generated counterfactuals with flip rates, and thresholds and
calibration (ROC / PR with AUC, reliability and ECE); per checkpoint, concepts (TCAV), salience clusters and the
training examples ranked by self-influence. Checkpoints, data, view, slice and text live in the URL.

Every number comes from the library (textcls.analysis.slices, representations, counterfactuals, calibration,
viz.dataset, the interpreters) through the cached wrappers of pages.common.cache, pages.common.work and
pages.common.interpreters (the model worker computes the model work); the views are laid out by
pages.common.explore_views and explore_model_views; this page arranges them.
"""
from __future__ import annotations

import streamlit as st

from pages.common import explore_model_views as mv
from pages.common import explore_views as ev
from pages.common import cache, inside_app, urlstate
from pages.common import widgets as w
from textcls.analysis import slices as sl
from textcls.analysis.metrics import score_predictions, unknown_labels
from textcls.data import datasets as tdata

inside_app(__file__)

PAGE = "explore"
VIEWS = [*ev.VIEWS, *mv.VIEWS]
MAX_ROWS = 20_000           # rows of a split the page predicts on (a larger split is sampled, seeded)
SENTENCE = "the acting is good , but the plot is not very interesting ."

st.title("Explore a data set across models")
st.caption("Slices of a split with metrics per checkpoint, an embedding projector, nearest neighbours, generated "
           "counterfactuals and calibration - for several models side by side. The URL keeps the checkpoints, "
           "data set, view, slice and text: copy it to share this view.")

valid = w.require_checkpoints()
by_name = {i.name: i for i in valid}
names = list(by_name)
bundled = tdata.list_datasets()
urlstate.restore(PAGE, {"ckpt": "exp_ckpts", "data": "exp_data", "split": "exp_split", "view": "exp_view",
                        "slice": "exp_slice", "text": "exp_text"},
                 lists=("ckpt",), options={"ckpt": names, "data": bundled, "view": VIEWS})

first_data = next((d for d in w.tasks(valid) if d in bundled), bundled[0] if bundled else None)   # the main task
main = [n for n in names if by_name[n].data == first_data]                               # the whole main task
default_ckpts = [n for n in main if not w.is_pretrained(by_name[n])] or main or names[:2]  # but the slow encoders
st.session_state.setdefault("exp_ckpts", default_ckpts)
st.session_state.setdefault("exp_view", "Slices")
st.session_state.setdefault("exp_text", SENTENCE)   # the text box's value one way only: a link's, else this
chosen = st.multiselect("Checkpoints", names, key="exp_ckpts",        # the whole width: every chip shows
                        format_func=lambda n: w.ckpt_label(by_name[n]))
if heavy := [n for n in main if n not in default_ckpts and n not in chosen]:
    st.caption(f"Not selected at first: {', '.join(heavy)} (a pretrained encoder: a whole split takes it tens of "
               "times longer than the small models).")
c2, c3, _ = st.columns([2, 1, 3])
if not bundled:
    st.warning("No data set found.")
    st.stop()
if st.session_state.get("exp_data") not in bundled:
    st.session_state["exp_data"] = first_data if first_data in bundled else bundled[0]
spec = c2.selectbox("Data set", bundled, key="exp_data")
try:
    bundle = cache.dataset(spec)
except (tdata.DataError, ValueError) as e:
    st.error(f"This data set cannot be read: {w.md_escape(e)}")
    st.stop()
splits = list(bundle.splits)
if st.session_state.get("exp_split") not in splits:
    st.session_state["exp_split"] = "test" if "test" in splits else splits[-1]
split_name = c3.selectbox("Split", splits, key="exp_split")
view = st.segmented_control("View", VIEWS, key="exp_view") or "Slices"

if not chosen:
    urlstate.publish(PAGE, {"data": spec, "split": split_name, "view": view})
    st.info("Pick at least one checkpoint.", icon=":material/checklist:")
    st.stop()
infos = [by_name[n] for n in chosen]

split = bundle.splits[split_name]
part = split.sample(MAX_ROWS, seed=0)
texts, gold = list(part.texts), [bundle.labels[y] for y in part.labels]
if len(split) > MAX_ROWS:
    st.caption(f"{len(split):,} rows: a seeded sample of {MAX_ROWS:,} is used (row numbers refer to it).")
if not texts:
    st.info("This split is empty.")
    st.stop()

# ---------------------------------------------------------------- predictions (cached per checkpoint and texts)
preds, probs = {}, {}
with st.spinner(f"Running {len(infos)} checkpoint(s) on {len(texts):,} texts…"):
    for info in infos:
        unknown = unknown_labels(gold, info.labels)
        if unknown:
            st.warning(f"{w.md_escape(info.name)} does not know the label(s) {w.md_escape(', '.join(unknown[:5]))} "
                       "of this data set; it is left out.")
            continue
        ps = w.safe_predict(info, texts)
        if ps is None:
            continue
        scored = score_predictions(ps, gold, info.labels)
        preds[info.name], probs[info.name] = scored["pred_names"], scored["probs"]
if not preds:
    st.stop()
ctx = sl.SliceContext(texts, gold, preds)

# ---------------------------------------------------------------- the active slice
saved = sl.load_slices(bundle.name)
all_slices = {s.name: s for s in sl.default_slices(ctx, bundle.labels) + saved}
if "_exp_slice_next" in st.session_state:           # a slice saved on the last run becomes the active one
    st.session_state["exp_slice"] = st.session_state.pop("_exp_slice_next")
if st.session_state.get("exp_slice") not in all_slices:
    st.session_state["exp_slice"] = "all"
slice_name = st.selectbox("Slice (used by every view)", list(all_slices), key="exp_slice",
                          format_func=lambda n: f"{n} - {all_slices[n].describe()}")
active = all_slices[slice_name]
urlstate.publish(PAGE, {"ckpt": chosen, "data": spec, "split": split_name, "view": view,
                        "slice": None if slice_name == "all" else slice_name,
                        "text": (st.session_state.get("exp_text") or None)
                        if view in ("Neighbours", "Counterfactuals") else None})
try:
    sl.check_split(active, split_name, sampled=len(split) > MAX_ROWS)
    rows = sl.slice_rows(active, ctx)
except sl.SliceError as e:
    st.error(f"The slice cannot be applied: {w.md_escape(e)}")
    st.stop()
st.caption(f"Slice **{w.md_escape(slice_name)}**: {len(rows):,} of {len(texts):,} rows of "
           f"{w.md_escape(bundle.name)} / {w.md_escape(split_name)}.")


state = ev.Explore(bundle, split_name, texts, gold, preds, probs, ctx, all_slices, saved, slice_name, active, rows, by_name)
if view in ev.VIEWS:
    ev.VIEWS[view](state)
else:
    mv.VIEWS[view](state)
