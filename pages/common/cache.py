"""The only st.cache_* wrappers of the app: checkpoint listing, models, predictions.

Models are loaded once per process (st.cache_resource) and shared read-only by every session: nothing here
or in the pages trains, edits or switches a cached model to training mode. A checkpoint replaced on disk is
reloaded because its files' modification time is part of the cache key.
"""
from __future__ import annotations

import atexit
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import streamlit as st

from textcls.runtime import paths
from textcls.checkpoint import CheckpointError, CheckpointInfo, list_all_checkpoints, load_checkpoint


def checkpoint_roots() -> list[Path]:
    """The folders listed: the shipped checkpoints (read-only), then the user's (textcls.runtime.paths)."""
    return paths.checkpoint_roots()


def user_checkpoints() -> Path:
    """Where the Train page saves: the user's folder, never the repository."""
    return paths.user_checkpoints()


def stamp(path: str | Path) -> float:
    """Modification time of a checkpoint's files (a new save changes it)."""
    p = Path(path)
    return max((f.stat().st_mtime for f in (p / "config.json", p / "model.safetensors") if f.exists()),
               default=0.0)


@st.cache_data(ttl=10, show_spinner=False)
def _checkpoints(roots: tuple[str, ...], deep: bool) -> tuple[list[CheckpointInfo], list[CheckpointInfo]]:
    infos = list_all_checkpoints(include_invalid=True, deep=deep)
    return [i for i in infos if i.valid], [i for i in infos if not i.valid]


def checkpoints(deep: bool | None = None) -> tuple[list[CheckpointInfo], list[CheckpointInfo]]:
    """(valid, invalid) checkpoints, shipped then the user's; re-read every 10 s at most. deep: validate every
    folder in full (textcls.checkpoint.validate_checkpoint, needs torch); None: in full once torch is loaded
    (the pages that run models), else the torch-free checks, so Home's first render does not wait for torch."""
    if deep is None:
        deep = "torch" in sys.modules
    return _checkpoints(tuple(str(r) for r in checkpoint_roots()), deep)


@st.cache_resource(show_spinner="Loading the model…", max_entries=32)
def _predictor(path: str, mtime: float):
    return load_checkpoint(path)


@st.cache_resource(show_spinner="Loading the model…", max_entries=32)
def _device_predictor(path: str, mtime: float, device: str):
    return load_checkpoint(path, device=device)


def predict_device() -> str:
    """Where predictions run: the GPU when there is one (textcls.runtime.devices.app_device, env TEXTCLS_DEVICE)."""
    from textcls.runtime.devices import app_device
    return str(app_device())


def describe_predict_device() -> str:
    """In words, for the pages: where predictions run (explanations and maps of the internals stay on the CPU)."""
    from textcls.runtime.devices import describe_device
    return describe_device(predict_device())


def _fast(path: str, mtime: float):
    """The predictor for plain predictions: on the GPU when there is one (the CPU one otherwise, shared)."""
    device = predict_device()
    return _predictor(path, mtime) if device == "cpu" else _device_predictor(path, mtime, device)


def predictor(path: str | Path):
    """The shared, read-only Predictor of a checkpoint folder (loaded once per process)."""
    return _predictor(str(path), stamp(path))


_PREFETCHED: dict[tuple, list] = {}    # (path, mtime, texts) -> predictions the warm-up computed (`_prefetch_evaluate`)


@st.cache_data(show_spinner=False, max_entries=512)
def _predict(path: str, mtime: float, texts: tuple[str, ...]):
    ahead = _PREFETCHED.pop((path, mtime, texts), None)
    return ahead if ahead is not None else _fast(path, mtime).predict(list(texts), return_maps=False)


@st.cache_data(show_spinner=False, max_entries=24)
def _predict_maps(path: str, mtime: float, text: str):
    return _predictor(path, mtime).predict([text], return_maps=True)[0]


def predict(path: str | Path, texts: list[str] | tuple[str, ...]):
    """Predictions (no maps) of one checkpoint for texts, cached per (checkpoint, texts)."""
    return _predict(str(path), stamp(path), tuple(texts))


def predict_maps(path: str | Path, text: str):
    """One text's Prediction with its maps, cached per (checkpoint, text)."""
    return _predict_maps(str(path), stamp(path), text)


__all__ = ["CheckpointError", "checkpoint_roots", "checkpoints", "user_checkpoints", "predictor", "predict", "predict_maps", "stamp"]


