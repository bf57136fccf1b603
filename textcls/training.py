"""Training: `fit(model, train, dev, config, callbacks, stop_event)` and the high-level `train_from_spec`.

No UI code here. The CLI and the app's Train page are two callers: they pass callbacks, which receive plain
dataclasses (`StepEvent` after every optimiser step, `EpochEvent` after every epoch), and may set a
`threading.Event` to stop a run cleanly (checked before every step).

Choices (written down because the papers leave them open or differ):
- Batches are bucketed by length: the seeded shuffle is cut into chunks of 50 batches, each chunk sorted by
  length and cut into batches, and the batch order shuffled again. Padding per batch is to the batch's
  longest example only. Same seed -> same batches -> same loss sequence (tested).
- Early stopping watches dev accuracy (strict improvement); with `patience` epochs without improvement the
  run stops, and at the end the weights of the best dev epoch are restored (`restore_best`).
- Optimisers: "adam" (default); "sgd" with momentum (ACT: lr 0.01, momentum 0.9, and `lr_decay_patience=10`,
  `lr_decay=0.9`: the lr is multiplied by 0.9 after every 10 epochs without dev improvement - the decay rule
  works with any optimiser); "noam" (Vaswani et al.; Matton's Transformer): Adam with betas (0.9, 0.998) and
  lr(step) = lr * min(step / warmup, sqrt(warmup / step)), i.e. `lr` is the peak reached at step `warmup`
  (Noam's d^-0.5 * warmup^-0.5 factor folded into `lr`). `warmup_steps=None` takes 10% of the run's steps.
- `model.extra_loss(out, labels)` (ACT's center loss) is added to the cross-entropy when it is not None.
- A non-finite loss (or, with clipping, a non-finite gradient norm) stops the run before the bad update;
  the weights go back to the best dev epoch, else the end of the last completed epoch, else the initial
  weights; `History.stopped_reason` says what happened and `History.diverged` is True.
"""
from __future__ import annotations

import dataclasses
import math
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from .threads import batch_work

# ---------------------------------------------------------------- encoded data


