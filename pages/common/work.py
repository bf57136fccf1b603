"""The model work of Attribute, Evaluate's data-set views, Explore, the Lab, Benchmarks, Train's parameter count,
Patch and the lessons: each function is a request through the one door, `cache.ask` (a `textcls.serve.work` job,
run where `cache.model_job` decides - the model worker when it is on, so the server's interpreter never imports
torch for these pages - and kept in the one cache as many times as the job declares, per (checkpoint folder, its
stamp, text or texts, settings)), so a revisit, in this session or another, is instant and a checkpoint saved
again is recomputed. Settings a method ignores are left out of the request, so changing them recomputes nothing.
Results are plain data (numpy, records of torch-free modules), each caller's own copy.

A data-set run (`slice_run`) is a `SliceJob`: the run itself lives where the model does, the page steps it chunk
by chunk (progress bar, Stop) and keeps the handle in its session.
"""
from __future__ import annotations

import uuid
from pathlib import Path

from pages.common import cache
from pages.common.cache import ask, stamp


# ---------------------------------------------------------------- how a checkpoint reads a text

def reading(path: str | Path, text: str):
    """A `textcls.records.TextReading`: the tokens the checkpoint reads in `text`, its unknown words, which
    explanation methods and interventions apply. Raises what tokenising raises (EntitySpanError) or loading
    raises (CheckpointError)."""
    return ask("reading", str(path), stamp(path), text)


# ---------------------------------------------------------------- a minimal pair patched (Patch)

def patch(path: str | Path, clean: str, corrupt: str, by: str):
    """`textcls.interpret.patching.patch_pair` of (clean, corrupt) over the grid `by`, attribution patching
    included: a PatchResult (plain data), cached per (checkpoint, its stamp, pair, grid). Raises PairError (one
    line) for a pair that does not line up word by word or a grid the model does not have."""
    return ask("patch", str(path), stamp(path), clean, corrupt, by)


# ---------------------------------------------------------------- explanations and their checks (Attribute)

def _used(method: str, baseline: str, steps: int) -> tuple[str, str, int]:
    """(method, baseline, steps) with the method's registered name and the settings it ignores fixed."""
    from textcls.interpret.methods import canonical, options_used
    method = canonical(method)
    used = options_used(method, baseline=baseline, n_steps=steps)
    return method, used["baseline"] or "pad", used["n_steps"] or 50


def _removal_used(method: str, removal: str) -> str:
    from textcls.interpret.methods import options_used
    return options_used(method, removal=removal)["removal"] or "delete"


def _key(path, text: str, method: str, baseline: str, steps: int, removal: str, contrast=None,
         options: dict | None = None) -> tuple:
    """The request: the settings `method` ignores fixed, its contrast (a foil label or "runner-up") kept only
    where it explains one label rather than another (textcls.interpret.contrastive), None elsewhere, and its own
    options (Method.options: checked, defaults filled in; None for a method without any). Raises OptionError (a
    ValueError, one line) for a bad option value."""
    from textcls.interpret.methods import options_used
    method, baseline, steps = _used(method, baseline, steps)
    used = options_used(method, contrast=contrast, options=options)
    return (str(path), stamp(path), text, method, baseline, steps, _removal_used(method, removal), used["contrast"],
            used["options"])


def _explanation(*request):
    return ask("explanation", *request)


def explanation(path: str | Path, text: str, method: str, *, baseline: str = "pad", steps: int = 50,
                removal: str = "delete", contrast=None, options: dict | None = None):
    """One explanation of `text` by one checkpoint by any registered method (textcls.interpret.methods): an
    `Attribution` or a vector; with `contrast` (a label name or "runner-up"), why the predicted label rather than
    that one, for the methods that can say. Cached per (checkpoint, text, method, the settings that method uses).
    Raises what the library raises (ValueError: the method does not apply to this model or input)."""
    return _explanation(*_key(path, text, method, baseline, steps, removal, contrast, options))[0]


def explanation_seconds(path: str | Path, text: str, method: str, *, baseline: str = "pad", steps: int = 50,
                        removal: str = "delete", contrast=None, options: dict | None = None) -> float:
    """How many seconds `explanation` took when it was computed (its cost; a cached answer is instant)."""
    return _explanation(*_key(path, text, method, baseline, steps, removal, contrast, options))[1]


def sanity(path: str | Path, text: str, method: str, *, baseline: str = "pad", steps: int = 50,
           removal: str = "delete", contrast=None, options: dict | None = None) -> dict:
    """The cascading randomisation check of one explanation of `text` (textcls.interpret.sanity: the layers
    re-initialised top-down in a copy of the model, Spearman rho after each stage), cached like `explanation`."""
    return ask("sanity", *_key(path, text, method, baseline, steps, removal, contrast, options))


