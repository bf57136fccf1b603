"""The model work the pages ask for, one function per job: the one implementation of each. Every job takes `load`
first - `load(path, stamp)` gives the shared, read-only Predictor of a checkpoint folder - then plain arguments,
and returns plain picklable data: numpy arrays, dicts, and records of torch-free modules (textcls.records,
textcls.interpret.records), never a model or a tensor, so the server reads an answer without importing torch.

Each job is registered by the `job` decorator (JOBS: name -> Job, with how many answers the pages keep, whether it
is batch work with its own thread scope, whether it reports progress); a page asks for one through one door,
pages.common.cache.ask. Where a job runs: the model worker (textcls.serve.worker.start_job, in a thread of its own
so a long explanation never holds up another session's predictions), with `load` = its bounded model cache; with
the worker off (TEXTCLS_WORKER=0), the same function in the server on the same kind of cache
(textcls.serve.inprocess).

Jobs: `interpret` (any registered interpreter: textcls.interpret.interpreters - concepts, salience clusters,
training-data attribution, the neuron view; new kinds of model work are interpreters, not new jobs) and
`interpret_why_not` (whether one applies); `facts`, `reading` (how one checkpoint reads a text: tokens, unknown words, which explanation methods and
interventions apply), Inspect's `pieces`, `attention_verdict` and `side_by_side`; Patch's `patch` (a minimal
pair patched over one grid); Attribute's `explanation`, `erasure`, `erasure_curves`, `random_erasure`,
`attention_tests`, `sanity`, `intervention`, `compare_edit` and the data-set run (`slice_start`, `slice_step`,
`slice_report`: a SliceRun kept in this process, stepped chunk by chunk so the page shows progress and can stop
it); Evaluate's data-set views (`corpus_support`, `token_weights`, `filter_ngrams`: passes over a split that
report their progress); Explore's `representations`, `projection`, `flip_report`; the Lab's demos
(`activation_statistics`, `negation_demo`, `hcan_branches`, `agcnn_gates`, on a checkpoint or an untrained small
model); Benchmarks' `lama_f4`, `time_checkpoints` and `run_bench` (the re-measure, reporting its progress);
Train's `parameter_count`; the lessons' `lesson_step`.
"""
from __future__ import annotations

import functools
import inspect
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from textcls.records import TextReading


@dataclass(frozen=True)
class Job:
    """One kind of model work: `fn(load, *args[, progress])`. `keep`: how many answers the pages' one door keeps
    (pages.common.cache.ask; 0: never cached - a run that holds state, a timing, a form's values); `own_scope`:
    batch work over many texts that chooses its own thread scope (every other job runs as interactive work);
    `progress`: it takes `progress=` and reports as it goes (read from its signature)."""
    name: str
    fn: Callable
    keep: int = 0
    own_scope: bool = False
    progress: bool = False


JOBS: dict[str, Job] = {}       # name -> Job, in the order they are defined


def job(keep: int = 0, *, own_scope: bool = False):
    """Register the function below as the job of its name (a new kind of model work a page needs is one function
    here with this decorator; a new kind of explanation is an interpreter: textcls.interpret.interpreters). A
    function with a `progress` parameter reports progress."""
    def register(fn):
        JOBS[fn.__name__] = Job(fn.__name__, fn, keep, own_scope, "progress" in inspect.signature(fn).parameters)
        return fn
    return register


def get_job(name: str) -> Job:
    """The registered job `name`; ValueError for a name no job has."""
    j = JOBS.get(name)
    if j is None:
        raise ValueError(f"unknown model job {name!r}")
    return j


# ---------------------------------------------------------------- facts of a model (Home, Compare, Inspect)

@job(keep=64)
def facts(load, path: str, stamp: float):
    """The `ModelFacts` of a checkpoint (what the pages read of a model they do not hold); loading it runs the
    folder's full check first."""
    from textcls.interpret.context_mixing import methods_for
    from textcls.models.hf.pieces import has_word_pieces
    from textcls.records import ModelFacts, SpecRecord
    p = load(path, stamp)
    specs = tuple(SpecRecord(s.name, tuple(s.axes), s.kind, s.description, s.values)
                  for s in (p.model.map_specs() if hasattr(p.model, "map_specs") else []))
    note = getattr(p.model, "attention_note", None)
    return ModelFacts(specs, tuple(p.labels),
                      word_pieces=bool(has_word_pieces(p)), attention_note=str(note) if note else None,
                      mixing=tuple(methods_for(p.model)))


