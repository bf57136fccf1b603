"""The machinery of the guided lessons (`textcls.teach.lessons` holds their content): what a lesson and a step are, and
how each kind of step is computed and drawn.

A `Lesson` is a few `Step`s for about 20 minutes of class. Each step has a short text to read aloud, a prepared
input (a sentence, or a review from the embedded IMDB sample; which shipped checkpoints read it), one view the
library draws live (`textcls.viz`, `textcls.interpret` and the Lab's demos in `textcls.interpret.lab`), what
to look for and one question for the class. `run_step` computes a step: its figures, and `notes` - sentences
built only from what the models produced on that input (a step's fixed texts never state a model's number;
they say what to compare).

Checkpoints are named by (model, data set) - `act` on `sst2` - and the first such checkpoint found is used,
shipped ones first; a step whose checkpoint is missing says so (`StepResult.missing`) instead of failing. The
last step of "Is attention an explanation?" compares every HCAN / CAN checkpoint of the IMDB task that is there
(the shipped ones, retrained ones, variants), reading their attention and accuracy live.
"""
from __future__ import annotations

import dataclasses

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from textcls.interpret.concentration import BANDS, concentration

# ---------------------------------------------------------------- what a lesson is


@dataclass(frozen=True)
class Slider:
    """A number the class may change on a step (the page draws a slider)."""

    label: str
    low: float
    high: float
    default: float
    step: float
    help: str = ""


@dataclass(frozen=True)
class Step:
    title: str
    read_aloud: str
    kind: str                                   # which `KINDS` function computes and draws it
    input: Mapping[str, Any]                    # the prepared input (texts, checkpoints, options)
    look_for: str
    question: str
    slider: Slider | None = None


@dataclass(frozen=True)
class Lesson:
    id: str                                     # the URL's `lesson` parameter
    title: str
    goal: str
    steps: tuple[Step, ...]


@dataclass
class StepResult:
    figures: list = field(default_factory=list)  # viz.FigureOut, drawn in order
    notes: list[str] = field(default_factory=list)   # plain sentences from live values
    input: str = ""                              # the prepared input in words (what the class reads)
    used: list[str] = field(default_factory=list)    # the checkpoints this step ran
    missing: str | None = None                   # why nothing could be drawn (a checkpoint not here)


class Missing(Exception):
    """A step's checkpoint or data is not here; the message says which."""


# ---------------------------------------------------------------- checkpoints and texts


@dataclass
class Library:
    """The checkpoints a step may use (CheckpointInfo list, shipped first) and how to load one (-> Predictor)."""

    infos: Sequence[Any]
    load: Callable[[Any], Any]

    def find(self, model: str, data: str) -> Any:
        """The checkpoint MODEL-DATA when it is here (the shipped one a lesson was written for), else the first
        checkpoint of that model and data set (e.g. one the user trained)."""
        found = [i for i in self.infos if i.model == model and i.data == data]
        for info in sorted(found, key=lambda i: i.name != f"{model}-{data}"):
            return info
        raise Missing(f"This step needs a {model} checkpoint trained on {data} (shipped as {model}-{data}); "
                      "none is in the checkpoint folders.")

    def predictor(self, model: str, data: str) -> tuple[Any, Any]:
        info = self.find(model, data)
        return info, self.load(info)


def default_library() -> Library:
    """Every valid checkpoint (shipped, then the user's), each loaded once (benchmarks, tests, scripts)."""
    from textcls.checkpoint import list_all_checkpoints, load_checkpoint
    loaded: dict[str, Any] = {}

    def load(info):
        if str(info.path) not in loaded:
            loaded[str(info.path)] = load_checkpoint(info.path)
        return loaded[str(info.path)]
    return Library([i for i in list_all_checkpoints(deep=False) if i.valid], load)


_SAMPLES: dict[str, Any] = {}


def sample_texts(name: str = "imdb_sample", split: str = "test") -> tuple[list[str], list[int], list[str]]:
    """(texts, labels, label names) of an embedded data set's split (textcls/data/bundled), loaded once."""
    if name not in _SAMPLES:
        from textcls.data.datasets import load_data
        try:
            _SAMPLES[name] = load_data(name)
        except Exception as e:  # noqa: BLE001 - the step says what is missing
            raise Missing(f"The embedded data set {name} could not be read: {e}") from None
    b = _SAMPLES[name]
    s = b.splits[split]
    return list(s.texts), list(s.labels), list(b.labels)


