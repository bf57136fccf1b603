"""Explore's views of a split across checkpoints (Slices, Projector, Neighbours, Counterfactuals, Thresholds): each
a function of the page's `Explore` state (the split, its gold labels, every checkpoint's predictions, the active slice)
that lays out what the library computes (textcls.analysis.slices, representations, counterfactuals, calibration,
viz.dataset) through the cached wrappers of pages.common.cache and pages.common.work."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from pages.common import work
from pages.common import widgets as w
from textcls import viz
from textcls.analysis import calibration as cal
from textcls.analysis import slices as sl
from textcls.data.readable import readable

MAX_MODELS = 4              # models side by side in the projector and neighbours
NEIGHBOUR_POOL = 5_000      # training texts searched for neighbours (sampled beyond)
CF_DEFAULT_LIMIT = 200


@dataclass
class Explore:
    """What every view reads: the data set and split, its texts and gold labels, each checkpoint's predicted labels
    and probabilities, the slices and the active one, and its rows."""

    bundle: object
    split_name: str
    texts: list
    gold: list
    preds: dict
    probs: dict
    ctx: object
    all_slices: dict
    saved: list
    slice_name: str
    active: object
    rows: object
    by_name: dict

    def open_buttons(self, text: str, key: str, ckpts: list[str] | None = None) -> None:
        ckpts = ckpts or list(self.preds)
        b1, b2 = st.columns(2)
        if b1.button("Open in Inspect", key=f"{key}_insp", icon=":material/visibility:"):
            open_in("inspect", text, ckpts[:2])
        if b2.button("Open in Attribute", key=f"{key}_attr", icon=":material/highlight:"):
            open_in("attribute", text, ckpts[:6])

    def empty_slice(self) -> None:
        st.info(f"The slice “{w.md_escape(self.slice_name)}” is empty on this split: choose another slice.",
                icon=":material/filter_alt_off:")


def open_in(page: str, text: str, ckpts: list[str]) -> None:
    """Hand a text and checkpoint(s) to Inspect or Attribute (they read these session keys) and go there."""
    if page == "inspect":
        st.session_state["insp_text"] = text
        st.session_state["insp_ckpt"] = ckpts[0]
        st.session_state["insp_two"] = len(ckpts) > 1
        if len(ckpts) > 1:
            st.session_state["insp_ckpt2"] = ckpts[1]
        st.switch_page("pages/inspect.py")
    st.session_state["attr_text"] = text
    st.session_state["attr_ckpts"] = ckpts
    st.switch_page("pages/attribute.py")




def slices(s: Explore) -> None:
    """The slices' metrics per checkpoint, a slice defined and saved, the active slice's rows."""
    bundle, split_name, texts, gold, preds, rows, ctx, slice_name, saved, all_slices = (
        s.bundle, s.split_name, s.texts, s.gold, s.preds, s.rows, s.ctx, s.slice_name, s.saved, s.all_slices)
    table = sl.slice_metrics(list(all_slices.values()), ctx, bundle.labels)
    metric = st.radio("Metric", ["accuracy", "macro_f1"], horizontal=True, key="exp_sl_metric",
                      format_func=lambda m: m.replace("_", "-"))
    w.show_figure(viz.slice_metrics_figure(table, metric=metric, key=f"slices_{bundle.name}_{split_name}"),
                  "exp_sl_fig")
    st.caption(f"macro-F1 averages the F1 of all {len(bundle.labels)} classes of the data set, so on a slice with "
               f"one gold label it is at most 1/{len(bundle.labels)}; compare accuracy there.")
    st.dataframe(table, hide_index=True, width="stretch",
                 column_config={"accuracy": st.column_config.NumberColumn(format="percent"),
                                "macro_f1": st.column_config.NumberColumn("macro-F1", format="percent")})
    with st.expander("Define a slice and save it for this data set", expanded=not saved):
        k1, k2, k3 = st.columns([2, 2, 2])
        kind = k1.selectbox("Kind", [k for k in sl.KINDS if k != "all"], key="exp_sl_kind",
                            format_func=lambda k: sl.KIND_TEXT[k])
        value, ck = None, None
        if kind == "label":
            value = k2.selectbox("Label", bundle.labels, key="exp_sl_label")
        elif kind in ("prediction", "correct", "wrong"):
            if kind == "prediction":
                value = k2.selectbox("Predicted label", bundle.labels, key="exp_sl_plabel")
            ck = k3.selectbox("Whose prediction", ["every checkpoint"] + list(preds), key="exp_sl_ck")
            ck = None if ck == "every checkpoint" else ck
        elif kind == "length":
            lo = k2.number_input("At least (words)", 0, 100_000, 0, key="exp_sl_lo")
            hi = k3.number_input("At most (words, 0 = no limit)", 0, 100_000, 10, key="exp_sl_hi")
            value = [int(lo), int(hi) or None]
        elif kind in ("word", "regex"):
            value = k2.text_input("Word" if kind == "word" else "Regular expression (case-insensitive)",
                                  key=f"exp_sl_{kind}")
        elif kind == "rows":
            raw = k2.text_input("Row numbers (comma-separated)", key="exp_sl_rows")
            try:
                value = [int(x) for x in raw.replace(" ", "").split(",") if x]
            except ValueError:
                st.error("Row numbers must be whole numbers separated by commas.")
                value = []
        name = st.text_input("Slice name", key="exp_sl_name", placeholder="e.g. long negative reviews")
        try:
            new = sl.Slice(name.strip() or "(unnamed)", kind, value, ck, split=split_name if kind == "rows" else None)
            n_new = len(sl.slice_rows(new, ctx))
            st.caption(f"{n_new:,} rows match: {w.md_escape(new.describe())}.")
        except sl.SliceError as e:
            st.error(w.md_escape(e), icon=":material/error:")
            new = None
        if st.button("Save slice", key="exp_sl_save", disabled=new is None or not name.strip(), type="primary",
                     help="Saved in your user folder for this data set; usable on every view and page."):
            try:
                sl.save_slice(bundle.name, new)
                st.session_state["_exp_slice_next"] = new.name
                st.rerun()
            except (sl.SliceError, OSError) as e:
                st.error(f"Could not save: {w.md_escape(e)}")
    if saved:
        gone = st.selectbox("Delete a saved slice", ["—"] + [s.name for s in saved], key="exp_sl_del")
        if gone != "—" and st.button("Delete", key="exp_sl_del_btn"):
            sl.delete_slice(bundle.name, gone)
            st.rerun()
    if len(rows):
        show = pd.DataFrame({"row": rows, "text": [readable(texts[i]) for i in rows], "gold": [gold[i] for i in rows],
                             **{ck: [preds[ck][i] for i in rows] for ck in preds}})
        st.markdown(f"**Rows of “{w.md_escape(slice_name)}”**")
        st.dataframe(show.head(1000), hide_index=True, width="stretch")
        w.csv_button(show, "Slice rows (CSV)", f"slice_{slice_name}_{bundle.name}", "exp_sl_csv")
    else:
        s.empty_slice()


def projector(s: Explore) -> None:
    """Two to four models' representations projected side by side; selected points listed, saved as a slice or
    opened in Inspect or Attribute."""
    bundle, split_name, texts, gold, preds, rows, ctx, active, by_name = (
        s.bundle, s.split_name, s.texts, s.gold, s.preds, s.rows, s.ctx, s.active, s.by_name)
    from textcls.analysis import representations as rp
    if not len(rows):
        s.empty_slice()
        st.stop()
    models = list(preds)[:MAX_MODELS]
    if len(preds) > MAX_MODELS:
        st.caption(f"The first {MAX_MODELS} checkpoints are shown side by side.")
    avail = rp.available_projections()
    p1, p2, p3 = st.columns(3)
    method = p1.radio("Projection", avail, horizontal=True, key="exp_pr_method",
                      format_func=lambda m: rp.PROJECTION_LABELS[m],
                      help="PCA is instant; t-SNE (scikit-learn) takes tens of seconds on 2,000 points; UMAP "
                           "(umap-learn) needs a slow first import.")
    colour_by = p2.radio("Colour by", ["label", "prediction", "correctness", "slice"], horizontal=True,
                         key="exp_pr_colour")
    cap = int(p3.number_input("Points at most", 100, rp.PROJECTOR_CAP, min(2000, rp.PROJECTOR_CAP), step=500,
                              key="exp_pr_cap", help=f"Larger slices are sampled (seeded); at most "
                              f"{rp.PROJECTOR_CAP:,}."))
    pick = rows[rp.sample_rows(len(rows), cap)]
    if len(pick) < len(rows):
        st.caption(f"{len(rows):,} rows in the slice: a seeded sample of {len(pick):,} is projected.")
    if len(pick) < 3:
        st.info("A projection needs at least 3 rows; this slice has fewer.")
        st.stop()
    sub = tuple(texts[i] for i in pick)
    bar = st.progress(0.0, text="Computing representations…")
    figs = []
    axis = "PC" if method == "pca" else rp.PROJECTION_LABELS[method]
    for k, ck in enumerate(models):
        bar.progress(k / len(models), text=f"{ck}: representations and {rp.PROJECTION_LABELS[method]}…")
        try:
            xy = work.projection(by_name[ck].path, sub, method)
        except Exception as e:  # noqa: BLE001 - shown, never a traceback
            st.error(f"{w.md_escape(ck)}: {w.md_escape(e)}")
            continue
        if colour_by == "label":
            colour = [gold[i] for i in pick]
        elif colour_by == "prediction":
            colour = [preds[ck][i] for i in pick]
        elif colour_by == "correctness":
            colour = ["correct" if preds[ck][i] == gold[i] else "wrong" for i in pick]
        else:
            inside = set(sl.slice_rows(active, ctx).tolist())
            colour = ["in slice" if i in inside else "outside" for i in pick]
        figs.append((ck, viz.projector_figure(xy, list(sub), colour, pick, colour_name=colour_by,
                                              labels=bundle.labels if colour_by in ("label", "prediction") else None,
                                              title=f"{ck} · {rp.PROJECTION_LABELS[method]}",
                                              axis_names=tuple(f"{axis} {d}" for d in (1, 2)),
                                              key=f"projector_{ck}_{method}_{bundle.name}_{split_name}")))
    bar.empty()
    selected: list[int] = []
    cols = st.columns(min(2, max(1, len(figs))))
    for k, (ck, item) in enumerate(figs):
        with cols[k % len(cols)]:
            ev = st.plotly_chart(item.fig, theme=None, key=f"exp_proj_{ck}", on_select="rerun",
                                 selection_mode=("points", "box", "lasso"), config=w.chart_config(item.key))
            st.caption(w.md_escape(item.caption))
            w.export_buttons(item, f"exp_proj_{ck}")
            pts = getattr(getattr(ev, "selection", None), "points", None) or []
            selected += [int(p["customdata"]) for p in pts if isinstance(p, dict) and "customdata" in p]
    selected = list(dict.fromkeys(selected))
    if not selected:
        st.caption("Select points (drag a box or lasso, or click one) to list them, save them as a slice, or open "
                   "one in Inspect and Attribute.")
    else:
        st.markdown(f"**{len(selected):,} point(s) selected**")
        sel = pd.DataFrame({"row": selected, "text": [readable(texts[i]) for i in selected],
                            "gold": [gold[i] for i in selected],
                            **{ck: [preds[ck][i] for i in selected] for ck in models}})
        st.dataframe(sel, hide_index=True, width="stretch", height=min(400, 38 + 35 * len(sel)))
        one = st.selectbox("Point", selected, key="exp_pr_point",
                           format_func=lambda i: f"#{i} · {viz.short(readable(texts[i]), 90)}")
        s.open_buttons(texts[one], "exp_pr_open", models)
        s1, s2 = st.columns([3, 1], vertical_alignment="bottom")
        nm = s1.text_input("Save the selection as a slice named", key="exp_pr_slice_name")
        if s2.button("Save slice", key="exp_pr_save", disabled=not nm.strip()):
            sl.save_slice(bundle.name, sl.Slice(nm.strip(), "rows", selected, note="selected in the projector",
                                                split=split_name))
            st.session_state["_exp_slice_next"] = nm.strip()
            st.rerun()


def neighbours(s: Explore) -> None:
    """The nearest training texts to a text in each model's space."""
    bundle, split_name, preds, by_name = s.bundle, s.split_name, s.preds, s.by_name
    from textcls.analysis import representations as rp
    text = w.clean_text(st.text_input("Text", key="exp_text"))
    if text is None:
        st.stop()
    pool_split = "train" if "train" in bundle.splits else split_name
    pool = bundle.splits[pool_split].sample(NEIGHBOUR_POOL, seed=0)
    k = st.slider("Neighbours", 1, 30, 8, key="exp_nn_k")
    st.caption(f"Searched: {len(pool):,} texts of {w.md_escape(bundle.name)} / {pool_split}"
               + (" (a seeded sample)" if len(pool) < len(bundle.splits[pool_split]) else "") +
               ". Cosine similarity of the vector each model's classifier reads.")
    models = list(preds)[:MAX_MODELS]
    cols = st.columns(len(models))
    bar = st.progress(0.0, text="Computing representations…")
    for j, ck in enumerate(models):
        bar.progress(j / len(models), text=f"{ck}…")
        try:
            X = work.representations(by_name[ck].path, tuple(pool.texts))
            q = work.representations(by_name[ck].path, (text,))[0]
        except Exception as e:  # noqa: BLE001
            cols[j].error(f"{w.md_escape(ck)}: {w.md_escape(e)}")
            continue
        idx, sims = rp.nearest_neighbours(q, X, k)
        with cols[j]:
            st.markdown(f"**{w.md_escape(ck)}**")
            # a static table: each text whole, wrapped in its cell (a data grid cut them mid-sentence)
            st.table(pd.DataFrame({"similarity": [f"{x:.3f}" for x in sims],
                                   "text": [readable(pool.texts[i]) for i in idx],
                                   "label": [bundle.labels[pool.labels[i]] for i in idx]}), hide_index=True)
    bar.empty()
    s.open_buttons(text, "exp_nn_open", models)


