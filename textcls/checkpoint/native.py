"""Native textcls checkpoints: one folder per trained model (the other kind, Hugging Face folders: checkpoint.hf).

    config.json        format marker and version, model name and its config, label names, tokenizer
                       settings, weights dtype, library version, created time (UTC), plus what the trainer
                       records (data set, metrics incl. test accuracy, training settings, embeddings).
    vocab.json         the vocabulary (`Vocab.to_json()`).
    model.safetensors  the weights (float32, or float16 with `float16=True`; loaded back as float32).
    history.json       the training history (per-epoch loss/accuracy, stop reason); optional on load.
    tracin.safetensors TracIn's saved epochs (checkpoint.snapshots, interpret.influence); optional.

Saving goes through the package's one folder writer (`files.write_folder`): everything to a hidden temporary
folder beside the target, fsynced, renamed into place; an existing checkpoint is replaced only once the new one is
complete (moved aside, the new folder renamed in, the old one deleted). A crash at any point leaves the complete old
or the complete new checkpoint under NAME, or the old one aside with NAME missing; the next save or listing in that
folder (`recover_folder`) puts it back and deletes the leftovers of dead processes. A folder that exists and is not
a checkpoint is never replaced. Loading never unpickles: safetensors only. Anything wrong with a folder raises
`CheckpointError` whose message names the folder and the problem.

Listing (`list_checkpoints`, `checkpoint_info`, `read_config`) reads only JSON and the safetensors header and
never imports torch or the models, so it is fast; with `deep=True` (the CLI's `list`, the app's pages once torch
is loaded) every folder is validated in full, in isolation, by `validate_checkpoint`: the model is built on
torch's meta device (shapes, no memory) and compared with the header, so a folder that lists as usable loads.
Every file of a folder is read by the package's one reader (`files`: a regular file in it - no FIFO, device or
symlink out of it - with a size cap); the safetensors header is parsed strictly (`files.safetensors_header`);
weights must be floating point and finite, labels unique, and history.json must fit History's schema. Listing and
loading give the same verdict because both go through the checks here.
"""
from __future__ import annotations

import copy
import dataclasses
import datetime as _dt
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textcls.checkpoint.files import (FLOAT_DTYPES, CheckpointError, check_file, nonfinite_tensor, read_json_file,
                                      recover_folder, safetensors_header, write_folder)
from textcls.checkpoint.hf import hf_summary, is_hf_folder
from textcls.checkpoint.legacy import config_from_dict
from textcls.checkpoint.snapshots import SNAPSHOT_FILE, check_snapshots, write_snapshots
from textcls.runtime.files import finite_json
from textcls.runtime.limits import MAX_JSON_BYTES, Limits
from textcls.runtime.paths import checkpoint_roots, shipped_checkpoints
from textcls.records import History

if TYPE_CHECKING:  # torch is imported where it is used: listing checkpoints must not import it
    import torch

FORMAT = "textcls-checkpoint"
FORMAT_VERSION = 1
FILES = ("config.json", "vocab.json", "model.safetensors", "history.json", SNAPSHOT_FILE)
REQUIRED = ("config.json", "vocab.json", "model.safetensors")
RESERVED = ("format", "format_version", "model", "model_config", "labels", "tokenizer", "weights_dtype",
            "num_parameters", "created", "library_version")


@dataclass
class CheckpointInfo:
    name: str
    path: Path
    model: str = ""
    data: str = ""
    test_accuracy: float | None = None
    labels: list[str] = dataclasses.field(default_factory=list)
    created: str = ""
    valid: bool = True
    error: str | None = None
    info: dict[str, Any] = dataclasses.field(default_factory=dict)  # config.json
    shipped: bool = False            # in the read-only shipped folder (paths.shipped_checkpoints)


# ---------------------------------------------------------------- helpers


def _jsonable_config(config) -> dict[str, Any]:
    d = dataclasses.asdict(config)
    try:
        json.dumps(d)
    except TypeError as e:
        raise ValueError(f"model config is not JSON-serialisable: {e}") from None
    return d


