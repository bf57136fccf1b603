"""The lesson step "A known answer": the planted-shortcut test's shipped results (textcls.interpret.shortcuts,
docs/results_shortcuts/) - which explanation method ranks first the word that decides the label by construction.
Registers its step kind, "shortcut", with textcls.teach.steps.KINDS."""
from __future__ import annotations

from pathlib import Path

from textcls.teach.steps import KINDS, Library, Missing, Step, StepResult

SHORTCUT_RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results_shortcuts"


def _shortcut(step: Step, lib: Library, value: float | None) -> StepResult:
    """The planted-shortcut test's shipped results (textcls.interpret.shortcuts; docs/results_shortcuts/): per
    method and model, how often the word that decides the label by construction is ranked first."""
    from textcls.interpret.methods import labels
    from textcls.interpret.shortcuts import load_results
    from textcls.viz.benchmarks import shortcut_figure
    inp = step.input
    f = SHORTCUT_RESULTS / f"{inp.get('data', 'sst2')}.jsonl"
    if not f.is_file():
        raise Missing(f"The planted-shortcut results are not here ({f.name}); make them with `python -m textcls "
                      "shortcuts --results ...`.")
    keep = set(inp.get("methods") or ())
    rows = [r for r in load_results(f) if not keep or r["method"] in keep]
    if not rows:
        raise Missing("The planted-shortcut results have none of this step's methods.")
    notes = []
    for model in dict.fromkeys(str(r.get("model")) for r in rows):
        mine = [r for r in rows if str(r.get("model")) == model]
        found = [labels().get(r["method"], r["method"]) for r in mine if r["shortcut_top1"] >= 0.9]
        missed = [labels().get(r["method"], r["method"]) for r in mine if r["shortcut_top1"] < 0.5]
        r0 = mine[0]
        notes.append(f"{model}: follows the planted word (accuracy {r0.get('accuracy_with_token', float('nan')):.2f} "
                     f"with it); ranked first in at least 90 % of {r0['n']} texts by "
                     f"{', '.join(found) or 'no method'}; in under half by {', '.join(missed) or 'no method'} "
                     f"(chance: {r0.get('chance_top1', float('nan')):.2f}).")
    fig = shortcut_figure(rows, labels(), inp.get("title", "Which explanation finds the word that decides the label"))
    return StepResult([fig], notes, input="sst2 with a made-up word planted in a fifth of the training texts; "
                                          "test texts that carry it", used=sorted({str(r.get("model")) for r in rows}))


KINDS["shortcut"] = _shortcut
