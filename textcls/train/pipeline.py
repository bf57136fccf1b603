"""Training from a spec: `train_from_spec(data, model, ...)` loads the data, builds the tokenizer, vocabulary and
embeddings a model needs, trains it with `training.fit`, evaluates dev and test, and saves a checkpoint. The CLI,
the Train page, the reproduction suites and the checkpoint recipe all call it.

Under torchrun (`distributed.init` called first) every rank runs it: each loads and tokenises the same data and
builds the same vocabulary (deterministic), `fit` trains with DDP, dev/test are predicted in shards and
gathered, and only rank 0 writes the checkpoint (atomically, as always); the others return with `path` None.

`arrow=True` reads the data as memory-mapped Arrow tables, builds the vocabulary in a streaming pass and
tokenises with `map(batched=True, num_proc=...)` into a disk cache (textcls/data/arrow.py): for hub data sets
and files too big for memory. `arrow=None` follows the one rule (`data.datasets.use_arrow`: hub ids and files
of 256 MB or more, as the CLI does); the default, False, is the in-memory path."""
from __future__ import annotations

import dataclasses
import math
import numbers
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import torch

from textcls.runtime import distributed
from textcls.data.batching import encode_split, predict_sharded
from textcls.runtime.limits import Limits
from textcls.records import History
from textcls.runtime.sizing import check_training, training_bytes
from textcls.train.config import PAPER_TRAINING, TrainConfig
from textcls.train.fit import Callback, fit


EMBEDDING_SOURCES = ("glove", "random")


@dataclass
class TrainResult:
    model: torch.nn.Module
    tokenizer: Any
    labels: list[str]
    history: History
    metrics: dict[str, Any]          # {"dev": report, "test": report} (classification_report dicts)
    path: Path | None                # the checkpoint folder, when one was written
    data_name: str
    embedding_coverage: float | None = None
    seconds: float = 0.0
    snapshots: Any = None            # TracIn's saved epochs (interpret.influence.Snapshots), for save_checkpoint


def nothing_trained(history: History) -> bool:
    """Whether a run diverged before its first epoch completed: its weights are the initial ones (or worse), so
    it is neither evaluated nor saved - no checkpoint unless an epoch completed."""
    return bool(history.diverged and not history.epochs)


def check_label_names(labels, limits: Limits | None = None) -> None:
    """LimitError, before any training, when the label names alone would fill more than half of a checkpoint's
    config.json (`Limits.max_config_bytes`): such a checkpoint could be written but never read back. (Its metrics
    are sized by `metrics.compact_report`: linear in the classes, without their matrix.)"""
    import json
    from textcls.runtime.limits import LimitError, current, fmt_mb
    cap = (limits or current()).max_config_bytes
    size = sum(len(json.dumps(str(x))) + 6 for x in labels)          # as config.json writes them (indent 2)
    if size > cap // 2:
        raise LimitError(f"{len(labels):,} labels whose names take {fmt_mb(size)} in the checkpoint's config.json, "
                         f"more than half its limit of {fmt_mb(cap)} (max_config_bytes); merge rare labels or "
                         "shorten their names")


def _resolve_embeddings(spec: str | None) -> str | None:
    if spec in (None, "", "random", "none"):
        return None
    if spec == "glove":
        return "glove"
    p = Path(spec).expanduser()
    if not p.is_file():
        raise ValueError(f"embeddings must be 'glove', 'random' or an existing vectors file; no file {spec!r}")
    return str(p)


def tokenizer_config_for(model_config, input_kind: str = "tokens", overrides: dict[str, Any] | None = None):
    """The TokenizerConfig a model needs: hierarchical for "sentences" input; for a model with a learned
    position table (`config.position_limit`: ACT, CAN, the Transformer's global pooling) max_len is capped at it,
    and an explicit larger max_len is a ValueError."""
    from textcls.data.text import TokenizerConfig
    values = {"hierarchical": input_kind == "sentences", **(overrides or {})}
    max_pos = getattr(model_config, "position_limit", None)
    if max_pos is not None and not values["hierarchical"]:
        if "max_len" in values and values["max_len"] > max_pos:
            raise ValueError(f"tokenizer max_len {values['max_len']} exceeds the model's max_positions "
                             f"{max_pos}; raise max_positions (--set max_positions=N) or lower max_len")
        values.setdefault("max_len", min(TokenizerConfig().max_len, max_pos))
    return TokenizerConfig(**values)