def _text(inp: Mapping[str, Any]) -> str:
    if "text" in inp:
        return str(inp["text"])
    name, index = inp["sample"]
    texts, _, _ = sample_texts(name)
    if not 0 <= index < len(texts):
        raise Missing(f"The embedded sample {name} has no text number {index}.")
    return texts[index]


def _quote(text: str, limit: int = 600) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _pred_line(name: str, p) -> str:
    return f"{name} predicts {p.label} (probability {p.probabilities[p.label]:.2f})."


def _words(tokens: Sequence[str], w: np.ndarray, k: int = 3) -> str:
    order = np.argsort(-np.asarray(w), kind="stable")[:k]
    return ", ".join(f"'{tokens[i]}' ({w[i]:.2f})" for i in order)


# ---------------------------------------------------------------- step kinds: compute + draw


def _toy(step: Step, lib: Library, value: float | None) -> StepResult:
    """A toy attention: weights = softmax(score / temperature); output = the weighted average of the values."""
    from textcls.viz.explanations import toy_attention_figure

    inp = step.input
    t = float(value if value is not None else (step.slider.default if step.slider else 1.0))
    t = max(t, 1e-3)
    tokens, scores, values = list(inp["tokens"]), np.asarray(inp["scores"], float), np.asarray(inp["values"], float)
    z = scores / t
    w = np.exp(z - z.max())
    w = w / w.sum()
    avg = float((w * values).sum())
    conc = concentration(w, tokens)
    top = int(np.argmax(w))
    notes = [f"At temperature {t:g} the largest weight is on '{tokens[top]}' ({w[top]:.2f}); the weighted average "
             f"of the values is {avg:+.2f}. A plain average of the values would be {values.mean():+.2f}; keeping "
             f"only the highest-scoring word would give {values[int(np.argmax(scores))]:+.2f}.",
             conc.sentence()]
    return StepResult([toy_attention_figure(tokens, w, values, t, avg)], notes,
                      input=" ".join(tokens) + "   (scores: " + ", ".join(f"{s:g}" for s in scores) + ")")


def _view(step: Step, lib: Library, value: float | None) -> StepResult:
    """One Inspect view (textcls.viz) of one checkpoint on the input; `figures` picks which of its figures
    (substrings of their keys) are shown."""
    from textcls import viz

    inp = step.input
    info, pred = lib.predictor(*inp["checkpoint"])
    text = _text(inp)
    r = pred.predict([text], return_maps=True)[0]
    specs = {s.name: s for s in pred.model.map_specs()}
    vi = viz.ViewInput(info.model, specs, r.maps, list(r.tokens), r.sentences, title=info.name, label=r.label,
                       config=dict(info.info.get("model_config", {})), opts=dict(inp.get("opts", {})))
    figs = viz.build_view(inp["view"], vi)
    want = inp.get("figures")
    if want:
        figs = [f for f in figs if any(k in f.key for k in want)]
    notes = [_pred_line(info.name, r)]
    for f in figs:
        c = f.meta.get("concentration")
        if c and c.get("n", 0) >= 2:
            notes.append(f"{f.title}: normalised entropy {c['normalised_entropy']:.2f} (1 = uniform) - "
                         f"{c['verdict']}.")
            if c["normalised_entropy"] >= BANDS[0]:
                notes.append("The flat picture is the finding here: this checkpoint's weights are almost equal, "
                             "so the largest of them say little about why it decided. Compare another checkpoint, "
                             "or the last step of 'Is attention an explanation?'.")
    tw = viz.token_weights(specs, r.maps, r.tokens, r.sentences)
    if tw is not None and len(r.tokens) >= 2 and inp.get("top_words", True) and \
            concentration(tw[0]).entropy < BANDS[0]:                # the top words of a flat weighting are noise
        notes.append(f"The three words with the most weight in {info.name}'s own importance: "
                     f"{_words(r.tokens, tw[0])}.")
    return StepResult(figs, notes, input=_quote(text), used=[info.name])


