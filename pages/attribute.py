"""Attribute: why each model decided, by its own attention and by Captum attributions, how faithful those
explanations are, what happens when we intervene or edit a word, and which training sentences the prediction rests
on. Every number comes from `textcls.interpret` through the cached wrappers of `pages.common.work` (computed by the
model worker, shared by every session); this page lays it out (its longer tabs: pages.common.attribute_parts) and
imports no torch. Only the open tab runs (st.tabs with on_change="rerun"); the data-set panel runs when its
expander is open and Run is pressed. "Why the label rather than another" (pages.common.contrast) turns the
gradient and erasure explanations into contrastive ones: logit(label) - logit(the runner-up, or a label chosen)."""
from __future__ import annotations


from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import streamlit as st

from pages.common import contrast as C
from pages.common import inside_app, shared, work
from pages.common import widgets as w
from pages.common.attribute_parts import counterfactual, erasure_checks, interventions, shaded, training_data
from pages.common.attribute_slice import slice_panel
from pages.common.interpreters import method_option_widgets
from textcls import viz
from textcls.interpret import records as R
from textcls.interpret.plausibility import evidence_labels, plausibility
from textcls.interpret.rankings import (FLAG_RHO, N_RANDOM, ONE_TEXT_NOTE, VERDICT_RULE, WORSE, agreement,
                                        kendall_tau, versus_random)
from textcls.viz import explanations as F

inside_app(__file__)

st.title("Attribute: why did each model decide?")
st.caption("Each model's own attention next to Captum attributions on one aligned token grid; how much the "
           "explanations agree; whether they are faithful (does removing the words they point at change the "
           "decision?); and live interventions and word edits with the probabilities moving.")

SENTENCE = "the acting is superb , but the plot is not very good ."
from textcls.interpret import methods as M      # the registry: names, labels, costs (no torch)

METHOD_CHOICES = M.names(reference=False)        # every registered explanation method
LABELS = M.labels()
MAX_SLOW_TOKENS = 150
WINDOW = 60            # tokens per view of a long text (grid columns stay readable)
REMOVAL_TEXT = {"delete": "deleting it (the text closes up)", "pad": "replacing it by the pad id",
                "unk": "replacing it by the unknown-word id"}
VIEWS = ["Reasons", "Agreement", "Faithfulness", "Interventions", "Counterfactual", "Training data"]

valid = w.require_checkpoints()
by_name = {i.name: i for i in valid}
names = list(by_name)
# The example is a movie review: default to the sentiment (SST-2) checkpoints when there are any, the small ones
# (a pretrained encoder's integrated gradients take a hundred times as long: one pick away).
DEFAULT_CKPTS = ([n for n in names if by_name[n].data == "sst2" and not w.is_pretrained(by_name[n])][:6]
                 or [n for n in names if not w.is_pretrained(by_name[n])][:6] or names[:6])
# A relation checkpoint alone (no sentiment one): its example is a relation sentence with marked entities.
RELATION_ONLY = all(w.needs_entities(by_name[n]) for n in DEFAULT_CKPTS) and bool(DEFAULT_CKPTS)


shared.seed_text("attr_text", w.RELATION_EXAMPLE if RELATION_ONLY else SENTENCE,
                 fits=lambda t: w.has_markers(t) == RELATION_ONLY)
shared.seed_choice("attr_ckpts", names, DEFAULT_CKPTS)
with st.form("attr_form"):
    text = st.text_input("Sentence", key="attr_text",
                         help="One sentence (or a short text). Hierarchical models (HCAN) split it into sentences.")
    chosen = st.multiselect("Checkpoints", names, key="attr_ckpts", format_func=lambda n: w.ckpt_label(by_name[n]))
    methods = st.multiselect("Explanations", METHOD_CHOICES, default=["attention", "integrated_gradients",
                                                                      "grad_x_input", "occlusion"],
                             key="attr_methods", format_func=lambda m: LABELS[m])
    c1, c2, c3 = st.columns(3)
    baseline = c1.selectbox("Baseline (IG, occlusion, Shapley, LIME)", list(R.BASELINES), key="attr_baseline",
                            help="What a word is compared with: the pad word's vector, the unknown word's "
                                 "vector, or the zero vector.")
    removal = c2.selectbox("Removing a word means", list(R.REMOVALS), key="attr_removal",
                           format_func=lambda r: REMOVAL_TEXT[r])
    steps = c3.select_slider("Integrated-gradients steps (first try)", [20, 50, 100, 200], value=50,
                             key="attr_steps", help="Doubled automatically until the convergence delta is "
                                                    "below 5 % of the output difference (at most 800).")
    contrast = C.form_choice([by_name[n].labels for n in st.session_state.get("attr_ckpts", []) if n in by_name],
                             "attr_contrast")
    method_opts = method_option_widgets(st.session_state.get("attr_methods", []), "attr_opt")   # their own options
    st.form_submit_button("Explain", type="primary")

