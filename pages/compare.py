"""Compare: one sentence or many, every selected checkpoint side by side, agreement and disagreement.

Predictions come from the cached wrappers (per checkpoint and text, shared by every session): a sentence asked
before answers at once. While models load or answer, a progress bar (or, for one slow step, a spinner) names the
checkpoint being run."""
from __future__ import annotations

import io

import pandas as pd
import streamlit as st

from pages.common import cache, inside_app, shared, urlstate, widgets as w
from textcls import viz
from textcls.analysis.lengths import length_notes
from textcls.analysis.metrics import agreement, agreement_rows, pairwise_agreement, score_known
from textcls.records import SpecRecord

inside_app(__file__)

st.title("Compare models")
st.caption("Every selected checkpoint on the same input: what each predicts, how sure it is, where they disagree "
           "and - for one sentence - which words each of them leaned on.")

valid = w.require_checkpoints()
by_name = {i.name: i for i in valid}
# Models are compared on one task at a time, by default the main one (w.tasks)
tasks = w.tasks(valid)
# A link (?ckpt=A,B&text=...) opens its checkpoints, on their task when they share one. Its text is read up to
# URL_TEXT_MAX characters (a link carries a sentence or a paragraph; the server itself refuses a request line past
# about 100 kB, with a connection reset, before any page runs).
URL_TEXT_MAX = 10_000
if urlstate.restore("compare", {"text": "cmp_text"}):
    linked_text = st.session_state.get("cmp_text")
    if isinstance(linked_text, str) and len(linked_text) > URL_TEXT_MAX:
        st.session_state["cmp_text"] = linked_text[:URL_TEXT_MAX]
        st.warning(f"The link's text has {len(linked_text):,} characters; only the first {URL_TEXT_MAX:,} were "
                   "read (paste a longer text into the box below).", icon=":material/content_cut:")
    linked = [n for n in st.query_params.get("ckpt", "").split(",") if n in by_name]
    if linked:
        data = {by_name[n].data for n in linked}
        st.session_state["cmp_task"] = data.pop() if len(data) == 1 else "all"
        st.session_state[f"cmp_ckpts_{st.session_state['cmp_task']}"] = linked
# The task's value is set one way only - through its session key (a link's task above, else the first task) and
# never also as the widget's default: both logged Streamlit's "default value but also set via Session State"
# warning with a stack trace on the server.
if "cmp_task" not in st.session_state or st.session_state["cmp_task"] not in [*tasks, "all", None]:
    st.session_state["cmp_task"] = tasks[0] if tasks else "all"
task = st.segmented_control("Task", tasks + ["all"], key="cmp_task",
                            help="Checkpoints trained on the same data set share their labels.") or "all"
shown = [n for n, i in by_name.items() if task == "all" or i.data == task]
# The pretrained encoders (MiniLM) are one click away rather than in the first selection: loading one takes
# seconds (transformers' import and the rebuild from the installed base), the small models a tenth of that.
pretrained = [n for n in shown if w.is_pretrained(by_name[n])]
ckpt_key = f"cmp_ckpts_{task}"


def add_pretrained() -> None:
    st.session_state[ckpt_key] = list(st.session_state.get(ckpt_key, [])) + [
        n for n in pretrained if n not in st.session_state.get(ckpt_key, [])]


shared.seed_choice(ckpt_key, shown, [n for n in shown if n not in pretrained])   # as left, else the small ones
chosen = st.multiselect("Checkpoints", shown, key=ckpt_key, format_func=lambda n: w.ckpt_label(by_name[n]))
shared.keep_choice(ckpt_key, chosen)
missing = [n for n in pretrained if n not in chosen]
if missing:
    st.button(f"Add the pretrained baseline{'s' if len(missing) > 1 else ''}: {', '.join(missing)}",
              on_click=add_pretrained, icon=":material/add:", key=f"cmp_add_pre_{task}",
              help="A Hugging Face encoder fine-tuned on this task (docs/your_model.md): far larger than the small "
                   "models; its first answer waits a few seconds while it loads.")
if not chosen:
    st.info("Pick at least one checkpoint.")
    st.stop()
infos = [by_name[n] for n in chosen]
# Agreement only means something within one label set: checkpoints of different tasks are compared per task.
groups = w.by_label_set(infos)
if len(groups) > 1:
    st.caption(f"These checkpoints belong to {len(groups)} tasks with different labels: each task is compared "
               "on its own (a label of one task never agrees or disagrees with another task's).")

