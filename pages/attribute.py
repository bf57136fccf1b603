"""Attribute: why each model decided, by its own attention and by Captum attributions, how faithful those
explanations are, and what happens when we intervene or edit a word. Every number comes from
`textcls.interpret`; this page only lays it out. Results are memoised per session (a cached model is shared
read-only; interventions act through edits or on a copy)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from pages.common import cache
from pages.common import widgets as w
from textcls import interpret as I
from textcls import viz
from textcls.interpret import figures as F
from textcls.interpret.attention import attention_importance_instances, explanation_source
from textcls.interpret.attributions import METHOD_LABELS, attribute_instances
from textcls.interpret.faithfulness import attention_maps, erasure_curves, erasure_flip, kendall_tau

SENTENCE = "the acting is superb , but the plot is not very good ."
LABELS = {"attention": "Own attention", "leave_one_out": "Leave-one-out", **METHOD_LABELS}
METHOD_CHOICES = ["attention", "integrated_gradients", "grad_x_input", "saliency", "occlusion", "shapley", "lime",
                  "leave_one_out"]
SLOW = {"shapley", "lime", "occlusion", "leave_one_out"}
MAX_SLOW_TOKENS = 150
WINDOW = 60            # tokens per view of a long text (grid columns stay readable)
REMOVAL_TEXT = {"delete": "deleting it (the text closes up)", "pad": "replacing it by the pad id",
                "unk": "replacing it by the unknown-word id"}

st.title("Attribute: why did each model decide?")
st.caption("Each model's own attention next to Captum attributions on one aligned token grid; how much the "
           "explanations agree; whether they are faithful (does removing the words they point at change the "
           "decision?); and live interventions and word edits with the probabilities moving.")

valid = w.require_checkpoints()
by_name = {i.name: i for i in valid}
names = list(by_name)
# The example is a movie review: default to the sentiment (SST-2) checkpoints when there are any.
DEFAULT_CKPTS = [n for n in names if by_name[n].data == "sst2"][:6] or names[:6]


def shaded(tokens, weights, label: str | None = None, window: tuple[int, int] | None = None) -> None:
    """Inline shaded words: `viz.token_highlight_html` escapes every token and the label; st.html shows it."""
    st.html(viz.token_highlight_html(list(tokens), weights, label=label, window=window))


def memo(key, fn):
    """Per-session memo of expensive results (reruns re-draw without recomputing)."""
    store = st.session_state.setdefault("_attr_memo", {})
    if key not in store:
        if len(store) > 300:
            store.clear()
        store[key] = fn()
    return store[key]


with st.form("attr_form"):
    text = st.text_input("Sentence", value=SENTENCE, key="attr_text",
                         help="One sentence (or a short text). Hierarchical models (HCAN) split it into sentences.")
    chosen = st.multiselect("Checkpoints", names, default=DEFAULT_CKPTS, key="attr_ckpts",
                            format_func=lambda n: w.ckpt_label(by_name[n]))
    methods = st.multiselect("Explanations", METHOD_CHOICES, default=["attention", "integrated_gradients",
                                                                      "grad_x_input", "occlusion"],
                             key="attr_methods", format_func=lambda m: LABELS[m])
    c1, c2, c3 = st.columns(3)
    baseline = c1.selectbox("Baseline (IG, occlusion, Shapley, LIME)", list(I.BASELINES), key="attr_baseline",
                            help="What a word is compared with: the pad word's vector, the unknown word's "
                                 "vector, or the zero vector.")
    removal = c2.selectbox("Removing a word means", list(I.REMOVALS), key="attr_removal",
                           format_func=lambda r: REMOVAL_TEXT[r])
    steps = c3.select_slider("Integrated-gradients steps (first try)", [20, 50, 100, 200], value=50,
                             key="attr_steps", help="Doubled automatically until the convergence delta is "
                                                    "below 5 % of the output difference (at most 800).")
    st.form_submit_button("Explain", type="primary")

text = w.clean_text(text, what="sentence")
if text is None:
    st.stop()
if not chosen or not methods:
    st.info("Pick at least one checkpoint and one explanation.")
    st.stop()


# ---------------------------------------------------------------- compute the explanations

def explain_one(info, pred, inst, method):
    key = ("expl", str(info.path), cache.stamp(info.path), text, method, baseline, steps, removal)

    def run():
        if method == "attention":
            return attention_importance_instances(pred.model, [inst], labels=pred.labels)[0]
        if method == "leave_one_out":
            return I.leave_one_out(pred.model, inst, removal)
        return attribute_instances(pred.model, [inst], method, baseline=baseline, n_steps=steps,
                                   labels=pred.labels)[0]
    return memo(key, run)


results = []          # (info, pred, inst, {method: Attribution | vector}, notes)
progress = st.progress(0.0, text="Explaining…")
steps_total = max(1, len(chosen) * len(methods))
for k, n in enumerate(chosen):
    info = by_name[n]
    pred = w.load(info)
    if pred is None:
        continue
    try:
        inst = I.as_source(pred).instances([text])[0]
    except Exception as e:  # noqa: BLE001 - a model that cannot read this input is reported, not fatal
        st.error(f"{w.md_escape(n)} cannot read this input: {type(e).__name__}: {w.md_escape(e)}")
        continue
    if inst.n == 0:
        st.warning(f"{w.md_escape(n)}: the text has no tokens for this model after tokenisation; nothing to "
                   "explain.")
        continue
    expl, notes = {}, []
    unknown = int((inst.real_ids() == inst.unk_id).sum())
    if unknown:
        notes.append(f"{unknown} of {inst.n} tokens are not in this model's vocabulary: it reads each as the "
                     "same unknown word" + (" - every token is unknown, so the prediction says nothing about "
                                            "the words" if unknown == inst.n else ""))
    for j, m in enumerate(methods):
        progress.progress((k * len(methods) + j) / steps_total,
                          text=f"{info.name}: {LABELS[m]} ({inst.n} tokens)…")
        if m in SLOW and inst.n > MAX_SLOW_TOKENS:
            notes.append(f"{LABELS[m]} skipped: {inst.n} tokens (at most {MAX_SLOW_TOKENS} for this method)")
            continue
        try:
            expl[m] = explain_one(info, pred, inst, m)
        except ValueError as e:
            notes.append(f"{LABELS[m]}: {e}")
        except Exception as e:  # noqa: BLE001
            notes.append(f"{LABELS[m]} failed: {type(e).__name__}: {e}")
    results.append((info, pred, inst, expl, notes))
progress.empty()
if not results:
    st.stop()


def clip_window(n: int) -> tuple[int, int] | None:
    """The long-text window for a token list of length n (a shorter list shows its last WINDOW tokens)."""
    return None if window is None else (max(0, min(window[0], n - WINDOW)), WINDOW)


window = None           # (first token, WINDOW) once a text is longer than WINDOW tokens (set on the Reasons tab)


def scores_of(x) -> np.ndarray:
    return np.asarray(getattr(x, "scores", x), dtype=float)


SHORT = {"attention": "attention", "integrated_gradients": "IG", "grad_x_input": "grad x input",
         "saliency": "saliency", "occlusion": "occlusion", "shapley": "Shapley", "lime": "LIME",
         "leave_one_out": "leave-one-out"}


def row_name(info, m) -> str:
    return f"{info.name} · {SHORT[m]}"


tab_reasons, tab_agree, tab_faith, tab_int, tab_cf = st.tabs(
    ["Reasons", "Agreement", "Faithfulness", "Interventions", "Counterfactual"])

# ---------------------------------------------------------------- reasons

with tab_reasons:
    groups: dict[tuple, list] = {}
    for info, pred, inst, expl, notes in results:
        groups.setdefault(tuple(inst.tokens), []).extend((row_name(info, m), scores_of(v)) for m, v in expl.items())
    if len(groups) > 1:
        lists = list(groups)
        cut = all(a == b[:len(a)] or b == a[:len(b)] for a in lists for b in lists)
        st.caption("The checkpoints read different numbers of tokens (each cuts a long text to its own maximum "
                   "length), so there is one grid per length." if cut else
                   "The checkpoints tokenise this text differently, so there is one grid per token list.")
    n_long = max(len(t) for t in groups)
    if n_long > WINDOW:
        start = st.slider(f"Long text ({n_long} tokens): first token shown", 1, n_long - WINDOW + 1, 1,
                          step=1, key="attr_win",
                          help=f"The grid and the shaded words show {WINDOW} tokens at a time.")
        window = (start - 1, WINDOW)
    for g, (toks, rows) in enumerate(groups.items()):
        if rows:
            w.show_figure(F.reasons_grid(rows, list(toks), window=clip_window(len(toks))), f"attr_grid_{g}")
    summary = []
    for info, pred, inst, expl, notes in results:
        with st.container(border=True):
            probs = w.safe_predict(info, [text])
            label = probs[0].label if probs else "?"
            conf = max(probs[0].probabilities.values()) if probs else float("nan")
            st.markdown(f"**{w.md_escape(info.name)}** ({w.md_escape(info.model)}) predicts "
                        f"**{w.md_escape(label)}** ({100 * conf:.1f} %)")
            if probs and probs[0].truncated:
                st.caption(f"The text is longer than this model reads: it saw {inst.n} tokens, the rest was cut.")
            for note in notes:
                st.caption(w.md_escape(note))
            for m, v in expl.items():
                if m == "attention":
                    cap = "own attention: " + explanation_source(pred.model)
                else:
                    cap = LABELS[m]
                shaded(inst.tokens, np.clip(scores_of(v), 0, None) if m == "attention" else scores_of(v),
                       label=cap, window=clip_window(inst.n))
                if getattr(v, "delta", None) is not None:
                    summary.append({"checkpoint": info.name, "IG steps": v.n_steps, "|delta|": abs(v.delta),
                                    "output difference": v.output_difference, "converged": v.converged})
    if summary:
        st.markdown("**Integrated gradients convergence** (attributions sum to the output difference up to delta)")
        st.dataframe(pd.DataFrame(summary), hide_index=True)

# ---------------------------------------------------------------- agreement

with tab_agree:
    vecs = {row_name(info, m): scores_of(v) for info, _, _, expl, _ in results for m, v in expl.items()}
    if len(vecs) < 2:
        st.info("Agreement needs at least two explanations (more methods or checkpoints).")
    else:
        k_pct = st.slider("Top-k overlap: k as % of the tokens", 5, 50, 20, step=5, key="attr_kpct")
        agr = I.agreement(vecs, k_pct=k_pct)
        small = len(vecs) <= 6
        cols = st.columns(2) if small else [st.container(), st.container()]
        with cols[0]:
            w.show_figure(F.agreement_heatmap(agr, "kendall_tau"), "attr_tau")
        with cols[1]:
            w.show_figure(F.agreement_heatmap(agr, "topk_overlap"), "attr_topk")
        st.caption("Kendall tau: 1 = same ranking of the words, 0 = unrelated, -1 = reversed (Jain & Wallace "
                   "2019). Top-k overlap: share of the k most important words both explanations name.")

# ---------------------------------------------------------------- faithfulness

with tab_faith:
    st.caption(f"m(x) = probability of the predicted class; removing a word = {REMOVAL_TEXT[removal]}. "
               "Comprehensiveness: drop in m when the top-k % words are removed (higher = the explanation found "
               "what the model needs). Sufficiency: drop when only they are kept (lower = they suffice). AOPC = "
               "the mean over k in {0, 1, 5, 10, 20, 50} %. Random: the mean of 5 random rankings.")
    rows, model_rows = [], []
    for info, pred, inst, expl, notes in results:
        if inst.n > MAX_SLOW_TOKENS:
            st.caption(f"{w.md_escape(info.name)}: {inst.n} tokens - faithfulness is computed for texts of at most "
                       f"{MAX_SLOW_TOKENS} tokens (it re-runs the model for every erasure); paste a shorter "
                       "excerpt to measure it.")
            continue

        def faith():
            out = {m: (erasure_curves(pred.model, inst, scores_of(v), removal=removal),
                       erasure_flip(pred.model, inst, scores_of(v), removal=removal)) for m, v in expl.items()}
            rng = np.random.default_rng(0)
            rand = [erasure_curves(pred.model, inst, rng.random(inst.n), removal=removal) for _ in range(5)]
            loo = I.leave_one_out(pred.model, inst, removal)
            extra = {}
            if attention_maps(pred.model):
                extra["perm"] = I.permutation_test(pred.model, inst, 30)
                extra["unif"] = I.uniform_attention_test(pred.model, inst)
            return out, rand, loo, extra
        out, rand, loo, extra = memo(("faith", str(info.path), cache.stamp(info.path), text, tuple(expl), baseline,
                                      steps, removal), faith)
        r_comp = float(np.mean([r["aopc_comprehensiveness"] for r in rand]))
        r_suff = float(np.mean([r["aopc_sufficiency"] for r in rand]))
        badges = []
        for m, (ec, ef) in out.items():
            good = (ec["aopc_comprehensiveness"] > r_comp) + (ec["aopc_sufficiency"] < r_suff)
            verdict = ["not better than random", "partly faithful", "faithful"][good]
            color = ["red", "orange", "green"][good]
            badges.append(f":{color}-badge[{w.md_escape(LABELS[m])}: {verdict}]")
            rows.append({"checkpoint": info.name, "explanation": LABELS[m],
                         "AOPC comprehensiveness": ec["aopc_comprehensiveness"],
                         "AOPC sufficiency": ec["aopc_sufficiency"],
                         "random: comp. / suff.": f"{r_comp:.3f} / {r_suff:.3f}",
                         "top word removed flips": ef["top_flip"],
                         "share removed to flip": ef["fraction_to_flip"],
                         "Kendall tau vs leave-one-out": kendall_tau(scores_of(expl[m]), loo)})
        st.markdown(f"**{w.md_escape(info.name)}** " + " ".join(badges))
        mr = {"checkpoint": info.name, "model": info.model}
        perm, unif = extra.get("perm"), extra.get("unif")
        nan = float("nan")
        mr.update({"permuted attention: median TVD": perm["median_tvd"] if perm else nan,
                   "permuted attention: flip rate": perm["flip_rate"] if perm else nan,
                   "uniform attention: TVD": unif["tvd"] if unif else nan,
                   "uniform attention flips": ("yes" if unif["flipped"] else "no") if unif else "no attention"})
        ig = expl.get("integrated_gradients")
        mr.update({"IG |delta|": abs(ig.delta) if ig is not None else nan,
                   "IG steps": ig.n_steps if ig is not None else nan})
        model_rows.append(mr)
    if rows:
        st.markdown("**Per explanation** (this sentence)")
        st.dataframe(pd.DataFrame(rows), hide_index=True)
    if model_rows:
        st.markdown("**Per model** - small TVDs under permuted or uniform attention mean the attention weights "
                    "hardly drive the decision (Jain & Wallace 2019; Wiegreffe & Pinter 2019). Blank: the model "
                    "has no attention weights to permute (Kim CNN, AGCNN) or IG was not asked for.")
        st.dataframe(pd.DataFrame(model_rows), hide_index=True)
    short = [r for r in results if r[2].n <= MAX_SLOW_TOKENS]
    pick = st.selectbox("Erasure curves of", [r[0].name for r in short], key="attr_curve_ckpt") if short else None
    info, pred, inst, expl, _ = next((r for r in short if r[0].name == pick), (None, None, None, {}, None))
    curves = {LABELS[m]: erasure_curves(pred.model, inst, scores_of(v), removal=removal) for m, v in expl.items()}
    if curves:
        w.show_figure(F.erasure_figure(curves, f"Removing the top-k % words - {pick}"), "attr_curves")

    with st.expander("Over a data set (many sentences)"):
        from textcls.data import list_datasets
        sets = list_datasets()
        if not sets:
            st.info("No bundled data set found (set TEXTCLS_DATA).")
        else:
            with st.form("attr_slice"):
                c1, c2, c3 = st.columns(3)
                s_ckpt = c1.selectbox("Checkpoint", [r[0].name for r in results], key="attr_slice_ckpt")
                default = by_name[s_ckpt].data if by_name[s_ckpt].data in sets else sets[0]
                s_data = c2.selectbox("Data set", sets, index=sets.index(default), key="attr_slice_data")
                s_n = c3.number_input("Sentences (dev split)", 5, 500, 50, step=5, key="attr_slice_n")
                go_slice = st.form_submit_button("Run", help="About a second per sentence and model on a laptop.")
            if go_slice:
                try:
                    bundle = cache.dataset(s_data, limit=None)
                    split = bundle.splits.get("dev") or bundle.splits.get("test") or next(iter(bundle.splits.values()))
                    s_pred = w.load(by_name[s_ckpt])
                    with st.spinner(f"Scoring {int(s_n)} sentences…"):
                        rep = I.evaluate_slice(s_pred, split.texts[:int(s_n)], removal=removal, baseline=baseline,
                                               n_steps=steps, methods=[m for m in methods if m != "leave_one_out"]
                                               + ["random"])
                    st.session_state["attr_slice_result"] = (s_ckpt, s_data, rep)
                except Exception as e:  # noqa: BLE001
                    st.error(f"Could not score the data set: {type(e).__name__}: {e}")
            if "attr_slice_result" in st.session_state:
                s_ckpt, s_data, rep = st.session_state["attr_slice_result"]
                st.caption(f"{w.md_escape(s_ckpt)} on {rep.settings['n_texts']} sentences of "
                           f"{w.md_escape(s_data)} in {rep.seconds:.1f} s; reference = leave-one-out.")
                frame = rep.frame().rename(columns=lambda c: c.replace("_", " "))
                if "method" in frame.columns:
                    names = {**LABELS, "random": "Random ranking"}
                    frame["method"] = frame["method"].map(lambda m: names.get(m, m))
                st.dataframe(frame, hide_index=True)
                if rep.model_row:
                    st.dataframe(pd.DataFrame([{k: v for k, v in rep.model_row.items() if k != "attention_maps"}]),
                                 hide_index=True)
                for note in rep.settings["notes"]:
                    st.caption(w.md_escape(note))

# ---------------------------------------------------------------- interventions

with tab_int:
    pick = st.selectbox("Checkpoint", [r[0].name for r in results], key="attr_int_ckpt")
    info, pred, inst, expl, _ = next(r for r in results if r[0].name == pick)
    model = pred.model
    specs = {s.name: s for s in model.map_specs()}
    options = []
    if attention_maps(model):
        options += ["Uniform attention", "Permuted attention"]
    if any("head" in s.axes for s in specs.values() if s.values in ("real", "partial")):
        options.append("Ablate a head")
    filter_maps = [s.name for s in specs.values() if "filter" in s.axes and s.values == "real"]
    if filter_maps:
        options.append("Zero a filter")
    if any(s.kind == "gate" for s in specs.values()):
        options += ["Force gates to 1", "Force gates to 0"]
    if hasattr(model.config, "activation"):
        options.append("Swap the activation")
    if not options:
        st.info("This model exposes nothing to intervene on.")
    else:
        kind = st.radio("Intervention", options, horizontal=True, key="attr_int_kind")
        iv = None
        if kind == "Uniform attention":
            iv = I.UniformAttention()
        elif kind == "Permuted attention":
            iv = I.PermuteAttention(seed=st.number_input("Seed", 0, 10_000, 0, key="attr_int_seed"))
        elif kind == "Ablate a head":
            n_heads = int(getattr(model.config, "n_heads", getattr(model.config, "heads", 1)))
            n_layers = int(getattr(model.config, "n_layers", 0))
            c1, c2 = st.columns(2)
            head = c1.selectbox("Head", list(range(n_heads)), key="attr_int_head")
            layer = c2.selectbox("Layer", ["every layer"] + list(range(n_layers)), key="attr_int_layer") \
                if n_layers else "every layer"
            iv = I.AblateHead(head, None if layer == "every layer" else int(layer))
        elif kind == "Zero a filter":
            c1, c2 = st.columns(2)
            fmap = c1.selectbox("Feature map", filter_maps, key="attr_int_fmap")
            n_f = int(getattr(model.config, "n_filters", 1))
            iv = I.ZeroFilter(fmap, c2.number_input("Filter", 0, max(0, n_f - 1), 0, key="attr_int_filter"))
        elif kind.startswith("Force gates"):
            iv = I.ForceGate(1.0 if kind.endswith("1") else 0.0)
        else:
            current = model.config.activation
            choices = [a for a in ("relu", "nlrelu", "selu", "elu", "tanh", "identity") if a != current]
            iv = I.SwapActivation(st.selectbox(f"Replace {current} by", choices, key="attr_int_act"))
        try:
            res = I.intervene(model, inst, iv, return_maps=False, labels=pred.labels)
            st.markdown(f"**{w.md_escape(iv.describe())}** - TVD {res.tvd:.4f}; decision "
                        + ("**flips**" if res.flipped else "unchanged") + ".")
            w.show_figure(F.probability_shift(pred.labels, res.probs_before, res.probs_after,
                                              f"{pick}: probabilities before and after"), "attr_int_probs")
            try:
                run_model = iv.prepare(model)
                before, after = (attention_importance_instances(run_model, [inst], edits=e)[0].scores
                                 for e in (None, iv.edits(run_model)))
                shaded(inst.tokens, before, label="own attention before", window=clip_window(inst.n))
                shaded(inst.tokens, after, label="own attention after", window=clip_window(inst.n))
            except ValueError:
                pass
        except ValueError as e:
            st.warning(str(e))

# ---------------------------------------------------------------- counterfactual

with tab_cf:
    word_level = [r for r in results if getattr(getattr(r[1], "tokenizer", None), "config", None) is None
                  or r[1].tokenizer.config.level == "word"]
    toks = (word_level or results)[0][2].tokens
    c1, c2 = st.columns([2, 2])
    idx = c1.selectbox("Word to change", list(range(len(toks))), key="attr_cf_idx",
                       format_func=lambda i, toks=toks: f"{i + 1}: {toks[i]}",
                       index=next((i for i, t in enumerate(toks) if t in ("not", "never", "no")), 0))
    repl = c2.text_input("Replace by (empty = delete)", value="", key="attr_cf_repl").strip()
    edited = I.edit_tokens(toks, idx, repl or None)
    def cut(t: str, n: int = 2000) -> str:
        return t if len(t) <= n else t[:n] + f" … ({len(t):,} characters in all)"
    st.text(f"Before: {cut(' '.join(toks))}\nAfter:  {cut(edited)}")
    srcs = {r[0].name: r[1] for r in results}
    try:
        cf = memo(("cf", tuple((str(r[0].path), cache.stamp(r[0].path)) for r in results), text, edited),
                  lambda: I.counterfactual(srcs, " ".join(toks), edited))
    except Exception as e:  # noqa: BLE001
        st.error(f"{type(e).__name__}: {e}")
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
                shaded(r.tokens_before, r.importance_before, window=clip_window(len(r.tokens_before)))
                shaded(r.tokens_after, r.importance_after, window=clip_window(len(r.tokens_after)))
