"""Training-data attribution with TracIn (Pruthi et al. 2020, "Estimating Training Data Influence by Tracing
Gradient Descent"): the influence of a training example z on a test example z' is the sum, over the checkpoints
saved during training, of lr_t * grad L(z; w_t) . grad L(z'; w_t) (TracInCP). Positive: the training steps on z
lowered the loss of z' (a proponent); negative: they raised it (an opponent). Self-influence (z' = z) is large for
the examples whose loss training kept fighting for; mislabelled examples rank high.

What training saves (`Snapshots`, the file SNAPSHOT_FILE of a checkpoint folder, collected by
textcls.train.snapshots): per epoch the output layer's weight and bias ("last", the default: a few KB) or every
weight ("full"), the epoch's learning rate, and the epoch whose weights the checkpoint holds (the best dev epoch
when early stopping restored it). Only epochs up to that one are summed: the trajectory that made the weights.

Two computations; captum.influence is the reference (TracInCP, TracInCPFast, TracInCPFastRandProj):
- "fast" (captum's TracInCPFast): the output layer's gradient only. For cross-entropy it is an outer product,
  dL/dW = g h^T and dL/db = g with g = softmax(logits) - onehot(y) and h the layer's input, so the dot product of
  two such gradients is (g . g')(h . h' + 1): one forward pass per example, no backward pass. With "last"
  snapshots h comes from the checkpoint's weights (the layers below the output layer as trained) and the logits
  from each epoch's output layer; with "full" snapshots both come from each epoch's model. Captum drops the
  bias's term; we keep it (the +1, as a 1 appended to h). `projection` d > 0 replaces [h, 1] by [h, 1] P, P a
  seeded Gaussian (D + 1, d) matrix of variance 1/d (TracInCPFastRandProj, unbiased; captum also projects g,
  which has only as many entries as there are classes here).
- `normalize`: each epoch's dot product divided by the two gradients' norms (their cosine; Hanawa et al. 2021,
  "Evaluation of Similarity-based Explanations"): raw TracIn's proponents are dominated by the training examples
  with the largest gradients, the same few for every text (docs/influence.md), the cosine's resemble the text.
- "exact" (TracInCP): per-example gradients by autograd, one backward pass per example and epoch, of the output
  layer's parameters ("last" snapshots) or of every trained parameter ("full"), streamed: memory is one gradient
  per test text.
The loss is the classifier's cross-entropy (a model's extra loss, ACT's centre loss, is left out); dropout is off.
"""
from __future__ import annotations

import copy
import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Callable, Iterator, Sequence

import torch
import torch.nn.functional as F

from textcls.data.batching import EncodedSplit, encode_split, model_device
from textcls.runtime.files import read_regular

SNAPSHOT_FILE = "tracin.safetensors"          # in the checkpoint folder (textcls.checkpoint.native lists it)
FORMAT = "textcls-tracin"
KINDS = ("last", "full")
METHODS = ("fast", "exact")
MAX_SNAPSHOT_BYTES = 2_000_000_000
Progress = Callable[[int, int], None]


# ---------------------------------------------------------------- the saved epochs

@dataclass
class Snapshots:
    """The epochs a training run saved for TracIn."""

    kind: str                                  # "last": the output layer's weight and bias; "full": every weight
    layer: str                                 # the output layer's module name ("fc", "out")
    epochs: list[int]
    lrs: list[float]                           # each epoch's learning rate (at its end)
    final_epoch: int                           # the epoch whose weights the checkpoint holds
    states: list[dict[str, torch.Tensor]]      # per epoch: {"weight", "bias"} of the layer, or the model's state

    def trajectory(self) -> list[int]:
        """Positions (into `epochs`) of the epochs summed over: those up to `final_epoch`."""
        return [i for i, e in enumerate(self.epochs) if e <= self.final_epoch]

    def layer_state(self, i: int) -> dict[str, torch.Tensor]:
        """The output layer's {"weight", "bias"} at position i."""
        s = self.states[i]
        if self.kind == "last":
            return dict(s)
        prefix = self.layer + "."
        return {k[len(prefix):]: v for k, v in s.items() if k.startswith(prefix)}


