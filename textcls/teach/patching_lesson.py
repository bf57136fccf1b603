"""The lesson "Where does 'not good' become negative?": activation patching on a minimal pair
(textcls.interpret.patching) in the shipped Transformer, ACT, AGCNN (its maps against its gates) and MiniLM, with
attribution patching beside it where it fails. Registers its step kind, "patching", with textcls.teach.steps.KINDS.

Also the one drawing of a patching grid (`grid_figure`: rows x columns, the restored share on a diverging scale
centred at 0, the numbers in the cells, the tokens on the x axis) and the sentences that go with it
(`prediction_lines`, `cell_lines`, `agreement_line`), which the Patch page draws too.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from textcls.teach.steps import KINDS, Lesson, Library, Missing, Step, StepResult
from textcls.viz.style import FigureOut, esc, short, style_figure

# the restored share: 1 (the cell brings the clean decision back) in blue, 0 white, -1 (pushes the other way) in
# red; values beyond +-1 saturate (the number in the cell says how far)
SCALE = [[0.0, "#b2182b"], [0.25, "#ef8a62"], [0.5, "#ffffff"], [0.75, "#67a9cf"], [1.0, "#1d5fa0"]]
WHAT = {"restored": "activation patching: share restored",
        "attribution": "attribution patching: first-order estimate"}
AGREES = 0.8            # Pearson at or above: the estimate ranks and sizes the cells like activation patching
FAILS_BECAUSE = ("Attribution patching is a first-order estimate: it misses where the model is not near-linear "
                 "between the two runs - a saturated or switching softmax, a ReLU or max-pool that switches, layer "
                 "norms whose scale moves, paths that cancel (AtP*, Kramar et al. 2024).")


def changed_columns(r) -> set[str]:
    """The column labels of the words where the two texts differ ("not/very")."""
    return {f"{r.clean_tokens[i]}/{r.corrupt_tokens[i]}" for i in r.differing
            if i < len(r.clean_tokens) and i < len(r.corrupt_tokens)}


def _values(r, which: str) -> np.ndarray:
    z = r.restored if which == "restored" else r.attribution
    if z is None:
        raise ValueError("this result has no attribution patching (it was not asked for)")
    return np.asarray(z, dtype=float)


def grid_figure(r, which: str = "restored", title: str | None = None, name: str = "") -> FigureOut:
    """One patching grid of a PatchResult as a heatmap: `which` = "restored" (activation patching) or
    "attribution" (its first-order estimate, on the same scale). Blank cells do not apply; the "all" column (the
    whole row patched) is set off by a line; the changed words' columns are in bold."""
    z = _values(r, which)
    R, C = z.shape
    changed = changed_columns(r)
    ticks = [f"<b>{esc(short(c, 18))}</b>" if c in changed or c == "all" else esc(short(c, 18)) for c in r.columns]
    text = [["" if not np.isfinite(v) else _f(v) for v in row] for row in z]
    other = _values(r, "attribution" if which == "restored" else "restored") if r.attribution is not None else None
    other_name = "attribution estimate" if which == "restored" else "activation patching"
    custom = [[[esc(r.rows[i]), esc(r.columns[j]),
                "n/a" if other is None or not np.isfinite(other[i, j]) else f"{other[i, j]:.3f}"]
               for j in range(C)] for i in range(R)]
    width = max(len(c) for c in r.columns) if r.columns else 4
    font = 13 if C <= 9 and width <= 12 else 11
    fig = go.Figure(go.Heatmap(
        z=z, x=list(range(C)), y=list(range(R)), text=text, texttemplate="%{text}", textfont=dict(size=font),
        customdata=custom, colorscale=SCALE, zmid=0, zmin=-1, zmax=1, xgap=1, ygap=1, hoverongaps=False,
        colorbar=dict(thickness=10, len=min(1.0, max(0.6, 0.12 * R)), tickvals=[-1, 0, 1], ticktext=["-1", "0", "1"],
                      xpad=4),
        hovertemplate=f"%{{customdata[0]}} · %{{customdata[1]}}<br>{esc(WHAT[which])}: %{{z:.3f}}"
                      f"<br>{other_name}: %{{customdata[2]}}<extra></extra>"))
    fig.add_vline(x=C - 1.5, line=dict(color="#222", width=2))        # "all": the whole row, not one unit
    title = title or f"{name + ': ' if name else ''}{WHAT[which]}"
    style_figure(fig, title, int(130 + max(30, min(48, 480 // max(R, 1))) * R), top=60)
    fig.update_layout(plot_bgcolor="#e8e8e8")                           # a cell that does not apply: grey, not 0
    fig.update_xaxes(tickvals=list(range(C)), ticktext=ticks, title=esc(r.column_axis), side="bottom",
                     tickangle=0 if C * max(6, min(width, 18)) <= 90 else -35, showgrid=False)
    fig.update_yaxes(tickvals=list(range(R)), ticktext=[esc(x) for x in r.rows], title=esc(r.row_axis),
                     autorange="reversed", showgrid=False)
    table = pd.DataFrame([{r.row_axis: r.rows[i], r.column_axis: r.columns[j], which: _num(z[i, j])}
                          for i in range(R) for j in range(C)])
    if which == "restored":
        caption = (f"Clean '{r.clean}' patched into corrupted '{r.corrupt}'. Rows: {r.row_axis}; columns: "
                   f"{r.column_axis}; 'all' patches the whole row. Blue: the cell brings the clean decision back "
                   "(1 = all of it), red: it pushes the other way; beyond +-1 the colour saturates and the number "
                   "says how far. Grey: the cell does not apply.")
    else:
        caption = ("The first-order estimate of the same share, on the same scale: (a_clean - a_corrupt) . dLD/da "
                   "at the corrupted run, summed over the cell - one backward pass for the whole grid.")
    return FigureOut(f"patch_{r.model}_{r.by}_{which}", title, fig, table, caption=caption,
                     meta={"rows": list(r.rows), "columns": list(r.columns), "by": r.by, "which": which})


def _f(v: float) -> str:
    """Two decimals, never "-0.00"."""
    out = f"{float(v):.2f}"
    return "0.00" if out == "-0.00" else out


def capital(line: str) -> str:
    """A note as a sentence: its first letter capital, unless it starts with a symbol ("g: ...", "C^h ...")."""
    return line[:1].upper() + line[1:] if line[1:2].isalpha() else line


def _num(v) -> float | None:
    v = float(v)
    return v if np.isfinite(v) else None


def _p(pred: dict[str, Any]) -> str:
    return f"{pred['label']} ({_f(pred['probabilities'][pred['label']])})"


def prediction_lines(r, name: str = "") -> list[str]:
    """The two predictions and the logit difference the shares are of."""
    who = f"{name} " if name else ""
    t, f = r.labels[r.target], r.labels[r.foil]
    return [f"{who}reads '{r.clean}' (clean) as {_p(r.clean_prediction)} and '{r.corrupt}' (corrupted) as "
            f"{_p(r.corrupt_prediction)}.",
            f"LD = logit[{t}] - logit[{f}] is {_f(r.ld_clean)} on the clean text and {_f(r.ld_corrupt)} on the "
            f"corrupted one; a cell's share is how much of that gap it closes."]


def cell_lines(r, max_rows: int = 8) -> list[str]:
    """Where the grid restores most: per row its strongest cell and the whole row (up to `max_rows` rows), else
    the strongest cells of the grid."""
    z = np.asarray(r.restored, dtype=float)
    body = z[:, :-1]
    if not np.isfinite(body).any():
        return ["No cell of this grid applies to this pair."]
    out = []
    if len(r.rows) <= max_rows:
        parts = []
        for i, row in enumerate(r.rows):
            if not np.isfinite(body[i]).any():
                continue
            j = int(np.nanargmax(body[i]))
            parts.append(f"{row}: '{r.columns[j]}' {_f(body[i, j])} (whole row {_f(z[i, -1])})")
        out.append("Strongest cell per row - " + "; ".join(parts) + ".")
    else:
        flat = np.where(np.isfinite(body), body, -np.inf).ravel()
        top = [k for k in np.argsort(-flat, kind="stable")[:3] if np.isfinite(flat[k])]
        cells = "; ".join(f"{r.rows[k // body.shape[1]]} at '{r.columns[k % body.shape[1]]}' {_f(flat[k])}"
                          for k in top)
        out.append(f"The strongest cells: {cells}; every other cell restores {_f(flat[top[-1]])} or less.")
    return out


def agreement_line(r) -> str | None:
    """Attribution patching against activation patching on this grid, and the cell where it is furthest off."""
    a = r.agreement or {}
    if r.attribution is None or not a.get("cells"):
        return None
    pearson, spearman = a.get("pearson"), a.get("spearman")
    if pearson is None or not np.isfinite(pearson):
        return (f"Attribution patching over {int(a['cells'])} cells: no correlation can be computed (the cells do "
                "not vary).")
    z, est = np.asarray(r.restored, float)[:, :-1], np.asarray(r.attribution, float)[:, :-1]
    gap = np.where(np.isfinite(z) & np.isfinite(est), np.abs(est - z), -1.0)
    i, j = np.unravel_index(int(np.argmax(gap)), gap.shape)
    verdict = "agrees with" if pearson >= AGREES else "does not agree with"
    return (f"Attribution patching {verdict} activation patching here: Pearson {_f(pearson)}, Spearman "
            f"{_f(spearman)} over {int(a['cells'])} cells ('all' left out); furthest off at {r.rows[i]} / "
            f"'{r.columns[j]}': {_f(est[i, j])} estimated for {_f(z[i, j])}.")


# ---------------------------------------------------------------- the step kind


def _patching(step: Step, lib: Library, value: float | None) -> StepResult:
    """One checkpoint, one minimal pair, one or more grids (`input["grids"]`); with `input["attribution"]` the
    attribution-patching grid beside each."""
    from textcls.interpret.patching import PairError, patch_pair
    inp = step.input
    info, pred = lib.predictor(*inp["checkpoint"])
    figs, notes = [], []
    for k, by in enumerate(inp.get("grids", ("layer",))):
        try:
            r = patch_pair(pred, inp["clean"], inp["corrupt"], by, attribution=True)
        except PairError as e:
            raise Missing(f"{info.name}: {e}") from None
        if k == 0:
            notes += prediction_lines(r, info.name)
        what = (inp.get("titles") or {}).get(by)
        figs.append(grid_figure(r, title=f"{info.name}: {what or WHAT['restored']}"))
        if inp.get("attribution"):
            figs.append(grid_figure(r, "attribution", title=f"{info.name}: {WHAT['attribution']}"))
        agree = agreement_line(r)
        lines = cell_lines(r) + ([agree] if agree else []) + [capital(n) for n in r.notes]
        notes += [f"{what[0].upper()}{what[1:]}: {line[:1].lower() + line[1:]}" if what else line
                  for line in lines]
    return StepResult(figs, notes, input=f"clean: {inp['clean']} | corrupted: {inp['corrupt']}", used=[info.name])


KINDS["patching"] = _patching

CLEAN, CORRUPT = "the movie was not good", "the movie was very good"
PAIR = {"clean": CLEAN, "corrupt": CORRUPT}

PATCHING = Lesson("patching", "Where does 'not good' become negative?",
                  "Activation patching on a minimal pair: run 'the movie was very good' again with one piece of the "
                  "run on 'the movie was not good' pasted in, and see how much of the negative decision comes back - "
                  "layer by layer, word by word, in four models.", (
    Step("Paste one cell, watch the decision come back",
         "Two sentences that differ in one word: 'the movie was not good' and 'the movie was very good'. The "
         "Transformer calls the first negative and the second positive. Now we run the second sentence again, but "
         "at one place inside the model - one layer, one word - we paste in what the model computed for the first "
         "sentence. If the decision swings back to negative, that place carries the difference. Each cell shows the "
         "share of the decision that comes back: 1 is all of it, 0 is none. The last column, 'all', pastes the "
         "whole layer at once.",
         "patching", {"checkpoint": ("transformer", "sst2"), **PAIR, "grids": ("layer",)},
         "Follow the 'not/very' column down the rows. Up to which layer does that one word carry almost the whole "
         "decision? In the last layer, how much do the other words carry? Every 'all' cell reads 1: a whole layer "
         "carries everything the model will use.",
         "In the last layer no single word brings the whole decision back, yet the whole row does. What does that "
         "say about how the model reads the sentence at the end?"),
    Step("Convolutions keep it local",
         "ACT mixes words with attentive convolutions: each position looks at a small window of its neighbours, "
         "guided by attention. Same pair, same experiment. There is one extra column, g: the top layer's summary of "
         "the whole sentence, pooled from its feature maps, which the classifier reads beside the words.",
         "patching", {"checkpoint": ("act", "sst2"), **PAIR, "grids": ("layer",)},
         "Does the difference stay at 'not' in every layer? Which neighbour picks up some of it - the word before "
         "it, where a window over 'was not' starts? How much does the g column carry?",
         "The Transformer spread the difference over the sentence in its last layer. Why would a convolution keep "
         "it at the word that changed?"),
    Step("Through the maps or through the gates?",
         "AGCNN runs convolutions of five widths side by side - windows of one to five words - and a gate, "
         "computed from the same words, weighs every feature. Two grids. In the first, a cell pastes one window "
         "width's feature map at one start word; these rows are parallel branches, so their 'all' cells add up to "
         "1. In the second, a cell pastes only a gate, and the feature map it weighs stays the corrupted "
         "sentence's.",
         "patching", {"checkpoint": ("agcnn", "sst2"), **PAIR, "grids": ("layer", "position"),
                      "titles": {"layer": "feature maps (window x start word)",
                                 "position": "gates only (gate x start word)"}},
         "In the first grid: which window width carries the largest share, and at which word does it start? In the "
         "second: does any gate cell bring the decision back at all?",
         "AGCNN is built around its gates. If pasting the gates brings almost nothing back, what carries 'not' to "
         "the classifier - and what are the gates for?"),
    Step("A pretrained encoder gathers it at the end",
         "MiniLM is a pretrained encoder of six layers, fine-tuned on SST-2. Its classifier reads one position "
         "only, the [CLS] piece in front of the sentence. The first grid is activation patching, as before. The "
         "second is attribution patching: a cheap estimate of the same shares - the difference in activations "
         "times the gradient, one backward pass for the whole grid instead of one run per cell.",
         "patching", {"checkpoint": ("hf:BertForSequenceClassification", "sst2"), **PAIR, "grids": ("layer",),
                      "attribution": True},
         "For how many layers does the difference stay at 'not'? In which layer does [CLS] take it over? Then "
         "compare the two grids: where does the estimate agree, and where does it miss a cell that brings the "
         "whole decision back?",
         "The estimate misses where pasting finds the whole decision. When would you trust a gradient shortcut, "
         "and how would you check it?"),
))

__all__ = ["AGREES", "FAILS_BECAUSE", "PATCHING", "agreement_line", "capital", "cell_lines", "changed_columns",
           "grid_figure", "prediction_lines"]
