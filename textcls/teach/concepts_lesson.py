"""The lesson "What did the model learn, and from which sentences?": TCAV (is a concept - a few sentences - a direction
the model's layers push a class along, textcls.interpret.tcav) and training-data attribution (which training
sentences made a prediction, textcls.interpret.influence), both through the interpreter registry. Registers its step
kinds, "tcav" and "influence", with textcls.teach.steps.KINDS."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from textcls.teach.steps import KINDS, Lesson, Library, Missing, Step, StepResult
from textcls.viz.style import FigureOut, esc, short, style_figure


def _run(lib: Library, checkpoint: tuple[str, str], name: str, inputs: dict, options: dict):
    """(the checkpoint's name, the interpreter's result), or Missing with its one line."""
    from textcls.interpret import interpreters
    info, p = lib.predictor(*checkpoint)
    why = interpreters.why_not(p, name)
    if why is not None:
        raise Missing(f"{info.name}: {why}")
    try:
        return info.name, interpreters.run(p, name, inputs, options)
    except interpreters.InterpreterError as e:
        raise Missing(f"{info.name}: {e}") from None


def _tcav(step: Step, lib: Library, value: float | None) -> StepResult:
    """TCAV of one shipped concept for one class: per layer the concept's score against random directions."""
    from textcls.viz.concepts import tcav_figure
    inp = step.input
    name, r = _run(lib, inp["checkpoint"], "tcav", {"concept": inp["concept"], "limit": inp.get("limit", 500)},
                   {"label": inp["label"], "runs": inp.get("runs", 15), "layer": inp.get("layer", "all")})
    notes = []
    for x in r.rows:
        verdict = (f"{x.verdict} (p = {x.p_value:.2g})" if x.significant
                   else "not significant (p > 0.05): no different from a random direction")
        notes.append(f"{name}, {x.layer}: the concept '{inp['concept']}' scores {x.score_mean:.2f} for class "
                     f"{x.label} against {x.random_mean:.2f} for random directions; {verdict}. The concept's "
                     f"direction separates its texts from random ones with accuracy {x.accuracy_mean:.2f}.")
    return StepResult([tcav_figure(r, inp["label"])], notes,
                      input=f"{r.n_concept} sentences of the concept '{inp['concept']}' "
                            f"(textcls/data/concepts/{inp['concept']}.txt); {r.n_texts} sst2 test texts",
                      used=[name])


def influence_figure(r, title: str) -> FigureOut:
    """The proponents (blue, > 0) and opponents (red, < 0) of a prediction as horizontal bars, each labelled with
    its training sentence and gold label."""
    rows = [*r.proponents, *reversed(r.opponents)][::-1]
    labels = [f"{esc(short(e.text, 70))} [{esc(e.label)}]" for e in rows]
    fig = go.Figure(go.Bar(x=[e.score for e in rows], y=list(range(len(rows))), orientation="h",
                           marker_color=["#1d5fa0" if e.score >= 0 else "#b2182b" for e in rows],
                           hovertemplate="%{x:.3g}<extra></extra>"))
    fig.update_yaxes(tickvals=list(range(len(rows))), ticktext=labels, automargin=True)
    fig.update_xaxes(title="TracIn influence on the prediction's loss (> 0: helped it)", zeroline=True)
    style_figure(fig, title, 120 + 26 * len(rows))
    table = pd.DataFrame([{"text": e.text, "label": e.label, "value": e.score} for e in rows])
    how = "cosine" if r.run.normalize else "dot product"
    over = ("at the final weights (no saved epochs)" if r.run.final_only
            else "summed over the saved epochs, each times its learning rate")
    return FigureOut("influence", title, fig, table,
                     f"TracIn (Pruthi et al. 2020): for each training sentence, the {how} of its loss gradient and "
                     f"this prediction's, {over}. Blue: training on it lowered this prediction's loss; red: raised "
                     "it.")


