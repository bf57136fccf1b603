"""What runs inside the model worker process (textcls.serve.client starts it): the loaded models, bounded least
recently used, and the calls the server makes, each a module-level function of plain arguments that returns plain
picklable data (no model, no tensor crosses).

- `initialize(parent_pid, max_models)`: the process's start: it exits by itself when its server is gone (a
  server killed without a chance to stop it), then imports torch and the model families.
- `listing(roots_env, deep)`: the checkpoint listing (`list_all_checkpoints`), validated in full when `deep`.
- `predict(path, stamp, texts, maps)`: `Predictor.predict` of one checkpoint; `predict_groups` runs several
  sessions' texts of one checkpoint in one batch and hands each its own part (textcls.serve.client batches).
- `facts(path, stamp)`: a `ModelFacts` (map specs, word vocabulary, word pieces, context-mixing methods) for the
  pages that draw a model's maps (Compare, Inspect, Home); loading it runs the folder's full check first.
- Inspect's model work: `pieces` (a Hugging Face model's word pieces and their attention), `attention_verdict`
  (its own attention against random word orders on the text), `side_by_side` (the context-mixing methods);
  its maps come from `predict(maps=True)`; the server only draws.
- `prefetch_start` / `prefetch_next`: one batch at a time of a long prediction (Evaluate's split, computed
  ahead), so the server can pause between batches while a person clicks.
- `warm(paths)`: load checkpoints ahead (the main task's models, then the pretrained encoder).

Threads (textcls.runtime.threads): every call runs in the scope of its kind of work - one text or a handful is
interactive work (1 thread by the default policy: two threads collapse when other processes keep the cores busy),
a prediction of more texts and Evaluate's batches (`prefetch_next`) are batch work - so the model code it calls
(a model's load, the word pieces, the rollout) that opens no scope of its own does not run on torch's default.

Every call carries the server's environment variables that choose folders and settings (`TEXTCLS_*`, `HF_*`),
applied before it runs: the worker answers for the server's folders even when they change after its start
(tests set TEXTCLS_HOME per test).
"""
from __future__ import annotations

import functools
import os
import pickle
import threading
import time
from collections import OrderedDict

_MODELS: OrderedDict = OrderedDict()      # (path, stamp, device) -> Predictor, least recently used first
_MODELS_LOCK = threading.Lock()            # the requests' thread and `warm_background`'s
_LOADING: dict = {}                        # key -> a lock held while that model loads (one load per model)
MAX_MODELS = 12                            # models kept (TEXTCLS_WORKER_MODELS); the six sst2 + six trec ones
_PREFETCH: dict = {}                       # key -> (iterator of batches, number of texts)
_PARENT = 0


def plain_error(e: BaseException) -> BaseException:
    """`e` as the server may receive it: itself when it is one of Python's or textcls's own and pickles (the pages
    tell a CheckpointError from an EntitySpanError); otherwise a RuntimeError saying its type and message. An
    error of torch's or transformers' own type would make the server import them to read it, and one that does not
    pickle would break the pool."""
    module = type(e).__module__ or ""
    if module == "builtins" or module.startswith("textcls."):
        try:
            pickle.loads(pickle.dumps(e))
            return e
        except Exception:  # noqa: BLE001 - not picklable: sent as words
            pass
    return RuntimeError(f"{type(e).__name__}: {e}")


def answers(fn=None, *, work: str | None = "interactive"):
    """A call the server makes: it runs in the thread scope of `work` ("interactive", "batch", or None: the
    function opens its own), and what it raises crosses as `plain_error`."""
    if fn is None:
        return functools.partial(answers, work=work)

    @functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            if work is None:
                return fn(*args, **kwargs)
            from textcls.runtime.threads import scope
            with scope(work):
                return fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - re-raised as plain data
            plain = plain_error(e)
            if plain is e:
                raise
            raise plain from None
    return run