def extend_vocab(tokenizer, source, n: int):
    """(tokenizer with the `n` most frequent GloVe words appended where missing, number appended)."""
    from textcls.data.text import Tokenizer, Vocab
    if n < 0:
        raise ValueError(f"extra_vocab must be >= 0, got {n}")
    if str(source) != "glove":
        raise ValueError("extra_vocab needs GloVe embeddings (embeddings='glove')")
    from textcls.data.embeddings import glove_vectors
    words, _ = glove_vectors()
    have = tokenizer.vocab.stoi
    extra = [w for w in dict.fromkeys(w for w in words[:n] if isinstance(w, str) and w) if w not in have]
    return Tokenizer(tokenizer.config, Vocab(tokenizer.vocab.itos + extra)), len(extra)


def relation_settings(model: str, preset: str | None, overrides: dict[str, Any],
                      tokenizer_overrides: dict[str, Any] | None, variant: str | None = None):
    """The task's settings on relation data (textcls/data/relation.py): a model with a "relation" preset (ACT, the
    Transformer) gets it unless a preset was named; a model with relative positions gets the tokenizer's
    entities="keep" (the tags carry the spans), any other model entities="drop" (plain text). Returns
    (preset, tokenizer overrides, the model config with that preset); an explicit entities="none"/"drop" for a
    relative-position model is a ValueError."""
    from textcls.models.registry import get_entry, make_config
    entry = get_entry(model)
    if preset is None and "relation" in entry.presets:
        preset = "relation"
    tok = dict(tokenizer_overrides or {})
    config = make_config(model, preset=preset, variant=variant, **overrides)
    relative = getattr(config, "relative_positions", False)
    mode = tok.setdefault("entities", "keep" if relative else "drop")
    if relative and mode not in ("keep", "mask"):
        raise ValueError(f"relative positions need the entity tags in the token stream: tokenizer entities "
                         f"must be 'keep' or 'mask', not {mode!r}")
    return preset, tok, config


