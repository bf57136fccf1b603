"""The "influence" interpreter (command `influence`): which training examples made a prediction - TracIn (Pruthi et
al. 2020) over the epochs a checkpoint saved, the maths in textcls.interpret.influence.

    python -m textcls influence CKPT "TEXT" [--data NAME] [--top 10] [--method fast|exact] [--projection D] [--json]
    python -m textcls influence CKPT --self [--data NAME] [--top 10] [--json]
    python -m textcls influence CKPT "TEXT" --epochs final      (a checkpoint trained without saved epochs)

With a text: its proponents (the training examples whose training steps lowered the loss of the text's predicted
label, or of --label) and its opponents (raised it), each with its text, gold label and score. With --self: the
training examples ranked by self-influence, highest first (likely mislabelled or atypical). The training set is
the train split of --data (default: the data set the checkpoint records, at the --limit it was trained with).
A checkpoint without saved epochs (trained before they were kept, or with --snapshots off) exits 2 with one line
saying how to get them, unless --epochs final asks for the final checkpoint alone (one term of the sum: the
gradient similarity at the final weights). Imports no torch."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from textcls.interpret.interpreters._inputs import data_name, split_rows
from textcls.interpret.interpreters.registry import InterpreterError, Option, register_interpreter

OPTIONS = (
    Option("top", 10, "how many proponents and opponents (with --self: examples) to list; 0 lists all", low=0,
           high=1_000_000),
    Option("self", False, "rank the training examples by self-influence instead (likely mislabelled first)",
           label="Self-influence"),
    Option("method", "fast", "fast: the output layer's closed form (one forward pass per example); exact: "
           "autograd gradients of every saved parameter (one backward pass per example and epoch)",
           choices=("fast", "exact")),
    Option("projection", 0, "fast method: project the output layer's input to this many dimensions (seeded "
           "random projection, unbiased); 0 keeps it whole", low=0, high=65_536),
    Option("normalize", False, "divide each epoch's gradients by their norms (their cosine): proponents that "
           "resemble the text, not the few training examples with the largest gradients that raw TracIn puts "
           "first for every text", label="Normalise (cosine)"),
    Option("label", "", "the label whose loss is traced (default: the predicted one)"),
    Option("epochs", "saved", "saved: sum over the epochs the training run kept (TracIn); final: the final "
           "checkpoint alone (one term at learning rate 1, a gradient-similarity approximation), for a checkpoint "
           "trained without saved epochs", choices=("saved", "final")),
)


@dataclass(frozen=True)
class Example:
    """One training example in a ranking."""

    index: int                   # its position in the training split (after --limit)
    text: str
    label: str                   # its gold label
    score: float                 # influence on the text's loss (> 0 proponent, < 0 opponent), or self-influence
    predicted: str = ""          # the checkpoint's prediction for it

    def to_dict(self, score_name: str = "score") -> dict:
        return {"index": self.index, "text": self.text, "label": self.label, score_name: self.score,
                "predicted": self.predicted}


@dataclass(frozen=True)
class Run:
    """How the scores were computed."""

    data: str
    train_size: int
    epochs: tuple[int, ...]      # the saved epochs summed over (those up to the checkpoint's own)
    lrs: tuple[float, ...]
    method: str
    snapshots: str               # "last" (output layer) or "full"
    projection: int
    seconds: float
    normalize: bool = False      # scores from unit gradients (cosine)
    final_only: bool = False     # the final checkpoint alone (--epochs final), not saved epochs

    @property
    def over(self) -> str:
        """What the scores sum over, in words."""
        if self.final_only:
            return "the final checkpoint alone (no saved epochs: a gradient-similarity approximation of TracIn)"
        return f"epoch{'s' if len(self.epochs) > 1 else ''} {', '.join(map(str, self.epochs))}"

    def to_dict(self) -> dict:
        return {"data": self.data, "train_size": self.train_size, "epochs": list(self.epochs),
                "lrs": list(self.lrs), "method": self.method, "snapshots": self.snapshots,
                "projection": self.projection, "normalize": self.normalize, "final_only": self.final_only,
                "seconds": self.seconds}


@dataclass(frozen=True)
class Influence:
    """The proponents and opponents of one prediction."""

    text: str
    label: str                   # the label whose loss is traced
    predicted: str
    probability: float           # the model's probability of `label`
    proponents: tuple[Example, ...]
    opponents: tuple[Example, ...]
    run: Run

    def to_dict(self) -> dict:
        return {"text": self.text, "label": self.label, "predicted": self.predicted,
                "probability": self.probability, "proponents": [e.to_dict() for e in self.proponents],
                "opponents": [e.to_dict() for e in self.opponents], **self.run.to_dict()}


@dataclass(frozen=True)
class SelfInfluence:
    """Training examples ranked by self-influence, highest first."""

    examples: tuple[Example, ...]
    run: Run

    def to_dict(self) -> list[dict]:
        """A list of {text, label, self_influence, predicted, index}, highest self-influence first."""
        return [e.to_dict("self_influence") for e in self.examples]


def how_to_get(predictor) -> str:
    """One line: how to train this checkpoint again so that it keeps the epochs TracIn needs."""
    info = predictor.info or {}
    data = info.get("data") if isinstance(info.get("data"), dict) else {}
    spec = data.get("spec") or data.get("name") or "DATA"
    return (f"this checkpoint has no saved epochs (tracin.safetensors); train it again with this version of textcls,"
            f" which keeps them: python -m textcls train --model {info.get('model', 'MODEL')} --data {spec} "
            "--epochs N (the output layer per epoch; --snapshots full keeps every weight)")


def _applies(predictor) -> str | None:
    info = getattr(predictor, "info", None) or {}
    if info.get("format") != "textcls-checkpoint" or getattr(predictor, "path", None) is None:
        return "training-data influence reads the epochs a textcls training run saved; this is not such a checkpoint"
    return None                     # without saved epochs: --epochs final, or one line saying how to get them


_CACHE: dict = {}              # (checkpoint files, training set, projection) -> the training set's fast quantities


def _identity(path: Path) -> tuple:
    from textcls.interpret.influence import SNAPSHOT_FILE
    out = []
    for name in ("model.safetensors", SNAPSHOT_FILE):
        if not (path / name).exists():
            continue
        st = (path / name).stat()
        out.append((name, st.st_ino, st.st_size, st.st_mtime_ns))
    return (str(path.absolute()), *out)


def _training_set(predictor, inputs: dict):
    """(texts, gold label indices) of the training split, examples whose label the model lacks dropped."""
    inputs = dict(inputs)
    recorded = (predictor.info.get("data") or {}) if isinstance(predictor.info.get("data"), dict) else {}
    if not inputs.get("limit") and not inputs.get("data") and recorded.get("limit"):
        inputs["limit"] = recorded["limit"]                  # the sample it was trained on (seed 0)
    texts, gold = split_rows(predictor, inputs, "train")
    rows = [(t, y) for t, y in zip(texts, gold) if y is not None]
    if not rows:
        raise InterpreterError(f"the train split of {data_name(predictor, inputs)} has no example with one of the "
                               f"model's labels ({', '.join(predictor.labels)})")
    return [t for t, _ in rows], [y for _, y in rows], inputs.get("limit")


def _snapshots(predictor, epochs: str = "saved"):
    from textcls.interpret.influence import check_fits, final_snapshot, read_snapshots
    try:
        snaps = final_snapshot(predictor.model) if epochs == "final" else read_snapshots(predictor.path)
        if snaps is not None:
            check_fits(snaps, predictor.model)
    except (OSError, ValueError) as e:
        raise InterpreterError(" ".join(str(e).split())) from None
    if snaps is None:
        raise InterpreterError(how_to_get(predictor) + "; or --epochs final: the final checkpoint alone")
    return snaps


def _short(text: str, n: int = 100) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 1] + "…"


def render(result) -> str:
    """The CLI's text output: one line per example."""
    r = result.run
    head = (f"TracIn ({r.method}, {r.snapshots} snapshots{f', projection {r.projection}' if r.projection else ''}"
            f"{', cosine' if r.normalize else ''}) "
            f"over {r.over} of the {r.train_size:,} training examples of {r.data} "
            f"({r.seconds:.1f} s)")
    if isinstance(result, SelfInfluence):
        lines = [head, "self-influence, highest first (likely mislabelled or atypical):"]
        lines += [f"  {e.score:10.4g}  {e.label:>12} (model: {e.predicted})  {_short(e.text)}" for e in result.examples]
        return "\n".join(lines)
    lines = [f"{_short(result.text)!r} -> {result.predicted}; tracing the loss of {result.label} "
             f"(p = {result.probability:.3f})", head]
    for what, rows in (("proponents (their training steps lowered this loss)", result.proponents),
                       ("opponents (their training steps raised it)", result.opponents)):
        lines.append(f"{what}:" if rows else f"{what}: none")
        lines += [f"  {e.score:+10.4g}  {e.label:>12}  {_short(e.text)}" for e in rows]
    return "\n".join(lines)


