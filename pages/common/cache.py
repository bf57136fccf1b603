"""The pages' door to the models: the checkpoint listing, predictions, one text's maps, a model's facts and every
other piece of model work (`ask`), each cached here.

Who answers: the model worker (textcls.serve.client, a process of its own, on unless TEXTCLS_WORKER=0) or, with
it off, the same functions in this process (textcls.serve.inprocess); `worker()` decides, once, and every call
below has one code path. Either way the models are loaded once into one bounded cache (textcls.serve.worker's
`predictor`, least recently used dropped) and shared read-only: nothing here or in the pages trains, edits or
switches a model to training mode. A checkpoint changed on disk is reloaded because the identity of every file
it reads is part of every key (`stamp`).

Model work beyond predictions is a job of textcls.serve.work asked for through `ask` (its answers kept in one
cache, textcls.serve.answers: as many per job as the job declares); pages.common.work and
pages.common.interpreters are the pages' requests through it. The server's interpreter imports no torch for any
of this while the worker is on.

The listing the select boxes read (`checkpoints`) validates textcls's own folders in full but a Hugging Face
folder only from its files (config, labels, safetensors header, tokenizer files): its deep check (transformers,
the tokenizer probe, seconds) runs in the worker when someone selects the folder, as its load's first step, and
a failure is one line for that folder (widgets.facts / safe_predict). Nothing of a refused folder is built.
"""
from __future__ import annotations

import hashlib
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import streamlit as st

from textcls.runtime import paths
from textcls.checkpoint import CheckpointError, CheckpointInfo, list_all_checkpoints
from textcls.checkpoint.stamp import checkpoint_stamp
from textcls.serve.answers import Answers, frozen


def checkpoint_roots() -> list[Path]:
    """The folders listed: the shipped checkpoints (read-only), then the user's (textcls.runtime.paths)."""
    return paths.checkpoint_roots()


def user_checkpoints() -> Path:
    """Where the Train page saves: the user's folder, never the repository."""
    return paths.user_checkpoints()


_RUN = threading.local()      # .stamps: this thread's page run's stamps (`one_reading`), else None


def stamp(path: str | Path) -> float:
    """What every cache here (and the model worker's models) is keyed on besides the folder: a digest of every
    file the checkpoint reads - each entry of its folder (weights, config, vocabulary, tokenizer.json, vocab.txt,
    special tokens, tokenizer config, textcls.json, ...) and a delta's installed base folder - by name, inode,
    size and modification time (`textcls.checkpoint.files.checkpoint_stamp`). A new save, or one replaced
    tokenizer file, changes it: on the next page run, since a run reads each folder's stamp once (`one_reading`)."""
    memo = getattr(_RUN, "stamps", None)
    if memo is None:
        return checkpoint_stamp(path)
    key = str(path)
    got = memo.get(key)
    if got is None:
        got = memo[key] = checkpoint_stamp(path)
    return got


@contextmanager
def one_reading():
    """Around one page run (pages.common.warmup.page_run): each folder's stamp is read once, so everything the run
    asks and shows is of one state of the files, and a Compare submit of 7 models reads 7 folders, not 28 (a
    twentieth of the server's time per submit with 30 sessions at once). `refresh_checkpoints` (a save in the
    run) reads them again."""
    outer = getattr(_RUN, "stamps", None)
    _RUN.stamps = {}
    try:
        yield
    finally:
        _RUN.stamps = outer


def remote():
    """The server's model worker (textcls.serve.client.shared), or None when TEXTCLS_WORKER turns it off."""
    from textcls.serve import client
    return client.shared() if client.enabled() else None


def worker():
    """Who answers the model work: the model worker, or - with it off - the same functions in this process
    (textcls.serve.inprocess), so every call below has one code path."""
    w = remote()
    if w is not None:
        return w
    from textcls.serve.inprocess import in_process
    return in_process()