mode = st.radio("Input", ["One sentence", "Many sentences (one per line)", "Upload a CSV or TXT file"],
                horizontal=True, key="cmp_mode")


def says(n: int) -> str:
    return "says" if n == 1 else "say"


def single(text: str, infos: list, tag: str = "") -> None:
    preds = {}
    skip = w.missing_markers(infos, text)
    run = [i for i in infos if i not in skip]
    if not run:
        return
    prog = w.Progress(len(run))
    cache.ask_maps_together([i.path for i in run], text)      # every checkpoint's answer in one round trip
    for k, i in enumerate(run):
        with prog.step(f"{w.md_escape(i.name)} ({k + 1} of {len(run)})…", ready=cache.maps_ready(i.path, text)):
            r = w.safe_predict_maps(i, text)
        if r is not None:
            preds[i.name] = r
    prog.close()
    if not preds:
        return
    if not any(p.tokens for p in preds.values()):
        st.warning("None of the models found a word in this text (it is empty after tokenisation); the "
                   "predictions below are what each model says about an empty input.")
    unknown, words = {}, {}
    for n, p in preds.items():
        unknown[n], words[n] = w.count_unknown(p), w.unknown_words(p)     # counted where the model is
    meaningless = w.unknown_warning({n: (unknown[n], len(p.tokens)) for n, p in preds.items()}, words)
    major, groups = agreement({n: p.label for n, p in preds.items()})
    if len(groups) == 1 and meaningless:
        st.warning(f"All {len(preds)} checkpoints say **{w.md_escape(major)}**, but they read only unknown words: "
                   "this is their bias, not a judgement of the text.", icon=":material/warning:")
    elif len(groups) == 1 and len(preds) == 1:
        st.success(f"{w.md_escape(next(iter(preds)))} says **{w.md_escape(major)}** (the only checkpoint of this "
                   "task: nothing to agree with).", icon=":material/check_circle:")
    elif len(groups) == 1:
        st.success(f"All {len(preds)} checkpoints agree: **{w.md_escape(major)}**.", icon=":material/check_circle:")
    else:
        st.warning("The checkpoints disagree - " + "; ".join(
            f"{len(v)} {says(len(v))} **{w.md_escape(k)}** ({w.md_escape(', '.join(v))})" for k, v in
            sorted(groups.items(), key=lambda kv: -len(kv[1]))) + ".", icon=":material/warning:")
    cards = []
    for n, p in preds.items():
        notes = [f"{len(p.tokens)} tokens"]
        if unknown.get(n):
            notes.append(f"{unknown[n]} of {len(p.tokens)} unknown")
        if p.truncated:
            notes.append("input truncated")
        cards.append(dict(name=n, model=viz.model_title(by_name[n].model), data=by_name[n].data, label=p.label,
                          conf=p.probabilities[p.label], agrees=None if len(groups) == 1 else p.label == major,
                          notes=notes))
    st.html(viz.label_cards_html(cards))
    for short_text in length_notes([by_name[n] for n in preds], len(text.split()), valid):   # one per data set
        st.caption(":material/short_text: " + w.md_escape(short_text))
    item = viz.probabilities_figure([(n, p.probabilities) for n, p in preds.items()],
                                    title="Probability of each label")
    w.show_figure(item, f"cmp_probs{tag}")

    st.subheader("What each model looked at")
    items = []
    for n, p in preds.items():
        pred = w.facts(by_name[n])
        if pred is None:
            continue
        items.append(dict(name=n, model=by_name[n].model, specs={s.name: s for s in pred.map_specs()},
                          maps=p.maps, tokens=p.tokens, sentences=p.sentences, label=p.label))
    n_tok = max((len(p.tokens) for p in preds.values()), default=0)
    window = None
    if n_tok > viz.MAX_HIGHLIGHT_TOKENS:
        start = st.slider("Long text: first token shown", 1, n_tok, 1, step=50, key=f"cmp_win{tag}")
        window = (start - 1, viz.MAX_HIGHLIGHT_TOKENS)
    stretch = st.toggle("Stretch the shading to each row's range", value=False, key=f"cmp_stretch{tag}",
                        help="Off: white = a uniform share of the weight, darkest = 4x that share, the same scale "
                             "for every model. On: each row's smallest weight white, largest darkest.")
    reasons = viz.reasons_figure(items, title="Words shaded by each model's own weight (darker = more)",
                                 window=window, stretch=stretch)
    if reasons is None:
        st.info("None of these models exposes a token-level weight.")
    else:
        w.show_figure(reasons, f"cmp_reasons{tag}")
    st.markdown("**Each model's full internals** (Inspect, on this sentence):")
    links = st.columns(min(4, len(preds)))
    for k, n in enumerate(preds):
        links[k % len(links)].page_link("pages/inspect.py", label=n, icon=":material/visibility:",
                                        query_params=w.inspect_link(n, text),
                                        help=f"Open {n} on Inspect with this sentence")
    st.caption(f"Predicted on {w.md_escape(cache.describe_predict_device())}.")
    w.zip_button([item] + ([reasons] if reasons else []), f"compare_sentence{tag}")