def _stoi(p):
    return getattr(getattr(getattr(p, "tokenizer", None), "vocab", None), "stoi", None)


def _instance(p, text: str):
    from textcls.interpret import as_source
    return as_source(p).instances([text])[0]


@job(keep=512)
def reading(load, path: str, stamp: float, text: str) -> TextReading:
    """How the checkpoint reads `text` (tokens, unknown words, truncation) and what applies to it (explanation
    methods, interventions): what Attribute lays out before computing anything. Raises EntitySpanError for a
    relation sentence whose entity tags the model cannot use."""
    from textcls.data.unknown import unknown_tokens
    from textcls.interpret import interventions as iv
    from textcls.interpret.attention import explanation_source
    from textcls.interpret.methods import names, why_not
    p = load(path, stamp)
    inst = _instance(p, text)
    tokens = tuple(inst.tokens or ())
    unknown = unknown_tokens(_stoi(p), tokens)
    not_applicable = {m: why for m in names() if (why := why_not(p.model, m)) is not None}
    offer = p.model.interventions()
    try:
        source = explanation_source(p.model)
    except ValueError:
        source = None
    config = getattr(getattr(p, "tokenizer", None), "config", None)
    return TextReading(tokens=tokens, n=int(inst.n), unknown=None if unknown is None else len(unknown),
                       not_applicable=not_applicable, attention_source=source, labels=tuple(p.labels),
                       interventions=tuple(iv.menu(p.model)), heads=int(offer.heads), layers=int(offer.layers),
                       filters=dict(offer.filters), activations=tuple(offer.activations),
                       activation=(getattr(p.model.config, offer.activation_field)
                                   if offer.activation_field else None),
                       word_level=config is None or getattr(config, "level", "word") == "word")


# ---------------------------------------------------------------- Inspect

@job(keep=4)
def pieces(load, path: str, stamp: float, text: str):
    """`textcls.models.hf.pieces.piece_attention_of`: a `PieceAttention` (plain data, torch-free class)."""
    from textcls.models.hf.pieces import piece_attention_of
    return piece_attention_of(load(path, stamp), text)


@job(keep=512)
def attention_verdict(load, path: str, stamp: float, text: str) -> dict:
    """The model's own attention (the shading on Compare) against the word orders of this text
    (`textcls.interpret.chance`, `versus_random`), with the rule in words under "rule": Inspect's faithfulness
    line."""
    from textcls.interpret.chance import judge
    from textcls.interpret.methods import explanation as explain
    from textcls.interpret.rankings import ONE_TEXT_NOTE, VERDICT_RULE
    p = load(path, stamp)
    inst = _instance(p, text)
    _, _, verdicts = judge(p.model, inst, {"attention": explain(p.model, inst, "attention", labels=p.labels)})
    return {**verdicts["attention"], "rule": f"{VERDICT_RULE} {ONE_TEXT_NOTE}"}


@job(keep=64)
def side_by_side(load, path: str, stamp: float, text: str):
    """`textcls.interpret.context_mixing.compare.side_by_side` (a `SideBySide`, numpy only)."""
    from textcls.interpret.context_mixing.compare import side_by_side as run
    return run(load(path, stamp), text)


# ---------------------------------------------------------------- Patch

@job(keep=128)
def patch(load, path: str, stamp: float, clean: str, corrupt: str, by: str):
    """`textcls.interpret.patching.patch_pair` of a minimal pair over one grid, with attribution patching beside
    it: a PatchResult (numpy and plain values; the module imports no torch). Raises PairError (one line) for a pair
    or a grid that cannot be patched."""
    from textcls.interpret.patching import patch_pair
    return patch_pair(load(path, stamp), clean, corrupt, by, attribution=True)


# ---------------------------------------------------------------- Attribute

_EXPLAINED: OrderedDict = OrderedDict()     # request -> (value, seconds): the newest explanations computed here,
_EXPLAINED_LOCK = threading.Lock()          # which the erasure jobs score without the page sending them back
MAX_EXPLAINED = 64