def pack_snapshots(snaps: Snapshots, float16: bool = False) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """(tensors, metadata) of SNAPSHOT_FILE: tensor "EPOCH:NAME" per epoch, the rest as JSON strings."""
    tensors = {}
    for epoch, state in zip(snaps.epochs, snaps.states):
        for name, t in state.items():
            t = t.detach().to("cpu").contiguous().clone()
            tensors[f"{epoch}:{name}"] = t.half() if float16 and t.dtype == torch.float32 else t
    meta = {"format": FORMAT, "kind": snaps.kind, "layer": snaps.layer, "epochs": json.dumps(snaps.epochs),
            "lrs": json.dumps(snaps.lrs), "final_epoch": json.dumps(snaps.final_epoch)}
    return tensors, meta


def unpack_snapshots(tensors: dict[str, torch.Tensor], meta: dict[str, str]) -> Snapshots:
    """Snapshots from the file's tensors and metadata; ValueError (one line) when they do not make one."""
    if meta.get("format") != FORMAT or meta.get("kind") not in KINDS or not meta.get("layer"):
        raise ValueError(f"not a {FORMAT} file (format, kind or layer missing)")
    try:
        epochs, lrs, final = (json.loads(meta[k]) for k in ("epochs", "lrs", "final_epoch"))
    except (KeyError, ValueError, RecursionError):
        raise ValueError("its epochs, learning rates or final epoch are not readable") from None
    if not (isinstance(epochs, list) and epochs and all(type(e) is int and e > 0 for e in epochs)
            and epochs == sorted(set(epochs))):
        raise ValueError("its epochs must be increasing whole numbers")
    if not (isinstance(lrs, list) and len(lrs) == len(epochs)
            and all(isinstance(x, (int, float)) and math.isfinite(x) and x > 0 for x in lrs)):
        raise ValueError("it needs one positive learning rate per epoch")
    if type(final) is not int or final not in epochs:
        raise ValueError(f"its final epoch {final!r} is not one of its epochs")
    states: list[dict[str, torch.Tensor]] = [{} for _ in epochs]
    at = {e: i for i, e in enumerate(epochs)}
    for key, t in tensors.items():
        epoch, _, name = key.partition(":")
        if not epoch.isdigit() or int(epoch) not in at or not name:
            raise ValueError(f"tensor {key[:80]!r} names no saved epoch")
        if not t.is_floating_point() or not bool(torch.isfinite(t).all()):
            raise ValueError(f"tensor {key[:80]!r} is not finite floating point")
        states[at[int(epoch)]][name] = t.float()
    names = {frozenset(s) for s in states}
    if len(names) != 1 or any({k: v.shape for k, v in s.items()} != {k: v.shape for k, v in states[0].items()}
                              for s in states):
        raise ValueError("its epochs do not hold the same tensors")
    snaps = Snapshots(meta["kind"], meta["layer"], epochs, [float(x) for x in lrs], final, states)
    layer = snaps.layer_state(0)
    if set(layer) - {"weight", "bias"} or layer.get("weight") is None or layer["weight"].dim() != 2:
        raise ValueError(f"it holds no output layer {snaps.layer!r} (a weight matrix and a bias)")
    return snaps


def read_snapshots(folder: str | Path) -> Snapshots | None:
    """The Snapshots of a checkpoint folder, None without SNAPSHOT_FILE; ValueError (one line naming the file)
    when it is not a regular file in the folder, is too big, or is not a snapshot file."""
    path = Path(folder) / SNAPSHOT_FILE
    if not path.exists() and not path.is_symlink():
        return None
    data = read_regular(path, MAX_SNAPSHOT_BYTES, SNAPSHOT_FILE)
    from safetensors.torch import load
    try:
        n = struct.unpack("<Q", data[:8])[0]
        meta = json.loads(data[8:8 + n].decode("utf-8")).get("__metadata__") or {}
        tensors = load(data)
    except Exception as e:  # noqa: BLE001 - safetensors raises its own error types
        raise ValueError(f"{SNAPSHOT_FILE} is not a safetensors file ({type(e).__name__})") from None
    try:
        return unpack_snapshots(tensors, meta)
    except ValueError as e:
        raise ValueError(f"{SNAPSHOT_FILE}: {e}") from None