def batch(texts: list[str], gold: list[str] | None, infos: list, tag: str = "") -> None:
    keep = [r for r, t in enumerate(texts) if t.strip()]
    rownum = [r + 1 for r in keep]                     # the row numbers of the input, empty rows skipped
    if len(keep) < len(texts):
        n_empty = len(texts) - len(keep)
        st.caption(f"{n_empty:,} empty text{'s' if n_empty > 1 else ''} skipped (not classified, not counted).")
        texts = [texts[r] for r in keep]
        gold = [gold[r] for r in keep] if gold else None
    if not texts:
        st.error("Every text is empty; nothing to compare.")
        return
    if len(texts) > w.MAX_BATCH:
        st.warning(f"{len(texts):,} texts; the first {w.MAX_BATCH:,} are compared.")
        texts = texts[: w.MAX_BATCH]
        gold = gold[: w.MAX_BATCH] if gold else None
        rownum = rownum[: w.MAX_BATCH]
    texts = [t[: w.MAX_CHARS] for t in texts]
    labels: dict[str, list[str]] = {}
    confs: dict[str, list[float]] = {}
    answers: dict[str, list] = {}                      # the predictions themselves, scored against a gold column
    prog = w.Progress(len(infos))
    for k, i in enumerate(infos):
        with prog.step(f"Classifying {len(texts):,} texts with {w.md_escape(i.name)} ({k + 1} of {len(infos)})…"):
            preds = w.safe_predict(i, texts)
        if preds is not None:
            answers[i.name] = preds
            labels[i.name] = [p.label for p in preds]
            confs[i.name] = [p.probabilities[p.label] for p in preds]
    prog.close()
    if not labels:
        return
    names = list(labels)
    majority, agree, disagree = map(list, zip(*agreement_rows(labels)))
    df = pd.DataFrame({"#": rownum, "text": texts, "majority": majority,
                       "agreement": agree, "disagree": disagree})
    if gold:
        df["gold"] = gold
    for n in names:
        df[n] = labels[n]
        df[f"{n} conf."] = confs[n]
    n_dis = sum(disagree)
    c1, c2, c3 = st.columns(3)
    c1.metric("texts", f"{len(texts):,}")
    c2.metric("models disagree on", f"{n_dis:,}", help=f"{100 * n_dis / len(texts):.0f} % of the texts")
    c3.metric("all agree on", f"{len(texts) - n_dis:,}")
    if gold:
        known = set().union(*(by_name[n].labels for n in names))
        strange = [g for g in gold if g not in known]
        if strange:
            examples = ", ".join(f"“{w.md_escape(viz.short(g, 40)) if g else '(empty)'}”"
                                 for g in list(dict.fromkeys(strange))[:5])
            st.warning(f"{len(strange):,} row(s) have a gold label the checkpoints do not know ({examples}); "
                       "they are left out of the accuracy. Known labels: "
                       f"{w.md_escape(', '.join(sorted(known)))}.", icon=":material/warning:")
        scored = {n: score_known(answers[n], gold, by_name[n].labels) for n in names}   # rows it knows only
        acc = {n: s["report"] for n, s in scored.items() if s is not None}
        if acc:
            st.markdown("**Accuracy on this file** (gold column): " + " · ".join(
                f"{w.md_escape(n)} {100 * r['accuracy']:.1f} % of {r['n']:,}" for n, r in acc.items()))
    only = st.toggle("Show only the texts where models disagree", value=False, key=f"cmp_only_dis{tag}")
    view = df[df["disagree"]] if only else df

    def paint(row):
        return ["background-color: #fdecea" if row["disagree"] else "" for _ in row]

    conf_cols = {f"{n} conf.": st.column_config.ProgressColumn(f"{n} conf.", format="percent", min_value=0,
                                                               max_value=1) for n in names}
    shown = view.head(1000)
    data = shown.style.apply(paint, axis=1) if len(shown) <= 1000 else shown
    st.dataframe(data, hide_index=True, width="stretch", height=min(600, max(110, 40 + 35 * len(shown))),
                 column_config={"text": st.column_config.TextColumn(width="large"),
                                "agreement": st.column_config.ProgressColumn(format="percent", min_value=0,
                                                                             max_value=1),
                                **conf_cols})
    if len(view) > len(shown):
        st.caption(f"Showing the first {len(shown):,} of {len(view):,} rows; the CSV has them all.")
    st.download_button("Download the table (CSV)", data=df.to_csv(index=False).encode("utf-8"),
                       file_name=f"compare{tag}.csv", mime="text/csv", key=f"cmp_csv{tag}", on_click="ignore",
                       icon=":material/download:")
    if len(names) > 1:
        m = pairwise_agreement(labels)                                            # (models, models)
        spec = SpecRecord("agreement", ("channel", "channel"), "activation")     # viz.MapSpec would import torch
        s = viz.slice_map(m, spec)
        s.row_labels, s.col_labels, s.row_axis, s.col_axis = names, names, "checkpoint", "checkpoint "
        fig = viz.heatmap_from_slice(s, spec, title="How often two checkpoints give the same label",
                                     show_values=True, colors=dict(colorscale="Greens", zmin=0, zmax=1))
        item = viz.FigureOut("model_agreement", "pairwise agreement", fig, viz.slice_table(s),
                             caption="Share of the texts on which the row and column checkpoints agree.")
        w.show_figure(item, f"cmp_pairwise{tag}")


