"""Attribute's Interventions and Counterfactual tabs (`interventions`, `counterfactual`) and the shaded words every
tab draws (`shaded`): layout only; the model work is pages.common.work's cached jobs (textcls.serve.work)."""
from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import streamlit as st

from pages.common import widgets as w
from pages.common import work
from textcls import viz
from textcls.interpret import records as R
from textcls.viz import explanations as F


def shaded(tokens, weights, label: str | None = None, window: tuple[int, int] | None = None) -> None:
    """Inline shaded words: `viz.token_highlight_html` escapes every token and the label; st.html shows it."""
    st.html(viz.token_highlight_html(list(tokens), weights, label=label, window=window))


def interventions(rows, text: str, window) -> None:
    """One chosen checkpoint with one intervention it offers (its TextReading says which): the probabilities and its
    own attention before and after."""
    pick = st.selectbox("Checkpoint", [r.info.name for r in rows], key="attr_int_ckpt", persist_state="page")
    row = next(r for r in rows if r.info.name == pick)
    read = row.read
    offer = read                                    # what the model declares it lets a user change
    options = list(read.interventions)
    if not options:
        st.info("This model exposes nothing to intervene on.")
    else:
        kind = st.radio("Intervention", options, horizontal=True, key="attr_int_kind", persist_state="page")
        choice: dict = {}
        if kind == R.PERMUTED:
            choice["seed"] = st.number_input("Seed", 0, 10_000, 0, key="attr_int_seed", persist_state="page")
        elif kind == R.HEAD:
            c1, c2 = st.columns(2)
            choice["head"] = c1.selectbox("Head", list(range(offer.heads)), key="attr_int_head",
                                          persist_state="page",
                                          format_func=lambda h: f"head {h + 1}")  # from 1, as on Inspect
            if offer.layers:
                layer = c2.selectbox("Layer", ["every layer"] + list(range(offer.layers)), key="attr_int_layer",
                                     persist_state="page", format_func=lambda v: v if isinstance(v, str)
                                     else f"layer {v + 1}")
                choice["layer"] = None if layer == "every layer" else int(layer)
        elif kind == R.FILTER:
            c1, c2 = st.columns(2)
            choice["fmap"] = c1.selectbox("Feature map", list(offer.filters), key="attr_int_fmap",
                                          persist_state="page")
            choice["filter"] = c2.number_input("Filter (f1 = the first, as on Inspect)", 1,
                                               max(1, offer.filters[choice["fmap"]]), 1, key="attr_int_filter",
                                               persist_state="page") - 1
        elif kind == R.ACTIVATION:
            choice["activation"] = st.selectbox(f"Replace {read.activation} by",
                                                [a for a in offer.activations if a != read.activation],
                                                key="attr_int_act", persist_state="page")
        try:
            with st.spinner(f"Running {w.md_escape(pick)} with the intervention…"):
                res = work.intervention(row.info.path, text, kind, choice)
            st.markdown(f"**{w.md_escape(res['describe'])}** - TVD {res['tvd']:.4f}; decision "
                        + ("**flips**" if res["flipped"] else "unchanged") + ".")
            w.show_figure(F.probability_shift(res["labels"], res["probs_before"], res["probs_after"],
                                              f"{pick}: probabilities before and after"), "attr_int_probs")
            if res["attention_before"] is not None:
                shaded(read.tokens, res["attention_before"], label="own attention before", window=window)
                shaded(read.tokens, res["attention_after"], label="own attention after", window=window)
        except ValueError as e:
            st.warning(w.md_escape(e))
        except Exception as e:  # noqa: BLE001 - the worker could not answer: one line
            st.error(f"{w.md_escape(pick)}: the intervention failed: {type(e).__name__}: {w.md_escape(e)}")


