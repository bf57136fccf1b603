"""Training: `fit(model, train, dev, config, callbacks, stop_event)` on encoded splits; `config` is a `TrainConfig`
(textcls.train.config, no torch; `pipeline.train_from_spec` is the high-level entry point). The one training loop: the textcls models and the
fine-tuned Hugging Face encoders (textcls.train.hf, a recipe of optimiser and schedule factories and frozen
parameters) both train here, and a torchrun job runs the same loop.

No UI code here. The CLI and the app's Train page are two callers: they pass callbacks, which receive plain
dataclasses (`StepEvent` after every optimiser step, `EpochEvent` after every epoch), and may set a
`threading.Event` to stop a run cleanly (checked before every step). A callback with a `before_step(step)`
method is also called before each step (textcls.train.faults.FailAt, the tests' fault injection).

Choices (written down because the papers leave them open or differ):
- Batches are bucketed by length: the seeded shuffle is cut into chunks of 50 batches, each chunk sorted by
  length and cut into batches, and the batch order shuffled again. Padding per batch is to the batch's
  longest example only. Same seed -> same batches -> same loss sequence (tested).
- Early stopping watches dev accuracy (strict improvement); with `patience` epochs without improvement the
  run stops, and at the end the weights of the best dev epoch are restored (`restore_best`).
- Optimisers (`make_optimizer`, or the `optimizer=` factory): "adam" (default); "sgd" with momentum (ACT: lr
  0.01, momentum 0.9, and `lr_decay_patience=10`, `lr_decay=0.9`: the lr is multiplied by 0.9 after every 10
  epochs without dev improvement - the decay rule works with any optimiser); "noam" (Vaswani et al.; Matton's
  Transformer): Adam with betas (0.9, 0.998) and lr(step) = lr * min(step / warmup, sqrt(warmup / step)), i.e.
  `lr` is the peak reached at step `warmup` (Noam's d^-0.5 * warmup^-0.5 factor folded into `lr`).
  `warmup_steps=None` takes 10% of the run's steps. The schedule is a factor on each parameter group's lr
  (`default_schedule`, or the `schedule=` factory, e.g. `linear_schedule`).
- `epochs` may be a fraction (that share of one epoch's steps, rounded up); `frozen` names parameters that
  are not trained.
- `model.extra_loss(out, labels)` (ACT's center loss) is added to the cross-entropy when it is not None.
- A non-finite loss (or, with clipping, a non-finite gradient norm) stops the run before the bad update: the
  loss is checked before its backward pass and before any optimiser step. The weights go back to the best dev
  epoch, else the end of the last completed epoch, else the initial weights; `History.stopped_reason` says
  what happened and `History.diverged` is True. A run that diverged before its first epoch completed (no
  `History.epochs`) has nothing trained to keep: the pipeline writes no checkpoint for it. A user stop ends the
  run before the next step; the interrupted epoch is neither evaluated nor recorded.
- Devices: `device` ("auto" | "cpu" | "cuda[:N]" | "mps"); `amp` ("off" | "auto" | "bf16" | "fp16") autocasts
  the forward pass on CUDA (fp16 with a GradScaler), and is float32 with a warning elsewhere; `workers` /
  `pin_memory` pad batches in worker processes / into pinned memory (default: on CUDA only). With all of them
  at their CPU defaults the loop is exactly the single-process CPU loop it always was.
- Several processes (torchrun; `distributed.init` joined the group before fit): the same loop, with
  `_Distributed` in place of `_Local` for the three things that differ - the batches, the step's loss and the
  rank-0 verdicts. The model is wrapped in DistributedDataParallel; every rank walks the same global batches
  (`batching.DistributedBatchSampler`) and takes its stride of each; each rank's summed cross-entropy is scaled
  by world_size / global batch size, so DDP's gradient average is the single-process mean gradient (exactly,
  up to float summation order, also for uneven last batches; the extra loss, e.g. ACT's center loss, is the
  mean of the ranks' per-shard means). The step loss, hit count and stop flag are all-reduced in one
  collective, so a non-finite loss or a user stop on any rank stops every rank before the update; dev
  predictions are computed in shards and gathered, rank 0's dev accuracy is broadcast, and the
  early-stopping verdict is rank 0's, broadcast. Dropout draws differ from a single-process run (each rank
  draws for its own shard), so only a model without dropout trains to the same weights.
"""
from __future__ import annotations

import dataclasses
import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import torch
import torch.nn.functional as F

from textcls.runtime import distributed
from textcls.data.batching import (DistributedBatchSampler, EncodedSplit, Shard, iterate_batches, make_batches,
    predict_sharded)