@dataclass
class EncodedSplit:
    """A split turned into token ids once, kept per example at its true size and padded per batch.

    ids[i] / masks[i]: (n_i,) for flat models, (S_i, W_i) for hierarchical ones (never empty: an empty text
    keeps one pad position). labels: (N,) long, or None for unlabelled text. lengths[i]: the number of real
    tokens (used for bucketing).
    """

    ids: list[torch.Tensor]
    masks: list[torch.Tensor]
    labels: torch.Tensor | None
    lengths: list[int]
    hierarchical: bool = False
    truncated: list[bool] = field(default_factory=list)
    pad_id: int = 0

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def from_tensors(cls, token_ids: torch.Tensor, labels=None, mask: torch.Tensor | None = None,
                     pad_id: int = 0) -> "EncodedSplit":
        """From padded (N, L) or (N, S, W) ids (and an optional mask; default ids != pad_id)."""
        token_ids = torch.as_tensor(token_ids, dtype=torch.long)
        if token_ids.dim() not in (2, 3):
            raise ValueError(f"token_ids must be (N, L) or (N, S, W), got shape {tuple(token_ids.shape)}")
        mask = (token_ids != pad_id) if mask is None else torch.as_tensor(mask).bool()
        if mask.shape != token_ids.shape:
            raise ValueError(f"mask shape {tuple(mask.shape)} differs from token_ids {tuple(token_ids.shape)}")
        ids, masks, lengths = _crop_rows(token_ids, mask)
        lab = None if labels is None else torch.as_tensor(labels, dtype=torch.long).reshape(-1)
        if lab is not None and len(lab) != len(ids):
            raise ValueError(f"{len(ids)} examples but {len(lab)} labels")
        return cls(ids, masks, lab, lengths, token_ids.dim() == 3, [False] * len(ids), pad_id)

    def batch(self, index: Sequence[int], device: torch.device | str = "cpu"
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Padded (ids, mask, labels) for the examples in `index`, on `device`."""
        rows = [self.ids[i] for i in index]
        mrows = [self.masks[i] for i in index]
        if self.hierarchical:
            S = max(r.shape[0] for r in rows)
            W = max(r.shape[1] for r in rows)
            ids = torch.full((len(rows), S, W), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(rows), S, W), dtype=torch.bool)
            for b, (r, m) in enumerate(zip(rows, mrows)):
                ids[b, :r.shape[0], :r.shape[1]] = r
                mask[b, :m.shape[0], :m.shape[1]] = m
        else:
            L = max(r.shape[0] for r in rows)
            ids = torch.full((len(rows), L), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(rows), L), dtype=torch.bool)
            for b, (r, m) in enumerate(zip(rows, mrows)):
                ids[b, :r.shape[0]] = r
                mask[b, :m.shape[0]] = m
        labels = None if self.labels is None else self.labels[list(index)].to(device)
        return ids.to(device), mask.to(device), labels


def _crop_rows(token_ids: torch.Tensor, mask: torch.Tensor):
    """Split padded ids/mask into per-example tensors cropped to the last real position (at least 1)."""
    ids_np = token_ids.cpu().numpy()
    m_np = mask.cpu().numpy().astype(bool)
    if ids_np.ndim == 2:
        L = m_np.shape[1]
        n = np.where(m_np.any(1), L - np.argmax(m_np[:, ::-1], axis=1), 1)
        ids = [torch.from_numpy(ids_np[i, :n[i]].copy()) for i in range(len(n))]
        masks = [torch.from_numpy(m_np[i, :n[i]].copy()) for i in range(len(n))]
        lengths = m_np.sum(1).tolist()
    else:
        S, W = m_np.shape[1:]
        sent_any, word_any = m_np.any(2), m_np.any(1)                     # (N, S), (N, W)
        s = np.where(sent_any.any(1), S - np.argmax(sent_any[:, ::-1], axis=1), 1)
        w = np.where(word_any.any(1), W - np.argmax(word_any[:, ::-1], axis=1), 1)
        ids = [torch.from_numpy(ids_np[i, :s[i], :w[i]].copy()) for i in range(len(s))]
        masks = [torch.from_numpy(m_np[i, :s[i], :w[i]].copy()) for i in range(len(s))]
        lengths = m_np.sum((1, 2)).tolist()
    return ids, masks, [int(x) for x in lengths]


def encode_split(tokenizer, split, *, label_names: Sequence[str] | None = None,
                 model_labels: Sequence[str] | None = None, chunk: int = 1024) -> EncodedSplit:
    """Encode a `data.Split` (texts, labels) with `tokenizer`.

    With `label_names` (the split's names for its label indices) and `model_labels` (the model's), labels are
    mapped by name; a split label the model does not know raises ValueError naming it.
    """
    texts = list(split.texts)
    labels = getattr(split, "labels", None)
    if labels is not None:
        labels = [int(x) for x in labels]
        if label_names is not None and model_labels is not None and list(label_names) != list(model_labels):
            pos = {name: i for i, name in enumerate(model_labels)}
            missing = sorted({label_names[y] for y in labels} - set(pos))
            if missing:
                raise ValueError(f"the data has label(s) {missing} that the model does not know "
                                 f"(model labels: {list(model_labels)})")
            labels = [pos[label_names[y]] for y in labels]
    ids, masks, lengths, truncated = [], [], [], []
    hierarchical = bool(getattr(getattr(tokenizer, "config", None), "hierarchical", False))
    pad_id = int(getattr(getattr(tokenizer, "vocab", None), "pad_id", 0))
    for start in range(0, len(texts), chunk):
        enc = tokenizer.encode(texts[start:start + chunk])
        i, m, n = _crop_rows(enc.token_ids, enc.mask)
        ids += i
        masks += m
        lengths += n
        truncated += list(enc.truncated)
        hierarchical = enc.token_ids.dim() == 3
    lab = None if labels is None else torch.tensor(labels, dtype=torch.long)
    return EncodedSplit(ids, masks, lab, lengths, hierarchical, truncated, pad_id)


def make_batches(lengths: Sequence[int], batch_size: int, generator: torch.Generator | None = None,
                 shuffle: bool = True, bucket: bool = True, bucket_batches: int = 50) -> list[list[int]]:
    """Index lists of at most `batch_size`; see the module docstring for the bucketing rule."""
    n = len(lengths)
    order = torch.randperm(n, generator=generator).tolist() if shuffle else list(range(n))
    if not bucket:
        return [order[i:i + batch_size] for i in range(0, n, batch_size)]
    batches = []
    span = batch_size * bucket_batches
    for c in range(0, n, span):
        chunk = sorted(order[c:c + span], key=lambda i: lengths[i])
        batches += [chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size)]
    if shuffle:
        batches = [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]
    return batches


def model_device(model: torch.nn.Module) -> torch.device:
    for p in model.parameters():
        return p.device
    return torch.device("cpu")


@batch_work  # a whole split: the batch thread setting (textcls.threads)
@torch.no_grad()
def predict_encoded(model, enc: EncodedSplit, batch_size: int = 64) -> tuple[np.ndarray, float | None]:
    """(predicted class per example, mean cross-entropy or None without labels), in eval mode.

    Batches are formed by length (no shuffling) and the predictions put back in the split's order. The
    model's train/eval flag is restored afterwards (a model that was in eval mode is left untouched).
    """
    was_training = model.training
    if was_training:
        model.eval()
    device = model_device(model)
    preds = np.zeros(len(enc), dtype=np.int64)
    loss_sum, count = 0.0, 0
    try:
        order = sorted(range(len(enc)), key=lambda i: enc.lengths[i])
        for s in range(0, len(order), batch_size):
            index = order[s:s + batch_size]
            ids, mask, y = enc.batch(index, device)
            logits = model(ids, mask).logits
            preds[index] = logits.argmax(-1).cpu().numpy()
            if y is not None:
                loss_sum += float(F.cross_entropy(logits.float(), y, reduction="sum"))
                count += len(index)
    finally:
        if was_training:
            model.train()
    return preds, (loss_sum / count if count else None)


# ---------------------------------------------------------------- config, events, history


OPTIMIZERS = ("adam", "sgd", "noam", "adadelta")


@dataclass
class TrainConfig:
    epochs: int = 10
    batch_size: int = 32
    lr: float = 1e-3
    optimizer: str = "adam"          # adam | sgd | noam | adadelta (Kim 2014: lr 1.0, rho 0.95, eps 1e-6)
    seed: int = 0
    patience: int | None = None      # early stopping: epochs without dev-accuracy improvement; None = off
    restore_best: bool = True        # end with the weights of the best dev epoch
    weight_decay: float = 0.0
    momentum: float = 0.9            # sgd
    betas: tuple[float, float] | None = None  # adam/noam; None: (0.9, 0.999) adam, (0.9, 0.998) noam
    warmup_steps: int | None = None  # noam; None = 10% of the run's steps
    lr_decay: float = 0.9            # multiply the lr by this ...
    lr_decay_patience: int | None = None  # ... after this many epochs without dev improvement (ACT: 10)
    clip_norm: float | None = None   # gradient clipping (max global L2 norm); None = off
    max_norm: float | None = None    # Kim 2014: rescale each class's output weight vector to L2 norm <= this
    max_steps: int | None = None     # stop after this many optimiser steps in all (quick runs)
    bucket: bool = True              # length-bucketed batches
    eval_batch_size: int = 128
    device: str = "auto"             # auto | cpu | cuda | cuda:N

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {self.optimizer!r}; known: {', '.join(OPTIMIZERS)}")
        for name in ("epochs", "batch_size", "eval_batch_size"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"lr must be a positive number, got {self.lr}")
        for name in ("patience", "lr_decay_patience", "max_steps", "warmup_steps"):
            v = getattr(self, name)
            if v is not None and int(v) < 1:
                raise ValueError(f"{name} must be >= 1 or None, got {v}")
        for name in ("clip_norm", "max_norm"):
            v = getattr(self, name)
            if v is not None and not v > 0:
                raise ValueError(f"{name} must be > 0 or None, got {v}")
        if self.betas is not None:
            self.betas = tuple(float(b) for b in self.betas)


# Training settings the papers report, for `train_from_spec(paper_training=True)` / the CLI's --paper-training.
PAPER_TRAINING: dict[str, dict[str, Any]] = {
    "act": dict(optimizer="sgd", lr=0.01, momentum=0.9, lr_decay=0.9, lr_decay_patience=10, batch_size=100),
    "transformer": dict(optimizer="noam", lr=1e-3, warmup_steps=8000),
    "agcnn": dict(optimizer="adam", batch_size=50),
    "kim_cnn": dict(optimizer="adam", batch_size=50),
    "hcan": dict(optimizer="adam", lr=2e-5),
}


@dataclass
class StepEvent:
    epoch: int           # 1-based
    step: int            # optimiser steps done so far (1-based)
    total_steps: int
    loss: float          # this step's training loss (cross-entropy + extra loss)
    lr: float
    elapsed: float       # seconds since fit started


@dataclass
class EpochEvent:
    epoch: int
    epochs: int
    step: int
    total_steps: int
    train_loss: float
    train_accuracy: float
    dev: dict[str, float] | None  # {"accuracy", "macro_f1", "loss"} or None without a dev split
    lr: float
    elapsed: float
    best_epoch: int | None
    improved: bool

    @property
    def dev_accuracy(self) -> float | None:
        return None if self.dev is None else self.dev["accuracy"]


@dataclass
class History:
    epochs: list[dict[str, Any]] = field(default_factory=list)
    step_losses: list[float] = field(default_factory=list)
    best_epoch: int | None = None
    best_dev_accuracy: float | None = None
    stopped_reason: str = ""
    diverged: bool = False
    stopped_by_user: bool = False
    steps: int = 0
    elapsed: float = 0.0
    device: str = "cpu"
    config: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "History":
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


Callback = Callable[[Any], None]


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    d = torch.device(device)
    if d.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for but CUDA is not available")
    return d


def output_layer(model: torch.nn.Module) -> torch.nn.Linear | None:
    """The last Linear layer that maps to the classes (the one Kim 2014's max-norm constraint applies to)."""
    n = getattr(getattr(model, "config", None), "num_labels", None)
    found = None
    for m in model.modules():
        if isinstance(m, torch.nn.Linear) and m.out_features == n:
            found = m
    return found


def _make_optimizer(params, config: TrainConfig) -> torch.optim.Optimizer:
    if config.optimizer == "sgd":
        return torch.optim.SGD(params, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay)
    if config.optimizer == "adadelta":
        return torch.optim.Adadelta(params, lr=config.lr, rho=0.95, eps=1e-6, weight_decay=config.weight_decay)
    betas = config.betas or ((0.9, 0.998) if config.optimizer == "noam" else (0.9, 0.999))
    eps = 1e-9 if config.optimizer == "noam" else 1e-8
    return torch.optim.Adam(params, lr=config.lr, betas=betas, eps=eps, weight_decay=config.weight_decay)


def noam_factor(step: int, warmup: int) -> float:
    """min(step / warmup, sqrt(warmup / step)): rises linearly to 1 at `warmup`, then decays as 1/sqrt."""
    step = max(step, 1)
    return min(step / warmup, math.sqrt(warmup / step))


def _snapshot(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def _emit(callbacks: Iterable[Callback], event: Any) -> None:
    for cb in callbacks:
        cb(event)


@batch_work  # training: the batch thread setting, in whichever thread runs it (textcls.threads)
def fit(model: torch.nn.Module, train: EncodedSplit, dev: EncodedSplit | None = None,
        config: TrainConfig | None = None, callbacks: Iterable[Callback] = (),
        stop_event: threading.Event | None = None) -> History:
    """Train `model` in place on `train`; evaluate on `dev` after each epoch. Returns the History.

    The model ends on the training device in eval mode, holding the best dev weights (or see the module
    docstring for stops and divergence).
    """
    config = config or TrainConfig()
    callbacks = list(callbacks or ())
    if train.labels is None:
        raise ValueError("fit: the training split has no labels")
    if len(train) == 0:
        raise ValueError("fit: the training split is empty")
    if dev is not None and (dev.labels is None or len(dev) == 0):
        raise ValueError("fit: the dev split is empty or unlabelled")
    num_labels = getattr(getattr(model, "config", None), "num_labels", None)
    if num_labels is not None:
        for name, split in (("train", train), ("dev", dev)):
            if split is not None and len(split) and int(split.labels.max()) >= num_labels:
                raise ValueError(f"fit: the {name} split has label index {int(split.labels.max())} but the model "
                                 f"has {num_labels} classes")

    device = resolve_device(config.device)
    torch.manual_seed(config.seed)
    gen = torch.Generator().manual_seed(config.seed)
    model.to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    max_norm_weight = None
    if config.max_norm is not None:
        layer = output_layer(model)
        if layer is None:
            raise ValueError("max_norm: the model has no Linear layer with num_labels outputs")
        max_norm_weight = layer.weight
    if not params:
        raise ValueError("fit: the model has no trainable parameters")
    opt = _make_optimizer(params, config)

    steps_per_epoch = math.ceil(len(train) / config.batch_size)
    total_steps = config.epochs * steps_per_epoch
    if config.max_steps is not None:
        total_steps = min(total_steps, config.max_steps)
    warmup = config.warmup_steps or max(1, total_steps // 10)

    hist = History(device=str(device), config=dataclasses.asdict(config))
    start = time.perf_counter()
    initial = _snapshot(model)
    last_good = initial            # end of the last completed epoch (used without a dev split)
    best_state: dict[str, torch.Tensor] | None = None
    best_acc = -1.0
    since_best = 0
    lr_scale = 1.0
    step = 0
    stop: str | None = None

    def current_lr() -> float:
        base = config.lr * lr_scale
        return base * noam_factor(step + 1, warmup) if config.optimizer == "noam" else base

    for epoch in range(1, config.epochs + 1):
        model.train()
        t_epoch = time.perf_counter()
        loss_sum, correct, seen, epoch_steps = 0.0, 0, 0, 0
        for index in make_batches(train.lengths, config.batch_size, gen, bucket=config.bucket):
            if stop_event is not None and stop_event.is_set():
                stop = f"stopped by user at epoch {epoch}, step {step}"
                hist.stopped_by_user = True
                break
            ids, mask, y = train.batch(index, device)
            lr = current_lr()
            for g in opt.param_groups:
                g["lr"] = lr
            out = model(ids, mask)
            loss = F.cross_entropy(out.logits.float(), y)
            extra = model.extra_loss(out, y) if hasattr(model, "extra_loss") else None
            if extra is not None:
                loss = loss + extra
            value = float(loss.detach())
            if not math.isfinite(value):
                stop = (f"non-finite training loss ({value}) at epoch {epoch}, step {step + 1}; "
                        f"kept the last good weights")
                hist.diverged = True
                break
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if config.clip_norm is not None:
                norm = float(torch.nn.utils.clip_grad_norm_(params, config.clip_norm))
                if not math.isfinite(norm):
                    stop = (f"non-finite gradient norm ({norm}) at epoch {epoch}, step {step + 1}; "
                            f"kept the last good weights")
                    hist.diverged = True
                    break
            opt.step()
            if max_norm_weight is not None:
                with torch.no_grad():                                   # (C, F) rows: one per class
                    max_norm_weight.copy_(torch.renorm(max_norm_weight, 2, 0, config.max_norm))
            step += 1
            epoch_steps += 1
            hist.step_losses.append(value)
            loss_sum += value * len(index)
            correct += int((out.logits.detach().argmax(-1) == y).sum())
            seen += len(index)
            _emit(callbacks, StepEvent(epoch, step, total_steps, value, lr, time.perf_counter() - start))
            if step >= total_steps:
                break
        if stop is not None and (hist.diverged or hist.stopped_by_user):
            break  # an interrupted epoch is neither evaluated nor recorded

        dev_metrics = None
        improved = False
        if dev is not None:
            from .metrics import macro_f1
            preds, dev_loss = predict_encoded(model, dev, config.eval_batch_size)
            y_dev = dev.labels.numpy()
            acc = float((preds == y_dev).mean())
            dev_metrics = {"accuracy": acc, "loss": dev_loss,
                           "macro_f1": macro_f1(y_dev, preds, max(int(y_dev.max()), int(preds.max())) + 1
                                                if num_labels is None else num_labels)}
            if acc > best_acc:
                best_acc, improved, since_best = acc, True, 0
                best_state = _snapshot(model)
                hist.best_epoch, hist.best_dev_accuracy = epoch, acc
            else:
                since_best += 1
                if config.lr_decay_patience and since_best % config.lr_decay_patience == 0:
                    lr_scale *= config.lr_decay
        else:
            last_good = _snapshot(model)
        elapsed = time.perf_counter() - start
        record = {"epoch": epoch, "steps": epoch_steps, "train_loss": loss_sum / max(seen, 1),
                  "train_accuracy": correct / max(seen, 1),
                  "dev_loss": None if dev_metrics is None else dev_metrics["loss"],
                  "dev_accuracy": None if dev_metrics is None else dev_metrics["accuracy"],
                  "dev_macro_f1": None if dev_metrics is None else dev_metrics["macro_f1"],
                  "lr": current_lr(), "seconds": time.perf_counter() - t_epoch, "elapsed": elapsed}
        hist.epochs.append(record)
        _emit(callbacks, EpochEvent(epoch, config.epochs, step, total_steps, record["train_loss"],
                                    record["train_accuracy"], dev_metrics, record["lr"], elapsed,
                                    hist.best_epoch, improved))
        if step >= total_steps and epoch < config.epochs:
            stop = f"reached max_steps={config.max_steps} at epoch {epoch}"
            break
        if dev is not None and config.patience is not None and since_best >= config.patience:
            stop = (f"early stopping at epoch {epoch}: no dev-accuracy improvement for {config.patience} "
                    f"epoch(s); best epoch {hist.best_epoch}")
            break

    if best_state is not None and (config.restore_best or hist.diverged):
        model.load_state_dict(best_state)
    elif hist.diverged:
        model.load_state_dict(last_good)
    model.eval()
    hist.stopped_reason = stop or f"completed {len(hist.epochs)} epoch(s)"
    hist.steps = step
    hist.elapsed = time.perf_counter() - start
    return hist


# ---------------------------------------------------------------- the high-level entry point


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
    position table (`max_positions`: ACT, the Transformer's global pooling) max_len is capped at it, and an
    explicit larger max_len is a ValueError."""
    from .text import TokenizerConfig
    values = {"hierarchical": input_kind == "sentences", **(overrides or {})}
    max_pos = getattr(model_config, "max_positions", None)
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


def train_from_spec(data, model: str, *, preset: str | None = None, variant: str | None = None,
                    overrides: dict[str, Any] | None = None, embeddings: str | None = "glove",
                    epochs: int = 5, out: str | Path | None = None, callbacks: Iterable[Callback] = (),
                    stop_event: threading.Event | None = None, data_root=None, limit: int | None = None,
                    min_freq: int = 1, max_vocab: int | None = None, extra_vocab: int = 0,
                    tokenizer_overrides: dict[str, Any] | None = None,
                    train_overrides: dict[str, Any] | None = None, paper_training: bool = False,
                    seed: int = 0, float16: bool = False, evaluate_test: bool = True,
                    text_column: str = "text", label_column: str = "label",
                    data_spec: str | None = None) -> TrainResult:
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
    Returns a TrainResult; the checkpoint's config.json records data, metrics (test accuracy included),
    training settings, tokenizer settings and the history's stop reason.
    """
    from . import __version__
    from .data import DataBundle, load_data
    from .metrics import classification_report, default_ignore_label
    from .registry import create_model, get_entry, make_config
    from .text import Tokenizer

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

    bundle = data if isinstance(data, DataBundle) else load_data(
        data, root=data_root, text_column=text_column, label_column=label_column, limit=limit, seed=seed)
    if isinstance(data, DataBundle) and limit is not None:
        bundle = dataclasses.replace(bundle, splits={k: s.sample(limit, seed) for k, s in bundle.splits.items()})
    if "train" not in bundle.splits:
        raise ValueError(f"data set {bundle.name!r} has no train split (splits: {sorted(bundle.splits)})")
    labels = list(bundle.labels)

    tokenizer = Tokenizer.build(bundle.splits["train"].texts, tok_config, min_freq=min_freq, max_size=max_vocab)
    added = 0
    if extra_vocab:
        tokenizer, added = extend_vocab(tokenizer, emb_source, int(extra_vocab))

    matrix, coverage = None, None
    if emb_source is not None:
        from .embeddings import build_embedding_matrix
        matrix, coverage = build_embedding_matrix(tokenizer.vocab, emb_source, seed=seed)

    torch.manual_seed(seed)
    net = create_model(model, vocab_size=len(tokenizer.vocab), num_labels=len(labels), preset=preset,
                       variant=variant, embeddings=matrix, **overrides)

    train_enc = encode_split(tokenizer, bundle.splits["train"])
    dev_split = bundle.splits.get("dev")
    dev_enc = encode_split(tokenizer, dev_split) if dev_split is not None and len(dev_split) else None
    history = fit(net, train_enc, dev_enc, tcfg, callbacks, stop_event)

    ignore = default_ignore_label(bundle.name, labels)
    metrics: dict[str, Any] = {}
    for split_name in ("dev", "test"):
        split = bundle.splits.get(split_name)
        if split is None or not len(split) or (split_name == "test" and not evaluate_test):
            continue
        if history.stopped_by_user and split_name == "test":
            continue  # a stopped run is saved as is; evaluate it later with `textcls evaluate`
        enc = dev_enc if split_name == "dev" else encode_split(tokenizer, split)
        preds, loss = predict_encoded(net, enc, tcfg.eval_batch_size)
        report = classification_report(enc.labels.tolist(), preds.tolist(), labels, ignore_label=ignore)
        report["loss"] = loss
        metrics[split_name] = report

    path = None
    if out is not None:
        from .checkpoint import save_checkpoint
        summary = {f"{s}_{k}": metrics[s][k] for s in metrics for k in ("accuracy", "macro_f1")}
        meta = {
            "data": {"name": bundle.name, "spec": data_spec or (str(data) if isinstance(data, (str, Path))
                                                                 else bundle.name),
                     "task": bundle.task, "source": bundle.source, "limit": limit,
                     "splits": {k: len(v) for k, v in bundle.splits.items()}, "ignore_label": ignore},
            "metrics": {**summary, **metrics},
            "training": {**dataclasses.asdict(tcfg), "stopped_reason": history.stopped_reason,
                         "diverged": history.diverged, "best_epoch": history.best_epoch,
                         "seconds": history.elapsed},
            "preset": preset, "variant": variant, "overrides": overrides,
            "embeddings": {"source": embeddings or "random", "coverage": coverage},
            "vocab": {"min_freq": min_freq, "max_size": max_vocab, "size": len(tokenizer.vocab),
                      "extra_vocab": int(extra_vocab), "extra_added": added},
            "library_version": __version__,
        }
        path = save_checkpoint(out, net, tokenizer, labels, meta=meta, history=history, float16=float16)
    return TrainResult(net, tokenizer, labels, history, metrics, path, bundle.name, coverage,
                       time.perf_counter() - t0)
