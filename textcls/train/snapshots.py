"""What a training run keeps for TracIn (textcls.interpret.influence): `EpochSnapshots` is a fit callback that, after
every epoch, copies the output layer's weight and bias ("last", the default: a few KB per epoch) or every weight
("full") with the epoch's learning rate; `snapshots(history, config)` names the epoch whose weights the model ends
with, and the pipeline saves the result beside the weights (textcls.checkpoint: SNAPSHOT_FILE). "off" keeps
nothing. Copying weights draws no random numbers, so a run with snapshots trains to the same weights as one
without."""
from __future__ import annotations

import torch

from textcls.interpret.influence import Snapshots
from textcls.records import EpochEvent, History
from textcls.train.config import TrainConfig
from textcls.train.fit import output_layer

SNAPSHOT_KINDS = ("last", "full", "off")


class EpochSnapshots:
    """A fit callback collecting one snapshot per completed epoch of `model` (see the module docstring)."""

    def __init__(self, model: torch.nn.Module, kind: str = "last"):
        if kind not in SNAPSHOT_KINDS:
            raise ValueError(f"snapshots must be one of {', '.join(SNAPSHOT_KINDS)}, got {kind!r}")
        layer = output_layer(model) if kind != "off" else None
        self.model, self.kind = model, kind
        self.layer = next((n for n, m in model.named_modules() if m is layer), None) if layer is not None else None
        self.epochs: list[int] = []
        self.lrs: list[float] = []
        self.states: list[dict[str, torch.Tensor]] = []

    def __call__(self, event) -> None:
        if not isinstance(event, EpochEvent) or self.layer is None:
            return
        source = dict(self.model.named_modules())[self.layer] if self.kind == "last" else self.model
        self.states.append({k: v.detach().to("cpu", torch.float32, copy=True)
                            for k, v in source.state_dict().items() if v.is_floating_point()})
        self.epochs.append(int(event.epoch))
        self.lrs.append(float(event.lr))

    def snapshots(self, history: History, config: TrainConfig) -> Snapshots | None:
        """The collected Snapshots, with the epoch whose weights fit left in the model (the best dev epoch when
        it restored it, else the last completed one); None when nothing was collected."""
        if not self.epochs:
            return None
        best = history.best_epoch
        final = best if best in self.epochs and (config.restore_best or history.diverged) else self.epochs[-1]
        # only the epochs up to the one the checkpoint holds (TracIn sums over no other) whose weights are finite
        # (a run that diverged has non-finite weights after it; a checkpoint refuses a non-finite tensor)
        keep = [i for i, e in enumerate(self.epochs)
                if e <= final and all(bool(torch.isfinite(v).all()) for v in self.states[i].values())]
        if not keep:
            return None
        return Snapshots(self.kind, self.layer, [self.epochs[i] for i in keep], [self.lrs[i] for i in keep], final,
                         [self.states[i] for i in keep])


__all__ = ["SNAPSHOT_KINDS", "EpochSnapshots"]