relation = any(w.needs_entities(i) for i in infos)
if relation:
    w.marker_help()


def per_task(run, *args) -> None:
    """run(*args, infos, tag) once per task (a heading each when there are several)."""
    for title, part in groups:
        if len(groups) > 1:
            st.header(f"Task: {title}", divider="gray")
        run(*args, part, "" if len(groups) == 1 else "_" + title)


if mode == "One sentence":
    shared.seed_text("cmp_text", w.RELATION_EXAMPLE if relation else w.EXAMPLE,
                     fits=lambda t: w.has_markers(t) == relation)
    with st.form("cmp_one"):
        text = st.text_area("Sentence", height=90, key="cmp_text")
        st.form_submit_button("Compare", type="primary")
    shared.keep_text(text)
    urlstate.publish("compare", {"ckpt": chosen, "text": text})
    text = w.clean_text(text, what="sentence")
    if text is not None:
        per_task(single, text)
        # Its links open Inspect, whose views are Plotly charts: the browser loads that code while the answers are read
        w.prefetch_plotly()
elif mode.startswith("Many"):
    with st.form("cmp_many"):
        raw = st.text_area("One text per line", height=180, key="cmp_lines",
                           value="a gripping , beautifully acted film\nthe plot is thin and the jokes fall flat\n"
                                 "not bad at all\nI expected more")
        st.form_submit_button("Compare", type="primary")
    raw = w.clean_text(raw, what="list of sentences")
    if raw is not None:
        per_task(batch, w.split_lines(raw), None)
else:
    up = st.file_uploader("CSV (with a text column, optionally a label column) or TXT (one text per line)",
                          type=["csv", "tsv", "txt"], key="cmp_file")
    if up is None:
        st.info("Upload a file to compare the models on every row.")
    else:
        raw = up.getvalue()
        if len(raw) > 50_000_000:
            st.error("The file is larger than 50 MB; upload a smaller sample.")
            st.stop()
        try:
            content = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            content = raw.decode("latin-1")
        if up.name.lower().endswith(".txt"):
            per_task(batch, w.split_lines(content), None)
        else:
            try:
                table = pd.read_csv(io.StringIO(content), sep="\t" if up.name.lower().endswith(".tsv") else ",",
                                    dtype=str, keep_default_na=False)
            except Exception as e:  # noqa: BLE001 - any parse error is shown
                st.error(f"Could not read {w.md_escape(up.name)} as a table: {w.md_escape(e)}")
                st.stop()
            if table.empty:
                st.error("The file has no rows.")
                st.stop()
            cols = list(table.columns)
            default = cols.index("text") if "text" in cols else 0
            c1, c2 = st.columns(2)
            tcol = c1.selectbox("Text column", cols, index=default, key="cmp_tcol")
            lopts = ["(none)"] + [c for c in cols if c != tcol]
            lcol = c2.selectbox("Gold label column (optional)", lopts,
                                index=lopts.index("label") if "label" in lopts else 0, key="cmp_lcol")
            texts = table[tcol].astype(str).tolist()
            gold = table[lcol].astype(str).tolist() if lcol != "(none)" else None
            per_task(batch, texts, gold)
