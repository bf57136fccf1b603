"""Training from a spec: `train_from_spec(data, model, ...)` loads the data, builds the tokenizer, vocabulary and
embeddings a model needs, trains it with `training.fit`, evaluates dev and test, and saves a checkpoint. The CLI,
the Train page, the reproduction suites and the checkpoint recipe all call it.

Under torchrun (`distributed.init` called first) every rank runs it: each loads and tokenises the same data and
builds the same vocabulary (deterministic), `fit` trains with DDP, dev/test are predicted in shards and
gathered, and only rank 0 writes the checkpoint (atomically, as always); the others return with `path` None.

`arrow=True` reads the data as memory-mapped Arrow tables, builds the vocabulary in a streaming pass and
tokenises with `map(batched=True, num_proc=...)` into a disk cache (textcls/arrow_data.py): for hub data sets
and files too big for memory. `arrow=None` takes that path for `hf:` specs only; the default, False, is the
in-memory path."""
from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import torch

from . import distributed
from .batching import encode_split
from .limits import Limits
from .records import History
from .sizing import check_parameters, check_training, count_parameters, training_bytes
from .training import PAPER_TRAINING, Callback, TrainConfig, fit


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
    from .text import TokenizerConfig
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
    from .text import Tokenizer, Vocab
    if n < 0:
        raise ValueError(f"extra_vocab must be >= 0, got {n}")
    if str(source) != "glove":
        raise ValueError("extra_vocab needs GloVe embeddings (embeddings='glove')")
    from .embeddings import glove_vectors
    words, _ = glove_vectors()
    have = tokenizer.vocab.stoi
    extra = [w for w in dict.fromkeys(w for w in words[:n] if isinstance(w, str) and w) if w not in have]
    return Tokenizer(tokenizer.config, Vocab(tokenizer.vocab.itos + extra)), len(extra)


def relation_settings(model: str, preset: str | None, overrides: dict[str, Any],
                      tokenizer_overrides: dict[str, Any] | None) -> tuple[str | None, dict[str, Any]]:
    """The task's settings on relation data (textcls/relation.py): a model with a "relation" preset (ACT, the
    Transformer) gets it unless a preset was named; a model with relative positions gets the tokenizer's
    entities="keep" (the tags carry the spans), any other model entities="drop" (plain text). Returns
    (preset, tokenizer overrides); an explicit entities="none"/"drop" for a relative-position model is a
    ValueError."""
    from .registry import get_entry, make_config
    entry = get_entry(model)
    if preset is None and "relation" in entry.presets:
        preset = "relation"
    tok = dict(tokenizer_overrides or {})
    relative = getattr(make_config(model, preset=preset, **overrides), "relative_positions", False)
    mode = tok.setdefault("entities", "keep" if relative else "drop")
    if relative and mode not in ("keep", "mask"):
        raise ValueError(f"relative positions need the entity tags in the token stream: tokenizer entities "
                         f"must be 'keep' or 'mask', not {mode!r}")
    return preset, tok