def counterfactuals(s: Explore) -> None:
    """Generated edits of a text or the slice's rows, with how often each flips each checkpoint."""
    bundle, texts, preds, rows, by_name = s.bundle, s.texts, s.preds, s.rows, s.by_name
    from textcls.analysis import counterfactuals as cf
    src = st.radio("Edit", ["one text", "the rows of the slice"], horizontal=True, key="exp_cf_src")
    if src == "one text":
        text = w.clean_text(st.text_input("Text", key="exp_text"))
        if text is None:
            st.stop()
        items = [text]
    else:
        if not len(rows):
            s.empty_slice()
            st.stop()
        lim = int(st.number_input("Rows at most", 1, len(rows), min(CF_DEFAULT_LIMIT, len(rows)), key="exp_cf_lim"))
        items = [texts[i] for i in rows[:lim]]
    gens = st.multiselect("Generators", list(cf.GENERATORS), default=["negation", "scrambler", "hotflip"],
                          key="exp_cf_gens", format_func=lambda g: cf.GENERATORS[g].label)
    rules = st.text_input("Word replacer rules", value="good -> bad, great -> awful", key="exp_cf_rules",
                          disabled="word_replacer" not in gens)
    if not gens:
        st.info("Pick at least one generator.")
        st.stop()
    reports, bar = [], st.progress(0.0, text="Generating…")
    total = len(gens) * len(preds)
    for g in gens:
        for ck in preds:
            bar.progress(len(reports) / total, text=f"{cf.GENERATORS[g].label} · {ck} on {len(items):,} text(s)…")
            try:
                reports.append(work.flip_report(by_name[ck].path, tuple(items), g, rules=rules))
            except ValueError as e:           # CounterfactualError, or GloVe missing (DataError)
                st.error(f"{cf.GENERATORS[g].label}: {w.md_escape(e)}")
                break
            except Exception as e:  # noqa: BLE001 - the worker could not answer: one line
                st.error(f"{cf.GENERATORS[g].label} · {w.md_escape(ck)}: {type(e).__name__}: {w.md_escape(e)}")
                break
    bar.empty()
    if not reports:
        st.stop()
    for r in reports:
        r.checkpoint = r.checkpoint or ""
    summary = cf.summary_table(reports)
    nothing = sorted({r.generator for r in reports if r.n == 0})
    for g in nothing:
        st.info(f"{cf.GENERATORS[g].label} found nothing to change in "
                f"{'this text' if len(items) == 1 else 'these texts'}.", icon=":material/info:")
    st.dataframe(summary, hide_index=True, width="stretch",
                 column_config={"n_texts": st.column_config.NumberColumn("texts", help="texts given"),
                                "n": st.column_config.NumberColumn("edited", help="edited texts the generator made"),
                                "seconds": st.column_config.NumberColumn("seconds", format="%.2f"),
                                "flip_rate": st.column_config.NumberColumn("flip rate", format="percent"),
                                "mean_prob_change": st.column_config.NumberColumn("mean Δp(original label)",
                                                                                  format="%+.3f")})
    w.show_figure(viz.flip_rates_figure(summary[summary["n"] > 0], key=f"flip_rates_{bundle.name}"), "exp_cf_fig")
    st.markdown("**The edited texts**")
    opts = [k for k, r in enumerate(reports) if r.n]
    if opts:
        k = st.selectbox("Generator and checkpoint", opts, key="exp_cf_pick",
                         format_func=lambda k: f"{cf.GENERATORS[reports[k].generator].label} · "
                                               f"{reports[k].checkpoint}")
        r = reports[k]
        only = st.toggle("Only the edits that flip the decision", value=False, key="exp_cf_only")
        df = r.rows[r.rows["flipped"]] if only else r.rows
        ev = st.dataframe(df, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
                          key=f"exp_cf_table_{k}", column_config={
                              "p": st.column_config.NumberColumn(format="%.3f"),
                              "new_p": st.column_config.NumberColumn("p after", format="%.3f")})
        w.csv_button(r.rows, "Edits (CSV)", f"counterfactuals_{r.generator}_{r.checkpoint}", "exp_cf_csv")
        sel = list(getattr(getattr(ev, "selection", None), "rows", []) or [])
        if sel and sel[0] < len(df):
            row = df.iloc[sel[0]]
            st.caption("Selected edit: " + w.md_escape(viz.short(str(row["edited"]), 200)))
            s.open_buttons(str(row["edited"]), "exp_cf_open", [r.checkpoint] + [c for c in preds if c != r.checkpoint])
        else:
            st.caption("Select a row to open the edited text in Inspect or Attribute.")