def _read_json(path: Path, what: str):
    """A JSON file of the folder, read by the one capped reader (files.read_json_file) under its MAX_JSON_BYTES cap
    (textcls.runtime.limits; a 400,000-word vocabulary is about 8 MB): a crafted folder cannot make listing read
    hundreds of MB."""
    return read_json_file(path, MAX_JSON_BYTES.get(path.name, 16_000_000), what)


def _is_checkpoint_dir(path: Path) -> bool:
    try:
        cfg = _read_json(path / "config.json", "config.json")
        return isinstance(cfg, dict) and cfg.get("format") == FORMAT
    except (OSError, ValueError, RecursionError):          # CheckpointError is a ValueError
        return False


def _vocab_to_obj(vocab):
    data = vocab.to_dict() if hasattr(vocab, "to_dict") else vocab.to_json()
    return json.loads(data) if isinstance(data, (str, bytes)) else data


# ---------------------------------------------------------------- save


def check_target(path: str | Path) -> Path:
    """Raise CheckpointError unless `path` may receive a checkpoint: absent, an empty folder, or a checkpoint
    (which a save replaces). Trainers call it before training, so a bad --out fails at once."""
    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise CheckpointError(f"{path} exists and is not a folder; not replacing it")
        if any(path.iterdir()) and not _is_checkpoint_dir(path):
            raise CheckpointError(f"{path} exists and is not a textcls checkpoint; not replacing it")
    return path


def save_checkpoint(path: str | Path, model: torch.nn.Module, tokenizer, labels, meta: dict[str, Any] | None = None,
                    history=None, float16: bool = False, snapshots=None) -> Path:
    """Write a checkpoint folder at `path` (atomically; see the module docstring), with TracIn's `snapshots`
    (interpret.influence.Snapshots) when given. Returns the path."""
    import torch

    from textcls import __version__

    path = Path(path)
    name = getattr(model, "registry_name", "")
    if not name:
        raise ValueError("save_checkpoint: the model is not a registered textcls model (no registry_name)")
    labels = [str(x) for x in labels]
    num_labels = getattr(model.config, "num_labels", len(labels))
    if len(labels) != num_labels:
        raise ValueError(f"save_checkpoint: {len(labels)} label names for a model with {num_labels} classes")
    if len(tokenizer.vocab) != getattr(model.config, "vocab_size", len(tokenizer.vocab)):
        raise ValueError(f"save_checkpoint: the vocabulary has {len(tokenizer.vocab)} entries but the model's "
                         f"vocab_size is {model.config.vocab_size}")
    check_target(path)

    state = {k: v.detach().to("cpu").contiguous().clone() for k, v in model.state_dict().items()}
    if float16:
        state = {k: v.half() if v.dtype == torch.float32 else v for k, v in state.items()}
    config: dict[str, Any] = dict(meta or {})
    config.update({
        "format": FORMAT, "format_version": FORMAT_VERSION, "model": name,
        "model_config": _jsonable_config(model.config), "labels": labels,
        "tokenizer": dataclasses.asdict(tokenizer.config),
        "weights_dtype": "float16" if float16 else "float32",
        "num_parameters": sum(p.numel() for p in model.parameters()),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "library_version": __version__,
    })
    hist = history.to_dict() if hasattr(history, "to_dict") else (history or {})
    try:
        config_text = json.dumps(config, indent=2, allow_nan=False)
        history_text = json.dumps(hist, indent=1, allow_nan=False)
    except ValueError:  # NaN/inf in metrics or history (a diverged run): write them as null
        config_text = json.dumps(finite_json(config), indent=2)
        history_text = json.dumps(finite_json(hist), indent=1)
    vocab_text = json.dumps(_vocab_to_obj(tokenizer.vocab), ensure_ascii=False)

    from safetensors.torch import save_file

    def write(tmp: Path) -> None:
        for name_, text in (("config.json", config_text), ("vocab.json", vocab_text),
                            ("history.json", history_text)):
            (tmp / name_).write_bytes(text.encode("utf-8"))
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt", "textcls_model": name})
        if snapshots is not None:
            write_snapshots(tmp, snapshots, float16)
    return write_folder(path, write)        # fsynced, renamed into place (files.write_folder)


# ---------------------------------------------------------------- load