shared.keep_text(text)
shared.keep_choice("attr_ckpts", chosen)
if any(w.needs_entities(by_name[n]) for n in chosen):      # the <e1> tagging only where a relation model is chosen
    w.marker_help()
text = w.clean_text(text, what="sentence")
if text is None:
    st.stop()
if not chosen or not methods:
    st.info("Pick at least one checkpoint and one explanation.")
    st.stop()


# ---------------------------------------------------------------- the checkpoints and how each reads the text
# (cheap: from the model worker, cached; no explanation is computed here)

@dataclass
class Row:
    info: object
    read: object                     # a textcls.records.TextReading: tokens, unknown words, what applies
    notes: list[str] = field(default_factory=list)
    contrast: str | None = None      # the label its explanations are contrasted with (C.form_choice), or None


rows: list[Row] = []
skip = w.missing_markers([by_name[n] for n in chosen], text)
for n in chosen:
    info = by_name[n]
    if info in skip:
        continue
    read = w.reading(info, text)
    if read is None:                 # a refused folder, broken entity tags, an input it cannot read: shown
        continue
    if read.n == 0:
        st.warning(f"{w.md_escape(n)}: the text has no tokens for this model after tokenisation; nothing to "
                   "explain.")
        continue
    notes = []
    unknown = read.unknown or 0
    if unknown:
        notes.append(f"{unknown} of {read.n} tokens are not in this model's vocabulary: it reads each as the "
                     "same unknown word" + (" - every token is unknown, so the prediction says nothing about "
                                            "the words" if unknown == read.n else ""))
    foil, note = C.for_labels(contrast, read.labels)
    rows.append(Row(info, read, notes + [note] * bool(note), foil))
if not rows:
    st.stop()


def explain_row(row: Row, prog: w.Progress | None = None) -> tuple[dict, list[str]]:
    """{method: Attribution | vector} of one checkpoint (cached per checkpoint, text, method, settings), and the
    notes to show with it (unknown words, skipped or failed methods)."""
    expl, notes = {}, list(row.notes)
    for m in methods:
        why = row.read.not_applicable.get(m)
        if why is not None:
            notes.append(f"{LABELS[m]} does not apply to this model: {why}")
            continue
        if M.get(m).slow and row.read.n > MAX_SLOW_TOKENS:
            notes.append(f"{LABELS[m]} skipped: {row.read.n} tokens (at most {MAX_SLOW_TOKENS} for this method)")
            continue
        label = f"{w.md_escape(row.info.name)}: {LABELS[m]} ({row.read.n} tokens)…"
        with prog.step(label) if prog else nullcontext():
            try:
                expl[m] = work.explanation(row.info.path, text, m, baseline=baseline, steps=steps, removal=removal,
                                           contrast=row.contrast, options=method_opts.get(m))
            except ValueError as e:
                notes.append(f"{LABELS[m]}: {e}")
            except Exception as e:  # noqa: BLE001
                notes.append(f"{LABELS[m]} failed: {type(e).__name__}: {e}")
    return expl, notes


def explain_all() -> list[tuple[Row, dict, list[str]]]:
    prog = w.Progress(len(rows) * len(methods))
    out = [(r, *explain_row(r, prog)) for r in rows]
    prog.close()
    return out


def scores_of(x) -> np.ndarray:
    return np.asarray(getattr(x, "scores", x), dtype=float)


def row_name(info, m) -> str:
    return f"{info.name} · {M.get(m).short}"


# Long texts: one token window for every tab (grid, shaded words, interventions, counterfactual); a token list
# shorter than the window's end shows its last WINDOW tokens (the one rule of viz.axes.token_window).
window = None           # (first token, WINDOW) once a text is longer than WINDOW tokens
n_long = max(r.read.n for r in rows)
if n_long > WINDOW:
    start = st.slider(f"Long text ({n_long} tokens): first token shown", 1, n_long - WINDOW + 1, 1, step=1,
                      key="attr_win", help=f"The grid and the shaded words show {WINDOW} tokens at a time.")
    window = (start - 1, WINDOW)


