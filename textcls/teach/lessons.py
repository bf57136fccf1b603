"""Guided lessons for a class (the Lessons page lays them out; `textcls.teach.steps` computes and draws a step).

Seven lessons of three or four steps, each for about 20 minutes, from "what does attention compute" to "is
attention an explanation". Every step: a short text to read aloud, a prepared input, one view drawn live by the
library, what to look for, one question for the class. The fixed texts below never state a number a model
produces - they say what to compare; the numbers come from `run_step`'s notes, computed on the input.
Only shipped checkpoints (named by model and data set) and the embedded data (textcls/data/bundled) are used.

`locate(params)` turns a URL's query parameters (`lesson`, `step`, 1-based) into a (lesson, step index), so a
teacher can bookmark a step; `step_params` is the inverse.
"""
from __future__ import annotations

from typing import Mapping

from textcls.teach.presenter import presenter_figure
from textcls.teach.steps import (KINDS, Lesson, Library, Missing, Slider, Step, StepResult, default_library,
    run_step, sample_texts)

SST2 = [("kim_cnn", "sst2"), ("agcnn", "sst2"), ("act", "sst2"), ("transformer", "sst2"), ("lama", "sst2"),
        ("hcan", "sst2")]
BUT = "the acting was great but the plot was boring"
MIXED = "the acting is superb , but the plot is not very good ."   # AGCNN moves on it (interpret.lab.GATE_SENTENCE)
REVIEW = ("imdb_sample", 11)        # a short, mixed review of six sentences in the embedded IMDB sample
TOY = {"tokens": BUT.split(), "scores": [0, 0.5, 0, 2.5, 1.0, 0, 0.5, 0, 2.0],
       "values": [0, 0, 0, 1, 0, 0, 0, 0, -1]}
TEMPERATURE = Slider("Temperature", 0.05, 5.0, 1.0, 0.05,
                     "The scores are divided by the temperature before the softmax.")

WHAT_ATTENTION = Lesson("attention", "What attention computes",
                        "Attention is a weighted average: scores become weights that sum to one, and the temperature "
                        "decides how peaked they are.", (
    Step("Scores become weights",
         "Attention gives every word a score: how relevant is this word to the question the model asks? A softmax "
         "turns the scores into weights that are positive and sum to one. The output is the weighted average of "
         "what the words carry. In this toy, 'great' carries plus one, 'boring' minus one, every other word "
         "nothing.",
         "toy", TOY,
         "Which word has the tallest bar, and how does the weighted average in the title compare with plus one "
         "(only 'great') and zero (all words alike)?",
         "Both 'great' and 'boring' have high scores. Why does the average still lean to one side?",
         slider=TEMPERATURE),
    Step("The temperature",
         "Before the softmax the scores are divided by a temperature. A low temperature exaggerates the "
         "differences: nearly all the weight lands on the best-scoring word. A high temperature flattens them: "
         "every word gets about the same weight and the output becomes a plain average. Move the slider.",
         "toy", TOY,
         "Slide to the left end, then to the right end. Watch the tallest bar and the average in the title; the "
         "notes say how concentrated the weights are.",
         "Which temperature would you want if a single word should decide the review - and what would be lost?",
         slider=Slider("Temperature", 0.05, 5.0, 0.2, 0.05, TEMPERATURE.help)),
    Step("A trained model's weights",
         "Now the same sentence through a trained model. ACT, the attentive convolutional transformer, ends with a "
         "global attention over the words: one weight per word, summing to one, exactly the weighted average of "
         "the toy. Nobody chose its scores; training did.",
         "view", {"checkpoint": ("act", "sst2"), "text": BUT, "view": "ACT-T4"},
         "Is the shading peaked on one or two words, like the toy at a low temperature, or spread out like a high "
         "one? Read the concentration line under the figure.",
         "The model's prediction is in the notes. Do the darkest words explain it?"),
))

