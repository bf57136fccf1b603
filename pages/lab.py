"""Lab: teaching demos of activations, negation, HCAN's two branches and AGCNN's gates. Each demo has a short
text a teacher can read aloud; the numbers come from `textcls.interpret.lab`, computed by the model worker
(pages.common.work: this page imports no torch)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from pages.common import inside_app, widgets as w, work
from textcls import viz
from textcls.models.configs.base import ACTIVATION_NAMES
from textcls.viz import explanations as F
from textcls.interpret import lab_texts as lab

inside_app(__file__)

st.title("Lab")
st.caption("Small experiments that show how the models' parts behave. Each starts with a short text to read "
           "aloud; change the inputs and watch the numbers move.")


def shaded(tokens, weights, label: str | None = None) -> None:
    """Inline shaded words: `viz.token_highlight_html` escapes every token and the label; st.html shows it."""
    st.html(viz.token_highlight_html(list(tokens), weights, label=label))


WINDOW = 60     # tokens drawn at a time for a long text (tick labels stay readable)


def long_text_window(n: int, key: str) -> tuple[int, int] | None:
    """A slider over a long text's tokens; None when the whole text fits."""
    if n <= WINDOW:
        return None
    start = st.slider(f"Long text ({n} tokens): first token shown", 1, n - WINDOW + 1, 1, key=key,
                      help=f"The figures show {WINDOW} tokens at a time; the CSV/JSON exports have them all.")
    return (start - 1, WINDOW)


def no_tokens_warning() -> None:
    st.warning("The text has no tokens this model reads (nothing is left after tokenisation); type a sentence "
               "with words.")


def read_aloud(key: str) -> None:
    with st.container(border=True):
        st.markdown(":material/record_voice_over: **To read aloud**")
        st.markdown(w.md_escape(lab.DEMO_TEXT[key]))


def checkpoints_of(models: tuple[str, ...]):
    from pages.common import cache
    valid, _ = cache.checkpoints()
    return [i for i in valid if i.model in models]


def pick_source(models: tuple[str, ...], key: str, texts: list[str]):
    """A checkpoint of one of `models`, or (when none exists) an untrained small model on request: the demo's
    model as the work module names it (`work.lab_source` / `work.untrained_source`)."""
    infos = checkpoints_of(models)
    if infos:
        by = {i.name: i for i in infos}
        n = st.selectbox("Checkpoint", list(by), key=key, format_func=lambda k: w.ckpt_label(by[k]))
        return work.lab_source(by[n].path)
    st.info(f"No {' / '.join(models)} checkpoint yet. Train one on the Train page, or look at the mechanics "
            "with an untrained model (random weights: the numbers mean nothing about language).",
            icon=":material/info:")
    if st.toggle("Use an untrained small model", value=True, key=f"{key}_untrained"):
        return work.untrained_source(models[0], texts)
    return None


def tokens_of(src: tuple, text: str) -> tuple[list[str], int] | None:
    """(tokens, n) of text as the demo's model reads it, or None with the reason shown."""
    try:
        return work.lab_reading(src, text)
    except Exception as e:  # noqa: BLE001 - a checkpoint that cannot load or read this input: one line
        st.error(f"The model cannot read this input: {type(e).__name__}: {w.md_escape(e)}")
        return None


MAX_LINES = 40

tab_act, tab_neg, tab_hcan, tab_gate = st.tabs(
    ["Activations through 10 layers", "Negation and intensity", "HCAN's two branches", "AGCNN's gates"])

# ---------------------------------------------------------------- AG-F2

with tab_act:
    read_aloud("activations")
    c1, c2 = st.columns([3, 1])
    acts = c1.multiselect("Activations", ACTIVATION_NAMES, default=["relu", "nlrelu", "selu", "tanh"], key="lab_acts")
    seed = c2.number_input("Seed", 0, 10_000, 0, key="lab_seed")
    if not acts:
        st.info("Pick at least one activation.")
    else:
        with w.or_one_line("The activation statistics", stop=False):    # each tab on its own: the others still draw
            rows = work.activation_statistics(tuple(acts), int(seed))
            st.caption("AGCNN paper, Fig. 2: a dense network of 10 layers x 100 units, a batch of 100 inputs "
                       "from N(0, 1), biases 0.1, weights from N(0, 1) or N(0, 1.5) (read as variance 1.5).")
            for weights in ("N(0, 1)", "N(0, 1.5)"):
                c1, c2 = st.columns(2)
                with c1:
                    w.show_figure(F.activation_figure(rows, weights, "mean"), f"lab_mean_{weights}")
                with c2:
                    w.show_figure(F.activation_figure(rows, weights, "variance"), f"lab_var_{weights}")

# ---------------------------------------------------------------- negation