@dataclass
class TrainSpec:
    """One training run, as the CLI, the Train page (through textcls.train.jobs), the studies and the reproduction
    suites describe it; `run_training(spec)` runs it."""
    data: Any = field(metadata={"help": "a bundled name, a path, 'hf:ID' (see data.load_data), or a loaded "
                                        "DataBundle / ArrowBundle (then `limit` still applies)"})
    model: str = field(metadata={"help": "a registered model name, or hf:NAME|PATH|ID: a Hugging Face encoder "
                                         "fine-tuned with a fresh head (textcls.train.hf)"})
    preset: str | None = field(default=None, metadata={"help": "a registered preset ('small', ...)"})
    variant: str | None = field(default=None, metadata={"help": "a registered variant (the paper's switches)"})
    overrides: dict[str, Any] = field(default_factory=dict, metadata={"help": "model config fields set"})
    embeddings: str | None = field(default="glove", metadata={
        "help": "glove (50-d GloVe 6B; sets embed_dim to 50), random (the model's own initialisation), or a "
                "path to a vectors file (data.embeddings.build_embedding_matrix)"})
    epochs: int | float = field(default=5, metadata={
        "help": "epochs at most (early stopping may end sooner): a whole number, or for an hf: model also a "
                "fraction (0.5: half of one epoch's steps)"})
    out: str | Path | None = field(default=None, metadata={
        "help": "the checkpoint folder to write (replaced atomically), or None to write nothing"})
    data_root: Any = field(default=None, metadata={"help": "folder(s) searched for data set names"})
    limit: int | None = field(default=None, metadata={"help": "at most this many examples per split (seeded)"})
    min_freq: int = field(default=1, metadata={"help": "a word's count in training before it joins the vocabulary"})
    max_vocab: int | None = field(default=None, metadata={"help": "largest vocabulary"})
    extra_vocab: int = field(default=0, metadata={
        "help": "also put this many of the pretrained vectors' most frequent words that the training texts lack "
                "into the vocabulary (GloVe only): they keep their vectors, so unseen test words are not all "
                "<unk> (Kim 2014 builds the vocabulary over all texts for this)"})
    tokenizer_overrides: dict[str, Any] | None = field(default=None, metadata={"help": "TokenizerConfig fields"})
    train_overrides: dict[str, Any] | None = field(default=None, metadata={
        "help": "TrainConfig fields (batch_size, lr, optimizer, patience, ...), on top of the paper's settings "
                "when paper_training"})
    paper_training: bool = field(default=False, metadata={"help": "start from the paper's optimiser settings "
                                                                  "(PAPER_TRAINING)"})
    seed: int = field(default=0, metadata={"help": "the run's seed (data sample, initialisation, batches)"})
    float16: bool = field(default=False, metadata={"help": "store the weights as float16"})
    evaluate_test: bool = field(default=True, metadata={"help": "evaluate the test split at the end"})
    text_column: str = field(default="text", metadata={"help": "a data file's text column"})
    label_column: str = field(default="label", metadata={"help": "a data file's label column"})
    data_spec: str | None = field(default=None, metadata={
        "help": "what the checkpoint records as the data's spec (when `data` is a loaded bundle)"})
    arrow: bool | None = field(default=False, metadata={
        "help": "read the data as memory-mapped Arrow tables; None: the rule of data.datasets.use_arrow"})
    num_proc: int | None = field(default=None, metadata={"help": "tokenising processes on the Arrow path"})
    snapshots: str = field(default="last", metadata={
        "help": "what each epoch keeps for TracIn (textcls.train.snapshots): last (the output layer's weights, a "
                "few KB), full (every weight) or off"})
    limits: Limits | None = field(default=None, metadata={
        "help": "the machine-protecting limits (default: the environment's): the parameter count is checked on "
                "the meta device before the model is built, the training memory before the first step"})


    def __post_init__(self) -> None:
        e = self.epochs
        if isinstance(e, bool) or not isinstance(e, numbers.Real) or not math.isfinite(e):
            raise ValueError(f"epochs must be a number, got {e!r}")
        if not str(self.model).startswith("hf:"):        # hf: runs check theirs (train.hf.settings_problems)
            if not float(e).is_integer():
                raise ValueError(f"epochs must be a whole number for a textcls model (a fraction only for hf: "
                                 f"encoders), got {e!r}")
            self.epochs = int(e)
        from textcls.train.snapshots import SNAPSHOT_KINDS
        if self.snapshots not in SNAPSHOT_KINDS:
            raise ValueError(f"snapshots must be one of {', '.join(SNAPSHOT_KINDS)}, got {self.snapshots!r}")


def train_from_spec(data, model: str, *, callbacks: Iterable[Callback] = (),
                    stop_event: threading.Event | None = None, **fields: Any) -> TrainResult:
    """`run_training(TrainSpec(data, model, **fields), callbacks, stop_event)`: the keyword form of one run (the public
    name; TrainSpec documents every field)."""
    return run_training(TrainSpec(data, model, **fields), callbacks, stop_event)


