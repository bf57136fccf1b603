"""Shared machinery of textcls.interpret: one example as an `Instance`, token removal, probability functions,
the embedding substitution that lets Captum perturb `model.embed`'s output, and attention-edit helpers.

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

import threading
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import torch

from textcls.data.text import PAD_ID, UNK_ID

REMOVALS = ("delete", "pad", "unk")
ProbFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


# ---------------------------------------------------------------- one example

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


# ---------------------------------------------------------------- models and probability functions

def check_model(model: Any) -> None:
    if isinstance(model, torch.nn.Module) and model.training:
        raise ValueError("the model is in training mode (dropout makes every number random); pass model.eval() "
                         "- or a copy of it - to textcls.interpret")


def is_model(obj: Any) -> bool:
    return isinstance(obj, torch.nn.Module)


def prob_fn(model_or_fn: Any, edits: dict | None = None) -> ProbFn:
    """A function (ids (N, ...), mask) -> probabilities (N, C) without gradient.

    `model_or_fn` is a TextClassifier (softmax of its logits, with optional edits) or already such a function
    (tests use small hand-made ones)."""
    if is_model(model_or_fn):
        model = model_or_fn
        check_model(model)

        def fn(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            with torch.no_grad():
                return torch.softmax(model(ids, mask, edits=edits).logits.float(), dim=-1)
        return fn
    if edits:
        raise ValueError("edits need a model, not a probability function")
    if not callable(model_or_fn):
        raise TypeError(f"expected a TextClassifier or a callable (ids, mask) -> probabilities, got "
                        f"{type(model_or_fn).__name__}")
    return model_or_fn


def score(fn: ProbFn, instances: Sequence[Instance], batch_size: int = 64) -> np.ndarray:
    """Probabilities (N, C) of each instance, batched."""
    out = []
    for i in range(0, len(instances), batch_size):
        ids, mask = stack(instances[i:i + batch_size])
        p = fn(ids, mask)
        out.append(torch.as_tensor(p).detach().double().numpy())
    return np.concatenate(out, axis=0)


def tvd(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Total variation distance 1/2 sum_i |p_i - q_i| over the last axis."""
    return 0.5 * np.abs(np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64)).sum(-1)


# ---------------------------------------------------------------- sources: Predictor or (model, tokenizer)

@dataclass
class Source:
    """What text-level functions need: the model, an encoder of texts, label names, the unknown-word id."""

    model: Any
    encode: Callable[[list[str]], Any]
    labels: list[str] | None = None
    name: str = ""
    unk_id: int = UNK_ID

    def instances(self, texts: Sequence[str]) -> list[Instance]:
        if isinstance(texts, str):
            raise TypeError("pass a list of texts, not one string")
        enc = self.encode(list(texts))
        pad = getattr(self.model.config, "pad_id", PAD_ID)
        return Instance.from_batch(enc.token_ids, enc.mask, getattr(enc, "tokens", None), pad_id=pad,
                                   unk_id=self.unk_id)


def _unk_id(tokenizer: Any) -> int:
    vocab = getattr(tokenizer, "vocab", None)
    return int(getattr(vocab, "unk_id", UNK_ID))


def as_source(obj: Any, tokenizer: Any = None, labels: Sequence[str] | None = None) -> Source:
    """A Predictor (has .model and .encode), or a model with a tokenizer (has .encode), or a Source."""
    if isinstance(obj, Source):
        return obj
    if isinstance(obj, tuple) and len(obj) == 2 and tokenizer is None:
        obj, tokenizer = obj
    if tokenizer is None and hasattr(obj, "model") and hasattr(obj, "encode"):
        return Source(obj.model, obj.encode, list(getattr(obj, "labels", None) or []) or None,
                      str(getattr(obj, "name", "")), _unk_id(getattr(obj, "tokenizer", None)))
    if is_model(obj) and tokenizer is not None and hasattr(tokenizer, "encode"):
        return Source(obj, tokenizer.encode, list(labels) if labels else None, getattr(obj, "registry_name", ""),
                      _unk_id(tokenizer))
    raise TypeError("expected a Predictor, or a model with a tokenizer (model, tokenizer)")


# ---------------------------------------------------------------- embedding substitution (Captum on model.embed)