def read_config(path: str | Path) -> dict[str, Any]:
    """config.json of a checkpoint folder, checked for the format marker and the required files."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"{path}: no such checkpoint folder")
    if not path.is_dir():
        raise CheckpointError(f"{path}: not a folder (a checkpoint is a folder with {', '.join(REQUIRED)})")
    missing = [f for f in REQUIRED if not (path / f).exists() and not (path / f).is_symlink()]
    if missing:
        raise CheckpointError(f"{path}: not a complete checkpoint, missing {', '.join(missing)}")
    for f in FILES:                          # regular files only (no FIFO, device, symlink out of the folder)
        if (path / f).exists() or (path / f).is_symlink():
            check_file(path / f)
    cfg = _read_json(path / "config.json", "config.json")
    if not isinstance(cfg, dict) or cfg.get("format") != FORMAT:
        raise CheckpointError(f"{path}: config.json is not a textcls checkpoint config (format marker missing)")
    version = cfg.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise CheckpointError(f"{path}: unsupported checkpoint format_version {version!r} "
                              f"(this library reads up to {FORMAT_VERSION})")
    for key, kind in (("model", str), ("model_config", dict), ("labels", list), ("tokenizer", dict)):
        if not isinstance(cfg.get(key), kind):
            raise CheckpointError(f"{path}: config.json has no valid {key!r} ({kind.__name__} expected)")
    if not cfg["labels"] or not all(isinstance(x, str) for x in cfg["labels"]):
        raise CheckpointError(f"{path}: config.json 'labels' must be a non-empty list of names")
    dup = sorted({x for x in cfg["labels"] if cfg["labels"].count(x) > 1})
    if dup:
        raise CheckpointError(f"{path}: config.json 'labels' names a class twice: {dup[:5]}")
    return cfg


# The most tokens a flat model without a position table reads per text, whatever a config.json says
# (textcls.runtime.limits): the attention models' memory grows with the square of the length, and no shipped recipe uses
# more than 400.
MAX_TOKENS_PER_TEXT = Limits.max_tokens_per_text


def _clip_to_model(tok_config, model_config):
    """The tokenizer settings limited to what the model can read: max_len to its position table
    (`config.position_limit`) and MAX_TOKENS_PER_TEXT, and for hierarchical input max_sentences / max_words to its tables. A config.json
    asking for more (e.g. max_len 10^12 beside a 500-position model) is clipped at load, so a long text is cut,
    never a memory bomb."""
    limits = {"max_len": min(getattr(model_config, "position_limit", None) or MAX_TOKENS_PER_TEXT,
                             MAX_TOKENS_PER_TEXT),
              "max_sentences": getattr(model_config, "max_sentences", None),
              "max_words": getattr(model_config, "max_words", None)}
    clipped = {k: min(getattr(tok_config, k), v) for k, v in limits.items()
               if isinstance(v, int) and isinstance(getattr(tok_config, k, None), int) and getattr(tok_config, k) > v}
    return dataclasses.replace(tok_config, **clipped) if clipped else tok_config


def _model_entry(path: Path, cfg: dict[str, Any]):
    from textcls.models.registry import get_entry, list_models
    try:
        return get_entry(cfg["model"])
    except KeyError:
        raise CheckpointError(f"{path}: unknown model {cfg['model']!r} (known: {', '.join(list_models())})") \
            from None


@dataclass
class Validated:
    """What `validate_checkpoint` found: everything needed to build the model, nothing allocated yet."""
    cfg: dict[str, Any]
    entry: Any                       # the registry entry (model class, config class)
    config: Any                      # the model's config dataclass
    tokenizer: Any                   # textcls.data.text.Tokenizer, clipped to what the model can read
    shapes: dict[str, tuple[int, ...]]   # the state dict's tensor shapes, from the meta-device model


_CHECKED_FILES = FILES
_REMEMBERED_LOCK = threading.Lock()
_KEY_LOCKS: dict[tuple, threading.Lock] = {}
REMEMBERED_MAX = 256            # verdicts kept per store; a full store starts again empty


def _remembered(store: dict, key: tuple, compute):
    """compute()'s result, or the CheckpointError it raised, remembered in `store` under `key` (a folder's and its
    files' identity): asked again, it is not computed again and the same error is raised again. Two threads asking
    for the same key at once share one computation. The caller copies what it hands out."""
    with _REMEMBERED_LOCK:
        lock = _KEY_LOCKS.setdefault((id(store), key), threading.Lock())
    with lock:
        found = store.get(key)
        if found is None:
            try:
                found = compute()
            except CheckpointError as e:
                found = e
            with _REMEMBERED_LOCK:
                if len(store) > REMEMBERED_MAX:
                    store.clear()
                    _KEY_LOCKS.clear()
                store[key] = found
    if isinstance(found, CheckpointError):
        raise CheckpointError(str(found))
    return found


def _file_identity(path: Path) -> tuple[int, int, int] | None:
    """(inode, size, modification time in ns) of a file, None when it cannot be read: a file saved again,
    or replaced, gets a new identity."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _folder_identity(path: Path) -> tuple:
    """The folder and the identity of each file a validation reads (the key of what is remembered about it)."""
    return (str(path.absolute()), tuple(_file_identity(path / name) for name in _CHECKED_FILES))


