"""Token-removal variants of many texts, each scored once, in padded batches of near length: what the data-set
path (textcls.interpret.batched) and the word orders of one text (textcls.interpret.chance) score."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from textcls.interpret.buckets import buckets
from textcls.interpret.faithfulness import _check_removal
from textcls.interpret.instances import Instance, closed_up
from textcls.interpret.probabilities import prob_fn


class Variants:
    """Token-removal variants of many texts (text index, sorted real-token indices removed), each scored once.

    `add` returns a variant's id (the same id for the same text and removed set); `run` scores every pending
    variant in length buckets; `probs(vid)` is its probability vector (float64, as `probabilities.score` gives).
    Variants that give the model the same input (removing either of two equal neighbours) are scored once and
    share their probabilities: equal orders tie exactly, whichever batches they were asked for in."""

    def __init__(self, model, instances: Sequence[Instance], removal: str = "delete"):
        _check_removal(removal)
        self.fn = prob_fn(model)
        self.lengths = getattr(model, "sequence_lengths", None)   # encoders over word pieces: what a row costs
        self.insts = instances
        self.removal = removal
        self._ids: dict[tuple[int, tuple[int, ...]], int] = {}
        self._items: list[tuple[int, tuple[int, ...]]] = []
        self._probs: list[np.ndarray | None] = []
        self._pending: list[int] = []
        self._real: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._inputs: dict[tuple, int] = {}          # (shape, ids, mask) bytes -> the first variant with them
        self.n_scored = 0

    def add(self, text: int, drop) -> int:
        key = (text, tuple(sorted(int(i) for i in drop)))
        vid = self._ids.get(key)
        if vid is None:
            vid = self._ids[key] = len(self._items)
            self._items.append(key)
            self._probs.append(None)
            self._pending.append(vid)
        return vid

    def probs(self, vid: int) -> np.ndarray:
        p = self._probs[vid]
        if p is None:
            raise RuntimeError("variant not scored yet: call run()")
        return p

    def _text(self, t: int) -> tuple[np.ndarray, np.ndarray | None]:
        """(real ids (n,), sentence of each real token (n,) or None for flat texts) of text t, cached."""
        got = self._real.get(t)
        if got is None:
            inst = self.insts[t]
            sent = inst.positions[:, 0].numpy() if inst.hierarchical else None
            got = self._real[t] = (inst.real_ids().numpy(), sent)
        return got

    def _arrays(self, vid: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids, mask) numpy arrays of one variant, shaped as `Instance.remove` gives them (flat (L,), HCAN
        (S, W)), built without an Instance (the hot path)."""
        t, drop = self._items[vid]
        inst = self.insts[t]
        if self.removal != "delete":
            ids = inst.ids.numpy().copy()
            if drop:
                ids[tuple(inst.positions.numpy()[list(drop)].T)] = inst.pad_id if self.removal == "pad" else inst.unk_id
            return ids, inst.mask.numpy()
        real, sent = self._text(t)
        keep = np.ones(len(real), dtype=bool)
        keep[list(drop)] = False
        return closed_up(real, sent, keep, inst.pad_id)

    def run(self) -> None:
        pending, self._pending = self._pending, []
        if not pending:
            return
        built = {v: self._arrays(v) for v in pending}
        first: dict[int, int] = {}                  # vid -> the vid scored for the same input (a repeated word)
        for v in pending:
            ids, mask = built[v]
            first[v] = self._inputs.setdefault((ids.shape, ids.dtype.str, ids.tobytes(), mask.tobytes()), v)
        unique = [v for v in pending if first[v] == v]
        if unique:
            self._score(unique, built)
        for v in pending:
            self._probs[v] = self._probs[first[v]]
        self.n_scored += len(pending)

    def _score(self, pending: list[int], built: dict[int, tuple[np.ndarray, np.ndarray]]) -> None:
        """Score the variants `pending` (their arrays in `built`) in length buckets."""
        shapes = [built[v][0].shape for v in pending]
        pad_id = self.insts[0].pad_id
        cost = shapes
        if self.lengths is not None and len(shapes[0]) == 1:      # group by the positions the model will run
            cost = [(int(self.lengths(torch.from_numpy(built[v][0])[None], torch.from_numpy(built[v][1])[None])),)
                    for v in pending]
        for group in buckets(cost):
            vids = [pending[g] for g in group]
            shape = tuple(max(built[v][0].shape[d] for v in vids) for d in range(len(shapes[0])))
            ids_np = np.full((len(vids),) + shape, pad_id, dtype=np.int64)
            mask_np = np.zeros((len(vids),) + shape, dtype=bool)
            for r, v in enumerate(vids):
                row, m = built[v]
                sl = (r,) + tuple(slice(0, n) for n in row.shape)
                ids_np[sl] = row
                mask_np[sl] = m
            p = torch.as_tensor(self.fn(torch.from_numpy(ids_np), torch.from_numpy(mask_np))).detach().double().numpy()
            for r, v in enumerate(vids):
                self._probs[v] = p[r]


__all__ = ["Variants"]
