"""Patch: where inside the model a decision is made. Activation patching on a minimal pair ("the movie was not
good" / "the movie was very good"): the clean text's activations at one cell (a layer x position, a head, a gate,
...) are pasted into the run on the corrupted text, and the grid shows how much of the clean decision each cell
brings back; attribution patching (its first-order estimate) beside it, with their agreement; a cell picker shows
the patched prediction. `textcls.interpret.patching` computes it (docs/patching.md).

The model work runs in the model worker when it is on (`work.patch`, the job `textcls.serve.work.patch`, cached per
checkpoint, pair and grid); this page holds no model and draws the PatchResult it gets back
(`textcls.teach.patching_lesson.grid_figure`, the drawing the lesson uses). The checkpoint, the pair and the grid
live in the URL (`?ckpt=...&clean=...&corrupt=...&by=...`).
"""
from __future__ import annotations

import zlib
from types import SimpleNamespace

import numpy as np
import pandas as pd
import streamlit as st

from pages.common import inside_app, shared, urlstate, work
from pages.common import widgets as w
from textcls.data.relation import has_markers
from textcls.interpret.patching import BYS, PairError, available_by
from textcls.teach.patching_lesson import (AGREES, FAILS_BECAUSE, agreement_line, capital, cell_lines,
                                           grid_figure, prediction_lines)

CLEAN, CORRUPT = "the movie was not good", "the movie was very good"
PAIRS = {"not good / very good": (CLEAN, CORRUPT),
         "a great film / a dull film": ("a great film", "a dull film"),
         "not bad / very bad": ("the film is not bad", "the film is very bad"),
         "loved / hated": ("i loved this movie", "i hated this movie")}
# what each grid is, per family (textcls.interpret.patching; docs/patching.md, "The grids")
GRIDS = {
    "layer": {"agcnn": "feature maps (window x start word)", "kim_cnn": "feature maps (window x start word)",
              "lama": "BiGRU states (direction x word)", "hcan": "levels x word", "can": "levels x word",
              "act": "layer x position (+ g)", "": "layer x position"},
    "position": {"agcnn": "gates (gate x start word)", "": "layer x position"},
    "head": {"act": "layer x head (feature maps M)", "lama": "heads (attention, pooled M)",
             "hcan": "branch x head", "can": "branch x head", "": "layer x head"},
    "gate": {"": "gates x channel group"},
    "filter": {"": "filter groups"},
}
TITLE_CHARS = 62            # a half-width column's title, in characters
SIDE_BY_SIDE = 9            # grids of at most this many columns are drawn side by side

inside_app(__file__)

st.title("Where does the model decide?")
st.caption("Activation patching on a minimal pair: paste one piece of the model's run on the clean text into its "
           "run on the corrupted text, and see how much of the clean decision comes back. Every other page asks "
           "which words mattered; this one asks where inside the model - which layer, position, head or gate - the "
           "difference is carried. docs/patching.md has what the shipped models show.")

valid = w.require_checkpoints()
by_name = {i.name: i for i in valid}
names = list(by_name)
urlstate.restore("patch", {"ckpt": "patch_ckpt", "clean": "patch_clean", "corrupt": "patch_corrupt",
                           "by": "patch_by"}, options={"ckpt": names, "by": BYS})
shared.seed_value("patch_ckpt", shared.latest(names) or ("transformer-sst2" if "transformer-sst2" in names else
                                                         w.main_task_checkpoints(valid)[0]), options=names)
shared.seed_value("patch_clean", CLEAN)
shared.seed_value("patch_corrupt", CORRUPT)


def put_pair() -> None:
    pick = st.session_state.get("patch_example")
    if pick in PAIRS:
        st.session_state["patch_clean"], st.session_state["patch_corrupt"] = PAIRS[pick]


c1, c2 = st.columns([3, 2])
name = c1.selectbox("Checkpoint", names, key="patch_ckpt", format_func=lambda n: w.ckpt_label(by_name[n]),
                    on_change=lambda: shared.note_latest(st.session_state["patch_ckpt"]))
shared.keep_value("patch_ckpt", name)
c2.selectbox("Example pair", list(PAIRS), index=None, key="patch_example", on_change=put_pair,
             placeholder="Start from an example pair…",
             help="Pairs that line up word by word: the same number of words, one changed.")
info = by_name[name]

with st.form("patch_form"):
    a, b = st.columns(2)
    clean = a.text_input("Clean text (its activations are copied)", key="patch_clean",
                         help="The run whose activations are pasted in, one cell at a time.")
    corrupt = b.text_input("Corrupted text (the run they are pasted into)", key="patch_corrupt",
                           help="Change words of the clean text; do not add or drop any: position i of one run is "
                                "pasted into position i of the other.")
    st.form_submit_button("Patch", type="primary", icon=":material/call_split:")
shared.keep_value("patch_clean", clean)
shared.keep_value("patch_corrupt", corrupt)

family = "hf" if str(info.model).startswith("hf:") else str(info.model)
try:
    offered = list(available_by(SimpleNamespace(registry_name=family)))
except PairError as e:                  # a plugin family patching does not know
    st.warning(f"{w.md_escape(name)}: {w.md_escape(e)}.", icon=":material/info:")
    st.stop()
offered = [x for x in offered if x != "position" or family == "agcnn"]   # elsewhere "position" is "layer"
if st.session_state.get("patch_by") not in offered:
    st.session_state["patch_by"] = offered[0]
by = st.radio("Grid", offered, key="patch_by", horizontal=True,
              format_func=lambda x: GRIDS[x].get(family, GRIDS[x][""]),
              help="What a cell is: rows are sites inside the model, columns the units patched there. The last "
                   "column, all, patches the whole row.")
