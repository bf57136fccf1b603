"""Which torch device to run on: `resolve_device("auto" | "cpu" | "cuda" | "cuda:N" | "mps")`, with a clear
error when the device asked for is not there."""
from __future__ import annotations

import torch


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """The device for `device`; "auto" (or None) is CUDA when available, else the CPU."""
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    d = torch.device(device)
    if d.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for but CUDA is not available")
    return d