def train_from_spec(data, model: str, *, preset: str | None = None, variant: str | None = None,
                    overrides: dict[str, Any] | None = None, embeddings: str | None = "glove",
                    epochs: int = 5, out: str | Path | None = None, callbacks: Iterable[Callback] = (),
                    stop_event: threading.Event | None = None, data_root=None, limit: int | None = None,
                    min_freq: int = 1, max_vocab: int | None = None, extra_vocab: int = 0,
                    tokenizer_overrides: dict[str, Any] | None = None,
                    train_overrides: dict[str, Any] | None = None, paper_training: bool = False,
                    seed: int = 0, float16: bool = False, evaluate_test: bool = True,
                    text_column: str = "text", label_column: str = "label",
                    data_spec: str | None = None, arrow: bool | None = False,
                    num_proc: int | None = None, limits: Limits | None = None) -> TrainResult:
    """Load data, build tokenizer + vocabulary + embeddings + model, fit, evaluate, and save a checkpoint.

    data: a bundled name, a path, "hf:ID" (see `data.load_data`), or an already loaded DataBundle (then
        `limit` still applies, and `data_spec` is what the checkpoint records as the data's spec).
    model: a registered model name; preset/variant/overrides as in `create_model`.
    embeddings: "glove" (50-d GloVe 6B; sets embed_dim to 50), "random" (the model's own initialisation),
        or a path to a vectors file (see `embeddings.build_embedding_matrix`).
    train_overrides: TrainConfig fields (batch_size, lr, optimizer, patience, ...); with `paper_training` the
        paper's settings (PAPER_TRAINING) come first and train_overrides on top.
    extra_vocab: also put the `extra_vocab` most frequent words of the pretrained vectors that the training
        texts lack into the vocabulary (GloVe only). They get no gradient, so (without weight decay) they keep
        their pretrained vectors and unseen test words are not all `<unk>` (Kim 2014 builds the vocabulary over
        all texts for this).
    out: the checkpoint folder to write (replaced atomically), or None to write nothing.
    limits: the machine-protecting limits (`textcls.limits`; default: the environment's): the parameter count
        is checked on the meta device before the model is built, and the training memory (`sizing`) before
        the first step; either raises LimitError.
    Returns a TrainResult; the checkpoint's config.json records data, metrics (test accuracy included),
    training settings, tokenizer settings and the history's stop reason.
    """
    from . import __version__
    from .data import DataBundle, check_trainable, load_data
    from .metrics import classification_report, default_ignore_label
    from .registry import create_model, get_entry, make_config
    from .text import Tokenizer

    if str(model).startswith("hf:"):  # a Hugging Face encoder with a fresh head (textcls.hf_train's recipe)
        from .hf_train import train_hf
        r = train_hf(data, model, epochs=epochs, out=out, callbacks=callbacks, stop_event=stop_event, limit=limit,
                     data_root=data_root, seed=seed, evaluate_test=evaluate_test,
                     train_overrides={**(train_overrides or {}), **(tokenizer_overrides or {})})
        return TrainResult(r["model"], r["tokenizer"], r["labels"], r["history"], r["metrics"], r["path"],
                           r["data_name"], None, r["seconds"])
    t0 = time.perf_counter()
    entry = get_entry(model)
    overrides = dict(overrides or {})
    model_config = make_config(model, preset=preset, variant=variant, **overrides)  # fail early on bad input
    emb_source = _resolve_embeddings(embeddings)
    if out is not None:
        from .checkpoint import check_target
        check_target(out)  # fail before training, not after
    tcfg_values = dict(train_overrides or {})
    if paper_training:
        tcfg_values = {**PAPER_TRAINING.get(model, {}), **tcfg_values}
    tcfg = TrainConfig(epochs=epochs, seed=seed, **tcfg_values)
    tok_config = tokenizer_config_for(model_config, entry.input_kind, tokenizer_overrides)

    use_arrow = (arrow if arrow is not None else isinstance(data, str) and data.startswith("hf:")) \
        and not isinstance(data, DataBundle)
    if use_arrow:
        from .arrow_data import (ArrowBundle, build_tokenizer, check_trainable_arrow, default_num_proc,
                                 encode_arrow, load_arrow)
        bundle = data if isinstance(data, ArrowBundle) else load_arrow(
            data, root=data_root, text_column=text_column, label_column=label_column, limit=limit, seed=seed)
        check_trainable_arrow(bundle)
        procs = num_proc or default_num_proc()

        def encode(split):
            return encode_arrow(tokenizer, split, num_proc=procs)
    else:
        bundle = data if isinstance(data, DataBundle) else load_data(
            data, root=data_root, text_column=text_column, label_column=label_column, limit=limit, seed=seed)
        if isinstance(data, DataBundle) and limit is not None:
            bundle = dataclasses.replace(bundle, splits={k: s.sample(limit, seed) for k, s in bundle.splits.items()})
        check_trainable(bundle)

        def encode(split):
            return encode_split(tokenizer, split)
    labels = list(bundle.labels)
    from .relation import is_relation_task
    if is_relation_task(getattr(bundle, "task", ""), labels):
        preset, tokenizer_overrides = relation_settings(model, preset, overrides, tokenizer_overrides)
        model_config = make_config(model, preset=preset, variant=variant, **overrides)
        tok_config = tokenizer_config_for(model_config, entry.input_kind, tokenizer_overrides)

    if use_arrow:
        tokenizer = build_tokenizer(bundle.splits["train"], tok_config, min_freq=min_freq, max_size=max_vocab)
    else:
        tokenizer = Tokenizer.build(bundle.splits["train"].texts, tok_config, min_freq=min_freq,
                                    max_size=max_vocab)
    added = 0
    if extra_vocab:
        tokenizer, added = extend_vocab(tokenizer, emb_source, int(extra_vocab))
    if getattr(model_config, "relative_positions", False):      # the tags' ids, for the relative positions
        from .models.relation import marker_overrides
        overrides = {**marker_overrides(tokenizer.vocab), **overrides}

    matrix, coverage = None, None
    if emb_source is not None:
        from .embeddings import build_embedding_matrix
        matrix, coverage = build_embedding_matrix(tokenizer.vocab, emb_source, seed=seed)

    sizes = {"vocab_size": len(tokenizer.vocab), "num_labels": len(labels),
             **({"embed_dim": int(matrix.shape[1])} if matrix is not None and "embed_dim" not in overrides else {})}
    check_parameters(count_parameters(entry.cls, make_config(model, preset=preset, variant=variant,
                                                             **{**overrides, **sizes})), limits)
    torch.manual_seed(seed)
    net = create_model(model, vocab_size=len(tokenizer.vocab), num_labels=len(labels), preset=preset,
                       variant=variant, embeddings=matrix, **overrides)

    train_enc = encode(bundle.splits["train"])
    dev_split = bundle.splits.get("dev")
    dev_enc = encode(dev_split) if dev_split is not None and len(dev_split) else None
    longest = dataclasses.replace(tokenizer.config, **train_enc.longest())  # batches pad to their longest text
    check_training(training_bytes(net, tcfg.batch_size, longest), limits)
    torch.manual_seed(seed)                  # the probe drew no random numbers, but keep the run's seed exact
    history = fit(net, train_enc, dev_enc, tcfg, callbacks, stop_event)

    ignore = default_ignore_label(bundle.name, labels)
    metrics: dict[str, Any] = {}
    for split_name in ("dev", "test"):
        split = bundle.splits.get(split_name)
        if split is None or not len(split) or (split_name == "test" and not evaluate_test):
            continue
        if history.stopped_by_user and split_name == "test":
            continue  # a stopped run is saved as is; evaluate it later with `textcls evaluate`
        enc = dev_enc if split_name == "dev" else encode(split)
        preds, loss = distributed.predict_sharded(net, enc, tcfg.eval_batch_size)
        report = classification_report(enc.labels.tolist(), preds.tolist(), labels, ignore_label=ignore)
        report["loss"] = loss
        metrics[split_name] = report

    path = None
    ctx = distributed.context()
    if out is not None and ctx.is_main:
        from .checkpoint import save_checkpoint
        summary = {f"{s}_{k}": metrics[s][k] for s in metrics for k in ("accuracy", "macro_f1")}
        meta = {
            "data": {"name": bundle.name, "spec": data_spec or (str(data) if isinstance(data, (str, Path))
                                                                 else bundle.name),
                     "task": bundle.task, "source": bundle.source, "limit": limit, "arrow": bool(use_arrow),
                     "splits": {k: len(v) for k, v in bundle.splits.items()}, "ignore_label": ignore},
            "metrics": {**summary, **metrics},
            "training": {**dataclasses.asdict(tcfg), "stopped_reason": history.stopped_reason,
                         "diverged": history.diverged, "best_epoch": history.best_epoch,
                         "seconds": history.elapsed, "device": history.device,
                         "world_size": ctx.world_size},
            "preset": preset, "variant": variant, "overrides": overrides,
            "embeddings": {"source": embeddings or "random", "coverage": coverage},
            "vocab": {"min_freq": min_freq, "max_size": max_vocab, "size": len(tokenizer.vocab),
                      "extra_vocab": int(extra_vocab), "extra_added": added},
            "library_version": __version__,
        }
        path = save_checkpoint(out, net, tokenizer, labels, meta=meta, history=history, float16=float16)
    return TrainResult(net, tokenizer, labels, history, metrics, path, bundle.name, coverage,
                       time.perf_counter() - t0)