def _validation_key(path: Path, limits) -> tuple:
    """What a full validation's verdict depends on: the folder, the parameter limit and each file's identity."""
    from textcls.runtime.limits import current
    return (_folder_identity(path), (limits or current()).max_parameters)


_VALIDATED: dict[tuple, Validated | CheckpointError] = {}


def validate_checkpoint(path: str | Path, limits=None) -> Validated:
    """Check a checkpoint folder in full without reading its weights or building its model: config and its
    types, the model name, labels, vocabulary, tokenizer settings, the parameter count (counted on the meta
    device, against `limits.max_parameters`) and every tensor's shape in the safetensors header. Raises
    CheckpointError naming the folder and the problem. Imports torch (listing without torch: `checkpoint_info`).

    The verdict is remembered per (folder, parameter limit, identity of each file: inode, size, modification time),
    so listing the same folders again, or loading a checkpoint just listed, validates nothing twice; a file
    saved again is validated again. Two threads asking for the same folder at once share one validation (the
    app's warm-up lists every checkpoint in the background while a page may ask for the same). Each caller gets
    its own copy of the config; the tokenizer is shared and read-only, like the cached models that use it."""
    path = Path(path)
    found = _remembered(_VALIDATED, _validation_key(path, limits), lambda: _validate(path, limits))
    return dataclasses.replace(found, cfg=copy.deepcopy(found.cfg), config=copy.deepcopy(found.config))