LISTING_DEEP = "textcls"      # the listing's `deep`: our folders in full, Hugging Face folders from their files
_VALIDATING = threading.Event()     # set while the warm-up has the worker load ahead and then validate everything


@contextmanager
def validating_ahead():
    """Around the warm-up's first work in the model worker (pages.common.warmup.warm_worker: the main task's models,
    then the full check of every folder). Meanwhile the pages list from the files (the checks that need no torch)
    instead of queueing behind that check in the worker: a Compare clicked straight after Home waits for its own
    models' loads, which run the full check of their folders first, not for the other twelve folders'."""
    _VALIDATING.set()
    try:
        yield
    finally:
        _VALIDATING.clear()


LISTING_TTL = 10.0            # seconds a listing is kept (a folder added by hand shows within that; Train refreshes)
_LISTINGS = Answers()         # (roots, deep, from_files) -> the listing: every caller gets its own copy
_LISTED: dict[tuple, float] = {}     # when each was listed (time.monotonic)


def _checkpoints_now(roots: tuple[str, ...], deep: bool):
    """The listing, kept LISTING_TTL seconds: one pickled copy read back per page run (0.4 ms for 18 folders),
    where st.cache_data's own hashing and bookkeeping cost 2 ms of each run, a submit's server time."""
    key = (roots, deep, deep and _VALIDATING.is_set())
    if time.monotonic() - _LISTED.get(key, -LISTING_TTL) >= LISTING_TTL:
        _LISTINGS.forget("listing", key)
    return _LISTINGS.get("listing", key, lambda: _listed(key), keep=8)


def _listed(key: tuple):
    got = _checkpoints(*key)
    _LISTED[key] = time.monotonic()
    return got


def _checkpoints(roots: tuple[str, ...], deep: bool, from_files: bool = False) \
        -> tuple[list[CheckpointInfo], list[CheckpointInfo]]:
    if from_files:                          # the worker is busy validating ahead (validating_ahead)
        infos = list_all_checkpoints(include_invalid=True, deep=False)
        return [i for i in infos if i.valid], [i for i in infos if not i.valid]
    w = worker() if deep else None
    infos = None
    if w is not None:                       # validated in full by the worker, never here: its verdicts are remembered
        # there, where a first full listing here (once the warm-up imported torch for Train) took 1.2 s of this
        # interpreter, in the middle of other sessions' page runs (8 sessions on Compare: a sixth of its CPU)
        from textcls.serve import client, worker as in_worker
        try:
            infos = w.call_env(in_worker.listing, LISTING_DEEP)
        except client.WorkerError as e:     # it cannot answer now: the listing is done here instead
            client.handled(e)               # (nothing lost: no message for it)
            infos = None
    if infos is None:
        infos = list_all_checkpoints(include_invalid=True, deep=LISTING_DEEP if deep else False)
    return [i for i in infos if i.valid], [i for i in infos if not i.valid]


def checkpoints(deep: bool | None = None) -> tuple[list[CheckpointInfo], list[CheckpointInfo]]:
    """(valid, invalid) checkpoints, shipped then the user's; re-read every 10 s at most. deep: validate every
    folder of ours in full (textcls.checkpoint.validate_checkpoint, needs torch; a Hugging Face folder's deep
    check waits for its load: see the module docstring); None: in full once torch is loaded (the pages that run
    models), else the torch-free checks, so Home's first render does not wait for torch."""
    if deep is None:
        deep = "torch" in sys.modules
    return _checkpoints_now(tuple(str(r) for r in checkpoint_roots()), deep)


def predict_device() -> str:
    """Where predictions run: the GPU when there is one (textcls.runtime.devices.app_device, env TEXTCLS_DEVICE)."""
    from textcls.runtime.devices import app_device
    return str(app_device())


@st.cache_resource(show_spinner=False)
def _device_description() -> str:
    from textcls.serve import client, worker as in_worker
    try:
        return worker().call_env(in_worker.device_description)
    except client.WorkerError as e:         # it cannot answer now: asked here instead (imports torch)
        client.handled(e)
    from textcls.runtime.devices import describe_device
    return describe_device(predict_device())