def erasure(path: str | Path, text: str, method: str, *, baseline: str = "pad", steps: int = 50,
            removal: str = "delete", contrast=None, options: dict | None = None):
    """(erasure_curves, erasure_flip) of one explanation (see `explanation`, its words ranked by the contrastive
    weights when there is a contrast; the curves measure the predicted label's probability), cached like it."""
    key = _key(path, text, method, baseline, steps, removal, contrast, options)
    return ask("erasure_curves", *key), ask("erasure_flip", *key)


def erasure_curves(path: str | Path, text: str, method: str, *, baseline: str = "pad", steps: int = 50,
                   removal: str = "delete", contrast=None, options: dict | None = None):
    """erasure_curves alone (about 11 forward passes; `erasure` adds the flip test's 7 per token), cached."""
    return ask("erasure_curves", *_key(path, text, method, baseline, steps, removal, contrast, options))


def random_erasure(path: str | Path, text: str, *, removal: str = "delete", observed=((), ())) -> dict:
    """What chance, the best and the worst word order do on `text` (textcls.interpret.chance: every order of a
    short text, seeded random orders beyond, NAOPC's bounds), given the AOPCs (comprehensiveness, sufficiency) of
    the explanations it will judge; cached."""
    key = tuple(tuple(round(float(x), 9) for x in part) for part in observed)
    return ask("random_erasure", str(path), stamp(path), text, removal, key)


def attention_tests(path: str | Path, text: str, *, n_permutations: int = 50) -> dict:
    """{"perm": permutation_test, "unif": uniform_attention_test} of a model with attention weights, {} for a
    model without; cached per (checkpoint, text)."""
    return ask("attention_tests", str(path), stamp(path), text, n_permutations)


def intervention(path: str | Path, text: str, kind: str, choice: dict) -> dict:
    """One intervention on `text` (textcls.serve.work.intervention: the probabilities before and after, the
    model's own attention before and after), cached per (checkpoint, text, kind, choices). Raises ValueError
    for a choice the model does not offer."""
    return ask("intervention", str(path), stamp(path), text, kind, dict(choice))


def compare_edit(ckpts: dict[str, str | Path], text: str, edited: str):
    """`textcls.interpret.interventions.compare_edit` of {name: checkpoint folder} for text -> edited (a list of
    EditComparison), cached per (checkpoints and their stamps, text, edited)."""
    return ask("compare_edit", [(n, str(p), stamp(p)) for n, p in ckpts.items()], text, edited)


class SliceJob:
    """A data-set faithfulness run (textcls.interpret.batched.SliceRun) held where the model is, stepped from the
    page: `run(progress)` scores chunk after chunk until done or `stop()`; `report(gold, label_names)` covers the
    texts done."""

    def __init__(self, path: str | Path, texts, *, removal: str, baseline: str, steps: int, methods):
        self.key = uuid.uuid4().hex
        self.done, self.stop_requested = 0, False
        self.total = ask("slice_start", str(path), stamp(path), self.key, list(texts), list(methods), removal,
                               baseline, steps)

    @property
    def finished(self) -> bool:
        return self.done >= self.total

    def stop(self) -> None:
        """Stop before the next chunk (a Stop button's callback)."""
        self.stop_requested = True

    def resume(self) -> None:
        self.stop_requested = False

    def run(self, progress=None) -> "SliceJob":
        if progress:
            progress(self.done, self.total)
        while not self.finished and not self.stop_requested:
            self.done = ask("slice_step", self.key)
            if progress:
                progress(self.done, self.total)
        return self

    def report(self, gold=None, label_names=None):
        """(SliceReport, {method: plausibility and seconds per text}, notes) of the texts done (slice_measures)."""
        return ask("slice_report", self.key, None if gold is None else list(gold),
                         None if label_names is None else list(label_names))


def slice_run(path: str | Path, texts, *, removal: str = "delete", baseline: str = "pad", steps: int = 50,
              methods=("attention", "integrated_gradients", "random")) -> SliceJob:
    """A new `SliceJob` of one checkpoint over texts; not cached (it holds state): the page keeps it."""
    return SliceJob(path, texts, removal=removal, baseline=baseline, steps=steps, methods=methods)


# ---------------------------------------------------------------- Evaluate's data-set views

def corpus_support(path: str | Path) -> tuple[bool, str, int]:
    """(whether the checkpoint has its own token weights, what they are / why not, how many filter banks it has),
    cached per (checkpoint, stamp): asked once, not on every run of the page."""
    return ask("corpus_support", str(path), stamp(path))


# ---------------------------------------------------------------- data-set tools (Explore page)
# The projector samples before it gets here (textcls.analysis.representations.sample_rows).

