"""What the interpretation library hands back, and the names of its options, with no torch (numpy only): the
records a page reads when the model worker (textcls.serve) computed them in another process - an `Attribution`
(one explanation of one text), a `SliceReport` (faithfulness over a data set), an `EditComparison` (a word
edited) - the baselines and removals a method may use, the kinds of intervention a model may offer, and
`edit_tokens` (the text a counterfactual edit makes). The modules that compute them re-export them."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

from textcls.interpret.rankings import tvd

BASELINES = ("pad", "unk", "zero")
REMOVALS = ("delete", "pad", "unk")



UNIFORM, PERMUTED, HEAD, FILTER, GATES_ON, GATES_OFF, ACTIVATION = (
    "Uniform attention", "Permuted attention", "Ablate a head", "Zero a filter", "Force gates to 1",
    "Force gates to 0", "Swap the activation")



@dataclass
class Attribution:
    """Per-token attribution of one example."""

    method: str
    scores: np.ndarray                 # (n,) one per real token, in Prediction.tokens order
    grid: np.ndarray                   # shaped like the example's ids: (L,) or (S, W); 0 at pads
    target: int                        # the class attributed
    output: float                      # F(x) for the target (probability or logit, see output_kind)
    output_kind: str = "prob"
    baseline: str | None = None        # pad / unk / zero; None for baseline-free methods
    baseline_output: float | None = None  # F(baseline)
    delta: float | None = None         # IG: sum(scores) - (F(x) - F(baseline))
    n_steps: int | None = None         # IG: steps used
    converged: bool | None = None      # IG: |delta| within tolerance
    tokens: list[str] | None = None
    label: str | None = None           # name of the target class, when known
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return float(self.scores.sum())

    @property
    def output_difference(self) -> float | None:
        return None if self.baseline_output is None else self.output - self.baseline_output

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["scores"] = self.scores.tolist()
        d["grid"] = self.grid.tolist()
        return d



@dataclass
class SliceReport:
    """evaluate_slice's result: one row per explanation method (means over the texts, and a bootstrap 95%
    interval for each AOPC) and the model-level attention tests, plus every per-example number."""

    rows: list[dict[str, Any]]
    model_row: dict[str, Any]
    per_example: list[dict[str, Any]]
    settings: dict[str, Any]
    seconds: float
    timings: dict[str, float] = field(default_factory=dict)

    def frame(self):
        import pandas as pd
        return pd.DataFrame(self.rows)



def edit_tokens(tokens: Sequence[str], index: int, replacement: str | None = None) -> str:
    """The text of `tokens` with token `index` replaced (or deleted when replacement is None/empty)."""
    if not 0 <= index < len(tokens):
        raise IndexError(f"token index {index} out of range for {len(tokens)} tokens")
    toks = list(tokens)
    if replacement:
        toks[index] = replacement
    else:
        del toks[index]
    return " ".join(toks)


@dataclass
class EditComparison:
    model: str
    text_before: str
    text_after: str
    tokens_before: list[str] | None
    tokens_after: list[str] | None
    probs_before: np.ndarray
    probs_after: np.ndarray
    labels: list[str] | None
    importance_before: np.ndarray | None = None   # the model's own attention importance (attention module)
    importance_after: np.ndarray | None = None
    maps_before: dict[str, np.ndarray] = field(default_factory=dict)
    maps_after: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def label_before(self) -> int:
        return int(np.argmax(self.probs_before))

    @property
    def label_after(self) -> int:
        return int(np.argmax(self.probs_after))

    @property
    def flipped(self) -> bool:
        return self.label_before != self.label_after

    @property
    def tvd(self) -> float:
        return float(tvd(self.probs_before, self.probs_after))



__all__ = ["ACTIVATION", "Attribution", "BASELINES", "EditComparison", "FILTER", "GATES_OFF", "GATES_ON", "HEAD",
           "PERMUTED", "REMOVALS", "SliceReport", "UNIFORM", "edit_tokens"]
