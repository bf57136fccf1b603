"""The Evaluate page's longer pieces of layout: a table's CSV button, a row picked from a table, a text handed to
Inspect, the training-curves tab and the data-set views (LAMA Table 4, LAMA Fig. 2, filter n-grams). They lay out
what the library computes (textcls.analysis.corpus_views, textcls.viz) through the cached wrappers of
pages.common.cache; pages/evaluate.py arranges them."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from pages.common import cache, widgets as w
from textcls import viz
from textcls.analysis import corpus_views as cv
from textcls.checkpoint import CheckpointError, load_history

INSPECT = "pages/inspect.py"



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


# ---------------------------------------------------------------- training curves

def training_curves(names: list[str], chosen: list[str], by_name: dict) -> None:
    """The training-curves tab: the chosen checkpoints' saved histories (per epoch) against epochs or wall-clock
    time, a warning when they were trained on different data."""
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

def run_pass(info, texts: list[str], state: dict, base_key: tuple, kind: str, job: str, *args,
             settings: tuple = ()):
    """The result of a corpus pass (the model job `job` with `args` over `texts`): from this session (`state`),
    else the disk cache, else computed on a click, with a progress bar."""
    key = (kind,) + base_key + settings
    if key in state:
        return state[key]
    at = (str(info.path), cache.stamp(info.path), list(texts), *args)
    with w.or_one_line("Reading the cached pass"):
        res = cache.ask(job, *at, True)
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
            res = cache.ask(job, *at, False, progress=progress)
        state[key] = res
        st.rerun()             # draw the result without the button
    state[key] = res
    return res


def top_words_view(cw_, ck: str, where: str) -> None:
    """LAMA Table 4: the words each class's texts attend to most (`where`: data set and split, for the file)."""
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
        return
    item = viz.top_words_figure(table, key=f"lama-t4_{ck}_{where}",
                                title=f"Top attended words per class · {ck} (LAMA Table 4)")
    w.show_figure(item, f"eval_t4_{ck}")
    with st.expander("The table"):
        st.dataframe(table, hide_index=True, width="stretch")


def word_weight_view(cw_, ck: str, n_texts: int) -> None:
    """LAMA Fig. 2: one word's weight by label, over the split's texts."""
    counts = cv.word_counts(cw_, min_count=2)
    r1, r2, r3 = st.columns([2, 2, 1])
    common = list(counts.index[:300])
    best = [x for x in cv.salient_words(cw_, min_count=min(20, max(2, n_texts // 50))) if x in common]
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
    if not word:
        return
    dist = cv.word_weights(cw_, word, by=by, relative=relative)
    if not dist:
        st.info(f"The word “{w.md_escape(viz.short(word, 60))}” does not occur in these texts.")
        return
    hist = cv.weight_histogram(dist, bins=int(bins))
    item = viz.word_weight_figure(hist, word, relative=relative,
                                  key=f"lama-f2_{ck}_{viz.safe_filename(word)}",
                                  title=f"Weight of “{viz.short(word, 40)}” by {by} label · {ck} (LAMA Fig. 2)")
    w.show_figure(item, f"eval_f2_{ck}")
    summ = cv.weight_summary(dist)
    st.dataframe(summ, hide_index=True, width="content")
    w.csv_button(summ, "Summary (CSV)", f"lama-f2_summary_{ck}_{word}", "eval_csv_f2")


def filter_ngrams_view(fn_, ck: str, top: int, where: str) -> None:
    """The n-grams each filter picks most over the split, one filter bank (layer, head) or all."""
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
    chosen = {c: v for c, v in (("bank", bank), ("layer", layer), ("head", head)) if v != "all"}
    item = viz.filter_ngrams_figure(cv.rows_where(summ, **chosen), key=f"filter-ngrams_{ck}_{where}",
                                    title=f"Filters of {ck} and the n-grams that activate them most")
    w.show_figure(item, f"eval_fn_{ck}")
    st.caption("Each filter's max-pool picks one n-gram per text; listed are the distinct n-grams with the "
               "highest values over the split. `hits`: texts on which the filter picked that n-gram.")
    rows = cv.rows_where(table, **chosen)
    st.dataframe(rows, hide_index=True, width="stretch")
    w.csv_button(rows, "All n-grams (CSV)", f"filter_ngrams_{ck}_{where}", "eval_csv_fn")