def counterfactual(rows, window) -> None:
    """One word of the text changed or deleted: every checkpoint's decision and own attention before and after."""
    word_level = [r for r in rows if r.read.word_level]
    toks = list((word_level or rows)[0].read.tokens)
    c1, c2 = st.columns([2, 2])
    # the controls belong to this sentence: a new sentence gets fresh ones (never the old sentence's word)
    sent_key = hashlib.sha1("\x1f".join(toks).encode("utf-8")).hexdigest()[:12]
    negation = [i for i, t in enumerate(toks) if t in ("not", "never", "no", "n't")]
    idx = c1.selectbox("Word to change", list(range(len(toks))), key=f"attr_cf_idx_{sent_key}",
                       format_func=lambda i, toks=toks: f"{i + 1}: {toks[i]}", index=None,
                       placeholder="Pick a word" + (f" (e.g. {negation[0] + 1}: {toks[negation[0]]})"
                                                    if negation else ""))
    repl = c2.text_input("Replace by (empty = delete)", value="", key=f"attr_cf_repl_{sent_key}").strip()
    if idx is None:
        st.info("Pick a word to change; leave the replacement empty to delete it. Nothing is run until then.")
    else:
        edited = R.edit_tokens(toks, idx, repl or None)

        def cut(t: str, n: int = 2000) -> str:
            return t if len(t) <= n else t[:n] + f" … ({len(t):,} characters in all)"
        st.text(f"Before: {cut(' '.join(toks))}\nAfter:  {cut(edited)}")
        try:
            with st.spinner(f"Running the edit through {len(rows)} model(s)…"):
                cf = work.compare_edit({r.info.name: r.info.path for r in rows}, " ".join(toks), edited)
        except Exception as e:  # noqa: BLE001
            st.error(f"{type(e).__name__}: {w.md_escape(e)}")
            cf = []
        table = []
        for r in cf:
            labs = r.labels or [str(i) for i in range(len(r.probs_before))]
            table.append({"checkpoint": r.model, "before": labs[r.label_before],
                          "p before": float(r.probs_before[r.label_before]), "after": labs[r.label_after],
                          "p after": float(r.probs_after[r.label_after]), "flips": r.flipped, "TVD": r.tvd})
        if table:
            st.dataframe(pd.DataFrame(table), hide_index=True)
        for r in cf:
            if r.importance_before is not None:
                with st.container(border=True):
                    st.markdown(f"**{w.md_escape(r.model)}** - own attention before and after")
                    shaded(r.tokens_before, r.importance_before, window=window)
                    shaded(r.tokens_after, r.importance_after, window=window)


def erasure_checks(row, expl: dict, prog, text: str, labels: dict, *, baseline: str, steps: int, removal: str,
                   options: dict | None = None):
    """({method: (erasure curves, erasure flip)}, random-ranking curves, leave-one-out, attention tests) of one
    checkpoint (a Row of the page); every part cached per (checkpoint, text, settings); `options`: {method: its
    own options}."""
    path, name = row.info.path, w.md_escape(row.info.name)
    out = {}
    for m in expl:
        with prog.step(f"{name}: removing the words {labels[m]} ranks first…"):
            out[m] = work.erasure(path, text, m, baseline=baseline, steps=steps, removal=removal,
                                  contrast=row.contrast, options=(options or {}).get(m))
    with prog.step(f"{name}: word orders drawn at random, the best and the worst, and leave-one-out…"):
        seen = ([ec["aopc_comprehensiveness"] for ec, _ in out.values()],
                [ec["aopc_sufficiency"] for ec, _ in out.values()])
        rand = work.random_erasure(path, text, removal=removal, observed=seen)
        loo = np.asarray(getattr(x := work.explanation(path, text, "leave_one_out", removal=removal), "scores", x),
                         dtype=float)
    with prog.step(f"{name}: permuted and uniform attention…"):
        extra = work.attention_tests(path, text)
    return out, rand, loo, extra


def training_data(rows, text: str) -> None:
    """The training sentences behind one checkpoint's prediction (TracIn: pages.common.influence_view)."""
    from pages.common.influence_view import show_proponents
    names = [r.info.name for r in rows]
    pick = st.selectbox("Checkpoint", names, key="attr_tracin_ck") if len(names) > 1 else names[0]
    show_proponents(next(r.info.path for r in rows if r.info.name == pick), text, key="attr_tracin")