@job(keep=4096)
def explanation(load, path: str, stamp: float, text: str, method: str, baseline: str, steps: int, removal: str,
                contrast=None, options: dict | None = None):
    """(one explanation of `text` by any registered method: an Attribution or a vector, the seconds it took);
    `contrast`: a foil label (name or "runner-up") for the contrastive methods (textcls.interpret.contrastive);
    `options`: the method's own options (textcls.interpret.methods: Method.options)."""
    from textcls.serve.answers import frozen
    from textcls.interpret.methods import explanation as explain
    key = (path, stamp, text, method, baseline, steps, removal, contrast, frozen(options))
    with _EXPLAINED_LOCK:
        hit = _EXPLAINED.get(key)
    if hit is not None:
        return hit
    p = load(path, stamp)
    inst = _instance(p, text)
    t0 = time.perf_counter()
    value = explain(p.model, inst, method, labels=p.labels, baseline=baseline, steps=steps, removal=removal,
                    contrast=contrast, options=options)
    answer = value, time.perf_counter() - t0
    with _EXPLAINED_LOCK:
        _EXPLAINED[key] = answer
        while len(_EXPLAINED) > MAX_EXPLAINED:
            _EXPLAINED.popitem(last=False)
    return answer


@job(keep=512)
def erasure_curves(load, path: str, stamp: float, text: str, method: str, baseline: str, steps: int, removal: str,
                   contrast=None, options: dict | None = None) -> dict:
    """ERASER's erasure curves of one explanation (the request of `explanation`; its .scores rank the words, by the
    contrastive weights where there is a contrast; about 11 passes)."""
    from textcls.interpret import faithfulness
    value = explanation(load, path, stamp, text, method, baseline, steps, removal, contrast, options)[0]
    p = load(path, stamp)
    return faithfulness.erasure_curves(p.model, _instance(p, text), value, removal=removal)


@job(keep=2048)
def erasure_flip(load, path: str, stamp: float, text: str, method: str, baseline: str, steps: int, removal: str,
                 contrast=None, options: dict | None = None) -> dict:
    """How many of the top words of one explanation (the request of `explanation`) must go before the decision
    flips (7 passes a token)."""
    from textcls.interpret import faithfulness
    value = explanation(load, path, stamp, text, method, baseline, steps, removal, contrast, options)[0]
    p = load(path, stamp)
    return faithfulness.erasure_flip(p.model, _instance(p, text), value, removal=removal)


@job(keep=512)
def random_erasure(load, path: str, stamp: float, text: str, removal: str, observed: tuple = ((), ())) -> dict:
    """What chance and the best and worst word orders do on `text` (`textcls.interpret.chance.text_chance`: the
    exact permutation distribution on a short text, seeded random orders beyond, NAOPC's bounds); `observed`: the
    AOPCs (comprehensiveness, sufficiency) of the explanations it will judge."""
    from textcls.interpret.chance import text_chance
    p = load(path, stamp)
    return text_chance(p.model, _instance(p, text), removal=removal, observed=observed)


@job(keep=512)
def attention_tests(load, path: str, stamp: float, text: str, n_permutations: int) -> dict:
    """{"perm": permutation_test, "unif": uniform_attention_test}, {} for a model without attention weights."""
    from textcls.interpret import faithfulness
    p = load(path, stamp)
    if not faithfulness.attention_maps(p.model):
        return {}
    inst = _instance(p, text)
    return {"perm": faithfulness.permutation_test(p.model, inst, n_permutations),
            "unif": faithfulness.uniform_attention_test(p.model, inst)}


@job(keep=512)
def sanity(load, path: str, stamp: float, text: str, method: str, baseline: str, steps: int, removal: str,
           contrast=None, options: dict | None = None) -> dict:
    """The cascading randomisation check of one explanation (on a copy of the model; textcls.interpret.sanity)."""
    from textcls.interpret.methods import explain
    from textcls.interpret.sanity import cascading_randomisation
    p = load(path, stamp)
    opts = dict(labels=p.labels, baseline=baseline, n_steps=steps, removal=removal,
                **({} if contrast is None else {"contrast": contrast}), **(options or {}))
    return cascading_randomisation(p.model, [_instance(p, text)], [method],
                                   lambda model, xs, m: explain(model, xs, m, **opts))