def _reasons(step: Step, lib: Library, value: float | None) -> StepResult:
    """Several checkpoints' own importance on one text, one shaded row each (ACT Table 4's layout)."""
    from textcls import viz

    inp = step.input
    text = _text(inp)
    items, notes, used = [], [], []
    for model, data in inp["checkpoints"]:
        try:
            info, pred = lib.predictor(model, data)
        except Missing as e:
            notes.append(str(e))
            continue
        r = pred.predict([text], return_maps=True)[0]
        specs = {s.name: s for s in pred.model.map_specs()}
        items.append({"name": info.name, "model": info.model, "specs": specs, "maps": r.maps, "tokens": r.tokens,
                      "sentences": r.sentences, "label": r.label})
        tw = viz.token_weights(specs, r.maps, r.tokens, r.sentences)
        line = _pred_line(info.name, r)
        if tw is not None and len(r.tokens) >= 2:
            line += f" Most weight on {_words(r.tokens, tw[0], 2)}."
        notes.append(line)
        used.append(info.name)
    if not items:
        raise Missing("None of this step's checkpoints is here: " + " ".join(notes))
    fig = viz.reasons_figure(items, title=inp.get("title", "What each model looked at"))
    return StepResult([fig] if fig is not None else [], notes, input=_quote(text), used=used)


def _gates(step: Step, lib: Library, value: float | None) -> StepResult:
    """AGCNN's gates on one sentence (interpret.lab.gate_suppression): the gate profile, or the prediction
    with every gate forced open (1) or shut (0)."""
    from textcls.interpret.lab import TVD_WORDS, gate_closure_lines, gate_closures, gate_suppression, gate_title
    from textcls.viz.explanations import gate_closure_figure, gate_profile_figure, probability_shift

    inp = step.input
    info, src, inst, text = _instance(lib, inp, min_words=1)
    show = inp.get("show", "profile")
    if show == "closures":
        found = gate_closures(src.model, inst, labels=src.labels)
        return StepResult([gate_closure_figure(found)], gate_closure_lines(found), input=text, used=[info.name])
    res = gate_suppression(src.model, inst, labels=src.labels)
    labels = list(src.labels or [str(i) for i in range(len(res["probs"]))])
    k = int(np.argmax(res["probs"]))
    notes = [f"{info.name} predicts {labels[k]} (probability {res['probs'][k]:.2f}) with its gates as trained."]
    if show == "profile":
        rows = [r for r in res["rows"] if not math.isnan(r["mean_gate"])]
        if rows:
            lo, hi = min(rows, key=lambda r: r["mean_gate"]), max(rows, key=lambda r: r["mean_gate"])
            kept = [100 * r["kept_mass"] for r in rows]
            notes.append(f"The mean gate ranges from {lo['mean_gate']:.2f} ({gate_title(lo['map'])}) to "
                         f"{hi['mean_gate']:.2f} ({gate_title(hi['map'])}); after gating the features keep {min(kept):.0f}-{max(kept):.0f} % of the "
                         "convolution's activation.")
        fig = gate_profile_figure(res, title=f"{info.name}: how far each gate opens at each position")
    else:
        after = res["probs_gates_open"] if show == "open" else res["probs_gates_closed"]
        tvd = res["tvd_gates_open"] if show == "open" else res["tvd_gates_closed"]
        what = "every gate forced to 1 (a plain CNN)" if show == "open" else "every gate forced to 0"
        j = int(np.argmax(after))
        notes.append(f"With {what} it predicts {labels[j]} (probability {after[j]:.2f}); {labels[k]} went from "
                     f"{res['probs'][k]:.2f} to {after[k]:.2f}. The change is {tvd:.3f} on a 0-1 scale - {TVD_WORDS}.")
        fig = probability_shift(labels, res["probs"], after, f"{info.name}: gates as trained vs {what}",
                                names=("as trained", "gates = 1" if show == "open" else "gates = 0"))
    return StepResult([fig], notes, input=text, used=[info.name])