def _watch_parent(parent_pid: int, every: float = 0.5) -> None:
    """Exit when the server that started this process is gone (its parent changes when it dies)."""
    while True:
        time.sleep(every)
        if os.getppid() != parent_pid:
            os._exit(0)


def initialize(parent_pid: int, max_models: int = MAX_MODELS, imports: bool = True) -> None:
    """ProcessPoolExecutor's initializer: watch the server, bound the models, import torch and the models (the
    work this process exists for), so the first request does not wait for them."""
    global MAX_MODELS, _PARENT
    MAX_MODELS, _PARENT = max(1, int(max_models)), parent_pid
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="textcls-watch-server", daemon=True).start()
    from textcls.runtime.trace import process_start, record, span
    record("in-worker.start-up", process_start())          # the interpreter's start, to here
    if imports:
        with span("in-worker.import-torch"):
            import textcls.inference  # noqa: F401  (torch, the registry, every model)
            import torch.utils._device  # noqa: F401  (the full validation builds models on the meta device)


def set_env(env: dict[str, str]) -> None:
    """Make this process's TEXTCLS_*/HF_* variables those of the server (see the module docstring)."""
    for k in [k for k in os.environ if k.startswith(("TEXTCLS_", "HF_", "TRANSFORMERS_"))]:
        if k not in env:
            del os.environ[k]
    os.environ.update(env)


def predictor(path: str, stamp: float, device: str = "cpu"):
    """The loaded Predictor of a checkpoint folder on `device`, loaded on first use; at most MAX_MODELS are kept
    (the least recently used is dropped), so memory stays flat over a day of use."""
    key = (str(path), float(stamp), device)
    with _MODELS_LOCK:
        p = _MODELS.get(key)
        if p is not None:
            _MODELS.move_to_end(key)
            return p
        loading = _LOADING.setdefault(key, threading.Lock())
    with loading:                               # a load under way in the other thread: wait for it, do not repeat
        with _MODELS_LOCK:
            p = _MODELS.get(key)
        if p is None:
            from textcls.checkpoint import load_checkpoint
            from textcls.runtime.trace import span
            with span(f"in-worker.load.{os.path.basename(path)}"):
                p = load_checkpoint(path, device=device)
        with _MODELS_LOCK:
            _MODELS[key] = p
            _MODELS.move_to_end(key)
            while len(_MODELS) > MAX_MODELS:
                _MODELS.popitem(last=False)
            _LOADING.pop(key, None)
    return p


def loaded() -> list[tuple[str, float, str]]:
    """The (path, stamp, device) of the models held now, least recently used first."""
    return list(_MODELS)


def predict_device() -> str:
    """Where plain predictions run: the GPU when there is one (textcls.runtime.devices.app_device); maps and
    explanations stay on the CPU, as in the server."""
    from textcls.runtime.devices import app_device
    return str(app_device())


@answers
def device_description(env: dict[str, str]) -> str:
    set_env(env)
    from textcls.runtime.devices import describe_device
    return describe_device(predict_device())


@answers
def listing(env: dict[str, str], deep: bool | str):
    """`list_all_checkpoints(include_invalid=True, deep=deep)`; the app asks deep="textcls" (a Hugging Face folder's
    deep check waits until someone selects it: its load runs it)."""
    set_env(env)
    from textcls.checkpoint import list_all_checkpoints
    return list_all_checkpoints(include_invalid=True, deep=deep)


@answers(work=None)
def predict(env: dict[str, str], path: str, stamp: float, texts: list[str], maps: bool = False):
    set_env(env)
    from textcls.runtime.threads import for_texts
    with for_texts(len(texts)):             # the load too: one text is interactive work, a split batch work
        p = predictor(path, stamp, "cpu" if maps else predict_device())
        return p.predict(list(texts), return_maps=maps)


