"""The lesson "What attention weights leave out": from the weights to the value vectors and the residual
stream, with the context-mixing explanations (textcls.interpret.context_mixing) and their faithfulness on the
sentence as evidence. Registers its step kind, "context_mixing", with textcls.teach.steps.KINDS."""
from __future__ import annotations

from textcls.teach.steps import KINDS, Lesson, Library, Missing, Step, StepResult, _quote, _words


def _context_mixing(step: Step, lib: Library, value: float | None) -> StepResult:
    """One checkpoint, one text: the methods of `input["methods"]` side by side, each with its AOPC line."""
    from textcls.interpret.context_mixing.compare import side_by_side
    from textcls.viz.context_mixing import side_by_side_figure
    inp = step.input
    info, pred = lib.predictor(*inp["checkpoint"])
    try:
        s = side_by_side(pred, inp["text"], tuple(inp["methods"]))
    except ValueError as e:
        raise Missing(f"{info.name}: {e}") from None
    notes = [f"{info.name} predicts {s.label}."] if s.label else []
    for m in s.weights:              # each method's AOPC line once: here, not again in the figure's caption
        notes.append(f"{s.line(m)}; its three heaviest words: {_words(s.words, abs(s.weights[m]))}.")
    notes += [f"{s.line(m)}." for m in s.skipped]          # why a method does not apply to this model
    from textcls.interpret.rankings import ranked
    order = ranked({m: f["aopc_comprehensiveness"] for m, f in s.faithfulness.items()})
    if " > " not in order and " = " in order:
        notes.append(f"On this sentence the rankings tie on comprehensiveness AOPC ({order}): none wins here.")
    else:
        notes.append(f"On this sentence, by comprehensiveness AOPC (ties within 0.0005 are ties): {order}.")
    return StepResult([side_by_side_figure(s)], notes, input=_quote(inp["text"]), used=[info.name])


KINDS["context_mixing"] = _context_mixing

TEXT = "the acting was great but the plot was boring"
MINILM = ("hf:BertForSequenceClassification", "sst2")

LEAVE_OUT = Lesson("values", "What attention weights leave out",
                   "An attention weight says how much of a word's value vector is mixed in, not how large that "
                   "vector is, and nothing of the residual stream. Methods that count both, scored by what the "
                   "model does when words are removed.", (
    Step("A weight is not a contribution",
         "The [CLS] position of MiniLM mixes in every word with a weight. But what it receives is the weight "
         "times the word's value vector, and some value vectors are far longer than others. Kobayashi's norm "
         "multiplies them out: the length of what actually arrives.",
         "context_mixing", {"checkpoint": MINILM, "text": TEXT, "methods": ("attention", "norm")},
         "Which words gain and which lose when the weight is multiplied by the size of the value vector? Read "
         "each row's comprehensiveness: higher means removing its top words hurts the prediction more.",
         "If a word receives a large weight but carries a tiny vector, did the model look at it?"),
    Step("The residual stream",
         "Each layer adds its attention output to what the position already held - the residual stream - and a "
         "layer norm rescales the sum. Rollout multiplies the weights through the layers; ALTI and GlobEnc "
         "count the residual and the layer norm in each layer before they multiply.",
         "context_mixing", {"checkpoint": MINILM, "text": TEXT, "methods": ("rollout", "globenc", "alti")},
         "Is rollout flatter than ALTI? Which row puts its weight on the words a reader would name?",
         "Why would a method that ignores the residual spread its weight evenly over the words?"),
    Step("Which explanation to trust",
         "Five answers to one question, side by side on one scale: raw attention, rollout, the norm, ALTI and "
         "value zeroing (which zeroes one word's value vector and measures how far the output moves). The notes "
         "say which ranking the model bears out on this sentence; docs/faithfulness.md says which over a whole "
         "test split.",
         "context_mixing", {"checkpoint": MINILM, "text": TEXT,
                            "methods": ("attention", "rollout", "norm", "alti", "value_zeroing")},
         "Compare the comprehensiveness in each row's label. Do the best rows agree on the top word?",
         "One sentence can mislead: what would you check before saying one method is better in general?"),
    Step("A model without self-attention",
         "ACT mixes neighbouring words by convolution; its only attention is the final pooling over words, and "
         "there the norm is the weight times the length of each word's vector. The other methods do not apply, "
         "and the notes say why.",
         "context_mixing", {"checkpoint": ("act", "sst2"), "text": TEXT,
                            "methods": ("attention", "norm", "alti")},
         "Does the norm reorder ACT's words? Read why ALTI is missing.",
         "What does a method need from a model before its numbers mean anything?"),
))

__all__ = ["LEAVE_OUT"]