ACT_VS_TRANSFORMER = Lesson("act-transformer", "ACT against the Transformer on one sentence",
                            "The ACT paper's Table 4: the same sentence, the words each model weighs most, one above "
                            "the other.", (
    Step("The Transformer's reading",
         "A Transformer encoder lets every word look at every other word, layer after layer. Its own weight per "
         "word, shaded here, is what its last step reads. Listen to the sentence and guess which words a "
         "sentiment model needs.",
         "view", {"checkpoint": ("transformer", "sst2"), "text": BUT, "view": "ACT-T4"},
         "Which words are darkest? Are they the sentiment words, or function words like 'the' and 'was'?",
         "Before we look at ACT: which two words would you shade darkest yourself?"),
    Step("ACT's reading",
         "ACT replaces the Transformer's self-attention with attentive convolutions and ends with one global "
         "attention over the words. The paper shows its weights under the Transformer's, sentence by sentence.",
         "view", {"checkpoint": ("act", "sst2"), "text": BUT, "view": "ACT-T4"},
         "Compare with the previous step: the same words darkest, or others? Is one of the two models more "
         "peaked (the concentration line)?",
         "If two models predict the same label from different words, which one would you trust, and why?"),
    Step("One above the other",
         "Here is the paper's layout: the Transformer's row above ACT's, and two more models for company. The "
         "arrow gives each model's prediction.",
         "reasons", {"checkpoints": [("transformer", "sst2"), ("act", "sst2"), ("lama", "sst2")], "text": BUT,
                     "title": "The same sentence, each model's own weights"},
         "Where do the rows agree, where do they differ? Does 'but' get any weight?",
         "The sentence says something good and something bad. Which part does each model follow?"),
    Step("A negated sentence",
         "A harder case: a negation. A model that reads words one by one sees 'good'; a model that reads context "
         "should see 'not good'.",
         "reasons", {"checkpoints": [("transformer", "sst2"), ("act", "sst2"), ("lama", "sst2")],
                     "text": "the movie is not good", "title": "Each model's weights on a negation"},
         "Does any model put weight on 'not'? Do the predictions in the arrows agree?",
         "Can a model be right about 'not good' while its shading ignores 'not'? What would that tell us?"),
))

GATES = Lesson("gates", "Gates that switch features off (AGCNN)",
               "An attention-gated CNN: a second convolution decides how much of each n-gram feature passes.", (
    Step("Where the gates open",
         "A CNN finds n-gram features: short word patterns. AGCNN adds gates: for each feature at each position a "
         "small convolution looks at the neighbourhood and outputs a number. Zero silences the feature there; one "
         "lets it pass unchanged.",
         "gates", {"checkpoint": ("agcnn", "sst2"), "text": "a turgid little history lesson , humorless and dull",
                   "show": "profile"},
         "Read each row left to right: where is the gate darkest (most open), where palest? Then compare the top of "
         "the colour bar with 1, the gate that lets a feature pass unchanged.",
         "Why would a sentiment model close its gates on 'history lesson' but not on 'dull'? Does it?"),
    Step("A gate that switches a feature off",
         "The averages hide the gates that close completely. On a sentence with mixed feelings we look for them: "
         "we force each family of gates open in turn, keep the one that moves the prediction most, and then open "
         "its closed gates one at a time. The outlined cell is a feature the model found and then switched off.",
         "gates", {"checkpoint": ("agcnn", "sst2"), "text": MIXED, "show": "closures"},
         "Find the dark cells marked off, and the outlined one: which words did that filter fire on? Read the note "
         "below: how far does opening that one gate move the prediction?",
         "Why would a model learn to switch off a feature that fires on praise, in a sentence that ends in a "
         "complaint?"),
    Step("Open every gate",
         "What did the gates change overall? We force every gate to one, which turns AGCNN into a plain CNN with "
         "the same filters, and classify the same sentence again.",
         "gates", {"checkpoint": ("agcnn", "sst2"), "text": MIXED, "show": "open"},
         "Compare the grey bars (as trained) with the red ones (all gates open). How far did the probability move?",
         "On the first sentence ('a turgid little history lesson') the same experiment barely moves the "
         "prediction: were the gates useless there, or was the model simply certain?"),
    Step("Close every gate",
         "The opposite experiment: every gate at zero. No feature reaches the max-pool, so only the classifier's "
         "bias is left.",
         "gates", {"checkpoint": ("agcnn", "sst2"), "text": "a turgid little history lesson , humorless and dull",
                   "show": "closed"},
         "Where do the probabilities go without any feature? That is the model's prior, its answer to nothing.",
         "What does this tell us about reading a model's output on a sentence full of unknown words?"),
    Step("A positive sentence",
         "The same gates on a positive sentence. Do they open on the praise?",
         "gates", {"checkpoint": ("agcnn", "sst2"), "text": "a gripping , beautifully acted film",
                   "show": "profile"},
         "Compare the open positions with the first step's sentence.",
         "Are the gates looking for sentiment words, or for something else?"),
))