def _influence(step: Step, lib: Library, value: float | None) -> StepResult:
    """The training sentences that most helped (proponents) and most opposed (opponents) one prediction."""
    inp = step.input
    from textcls.interpret.influence import SNAPSHOT_FILE
    info, _ = lib.predictor(*inp["checkpoint"])
    epochs = "saved" if (Path(info.path) / SNAPSHOT_FILE).is_file() else "final"    # shipped: trained before
    name, r = _run(lib, inp["checkpoint"], "influence", {"text": inp["text"]},
                   {"top": inp.get("top", 6), "epochs": epochs, "normalize": bool(inp.get("normalize", False))})
    notes = [f"{name} predicts {r.predicted} for '{r.text}' (probability of {r.label}: {r.probability:.2f}). "
             f"Scores over {r.run.over}."]
    for what, group in (("helped most", r.proponents[:3]), ("opposed most", r.opponents[:3])):
        if group:
            notes.append(f"The training sentences that {what}: " + "; ".join(
                f"'{short(e.text, 80)}' ({e.label}, {e.score:+.3g})" for e in group) + ".")
    words = [w for w in inp.get("look_for_words", ()) if any(w in e.text.split() for e in r.proponents)]
    if words:
        notes.append(f"{len(words)} of the words {', '.join(repr(w) for w in inp['look_for_words'])} occur among "
                     f"the proponents: {', '.join(repr(w) for w in words)}.")
    return StepResult([influence_figure(r, f"{name}: which training sentences made '{short(r.text, 40)}' "
                                           f"{r.predicted}")], notes,
                      input=f"'{inp['text']}'; training set: sst2's train split ({r.run.train_size} sentences)",
                      used=[name])


KINDS["tcav"] = _tcav
KINDS["influence"] = _influence

CONCEPTS = Lesson("concepts", "What did the model learn, and from which sentences?",
                  "Two questions about a trained model that no attention map answers: does it use a concept we can "
                  "describe with a few sentences (TCAV), and which training sentences made one of its decisions "
                  "(training-data attribution, TracIn)?", (
    Step("Is 'positive adjectives' a concept the model uses?",
         "A concept is a handful of sentences: here 40 neutral sentences, each with one positive adjective ('the "
         "film was wonderful', ...). At one layer, a linear classifier learns the direction that separates them "
         "from random sentences. Then we ask: for the sentences the model calls positive, does moving along that "
         "direction raise the positive score? The TCAV score is the share where it does. To know whether that "
         "means anything, we do the same 15 times with random sentences instead of the concept and compare (a "
         "t-test).",
         "tcav", {"checkpoint": ("kim_cnn", "sst2"), "concept": "positive", "label": "positive", "runs": 15},
         "How far is the blue bar above the grey one? What does the p-value say?",
         "The concept's sentences were written by us, not taken from the training data. Why can the model still "
         "have a direction for them?"),
    Step("A control: random words",
         "The same test with a concept that means nothing: the same neutral sentences with random words instead "
         "of adjectives. A test that calls this significant would call anything significant.",
         "tcav", {"checkpoint": ("kim_cnn", "sst2"), "concept": "random_words", "label": "positive", "runs": 15},
         "Is the blue bar still far from the grey one? Is the verdict 'not significant'?",
         "TCAV compares against random directions. Why is a control concept still worth running?"),
    Step("Which training sentences taught it that 'not good' is negative?",
         "Now a single decision. TracIn follows training: every time the model learned from a training sentence, "
         "its loss on our sentence went up or down a little - by how much the two sentences' loss gradients point "
         "the same way (here their cosine, so that a few training sentences with huge gradients do not top every "
         "list). Adding those changes over the epochs gives each training sentence a score: blue ones "
         "helped the decision, red ones worked against it. (This shipped model kept no epochs, so we use its final "
         "weights alone: one term of the sum.)",
         "influence", {"checkpoint": ("kim_cnn", "sst2"), "text": "the movie was not good", "top": 6, "normalize": True,
                       "look_for_words": ("not", "n't", "no", "never")},
         "Do the blue sentences contain 'not' or another negation? Are they negative reviews? What are the red "
         "ones?",
         "If most helpers share a word with our sentence, is the model reading negation or just that word?"),
))

__all__ = ["CONCEPTS", "influence_figure"]