def final_snapshot(model: torch.nn.Module) -> Snapshots:
    """The final checkpoint as the only "epoch" (its output layer, learning rate 1): TracIn reduced to one term, the
    dot product of the two loss gradients at the final weights - for a checkpoint trained without saved epochs.
    Rankings do not depend on the learning rate; the sum over a training run's epochs is what it leaves out."""
    from textcls.models.layers import output_layer
    layer = output_layer(model)
    if layer is None:
        raise ValueError(f"{type(model).__name__} has no output layer that maps to its classes")
    name = next(n for n, m in model.named_modules() if m is layer)
    state = {"weight": layer.weight.detach().clone(),                                   # (C, F)
             "bias": layer.bias.detach().clone() if layer.bias is not None else torch.zeros(layer.out_features)}
    return Snapshots("last", name, [0], [1.0], 0, [state])


def check_fits(snaps: Snapshots, model: torch.nn.Module) -> None:
    """ValueError unless the snapshots fit `model` (its output layer, or its whole state for "full"); works on a
    model built on the meta device."""
    mod = dict(model.named_modules()).get(snaps.layer)
    if not isinstance(mod, torch.nn.Linear):
        raise ValueError(f"{SNAPSHOT_FILE}: the model has no linear output layer {snaps.layer!r}")
    want = ({k: tuple(v.shape) for k, v in mod.state_dict().items()} if snaps.kind == "last" else
            {k: tuple(v.shape) for k, v in model.state_dict().items() if v.is_floating_point()})
    got = {k: tuple(v.shape) for k, v in snaps.states[0].items()}
    if got != want:
        bad = sorted(set(got) ^ set(want)) or sorted(k for k in got if got[k] != want[k])
        what = "output layer" if snaps.kind == "last" else "weights"
        raise ValueError(f"{SNAPSHOT_FILE}: its tensors do not fit the model's {what} ({', '.join(bad[:3])})")


def at_epoch(model: torch.nn.Module, snaps: Snapshots, i: int) -> torch.nn.Module:
    """A copy of `model` holding the weights of position i (the output layer's only, for "last"), in eval mode."""
    m = copy.deepcopy(model).eval()
    target = dict(m.named_modules())[snaps.layer] if snaps.kind == "last" else m
    target.load_state_dict(snaps.states[i], strict=snaps.kind == "last")
    return m


# ---------------------------------------------------------------- what the fast variant needs per example

def encode(tokenizer, texts: Sequence[str], labels: Sequence[int]) -> EncodedSplit:
    """Texts and their label indices encoded for the model (one pass of the tokenizer)."""
    return encode_split(tokenizer, SimpleNamespace(texts=list(texts), labels=list(labels)))