NEGATION = Lesson("negation", "Negation and intensity",
                  "Does a model understand 'not' and 'very', or only count words?", (
    Step("Good, not good",
         "A model that only counts words would call 'not good' positive, because 'good' is there. Each cell is "
         "one model's probability that the input is positive: red above one half, blue below.",
         "negation", {"checkpoints": SST2, "sentences": ["good", "not good", "bad", "not bad"],
                      "pairs": [("good", "not good"), ("bad", "not bad")]},
         "Read each row: does the colour change from 'good' to 'not good'? From 'bad' to 'not bad'?",
         "'Not bad' is mildly positive for a person. What do the models make of it?"),
    Step("Very and not very",
         "Intensity: 'very good' should be more positive than 'good', and 'not very good' only a little negative.",
         "negation", {"checkpoints": SST2, "sentences": ["very good", "not very good", "very bad", "not very bad"],
                      "pairs": [("very good", "not very good"), ("very bad", "not very bad")]},
         "Compare with the previous step: is 'very good' redder than 'good' was? Is 'not very good' paler than "
         "'not good'?",
         "Which model would you call the best reader of 'not very'? What would convince you?"),
    Step("Negation inside a sentence",
         "Short inputs are unusual for a model trained on film reviews. The same test inside whole sentences.",
         "negation", {"checkpoints": SST2, "sentences": ["the movie is good", "the movie is not good",
                                                         "a bad film", "not a bad film at all"],
                      "pairs": [("the movie is good", "the movie is not good"), ("a bad film",
                                                                               "not a bad film at all")]},
         "Does 'not a bad film at all' come out positive for any model?",
         "Why might 'not ... at all' be harder than 'not good'?"),
    Step("Where they look on 'not a bad film at all'",
         "Each model's own weight per word on the hardest sentence, one row per model.",
         "reasons", {"checkpoints": SST2, "text": "not a bad film at all",
                     "title": "Where each model looks on a negation"},
         "Which models put weight on 'not', which only on 'bad'?",
         "A model looks at 'not' and still gets it wrong. What else must it do besides looking?"),
))

HCAN_WORDS = Lesson("hcan", "Words and sentences in a review (HCAN)",
                    "A hierarchical model reads words into sentences and sentences into a review, with a weight at "
                    "each level.", (
    Step("Words inside each sentence",
         "HCAN reads a review in two levels. First, inside every sentence, a target attention weighs the words and "
         "sums them into one sentence vector. Each row is a sentence; each word is shaded by its weight within that "
         "sentence.",
         "view", {"checkpoint": ("hcan", "imdb"), "sample": REVIEW, "view": "HCAN-F4", "figures": ["words"]},
         "In each sentence, which words are darkest? Are they the words that carry the opinion? Read the "
         "concentration line: peaked or nearly uniform?",
         "If the shading were nearly uniform, what could we still learn from it, and what not?"),
    Step("Sentences inside the review",
         "Second level: a target attention over the sentences decides how much each sentence counts for the "
         "review. The bars are those weights; they sum to one.",
         "view", {"checkpoint": ("hcan", "imdb"), "sample": REVIEW, "view": "HCAN-F4", "figures": ["sentences"]},
         "Which sentence weighs most? Is it the one with the verdict, or a description of the plot?",
         "The review has praise and doubt in it. Which sentences would you weigh most?"),
    Step("Two branches, one dimmer",
         "Inside each sentence HCAN reads every word twice, with two self-attentions side by side. The second "
         "produces numbers between minus one and one and multiplies the first: a dimmer that can also flip a "
         "signal. Where the product is short, the dimmer switched the word off.",
         "branches", {"checkpoint": ("hcan", "imdb"), "text": "the film looks great . the story is not good ."},
         "Compare the third bar (product) with the first (branch a): which words are dimmed most?",
         "Why might a model want to switch a word off rather than only give it a low attention weight?"),
    Step("Without the sentence level",
         "CAN is the same model with one level only: the review is one long sequence of words. Its target "
         "attention weighs every word of the review against every other.",
         "view", {"checkpoint": ("can", "imdb"), "sample": REVIEW, "view": "HCAN-F4", "figures": ["words"]},
         "Compare with the first step: with the whole review competing for the weight, are the dark words the "
         "same?",
         "What does the sentence level add for a reader of the figure, even where accuracy is about the same?"),
))