def thresholds(s: Explore) -> None:
    """ROC and PR curves at a threshold (two classes), the reliability diagram and ECE (any number)."""
    bundle, split_name, gold, preds, probs, rows, by_name = (
        s.bundle, s.split_name, s.gold, s.preds, s.probs, s.rows, s.by_name)
    if not len(rows):
        s.empty_slice()
        st.stop()
    present = sorted(set(gold[i] for i in rows))
    binary = len(bundle.labels) == 2
    if binary:
        pos_label = st.selectbox("Positive class", bundle.labels, index=1, key="exp_th_pos")
        t = st.slider("Threshold on p(positive)", 0.0, 1.0, 0.5, 0.01, key="exp_th_t")
        y = np.array([gold[i] == pos_label for i in rows], dtype=int)
        if len(present) < 2:
            st.info(f"Only one class ({w.md_escape(present[0])}) is present in this slice, so there is no ROC or PR "
                    "curve; the reliability diagram is below.", icon=":material/info:")
        else:
            roc, pr, at = {}, {}, []
            for ck in preds:
                s = probs[ck][rows, by_name[ck].labels.index(pos_label)]
                roc[ck] = {**cal.roc_curve(y, s), "auc": cal.roc_auc(y, s)}
                pr[ck] = {**cal.pr_curve(y, s), "ap": cal.average_precision(y, s)}
                at.append({"checkpoint": ck, **cal.at_threshold(y, s, t), "ROC AUC": roc[ck]["auc"],
                           "average precision": pr[ck]["ap"]})
            a, b = st.columns(2)
            with a:
                w.show_figure(viz.roc_pr_figure(roc, kind="roc", threshold=t, key=f"roc_{bundle.name}_{split_name}"),
                              "exp_th_roc")
            with b:
                w.show_figure(viz.roc_pr_figure(pr, kind="pr", threshold=t, key=f"pr_{bundle.name}_{split_name}"),
                              "exp_th_pr")
            st.dataframe(pd.DataFrame(at), hide_index=True, width="stretch")
    else:
        st.caption("ROC and PR curves are drawn for two-class tasks; this one has "
                   f"{len(bundle.labels)} classes. The reliability diagram works for any number.")
    bins = st.slider("Confidence bins", 5, 20, 10, key="exp_th_bins")
    diagrams = {}
    for ck in preds:
        pos = {lab: k for k, lab in enumerate(by_name[ck].labels)}
        diagrams[ck] = cal.reliability(probs[ck][rows], np.array([pos[gold[i]] for i in rows]), bins=bins)
    w.show_figure(viz.reliability_figure(diagrams, key=f"reliability_{bundle.name}_{split_name}"), "exp_th_rel")
    st.dataframe(pd.DataFrame([{"checkpoint": ck, "ECE": d["ece"], "max calibration error": d["mce"], "rows": d["n"]}
                               for ck, d in diagrams.items()]), hide_index=True, width="content")


VIEWS = {"Slices": slices, "Projector": projector, "Neighbours": neighbours, "Counterfactuals": counterfactuals,
         "Thresholds": thresholds}