@torch.no_grad()
def layer_inputs(model: torch.nn.Module, layer: str, enc: EncodedSplit, batch_size: int = 128,
                 progress: Progress | None = None, done: int = 0, total: int | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """(h, logits): the output layer's input (N, D) and the logits (N, C) of every example, in eval mode, batches
    formed by length; `progress(done + examples so far, total)` after each batch."""
    mod = dict(model.named_modules()).get(layer)
    if not isinstance(mod, torch.nn.Linear):
        raise ValueError(f"the model has no linear output layer {layer!r}")
    seen: list[torch.Tensor] = []
    hook = mod.register_forward_pre_hook(lambda m, args: seen.append(args[0].detach()))
    was_training, device = model.training, model_device(model)
    model.eval()
    h = torch.zeros(len(enc), mod.in_features)                                   # (N, D)
    logits = torch.zeros(len(enc), mod.out_features)                              # (N, C)
    order = sorted(range(len(enc)), key=lambda i: enc.lengths[i])
    try:
        for s in range(0, len(order), batch_size):
            index = order[s:s + batch_size]
            ids, mask, _ = enc.batch(index, device)                               # (B, L) or (B, S, W)
            seen.clear()
            out = model(ids, mask).logits                                         # (B, C)
            if len(seen) != 1 or seen[0].shape != (len(index), mod.in_features):
                raise ValueError(f"the output layer {layer!r} did not see one (B, D) input per text")
            h[index] = seen[0].float().cpu()
            logits[index] = out.float().cpu()
            if progress is not None:
                progress(done + s + len(index), total or len(order))
    finally:
        hook.remove()
        model.train(was_training)
    return h, logits


def loss_gradients(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """d cross-entropy / d logits per example: softmax(logits) - onehot(labels), (N, C)."""
    return torch.softmax(logits.float(), -1) - F.one_hot(labels.long(), logits.shape[-1]).float()   # (N, C)


def projection_matrix(dim_in: int, dim: int, seed: int = 0) -> torch.Tensor:
    """A seeded Gaussian (dim_in, dim) matrix with entries of variance 1/dim: E[(xP).(yP)] = x.y."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(dim_in, dim, generator=gen) / math.sqrt(dim)              # (D, d)


@dataclass
class Quantities:
    """What the fast variant's dot products need for a set of examples: h (E or 1, N, D') the output layer's
    input with a 1 appended for its bias (projected to D' = d when asked; one row for all epochs with "last"
    snapshots), g (E, N, C) the loss gradients w.r.t. the logits, lrs (E,), and the logits of the checkpoint's
    own weights (N, C)."""

    h: torch.Tensor
    g: torch.Tensor
    lrs: torch.Tensor
    logits: torch.Tensor

    def at(self, e: int) -> torch.Tensor:
        return self.h[e if self.h.shape[0] > 1 else 0]                            # (N, D')


def fast_quantities(model: torch.nn.Module, snaps: Snapshots, enc: EncodedSplit, labels: torch.Tensor,
                    projection: int = 0, seed: int = 0, progress: Progress | None = None) -> Quantities:
    """`Quantities` of the examples `enc` with gold (or asked-about) `labels` (N,), over the trajectory."""
    traj = snaps.trajectory()
    bias = dict(model.named_modules())[snaps.layer].bias is not None
    n = len(enc)
    if snaps.kind == "last":
        h, logits = layer_inputs(model, snaps.layer, enc, progress=progress)        # (N, D), (N, C)
        hs = h[None]                                                              # (1, N, D)
        g = torch.stack([loss_gradients(F.linear(h, s["weight"], s.get("bias")), labels)
                         for s in (snaps.layer_state(i) for i in traj)])          # (E, N, C)
    else:
        runs = [layer_inputs(at_epoch(model, snaps, i), snaps.layer, enc, progress=progress, done=k * n,
                             total=len(traj) * n) for k, i in enumerate(traj)]
        hs = torch.stack([h for h, _ in runs])                                    # (E, N, D)
        g = torch.stack([loss_gradients(lg, labels) for _, lg in runs])           # (E, N, C)
        logits = runs[-1][1]                                                      # the final epoch's (N, C)
    if bias:
        hs = torch.cat([hs, torch.ones(*hs.shape[:2], 1)], -1)                   # (E|1, N, D + 1)
    if projection:
        hs = hs @ projection_matrix(hs.shape[-1], projection, seed)               # (E|1, N, d)
    lrs = torch.tensor([snaps.lrs[i] for i in traj])                               # (E,)
    return Quantities(hs, g, lrs, logits)


def fast_scores(test: Quantities, train: Quantities, normalize: bool = False) -> torch.Tensor:
    """TracIn restricted to the output layer, (T, N): sum_e lr_e (g_e . g'_e)(h_e . h'_e); with `normalize` each
    epoch's term divided by the two gradients' norms |g_e||h_e| |g'_e||h'_e| (their cosine)."""
    out = torch.zeros(test.g.shape[1], train.g.shape[1])                          # (T, N)
    for e in range(len(train.lrs)):
        term = (test.g[e] @ train.g[e].T) * (test.at(e) @ train.at(e).T)         # (T, N)
        if normalize:
            term = term / torch.outer(_norms(test, e), _norms(train, e)).clamp_min(1e-12)
        out += train.lrs[e] * term
    return out


def _norms(q: Quantities, e: int) -> torch.Tensor:
    """The norm of each example's output-layer gradient at epoch e, |g_e| |h_e|: (N,)."""
    return q.g[e].norm(dim=-1) * q.at(e).norm(dim=-1)


def fast_self_influence(q: Quantities) -> torch.Tensor:
    """Self-influence of every example, (N,): sum_e lr_e |g_e|^2 |h_e|^2."""
    return sum(q.lrs[e] * q.g[e].pow(2).sum(-1) * q.at(e).pow(2).sum(-1) for e in range(len(q.lrs)))  # (N,)


# ---------------------------------------------------------------- the exact computation (autograd)

def per_example_gradients(forward: Callable[[int], torch.Tensor], params: Sequence[torch.Tensor], n: int
                          ) -> Iterator[torch.Tensor]:
    """For i in range(n), the gradient of the loss `forward(i)` (a scalar) w.r.t. `params`, flattened (P,)."""
    for i in range(n):
        with torch.enable_grad():
            grads = torch.autograd.grad(forward(i), list(params), allow_unused=True)
        yield torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1).float()
                         for p, g in zip(params, grads)])                         # (P,)