EXPLANATION = Lesson("explanation", "Is attention an explanation?",
                     "Attention weights look like an explanation. Three tests ask whether the prediction depends on "
                     "them, and a comparison asks what peaked attention buys.", (
    Step("Shuffle the weights",
         "If the attention weights explain the prediction, moving them should change it. We shuffle the weights "
         "randomly over the same words many times and measure how far the output moves: zero means not at all. "
         "This is Jain and Wallace's permutation test.",
         "attention_tests", {"checkpoints": [("act", "sst2"), ("transformer", "sst2"), ("lama", "sst2")],
                             "text": BUT},
         "How far does each model's box sit from zero? Where is the diamond (uniform attention)?",
         "A model whose output ignores shuffled weights: can its weights explain its decision?"),
    Step("Make the attention uniform",
         "A harsher test: every word gets the same weight, as if the model did not attend at all. If the "
         "prediction stays, this sentence did not need the attention.",
         "attention_tests", {"checkpoints": [("act", "sst2")], "text": BUT, "show": "uniform"},
         "Compare the two bars of each label.",
         "If uniform attention gives the same answer, is the attention wrong, or just not needed here?"),
    Step("Faithful or random?",
         "Another test removes the words the attention ranks highest first and watches the probability of the "
         "predicted label fall. A faithful ranking makes it fall faster than removing words in random order.",
         "erasure", {"checkpoint": ("act", "sst2"), "text": BUT},
         "On the left, is the attention's line above the random line (a bigger drop is better)? On the right, "
         "keeping only the top words, is it below?",
         "The verdict gives p: the share of random orders that do at least as well. What does p = 0.1 tell you, "
         "and what does it not - is 'not shown to beat chance' the same as 'no better than random'?"),
    Step("Peaked or flat, at the same accuracy",
         "Two models can be equally accurate while one spreads its attention almost evenly and another points at a "
         "few words. This step compares every HCAN and CAN checkpoint of the IMDB task that is here over reviews "
         "of the embedded sample: hcan-imdb-flat is HCAN as it was first trained here, hcan-imdb the same "
         "architecture retrained with a fixed scale on its target attention, and any you trained yourself.",
         "compare_attention", {"models": ("hcan", "can"), "data": "imdb", "sample": "imdb_sample", "n": 12},
         "Compare the bar heights (1 = uniform) with the accuracies in the labels. Does more peaked attention "
         "cost accuracy?",
         "If two models are equally accurate, whose attention would you show a reader - and what must you check "
         "before calling it an explanation?"),
))