@job(keep=256)
def intervention(load, path: str, stamp: float, text: str, kind: str, choice: dict) -> dict:
    """One intervention (`interventions.build(model, kind, **choice)`) on `text`: {"describe", "tvd", "flipped",
    "probs_before", "probs_after", "labels", "attention_before", "attention_after" (the model's own attention
    importance with and without it; None for a model without)}. Raises ValueError for a choice the model does
    not offer, with the reason."""
    from textcls.interpret import intervene
    from textcls.interpret import interventions as iv
    from textcls.interpret.attention import attention_importance_instances
    p = load(path, stamp)
    inst = _instance(p, text)
    act = iv.build(p.model, kind, **choice)
    res = intervene(p.model, inst, act, return_maps=False, labels=p.labels)
    before = after = None
    try:
        run_model = act.prepare(p.model)
        before, after = (attention_importance_instances(run_model, [inst], edits=e)[0].scores
                         for e in (None, act.edits(run_model)))
    except ValueError:
        pass
    return {"describe": act.describe(), "tvd": float(res.tvd), "flipped": bool(res.flipped),
            "probs_before": res.probs_before, "probs_after": res.probs_after, "labels": list(p.labels),
            "attention_before": before, "attention_after": after}


@job(keep=256)
def compare_edit(load, ckpts: list[tuple[str, str, float]], text: str, edited: str):
    """`textcls.interpret.interventions.compare_edit` of [(name, path, stamp)] for text -> edited: a list of
    EditComparison (torch-free records)."""
    from textcls.interpret import interventions
    return interventions.compare_edit({name: load(path, stamp) for name, path, stamp in ckpts}, text, edited)


_SLICES: OrderedDict = OrderedDict()     # key -> SliceRun (a page's data-set run), the newest last
_SLICES_LOCK = threading.Lock()
MAX_SLICES = 4                           # runs kept: each holds its texts' instances and per-text numbers


@job(own_scope=True)
def slice_start(load, path: str, stamp: float, key: str, texts: list[str], methods: list[str], removal: str,
                baseline: str, steps: int) -> int:
    """Begin a data-set faithfulness run (textcls.interpret.batched.SliceRun) kept here under `key`; returns how
    many texts it has. `slice_step(key)` scores the next chunk."""
    from textcls.interpret.batched import SliceRun
    from textcls.interpret.chance import BEAM
    run = SliceRun(load(path, stamp), list(texts), methods=list(methods), removal=removal, baseline=baseline,
                   n_steps=steps, naopc_beam=BEAM)                     # NAOPC: the column that compares models
    with _SLICES_LOCK:
        _SLICES[key] = run
        while len(_SLICES) > MAX_SLICES:
            _SLICES.popitem(last=False)
    return run.total


def _slice(key: str):
    with _SLICES_LOCK:
        run = _SLICES.get(key)
    if run is None:
        raise LookupError("this data-set run is no longer held (the model worker was restarted, or newer runs "
                          "replaced it): press Run again")
    return run


@job(own_scope=True)
def slice_step(load, key: str) -> int:
    """Score the next chunk of texts of the run `key`; returns how many texts are done."""
    return _slice(key).step()


@job(own_scope=True)
def slice_report(load, key: str, gold: list[int] | None, label_names: list[str] | None):
    """(SliceReport, {method: plausibility / seconds per text}, notes) of the texts done so far."""
    from textcls.interpret.measures import slice_measures
    run = _slice(key)
    extra, notes = slice_measures(run, gold, label_names)
    return run.report(), extra, notes


# ---------------------------------------------------------------- Evaluate's data-set views

@job(keep=64)
def corpus_support(load, path: str, stamp: float) -> tuple[bool, str, int]:
    """(whether the model has its own token weights, what they are / why not, how many filter banks it has)."""
    from textcls.analysis import corpus_views as cv
    model = load(path, stamp).model
    ok, source = cv.supports_token_weights(model)
    return ok, source, len(cv.filter_banks(model))