with tab_neg:
    read_aloud("negation")
    from pages.common import cache
    valid, _ = cache.checkpoints()
    readable = [i for i in valid if not w.needs_entities(i)]       # relation checkpoints need marked entities
    binary = [i for i in readable if len(i.labels) == 2] or readable
    if not binary:
        st.info("This demo needs trained checkpoints (sentiment, two classes): train one on the Train page.")
    else:
        by = {i.name: i for i in binary}
        chosen = st.multiselect("Checkpoints", list(by), default=list(by)[:6], key="lab_neg_ckpts",
                                format_func=lambda k: w.ckpt_label(by[k]))
        lines = st.text_area("Inputs, one per line", value="\n".join(lab.NEGATION_SENTENCES), height=200,
                             key="lab_neg_lines")
        all_lines = w.split_lines(lines)
        sents = all_lines[:MAX_LINES]
        if len(all_lines) > MAX_LINES:
            st.caption(f"{len(all_lines)} inputs; the first {MAX_LINES} are shown.")
        sources = {n: by[n].path for n in chosen if w.facts(by[n]) is not None}     # a refused one: its line
        if sents and sources:
            with w.or_one_line("The negation demo", stop=False):
                rows = work.negation_demo(sources, sents)
                w.show_figure(F.negation_figure(rows), "lab_negation")
                with st.expander("Where each model looks (its own attention)"):
                    for r in rows:
                        if r["importance"] is not None and r["tokens"]:
                            shaded(r["tokens"], r["importance"],
                                   label=f"{r['model']}: {r['sentence']} -> p(positive) {r['p_positive']:.2f}")
        elif not sents:
            st.info("Type at least one input.")

# ---------------------------------------------------------------- HCAN

with tab_hcan:
    read_aloud("hcan")
    text = st.text_input("Text", value="the film looks great . the story is not good .", key="lab_hcan_text")
    src = pick_source(("hcan", "can"), "lab_hcan_ckpt", [text])
    text = w.clean_text(text)
    read = tokens_of(src, text) if src is not None and text else None
    if read is not None:
        toks, n_tok = read
        if n_tok == 0:
            no_tokens_warning()
        else:
            word = st.selectbox("Word whose attention rows to show", list(range(n_tok)), key="lab_hcan_word",
                                format_func=lambda i, toks=toks: f"{i + 1}: {toks[i]}")
            with w.or_one_line("HCAN's branches", stop=False):
                try:
                    res = work.hcan_branches(src, text, int(word))
                except ValueError as e:                 # what this model cannot show for this text
                    st.warning(str(e))
                else:
                    w.show_figure(F.branches_figure(res, window=long_text_window(n_tok, "lab_hcan_win")),
                                  "lab_branches")
                    w.show_figure(F.branch_rows_figure(res), "lab_branch_rows")
                    st.dataframe(pd.DataFrame({"token": toks, "branch b flips the sign (share of channels)":
                                               res["sign_flip_share"], "mean |H_b|": res["gate_b"]}),
                                 hide_index=True)

# ---------------------------------------------------------------- AGCNN gates

with tab_gate:
    read_aloud("gates")
    text = st.text_input("Sentence", value=lab.GATE_SENTENCE, key="lab_gate_text",
                         help="A sentence with mixed feelings: a nearly certain prediction cannot move far, "
                              "whatever a gate does.")
    src = pick_source(("agcnn",), "lab_gate_ckpt", [text])
    text = w.clean_text(text)
    read = tokens_of(src, text) if src is not None and text else None
    if read is not None:
        if read[1] == 0:
            no_tokens_warning()
            st.stop()
        with w.or_one_line("AGCNN's gates", stop=False):
            try:
                closures, res = work.agcnn_gates(src, text)
            except ValueError as e:                     # what this model cannot show for this text
                st.warning(str(e))
            else:
                for line in lab.gate_closure_lines(closures):
                    st.markdown(w.md_escape(line))
                w.show_figure(F.gate_closure_figure(closures), "lab_gate_closures")
                labels = closures["labels"] or [str(i) for i in range(len(res["probs"]))]
                st.markdown(f"Forcing **every** gate to 1 (a plain CNN) moves the prediction by "
                            f"{res['tvd_gates_open']:.3f}; closing them all (0) by {res['tvd_gates_closed']:.3f} - "
                            f"{w.md_escape(lab.TVD_WORDS)}.")
                w.show_figure(F.probability_shift(labels, res["probs"], res["probs_gates_open"],
                                                  "Gated (as trained) vs all gates open",
                                                  names=("gated", "gates = 1")), "lab_gate_probs")
                n_pos = max((len(v) for v in res["profile"].values()), default=0)
                w.show_figure(F.gate_profile_figure(res, window=long_text_window(n_pos, "lab_gate_win")),
                              "lab_gate_profile")
                table = pd.DataFrame(res["rows"]).assign(map=lambda d: d["map"].map(lab.gate_title)).rename(columns={
                    "map": "gate", "mean_gate": "mean gate", "suppressed": "share < 1", "closed": "share = 0",
                    "kept_mass": "feature mass kept", "picks_moved": "max-pool picks moved"})
                st.dataframe(table, hide_index=True)