DISAGREE = Lesson("methods", "Explanations that disagree",
                  "Attention, gradients and leave-one-out answer 'which words mattered?' in different ways; do they "
                  "agree, and which one does the model bear out?", (
    Step("Three ways to ask",
         "There is more than one way to ask a model which words mattered. Its own attention is one. Integrated "
         "gradients follows the output as each word fades in from nothing. Leave-one-out deletes each word in turn "
         "and watches the prediction. Each row shades the words by one method: red for the predicted label, blue "
         "against it.",
         "methods", {"checkpoint": ("act", "sst2"), "text": BUT,
                     "methods": ["attention", "integrated_gradients", "leave_one_out"]},
         "Does every row put its darkest cell on the same word? Does any row have blue cells, and on which words?",
         "Attention is never blue. What can the gradient rows say that attention cannot?"),
    Step("Do they agree?",
         "We can measure the agreement: rank the words by each method and compare the rankings. Kendall's tau is "
         "one for the same order, zero for unrelated orders, minus one for reversed ones.",
         "methods", {"checkpoint": ("act", "sst2"), "text": BUT,
                     "methods": ["attention", "integrated_gradients", "leave_one_out"], "show": "agreement"},
         "Which pair agrees most, which least? The notes give each pair's tau.",
         "If two explanations of the same prediction disagree, can both be right?"),
    Step("Another model, the same sentence",
         "The same three methods on the Transformer.",
         "methods", {"checkpoint": ("transformer", "sst2"), "text": BUT,
                     "methods": ["attention", "integrated_gradients", "leave_one_out"]},
         "Compare with the first step: do the methods agree more or less on this model?",
         "Is disagreement a property of the methods, of the model, or of both?"),
    Step("Which one does the model bear out?",
         "A referee: remove the words each method ranks highest and watch the prediction. The method whose "
         "removals hurt the prediction most found the words this model relies on; random orders are the floor.",
         "erasure", {"checkpoint": ("transformer", "sst2"), "text": BUT,
                     "methods": ["attention", "integrated_gradients", "leave_one_out"],
                     "title": "transformer-sst2: removing each method's top words first"},
         "On the left, which line drops fastest? Is every method above the random line?",
         "Leave-one-out is graded by removing words - the same thing it measured. Is that a fair race?"),
    Step("A known answer",
         "Every referee so far is a proxy: nobody knows which words this model really used. So we make a model "
         "whose answer we do know. A made-up word, zeroa or onea, is planted in a fifth of the training reviews "
         "and decides their label. The trained model follows it. Now each explanation method is asked about test "
         "reviews that carry the word: does it rank the planted word first?",
         "shortcut", {"data": "sst2", "methods": ["attention", "integrated_gradients", "saliency", "grad_x_input",
                                                 "occlusion", "leave_one_out", "lime", "random"]},
         "Find the rows that are bright on every model, and the ones that are dark on some. Where is the random "
         "ranking?",
         "A method that misses a word we know decided the label: what would you trust it to find in a real model?"),
))

from textcls.teach.context_lesson import LEAVE_OUT  # noqa: E402 - registers its step kind
from textcls.teach.patching_lesson import PATCHING  # noqa: E402 - registers its step kind
import textcls.teach.shortcut_lesson  # noqa: E402,F401 - registers the "shortcut" step kind
from textcls.teach.concepts_lesson import CONCEPTS  # noqa: E402 - registers its step kinds

LESSONS: tuple[Lesson, ...] = (WHAT_ATTENTION, ACT_VS_TRANSFORMER, GATES, NEGATION, HCAN_WORDS, EXPLANATION, DISAGREE,
                               LEAVE_OUT, PATCHING, CONCEPTS)


def get(lesson_id: str) -> Lesson:
    for lesson in LESSONS:
        if lesson.id == lesson_id:
            return lesson
    raise KeyError(f"no lesson {lesson_id!r}; lessons: {[x.id for x in LESSONS]}")


def locate(params: Mapping[str, str]) -> tuple[Lesson, int]:
    """(lesson, 0-based step) from URL query parameters `lesson` (an id) and `step` (1-based); an unknown lesson
    gives the first, a step out of range the nearest one."""
    try:
        lesson = get(str(params.get("lesson", "")))
    except KeyError:
        lesson = LESSONS[0]
    try:
        step = int(str(params.get("step", "1"))) - 1
    except ValueError:
        step = 0
    return lesson, min(max(step, 0), len(lesson.steps) - 1)


def step_params(lesson: Lesson, step: int) -> dict[str, str]:
    """The URL query parameters of a step (the inverse of `locate`)."""
    return {"lesson": lesson.id, "step": str(step + 1)}


__all__ = ["KINDS", "LESSONS", "Lesson", "Library", "Missing", "Slider", "Step", "StepResult", "default_library",
           "get", "locate", "presenter_figure", "run_step", "sample_texts", "step_params"]