tab_reasons, tab_agree, tab_faith, tab_int, tab_cf, tab_data = st.tabs(VIEWS, key="attr_view",
                                                                      on_change="rerun")

# ---------------------------------------------------------------- reasons (each checkpoint shown when it is ready)

if tab_reasons.open:
    with tab_reasons:
        token_lists = list(dict.fromkeys(tuple(r.read.tokens) for r in rows))
        if len(token_lists) > 1:
            cut = all(a == b[:len(a)] or b == a[:len(b)] for a in token_lists for b in token_lists)
            st.caption("The checkpoints read different numbers of tokens (each cuts a long text to its own maximum "
                       "length), so there is one grid per length." if cut else
                       "The checkpoints tokenise this text differently, so there is one grid per token list.")
        grid_box = st.container()            # the grids go above the cards, once every checkpoint is done
        prog = w.Progress(len(rows) * len(methods))
        groups: dict[tuple, list] = {t: [] for t in token_lists}
        summary = []
        for row in rows:
            info, read = row.info, row.read
            expl, notes = explain_row(row, prog)
            groups[tuple(read.tokens)].extend((row_name(info, m), scores_of(v)) for m, v in expl.items())
            with st.container(border=True):
                probs = w.safe_predict(info, [text])
                label = probs[0].label if probs else "?"
                conf = max(probs[0].probabilities.values()) if probs else float("nan")
                st.markdown(f"**{w.md_escape(info.name)}** ({w.md_escape(viz.model_title(info.model))}) predicts "
                            f"**{w.md_escape(label)}** ({100 * conf:.1f} %)")
                if probs and probs[0].truncated:
                    st.caption(f"The text is longer than this model reads: it saw {read.n} tokens, the rest was "
                               "cut.")
                for note in notes + [x for x in [C.caption(expl)] if x]:      # and which two labels, if contrasted
                    st.caption(w.md_escape(note))
                for m, v in expl.items():
                    cap = f"own attention: {read.attention_source}" if m == "attention" else LABELS[m]
                    shown = scores_of(v) if C.shade_signed(m, row.contrast) else np.clip(scores_of(v), 0, None)
                    shaded(read.tokens, shown, label=cap, window=window)
                    if getattr(v, "delta", None) is not None:
                        summary.append({"checkpoint": info.name, "IG steps": v.n_steps, "|delta|": abs(v.delta),
                                        "output difference": v.output_difference, "converged": v.converged})
        prog.close()
        with grid_box:
            for g, (toks, grid_rows) in enumerate(groups.items()):
                if grid_rows:
                    w.show_figure(F.reasons_grid(grid_rows, list(toks), window=window),
                                  f"attr_grid_{g}")
        if summary:
            st.markdown("**Integrated gradients convergence** (attributions sum to the output difference up to "
                        "delta)")
            st.dataframe(pd.DataFrame(summary), hide_index=True)

# ---------------------------------------------------------------- agreement

if tab_agree.open:
    with tab_agree:
        vecs = {row_name(r.info, m): scores_of(v) for r, expl, _ in explain_all() for m, v in expl.items()}
        if len(vecs) < 2:
            st.info("Agreement needs at least two explanations (more methods or checkpoints).")
        else:
            k_pct = st.slider("Top-k overlap: k as % of the tokens", 5, 50, 20, step=5, key="attr_kpct",
                              persist_state="page")
            agr = agreement(vecs, k_pct=k_pct)
            small = len(vecs) <= 6
            cols = st.columns(2) if small else [st.container(), st.container()]
            with cols[0]:
                w.show_figure(F.agreement_heatmap(agr, "kendall_tau"), "attr_tau")
            with cols[1]:
                w.show_figure(F.agreement_heatmap(agr, "topk_overlap"), "attr_topk")
            st.caption("Kendall tau: 1 = same ranking of the words, 0 = unrelated, -1 = reversed (Jain & Wallace "
                       "2019). Top-k overlap: share of the k most important words both explanations name.")

# ---------------------------------------------------------------- faithfulness

