"""Home: which checkpoints are loaded (with their test accuracy), one box to try a sentence, links onwards."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from pages.common import cache, widgets as w

ROOT = Path(__file__).resolve().parents[1]
LINKS = [
    ("pages/compare.py", "Compare", ":material/compare_arrows:",
     "every model on one sentence or a whole file, side by side, disagreements highlighted"),
    ("pages/inspect.py", "Inspect", ":material/visibility:",
     "a model's internals drawn the way its paper draws them: attention, feature maps, gates"),
    ("pages/attribute.py", "Attribute", ":material/highlight:", "gradient attributions and how faithful they are"),
    ("pages/train.py", "Train", ":material/model_training:", "train a model on a data set with live curves"),
    ("pages/evaluate.py", "Evaluate", ":material/fact_check:", "metrics and confusion matrices on a data set"),
    ("pages/lab.py", "Lab", ":material/science:", "small demos of gating, activations and attention"),
    ("pages/benchmarks.py", "Benchmarks", ":material/speed:", "parameters, speed and accuracy against the papers"),
]

st.title("textcls")
st.markdown("Small, interpretable text classifiers - Kim CNN, AGCNN, ACT, a Transformer encoder, HCAN and LAMA - "
            "with their internals one click away.")

root = cache.checkpoint_root()
valid, invalid = cache.checkpoints(str(root))

st.subheader("Checkpoints")
if not valid:
    w.no_checkpoints_message(root, invalid)
else:
    rows = []
    for i in valid:
        rows.append({"checkpoint": i.name, "model": i.model, "data set": i.data or "—",
                     "test accuracy": None if i.test_accuracy is None else 100 * i.test_accuracy,
                     "labels": ", ".join(i.labels), "parameters": i.info.get("num_parameters"),
                     "created": i.created[:16].replace("T", " ")})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch",
                 column_config={"test accuracy": st.column_config.NumberColumn(format="%.1f %%"),
                                "parameters": st.column_config.NumberColumn(format="%d")})
    st.caption(f"{len(valid)} checkpoint(s) in {w.md_escape(root)} (set TEXTCLS\\_CHECKPOINTS to use another "
               "folder). Test accuracy is on the held-out test split of the data set each was trained on.")
    w.show_invalid(invalid)

    st.subheader("Try a sentence")
    with st.form("try"):
        text = st.text_input("Sentence", placeholder="e.g. a gripping, beautifully acted film",
                             max_chars=w.MAX_CHARS, key="home_text")
        go = st.form_submit_button("Classify with every checkpoint", type="primary")
    if go or text:
        text = w.clean_text(text, what="sentence")
        if text is not None:
            out = []
            for i in valid:
                preds = w.safe_predict(i, [text])
                if preds:
                    p = preds[0]
                    out.append({"checkpoint": i.name, "model": i.model, "prediction": p.label,
                                "confidence": 100 * p.probabilities[p.label], "tokens": len(p.tokens),
                                "truncated": p.truncated})
            if out:
                df = pd.DataFrame(out)
                major, groups = w.agreement(dict(zip(df["checkpoint"], df["prediction"])))
                if len(groups) == 1:
                    st.success(f"All {len(df)} checkpoints say **{w.md_escape(major)}**.")
                else:
                    st.warning("The checkpoints disagree: " + "; ".join(
                        f"{len(v)} {'says' if len(v) == 1 else 'say'} **{w.md_escape(k)}**"
                        for k, v in groups.items()) + ". Open Compare to see where and why.")
                st.dataframe(df, hide_index=True, width="stretch",
                             column_config={"confidence": st.column_config.ProgressColumn(
                                 format="%.1f %%", min_value=0, max_value=100)})

st.subheader("Where next")
for f, title, icon, what in LINKS:
    if (ROOT / f).is_file():
        c1, c2 = st.columns([1, 4])
        c1.page_link(f, label=title, icon=icon)
        c2.markdown(what)
