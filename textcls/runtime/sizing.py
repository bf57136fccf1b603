"""How big a model and its training run are, found before they cost anything: parameters counted on torch's
"meta" device (shapes only, no memory, milliseconds even for a billion parameters) and training memory
measured on a small probe. `check_training` and `textcls.runtime.limits.check_parameters` compare them with
the limits.

The training estimate is weights + gradients + two Adam moments (4 x 4 bytes per parameter) plus the
activations autograd saves for one batch of the longest texts. Those are measured, not guessed: one forward
and backward pass of the built model on a single text at three short lengths, with `saved_tensors_hooks`
summing the bytes saved for the backward pass; the three points fit a quadratic in the length (attention is
quadratic, convolutions linear), which is extrapolated to the tokenizer's longest text and scaled by the
batch size. Hierarchical inputs (HCAN) are probed on two sentences and scaled by the sentence count.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from textcls.runtime.limits import LimitError, Limits, current, fmt_mb

BYTES_PER_TRAINED_PARAMETER = 16     # float32 weight + gradient + Adam's two moments
PROBE_LENGTHS = (16, 32, 64)


def _broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """numpy's broadcasting rule (torch.broadcast_shapes imports sympy on its first call)."""
    out: list[int] = []
    for dims in zip(*(((1,) * (max(map(len, shapes)) - len(s)) + s) for s in shapes)):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise RuntimeError(f"shapes {shapes} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


class _NoRandomInit(torch.overrides.TorchFunctionMode):
    """Inside a meta-device build: the in-place random fills of weight initialisation return their tensor
    unchanged, and the tensors and arithmetic of initialisation come straight from torch.empty on the meta device.
    A meta tensor has no values, and torch runs these ops through Python references whose first call imports
    torch._dynamo and sympy (1-2.5 s, on the first page that lists checkpoints in full). The mode
    is thread-local, like every torch function mode: a model built at the same time in another thread (a
    training job) is initialised as usual."""

    FILLS = frozenset({"normal_", "uniform_", "random_", "exponential_", "geometric_", "log_normal_", "cauchy_",
                       "bernoulli_"})
    # elementwise arithmetic of initialisation (e.g. randn(d) / sqrt(d)): the result's shape and dtype, no values
    ELEMENTWISE = frozenset({"mul", "div", "add", "sub", "neg", "sqrt", "pow", "__mul__", "__rmul__", "__truediv__",
                             "__rtruediv__", "__add__", "__radd__", "__sub__", "__rsub__", "__neg__", "__pow__"})

    # tensors created at initialisation: torch.empty on the meta device (their Python references import sympy)
    CREATE = frozenset({"randn", "rand", "zeros", "ones", "empty"})

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in self.CREATE and func is getattr(torch, name, None) and kwargs.get("out") is None \
                and kwargs.get("device") in (None, "meta", torch.device("meta")):
            return torch.empty(*args, dtype=kwargs.get("dtype"), device="meta",
                               requires_grad=bool(kwargs.get("requires_grad", False)))
        if name in self.FILLS:
            target = args[0] if args else kwargs.get("tensor", kwargs.get("self"))   # nn.init passes tensor=
            if isinstance(target, torch.Tensor) and target.is_meta:
                return target
        elif name in self.ELEMENTWISE and not kwargs:
            tensors = [a for a in args if isinstance(a, torch.Tensor)]
            if tensors and all(t.is_meta for t in tensors) and \
                    all(isinstance(a, (torch.Tensor, int, float, bool)) for a in args):
                shape = _broadcast([tuple(t.shape) for t in tensors])
                return torch.empty(shape, dtype=torch.result_type(*args[:2]) if len(args) > 1 else tensors[0].dtype,
                                   device="meta")
        return func(*args, **kwargs)


def meta_model(cls, config) -> torch.nn.Module:
    """`cls(config)` built on the meta device: every parameter has its shape and no storage (and no values:
    the random fills of initialisation are skipped, `_NoRandomInit`)."""
    with torch.device("meta"), _NoRandomInit():
        return cls(config)


def count_parameters(cls, config) -> int:
    """Parameters of `cls(config)`, counted without allocating them."""
    return sum(p.numel() for p in meta_model(cls, config).parameters())


def _saved_bytes(model: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor) -> int:
    """Bytes autograd saves for the backward pass of model(ids, mask) (each storage counted once)."""
    seen: dict[Any, int] = {}
    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}

    def pack(t: torch.Tensor):
        try:
            key = (t.untyped_storage().data_ptr(), t.device.type)
            if key[0] in weights:        # a weight saved for backward is counted with the weights
                return t
            seen[key] = max(seen.get(key, 0), t.untyped_storage().nbytes())
        except (RuntimeError, NotImplementedError):
            seen[id(t)] = t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(ids, mask)
    out.logits.float().sum().backward()
    model.zero_grad(set_to_none=True)
    return int(sum(seen.values()))