def exact_influence(model: torch.nn.Module, snaps: Snapshots, train: EncodedSplit, train_y: torch.Tensor,
                    test: EncodedSplit | None = None, test_y: torch.Tensor | None = None, params: str = "saved",
                    progress: Progress | None = None, normalize: bool = False
                    ) -> tuple[torch.Tensor | None, torch.Tensor]:
    """TracInCP by autograd: (scores (T, N) of each training example on each test example, or None without
    `test`; self-influence (N,)). `params`: "saved" - the output layer's parameters for "last" snapshots, every
    floating parameter that has a gradient for "full"; "last" - the output layer's only. `normalize`: the
    scores from unit gradients (their cosine; self-influence stays unnormalised)."""
    traj = snaps.trajectory()
    t = 0 if test is None else len(test)
    scores = None if test is None else torch.zeros(t, len(train))                 # (T, N)
    self_inf = torch.zeros(len(train))                                            # (N,)
    device = model_device(model)
    for k, i in enumerate(traj):
        m = at_epoch(model, snaps, i)
        layer = dict(m.named_modules())[snaps.layer]
        ps = list(layer.parameters()) if snaps.kind == "last" or params == "last" else \
            [p for p in m.parameters() if p.is_floating_point() and p.requires_grad]
        for p in ps:
            p.requires_grad_(True)

        def loss(enc: EncodedSplit, y: torch.Tensor) -> Callable[[int], torch.Tensor]:
            def one(j: int) -> torch.Tensor:
                ids, mask, _ = enc.batch([j], device)                              # (1, L)
                return F.cross_entropy(m(ids, mask).logits.float(), y[j:j + 1].to(device), reduction="sum")
            return one
        lr = snaps.lrs[i]
        g_test = None if test is None else torch.stack(list(per_example_gradients(loss(test, test_y), ps, t)))
        if g_test is not None and normalize:
            g_test = g_test / g_test.norm(dim=-1, keepdim=True).clamp_min(1e-12)  # (T, P)
        for j, g in enumerate(per_example_gradients(loss(train, train_y), ps, len(train))):
            self_inf[j] += lr * g.dot(g)
            if g_test is not None:
                unit = g / g.norm().clamp_min(1e-12) if normalize else g         # (P,)
                scores[:, j] += lr * (g_test @ unit)                              # (T,)
            if progress is not None and (j + 1) % 64 == 0:
                progress(k * len(train) + j + 1, len(traj) * len(train))
    return scores, self_inf


# ---------------------------------------------------------------- rankings

def top_k(scores: torch.Tensor, k: int, largest: bool = True, sign: bool = True) -> list[tuple[int, float]]:
    """The k highest (or lowest) scores of a (N,) vector as (index, score), best first; with `sign` only
    positive scores (largest) or negative ones (lowest). k = 0: all of them."""
    k = len(scores) if k <= 0 else min(k, len(scores))
    vals, idx = torch.topk(scores, k, largest=largest)
    out = [(int(i), float(v)) for i, v in zip(idx, vals)]
    return [(i, v) for i, v in out if v > 0] if sign and largest else \
        [(i, v) for i, v in out if v < 0] if sign else out


__all__ = ["FORMAT", "KINDS", "METHODS", "SNAPSHOT_FILE", "Quantities", "Snapshots", "at_epoch", "check_fits",
           "encode", "exact_influence", "fast_quantities", "fast_scores", "fast_self_influence", "layer_inputs",
           "loss_gradients", "pack_snapshots", "per_example_gradients", "projection_matrix", "read_snapshots",
           "top_k", "unpack_snapshots"]