def _validate(path: Path, limits) -> Validated:
    from textcls.runtime.limits import LimitError
    from textcls.runtime.limits import check_parameters
    from textcls.runtime.sizing import meta_model
    from textcls.data.text import Tokenizer, TokenizerConfig, Vocab

    cfg = read_config(path)
    entry = _model_entry(path, cfg)
    try:
        config = config_from_dict(entry.config_cls, cfg["model_config"])
    except CheckpointError as e:
        raise CheckpointError(f"{path}: {e}") from None
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: bad model_config for {cfg['model']!r}: {e}") from None
    from textcls.models.registry import config_problem
    problem = config_problem(config)
    if problem:
        raise CheckpointError(f"{path}: bad model_config for {cfg['model']!r}: {problem}")
    labels = cfg["labels"]
    if getattr(config, "num_labels", len(labels)) != len(labels):
        raise CheckpointError(f"{path}: {len(labels)} labels but model_config.num_labels = {config.num_labels}")

    vocab_obj = _read_json(path / "vocab.json", "vocab.json")
    try:
        vocab = Vocab.from_json(vocab_obj)
    except Exception as e:  # noqa: BLE001 - any failure to parse the vocabulary is a bad checkpoint
        raise CheckpointError(f"{path}: vocab.json is not a vocabulary: {type(e).__name__}: {e}") from None
    if len(vocab) != getattr(config, "vocab_size", len(vocab)):
        raise CheckpointError(f"{path}: vocab.json has {len(vocab)} entries but model_config.vocab_size is "
                              f"{config.vocab_size}")
    try:
        tokenizer = Tokenizer(_clip_to_model(TokenizerConfig.from_dict(cfg["tokenizer"]), config), vocab)
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: bad tokenizer settings in config.json: {e}") from None

    try:
        skeleton = meta_model(entry.cls, config)
    except Exception as e:  # noqa: BLE001 - a config the model rejects is a bad checkpoint
        raise CheckpointError(f"{path}: cannot build {cfg['model']!r} from model_config: {type(e).__name__}: {e}") \
            from None
    try:
        check_parameters(sum(p.numel() for p in skeleton.parameters()), limits, "its model_config")
    except LimitError as e:
        raise CheckpointError(f"{path}: {e}") from None
    shapes = {k: tuple(t.shape) for k, t in skeleton.state_dict().items()}
    floating = {k for k, t in skeleton.state_dict().items() if t.is_floating_point()}

    header = safetensors_header(path / "model.safetensors")
    missing = sorted(set(shapes) - set(header))
    unexpected = sorted(set(header) - set(shapes))
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing tensor(s) {missing[:5]}{' ...' if len(missing) > 5 else ''}")
        if unexpected:
            parts.append(f"unexpected tensor(s) {unexpected[:5]}{' ...' if len(unexpected) > 5 else ''}")
        raise CheckpointError(f"{path}: model.safetensors does not match model {cfg['model']!r}: {'; '.join(parts)}")
    for k, shape in shapes.items():
        if shape != header[k][1]:
            raise CheckpointError(f"{path}: shape mismatch for {k!r}: the file has {list(header[k][1])}, "
                                  f"the model expects {list(shape)}")
        if k in floating and header[k][0] not in FLOAT_DTYPES:
            raise CheckpointError(f"{path}: tensor {k!r} is stored as {header[k][0]}; the model needs floating "
                                  f"point weights ({', '.join(FLOAT_DTYPES)})")
    bad = nonfinite_tensor(path / "model.safetensors")
    if bad:
        raise CheckpointError(f"{path}: tensor {bad!r} holds NaN or infinite values")
    if (path / "history.json").exists():
        _check_trained(path, cfg, load_history(path))
    if (path / SNAPSHOT_FILE).exists() or (path / SNAPSHOT_FILE).is_symlink():
        check_snapshots(path, skeleton)
    return Validated(cfg, entry, config, tokenizer, shapes)


def _check_trained(path: Path, cfg: dict[str, Any], history) -> None:
    """Refuse a folder an earlier version wrote for a run that diverged before its first epoch (initial weights)."""
    if isinstance(cfg.get("training"), dict) and cfg["training"].get("diverged") is True and not history.epochs:
        raise CheckpointError(f"{path}: not a trained checkpoint: its run diverged before the first epoch completed "
                              "(untrained initial weights); delete it and train again with a smaller learning rate")


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu", limits=None):
    """Load a checkpoint folder into a `Predictor` (model in eval mode on `device`; "auto" picks cuda).
    The folder is validated in full first (`validate_checkpoint`), so a crafted config costs nothing."""
    import torch
    from safetensors.torch import load_file

    from textcls.runtime.devices import resolve_device  # torch: imported when a checkpoint is loaded, not when listed
    from textcls.inference import Predictor

    path = Path(path)
    if str(path).startswith("hf:") or is_hf_folder(path):
        return _load_hf(path, device)
    checked = validate_checkpoint(path, limits)
    cfg, config, tokenizer, labels = checked.cfg, checked.config, checked.tokenizer, checked.cfg["labels"]
    try:
        state = load_file(str(path / "model.safetensors"))
    except Exception as e:  # noqa: BLE001 - safetensors raises its own error types
        raise CheckpointError(f"{path}: cannot read model.safetensors: {type(e).__name__}: {e}") from None
    for k, v in state.items():
        if v.is_floating_point() and not torch.isfinite(v).all():
            raise CheckpointError(f"{path}: tensor {k!r} holds NaN or infinite values")
    model = _model_with(path, checked, state)
    model.to(resolve_device(device)).eval()
    return Predictor(model, tokenizer, labels, name=path.name, info=cfg, path=path)