def describe_predict_device() -> str:
    """In words, for the pages: where predictions run (explanations and maps of the internals stay on the CPU).
    Asked of the model worker when there is one (the answer needs torch)."""
    return _device_description()


_AHEAD: dict[tuple, list] = {}         # (path, mtime, texts_key(texts)) -> predictions computed ahead
AHEAD_MAX = 16                         # entries kept (a set of checkpoints' predictions on one split)


def _predict_key(path: str | Path, texts) -> tuple[str, float, str]:
    """What `predict`'s answer for (path, texts) is cached under, and handed over under."""
    return str(path), stamp(path), texts_key(texts)


def hand_over(path: str | Path, texts, predictions: list) -> None:
    """Predictions of `path` for `texts` computed ahead (pages.common.warmup), in `predict`'s order:
    the first `predict(path, texts)` takes them instead of computing them; a checkpoint saved again meanwhile
    (another modification time) does not."""
    if len(predictions) != len(texts):
        raise ValueError(f"{len(predictions)} predictions for {len(texts)} texts")
    if len(_AHEAD) >= AHEAD_MAX:
        _AHEAD.clear()
    _AHEAD[_predict_key(path, texts)] = list(predictions)


def handed_over(path: str | Path, texts) -> bool:
    """Whether predictions for (path, texts) wait for their first `predict`."""
    return _predict_key(path, texts) in _AHEAD


def texts_key(texts) -> str:
    """A digest of a list of texts: the cache key of their predictions. Streamlit would hash a tuple of 1,821
    texts element by element on every call (0.07 s each, six checkpoints on Evaluate's every run)."""
    h = hashlib.blake2b(digest_size=16)
    for t in texts:
        b = t.encode("utf-8", "surrogatepass")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return f"{len(texts)}:{h.hexdigest()}"


@st.cache_data(show_spinner=False, max_entries=512)
def _predict(path: str, mtime: float, key: str, _texts: tuple[str, ...]):
    """Keyed by `key` = texts_key(_texts) (arguments named with a leading underscore are not hashed)."""
    ahead = _AHEAD.pop((path, mtime, key), None)
    if ahead is not None:
        return ahead
    return worker().predict(path, mtime, list(_texts))


_MAPS_AHEAD: dict[tuple, object] = {}     # (path, mtime, text) -> a Prediction or the exception, asked together
MAPS = "predict_maps"                     # one text's maps in ANSWERS: (path, stamp, text) -> its Prediction
MAPS_KEEP = 24                            # kept, of any checkpoints


def _predict_maps(path: str, mtime: float, text: str):
    """Kept in ANSWERS (a pickled copy per caller, 0.01-0.06 ms for a small model's maps), not st.cache_data, whose
    hashing and bookkeeping cost 0.5 ms a call: 3.5 ms of the server's time per Compare submit of 7 models."""
    key = (path, mtime, text)

    def compute():
        if key in _MAPS_AHEAD:
            ahead = _MAPS_AHEAD.pop(key)
            if isinstance(ahead, BaseException):
                raise ahead
            return ahead
        return worker().predict(path, mtime, [text], maps=True)[0]
    return ANSWERS.get(MAPS, key, compute, MAPS_KEEP)


def model_job(job: str, *args, progress=None):
    """`textcls.serve.work.<job>(load, *args)`, not cached: in the model worker when it is on (in a thread of its
    own there), else here on the same model cache (`worker()` decides). `progress(done, total)`: what a pass over a
    data set has done (a progress bar)."""
    return worker().run_job(job, *args, progress=progress)


ANSWERS = Answers()       # the one cache of the pages' model work (textcls.serve.answers), shared by the sessions