@job(own_scope=True)
def token_weights(load, path: str, stamp: float, texts: list[str], gold: list[str] | None, cached_only: bool,
                  progress=None):
    """`corpus_views.token_weights` over texts (a CorpusWeights), kept in the disk cache (CorpusCache); with
    `cached_only`, the cached one or None without computing."""
    from textcls.analysis import corpus_views as cv
    from textcls.analysis.corpus_cache import CorpusCache
    return cv.token_weights(load(path, stamp), texts, gold, cache=CorpusCache(), cached_only=cached_only,
                            progress=progress)


@job(own_scope=True)
def filter_ngrams(load, path: str, stamp: float, texts: list[str], top: int, cached_only: bool, progress=None):
    """`corpus_views.filter_ngrams` over texts (a FilterNgrams), kept in the disk cache like `token_weights`."""
    from textcls.analysis import corpus_views as cv
    from textcls.analysis.corpus_cache import CorpusCache
    return cv.filter_ngrams(load(path, stamp), texts, top=top, cache=CorpusCache(), cached_only=cached_only,
                            progress=progress)


# ---------------------------------------------------------------- Explore

@job(keep=32, own_scope=True)
def representations(load, path: str, stamp: float, texts: tuple[str, ...]):
    """(N, F) classifier-input vectors of texts (textcls.analysis.representations)."""
    from textcls.analysis.representations import representations as reps
    return reps(load(path, stamp), list(texts))


@job(keep=32, own_scope=True)
def projection(load, path: str, stamp: float, texts: tuple[str, ...], method: str, seed: int):
    """(N, 2) projection (PCA / t-SNE / UMAP) of the texts' representations."""
    from textcls.analysis.representations import project
    return project(representations(load, path, stamp, texts), method, seed=seed)


@job(keep=64, own_scope=True)
def flip_report(load, path: str, stamp: float, texts: tuple[str, ...], generator: str, rules: str, seed: int):
    """`textcls.analysis.counterfactuals.run_generator` over texts (raises CounterfactualError)."""
    from textcls.analysis.counterfactuals import run_generator
    return run_generator(load(path, stamp), list(texts), generator, checkpoint=Path(path).name,
                         rules=rules or None, seed=seed)


# ---------------------------------------------------------------- the Lab
# A demo's model is a checkpoint - ("checkpoint", path, stamp) - or, when none is here, an untrained small model
# built on the demo's texts - ("untrained", family, texts): random weights that show the mechanics only.

@job(keep=64)
def activation_statistics(load, activations: tuple[str, ...], seed: int) -> list[dict]:
    """AGCNN Fig. 2: the activations' mean and variance through 10 random dense layers (textcls.interpret.lab)."""
    from textcls.interpret import lab
    return lab.activation_statistics(tuple(activations), seed=int(seed))


@job(keep=64)
def negation_demo(load, ckpts: list[tuple[str, str, float]], sentences: list[str]) -> list[dict]:
    """`lab.negation_demo` of [(name, path, stamp)] on the sentences."""
    from textcls.interpret import lab
    return lab.negation_demo({name: load(path, stamp) for name, path, stamp in ckpts}, list(sentences))


@functools.lru_cache(maxsize=8)
def _untrained(family: str, texts: tuple[str, ...]):
    import torch

    import textcls
    from textcls.data.text import Tokenizer, TokenizerConfig
    from textcls.interpret import Source
    hier = textcls.get_entry(family).input_kind == "sentences"
    tok = Tokenizer.build(list(texts), TokenizerConfig(hierarchical=hier))
    torch.manual_seed(0)
    model = textcls.create_model(family, vocab_size=len(tok.vocab), num_labels=2, preset="small").eval()
    return Source(model, tok.encode, ["negative", "positive"], f"untrained small {family}")


def _lab_source(load, source: tuple):
    from textcls.interpret import as_source
    if source[0] == "untrained":
        return _untrained(source[1], tuple(source[2]))
    return as_source(load(source[1], source[2]))


@job(keep=128)
def lab_reading(load, source: tuple, text: str) -> tuple[list[str], int]:
    """(the tokens a Lab demo's model reads in `text`, how many)."""
    (inst,) = _lab_source(load, source).instances([text])
    return list(inst.tokens or []), int(inst.n)


