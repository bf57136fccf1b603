"""Home: which checkpoints are loaded (with their test accuracy), one box to try a sentence, links onwards."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import streamlit as st

from pages.common import cache, inside_app, shared, widgets as w
from textcls import viz
from textcls.analysis.metrics import agreement

inside_app(__file__)

ROOT = Path(__file__).resolve().parents[1]
MAX_LABELS_INLINE = 8      # more labels than this (semeval2010: 19) are listed under the table, not in a cell
LINKS = [
    ("pages/compare.py", "Compare", ":material/compare_arrows:",
     "every model on one sentence or a whole file, side by side, disagreements highlighted"),
    ("pages/inspect.py", "Inspect", ":material/visibility:",
     "a model's internals drawn the way its paper draws them: attention, feature maps, gates"),
    ("pages/attribute.py", "Attribute", ":material/highlight:", "gradient attributions and how faithful they are"),
    ("pages/patch.py", "Patch", ":material/call_split:",
     "where inside a model a decision is made: patch a minimal pair layer by layer, head by head"),
    ("pages/train.py", "Train", ":material/model_training:", "train a model on a data set with live curves"),
    ("pages/evaluate.py", "Evaluate", ":material/fact_check:", "metrics and confusion matrices on a data set"),
    ("pages/explore.py", "Explore", ":material/scatter_plot:",
     "a whole data set through the models' eyes: projector, slices, calibration, confusions"),
    ("pages/lab.py", "Lab", ":material/science:", "small demos of gating, activations and attention"),
    ("pages/lessons.py", "Lessons", ":material/school:", "guided lessons for a class, step by step"),
    ("pages/studies.py", "Studies", ":material/insights:",
     "rerun a paper's sweep (many short trainings) and see whether its trend holds here"),
    ("pages/benchmarks.py", "Benchmarks", ":material/speed:", "parameters, speed and accuracy against the papers"),
]

def unknown_cell(info, unknown: int | None) -> str:
    """The "unknown words" cell: a count, or why there is none (an encoder reading word pieces has no unknown
    words: it splits an unseen word into pieces it knows) - never "None"."""
    if unknown is not None:
        return str(unknown)
    if w.is_pretrained(info):
        return "- (word pieces: no unknown words)"
    return "-"


st.title("textcls")
st.markdown("Small, interpretable text classifiers - Kim CNN, AGCNN, ACT, a Transformer encoder, HCAN and LAMA - "
            "with their internals one click away.")

valid, invalid = cache.checkpoints()

st.subheader("Checkpoints")
if not valid:
    w.no_checkpoints_message(invalid)
else:
    rows = []
    for i in valid:
        trained_on = w.trained_on(i)
        rows.append({"checkpoint": i.name, "from": "shipped" if i.shipped else "yours",
                     "model": viz.model_title(i.model),
                     "data set": (i.data or "—") + (f" (trained on {trained_on})"
                                                    if trained_on != (i.data or "unknown data") else ""),
                     "test accuracy": None if i.test_accuracy is None else 100 * i.test_accuracy,
                     "labels": ", ".join(i.labels) if len(i.labels) <= MAX_LABELS_INLINE
                     else f"{len(i.labels)} (listed below)", "parameters": i.info.get("num_parameters")})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch",
                 height=min(35 * (len(rows) + 1) + 3, 740),                # every checkpoint visible (to ~20)
                 # widths that show every name and label list whole in a laptop window (about 1,000 px wide)
                 column_config={"checkpoint": st.column_config.TextColumn(width=180),
                                "from": st.column_config.TextColumn(width=60),
                                "model": st.column_config.TextColumn(
                                    width=128, help="the model family; (Hugging Face): a pretrained model you or "
                                                    "textcls fine-tuned, opened with the transformers library"),
                                "data set": st.column_config.TextColumn(width=200),
                                "test accuracy": st.column_config.NumberColumn("accuracy", format="%.1f %%", width=72,
                                                                               help="test accuracy"),
                                "labels": st.column_config.TextColumn(width=230),
                                "parameters": st.column_config.NumberColumn("params", format="compact", width=70,
                                                                            help="parameters")})
    roots = cache.checkpoint_roots()
    st.caption(f"{len(valid)} checkpoint(s): shipped ones from {w.md_escape(roots[0])} (read-only; "
               f"TEXTCLS\\_CHECKPOINTS), yours from {w.md_escape(roots[-1])} (TEXTCLS\\_HOME), where the Train page "
               "saves. Test accuracy is on the held-out test split of the data set each was trained on.")
    many = {i.data or i.name: i.labels for i in valid if len(i.labels) > MAX_LABELS_INLINE}
    for data, labels in many.items():
        st.caption(f"{w.md_escape(data)}'s {len(labels)} labels: {w.md_escape(', '.join(labels))}.")
    note = w.trained_on_note(valid)
    if note:
        st.caption(w.md_escape(note))
    w.show_invalid(invalid)

    st.subheader("Try a sentence")
    # One task at a time: a movie review means nothing to the question-type (trec) checkpoints.
    tasks = w.tasks(valid)
    task = st.segmented_control("Task", tasks, default=tasks[0], key="home_task", format_func=w.task_title,
                                help="Each checkpoint classifies texts of the task it was trained on; only that "
                                     "task's checkpoints classify the sentence.") or tasks[0]
    st.caption(w.md_escape(w.task_description(valid, task)))
    with st.form("try"):
        text = st.text_input("Sentence", placeholder=w.task_placeholder(task), max_chars=w.MAX_CHARS,
                             key="home_text")
        go = st.form_submit_button("Classify with this task's checkpoints", type="primary")
    shared.keep_text(text)
    if go or text:
        text = w.clean_text(text, what="sentence")
        if text is not None:
            out, counts, words = [], {}, {}
            mine = [i for i in valid if i.data == task]
            skip = w.missing_markers(mine, text, quiet=True)
            for i in mine:
                if i in skip:
                    continue
                preds = w.safe_predict(i, [text])
                if preds and not preds[0].tokens:          # nothing left after its tokenizer: no verdict to give
                    st.info(f"{w.md_escape(i.name)} reads no words in this text (nothing is left after its "
                            "tokenizer), so it gives no prediction.")
                elif preds:
                    p = preds[0]
                    unk = w.count_unknown(p)                # counted where the model is
                    counts[i.name] = (unk, len(p.tokens))
                    words[i.name] = w.unknown_words(p)
                    out.append({"checkpoint": i.name, "model": viz.model_title(i.model), "data set": i.data or "—",
                                "prediction": p.label, "confidence": 100 * p.probabilities[p.label],
                                "tokens": len(p.tokens), "unknown words": unknown_cell(i, unk),
                                "truncated": p.truncated})
            if out:
                df = pd.DataFrame(out)
                st.caption(f"Predicted on {w.md_escape(cache.describe_predict_device())}. The app predicts on a "
                           "GPU when there is one; set the environment variable TEXTCLS\\_DEVICE (auto, cpu, cuda, "
                           "mps) before starting it to choose.")
                meaningless = w.unknown_warning(counts, words)
                # One verdict per data set: checkpoints of different tasks have different labels.
                for data, part in df.groupby("data set", sort=False):
                    major, groups = agreement(dict(zip(part["checkpoint"], part["prediction"])))
                    head = f"**{w.md_escape(data)}**: "
                    if len(groups) == 1:
                        msg = (f"all {len(part)} say **{w.md_escape(major)}**" if len(part) > 1
                               else f"{w.md_escape(part['checkpoint'].iloc[0])} says **{w.md_escape(major)}**")
                        if meaningless:
                            st.warning(head + msg + " - but only because of the models' bias (every word is "
                                       "unknown).")
                        else:
                            st.success(head + msg + ".")
                    else:
                        st.warning(head + "the checkpoints disagree: " + "; ".join(
                            f"{len(v)} {'says' if len(v) == 1 else 'say'} **{w.md_escape(k)}**"
                            for k, v in sorted(groups.items(), key=lambda kv: -len(kv[1])))
                            + ". Open Compare to see where and why.")
                st.dataframe(df, hide_index=True, width="stretch",
                             column_config={"confidence": st.column_config.ProgressColumn(
                                 format="%.1f %%", min_value=0, max_value=100),
                                 "unknown words": st.column_config.TextColumn(width=240,
                                     help="tokens not in the checkpoint's vocabulary (read as unknown); an encoder "
                                          "that reads word pieces splits an unseen word into known pieces")})

# Model packages (entry-point plugins) that failed to load: skipped, never breaking the app. Home imports no torch,
# so this reads the plugin loader only once another page (or the warm-up) has loaded it.
_plugins = sys.modules.get("textcls.models.plugins")
for _line in (_plugins.plugin_problems() if _plugins is not None else []):
    st.warning(w.md_escape(_line), icon=":material/extension_off:")

st.subheader("Where next")
for f, title, icon, what in LINKS:
    if (ROOT / f).is_file():
        c1, c2 = st.columns([1, 4])
        c1.page_link(f, label=title, icon=icon)
        c2.markdown(what)