from textcls.runtime.devices import autocast, grad_scaler, loader_defaults, resolve_amp, resolve_device
from textcls.analysis.metrics import macro_f1
from textcls.records import EpochEvent, EpochRecord, History, StepEvent
from textcls.runtime.threads import batch_work
from textcls.train.config import TrainConfig
from textcls.models.layers import output_layer  # noqa: F401 - the layer max-norm and TracIn read

# ---------------------------------------------------------------- config, events, history


Callback = Callable[[Any], None]
OptimizerFactory = Callable[[list, TrainConfig], torch.optim.Optimizer]   # (trainable parameters, config)
Schedule = Callable[[int, int], float]          # (steps taken so far, total steps) -> factor on each group's lr


def make_optimizer(params, config: TrainConfig) -> torch.optim.Optimizer:
    """The optimiser `config.optimizer` names, over `params` (fit's default optimiser factory)."""
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


def default_schedule(config: TrainConfig) -> Schedule:
    """fit's default schedule: Noam's warm-up for optimizer="noam" (`warmup_steps`, else 10% of the run's
    steps), a constant 1 otherwise."""
    if config.optimizer != "noam":
        return lambda done, total: 1.0
    return lambda done, total: noam_factor(done + 1, config.warmup_steps or max(1, total // 10))


def linear_schedule(warmup: float) -> Schedule:
    """Linear warm-up over the first `warmup` share of the steps (at least one), then linear decay to 0 at the
    last step (the BERT fine-tuning schedule; textcls.train.hf's recipe)."""
    def factor(done: int, total: int) -> float:
        warm = max(1, int(total * warmup))
        return (done + 1) / warm if done < warm else max(0.0, (total - done) / max(1, total - warm))
    return factor


def _snapshot(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def _freeze(model: torch.nn.Module, names: Iterable[str]) -> None:
    """requires_grad off for each parameter named (or under a module named) in `names`."""
    params = dict(model.named_parameters())
    for name in names:
        hit = [n for n in params if n == name or n.startswith(name + ".")]
        if not hit:
            raise ValueError(f"frozen: the model has no parameter {name!r}")
        for n in hit:
            params[n].requires_grad_(False)


class _TrainStep(torch.nn.Module):
    """The model's forward and its extra loss as one module, so DistributedDataParallel sees every parameter
    that gets a gradient (ACT's class centres are used only by the extra loss)."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids, mask, y):
        out = self.model(ids, mask)
        extra = self.model.extra_loss(out, y) if hasattr(self.model, "extra_loss") else None
        return out.logits, (torch.zeros((), device=out.logits.device) if extra is None else extra)


@dataclass
class _Step:
    """One step's forward: the loss to back-propagate, its value (the same on every rank), the logits, the
    examples of the (global) batch and how many the model got right (all ranks together)."""
    loss: torch.Tensor
    value: float
    logits: torch.Tensor
    size: int
    correct: int


class _Local:
    """One process: the batches, the loss and the (trivial) agreements of the loop. `_Distributed` is the same
    loop over several processes."""

    def __init__(self, model: torch.nn.Module, train: EncodedSplit, config: TrainConfig, device: torch.device):
        self.config, self.device = config, device
        self.forward = _TrainStep(model)
        self.gen = torch.Generator().manual_seed(config.seed)

    def batches(self, epoch: int, lengths) -> list[Shard]:
        return [Shard(b, [], len(b)) for b in make_batches(lengths, self.config.batch_size, self.gen,
                                                           bucket=self.config.bucket)]

    def step(self, ids, mask, y, shard: Shard, amp, user_stop: bool) -> _Step | None:
        """The forward and loss of one step; None when the user asked to stop (on any rank)."""
        if user_stop:
            return None
        with autocast(amp, self.device):
            logits, extra = self.forward(ids, mask, y)
        loss = F.cross_entropy(logits.float(), y) + extra
        hits = int((logits.detach().argmax(-1) == y).sum())
        return _Step(loss, float(loss.detach()), logits, shard.global_size, hits)

    def agreed(self, value: float) -> float:
        """Rank 0's `value`, on every rank."""
        return value


class _Distributed(_Local):
    """torchrun: the model wrapped in DistributedDataParallel, each rank's shard of the global batches, the loss
    scaled so DDP's gradient average is the single-process mean gradient (see the module docstring)."""

    def __init__(self, model: torch.nn.Module, train: EncodedSplit, config: TrainConfig, device: torch.device):
        super().__init__(model, train, config, device)
        ctx = distributed.context()
        self.world = ctx.world_size
        self.sampler = DistributedBatchSampler(train.lengths, config.batch_size, config.seed, ctx.rank,
                                               ctx.world_size, config.bucket)
        step = self.forward

        def probe() -> None:                     # one forward+backward on a few examples; buffers put back
            buffers = {k: v.detach().clone() for k, v in model.named_buffers()}
            ids, mask, y = train.batch(list(range(min(2, len(train)))), device)
            logits, extra = step(ids, mask, y)
            (logits.float().sum() + extra).backward()
            with torch.no_grad():
                for k, v in model.named_buffers():
                    v.copy_(buffers[k])
        self.forward = distributed.wrap_ddp(step, device, probe)

    def batches(self, epoch: int, lengths) -> list[Shard]:
        self.sampler.set_epoch(epoch)
        return list(self.sampler)

    def step(self, ids, mask, y, shard: Shard, amp, user_stop: bool) -> _Step | None:
        weight = torch.tensor(shard.weight, device=self.device)
        with autocast(amp, self.device):
            logits, extra = self.forward(ids, mask, y)
        ce = (F.cross_entropy(logits.float(), y, reduction="none") * weight).sum()
        hits = ((logits.detach().argmax(-1) == y).float() * weight).sum()
        stats = torch.stack([ce.detach().double(), extra.detach().double().reshape(()), hits.double(),
                             torch.tensor(float(user_stop), dtype=torch.float64, device=self.device)])
        distributed.all_reduce_sum(stats)        # one collective: the loss, the hits and a stop on any rank
        if float(stats[3]) > 0:
            return None
        n = shard.global_size
        return _Step(ce * (self.world / n) + extra, float(stats[0]) / n + float(stats[1]) / self.world, logits, n,
                     int(round(float(stats[2]))))

    def agreed(self, value: float) -> float:
        return float(distributed.broadcast(torch.tensor([value], dtype=torch.float64, device=self.device)))


def _emit(callbacks: Iterable[Callback], event: Any) -> None:
    for cb in callbacks:
        cb(event)


def _before_step(callbacks: Iterable[Callback], step: int) -> None:
    """The callbacks that watch steps before they are taken (`before_step(step)`, e.g. faults.FailAt)."""
    for cb in callbacks:
        hook = getattr(cb, "before_step", None)
        if hook is not None:
            hook(step)


@batch_work  # training: the batch thread setting, in whichever thread runs it (textcls.runtime.threads)
def fit(model: torch.nn.Module, train: EncodedSplit, dev: EncodedSplit | None = None,
        config: TrainConfig | None = None, callbacks: Iterable[Callback] = (),
        stop_event: threading.Event | None = None, *, optimizer: OptimizerFactory | None = None,
        schedule: Schedule | None = None) -> History:
    """Train `model` in place on `train`; evaluate on `dev` after each epoch. Returns the History.

    `optimizer(params, config)` builds the optimiser over the trainable parameters (default `make_optimizer`,
    from `config.optimizer`); `schedule(steps_done, total_steps)` is the factor on each parameter group's lr
    before each step (default `default_schedule(config)`). A callback with a `before_step(step)` method has it
    called before each optimiser step (1-based). The model ends on the training device in eval mode, holding
    the best dev weights (or see the module docstring for stops and divergence).
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

    ctx = distributed.context()
    device = ctx.device if ctx.active else resolve_device(config.device)
    amp = resolve_amp(config.amp, device)
    scaler = grad_scaler(amp, device)
    workers, pin = loader_defaults(device, config.workers, config.pin_memory)
    torch.manual_seed(config.seed)
    model.to(device)
    _freeze(model, config.frozen)
    params = [p for p in model.parameters() if p.requires_grad]
    max_norm_weight = None
    if config.max_norm is not None:
        layer = output_layer(model)
        if layer is None:
            raise ValueError("max_norm: the model has no Linear layer with num_labels outputs")
        max_norm_weight = layer.weight
    if not params:
        raise ValueError("fit: the model has no trainable parameters")
    opt = (optimizer or make_optimizer)(params, config)
    base_lrs = [g["lr"] for g in opt.param_groups]
    schedule = schedule or default_schedule(config)
    run = (_Distributed if ctx.active else _Local)(model, train, config, device)

    n_epochs = math.ceil(config.epochs)
    steps_per_epoch = math.ceil(len(train) / config.batch_size)
    planned = max(1, math.ceil(steps_per_epoch * config.epochs))
    total_steps = planned if config.max_steps is None else min(planned, config.max_steps)

    hist = History(device=str(device), config=dataclasses.asdict(config))
    if ctx.active:
        hist.config.update(world_size=ctx.world_size, backend=ctx.backend)
    if amp.enabled or amp.note:
        hist.config["amp_used"] = amp.name
    start = time.perf_counter()
    initial = _snapshot(model)
    last_good = initial            # end of the last completed epoch (used without a dev split)
    best_state: dict[str, torch.Tensor] | None = None
    best_acc = -1.0
    since_best = 0
    lr_scale = 1.0
    step = 0
    stop: str | None = None

    def lr_factor() -> float:
        return lr_scale * schedule(step, total_steps)

    def kept() -> str:       # what a diverged run ends with: no completed epoch means nothing worth keeping
        return "kept the last good weights" if hist.epochs else "no epoch completed, so no trained weights to keep"

    for epoch in range(1, n_epochs + 1):
        model.train()
        t_epoch = time.perf_counter()
        loss_sum, correct, seen, epoch_steps = 0.0, 0, 0, 0
        shards = run.batches(epoch, train.lengths)
        for k, (ids, mask, y) in enumerate(iterate_batches(train, [sh.index for sh in shards], device, workers,
                                                           pin)):
            _before_step(callbacks, step + 1)
            factor = lr_factor()
            for g, base in zip(opt.param_groups, base_lrs):
                g["lr"] = base * factor
            out = run.step(ids, mask, y, shards[k], amp, stop_event is not None and stop_event.is_set())
            if out is None:
                stop = f"stopped by user at epoch {epoch}, step {step}"
                hist.stopped_by_user = True
                break
            if not math.isfinite(out.value):     # checked before any backward pass or update with it
                stop = f"non-finite training loss ({out.value}) at epoch {epoch}, step {step + 1}; {kept()}"
                hist.diverged = True
                break
            opt.zero_grad(set_to_none=True)
            if scaler is not None:
                scaler.scale(out.loss).backward()
            else:
                out.loss.backward()
            if config.clip_norm is not None:
                if scaler is not None:
                    scaler.unscale_(opt)
                norm = float(torch.nn.utils.clip_grad_norm_(params, config.clip_norm))
                if not math.isfinite(norm):
                    stop = f"non-finite gradient norm ({norm}) at epoch {epoch}, step {step + 1}; {kept()}"
                    hist.diverged = True
                    break
            if scaler is not None:
                scaler.step(opt)
                scaler.update()
            else:
                opt.step()
            if max_norm_weight is not None:
                with torch.no_grad():                                   # (C, F) rows: one per class
                    max_norm_weight.copy_(torch.renorm(max_norm_weight, 2, 0, config.max_norm))
            step += 1
            epoch_steps += 1
            hist.step_losses.append(out.value)
            loss_sum += out.value * out.size
            correct += out.correct
            seen += out.size
            _emit(callbacks, StepEvent(epoch, step, total_steps, out.value, config.lr * factor,
                                       time.perf_counter() - start))
            if step >= total_steps:
                break
        if stop is not None:
            break  # an interrupted epoch is neither evaluated nor recorded

        dev_metrics = None
        improved = False
        if dev is not None:
            preds, dev_loss = predict_sharded(model, dev, config.eval_batch_size)
            y_dev = dev.labels.numpy()
            acc = run.agreed(float((preds == y_dev).mean()))    # every rank decides on rank 0's figure
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
        record = EpochRecord(epoch=epoch, steps=epoch_steps, train_loss=loss_sum / max(seen, 1),
                             train_accuracy=correct / max(seen, 1),
                             dev_loss=None if dev_metrics is None else dev_metrics["loss"],
                             dev_accuracy=None if dev_metrics is None else dev_metrics["accuracy"],
                             dev_macro_f1=None if dev_metrics is None else dev_metrics["macro_f1"],
                             lr=config.lr * lr_factor(), seconds=time.perf_counter() - t_epoch, elapsed=elapsed)
        hist.epochs.append(record)
        _emit(callbacks, EpochEvent(epoch, n_epochs, step, total_steps, record.train_loss, record.train_accuracy,
                                    dev_metrics, record.lr, elapsed, hist.best_epoch, improved))
        if step >= total_steps and total_steps < planned:
            stop = f"reached max_steps={config.max_steps} at epoch {epoch}"
            break
        patience_out = dev is not None and config.patience is not None and since_best >= config.patience
        if run.agreed(float(patience_out)):      # the early-stopping verdict: rank 0's
            stop = (f"early stopping at epoch {epoch}: no dev-accuracy improvement for {config.patience} "
                    f"epoch(s); best epoch {hist.best_epoch}")
            break

    if best_state is not None and (config.restore_best or hist.diverged):
        model.load_state_dict(best_state)
    elif hist.diverged:
        model.load_state_dict(last_good)
    model.eval()
    whole = float(config.epochs).is_integer()
    hist.stopped_reason = stop or (f"completed {len(hist.epochs)} epoch(s)" if whole
                                   else f"completed {step} steps ({config.epochs:g} epochs)")
    hist.steps = step
    hist.elapsed = time.perf_counter() - start
    return hist