@job(keep=128)
def hcan_branches(load, source: tuple, text: str, word: int) -> dict:
    """`lab.hcan_branches` of the demo's HCAN on `text` (one word's attention rows); ValueError for a model
    without the two branches."""
    from textcls.interpret import lab
    src = _lab_source(load, source)
    (inst,) = src.instances([text])
    return lab.hcan_branches(src.model, inst, int(word))


@job(keep=128)
def agcnn_gates(load, source: tuple, text: str) -> tuple[dict, dict]:
    """(`lab.gate_closures`, `lab.gate_suppression`) of the demo's AGCNN on `text`."""
    from textcls.interpret import lab
    src = _lab_source(load, source)
    (inst,) = src.instances([text])
    return (lab.gate_closures(src.model, inst, labels=src.labels),
            lab.gate_suppression(src.model, inst, labels=src.labels))


# ---------------------------------------------------------------- Benchmarks

@job(keep=1)
def bench_models(load) -> list[str]:
    """The rows of the papers' configurations a re-measure may pick (their labels)."""
    from textcls.experiments.specs import default_models
    return [m.label for m in default_models()]


@job(keep=16)
def lama_f4(load, heads: list[int]) -> dict:
    """LAMA Fig. 4: attention-layer parameters against heads, counted on built modules."""
    from textcls.experiments.paper_bench import lama_f4 as count
    return count(heads=list(heads))


@job(own_scope=True)
def time_checkpoints(load, infos: list) -> list[dict]:
    """Milliseconds per sentence and parameters of these checkpoints (CheckpointInfo) on this machine."""
    from textcls.experiments.bench import EXAMPLE_SENTENCE
    from textcls.experiments.tradeoffs import time_checkpoints as timed
    return timed(infos, EXAMPLE_SENTENCE)


@job(own_scope=True)
def run_bench(load, options: dict, progress=None) -> dict:
    """`textcls.experiments.bench.run_bench(**options)`, its progress lines reported as it goes."""
    from textcls.experiments import bench
    return bench.run_bench(**options, progress=progress)


# ---------------------------------------------------------------- Train

@job()
def parameter_count(load, family: str, preset: str | None, variant: str | None, overrides: dict) -> int:
    """The parameters of `family` built from its paper defaults, `preset`, `variant` and `overrides`, counted on
    torch's meta device (shapes only: no memory, no values). Raises ValueError (or what the model's constructor
    raises) for settings that do not make a model."""
    from textcls.models.registry import get_entry, make_config
    from textcls.runtime.sizing import count_parameters
    return count_parameters(get_entry(family).cls, make_config(family, preset=preset, variant=variant, **overrides))


# ---------------------------------------------------------------- lessons

@job(keep=256)
def lesson_step(load, lesson_id: str, step: int, value: float | None, infos: list, stamps: dict[str, float]):
    """`textcls.teach.lessons.run_step` of one step (0-based) on the checkpoints `infos` (CheckpointInfo), each
    loaded when the step asks for it; `stamps`: path -> the stamp the server saw."""
    from textcls.teach import lessons
    lib = lessons.Library(infos, lambda i: load(str(i.path), stamps[str(i.path)]))
    return lessons.run_step(lessons.get(lesson_id).steps[step], lib, value)


# ---------------------------------------------------------------- any registered interpreter

@job(keep=64, own_scope=True)
def interpret(load, name: str, path: str, stamp: float, inputs: dict, options: dict, progress=None):
    """`textcls.interpret.interpreters.run` of interpreter `name` on one checkpoint: its result (plain data)."""
    from textcls.interpret import interpreters
    return interpreters.run(load(path, stamp), name, inputs, options, progress=progress)


@job(keep=256)
def interpret_why_not(load, name: str, path: str, stamp: float) -> str | None:
    """None where interpreter `name` applies to the checkpoint, else one line saying why not."""
    from textcls.interpret import interpreters
    return interpreters.why_not(load(path, stamp), name)


def run(load, name: str, *args, progress=None):
    """Job `name` (one of JOBS) with `load` and its arguments; `progress(done, total)` goes to a job that reports
    progress."""
    j = get_job(name)
    return j.fn(load, *args, progress=progress) if j.progress else j.fn(load, *args)