@answers(work=None)
def predict_groups(env: dict[str, str], path: str, stamp: float, groups: list[list[str]], maps: bool = False):
    """Several requests' texts of one checkpoint in one `predict` (one batch, one pass): a list per group, or, for
    a group whose texts fail (a relation sentence without entity tags, ...), the exception, so one session's bad
    input never fails another's answer."""
    set_env(env)
    from textcls.runtime.threads import for_texts
    with for_texts(sum(map(len, groups))):
        return _predict_groups(path, stamp, groups, maps)


def _predict_groups(path: str, stamp: float, groups: list[list[str]], maps: bool):
    p = predictor(path, stamp, "cpu" if maps else predict_device())
    flat = [t for g in groups for t in g]
    try:
        preds = p.predict(flat, return_maps=maps)
    except Exception:  # noqa: BLE001 - find which group fails, answer the others
        out = []
        for g in groups:
            try:
                out.append(p.predict(list(g), return_maps=maps))
            except Exception as e:  # noqa: BLE001 - returned to that group's caller, raised there
                out.append(plain_error(e))
        return out
    out, k = [], 0
    for g in groups:
        out.append(preds[k:k + len(g)])
        k += len(g)
    return out


def facts_of(p):
    """The `ModelFacts` of a loaded Predictor (what the pages read of a model they do not hold)."""
    from textcls.interpret.context_mixing import methods_for
    from textcls.models.hf.pieces import has_word_pieces
    from textcls.records import ModelFacts, SpecRecord
    specs = tuple(SpecRecord(s.name, tuple(s.axes), s.kind, s.description, s.values)
                  for s in (p.model.map_specs() if hasattr(p.model, "map_specs") else []))
    stoi = getattr(getattr(getattr(p, "tokenizer", None), "vocab", None), "stoi", None)
    note = getattr(p.model, "attention_note", None)
    return ModelFacts(specs, dict(stoi) if stoi is not None else None, tuple(p.labels),
                      word_pieces=bool(has_word_pieces(p)), attention_note=str(note) if note else None,
                      mixing=tuple(methods_for(p.model)))


@answers
def facts(env: dict[str, str], path: str, stamp: float):
    set_env(env)
    return facts_of(predictor(path, stamp))


def attention_verdict_of(p, text: str) -> dict:
    """The model's own attention (the shading on Compare) against random word orders on `text`
    (`faithfulness.versus_random`), with the rule in words under "rule": Inspect's faithfulness line."""
    from textcls.interpret import as_source
    from textcls.interpret.faithfulness import (N_RANDOM, ONE_TEXT_NOTE, VERDICT_RULE, erasure_curves,
                                                random_orders_curves, versus_random)
    from textcls.interpret.methods import explanation
    (inst,) = as_source(p).instances([text])
    curves = erasure_curves(p.model, inst, explanation(p.model, inst, "attention", labels=p.labels))
    out = versus_random(curves, random_orders_curves(p.model, inst, N_RANDOM))
    return {**out, "rule": f"{VERDICT_RULE} {ONE_TEXT_NOTE}"}


@answers
def attention_verdict(env: dict[str, str], path: str, stamp: float, text: str) -> dict:
    set_env(env)
    return attention_verdict_of(predictor(path, stamp), text)


@answers
def pieces(env: dict[str, str], path: str, stamp: float, text: str):
    """`textcls.models.hf.pieces.piece_attention_of`: a `PieceAttention` (plain data, torch-free class)."""
    set_env(env)
    return pieces_of(predictor(path, stamp), text)


def pieces_of(p, text: str):
    from textcls.models.hf.pieces import piece_attention_of
    return piece_attention_of(p, text)


@answers
def side_by_side(env: dict[str, str], path: str, stamp: float, text: str):
    """`textcls.interpret.context_mixing.compare.side_by_side` (a `SideBySide`, numpy only)."""
    set_env(env)
    return side_by_side_of(predictor(path, stamp), text)


def side_by_side_of(p, text: str):
    from textcls.interpret.context_mixing.compare import side_by_side as run
    return run(p, text)


