"""One example as textcls.interpret sees it: an `Instance` (ids, mask, tokens of one text), token removal, and
batches of instances.

Conventions used by every module here:
- An example's *real tokens* are its mask's True positions in row-major order. For flat inputs (L,) these are
  the first n positions; for HCAN's (S, W) grid they are the words of sentence 0, then sentence 1, ... - the
  order of `Encoded.tokens` / `Prediction.tokens`. Every importance vector is indexed by real token.
- Removing a token ("removal" argument) is one of
    "delete": the token is taken out and the rest closes up (HCAN: out of its sentence; a sentence left empty
              is dropped), so lengths and positions change;
    "pad":    its id becomes the pad id while the position stays real (mask True): a blank word in place;
    "unk":    its id becomes the unknown-word id, position real.
- A model is never mutated: no hooks that outlive a call, no mode switches, no parameter writes. Models must
  already be in eval mode (a model in training mode is an error, since dropout makes every number random).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np
import torch

from textcls.data.text import PAD_ID, UNK_ID
from textcls.interpret.records import REMOVALS  # noqa: F401  (re-exported)

@dataclass
class Instance:
    """One example: ids (L,) or (S, W) long, mask of the same shape, optional tokens (one per real position)."""

    ids: torch.Tensor
    mask: torch.Tensor
    tokens: list[str] | None = None
    pad_id: int = PAD_ID
    unk_id: int = UNK_ID
    _pos: torch.Tensor | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.ids = torch.as_tensor(self.ids, dtype=torch.long)
        self.mask = torch.as_tensor(self.mask).bool()
        if self.ids.dim() not in (1, 2):
            raise ValueError(f"an Instance holds one example: ids of shape (L,) or (S, W), got {tuple(self.ids.shape)}")
        if self.mask.shape != self.ids.shape:
            raise ValueError(f"mask shape {tuple(self.mask.shape)} differs from ids shape {tuple(self.ids.shape)}")
        if self.tokens is not None and len(self.tokens) != self.n:
            raise ValueError(f"{len(self.tokens)} tokens given for {self.n} real positions")

    @classmethod
    def from_batch(cls, ids: torch.Tensor, mask: torch.Tensor | None = None, tokens=None,
                   pad_id: int = PAD_ID, unk_id: int = UNK_ID) -> list["Instance"]:
        ids = torch.as_tensor(ids, dtype=torch.long)
        if ids.dim() == 1:
            ids = ids[None]
        mask = (ids != pad_id) if mask is None else torch.as_tensor(mask).bool().reshape(ids.shape)
        out = []
        for b in range(ids.shape[0]):
            toks = tokens[b] if tokens is not None else None
            inst = cls(ids[b], mask[b], None, pad_id, unk_id)
            if toks is not None:
                toks = list(toks)[:inst.n]  # tokens beyond what the model saw (truncation) are dropped
                if len(toks) != inst.n:
                    raise ValueError(f"example {b}: {len(toks)} tokens for {inst.n} real positions")
                inst.tokens = toks
            out.append(inst)
        return out

    @property
    def hierarchical(self) -> bool:
        return self.ids.dim() == 2

    @property
    def positions(self) -> torch.Tensor:
        """(n, ids.dim()) the index of each real token, row-major."""
        if self._pos is None:
            self._pos = self.mask.nonzero()
        return self._pos

    @property
    def n(self) -> int:
        return int(self.mask.sum())

    def real_ids(self) -> torch.Tensor:
        return self.ids[self.mask]

    def grid(self, values: Sequence[float] | np.ndarray) -> np.ndarray:
        """Real-token values (n,) -> an array shaped like ids, zero at pads."""
        out = np.zeros(tuple(self.ids.shape), dtype=np.float64)
        out[tuple(self.positions.T.numpy())] = np.asarray(values, dtype=np.float64)
        return out

    def batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.ids[None], self.mask[None]

    # ------------------------------------------------------------ perturbations

    def remove(self, idx: Iterable[int], how: str = "delete") -> "Instance":
        """A copy with the real tokens `idx` (indices into the real-token list) removed (see module docstring)."""
        if how not in REMOVALS:
            raise ValueError(f"unknown removal {how!r}; choose one of {REMOVALS}")
        drop = sorted({int(i) for i in idx})
        if drop and (drop[0] < 0 or drop[-1] >= self.n):
            raise IndexError(f"token index out of range for {self.n} real tokens: {drop}")
        if how in ("pad", "unk"):
            ids = self.ids.clone()
            if drop:
                p = self.positions[drop]
                ids[tuple(p.T)] = self.pad_id if how == "pad" else self.unk_id
            toks = None
            if self.tokens is not None:
                mark = "[PAD]" if how == "pad" else "[UNK]"
                dropped = set(drop)
                toks = [mark if i in dropped else t for i, t in enumerate(self.tokens)]
            return Instance(ids, self.mask.clone(), toks, self.pad_id, self.unk_id)
        keep = np.ones(self.n, dtype=bool)
        keep[drop] = False
        toks = [t for t, k in zip(self.tokens, keep) if k] if self.tokens is not None else None
        sent = self.positions[:, 0].numpy() if self.hierarchical else None
        ids, mask = closed_up(self.real_ids().numpy(), sent, keep, self.pad_id)
        return Instance(torch.from_numpy(ids), torch.from_numpy(mask), toks, self.pad_id, self.unk_id)

    def keep_only(self, idx: Iterable[int], how: str = "delete") -> "Instance":
        """A copy keeping only the real tokens `idx` (all others removed)."""
        keep = {int(i) for i in idx}
        return self.remove([i for i in range(self.n) if i not in keep], how)


def closed_up(real: np.ndarray, sent: np.ndarray | None, keep: np.ndarray, pad_id: int = PAD_ID
              ) -> tuple[np.ndarray, np.ndarray]:
    """(ids, mask) numpy arrays of a text with only its real tokens `keep` (bool (n,)) left, closed up ("delete"
    removal). Flat texts (`sent` None): (n_kept,). Hierarchical: `sent` (n,) is each real token's sentence; the
    grid is (sentences that keep a word, longest of them), sentences left empty dropped. Nothing left: one
    masked pad position ((1,) or (1, 1))."""
    row = real[keep]                                   # (k,) kept ids in order
    if sent is None:
        if row.size == 0:
            return np.array([pad_id], dtype=np.int64), np.zeros(1, dtype=bool)
        return row.astype(np.int64, copy=False), np.ones(row.size, dtype=bool)
    if row.size == 0:
        return np.full((1, 1), pad_id, dtype=np.int64), np.zeros((1, 1), dtype=bool)
    s = sent[keep]                                     # (k,) sentence of each kept word, ascending
    starts = np.empty(row.size, dtype=bool)            # (k,) a kept sentence's first kept word
    starts[0] = True
    np.not_equal(s[1:], s[:-1], out=starts[1:])
    rows = np.cumsum(starts) - 1                       # (k,) sentence renumbered 0..S-1
    cols = np.arange(row.size) - np.flatnonzero(starts)[rows]   # (k,) position within it
    ids = np.full((int(rows[-1]) + 1, int(cols.max()) + 1), pad_id, dtype=np.int64)   # (S, W)
    mask = np.zeros(ids.shape, dtype=bool)             # (S, W)
    ids[rows, cols] = row
    mask[rows, cols] = True
    return ids, mask


def expected_dims(model: Any) -> int:
    """2 for (B, L) token models, 3 for (B, S, W) sentence models (HCAN), from the registry."""
    name = getattr(model, "registry_name", "")
    if name:
        from textcls.models.registry import get_entry
        try:
            return 3 if get_entry(name).input_kind == "sentences" else 2
        except KeyError:
            pass
    return 2


def as_batch(model: Any, ids, mask=None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """ids (and mask) with a batch axis: one example ((L,) or HCAN's (S, W)) becomes a batch of one."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    if ids.dim() == expected_dims(model) - 1:
        ids = ids[None]
        mask = None if mask is None else torch.as_tensor(mask)[None]
    if ids.dim() != expected_dims(model):
        raise ValueError(f"token ids of shape {tuple(ids.shape)} do not fit {type(model).__name__} "
                         f"(expects {'(B, S, W)' if expected_dims(model) == 3 else '(B, L)'})")
    return ids, mask


def stack(instances: Sequence[Instance]) -> tuple[torch.Tensor, torch.Tensor]:
    """Instances (all flat or all hierarchical) -> right/bottom-padded (N, ...) ids and mask."""
    if not instances:
        raise ValueError("no instances to stack")
    dims = {i.ids.dim() for i in instances}
    if len(dims) != 1:
        raise ValueError("cannot stack flat and hierarchical instances together")
    shape = tuple(max(i.ids.shape[d] for i in instances) for d in range(dims.pop()))
    pad_id = instances[0].pad_id
    ids = torch.full((len(instances),) + shape, pad_id, dtype=torch.long)
    mask = torch.zeros((len(instances),) + shape, dtype=torch.bool)
    for b, inst in enumerate(instances):
        sl = (b,) + tuple(slice(0, n) for n in inst.ids.shape)
        ids[sl] = inst.ids
        mask[sl] = inst.mask
    return ids, mask


__all__ = ["REMOVALS", "Instance", "as_batch", "closed_up", "expected_dims", "stack"]