class EmbeddingForward:
    """f(emb, ids, mask) -> probabilities (or logits) of `model`, where `emb` replaces model.embed's output.

    Captum's primal methods (IntegratedGradients, Saliency, Occlusion, Lime, ShapleyValueSampling, infidelity,
    sensitivity_max) then perturb the embedding-layer output directly: identical to Captum's Layer* methods on
    `model.embed`, and the same code path serves all of them. The substitution is a forward hook that lives only
    for the call and acts only in the calling thread, so other users of a cached model are never affected.
    A model that pads its input past L (Kim CNN / AGCNN on inputs shorter than the widest window) keeps its own
    embedding for the extra positions.
    """

    def __init__(self, model: torch.nn.Module, output: str = "prob", edits: dict | None = None):
        if output not in ("prob", "logit"):
            raise ValueError(f"output must be 'prob' or 'logit', got {output!r}")
        if not hasattr(model, "embed"):
            raise TypeError(f"{type(model).__name__} has no `embed` layer to attribute to")
        check_model(model)
        self.model, self.output, self.edits = model, output, edits
        self._local = threading.local()

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.model.embed(ids).detach()

    def _hook(self, module, inputs, out):
        state = getattr(self._local, "state", None)
        if state is None:
            return None
        emb = state
        if out.shape == emb.shape:
            return emb
        # the model padded its ids (B, L) -> (B, L'): substitute the first L positions
        if out.dim() == emb.dim() and out.shape[0] == emb.shape[0] and out.shape[2:] == emb.shape[2:] \
                and out.shape[1] > emb.shape[1]:
            return torch.cat([emb, out[:, emb.shape[1]:]], dim=1)
        raise RuntimeError(f"model.embed produced {tuple(out.shape)} but the substituted embedding is "
                           f"{tuple(emb.shape)}; this model calls its embedding in a way attribution cannot follow")

    def __call__(self, emb: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        handle = self.model.embed.register_forward_hook(self._hook)
        self._local.state = emb
        try:
            logits = self.model(ids, mask, edits=self.edits).logits
        finally:
            self._local.state = None
            handle.remove()
        return torch.softmax(logits, dim=-1) if self.output == "prob" else logits


# ---------------------------------------------------------------- attention edits

def real_attention_specs(model: Any, names: Sequence[str] | None = None) -> list:
    """The model's normalised attention maps (kind "attention", values "real"), or the named ones."""
    specs = [s for s in model.map_specs() if s.kind == "attention" and s.values == "real"]
    if names is not None:
        known = {s.name: s for s in model.map_specs()}
        missing = [n for n in names if n not in known]
        if missing:
            raise KeyError(f"{type(model).__name__} has no map(s) {missing}; maps: {sorted(known)}")
        bad = [n for n in names if known[n].kind != "attention" or known[n].values != "real"]
        if bad:
            raise ValueError(f"map(s) {bad} are not normalised attention maps (kind 'attention', values 'real')")
        specs = [known[n] for n in names]
    return specs


def key_mask(t: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Bool mask broadcastable to t marking the real positions of t's last (key) axis.

    Uses the mask the probe passes (its leading axes match t's leading axes, its last axis t's last axis),
    else falls back to t's non-zero entries (masked softmax gives exactly 0 at pads)."""
    if mask is not None:
        m = mask.bool()
        lead = m.dim() - 1
        if m.dim() <= t.dim() and m.shape[-1] == t.shape[-1] and tuple(m.shape[:lead]) == tuple(t.shape[:lead]):
            view = tuple(m.shape[:lead]) + (1,) * (t.dim() - m.dim()) + (m.shape[-1],)
            return m.reshape(view)
    return t != 0


def uniform_like(t: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Each row's mass spread uniformly over its real keys: rows summing to 1 become uniform, padded rows (sum 0)
    stay 0, and a "partial" row (the rest on a cls token) keeps its mass, so the full row still sums to 1."""
    km = key_mask(t, mask).expand_as(t).to(t.dtype)
    return km / km.sum(-1, keepdim=True).clamp(min=1.0) * t.sum(-1, keepdim=True)


def permute_rows(t: torch.Tensor, mask: torch.Tensor | None, generator: torch.Generator | None,
                 rand: torch.Tensor | None = None) -> torch.Tensor:
    """Randomly permute each row's weights among its real key positions (each row its own permutation).
    The sort keys are uniform draws from `generator`, or `rand` (shaped like t) when given: the batched data-set
    path draws each text's block from that text's own generator (textcls.interpret.batched)."""
    km = key_mask(t, mask).expand_as(t)
    keys = (torch.rand(t.shape, generator=generator) if rand is None else rand).to(t.device)
    keys = torch.where(km, keys, torch.full_like(keys, 2.0) + torch.arange(t.shape[-1], device=t.device) * 1e-3)
    perm = keys.argsort(dim=-1, stable=True)                                # real positions first, in random order
    real = km.to(torch.int64)
    n_real = real.sum(-1, keepdim=True)
    # each position's rank when real positions come first, in order (pads after them, in order)
    rank = torch.where(km, real.cumsum(-1) - 1, n_real + (1 - real).cumsum(-1) - 1)
    return t.gather(-1, perm).gather(-1, rank)                              # real slot j gets the j-th drawn weight


def top_indices(importance: np.ndarray, k: int) -> list[int]:
    """Indices of the k largest values; ties go to the earlier position (stable)."""
    order = np.argsort(-np.asarray(importance, dtype=np.float64), kind="stable")
    return [int(i) for i in order[:k]]


def as_vector(x: Any, n: int | None = None, what: str = "importance") -> np.ndarray:
    v = np.asarray(getattr(x, "scores", x), dtype=np.float64).reshape(-1)
    if n is not None and v.shape[0] != n:
        raise ValueError(f"{what} has {v.shape[0]} values but the example has {n} real tokens")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{what} has non-finite values")
    return v


__all__ = ["REMOVALS", "Instance", "stack", "prob_fn", "score", "tvd", "Source", "as_source", "EmbeddingForward",
           "real_attention_specs", "key_mask", "uniform_like", "permute_rows", "top_indices", "replace"]