shared.keep_value("patch_by", by)
urlstate.publish("patch", {"ckpt": name, "clean": clean, "corrupt": corrupt, "by": by})

with st.container(border=True):
    d1, d2 = st.columns([3, 2], vertical_alignment="center")
    d1.markdown("**Denoising.** The clean run's activations at one cell are pasted into the corrupted run. "
                "**LD** = logit[t] - logit[f], t the clean text's label and f the corrupted text's (the clean "
                "runner-up when both agree). A cell's share **restored** is how much of the gap between the two "
                "runs it closes: 1 = that cell alone brings the clean decision back, 0 = no effect, below 0 = it "
                "pushes the other way. **Attribution patching** estimates the same share to first order, "
                "(a_clean - a_corrupt) · dLD/da at the corrupted run: one backward pass for the whole grid.")
    d2.latex(r"\text{restored} = \frac{LD_\text{patched} - LD_\text{corrupt}}{LD_\text{clean} - LD_\text{corrupt}}")

clean, corrupt = w.clean_text(clean, what="clean text"), w.clean_text(corrupt, what="corrupted text")
if clean is None or corrupt is None:
    st.stop()
if w.needs_entities(info) and not (has_markers(clean) and has_markers(corrupt)):
    st.warning(f"{w.md_escape(name)} reads relation sentences: mark the two entities in both texts. "
               + w.md_escape(w.MARKER_SYNTAX), icon=":material/info:")
    st.stop()

with st.spinner("Patching every cell…"), w.or_one_line(f"Patching on {name}"):
    try:
        r = work.patch(info.path, clean, corrupt, by)
    except PairError as e:
        st.warning(f"This pair cannot be patched on {w.md_escape(name)}: {w.md_escape(e)}",
                   icon=":material/link_off:")
        st.stop()

st.markdown(" ".join(w.md_escape(x) for x in prediction_lines(r, name)))
# side by side while the grids are narrow; a wide grid (MiniLM's heads, AGCNN's gates) gets the page's width
left, right = st.columns(2) if len(r.columns) <= SIDE_BY_SIDE else (st.container(), st.container())
with left:
    wide = len(r.columns) > SIDE_BY_SIDE
    w.show_figure(grid_figure(r, "restored", name=name), "patch_restored", title_chars=2 * TITLE_CHARS if wide
                  else TITLE_CHARS)
    for line in cell_lines(r):
        st.caption(w.md_escape(line))
with right:
    w.show_figure(grid_figure(r, "attribution", name=name), "patch_attribution", title_chars=2 * TITLE_CHARS if wide
                  else TITLE_CHARS)
    agree = agreement_line(r)
    pearson = (r.agreement or {}).get("pearson")
    if agree and pearson is not None and np.isfinite(pearson) and pearson < AGREES:
        st.warning(w.md_escape(agree) + " " + w.md_escape(FAILS_BECAUSE), icon=":material/warning:")
    elif agree:
        st.caption(w.md_escape(agree) + " Trust the estimate where the agreement is high; patch to check.")

st.subheader("One cell: the patched prediction")
body = np.where(np.isfinite(r.restored[:, :-1]), r.restored[:, :-1], -np.inf)
best = np.unravel_index(int(np.argmax(body)), body.shape) if np.isfinite(body).any() else (0, 0)
digest = f"{zlib.crc32(chr(31).join(r.rows + ['|'] + r.columns).encode()):08x}"   # a new grid: new pickers
p1, p2 = st.columns(2)
row = p1.selectbox(f"Row ({r.row_axis})", r.rows, index=int(best[0]), key=f"patch_row_{digest}")
col = p2.selectbox(f"Column ({r.column_axis})", r.columns, index=int(best[1]), key=f"patch_col_{digest}")
cell = r.cell(row, col)
if cell["restored"] is None:
    st.info(f"The cell {w.md_escape(row)} · {w.md_escape(col)} does not apply to this model (grey in the grid).",
            icon=":material/block:")
else:
    pred = cell["prediction"]
    m1, m2, m3 = st.columns(3)
    m1.metric("Restored (activation patching)", f"{cell['restored']:.3f}")
    m2.metric("Attribution estimate", "n/a" if cell["attribution"] is None else f"{cell['attribution']:.3f}")
    m3.metric("Patched prediction", f"{pred['label']} ({pred['probabilities'][pred['label']]:.2f})")
    i, j = r.rows.index(row), r.columns.index(col)
    logits = r.patched_logits[i, j]
    runs = [("corrupted, nothing patched", r.corrupt_prediction, r.ld_corrupt),
            (f"corrupted, {row} · {col} pasted from the clean run", pred,
             float(logits[r.target] - logits[r.foil])),
            ("clean", r.clean_prediction, r.ld_clean)]
    t, f = r.labels[r.target], r.labels[r.foil]
    table = pd.DataFrame([{"run": what, "prediction": p["label"],
                           **{f"P({lab})": p["probabilities"][lab] for lab in r.labels},
                           f"LD = logit[{t}] - logit[{f}]": ld} for what, p, ld in runs])
    st.dataframe(table, hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(format="%.3f") for c in table.columns[2:]})

notes = list(r.notes) + [f"Nothing patched (every hook in place) restores {r.nothing:.1e}: a check of the "
                         "machinery, 0 by construction.",
                         "A cell that restores 1 is sufficient given the rest of the corrupted run; one that "
                         "restores little may still be needed together with others. One pair is one contrast: "
                         "another pair can put the decision elsewhere (docs/patching.md)."]
st.caption("  \n".join(w.md_escape(capital(n)) for n in notes))
st.page_link("pages/lessons.py", label="The lesson: Where does 'not good' become negative?", icon=":material/school:",
             query_params={"lesson": "patching"})