def ask(job: str, *args, key=None, keep: int | None = None, progress=None):
    """The one door from a page to the models: job `job` of textcls.serve.work with its plain arguments (a
    checkpoint as its folder and `stamp`), run by `model_job` and kept in ANSWERS as many times as the job
    declares (`Job.keep`; `keep` overrides it: 0 for a run the page keeps in its session), keyed on the arguments
    (or on `key`, where an argument is not a plain value). What the job raises is raised here and not kept."""
    from textcls.serve.work import get_job
    spec = get_job(job)
    return ANSWERS.get(job, frozen(args) if key is None else key,
                       lambda: model_job(job, *args, progress=progress), spec.keep if keep is None else keep)


def forget(data: bool = False) -> None:
    """Drop every kept answer of the pages' model work; with `data`, st.cache_data's entries too (the listing, the
    predictions, the drawn figures): what a test that changes the checkpoints or the data under a page starts with."""
    ANSWERS.clear()
    _MAPS_AHEAD.clear()
    if data:
        refresh_checkpoints()
        st.cache_data.clear()


def _facts(path: str, mtime: float):
    return ask("facts", path, mtime)


def facts(path: str | Path):
    """`textcls.records.ModelFacts` of a checkpoint (its maps' specs, whether it reads word
    pieces, its context-mixing methods): what Home, Compare and Inspect read of a model, without loading it in
    this process when the model worker is on. Shared, read-only. Raises what loading raises (CheckpointError: a
    folder refused by its full check)."""
    return _facts(str(path), stamp(path))


def predict(path: str | Path, texts: list[str] | tuple[str, ...]):
    """Predictions (no maps) of one checkpoint for texts, cached per (checkpoint, texts)."""
    texts = tuple(texts)
    return _predict(*_predict_key(path, texts), texts)


def predict_maps(path: str | Path, text: str):
    """One text's Prediction with its maps, cached per (checkpoint, text)."""
    return _predict_maps(str(path), stamp(path), text)


def maps_ready(path: str | Path, text: str) -> bool:
    """Whether `predict_maps(path, text)` answers at once (asked together ahead, or computed before)."""
    key = (str(path), stamp(path), text)
    return key in _MAPS_AHEAD or ANSWERS.has(MAPS, key)


def ask_maps_together(paths, text: str) -> None:
    """Compare's answers: every checkpoint's `predict_maps(path, text)` asked of the model worker in one round trip
    (`worker.predict_each`); each `predict_maps` then takes its answer, or raises its error. Those already cached
    are not asked again. Without the worker, or for one checkpoint, nothing to gain: nothing is done."""
    keys = [(str(p), stamp(p), text) for p in paths]
    keys = [k for k in dict.fromkeys(keys) if k not in _MAPS_AHEAD and not ANSWERS.has(MAPS, k)]
    w = remote()
    if w is None or len(keys) < 2:
        return
    from textcls.serve import client, worker as in_worker
    try:
        answers = w.call_env(in_worker.predict_each, [(k[0], k[1]) for k in keys], [text], True,
                             timeout=w.timeout + client.PER_TEXT * len(keys))
    except Exception as e:  # noqa: BLE001 - each predict_maps raises it, where the page shows it
        answers = [e] * len(keys)
    for key, answer in zip(keys, answers):
        _MAPS_AHEAD[key] = answer if isinstance(answer, BaseException) else answer[0]
    while len(_MAPS_AHEAD) > 64:                        # asked but never taken (a page stopped): the oldest go
        _MAPS_AHEAD.pop(next(iter(_MAPS_AHEAD)))


__all__ = ["CheckpointError", "checkpoint_roots", "checkpoints", "user_checkpoints", "predict", "predict_maps",
           "ask_maps_together", "maps_ready", "hand_over", "handed_over", "one_reading", "stamp", "facts", "remote",
           "worker"]


# ---------------------------------------------------------------- data sets and jobs (pages.common.data)

from pages.common.data import dataset, job_registry  # noqa: E402  (Train / Evaluate read them as cache.*)


