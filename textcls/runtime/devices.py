"""Devices and mixed precision: which torch device to run on (`resolve_device("auto" | "cpu" | "cuda" | "cuda:N"
| "mps")`, a clear `DeviceError` when the device asked for is not there), the AMP setting for a training run
(`resolve_amp`: bf16 / fp16 on CUDA, with a grad scaler for fp16; a warning and float32 elsewhere), and the
batching defaults per device (`loader_defaults`: pinned memory and worker processes on CUDA, both off on the
CPU). `describe_device` says in words where something runs, and `app_device` is where the app predicts
(TEXTCLS_DEVICE, default auto). No distributed code here
(textcls/runtime/distributed.py)."""
from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass

import torch

DEVICE_CHOICES = "auto, cpu, cuda, cuda:N or mps"
AMP_CHOICES = ("off", "auto", "bf16", "fp16")


class DeviceError(ValueError):
    """The device asked for does not exist on this machine (or is not a device name)."""


def mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def resolve_device(device: str | torch.device | None = "auto", local_rank: int | None = None) -> torch.device:
    """The device for `device`; "auto" (or None) is CUDA when available (cuda:`local_rank` under torchrun), else
    the CPU (mps is used only when asked for). Raises DeviceError naming what is missing."""
    if device in (None, "", "auto"):
        if torch.cuda.is_available():
            return torch.device("cuda", (local_rank or 0) % max(1, torch.cuda.device_count()))
        return torch.device("cpu")
    try:
        d = torch.device(device)
    except (RuntimeError, ValueError, TypeError):
        raise DeviceError(f"unknown device {device!r}; use {DEVICE_CHOICES}") from None
    if d.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceError(f"device {str(device)!r} was asked for but CUDA is not available on this machine "
                              f"(torch {torch.__version__}, built {'with' if torch.version.cuda else 'without'} "
                              f"CUDA); use --device cpu or auto")
        if d.index is None and local_rank is not None:
            d = torch.device("cuda", local_rank % torch.cuda.device_count())
        if d.index is not None and d.index >= torch.cuda.device_count():
            raise DeviceError(f"device {str(device)!r}: this machine has {torch.cuda.device_count()} CUDA "
                              f"device(s) (cuda:0 .. cuda:{torch.cuda.device_count() - 1})")
    elif d.type == "mps":
        if not mps_available():
            raise DeviceError(f"device {str(device)!r} was asked for but Apple's MPS backend is not available "
                              f"here; use --device cpu or auto")
    elif d.type != "cpu":
        raise DeviceError(f"unsupported device {str(device)!r}; use {DEVICE_CHOICES}")
    return d


def describe_device(device: torch.device | str) -> str:
    """e.g. "cpu (4 threads)", "cpu (1 thread)", "cuda:0 (NVIDIA H100 80GB HBM3)"."""
    d = torch.device(device)
    if d.type == "cuda" and torch.cuda.is_available():
        return f"{d} ({torch.cuda.get_device_name(d.index or 0)})"
    if d.type == "cpu":
        n = torch.get_num_threads()
        return f"cpu ({n} thread{'' if n == 1 else 's'})"
    return str(d)


def app_device() -> torch.device:
    """Where the app runs predictions: env TEXTCLS_DEVICE (auto, cpu, cuda, cuda:N, mps), default auto - the
    GPU when there is one. A device that is not there falls back to the CPU (the app must start)."""
    import os
    try:
        return resolve_device(os.environ.get("TEXTCLS_DEVICE", "auto") or "auto")
    except DeviceError:
        return torch.device("cpu")


# ---------------------------------------------------------------- mixed precision


@dataclass(frozen=True)
class AmpSetting:
    """What a training run does about mixed precision: `dtype` None = float32 throughout."""
    dtype: torch.dtype | None = None
    scaler: bool = False             # fp16 needs a GradScaler; bf16 does not
    note: str = ""                   # why AMP is off although it was asked for

    @property
    def enabled(self) -> bool:
        return self.dtype is not None

    @property
    def name(self) -> str:
        return {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(self.dtype, "off")  # type: ignore[arg-type]


def resolve_amp(amp: str | bool | None, device: torch.device, warn: bool = True) -> AmpSetting:
    """The AMP setting for `amp` ("off"/None/False, "auto"/True = bf16 where the GPU supports it else fp16,
    "bf16", "fp16") on `device`. Off the GPU it is float32 with a warning (AMP here is a CUDA feature: the
    CPU's bf16 autocast is slower than float32 on most CPUs and changes the numbers)."""
    if amp in (None, False, "off", "none", ""):
        return AmpSetting()
    value = "auto" if amp is True else str(amp).lower()
    if value not in AMP_CHOICES:
        raise ValueError(f"amp must be one of {', '.join(AMP_CHOICES)}, got {amp!r}")
    if device.type != "cuda":
        note = f"--amp {value} has no effect on {device.type}: mixed precision is used on CUDA only; training in float32"
        if warn:
            warnings.warn(note, RuntimeWarning, stacklevel=2)
        return AmpSetting(note=note)
    if value == "auto":
        value = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    if value == "bf16":
        return AmpSetting(torch.bfloat16, scaler=False)
    return AmpSetting(torch.float16, scaler=True)


def autocast(amp: AmpSetting, device: torch.device):
    """The autocast context for a forward pass (a no-op context when AMP is off)."""
    if not amp.enabled:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=amp.dtype)


def grad_scaler(amp: AmpSetting, device: torch.device):
    """A GradScaler for fp16 on CUDA, else None."""
    if not amp.scaler:
        return None
    return torch.amp.GradScaler(device.type)


# ---------------------------------------------------------------- batching defaults


def loader_defaults(device: torch.device, workers: int | None = None, pin_memory: bool | None = None
                    ) -> tuple[int, bool]:
    """(worker processes, pinned memory) for batching on `device`: given values win; the defaults are 2 workers
    and pinned memory on CUDA, none of either elsewhere."""
    on_gpu = device.type == "cuda"
    w = (2 if on_gpu else 0) if workers is None else int(workers)
    if w < 0:
        raise ValueError(f"workers must be >= 0, got {workers}")
    pin = on_gpu if pin_memory is None else bool(pin_memory) and on_gpu
    return w, pin