# ---------------------------------------------------------------- data sets (Train / Evaluate pages)

def _data_stamp(spec: str) -> float:
    """Modification time of a data file or folder given as a path (0 for names and hub ids)."""
    p = Path(spec).expanduser()
    try:
        if p.is_file():
            return p.stat().st_mtime
        if p.is_dir():
            return max((f.stat().st_mtime for f in p.iterdir()), default=p.stat().st_mtime)
    except OSError:
        pass
    return 0.0


@st.cache_data(show_spinner="Loading the data set…", max_entries=16)
def _dataset(spec: str, stamp: float, limit: int | None, text_column: str, label_column: str, seed: int,
             root: str | None, as_split: str | None):
    from textcls.data.datasets import load_data
    return load_data(spec, root=root, limit=limit, text_column=text_column, label_column=label_column, seed=seed,
                     as_split=as_split)


def dataset(spec: str, *, limit: int | None = None, text_column: str = "text", label_column: str = "label",
            seed: int = 0, root: str | None = None, as_split: str | None = None):
    """A `DataBundle` (textcls.data.datasets.load_data), cached per (spec, its files' modification time, settings).
    Raises DataError like load_data; treat the result as read-only."""
    return _dataset(str(spec), _data_stamp(str(spec)), limit, text_column, label_column, seed, root, as_split)


def refresh_checkpoints() -> None:
    """Forget the cached checkpoint listing, so a checkpoint saved just now shows on every page at once."""
    _checkpoints.clear()


@st.cache_resource(show_spinner=False)
def job_registry():
    """The app's one registry of background training jobs (textcls.train.jobs), shared by every session;
    sessions keep their job ids in st.session_state. A resource, so it survives the dev server's re-imports."""
    from textcls.train.jobs import JobRegistry
    return JobRegistry()


__all__ += ["dataset", "job_registry", "refresh_checkpoints"]


# ---------------------------------------------------------------- explanations and views (Attribute / Inspect pages)
# Keyed like the predictions above - (checkpoint folder, its modification stamp, text, settings) - so a revisit,
# in this session or another, is instant; a checkpoint saved again is recomputed. st.cache_data hands every
# caller its own copy; the pages treat results as read-only all the same. Every argument is a plain value (the
# cached models are looked up inside), and the library is imported where it is used (listing checkpoints must not
# import torch). Settings a method ignores are left out of its key, so changing them recomputes nothing.

def _instance(path: str, mtime: float, text: str):
    from textcls.interpret import as_source
    return as_source(_predictor(path, mtime)).instances([text])[0]


@st.cache_data(show_spinner=False, max_entries=4096)
def _explanation(path: str, mtime: float, text: str, method: str, baseline: str, steps: int, removal: str):
    from textcls.interpret.faithfulness import explanation
    pred = _predictor(path, mtime)
    return explanation(pred.model, _instance(path, mtime, text), method, labels=pred.labels, baseline=baseline,
                   steps=steps, removal=removal)


def _used(method: str, baseline: str, steps: int) -> tuple[str, int]:
    """(baseline, steps) as `method` uses them: a setting it ignores is fixed, so it is not part of the cache key."""
    from textcls.interpret.faithfulness import USES_BASELINE
    return (baseline if method in USES_BASELINE else "pad", steps if method == "integrated_gradients" else 50)


def explanation(path: str | Path, text: str, method: str, *, baseline: str = "pad", steps: int = 50,
                removal: str = "delete"):
    """One explanation of `text` by one checkpoint: an `Attribution` (own attention, Captum methods) or, for
    "leave_one_out", a vector. Cached per (checkpoint, text, method, the settings that method uses).
    Raises what the library raises (ValueError: the method does not apply to this model or input)."""
    return _explanation(str(path), stamp(path), text, method, *_used(method, baseline, steps),
                        removal if method == "leave_one_out" else "delete")


@st.cache_data(show_spinner=False, max_entries=512)
def _erasure_curves(path: str, mtime: float, text: str, method: str, baseline: str, steps: int, removal: str):
    from textcls.interpret import faithfulness
    model, inst = _predictor(path, mtime).model, _instance(path, mtime, text)
    v = explanation(path, text, method, baseline=baseline, steps=steps, removal=removal)   # erasure reads .scores
    return faithfulness.erasure_curves(model, inst, v, removal=removal)