def _negation(step: Step, lib: Library, value: float | None) -> StepResult:
    """p(positive) of several checkpoints over short inputs (interpret.lab.negation_demo)."""
    from textcls.interpret.lab import negation_demo
    from textcls.viz.explanations import negation_figure

    inp = step.input
    sources, notes = {}, []
    for model, data in inp["checkpoints"]:
        try:
            info, pred = lib.predictor(model, data)
            sources[info.name] = pred
        except Missing as e:
            notes.append(str(e))
    if not sources:
        raise Missing("None of this step's checkpoints is here.")
    sents = list(inp["sentences"])
    rows = negation_demo(sources, sents)
    p = {(r["model"], r["sentence"]): r["p_positive"] for r in rows}
    for a, b in inp.get("pairs", ()):
        moves = [(m, p[(m, a)], p[(m, b)]) for m in sources]
        down = [m for m, x, y in moves if (y - 0.5) * (x - 0.5) < 0]
        notes.append(f"'{a}' -> '{b}': " + "; ".join(f"{m} {x:.2f} -> {y:.2f}" for m, x, y in moves)
                     + f". The decision crosses 0.5 for {len(down)} of {len(moves)} models"
                     + (f" ({', '.join(down)})." if down else "."))
    fig = negation_figure(rows, title=inp.get("title", "p(positive) as the wording changes"))
    return StepResult([fig], notes, input=" | ".join(sents), used=list(sources))


def _branches(step: Step, lib: Library, value: float | None) -> StepResult:
    """HCAN's two word-level branches on one text (interpret.lab.hcan_branches)."""
    from textcls.interpret.lab import hcan_branches
    from textcls.viz.explanations import branches_figure

    inp = step.input
    info, src, inst, text = _instance(lib, inp, min_words=1)
    res = hcan_branches(src.model, inst, 0)
    toks = res["tokens"] or [str(i) for i in range(inst.n)]
    ratio = np.asarray(res["norm_product"]) / np.maximum(np.asarray(res["norm_a"]), 1e-12)
    words = [i for i, t in enumerate(toks) if any(c.isalnum() for c in t)] or list(range(len(toks)))
    lo, hi = min(words, key=lambda i: ratio[i]), max(words, key=lambda i: ratio[i])
    flips = np.asarray(res["sign_flip_share"])
    notes = [f"Among the words, branch b shrinks '{toks[lo]}' (word {lo + 1}) the most: the product keeps "
             f"{ratio[lo]:.2f} of branch a's length; '{toks[hi]}' (word {hi + 1}) the least ({ratio[hi]:.2f}).",
             f"Branch b flips the sign of {100 * flips.min():.0f}-{100 * flips.max():.0f} % of a word's channels."]
    if ratio[hi] < 1.25 * ratio[lo]:
        notes.append("On this text the dimmer treats every word about alike: no word is switched off much more "
                     "than another.")
    fig = branches_figure(res, title=f"{info.name}: each word's branch a, branch b and their product")
    return StepResult([fig], notes, input=text, used=[info.name])


def _attention_tests(step: Step, lib: Library, value: float | None) -> StepResult:
    """The permutation test (box of TVDs per checkpoint, uniform attention marked) or, with show="uniform",
    one checkpoint's probabilities under its own and under uniform attention."""
    from textcls.interpret import as_source
    from textcls.interpret.faithfulness import N_PERMUTATIONS, permutation_test, uniform_attention_test
    from textcls.viz.explanations import permutation_figure, probability_shift

    inp = step.input
    text = _text(inp)
    tests, unif, notes, used = {}, {}, [], []
    for model, data in inp["checkpoints"]:
        try:
            info, pred = lib.predictor(model, data)
        except Missing as e:
            notes.append(str(e))
            continue
        src = as_source(pred)
        (inst,) = src.instances([text])
        labels = list(src.labels or [])
        u = uniform_attention_test(src.model, inst)
        k, j = int(np.argmax(u["p"])), int(np.argmax(u["p_uniform"]))
        used.append(info.name)
        if inp.get("show") == "uniform":
            notes.append(f"{info.name} predicts {labels[k]} ({u['p'][k]:.2f}) with its own attention and "
                         f"{labels[j]} ({u['p_uniform'][j]:.2f}) with uniform attention: TVD {u['tvd']:.3f}"
                         + (", the decision flips." if u["flipped"] else ", the decision stays."))
            fig = probability_shift(labels, u["p"], u["p_uniform"], f"{info.name}: its own attention vs uniform "
                                    "attention over the same words", names=("own attention", "uniform attention"))
            return StepResult([fig], notes, input=text, used=used)
        t = permutation_test(src.model, inst, int(inp.get("n", N_PERMUTATIONS)))
        tests[info.name], unif[info.name] = t, u["tvd"]
        lo, hi = t["tvd_iqr"]
        notes.append(f"{info.name} ({labels[k]}, {u['p'][k]:.2f}): median TVD over {t['n_permutations']} random "
                     f"shuffles (drawn from the text, the same on Attribute) {t['median_tvd']:.3f}, half of them "
                     f"between {lo:.3f} and {hi:.3f}, largest {float(np.max(t['tvds'])):.3f}; the decision flips in "
                     f"{100 * t['flip_rate']:.0f} % of them. Uniform attention moves it by {u['tvd']:.3f}.")
    if not tests:
        raise Missing("None of this step's checkpoints is here. " + " ".join(notes))
    return StepResult([permutation_figure(tests, unif)], notes, input=text, used=used)