if tab_faith.open:
    with tab_faith:
        st.caption(f"m(x) = probability of the predicted class; removing a word = {REMOVAL_TEXT[removal]}. "
                   "Comprehensiveness: drop in m when the top-k % words are removed (higher = the explanation "
                   "found what the model needs). Sufficiency: drop when only they are kept (lower = they suffice). "
                   "AOPC = the mean over k in {0, 1, 5, 10, 20, 50} %. NAOPC (Edin et al. 2025) puts it between "
                   "the worst (0) and the best (1) word order this text allows: raw AOPC's range depends on the "
                   "model and the text, so compare models by NAOPC. Random: word orders drawn for this text (all of "
                   f"them on a text of at most 8 words; else {N_RANDOM}, or 99 when {N_RANDOM} cannot settle it), the "
                   "same draws on every page. Plausibility: how well the ranking finds the words people label with the predicted "
                   "sentiment (SST's word labels; average precision and token F1, as ferret defines them)."
                   + (" A contrastive explanation ranks the words by what it explains, logit(label) - "
                      "logit(other); m stays the predicted label's probability." if contrast else ""))
        check_sanity = st.toggle("Randomisation sanity check (slower)", key="attr_sanity", persist_state="page",
                                 help="Re-initialise the model's layers from the top down, in a copy, and recompute "
                                      "each explanation: Spearman rho of the words' weights before and after. An "
                                      "explanation of the model must change (rho falls); one that stays at or "
                                      f"above {FLAG_RHO} explains the words, not the model (Adebayo et al. 2018).")
        results = explain_all()
        table_rows, model_rows, curves_of = [], [], {}
        prog = w.Progress(sum(len(expl) * (1 + check_sanity) + 2 for r, expl, _ in results
                              if r.read.n <= MAX_SLOW_TOKENS))
        for row, expl, _ in results:
            info, read = row.info, row.read
            if read.n > MAX_SLOW_TOKENS:
                st.caption(f"{w.md_escape(info.name)}: {read.n} tokens - faithfulness is computed for texts of at "
                           f"most {MAX_SLOW_TOKENS} tokens (it re-runs the model for every erasure); paste a shorter "
                           "excerpt to measure it.")
                continue
            try:
                out, rand, loo, extra = erasure_checks(row, expl, prog, text, LABELS, baseline=baseline,
                                                       steps=steps, removal=removal, options=method_opts)
            except Exception as e:  # noqa: BLE001 - one checkpoint's failure is reported, the others still shown
                st.error(f"{w.md_escape(info.name)}: faithfulness failed: {type(e).__name__}: {w.md_escape(e)}")
                continue
            curves_of[info.name] = {LABELS[m]: ec for m, (ec, _) in out.items()}
            r_comp = float(np.mean(rand["aopc_comprehensiveness"]))
            r_suff = float(np.mean(rand["aopc_sufficiency"]))
            r_what = (f"all {rand['n_orders']} orders" if rand["exact"] else f"{rand['n_orders']} random orders")
            badges = []
            probs = w.safe_predict(info, [text])
            polar = evidence_labels(read.labels) is None and probs and read.tokens
            for m, (ec, ef) in out.items():
                pl = plausibility(list(read.tokens), scores_of(expl[m]), probs[0].label) if polar else None
                rho = None
                if check_sanity:
                    with prog.step(f"{w.md_escape(info.name)}: {LABELS[m]} with the layers randomised…"):
                        try:
                            rho = work.sanity(info.path, text, m, baseline=baseline, steps=steps,
                                               removal=removal, contrast=row.contrast,
                                               options=method_opts.get(m))["final"][m]
                        except Exception as e:  # noqa: BLE001 - ValueError: it does not apply; else the worker
                            st.caption(f"{w.md_escape(info.name)} · {LABELS[m]}: no sanity check: "
                                       f"{w.md_escape(e)}")
                v = versus_random(ec, rand)
                color = ["gray", "orange", "green"][v["level"]] if v["verdict"] != WORSE else "red"
                badges.append(f":{color}-badge[{w.md_escape(LABELS[m])}: {v['verdict']}]")
                table_rows.append({"checkpoint": info.name, "explanation": LABELS[m],
                                   "AOPC comprehensiveness": ec["aopc_comprehensiveness"],
                                   "AOPC sufficiency": ec["aopc_sufficiency"],
                                   "NAOPC comprehensiveness": v["naopc_comprehensiveness"],
                                   "NAOPC sufficiency": v["naopc_sufficiency"],
                                   "random: comp. / suff.": f"{r_comp:.3f} / {r_suff:.3f} ({r_what})",
                                   "p comp. / suff.": f"{v['p_comprehensiveness']:.3f} / {v['p_sufficiency']:.3f}",
                                   "verdict on this text": v["verdict"],
                                   "top word removed flips": ef["top_flip"],
                                   "share removed to flip": ef["fraction_to_flip"],
                                   "Kendall tau vs leave-one-out": kendall_tau(scores_of(expl[m]), loo),
                                   "plausibility AUPRC": pl["auprc"] if pl else None,
                                   "plausibility token F1": pl["token_f1"] if pl else None,
                                   **({"rank corr. after randomisation": rho,
                                       "sanity": ("FLAG: barely changes" if rho is not None and rho >= FLAG_RHO
                                                  else "changes") if rho is not None else ""}
                                      if check_sanity else {}),
                                   "seconds (when computed)": work.explanation_seconds(
                                       info.path, text, m, baseline=baseline, steps=steps, removal=removal,
                                       contrast=row.contrast, options=method_opts.get(m))})
            st.markdown(f"**{w.md_escape(info.name)}** " + " ".join(badges))
            mr = {"checkpoint": info.name, "model": viz.model_title(info.model)}
            perm, unif = extra.get("perm"), extra.get("unif")

            def num(v, fmt: str = ".4f") -> str:
                """A number as the table shows it: blank when absent, 0 when below display precision."""
                if v is None or not np.isfinite(v):
                    return ""
                return "0" if abs(v) < 5e-5 and fmt == ".4f" else format(v, fmt)
            iqr = perm.get("tvd_iqr") if perm else None
            mr.update({"perm. median TVD": num(perm["median_tvd"]) if perm else "",
                       "perm. TVD middle half": (f"{iqr[0]:.3f}-{iqr[1]:.3f} ({perm['n_permutations']} random draws)"
                                                 if iqr else ""),
                       "perm. flip rate": num(perm["flip_rate"], ".2f") if perm else "",
                       "uniform TVD": num(unif["tvd"]) if unif else "",
                       "uniform flips": ("yes" if unif["flipped"] else "no") if unif else ""})
            ig = expl.get("integrated_gradients")
            mr.update({"IG |delta|": num(abs(ig.delta)) if ig is not None else "",
                       "IG steps": str(ig.n_steps) if ig is not None else ""})
            model_rows.append(mr)
        prog.close()
        if table_rows:
            st.markdown("**Per explanation** (this sentence)")
            first = ["checkpoint", "explanation", "NAOPC comprehensiveness", "NAOPC sufficiency", "AOPC comprehensiveness",
                     "AOPC sufficiency", "verdict on this text", "p comp. / suff.",
                     "plausibility AUPRC", "plausibility token F1", "rank corr. after randomisation", "sanity",
                     "seconds (when computed)"]                    # the trust columns before the details
            frame = pd.DataFrame(table_rows)
            frame = frame[[c for c in first if c in frame.columns] + [c for c in frame.columns if c not in first]]
            st.dataframe(frame, hide_index=True, width="stretch", column_config={
                c: st.column_config.NumberColumn(format="%.3f") for c in (
                    "NAOPC comprehensiveness", "NAOPC sufficiency",
                    "AOPC comprehensiveness", "AOPC sufficiency", "share removed to flip",
                    "Kendall tau vs leave-one-out", "plausibility AUPRC", "plausibility token F1",
                    "rank corr. after randomisation", "seconds (when computed)")})
            st.caption(w.md_escape(f"{VERDICT_RULE} {ONE_TEXT_NOTE}"))
        if model_rows:
            st.markdown("**Per model** - small TVDs under permuted or uniform attention mean the attention weights "
                        "hardly drive the decision (Jain & Wallace 2019; Wiegreffe & Pinter 2019). Blank: the model "
                        "has no attention weights to permute (Kim CNN, AGCNN) or IG was not asked for.")
            st.dataframe(pd.DataFrame(model_rows), hide_index=True, width="stretch")
        if curves_of:
            pick = st.selectbox("Erasure curves of", list(curves_of), key="attr_curve_ckpt", persist_state="page")
            if curves_of[pick]:
                w.show_figure(F.erasure_figure(curves_of[pick], f"Removing the top-k % words - {pick}"),
                              "attr_curves")

        slice_box = st.expander("Over a data set (a whole split)", key="attr_slice_open", on_change="rerun")
        if slice_box.open:
            with slice_box:
                slice_panel([r.info.name for r, _, _ in results], by_name, methods=methods, baseline=baseline,
                            steps=steps, removal=removal)

# ---------------------------------------------------------------- interventions (the chosen checkpoint only)

if tab_int.open:
    with tab_int:
        interventions(rows, text, window)

# ---------------------------------------------------------------- counterfactual

if tab_cf.open:
    with tab_cf:
        counterfactual(rows, window)

# ---------------------------------------------------------------- the training sentences behind the prediction

if tab_data.open:
    with tab_data:
        training_data(rows, text)