def refresh_checkpoints() -> None:
    """Forget the cached checkpoint listing, so a checkpoint saved just now shows on every page at once."""
    _LISTINGS.clear()
    _LISTED.clear()
    if getattr(_RUN, "stamps", None):
        _RUN.stamps.clear()


__all__ += ["dataset", "job_registry", "refresh_checkpoints"]


# ---------------------------------------------------------------- explanations and views (Attribute / Inspect pages)
# Keyed like the predictions above - (checkpoint folder, its modification stamp, text, settings) - so a revisit,
# in this session or another, is instant; a checkpoint saved again is recomputed. st.cache_data hands every
# caller its own copy; the pages treat results as read-only all the same. Every argument is a plain value (the
# cached models are looked up inside), and the library is imported where it is used (listing checkpoints must not
# import torch). Settings a method ignores are left out of its key, so changing them recomputes nothing.

@st.cache_data(show_spinner=False, max_entries=64)
def _view(path: str, mtime: float, text: str, view_id: str, model: str, title: str, config_key, opts_key,
          _config: dict, _opts: dict):
    from textcls import viz
    r = _predict_maps(path, mtime, text)
    specs = {s.name: s for s in _facts(path, mtime).map_specs()}       # drawn here; the model stays in the worker
    vi = viz.ViewInput(model, specs, r.maps, list(r.tokens), r.sentences, title=title, label=r.label,
                       config=dict(_config), opts=dict(_opts))
    return viz.build_view(view_id, vi)


def view_figures(path: str | Path, text: str, view_id: str, *, model: str, title: str, config: dict, opts: dict):
    """The figures (`textcls.viz.build_view`) of one Inspect view of a checkpoint on a text, cached per
    (checkpoint, text, view, its options). Raises what the view raises."""
    return _view(str(path), stamp(path), text, view_id, model, title, frozen(config), frozen(opts), config, opts)


def _pieces(path: str, mtime: float, text: str):
    return ask("pieces", path, mtime, text)


def piece_attention(path: str | Path, text: str):
    """A Hugging Face checkpoint's word pieces for text and its attention over them
    (`textcls.data.pieces.PieceAttention`; from the model worker when it is on), cached per (checkpoint, text).
    Raises ValueError for a checkpoint without word pieces. Few entries: a 512-piece text's weights are tens of
    MB."""
    return _pieces(str(path), stamp(path), text)


def attention_verdict(path: str | Path, text: str) -> dict:
    """Inspect's faithfulness line: the model's own attention against random word orders on text
    (`textcls.interpret.faithfulness.versus_random`'s dict, plus "rule": the rule and its limits in words), from
    the model worker when it is on; cached per (checkpoint, text)."""
    return ask("attention_verdict", str(path), stamp(path), text)


def side_by_side(path: str | Path, text: str):
    """`textcls.interpret.context_mixing.compare.side_by_side` of a checkpoint on text (Inspect's context-mixing
    panel), from the model worker when it is on; cached per (checkpoint, text). Raises ValueError with the reason
    for a model without self-attention."""
    return ask("side_by_side", str(path), stamp(path), text)


@st.cache_data(show_spinner=False, max_entries=64)
def _piece_view(path: str, mtime: float, text: str, title: str, opts_key, _opts: dict):
    from textcls import viz
    pa = _pieces(path, mtime, text)
    return viz.piece_figures(pa.pieces, pa.attention, title=title, opts=dict(_opts),
                             pooled=(pa.pooled_rows, pa.pooled, pa.causal))


def piece_figures(path: str | Path, text: str, *, title: str, opts: dict):
    """The self-attention view over a Hugging Face checkpoint's word pieces (`textcls.viz.piece_figures`), cached
    per (checkpoint, text, options)."""
    return _piece_view(str(path), stamp(path), text, title, frozen(opts), opts)


__all__ += ["ANSWERS", "ask", "forget", "attention_verdict", "model_job", "piece_attention", "piece_figures", "side_by_side", "view_figures"]
