"""Limits that protect the machine, in one place. The library enforces them (checkpoint loading, data files,
training, background jobs), so the CLI, the app and the API give the same verdict and the same message.

Each limit has a default here and an environment variable a server operator can set; the CLI raises the model
and file limits with flags (`train --max-parameters`, `--max-train-memory-mb`, `--max-file-mb`); the browser
cannot raise any of them. `describe()` lists them all for the README, `textcls limits` and the Train page.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, fields


@dataclass(frozen=True)
class Limits:
    max_parameters: int = field(default=20_000_000, metadata={"help": (
        'Model size (parameters, counted from the config before the model is built). The shipped checkpoints '
        'have 0.46-1.98 million; 20 million is ~80 MB of float32 weights and ~320 MB to train with Adam.')})
    max_train_memory_mb: int = field(default=3_000, metadata={"help": (
        'Estimated memory to train one model: weights, gradients and optimiser state plus the activations of '
        'a batch of the longest texts (measured on the built model with a small probe before training '
        'starts).')})
    max_file_mb: int = field(default=500, metadata={"help": (
        'A data file read into memory (CSV/TSV/JSON/JSONL/Parquet).')})
    max_upload_mb: int = field(default=200, metadata={"help": (
        'A file uploaded in the browser (also `server.maxUploadSize` in .streamlit/config.toml).')})
    max_tokens_per_text: int = field(default=5_000, metadata={"help": (
        'Tokens a flat model without a position table reads per text; a config.json asking for more is '
        'clipped.')})
    max_config_bytes: int = field(default=2_000_000, metadata={"help": (
        "A checkpoint's config.json (vocab.json may be 64 MB, history.json 16 MB).")})
    max_jobs: int = field(default=2, metadata={"help": (
        'Training runs at once on one app server (each is CPU-heavy; more would starve the interactive '
        'pages).')})
    job_max_seconds: int = field(default=4 * 3600, metadata={"help": (
        'Wall-clock budget of one training run started in the app; it is stopped (best weights saved) after.')})
    job_max_memory_mb: int = field(default=1_500, metadata={"help": (
        'Estimated memory of one training run started in the app (its model, optimiser and batch).')})
    server_max_memory_mb: int = field(default=4_000, metadata={"help": (
        'Resident memory of the whole app server; past it, running training jobs are stopped (best weights '
        'saved) before the machine swaps or the out-of-memory killer ends the server.')})
    job_threads: int = field(default=1, metadata={"help": (
        'Torch threads of one training run started in the app (it also runs at a lower OS priority).')})

    @classmethod
    def from_env(cls) -> "Limits":
        """The defaults, each replaced by env TEXTCLS_<NAME> (e.g. TEXTCLS_MAX_PARAMETERS) when set to a
        positive integer. TEXTCLS_MAX_JOBS is also the jobs limit (kept from earlier versions)."""
        values = {}
        for f in fields(cls):
            raw = os.environ.get(f"TEXTCLS_{f.name.upper()}")
            try:
                v = int(raw) if raw is not None else None
            except ValueError:
                v = None
            if v is not None and v >= 1:
                values[f.name] = v
        return cls(**values)


class LimitError(ValueError):
    """A request goes over one of the machine-protecting limits; the message names the limit and the fix."""


def current() -> Limits:
    """The limits in force (defaults, overridden by the environment)."""
    return Limits.from_env()


MAX_JSON_BYTES = {"config.json": Limits.max_config_bytes, "vocab.json": 64_000_000, "history.json": 16_000_000}


def describe(limits: Limits | None = None) -> list[tuple[str, int, str]]:
    """(name, value, what it limits) for every limit, in declaration order."""
    limits = limits or current()
    return [(f.name, getattr(limits, f.name), f.metadata["help"]) for f in fields(limits)]


def fmt_mb(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:,.0f} MB"


__all__ = ["Limits", "LimitError", "MAX_JSON_BYTES", "current", "describe", "fmt_mb"]