@register_interpreter("influence", "Training-data influence (TracIn)", inputs=(),
                      optional=("text", "data", "data_root", "limit"), options=OPTIONS, output="ranking",
                      cost="training set", applies=_applies, progress=True, command="influence",
                      help="the training examples behind a prediction (TracIn over the saved epochs), or every "
                           "training example ranked by self-influence (--self)",
                      render=render,
                      example={"checkpoint": "kim_cnn-sst2", "inputs": {"text": "the movie was not good"},
                               "options": {"epochs": "final", "top": 3}})
def run(predictor, inputs: dict, progress=None, **options):
    """Proponents and opponents of inputs["text"] (Influence), or --self's ranking (SelfInfluence)."""
    import torch

    from textcls.interpret import influence as inf
    t0 = time.perf_counter()
    text = inputs.get("text")
    if text is not None and not str(text).strip():
        raise InterpreterError("the text is empty")
    if text is None and not options["self"]:
        raise InterpreterError("give a TEXT to trace, or --self to rank the training examples by self-influence")
    if options["label"] and options["label"] not in predictor.labels:
        raise InterpreterError(f"--label {options['label']!r} is not one of the model's labels "
                               f"({', '.join(predictor.labels)})")
    if text is None and options["normalize"]:
        raise InterpreterError("--normalize applies to a text's proponents; self-influence is a gradient's norm")
    method, projection = options["method"], int(options["projection"])
    if method == "exact" and projection:
        raise InterpreterError("--projection applies to the fast method only")
    snaps = _snapshots(predictor, options["epochs"])
    texts, gold, limit = _training_set(predictor, inputs)
    y = torch.tensor(gold)                                                        # (N,)
    name = data_name(predictor, inputs)
    key = (_identity(Path(predictor.path)), name, str(inputs.get("data_root")), limit, len(texts), projection,
           options["epochs"])
    train_q = None
    if method == "fast":
        train_q = _CACHE.get(key)
        if train_q is None:
            train_q = inf.fast_quantities(predictor.model, snaps, inf.encode(predictor.tokenizer, texts, gold), y,
                                          projection, progress=progress)
            _CACHE.clear()                                     # one training set kept: it can be large
            _CACHE[key] = train_q
    traj = snaps.trajectory()

    def done() -> Run:
        return Run(name, len(texts), tuple(snaps.epochs[i] for i in traj), tuple(snaps.lrs[i] for i in traj),
                   method, snaps.kind, projection, time.perf_counter() - t0, bool(options["normalize"]),
                   options["epochs"] == "final")

    if text is None:
        if train_q is not None:
            scores, preds = inf.fast_self_influence(train_q), train_q.logits.argmax(-1)
        else:
            enc = inf.encode(predictor.tokenizer, texts, gold)
            _, scores = inf.exact_influence(predictor.model, snaps, enc, y, progress=progress)
            preds = torch.as_tensor(inf.layer_inputs(predictor.model, snaps.layer, enc)[1]).argmax(-1)
        ranked = inf.top_k(scores, int(options["top"]), sign=False)
        return SelfInfluence(tuple(Example(i, texts[i], predictor.labels[gold[i]], s, predictor.labels[int(preds[i])])
                                   for i, s in ranked), done())

    probs = predictor.predict([text])[0].probabilities
    predicted = max(probs, key=probs.get)
    label = options["label"] or predicted
    test_y = torch.tensor([predictor.labels.index(label)])                        # (1,)
    test_enc = inf.encode(predictor.tokenizer, [text], test_y.tolist())
    if train_q is not None:
        test_q = inf.fast_quantities(predictor.model, snaps, test_enc, test_y, projection)
        scores = inf.fast_scores(test_q, train_q, options["normalize"])[0]
        preds = train_q.logits.argmax(-1)
    else:
        enc = inf.encode(predictor.tokenizer, texts, gold)
        scores = inf.exact_influence(predictor.model, snaps, enc, y, test_enc, test_y, progress=progress,
                                     normalize=options["normalize"])[0][0]
        preds = inf.layer_inputs(predictor.model, snaps.layer, enc)[1].argmax(-1)

    def examples(ranked) -> tuple[Example, ...]:
        return tuple(Example(i, texts[i], predictor.labels[gold[i]], s, predictor.labels[int(preds[i])])
                     for i, s in ranked)
    k = int(options["top"])
    return Influence(str(text), label, predicted, float(probs[label]), examples(inf.top_k(scores, k)),
                     examples(inf.top_k(scores, k, largest=False)), done())


__all__ = ["Example", "Influence", "OPTIONS", "Run", "SelfInfluence", "how_to_get", "render", "run"]
