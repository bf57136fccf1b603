"""Several processes (or machines) training one model: process-group setup from torchrun's environment, rank
helpers, and the few collectives `training.fit` needs.

`init(device)` joins the group when torchrun started this process (WORLD_SIZE > 1 in the environment) and
returns a `Context` (rank, world size, local rank, backend, device); otherwise a single-process Context and
nothing else happens. The backend is chosen from the device: nccl on CUDA, gloo on the CPU. `context()` is the
Context of the group joined, or the single-process one, so library code asks `context().active` instead of
passing ranks around. Collectives: `all_reduce_sum`, `broadcast`, `barrier` (textcls.data.batching.predict_sharded builds on them),
`wrap_ddp` (DistributedDataParallel around a module, with find_unused_parameters only where a probe pass finds
a parameter without a gradient). `is_peer_failure` tells apart the error a surviving rank gets when another
rank died, so the command line can say so in one line instead of a backend traceback.

Failing a rank on purpose (tests) is a training callback, textcls.train.faults.FailAt.
"""
from __future__ import annotations

import datetime as _dt
import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import torch

from textcls.runtime.devices import resolve_device
from textcls.runtime.timeouts import dist_timeout_s

TIMEOUT_S = dist_timeout_s()         # a hung peer is waited for this long (TEXTCLS_DIST_TIMEOUT; runtime.timeouts)


@dataclass(frozen=True)
class Context:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    backend: str = ""
    device: torch.device = torch.device("cpu")

    @property
    def active(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def describe(self) -> str:
        return f"{self.device} x {self.world_size} process(es)" + (f" ({self.backend})" if self.active else "")


_CURRENT: Context | None = None


def launched_by_torchrun() -> bool:
    """True when the environment says this is one of several torchrun workers."""
    try:
        return int(os.environ.get("WORLD_SIZE", "1")) > 1
    except ValueError:
        return False


def backend_for(device: torch.device) -> str:
    return "nccl" if device.type == "cuda" else "gloo"


def init(device: str | None = "auto") -> Context:
    """Join torchrun's process group (once per process) and return the Context; single-process otherwise.

    Raises ValueError for a device that is not there or a backend torch lacks (one line for the CLI)."""
    global _CURRENT
    if _CURRENT is not None and _CURRENT.active:
        return _CURRENT
    if not launched_by_torchrun():
        return Context(device=resolve_device(device))
    import torch.distributed as dist
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", "0"))
    dev = resolve_device(device, local_rank=local)
    if dev.type == "mps":
        raise ValueError("distributed training on mps is not supported; use cuda or cpu")
    backend = backend_for(dev)
    if not dist.is_available() or (backend == "gloo" and not dist.is_gloo_available()) or \
            (backend == "nccl" and not dist.is_nccl_available()):
        raise ValueError(f"this torch build has no {backend} backend for distributed training on {dev.type}")
    if dev.type == "cuda":
        _one_gpu_each(device, int(os.environ.get("LOCAL_WORLD_SIZE", "1")), torch.cuda.device_count())
        torch.cuda.set_device(dev)
    if not dist.is_initialized():
        kw = {"device_id": dev} if dev.type == "cuda" else {}
        dist.init_process_group(backend, rank=rank, world_size=world,
                                timeout=_dt.timedelta(seconds=TIMEOUT_S), **kw)
    _CURRENT = Context(rank, world, local, backend, dev)
    return _CURRENT


def _one_gpu_each(device, local_world: int, gpus: int) -> None:
    """NCCL needs a GPU of its own for each process of a machine: two ranks on one device fail inside NCCL ("Duplicate
    GPU detected", seen on a 1-GPU H100 with --nproc_per_node=2). Say so before, in one line, with what to do."""
    named = device not in (None, "", "auto") and torch.device(device).index is not None
    if local_world > gpus or (named and local_world > 1):
        where = f"--device {device} puts all of them on one" if named and local_world <= gpus else \
            f"it has {gpus} CUDA device(s)"
        raise ValueError(f"torchrun started {local_world} processes on this machine and {where}: NCCL needs a GPU "
                         f"of its own for each process. Start at most {gpus} per machine (--nproc_per_node={gpus}, "
                         "--device cuda or auto), or train on the CPU with --device cpu (gloo).")


def context() -> Context:
    """The Context of the group this process joined, else a single-process one."""
    return _CURRENT if _CURRENT is not None else Context()


def shutdown(clean: bool = True) -> None:
    """Leave the process group. After a command that ran through (`clean`), every rank first waits for the others
    at a barrier, so none tears its group down while rank 0 still saves; after a failure no barrier (the other
    ranks may be gone). (The process then leaves with os._exit: textcls/__main__.py says why.)"""
    global _CURRENT
    if _CURRENT is not None and _CURRENT.active:
        import torch.distributed as dist
        if dist.is_initialized():
            if clean:
                dist.barrier()
            dist.destroy_process_group()
    _CURRENT = None


# ---------------------------------------------------------------- collectives


def all_reduce_sum(t: torch.Tensor) -> torch.Tensor:
    """Sum of `t` over ranks, in place (a no-op in a single process)."""
    if context().active:
        import torch.distributed as dist
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t


def broadcast(t: torch.Tensor, src: int = 0) -> torch.Tensor:
    """Rank `src`'s `t` on every rank, in place."""
    if context().active:
        import torch.distributed as dist
        dist.broadcast(t, src=src)
    return t


def broadcast_object(obj, src: int = 0):
    """Rank `src`'s picklable `obj` on every rank (the object itself in a single process)."""
    if not context().active:
        return obj
    import torch.distributed as dist
    box = [obj]
    dist.broadcast_object_list(box, src=src)
    return box[0]


def barrier() -> None:
    if context().active:
        import torch.distributed as dist
        dist.barrier()


@contextmanager
def main_first() -> Iterator[None]:
    """Rank 0 runs the block first (e.g. writes a cache), the others after it (and read the cache)."""
    ctx = context()
    if ctx.active and not ctx.is_main:
        barrier()
    yield
    if ctx.active and ctx.is_main:
        barrier()


def wrap_ddp(module: torch.nn.Module, device: torch.device, probe=None) -> torch.nn.Module:
    """DistributedDataParallel around `module`. `probe()`, if given, runs one forward+backward (RNG state kept)
    to see whether every parameter gets a gradient; only then is find_unused_parameters left off."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    unused = False
    if probe is not None:
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            probe()
        unused = any(p.requires_grad and p.grad is None for p in module.parameters())
        module.zero_grad(set_to_none=True)
    ids = [device.index or 0] if device.type == "cuda" else None
    return DDP(module, device_ids=ids, find_unused_parameters=unused)


# ---------------------------------------------------------------- failures


PEER_FAILURE_HINTS = ("connection closed by peer", "connection reset by peer", "broken pipe", "socket timeout",
                      "timed out", "nccl", "gloo", "process group", "connection refused")


def is_peer_failure(e: BaseException) -> bool:
    """Whether `e` is what a collective raises on a surviving rank when another rank failed or was killed."""
    import torch.distributed as dist
    if isinstance(e, getattr(dist, "DistError", ())) or type(e).__name__.startswith("Dist"):
        return True
    text = f"{type(e).__name__}: {e}".lower()
    return isinstance(e, RuntimeError) and any(h in text for h in PEER_FAILURE_HINTS)