def _model_with(path: Path, checked: Validated, state: dict):
    """The checkpoint's model holding `state`. Built on the meta device (no random initialisation: every weight
    comes from the file) and given the file's tensors; a model that keeps a tensor outside its state dict (which
    the file cannot fill) or shares a weight between two names is built and initialised as usual, then loaded."""
    from itertools import chain

    import torch

    from textcls.runtime.sizing import meta_model
    build = f"{path}: cannot build {checked.cfg['model']!r} from model_config"
    try:
        model = meta_model(checked.entry.cls, checked.config)
    except Exception as e:  # noqa: BLE001 - a config the model rejects is a bad checkpoint
        raise CheckpointError(f"{build}: {type(e).__name__}: {e}") from None
    n_params = len(list(model.parameters()))
    expected = model.state_dict()                                       # meta tensors: names, shapes, dtypes
    # fresh storage for every tensor (the file's tensors can sit unaligned in one buffer, and some CPU kernels
    # then sum in another order: the logits would differ from the saved model's in the last bit)
    state = {k: v.to(expected[k].dtype if v.is_floating_point() and k in expected else v.dtype, copy=True)
             for k, v in state.items()}
    try:
        model.load_state_dict(state, strict=True, assign=True)
    except RuntimeError as e:
        raise CheckpointError(f"{path}: weights do not fit the model: {e}") from None
    loose = any(t.is_meta for m in model.modules() for t in m.__dict__.values() if isinstance(t, torch.Tensor))
    if not loose and len(list(model.parameters())) == n_params and \
            not any(t.is_meta for t in chain(model.parameters(), model.buffers())):
        return model
    try:                                                # the slow, always-right way
        model = checked.entry.cls(checked.config)
    except Exception as e:  # noqa: BLE001
        raise CheckpointError(f"{build}: {type(e).__name__}: {e}") from None
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as e:
        raise CheckpointError(f"{path}: weights do not fit the model: {e}") from None
    return model


def _load_hf(path: Path, device):  # checkpoint.hf: a Hugging Face folder, a shipped delta, or hf:ID
    from textcls.checkpoint.hf import load_hf
    from textcls.inference import Predictor
    model, tokenizer, labels, info = load_hf(path, device)
    hub = str(path).startswith("hf:")
    return Predictor(model, tokenizer, labels, name=Path(str(path)[3 * hub:]).name, info=info, path=None if hub else path)


def load_history(path: str | Path):
    """The checkpoint's training History (empty History when history.json is absent). The file is read like
    every checkpoint file (regular, capped) and checked against History's schema: every field of its type,
    each epoch a table whose numbers are numbers; anything else is a CheckpointError naming the file."""
    p = Path(path) / "history.json"
    if not p.exists() and not p.is_symlink():
        return History()
    d = _read_json(p, "history.json")
    try:
        return History.from_json(d)
    except ValueError as e:
        raise CheckpointError(f"{p}: history.json {e}") from None


# ---------------------------------------------------------------- list


def _check_sizes(path: Path, cfg: dict[str, Any], vocab) -> None:
    """The checks of `validate_checkpoint` that need no torch: label and vocabulary counts against the config."""
    mc = cfg["model_config"]
    n = mc.get("num_labels")
    if isinstance(n, int) and n != len(cfg["labels"]):
        raise CheckpointError(f"{path}: {len(cfg['labels'])} labels but model_config.num_labels = {n}")
    itos = vocab.get("itos") if isinstance(vocab, dict) else vocab
    if not isinstance(itos, list):
        raise CheckpointError(f"{path}: vocab.json is not a vocabulary (no token list)")
    size = mc.get("vocab_size")
    if isinstance(size, int) and size != len(itos):
        raise CheckpointError(f"{path}: vocab.json has {len(itos)} entries but model_config.vocab_size is {size}")


_READ: dict[tuple, dict[str, Any] | CheckpointError] = {}


def _read_checked(path: Path) -> dict[str, Any]:
    """The checks of checkpoint_info(deep=False) on one of our folders, and its config. The verdict is remembered
    per folder and file identity, like a full validation's: the app lists the same folders on every page."""
    def read() -> dict[str, Any]:
        cfg = read_config(path)
        safetensors_header(path / "model.safetensors")
        _check_sizes(path, cfg, _read_json(path / "vocab.json", "vocab.json"))
        _check_trained(path, cfg, load_history(path))
        return cfg
    return copy.deepcopy(_remembered(_READ, _folder_identity(path), read))