@st.cache_data(show_spinner=False, max_entries=2048)
def _erasure(path: str, mtime: float, text: str, method: str, baseline: str, steps: int, removal: str):
    from textcls.interpret import faithfulness
    model, inst = _predictor(path, mtime).model, _instance(path, mtime, text)
    v = explanation(path, text, method, baseline=baseline, steps=steps, removal=removal)
    return (_erasure_curves(path, mtime, text, method, baseline, steps, removal),   # shared with Inspect's line
            faithfulness.erasure_flip(model, inst, v, removal=removal))


def erasure(path: str | Path, text: str, method: str, *, baseline: str = "pad", steps: int = 50,
            removal: str = "delete"):
    """(erasure_curves, erasure_flip) of one explanation (see `explanation`), cached like it."""
    return _erasure(str(path), stamp(path), text, method, *_used(method, baseline, steps), removal)


def erasure_curves(path: str | Path, text: str, method: str, *, baseline: str = "pad", steps: int = 50,
                   removal: str = "delete"):
    """erasure_curves alone (about 11 forward passes; `erasure` adds the flip test's 7 per token), cached."""
    return _erasure_curves(str(path), stamp(path), text, method, *_used(method, baseline, steps), removal)


@st.cache_data(show_spinner=False, max_entries=512)
def _random_erasure(path: str, mtime: float, text: str, removal: str, n: int):
    import numpy as np

    from textcls.interpret import faithfulness
    model, inst = _predictor(path, mtime).model, _instance(path, mtime, text)
    rng = np.random.default_rng(0)
    return [faithfulness.erasure_curves(model, inst, rng.random(inst.n), removal=removal) for _ in range(n)]


def random_erasure(path: str | Path, text: str, *, removal: str = "delete", n: int = 5) -> list[dict]:
    """Erasure curves of `n` seeded random rankings (the floor an explanation should beat), cached."""
    return _random_erasure(str(path), stamp(path), text, removal, n)


@st.cache_data(show_spinner=False, max_entries=512)
def _attention_tests(path: str, mtime: float, text: str, n_permutations: int):
    from textcls.interpret import faithfulness
    model, inst = _predictor(path, mtime).model, _instance(path, mtime, text)
    if not faithfulness.attention_maps(model):
        return {}
    return {"perm": faithfulness.permutation_test(model, inst, n_permutations),
            "unif": faithfulness.uniform_attention_test(model, inst)}


def attention_tests(path: str | Path, text: str, *, n_permutations: int = 30) -> dict:
    """{"perm": permutation_test, "unif": uniform_attention_test} of a model with attention weights, {} for a
    model without; cached per (checkpoint, text)."""
    return _attention_tests(str(path), stamp(path), text, n_permutations)


@st.cache_data(show_spinner=False, max_entries=256)
def _compare_edit(ckpts: tuple[tuple[str, str, float], ...], text: str, edited: str):
    from textcls.interpret import interventions
    return interventions.compare_edit({name: _predictor(path, mtime) for name, path, mtime in ckpts}, text,
                                        edited)


def compare_edit(ckpts: dict[str, str | Path], text: str, edited: str):
    """`textcls.interpret.counterfactual` of {name: checkpoint folder} for text -> edited, cached per
    (checkpoints and their stamps, text, edited)."""
    return _compare_edit(tuple((n, str(p), stamp(p)) for n, p in ckpts.items()), text, edited)


def slice_run(path: str | Path, texts, *, removal: str = "delete", baseline: str = "pad", steps: int = 50,
              methods=("attention", "integrated_gradients", "random")):
    """A new `textcls.interpret.SliceRun` of one checkpoint (the shared, read-only model) over texts: the page
    steps it chunk by chunk (progress bar, Stop) and keeps it in its session; not cached (it holds state)."""
    from textcls.interpret.batched import SliceRun
    return SliceRun(predictor(path), list(texts), methods=list(methods), removal=removal, baseline=baseline,
                    n_steps=steps)


