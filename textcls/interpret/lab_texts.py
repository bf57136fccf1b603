"""The Lab's words, with no torch: a short text per demo that a teacher can read aloud (`DEMO_TEXT`), the demos'
default inputs, and the AGCNN gate demo's results in words (`gate_title`, `gate_closure_lines`). The numbers come
from textcls.interpret.lab, which re-exports these."""
from __future__ import annotations

import re
from typing import Any

DEMO_TEXT = {
    "activations": (
        "Each layer multiplies its inputs by random weights and adds them up, so without care the numbers grow "
        "layer after layer. ReLU lets every positive number through unchanged, so by layer ten the activations "
        "are astronomically large and their spread differs wildly between layers. NLReLU takes the logarithm of "
        "what ReLU lets through: large values are squeezed, and the mean and variance stay in a narrow band in "
        "every layer. SELU is built to keep them near 0 and 1, but only with its own small weights; tanh "
        "squeezes everything into minus one to one."),
    "negation": (
        "A model that only counts words would call 'not good' positive, because 'good' is there. Compare the "
        "probability of the positive class as we add 'not' and 'very': a model that understands context moves "
        "down for 'not good' and less far for 'not very good'. The shading shows where each model looks."),
    "hcan": (
        "HCAN reads every sentence twice, with two attention heads side by side. The first branch gathers "
        "content. The second produces numbers between minus one and one and is multiplied with the first: it "
        "works like a dimmer that can also flip a signal. Where the product is small, the second branch has "
        "switched that word's information off."),
    "gates": (
        "An attention-gated CNN first finds n-gram features, then a second small convolution looks at the "
        "neighbourhood of each feature and decides how much of it to let through. A gate of zero silences a "
        "feature before the max-pool can pick it; switching all gates to one shows what the plain CNN would "
        "have said."),
}

NEGATION_SENTENCES = ("good", "not good", "very good", "not very good", "bad", "not bad", "very bad",
                      "not very bad")


def gate_title(name: str) -> str:
    """An AGCNN gate map's name as a class reads it: gate_h2_k3 -> "width-3 gate on 2-word features"."""
    h, k = re.search(r"_h(\d+)", name), re.search(r"_k(\d+)", name)
    if not (h and k):
        return name
    g = re.search(r"_g(\d+)$", name)
    return (f"width-{k.group(1)} gate on {h.group(1)}-word features" + (f" (gate {g.group(1)})" if g else ""))


GATE_SENTENCE = "the acting is superb , but the plot is not very good ."   # mixed: a gate can move it
TVD_WORDS = ("how far the label probabilities move (total variation distance: half the sum of their absolute "
             "changes; 0 = not at all, 1 = all the way)")


def gate_closure_lines(res: dict[str, Any]) -> list[str]:
    """gate_closures in words for a class: which gates matter, what forcing them open changes, and the one
    closed gate whose feature the model switches off."""
    labels, p = res["labels"], res["probs"]
    j = res["label"]
    top = max(res["maps"], key=lambda r: r["tvd_open"])
    lines = [f"The model says {labels[j]} ({100 * p[j]:.1f} %). Forcing open every {top['title']} - letting its "
             f"features through as a plain CNN would - moves that to {100 * top['probs_open'][j]:.1f} %: "
             f"the largest change of the {len(res['maps'])} gate maps."]
    if p[j] > 0.98:
        lines.append("The prediction is nearly certain, so no gate can move it far: try a sentence with mixed "
                     "feelings (e.g. \"the acting is superb , but the plot is not very good .\").")
    b = res["best"]
    if b is not None:
        lines.append(f"One gate the model closes: filter {b['filter'] + 1} of the {top['h']}-word features fires on "
                     f"\"{b['ngram']}\" (activation {b['activation']:.2f}) and its gate is 0, so the feature never "
                     f"reaches the max-pool. Opening only that gate moves {labels[j]} from {100 * p[j]:.1f} % to "
                     f"{100 * b['probs'][j]:.1f} %.")
    else:
        lines.append(f"No {top['title']} is fully closed on this sentence: its gates dim features without "
                     "switching any off.")
    return lines


__all__ = ["DEMO_TEXT", "GATE_SENTENCE", "NEGATION_SENTENCES", "TVD_WORDS", "gate_closure_lines", "gate_title"]
