"""Encoded splits and batches: a split's texts turned into token ids once (`encode_split`, `EncodedSplit`),
length-bucketed batches padded per batch (`make_batches`, `EncodedSplit.batch`), and a model's predictions
over a whole encoded split (`predict_encoded`). Used by training, evaluation and the data-set views.

Several processes (`DistributedBatchSampler`, the DistributedSampler contract: one per rank, `set_epoch` every
epoch): every rank draws the same global batches as a single-process run with the same seed (`make_batches`,
bucketing included), and rank r of N takes positions r, r+N, ... of each global batch. So the union of the
ranks' step-t batches is the single-process step-t batch, and with the loss weighted by the global batch size
(training.fit) the averaged gradient is the single-process mean gradient. Uneven batches (a global batch that N
does not divide, e.g. the last one) give ranks shards differing by one example, which that weighting makes
exact; a rank whose shard would be empty (a global batch smaller than N) gets a copy of the batch's first
example with weight 0 (`Shard.weight`), so every rank runs the same number of steps and nothing is dropped.

`iterate_batches` pads the batches, optionally in worker processes and into pinned memory (CUDA); with no
workers and no pinning it is the plain loop the CPU path always ran."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
import torch.utils.data
import torch.nn.functional as F

from textcls.runtime.threads import batch_work


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

    def longest(self) -> dict[str, int]:
        """The largest padded size a batch of this split can have: {"max_len": L} for flat inputs,
        {"max_sentences": S, "max_words": W} for hierarchical ones (at least 1 each)."""
        if self.hierarchical:
            return {"max_sentences": max((int(x.shape[0]) for x in self.ids), default=1),
                    "max_words": max((int(x.shape[1]) for x in self.ids), default=1)}
        return {"max_len": max((int(x.shape[0]) for x in self.ids), default=1)}

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
        ids, masks, lengths = crop_rows(token_ids, mask)
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


def crop_rows(token_ids: torch.Tensor, mask: torch.Tensor):
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
        i, m, n = crop_rows(enc.token_ids, enc.mask)
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


def subset(enc: EncodedSplit, index: Sequence[int]) -> EncodedSplit:
    """The examples `index` of an encoded split, as a new EncodedSplit (tensors shared, not copied); a split
    with its own `subset` (arrow_data.ArrowSplit) makes its own."""
    if hasattr(enc, "subset"):
        return enc.subset(index)
    index = list(index)
    return EncodedSplit([enc.ids[i] for i in index], [enc.masks[i] for i in index],
                        None if enc.labels is None else enc.labels[index], [enc.lengths[i] for i in index],
                        enc.hierarchical, [enc.truncated[i] for i in index] if enc.truncated else [], enc.pad_id)


@dataclass
class Shard:
    """One rank's part of one global batch: `index` (example ids), `weight` (1 per real example, 0 for the
    stand-in an empty shard gets) and `global_size` (examples in the global batch)."""
    index: list[int]
    weight: list[float]
    global_size: int


class DistributedBatchSampler:
    """Rank `rank` of `world_size`'s shards of the global length-bucketed batches (see the module docstring).

    Same contract as torch's DistributedSampler: create one per rank, call `set_epoch(e)` before each epoch
    (1, 2, ... in order; the global batches of epoch e are those a single process draws in its e-th epoch from
    `seed`), iterate. len() is the number of steps per epoch, equal on every rank."""

    def __init__(self, lengths: Sequence[int], batch_size: int, seed: int, rank: int = 0, world_size: int = 1,
                 bucket: bool = True):
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is outside 0..{world_size - 1}")
        self.lengths, self.batch_size, self.bucket = lengths, batch_size, bucket
        self.rank, self.world_size = rank, world_size
        self.seed = seed
        self.generator = torch.Generator().manual_seed(seed)
        self.epoch = 0
        self._batches: list[list[int]] = []

    def set_epoch(self, epoch: int) -> None:
        if epoch < self.epoch + 1:                      # going back: replay from the seed
            self.generator.manual_seed(self.seed)
            self.epoch = 0
        while self.epoch < epoch:
            self._batches = make_batches(self.lengths, self.batch_size, self.generator, bucket=self.bucket)
            self.epoch += 1

    def __len__(self) -> int:
        return -(-len(self.lengths) // self.batch_size)

    def __iter__(self):
        if self.epoch == 0:
            self.set_epoch(1)
        for b in self._batches:
            mine = b[self.rank::self.world_size]
            if mine:
                yield Shard(mine, [1.0] * len(mine), len(b))
            else:
                yield Shard(b[:1], [0.0], len(b))


class _BatchView(torch.utils.data.Dataset):
    """A split seen as a dataset of whole padded batches (for DataLoader workers)."""

    def __init__(self, split, batches):
        self.split, self.batches = split, batches

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, i):
        return self.split.batch(self.batches[i], "cpu")


def iterate_batches(split, batches: Sequence[Sequence[int]], device: torch.device | str = "cpu",
                    workers: int = 0, pin_memory: bool = False):
    """(ids, mask, labels) on `device` for each index list in `batches`, in order; padding done in `workers`
    processes and the tensors pinned when asked (both off: the plain loop)."""
    if not workers and not pin_memory:
        for index in batches:
            yield split.batch(index, device)
        return
    loader = torch.utils.data.DataLoader(_BatchView(split, list(batches)), batch_size=None, shuffle=False,
                                         num_workers=workers, pin_memory=pin_memory,
                                         persistent_workers=False)
    for ids, mask, y in loader:
        nb = pin_memory
        yield (ids.to(device, non_blocking=nb), mask.to(device, non_blocking=nb),
               None if y is None else y.to(device, non_blocking=nb))


def model_device(model: torch.nn.Module) -> torch.device:
    for p in model.parameters():
        return p.device
    return torch.device("cpu")


@batch_work  # a whole split: the batch thread setting (textcls.runtime.threads)
@torch.no_grad()
def predict_encoded(model, enc: EncodedSplit, batch_size: int = 64) -> tuple[np.ndarray, float | None]:
    """(predicted class per example, mean cross-entropy or None without labels), in eval mode.

    Batches are formed by length (no shuffling) and the predictions put back in the split's order. The
    model's train/eval flag is restored afterwards (a model that was in eval mode is left untouched).
    """
    from textcls.runtime.limits import check_count
    check_count("batch_size", batch_size)           # a negative one would silently predict nothing
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


def predict_sharded(model, enc, batch_size: int = 64) -> tuple[np.ndarray, float | None]:
    """`predict_encoded` over the ranks of a torchrun job (textcls.runtime.distributed): rank r predicts examples r, r+N, ...; every rank gets all
    the predictions and the mean loss. In a single process it is predict_encoded itself."""
    from textcls.runtime import distributed
    ctx = distributed.context()
    if not ctx.active:
        return predict_encoded(model, enc, batch_size)
    n = len(enc)
    mine = list(range(ctx.rank, n, ctx.world_size))
    preds_local, loss_local = predict_encoded(model, subset(enc, mine), batch_size) if mine else (np.zeros(0), None)
    full = torch.zeros(n, dtype=torch.long, device=ctx.device)
    full[mine] = torch.as_tensor(preds_local, dtype=torch.long, device=ctx.device)
    stats = torch.tensor([0.0 if loss_local is None else loss_local * len(mine),
                          0.0 if loss_local is None else float(len(mine))], dtype=torch.float64, device=ctx.device)
    distributed.all_reduce_sum(full)
    distributed.all_reduce_sum(stats)
    loss = float(stats[0] / stats[1]) if stats[1] > 0 else None
    return full.cpu().numpy(), loss