def activation_bytes(model: torch.nn.Module, batch_size: int, max_len: int,
                     hierarchical: bool = False, max_sentences: int = 1) -> int:
    """Estimated bytes of activations saved when training on a batch of `batch_size` texts of `max_len`
    tokens (hierarchical: `max_sentences` sentences of `max_len` words). See the module docstring."""
    was_training = model.training
    model.train()
    points = []
    top = getattr(getattr(model, "config", None), "position_limit", None) or PROBE_LENGTHS[-1]
    lengths = sorted({max(1, min(n, top)) for n in PROBE_LENGTHS})   # a model with a short position table
    torch_rng = torch.get_rng_state()
    try:
        for n in lengths:
            shape = (1, 2, n) if hierarchical else (1, n)
            ids = torch.full(shape, 2, dtype=torch.long)
            mask = torch.ones(shape, dtype=torch.bool)
            points.append(_saved_bytes(model, ids, mask))
    finally:
        torch.set_rng_state(torch_rng)
        model.train(was_training)
    coef = np.polyfit(np.asarray(lengths, dtype=float), np.asarray(points, dtype=float), len(lengths) - 1)
    at = max(float(np.polyval(coef, max_len)), float(points[-1]) * max_len / lengths[-1], 0.0)
    per_text = at * (max(1, max_sentences) / 2 if hierarchical else 1)
    return int(per_text * batch_size)


def training_bytes(model: torch.nn.Module, batch_size: int, tokenizer_config) -> dict[str, int]:
    """{"parameters", "weights_and_optimiser", "activations", "total"} for training `model` (built, on the CPU)
    with batches of `batch_size` texts cut by `tokenizer_config`."""
    n = sum(p.numel() for p in model.parameters())
    trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    hier = bool(getattr(tokenizer_config, "hierarchical", False))
    length = int(tokenizer_config.max_words if hier else tokenizer_config.max_len)
    acts = activation_bytes(model, batch_size, length, hier, int(getattr(tokenizer_config, "max_sentences", 1)))
    fixed = 4 * n + (BYTES_PER_TRAINED_PARAMETER - 4) * trained
    return {"parameters": n, "weights_and_optimiser": fixed, "activations": acts, "total": fixed + acts}


def check_training(estimate: dict[str, int], limits: Limits | None = None, cap_mb: int | None = None,
                   where: str = "on the command line (--max-train-memory-mb) or with env "
                                "TEXTCLS_MAX_TRAIN_MEMORY_MB") -> None:
    """Raise LimitError when the estimate is over `cap_mb` (default: limits.max_train_memory_mb)."""
    limits = limits or current()
    cap = cap_mb if cap_mb is not None else limits.max_train_memory_mb
    if estimate["total"] > cap * 2**20:
        raise LimitError(
            f"training would need about {fmt_mb(estimate['total'])} ({fmt_mb(estimate['weights_and_optimiser'])} "
            f"for weights and optimiser, {fmt_mb(estimate['activations'])} for one batch's activations), over the "
            f"limit of {cap:,} MB; use a smaller batch size, shorter texts (max_len) or a smaller model, or raise "
            f"the limit {where}")


__all__ = ["BYTES_PER_TRAINED_PARAMETER", "activation_bytes", "check_training",
           "count_parameters", "meta_model", "training_bytes"]