@answers
def prefetch_start(env: dict[str, str], key: str, path: str, stamp: float, texts: list[str],
                   batch_size: int = 64) -> int:
    """Begin a long prediction kept here under `key`; `prefetch_next(key)` computes its batches one by one, in
    `Predictor.batches`' order, under the batch thread setting (what the page's own `predict` of as many texts
    does). Returns the number of texts."""
    set_env(env)
    from textcls.runtime.threads import batch
    p = predictor(path, stamp, predict_device())
    _PREFETCH.clear()                       # one at a time
    _PREFETCH[key] = (p.batches(list(texts), batch_size=batch_size), batch)
    return len(texts)


@answers(work=None)
def prefetch_next(key: str):
    """The next (positions, predictions) of a prefetch, or None when it is done (or unknown: a restarted worker)."""
    entry = _PREFETCH.get(key)
    if entry is None:
        return None
    batches, batch = entry
    with batch():
        item = next(batches, None)
    if item is None:
        _PREFETCH.pop(key, None)
    return item


@answers
def warm(env: dict[str, str], paths: list[tuple[str, float]]) -> list[str]:
    """Load these checkpoints ahead, in order; returns the errors (one line each) of those that fail."""
    set_env(env)
    errors = []
    for path, stamp in paths:
        try:
            predictor(path, stamp, "cpu")      # Compare's maps: on the CPU
        except Exception as e:  # noqa: BLE001 - the page that uses it loads it again and shows the error
            errors.append(f"{path}: {type(e).__name__}: {e}")
    return errors


def warm_background(env: dict[str, str], paths: list[tuple[str, float]]) -> None:
    """`warm` in a thread of this process, returning at once: a large model (the pretrained encoder: transformers'
    import, seconds) loads while the requests go on being answered (its import is Python code, which lets the
    requests' thread run between its steps). A process of its own for the encoders was tried (issue 45) and lost:
    its second torch import on two cores made "Add the pretrained baseline" 7.85 s against 3.64 s.

    Meanwhile the interpreter switches threads every BACKGROUND_SWITCH s instead of 5 ms: a request's torch ops each
    let go of the interpreter lock and wait for it back, and with an import running beside them each wait lasted
    the whole switch interval (a Compare answered during the load took 5.1 s instead of 1.2 s)."""
    threading.Thread(target=_warm_beside_requests, args=(env, paths), name="textcls-warm-large", daemon=True).start()


BACKGROUND_SWITCH = 0.0002       # sys.setswitchinterval while warm_background loads (Python's default: 0.005)
_SWITCH_LOCK = threading.Lock()
_loads_beside_requests = 0       # warm_background loads under way
_saved_switch = 0.005            # the interval to restore when the last one ends


def _warm_beside_requests(env: dict[str, str], paths: list[tuple[str, float]]) -> None:
    import sys
    global _loads_beside_requests, _saved_switch
    with _SWITCH_LOCK:
        if _loads_beside_requests == 0:
            _saved_switch = sys.getswitchinterval()
            sys.setswitchinterval(BACKGROUND_SWITCH)
        _loads_beside_requests += 1
    try:
        warm(env, paths)
    finally:
        with _SWITCH_LOCK:
            _loads_beside_requests -= 1
            if _loads_beside_requests == 0:
                sys.setswitchinterval(_saved_switch)


@answers
def request_threads(env: dict[str, str]) -> tuple[int, int]:
    """(torch threads a request of one text runs on here, torch's own default in this process): what the thread
    policy gives the worker's requests (tests, diagnostics)."""
    set_env(env)
    import torch
    from textcls.runtime.threads import torch_default_threads
    return torch.get_num_threads(), torch_default_threads()


def imported(module: str) -> bool:
    """Whether this process has imported `module` (diagnostics, tests: the worker, not the server, imports torch)."""
    import sys
    return module in sys.modules


def pid() -> int:
    return os.getpid()