def representations(path: str | Path, texts):
    """(N, F) classifier-input vectors of one checkpoint for texts (textcls.analysis.representations), cached."""
    return ask("representations", str(path), stamp(path), tuple(texts))


def projection(path: str | Path, texts, method: str = "pca", seed: int = 0):
    """(N, 2) projection (PCA / t-SNE / UMAP) of one checkpoint's representations of texts, cached."""
    return ask("projection", str(path), stamp(path), tuple(texts), method, seed)


def flip_report(path: str | Path, texts, generator: str, *, rules: str = "", seed: int = 0):
    """`textcls.analysis.counterfactuals.run_generator` of one checkpoint over texts, cached per (checkpoint, texts,
    generator, rules). Raises CounterfactualError for a generator that cannot run."""
    return ask("flip_report", str(path), stamp(path), tuple(texts), generator,
               rules if generator == "word_replacer" else "", seed)


# ---------------------------------------------------------------- the Lab
# A demo's model: `lab_source(info)` for a checkpoint, `untrained_source(family, texts)` for an untrained small one.

def lab_source(path: str | Path) -> tuple:
    return ("checkpoint", str(path), stamp(path))


def untrained_source(family: str, texts) -> tuple:
    return ("untrained", family, tuple(texts))


def activation_statistics(activations: tuple[str, ...], seed: int) -> list[dict]:
    """AGCNN Fig. 2's rows (textcls.interpret.lab.activation_statistics), cached per (activations, seed)."""
    return ask("activation_statistics", tuple(activations), int(seed))


def negation_demo(ckpts: dict[str, str | Path], sentences) -> list[dict]:
    """`lab.negation_demo` of {name: checkpoint folder} on the sentences, cached."""
    return ask("negation_demo", [(n, str(p), stamp(p)) for n, p in ckpts.items()], list(sentences))


def lab_reading(source: tuple, text: str) -> tuple[list[str], int]:
    """(tokens, how many) of `text` as the demo's model reads it."""
    return ask("lab_reading", source, text)


def hcan_branches(source: tuple, text: str, word: int) -> dict:
    """`lab.hcan_branches` of the demo's model on text, cached."""
    return ask("hcan_branches", source, text, int(word))


def agcnn_gates(source: tuple, text: str) -> tuple[dict, dict]:
    """(`lab.gate_closures`, `lab.gate_suppression`) of the demo's model on text, cached."""
    return ask("agcnn_gates", source, text)


# ---------------------------------------------------------------- Benchmarks (measured by the worker, not cached)

def bench_models() -> list[str]:
    """The labels of the papers' configurations the re-measure may pick."""
    return ask("bench_models")


def lama_f4(heads: tuple[int, ...]) -> dict:
    """LAMA Fig. 4's parameter counts for these numbers of heads, cached."""
    return ask("lama_f4", list(heads))


def time_checkpoints(infos) -> list[dict]:
    """Milliseconds per sentence and parameters of these checkpoints, timed now by the worker."""
    return ask("time_checkpoints", list(infos))


def run_bench(progress=None, **options) -> dict:
    """`textcls.experiments.bench.run_bench(**options)` in the worker; `progress(line)` as it goes."""
    return ask("run_bench", options, progress=progress)


# ---------------------------------------------------------------- lessons (Lessons page)

def lesson_step(lesson_id: str, step: int, value: float | None = None):
    """`textcls.teach.lessons.run_step` of one step (0-based) of a lesson on the checkpoints listed here (the shared,
    read-only models), cached per (lesson, step, slider value, the checkpoints and their stamps)."""
    valid, _ = cache.checkpoints()
    stamps = {str(i.path): stamp(i.path) for i in valid}
    return ask("lesson_step", lesson_id, step, value, list(valid), stamps,
               key=(lesson_id, step, value, tuple((i.name, p, t) for i, (p, t) in zip(valid, stamps.items()))))


def parameter_count(family: str, preset: str | None, variant: str | None, overrides: dict) -> int:
    """Train's check before a run: the parameters of the configured model, counted where the model work runs (the
    model worker when it is on: this process never imports torch for it). Not cached: the form's values vary."""
    return ask("parameter_count", family, preset, variant, dict(overrides))


__all__ = ["SliceJob", "activation_statistics", "agcnn_gates", "attention_tests", "bench_models",
           "compare_edit", "corpus_support", "erasure", "erasure_curves", "explanation", "explanation_seconds",
           "flip_report", "hcan_branches", "intervention", "lab_reading", "lab_source", "lama_f4", "lesson_step",
           "negation_demo", "parameter_count", "patch", "projection", "random_erasure", "reading", "representations",
           "run_bench", "sanity", "slice_run", "time_checkpoints", "untrained_source"]