def _instance(lib: Library, inp: Mapping[str, Any], min_words: int = 2):
    """(info, Source, Instance, text) of a step's one checkpoint and text."""
    from textcls.interpret import as_source

    info, pred = lib.predictor(*inp["checkpoint"])
    text = _text(inp)
    src = as_source(pred)
    (inst,) = src.instances([text])
    if inst.n < min_words:
        raise Missing("The input has no word this checkpoint knows." if min_words == 1 else
                      f"The input needs at least {min_words} words this checkpoint knows.")
    return info, src, inst, text


def _explanations(src, inst, methods: Sequence[str]) -> dict[str, np.ndarray]:
    """{label: one score per token} of each explanation method (interpret.methods.explanation)."""
    from textcls.interpret.methods import explanation
    from textcls.interpret.methods import labels as method_labels

    out = {}
    for m in methods:
        e = explanation(src.model, inst, m, labels=src.labels)
        out[method_labels().get(m, m)] = np.asarray(getattr(e, "scores", e), dtype=float)
    return out


def _erasure(step: Step, lib: Library, value: float | None) -> StepResult:
    """Faithfulness on one text: removing words in the order of each explanation (the model's own attention by
    default) against the word orders of this text (chance.judge: the one rule of every page)."""
    from textcls.interpret.chance import judge
    from textcls.interpret.rankings import ONE_TEXT_NOTE, VERDICT_RULE, ranked
    from textcls.viz.explanations import erasure_figure

    inp = step.input
    info, src, inst, text = _instance(lib, inp)
    curves, chance, verdicts = judge(src.model, inst, _explanations(src, inst, inp.get("methods", ("attention",))))
    notes = [f"{name}: {v['line']}" for name, v in verdicts.items()]
    if len(curves) > 1:
        notes.append("Ranked by comprehensiveness AOPC (ties within 0.0005 are ties): " + ranked(
            {k: c["aopc_comprehensiveness"] for k, c in curves.items()}) + ".")
    notes += [VERDICT_RULE, ONE_TEXT_NOTE]
    first = next(iter(curves.values()))
    what = (f"all {chance['n_orders']} orders, mean" if chance["exact"] else
            f"random orders, mean of {chance['n_orders']}")
    curves[what] = {"bins": first["bins"], "k_tokens": first["k_tokens"],
                    "comprehensiveness": chance["mean_comprehensiveness"],
                    "sufficiency": chance["mean_sufficiency"]}
    notes.append("AOPC: how much removing the top-ranked words lowers the predicted label's probability, averaged "
                 "over the points of the left-hand line (higher = the ranking found the words the model needs). "
                 "The random orders are drawn from the text itself, so every page shows the same ones.")
    fig = erasure_figure(curves, inp.get("title", f"{info.name}: removing the top-ranked words first vs in random "
                                                  "order"))
    return StepResult([fig], notes, input=text, used=[info.name])