def _frozen(x):
    """A hashable, order-free stand-in for a plain dict/list value (a cache key)."""
    if isinstance(x, dict):
        return tuple(sorted((str(k), _frozen(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return tuple(_frozen(v) for v in x)
    return x


@st.cache_data(show_spinner=False, max_entries=64)
def _view(path: str, mtime: float, text: str, view_id: str, model: str, title: str, config_key, opts_key,
          _config: dict, _opts: dict):
    from textcls import viz
    r = _predict_maps(path, mtime, text)
    specs = {s.name: s for s in _predictor(path, mtime).model.map_specs()}
    vi = viz.ViewInput(model, specs, r.maps, list(r.tokens), r.sentences, title=title, label=r.label,
                       config=dict(_config), opts=dict(_opts))
    return viz.build_view(view_id, vi)


def view_figures(path: str | Path, text: str, view_id: str, *, model: str, title: str, config: dict, opts: dict):
    """The figures (`textcls.viz.build_view`) of one Inspect view of a checkpoint on a text, cached per
    (checkpoint, text, view, its options). Raises what the view raises."""
    return _view(str(path), stamp(path), text, view_id, model, title, _frozen(config), _frozen(opts), config, opts)


@st.cache_data(show_spinner=False, max_entries=4)
def _pieces(path: str, mtime: float, text: str):
    from textcls.models.hf.pieces import piece_attention_of
    return piece_attention_of(_predictor(path, mtime), text)


def piece_attention(path: str | Path, text: str):
    """A Hugging Face checkpoint's word pieces for text and its attention over them
    (`textcls.models.hf.pieces.PieceAttention`), cached per (checkpoint, text). Raises ValueError for a
    checkpoint without word pieces. Few entries: a 512-piece text's weights are tens of MB."""
    return _pieces(str(path), stamp(path), text)


@st.cache_data(show_spinner=False, max_entries=64)
def _piece_view(path: str, mtime: float, text: str, title: str, opts_key, _opts: dict):
    from textcls import viz
    pa = _pieces(path, mtime, text)
    return viz.piece_figures(pa.pieces, pa.attention, title=title, opts=dict(_opts))


def piece_figures(path: str | Path, text: str, *, title: str, opts: dict):
    """The self-attention view over a Hugging Face checkpoint's word pieces (`textcls.viz.piece_figures`), cached
    per (checkpoint, text, options)."""
    return _piece_view(str(path), stamp(path), text, title, _frozen(opts), opts)


__all__ += ["attention_tests", "counterfactual", "erasure", "erasure_curves", "explanation", "random_erasure", "slice_run",
            "view_figures", "piece_attention", "piece_figures"]


# ---------------------------------------------------------------- warm-up (once per server process)

_PAGE_RUNS = 0                              # script runs of any session in progress (app.py: `page_run`)
_LAST_PAGE_RUN_END = 0.0                    # time.monotonic() when the last one ended
_PAGE_RUNS_CHANGED = threading.Condition()
WARM_UP_PATIENCE = 30.0     # seconds the warm-up waits for the pages to be done before it goes on regardless


@contextmanager
def page_run():
    """Around each script run (app.py): the warm-up gives way to it between its steps. A page clicked straight
    after Home then shares the two cores and the interpreter lock with nothing but the step already under way
    (importing torch, which it needs itself), not with Captum's import, the validation or Evaluate's predictions."""
    global _PAGE_RUNS, _LAST_PAGE_RUN_END
    with _PAGE_RUNS_CHANGED:
        _PAGE_RUNS += 1
    try:
        yield
    finally:
        with _PAGE_RUNS_CHANGED:
            _PAGE_RUNS -= 1
            _LAST_PAGE_RUN_END = time.monotonic()
            _PAGE_RUNS_CHANGED.notify_all()


def _wait_for_no_page_run(patience: float | None = None, quiet: float = 0.0) -> bool:
    """Block until no script run is in progress and none has ended in the last `quiet` seconds (True: the person
    is reading), or until `patience` seconds have passed (False)."""
    deadline = time.monotonic() + (WARM_UP_PATIENCE if patience is None else patience)
    with _PAGE_RUNS_CHANGED:
        while not _STOPPING.is_set():
            now = time.monotonic()
            calm = _LAST_PAGE_RUN_END + quiet - now
            if _PAGE_RUNS == 0 and calm <= 0:
                return True
            if now >= deadline:
                return False
            _PAGE_RUNS_CHANGED.wait(timeout=min(deadline - now, calm if _PAGE_RUNS == 0 else deadline - now))
    return False


_STOPPING = threading.Event()     # set at interpreter exit: the warm-up stops between two steps or batches
_WARM_UPS: list[threading.Thread] = []


@atexit.register
def _stop_warm_up(timeout: float = 10.0) -> None:
    """At exit (a server stopped, a test run ending): stop the warm-up and wait for it. A daemon thread still
    inside torch when the interpreter finalises aborts the process ("terminate called without an active
    exception", exit status 134)."""
    _STOPPING.set()
    with _PAGE_RUNS_CHANGED:
        _PAGE_RUNS_CHANGED.notify_all()
    for t in _WARM_UPS:
        t.join(timeout)


# seconds after Home's run before the warm-up starts. Measured idle, clicking through every page straight after
# Home (scripts/bench_app.py, 2026-11-26): 0 s -> Compare 1.7-2.6 s (median 2.3 over 9 runs), Home 4.3-6.3 s (median
# 4.7); 0.4 s -> Compare 2.4-3.1 s, Home 4.0-4.8 s (3 runs); 0.8 s -> Compare 2.8-4.0 s, Home 3.5-4.8 s (4 runs).
WARM_UP_DELAY = 0.0


PREFETCH_QUIET = 0.3     # seconds without a page run before the warm-up computes (again)
PREFETCH_BATCH = 64      # texts per step: the page's own batch (Predictor.predict), 20-50 ms of work


def _prefetch_evaluate() -> list[str]:
    """Evaluate's first render, computed ahead: its default checkpoints' predictions on its default split. One
    batch at a time, each only when no page has run for PREFETCH_QUIET seconds, so a page clicked meanwhile waits
    for one batch at most. The batches are the page's own (texts sorted by length, PREFETCH_BATCH each, the batch
    thread setting), so the predictions are the numbers the page would compute (up to the last bits, when the
    load lets the page use another thread count); they wait in _PREFETCHED
    for the page's first `predict`. About 3 s of the two cores for the six small sst2 models, spent while the
    person reads instead of while they wait. Returns the checkpoints done."""
    from textcls.checkpoint import list_all_checkpoints
    from textcls.data.datasets import DataError, list_datasets
    from textcls.runtime.threads import batch
    from pages.common import defaults as d
    valid = [i for i in list_all_checkpoints(include_invalid=True, deep=True) if i.valid]
    infos = [i for i in valid if i.name in d.main_task_checkpoints(valid, pretrained=False)]
    bundled = list_datasets()
    spec = next((a for a in (d.available_data(d.data_spec(i), bundled) for i in infos) if a), None)
    if spec is None:
        return []
    try:
        bundle = dataset(spec)
    except (DataError, ValueError):
        return []
    split = bundle.splits[d.default_split(list(bundle.splits))]
    part = d.evaluated_part(split, d.default_limit(len(split)))
    texts, gold = tuple(part.texts), {bundle.labels[y] for y in part.labels}
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))        # Predictor.predict's own order
    done = []
    for info in infos:
        if not gold <= set(info.labels):            # the page leaves such a checkpoint out
            continue
        if _STOPPING.is_set():
            break
        key = (str(info.path), stamp(info.path), texts)
        try:
            _wait_for_no_page_run(quiet=PREFETCH_QUIET)
            predictor = _fast(*key[:2])
            out: list = [None] * len(texts)
            with batch():                           # the page's thread setting for a whole split
                for s in range(0, len(order), PREFETCH_BATCH):
                    if not _wait_for_no_page_run(quiet=PREFETCH_QUIET) and _STOPPING.is_set():
                        return done
                    index = order[s:s + PREFETCH_BATCH]
                    for i, p in zip(index, predictor.predict([texts[i] for i in index], batch_size=PREFETCH_BATCH)):
                        out[i] = p
        except Exception:  # noqa: BLE001 - the page reports a checkpoint that fails; the warm-up only skips it
            continue
        if len(_PREFETCHED) > 16:
            _PREFETCHED.clear()
        _PREFETCHED[key] = out
        done.append(info.name)
    return done


@st.cache_resource(show_spinner=False)
def warm_up() -> threading.Thread:
    """Once per server, after the first page is drawn, in a background thread, what the first visits to the other
    pages would otherwise do while the person waits: import torch and the models (what Compare needs), validate
    every checkpoint in full (remembered by the library, textcls.checkpoint.validate_checkpoint), import Captum
    (Inspect, Attribute), then compute Evaluate's default predictions into the page's own cache entries
    (`_prefetch_evaluate`). Between these steps it waits while any page is running (`page_run`), so it takes the
    CPU only while the person reads. Not torch._dynamo: the full validation on the meta device does not need it
    (textcls.runtime.sizing.meta_model). Not transformers: importing it here slowed a Compare clicked straight
    after Home from 8.4-8.9 s to 12.5 s (they share the CPU and the interpreter lock)."""
    def run() -> None:
        import textcls.inference  # noqa: F401  (torch, the registry, every model)
        import torch.utils._device  # noqa: F401  (`with torch.device("meta")`: the full checkpoint validation)
        if _STOPPING.is_set() or not _wait_for_no_page_run() and _STOPPING.is_set():
            return
        from textcls.checkpoint import list_all_checkpoints
        list_all_checkpoints(include_invalid=True, deep=True)   # remembered per file: the pages' listing is free
        if not _wait_for_no_page_run() and _STOPPING.is_set():
            return
        import textcls.interpret.attributions  # noqa: F401  (Captum; textcls.interpret itself resolves lazily)
        import textcls.interpret.faithfulness  # noqa: F401
        try:
            _prefetch_evaluate()
        except Exception:  # noqa: BLE001 - work done ahead: the page does it itself and reports what fails
            pass
    t = threading.Timer(WARM_UP_DELAY, run)      # app.py calls this after the page's run
    t.name, t.daemon = "textcls-warm-up", True
    _WARM_UPS.append(t)
    t.start()
    return t



# ---------------------------------------------------------------- data-set tools (Explore page)
# Keyed like the rest: (checkpoint folder, its stamp, the texts, settings); results are plain numpy / pandas /
# dataclasses, read-only. The projector samples before it gets here (textcls.analysis.representations.sample_rows).

@st.cache_data(show_spinner=False, max_entries=32)
def _representations(path: str, mtime: float, texts: tuple[str, ...]):
    from textcls.analysis.representations import representations as reps
    return reps(_predictor(path, mtime), list(texts))


def representations(path: str | Path, texts):
    """(N, F) classifier-input vectors of one checkpoint for texts (textcls.analysis.representations), cached."""
    return _representations(str(path), stamp(path), tuple(texts))


@st.cache_data(show_spinner=False, max_entries=32)
def _projection(path: str, mtime: float, texts: tuple[str, ...], method: str, seed: int):
    from textcls.analysis.representations import project
    return project(_representations(path, mtime, texts), method, seed=seed)


def projection(path: str | Path, texts, method: str = "pca", seed: int = 0):
    """(N, 2) projection (PCA / t-SNE / UMAP) of one checkpoint's representations of texts, cached."""
    return _projection(str(path), stamp(path), tuple(texts), method, seed)


@st.cache_data(show_spinner=False, max_entries=64)
def _flip_report(path: str, mtime: float, texts: tuple[str, ...], generator: str, rules: str, seed: int):
    from textcls.analysis.counterfactuals import run_generator
    return run_generator(_predictor(path, mtime), list(texts), generator, checkpoint=Path(path).name,
                         rules=rules or None, seed=seed)


def flip_report(path: str | Path, texts, generator: str, *, rules: str = "", seed: int = 0):
    """`textcls.analysis.counterfactuals.run_generator` of one checkpoint over texts, cached per (checkpoint, texts,
    generator, rules). Raises CounterfactualError for a generator that cannot run."""
    return _flip_report(str(path), stamp(path), tuple(texts), generator, rules if generator == "word_replacer"
                        else "", seed)


__all__ += ["flip_report", "projection", "representations"]


# ---------------------------------------------------------------- lessons (Lessons page)

@st.cache_data(show_spinner=False, max_entries=256)
def _lesson_step(lesson_id: str, step: int, value: float | None, ckpts: tuple[tuple[str, str, float], ...]):
    from textcls.teach import lessons
    valid, _ = checkpoints()
    lib = lessons.Library(valid, lambda i: _predictor(str(i.path), stamp(i.path)))
    return lessons.run_step(lessons.get(lesson_id).steps[step], lib, value)


def lesson_step(lesson_id: str, step: int, value: float | None = None):
    """`textcls.teach.lessons.run_step` of one step (0-based) of a lesson on the checkpoints listed here (the shared,
    read-only models), cached per (lesson, step, slider value, the checkpoints and their stamps)."""
    valid, _ = checkpoints()
    return _lesson_step(lesson_id, step, value, tuple((i.name, str(i.path), stamp(i.path)) for i in valid))


__all__ += ["lesson_step"]
