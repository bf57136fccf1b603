"""The "tcav" interpreter: is a concept (a few texts) significant for a class, layer by layer? (TCAV, Kim et al.
2018, with LIT's protocol: textcls.interpret.tcav). Command `textcls tcav CKPT --concept FILE|NAME [--data NAME]
[--label L] [--layer all|last|NAME] [--runs 15] [--seed 0] [--limit N] [--json]`. A concept is a file of one text
per line, texts separated by '|', or the name of a shipped concept (`shipped_concepts()`: textcls/data/concepts/).
Imports no torch."""
from __future__ import annotations

from pathlib import Path

from textcls.interpret.interpreters.registry import InterpreterError, Option, register_interpreter

CONCEPTS = Path(__file__).resolve().parents[2] / "data" / "concepts"


def shipped_concepts() -> dict[str, Path]:
    """{name: file} of the concepts that ship with textcls (textcls/data/concepts/*.txt)."""
    return {p.stem: p for p in sorted(CONCEPTS.glob("*.txt"))}


def concept_of(raw) -> list[str]:
    """The concept's texts: a shipped concept's name, a file, texts separated by '|' or a list (at least 3)."""
    from textcls.interpret.interpreters._inputs import concept_texts
    if isinstance(raw, str) and "|" not in raw and "\n" not in raw:
        name = raw.strip()
        if name in shipped_concepts() and not Path(name).is_file():
            raw = str(shipped_concepts()[name])
        elif name and (name.endswith((".txt", ".csv", ".tsv")) or "/" in name) and not Path(name).expanduser().is_file():
            raise InterpreterError(f"concept file {name} not found (or name a shipped concept: "
                                   f"{', '.join(shipped_concepts())})")
    return concept_texts(raw, least=3)


def _applies(predictor) -> str | None:
    import importlib.util
    from textcls.interpret.tcav import FAMILIES
    name = getattr(getattr(predictor, "model", None), "registry_name", "")
    if name not in FAMILIES:
        return f"TCAV reads the layers of the six families and Hugging Face models, not {name or 'this model'}"
    if importlib.util.find_spec("sklearn") is None or importlib.util.find_spec("scipy") is None:
        return "TCAV needs scikit-learn and scipy (pip install scikit-learn)"
    return None


def _render(r) -> str:
    fmt = lambda v: "-" if v is None else f"{v:.2f}"                                  # noqa: E731
    lines = [f"TCAV: {r.n_concept} concept texts against {r.n_per_run} random texts of {r.n_texts}, {r.runs} runs "
             f"(+ {r.runs} random), seed {r.seed}, {r.seconds:.1f} s",
             f"{'class':12s} {'layer':18s} {'score':>6s} {'random':>7s} {'p':>7s} {'CAV acc':>8s}  verdict"]
    for x in r.rows:
        p = "-" if x.p_value is None else f"{x.p_value:.4f}"
        verdict = x.verdict
        lines.append(f"{x.label[:12]:12s} {x.layer[:18]:18s} {fmt(x.score):>6s} {fmt(x.random_mean):>7s} {p:>7s} "
                     f"{x.cav_accuracy:>8.2f}  {verdict}")
    return "\n".join(lines + list(r.notes))


@register_interpreter(
    "tcav", "Concepts (TCAV)", inputs=("concept",), optional=("data", "split", "limit", "data_root"),
    options=(Option("label", "", "the class to test (default: every class)"),
             Option("layer", "all", "all, last, or layer names separated by commas"),
             Option("runs", 15, "CAVs of the concept against random texts, and as many random-vs-random ones",
                    low=2, high=100),
             Option("seed", 0, "seed of the random samples and the linear classifiers", low=0, high=2**31 - 1),
             Option("pooling", "mean", "a layer's activation over a text's positions: their mean, or the [CLS] "
                    "position (Transformer with cls pooling, Hugging Face encoders)", choices=("mean", "cls"))),
    output="table", cost="split", progress=True, command="tcav", applies=_applies, render=_render,
    help="how much a concept (a few texts) pushes a class's logit at each layer, against random texts (TCAV)",
    example={"checkpoint": "kim_cnn-sst2", "inputs": {"concept": "positive", "limit": 100},
             "options": {"runs": 3, "label": "positive"}})
def run(predictor, inputs: dict, progress=None, *, label: str, layer: str, runs: int, seed: int, pooling: str):
    from textcls.interpret.interpreters._inputs import split_rows
    from textcls.interpret.tcav import TcavError, run_tcav
    concept = concept_of(inputs.get("concept"))
    labels = [label.strip()] if label.strip() else None
    if labels and labels[0] not in list(predictor.labels):
        raise InterpreterError(f"unknown label {labels[0]!r}; the labels: {', '.join(predictor.labels)}")
    texts, _ = split_rows(predictor, inputs)
    try:
        return run_tcav(predictor, concept, texts, labels=labels, layer=layer, runs=runs, seed=seed,
                        pooling=pooling, progress=progress)
    except TcavError as e:
        raise InterpreterError(str(e)) from None