def _methods(step: Step, lib: Library, value: float | None) -> StepResult:
    """Several explanations of one prediction on one token grid (viz.explanations.reasons_grid), or with
    show="agreement" their rank agreement (Kendall tau, faithfulness.agreement)."""
    from textcls.interpret.faithfulness import agreement
    from textcls.viz.explanations import agreement_heatmap, reasons_grid

    inp = step.input
    info, src, inst, text = _instance(lib, inp)
    ex = _explanations(src, inst, inp["methods"])
    toks = inst.tokens or [str(i) for i in range(inst.n)]
    p = _pred_probs(src, inst)
    k = int(np.argmax(p))
    label = src.labels[k] if src.labels else str(k)
    notes = [f"{info.name} predicts {label} (probability {p[k]:.2f}); every explanation is of that prediction."]
    if inp.get("show") == "agreement":
        agr = agreement(ex)
        tau = agr["kendall_tau"]
        names = agr["names"]
        pairs = [(names[a], names[b], tau[a, b]) for a in range(len(names)) for b in range(a + 1, len(names))]
        notes += [f"{a} and {b}: Kendall tau {t:+.2f}" + (" (the same order)" if t > 0.99 else "") + "."
                  for a, b, t in pairs]
        notes.append("Kendall tau: +1 = the same ranking of the words, 0 = unrelated, -1 = reversed.")
        fig = agreement_heatmap(agr, "kendall_tau", f"{info.name}: do the explanations rank the words alike?")
    else:
        for name, v in ex.items():
            top = int(np.argmax(v))
            notes.append(f"{name}: the top word is '{toks[top]}' ({v[top]:+.3g}).")
        fig = reasons_grid(list(ex.items()), toks, f"{info.name} → {label}: what each explanation points at")
    return StepResult([fig], notes, input=text, used=[info.name])


def _pred_probs(src, inst) -> np.ndarray:
    from textcls.interpret.probabilities import prob_fn, score
    return score(prob_fn(src.model), [inst])[0]


def _hier_entropies(predictions: Sequence[Any]) -> tuple[float | None, float | None]:
    """Median normalised entropy over texts of the word attention (per text: the median over heads and
    sentences) and of the sentence attention (per head, reviews of two sentences or more); None when none."""
    word, sent = [], []
    for r in predictions:
        beta = r.maps.get("beta")
        if beta is None:
            continue
        beta = np.asarray(beta)
        if beta.ndim == 3:                                           # HCAN (sentence, head, word)
            lens = [len(s) for s in (r.sentences or [])]
            rows = [beta[i, :, :n] for i, n in enumerate(lens[: beta.shape[0]]) if n >= 2]
            if rows:
                word.append(concentration(rows).entropy)
            gamma = r.maps.get("gamma")
            if gamma is not None and len(lens) >= 2:
                sent.append(concentration(np.asarray(gamma)[:, : len(lens)], unit="sentence").entropy)
        elif len(r.tokens) >= 2:                                     # CAN (head, token): one flat "sentence"
            word.append(concentration(beta[:, : len(r.tokens)]).entropy)
    med = (lambda v: float(np.median(v)) if v else None)
    return med(word), med(sent)


IGNORED_CONFIG = {"vocab_size", "pad_id"}      # config fields that do not tell two checkpoints' models apart


def setting_name(key: str, helps: Mapping[str, str]) -> str:
    """A config field as a class reads it: the start of its help text ("target-attention score scale"), never the
    field's name (`target_scale`)."""
    text = (helps.get(key) or key.replace("_", " ")).split(":")[0].split(";")[0].split(" (")[0].strip()
    return "how " + text[len("how "):] if text.startswith("how ") else text


