"""The "rather than" choice of Attribute and Inspect: why a checkpoint predicts its label rather than another one
(textcls.interpret.contrastive). The choice itself, what it means for each checkpoint (a label it does not have is
said, not guessed), the line that says which two labels a contrastive explanation compares, and Inspect's panel.
The explanations come through the cached wrappers of `pages.common.work`, keyed on the contrast."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import streamlit as st

from pages.common import work
from pages.common import widgets as w
from textcls import viz
from textcls.interpret import methods as M
from textcls.interpret.contrastive import RUNNER_UP, describe

HELP = ("Explain logit(label) - logit(other) = log p(label)/p(other) instead of the label alone: a word's weight "
        "says how far it speaks for the predicted label rather than the other one (Yin & Neubig 2022). The gradient "
        "and erasure methods only; the model's own attention and the context-mixing methods weigh how words mix, "
        "not a label, and are shown as they are. On a 2-label model this is the log-odds.")
DEFAULT_METHOD = "integrated_gradients"   # Inspect's: its weights sum to the difference it explains (from a baseline)


def label_of(x, runner_up: str | None = None) -> str:
    """How a choice reads: the runner-up named when it is known."""
    if x == RUNNER_UP:
        return "the runner-up" + (f" ({runner_up})" if runner_up else " (the second most probable label)")
    return str(x)


def options(label_lists: Sequence[Sequence[str]], *, without: str | None = None) -> list[str]:
    """RUNNER_UP, then every label of these checkpoints once (in order), but `without`."""
    labels = dict.fromkeys(str(x) for labels in label_lists for x in labels if str(x) != without)
    return [RUNNER_UP, *labels]


def form_choice(label_lists: Sequence[Sequence[str]], key: str) -> str | None:
    """Attribute's choice, inside its form: a toggle and the label, the runner-up by default. None when off."""
    c1, c2 = st.columns([2, 3])
    on = c1.toggle("Why the label rather than another", key=f"{key}_on", help=HELP)
    foil = c2.selectbox("Rather than", options(label_lists), key=key, format_func=label_of,
                        help="Used when the toggle is on.")
    return foil if on else None


def for_labels(contrast: str | None, labels: Sequence[str]) -> tuple[str | None, str | None]:
    """(the contrast for a checkpoint with these labels, a note when it does not apply to it)."""
    if contrast is None or contrast == RUNNER_UP or contrast in labels:
        return contrast, None
    return None, f"no label {contrast} in this model: its explanations are of the label alone"


def used(expl: dict) -> tuple[str, str, float] | None:
    """(fact, foil, logit difference) of the first contrastive explanation in {method: explanation}, else None."""
    for v in expl.values():
        extras = getattr(v, "extras", None) or {}
        if "contrast_label" in extras:
            return str(v.label), str(extras["contrast_label"]), float(v.output)
    return None


def caption(expl: dict) -> str | None:
    """The line that says what the contrastive explanations among `expl` compare (None: none is)."""
    u = used(expl)
    if u is None:
        return None
    fact, foil, d = u
    if fact == foil:
        return f"Contrastive: {describe(fact, foil)}."
    return (f"Contrastive: {describe(fact, foil)}. The gradient and erasure weights explain logit({fact}) - "
            f"logit({foil}) = {d:.2f}, the log-odds of {fact} against {foil}: positive for {fact}, negative for "
            f"{foil}.")


def shade_signed(method: str, contrast: str | None) -> bool:
    """Whether the shading shows negative weights (a contrastive erasure does: they speak for the foil)."""
    return M.get(method).signed_with(contrast)


@st.fragment
def inspect_panel(info, probabilities: dict, text: str, key: str, window=None) -> None:
    """Inspect's section: why the checkpoint predicts its label rather than another (the runner-up by default),
    by one contrastive method, the words shaded. Computed when opened (a job of the model worker, cached)."""
    if not probabilities:
        return
    ranked = sorted(probabilities, key=probabilities.get, reverse=True)
    label = ranked[0]
    box = st.expander(f"Why {label} rather than another label?", key=f"{key}_contrast_open", on_change="rerun")
    if not box.open:
        return
    with box:
        read = w.reading(info, text)
        if read is None or read.n == 0:
            return
        ways = [m for m in M.names(reference=False) if M.get(m).contrastive and m not in read.not_applicable]
        c1, c2 = st.columns(2)
        foil = c1.selectbox("Rather than", options([ranked], without=label), key=f"{key}_contrast",
                            format_func=lambda x: label_of(x, ranked[1] if len(ranked) > 1 else None), help=HELP)
        m = c2.selectbox("Explained by", ways, index=ways.index(DEFAULT_METHOD) if DEFAULT_METHOD in ways else 0,
                         key=f"{key}_contrast_method", format_func=M.labels().get)
        try:
            with st.spinner("Explaining…"):
                a = work.explanation(info.path, text, m, contrast=foil)
        except Exception as e:  # noqa: BLE001 - extra information; the view stands without it
            st.caption(f"{w.md_escape(M.get(m).label)} could not explain this: {w.md_escape(e)}")
            return
        scores = np.asarray(getattr(a, "scores", a), dtype=float)
        fact, other, d = used({m: a}) or (label, str(foil), float("nan"))
        shown = scores if shade_signed(m, foil) else np.clip(scores, 0, None)
        st.html(viz.token_highlight_html(list(read.tokens), shown, label=f"{M.get(m).label}: {fact} rather than "
                                         f"{other}", window=window))
        p, q = probabilities.get(fact, float("nan")), probabilities.get(other, float("nan"))
        st.caption(w.md_escape(f"{caption({m: a})} p({fact}) = {p:.3f}, p({other}) = {q:.3f}."))