def run_training(spec: TrainSpec, callbacks: Iterable[Callback] = (),
          stop_event: threading.Event | None = None) -> TrainResult:
    """Load data, build tokenizer + vocabulary + embeddings + model, fit, evaluate, and save a checkpoint.
    Returns a TrainResult; the checkpoint's config.json records data, metrics (test accuracy included),
    training settings, tokenizer settings and the history's stop reason. A run that diverged before its first
    epoch completed (`nothing_trained`) writes no checkpoint: its TrainResult has path None and no metrics."""
    if str(spec.model).startswith("hf:"):  # a Hugging Face encoder with a fresh head (textcls.train.hf's recipe)
        from textcls.train.hf import train_hf
        r = train_hf(spec.data, spec.model, epochs=spec.epochs, out=spec.out, callbacks=callbacks,
                     stop_event=stop_event, limit=spec.limit, data_root=spec.data_root, seed=spec.seed,
                     evaluate_test=spec.evaluate_test, text_column=spec.text_column,
                     label_column=spec.label_column,
                     train_overrides={**(spec.train_overrides or {}), **(spec.tokenizer_overrides or {})})
        return TrainResult(r["model"], r["tokenizer"], r["labels"], r["history"], r["metrics"], r["path"],
                           r["data_name"], None, r["seconds"])
    data, model, preset, variant, epochs, seed = (spec.data, spec.model, spec.preset, spec.variant, spec.epochs,
                                                  spec.seed)
    overrides, tokenizer_overrides, limits = dict(spec.overrides or {}), spec.tokenizer_overrides, spec.limits
    from textcls import __version__
    from textcls.data.datasets import DataBundle, check_trainable, load_data
    from textcls.analysis.metrics import classification_report, compact_report, default_ignore_label
    from textcls.models.registry import create_model, get_entry, make_config
    from textcls.data.text import Tokenizer

    t0 = time.perf_counter()
    entry = get_entry(model)
    model_config = make_config(model, preset=preset, variant=variant, **overrides)  # fail early on bad input
    emb_source = _resolve_embeddings(spec.embeddings)
    if spec.out is not None:
        from textcls.checkpoint import check_target
        check_target(spec.out)  # fail before training, not after
    tcfg_values = dict(spec.train_overrides or {})
    if spec.paper_training:
        tcfg_values = {**PAPER_TRAINING.get(model, {}), **tcfg_values}
    tcfg = TrainConfig(epochs=epochs, seed=seed, **tcfg_values)
    tok_config = tokenizer_config_for(model_config, entry.input_kind, tokenizer_overrides)

    from textcls.data.datasets import use_arrow as arrow_rule
    use_arrow = arrow_rule(data, spec.arrow)
    if use_arrow:
        from textcls.data.arrow import (ArrowBundle, build_tokenizer, check_trainable_arrow, default_num_proc,
            encode_arrow, load_arrow)
        bundle = data if isinstance(data, ArrowBundle) else load_arrow(
            data, root=spec.data_root, text_column=spec.text_column, label_column=spec.label_column,
            limit=spec.limit, seed=seed)
        check_trainable_arrow(bundle)
        procs = spec.num_proc or default_num_proc()

        def encode(split):
            return encode_arrow(tokenizer, split, num_proc=procs)
    else:
        bundle = data if isinstance(data, DataBundle) else load_data(
            data, root=spec.data_root, text_column=spec.text_column, label_column=spec.label_column,
            limit=spec.limit, seed=seed)
        if isinstance(data, DataBundle) and spec.limit is not None:
            bundle = dataclasses.replace(bundle, splits={k: sp.sample(spec.limit, seed)
                                                         for k, sp in bundle.splits.items()})
        check_trainable(bundle)

        def encode(split):
            return encode_split(tokenizer, split)
    labels = list(bundle.labels)
    if spec.out is not None:
        check_label_names(labels, limits)          # the checkpoint must be readable: sized before training
    from textcls.data.relation import is_relation_task
    if is_relation_task(getattr(bundle, "task", ""), labels):
        preset, tokenizer_overrides, model_config = relation_settings(model, preset, overrides, tokenizer_overrides,
                                                                      variant)
        tok_config = tokenizer_config_for(model_config, entry.input_kind, tokenizer_overrides)

    if use_arrow:
        tokenizer = build_tokenizer(bundle.splits["train"], tok_config, min_freq=spec.min_freq,
                                    max_size=spec.max_vocab)
    else:
        tokenizer = Tokenizer.build(bundle.splits["train"].texts, tok_config, min_freq=spec.min_freq,
                                    max_size=spec.max_vocab)
    added = 0
    if spec.extra_vocab:
        tokenizer, added = extend_vocab(tokenizer, emb_source, int(spec.extra_vocab))
    if getattr(model_config, "relative_positions", False):      # the tags' ids, for the relative positions
        from textcls.models.relation import marker_overrides
        overrides = {**marker_overrides(tokenizer.vocab), **overrides}

    matrix, coverage = None, None
    if emb_source is not None:
        from textcls.data.embeddings import build_embedding_matrix
        matrix, coverage = build_embedding_matrix(tokenizer.vocab, emb_source, seed=seed)

    torch.manual_seed(seed)            # create_model checks the parameter limit on the meta device first
    net = create_model(model, vocab_size=len(tokenizer.vocab), num_labels=len(labels), preset=preset,
                       variant=variant, embeddings=matrix, limits=limits, **overrides)

    train_enc = encode(bundle.splits["train"])
    dev_split = bundle.splits.get("dev")
    dev_enc = encode(dev_split) if dev_split is not None and len(dev_split) else None
    longest = dataclasses.replace(tokenizer.config, **train_enc.longest())  # batches pad to their longest text
    check_training(training_bytes(net, tcfg.batch_size, longest), limits)
    torch.manual_seed(seed)                  # the probe drew no random numbers, but keep the run's seed exact
    from textcls.train.snapshots import EpochSnapshots
    kept = EpochSnapshots(net, spec.snapshots)
    history = fit(net, train_enc, dev_enc, tcfg, [*callbacks, kept], stop_event)
    if nothing_trained(history):        # diverged before an epoch completed: nothing to evaluate, nothing saved
        return TrainResult(net, tokenizer, labels, history, {}, None, bundle.name, coverage,
                           time.perf_counter() - t0)

    snapshots = kept.snapshots(history, tcfg)
    ignore = default_ignore_label(bundle.name, labels)
    metrics: dict[str, Any] = {}
    for split_name in ("dev", "test"):
        split = bundle.splits.get(split_name)
        if split is None or not len(split) or (split_name == "test" and not spec.evaluate_test):
            continue
        if history.stopped_by_user and split_name == "test":
            continue  # a stopped run is saved as is; evaluate it later with `textcls evaluate`
        enc = dev_enc if split_name == "dev" else encode(split)
        preds, loss = predict_sharded(net, enc, tcfg.eval_batch_size)
        report = classification_report(enc.labels.tolist(), preds.tolist(), labels, ignore_label=ignore)
        report["loss"] = loss
        metrics[split_name] = report

    path = None
    ctx = distributed.context()
    if spec.out is not None and ctx.is_main:
        from textcls.checkpoint import save_checkpoint
        summary = {f"{s}_{k}": metrics[s][k] for s in metrics for k in ("accuracy", "macro_f1")}
        meta = {
            "data": {"name": bundle.name, "spec": spec.data_spec or (str(data) if isinstance(data, (str, Path))
                                                                 else bundle.name),
                     "task": bundle.task, "source": bundle.source, "limit": spec.limit, "arrow": bool(use_arrow),
                     "splits": {k: len(v) for k, v in bundle.splits.items()}, "ignore_label": ignore},
            "metrics": {**summary, **{k: compact_report(v) for k, v in metrics.items()}},
            "training": {**dataclasses.asdict(tcfg), "stopped_reason": history.stopped_reason,
                         "diverged": history.diverged, "best_epoch": history.best_epoch,
                         "seconds": history.elapsed, "device": history.device,
                         "world_size": ctx.world_size},
            "preset": preset, "variant": variant, "overrides": overrides,
            "embeddings": {"source": spec.embeddings or "random", "coverage": coverage},
            "vocab": {"min_freq": spec.min_freq, "max_size": spec.max_vocab, "size": len(tokenizer.vocab),
                      "extra_vocab": int(spec.extra_vocab), "extra_added": added},
            "library_version": __version__,
        }
        path = save_checkpoint(spec.out, net, tokenizer, labels, meta=meta, history=history,
                               float16=spec.float16, snapshots=snapshots)
    return TrainResult(net, tokenizer, labels, history, metrics, path, bundle.name, coverage,
                       time.perf_counter() - t0, snapshots)