def _compare_attention(step: Step, lib: Library, value: float | None) -> StepResult:
    """Every checkpoint of the given models on the given data set, side by side: how peaked its word and
    sentence attention is over the first `n` reviews of the embedded sample, its test accuracy (from its
    training record) and its accuracy on those reviews."""
    from textcls.viz.explanations import concentration_compare_figure

    inp = step.input
    texts, labels, names = sample_texts(inp["sample"])
    n = int(inp.get("n", 20))
    keep = sorted(i for y in sorted(set(labels)) for i in [j for j, x in enumerate(labels) if x == y][: n // max(
        1, len(set(labels)))])                                  # the first reviews of each label, as many of each
    texts, labels = [texts[i] for i in keep], [labels[i] for i in keep]
    rows, notes = [], []
    for info in lib.infos:
        if info.model not in inp["models"] or info.data != inp["data"]:
            continue
        pred = lib.load(info)
        out = pred.predict(texts, return_maps=True)
        word, sent = _hier_entropies(out)
        acc = float(np.mean([names.index(p.label) == y if p.label in names else False
                             for p, y in zip(out, labels)]))
        # what the model ran with (fields an older checkpoint never recorded take their LEGACY_DEFAULTS at load)
        cfg = dataclasses.asdict(pred.model.config) if dataclasses.is_dataclass(getattr(pred.model, "config", None)) \
            else {}
        helps = {f.name: f.metadata.get("help", "") for f in dataclasses.fields(pred.model.config)} if cfg else {}
        rows.append({"name": info.name, "model": info.model, "config": cfg, "helps": helps,
                     "accuracy": info.test_accuracy, "sample_accuracy": acc, "word_entropy": word,
                     "sentence_entropy": sent})
    if not rows:
        raise Missing(f"No {' / '.join(inp['models'])} checkpoint trained on {inp['data']} is here.")
    for model in sorted({r["model"] for r in rows}):    # what sets checkpoints of one model apart
        same = [r for r in rows if r["model"] == model]
        keys = sorted(k for k in set().union(*(r["config"] for r in same)) if k not in IGNORED_CONFIG
                      and len({repr(r["config"].get(k)) for r in same}) > 1)
        for r in same:                                  # the exact values: in the table (CSV) for a researcher
            r["settings"] = ", ".join(f"{k}={r['config'].get(k, '—')}" for k in keys[:3])
        if len(same) > 1 and keys:                      # in words on screen: a class never reads field names
            notes.append(f"{', '.join(r['name'] for r in same)}: the same architecture, with different settings "
                         f"for {'; '.join(setting_name(k, same[0]['helps']) for k in keys[:3])}.")
    for r in rows:
        del r["config"], r["helps"]
        r["label"] = r["name"]
    for r in rows:
        acc = "no test accuracy recorded" if r["accuracy"] is None else f"test accuracy {100 * r['accuracy']:.1f} %"
        s = "it has no sentence level" if r["sentence_entropy"] is None else \
            f"of its sentence attention {r['sentence_entropy']:.2f}"
        w = "—" if r["word_entropy"] is None else f"{r['word_entropy']:.2f}"
        notes.append(f"{r['label']}: {acc}, {100 * r['sample_accuracy']:.0f} % right on these {len(texts)} "
                     f"reviews; median normalised entropy of its word attention {w}, {s}.")
    scored = [r for r in rows if r["word_entropy"] is not None]
    if len(scored) >= 2:
        a, b = min(scored, key=lambda r: r["word_entropy"]), max(scored, key=lambda r: r["word_entropy"])
        gap = "" if a["accuracy"] is None or b["accuracy"] is None else \
            f"; their test accuracies differ by {100 * abs(a['accuracy'] - b['accuracy']):.1f} points"
        if b["word_entropy"] - a["word_entropy"] < 0.01:
            notes.append(f"Their word attention is equally flat, to two decimals{gap}.")
        else:
            notes.append(f"Most peaked word attention: {a['label']} ({a['word_entropy']:.2f}); flattest: "
                         f"{b['label']} ({b['word_entropy']:.2f}){gap}.")
    else:
        notes.append("Only one such checkpoint is here: train or add another (e.g. a retrained HCAN) and this "
                     "step compares them.")
    fig = concentration_compare_figure(rows, title=f"How peaked the attention is, over {len(texts)} reviews of "
                                                   "the embedded IMDB sample")
    return StepResult([fig], notes, input=f"{len(texts)} reviews of the embedded {inp['sample']} (the first of "
                                          "each label, as many of each)",
                      used=[r["label"] for r in rows])


KINDS: dict[str, Callable[[Step, Library, float | None], StepResult]] = {
    "toy": _toy, "view": _view, "reasons": _reasons, "gates": _gates, "negation": _negation,
    "branches": _branches, "attention_tests": _attention_tests, "erasure": _erasure, "methods": _methods,
    "compare_attention": _compare_attention}


def run_step(step: Step, lib: Library | None = None, value: float | None = None) -> StepResult:
    """Compute and draw one step. `value`: the slider's value (None: its default). A missing checkpoint or
    data set gives a StepResult with `missing` set, never an exception."""
    lib = lib or default_library()
    try:
        return KINDS[step.kind](step, lib, value)
    except Missing as e:
        return StepResult(missing=str(e))




__all__ = ["KINDS", "Library", "Missing", "Slider", "Step", "StepResult", "Lesson", "default_library",
           "run_step", "sample_texts"]