def checkpoint_info(path: str | Path, deep: bool | str = False) -> CheckpointInfo:
    """Summary of one checkpoint folder, validated without loading the weights. Raises CheckpointError when
    invalid. deep=False reads only JSON and the safetensors header, without importing torch (config, files, a
    complete safetensors file, label and vocabulary counts); deep=True validates in full (`validate_checkpoint`:
    model name, config types, tokenizer, parameter limit, every tensor shape), which imports torch. Both
    verdicts are remembered per folder and file identity (a file saved again is read again). deep="textcls": our
    folders in full, Hugging Face folders without their deep check (transformers, the tokenizer probe), which
    `load_checkpoint` runs before anything of the folder is built (the app's select boxes list this way)."""
    path = Path(path)
    if is_hf_folder(path):      # deep="textcls": an HF folder's deep check waits for its load (the app's listing)
        cfg = hf_summary(path, deep=bool(deep) and deep != "textcls")
    elif deep:
        cfg = validate_checkpoint(path).cfg
    else:
        cfg = _read_checked(path)
    metrics = cfg.get("metrics") if isinstance(cfg.get("metrics"), dict) else {}
    acc = metrics.get("test_accuracy")
    if acc is None and isinstance(metrics.get("test"), dict):
        acc = metrics["test"].get("accuracy")
    data = cfg.get("data")
    data_name = data.get("name", "") if isinstance(data, dict) else str(data or "")
    return CheckpointInfo(name=path.name, path=path, model=cfg["model"], data=data_name,
                          test_accuracy=float(acc) if isinstance(acc, (int, float)) else None,
                          labels=list(cfg["labels"]), created=str(cfg.get("created", "")), info=cfg)


def list_checkpoints(root: str | Path = "checkpoints", include_invalid: bool = False,
                     deep: bool | str = False) -> list[CheckpointInfo]:
    """Info for each valid checkpoint folder directly under `root`, sorted by name (`deep`: see checkpoint_info).

    Hidden folders (temporary folders of a save in progress) are skipped. Invalid folders are skipped too,
    or, with include_invalid=True, returned with valid=False and `error` saying what is wrong.
    A missing root gives an empty list.
    """
    root = Path(root)
    if not root.is_dir():
        return []
    recover_folder(root)
    out = []
    for p in sorted(root.iterdir()):
        if not p.is_dir() or p.name.startswith("."):
            continue
        try:
            out.append(checkpoint_info(p, deep=deep))
        except Exception as e:  # noqa: BLE001 - one unreadable folder never hides or breaks the others
            if include_invalid:
                why = str(e) if isinstance(e, CheckpointError) else f"{p}: unreadable ({type(e).__name__}: {e})"
                out.append(CheckpointInfo(name=p.name, path=p, valid=False, error=why))
    return out


def list_all_checkpoints(include_invalid: bool = False, deep: bool | str = False) -> list[CheckpointInfo]:
    """The shipped checkpoints, then the user's (paths.checkpoint_roots), each marked `shipped` or not.

    A user checkpoint whose folder name is also a shipped one is listed as "NAME (yours)", so every listed
    name is unique and both stay reachable.
    """
    out: list[CheckpointInfo] = []
    seen: set[str] = set()
    shipped_root = shipped_checkpoints()
    for root in checkpoint_roots():
        shipped = root == shipped_root
        for info in list_checkpoints(root, include_invalid=include_invalid, deep=deep):
            info.shipped = shipped
            if info.name in seen:
                info.name = f"{info.name} (yours)"
            seen.add(info.name)
            out.append(info)
    return out


__all__ = ["FORMAT", "FORMAT_VERSION", "FILES", "MAX_JSON_BYTES", "MAX_TOKENS_PER_TEXT", "REQUIRED", "RESERVED",
           "CheckpointInfo", "Validated", "check_target", "checkpoint_info", "list_all_checkpoints", "list_checkpoints",
           "load_checkpoint", "load_history", "nonfinite_tensor", "read_config", "save_checkpoint",
           "validate_checkpoint"]
