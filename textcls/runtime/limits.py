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
    max_pretrained_parameters: int = field(default=150_000_000, metadata={"help": (
        'Size of a Hugging Face model opened or fine-tuned (parameters, counted from its config on the meta device '
        'before it is built). minilm-sst2 has 22.7 million, BERT-base 110 million (~440 MB of float32 weights).')})
    max_train_memory_mb: int = field(default=3_000, metadata={"help": (
        'Estimated memory to train one model: weights, gradients and optimiser state plus the activations of '
        'a batch of the longest texts (measured on the built model with a small probe before training '
        'starts).')})
    max_file_mb: int = field(default=500, metadata={"help": (
        'A data file read into memory (CSV/TSV/JSON/JSONL/Parquet), counted as decompressed bytes while a .gz '
        'file is read.')})
    max_file_rows: int = field(default=5_000_000, metadata={"help": (
        'Rows of a data file read into memory (each row costs about 100 bytes of Python objects beyond its '
        'text); more rows: train with --arrow.')})
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
    explain_max_memory_mb: int = field(default=1_024, metadata={"help": (
        'Working memory of one explanation of one text (a request of `explain`, Inspect or Attribute), beyond the '
        'model. The context-mixing methods work through the positions in chunks sized to fit it (value zeroing: '
        'zeroed copies of a layer; norm, GlobEnc, ALTI, DecompX: rows of position x position x hidden); DecompX '
        'also keeps every position\'s parts of every position (2 x pieces^2 x hidden floats) and refuses a text '
        'whose parts alone exceed it (MiniLM: all 512 pieces fit in 1,024 MB). Occlusion, LIME and Shapley run '
        'fewer perturbed copies per forward pass to fit; integrated gradients keeps its own caps (about 800 MB on '
        'MiniLM at 512 pieces).')})

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

# The bounds of every count a command or a library call takes: (smallest, largest or None, what it counts). A
# count past its bound is refused before anything is allocated (a billion IG steps or attention permutations,
# 100,000 worker processes); the CLI checks them at parse time (exit 2), the library where the count is used.
COUNTS: dict[str, tuple[int, int | None, str]] = {
    "batch_size": (1, 65_536, "texts per batch"),
    "eval_batch_size": (1, 65_536, "texts per evaluation batch"),
    "epochs": (1, 100_000, "training epochs"),
    "workers": (0, 64, "batch-padding worker processes"),
    "num_proc": (1, 64, "tokenising processes"),
    "threads": (1, 1_024, "torch threads"),
    "load": (0, 64, "busy background processes"),
    "steps": (1, 2_000, "integrated-gradients steps"),
    "permutations": (1, 10_000, "attention permutations per text"),
    "random_orders": (0, 1_000, "random erasure orders per text"),
    "limit": (1, None, "texts per split"),
    "examples": (0, 100_000, "examples shown"),
    "max_len": (1, 1_000_000, "tokens per text"),
    "seq_len": (1, 1_000_000, "tokens per input"),
    "min_freq": (1, None, "occurrences a word needs to enter the vocabulary"),
    "max_vocab": (2, None, "vocabulary entries (<pad> and <unk> included)"),
    "extra_vocab": (0, 10_000_000, "extra GloVe words"),
    "patience": (1, 100_000, "epochs without dev gain"),
    "max_steps": (1, None, "optimiser steps"),
    "runs": (1, 1_000, "runs per cell"),
    "seed": (0, 2**32 - 1, "random seed"),
    "sanity": (0, 100_000, "texts of the randomisation check (0: none)"),
    "chunk": (1, 1_000_000, "texts per step"),
    "beam": (0, 50, "beam width of the NAOPC bounds (0: exact bounds on short texts only)"),
}


def count_problem(name: str, value) -> str | None:
    """What is wrong with `value` for the count `name` (COUNTS), e.g. "must be >= 1 and <= 64 (...), got 0";
    None when it is fine."""
    lo, hi, what = COUNTS[name]
    if isinstance(value, bool) or not isinstance(value, int):
        return f"must be a whole number ({what}), got {value!r}"
    if value < lo or (hi is not None and value > hi):
        bound = f">= {lo:,}" if hi is None else f">= {lo:,} and <= {hi:,}"
        return f"must be {bound} ({what}), got {value:,}"
    return None


def check_count(name: str, value, label: str | None = None) -> int:
    """`value` when it is a whole number inside COUNTS[name]'s bounds, else LimitError (a ValueError) naming
    `label` (default: `name`) and the bounds."""
    problem = count_problem(name, value)
    if problem:
        raise LimitError(f"{label or name} {problem}")
    return value


def describe(limits: Limits | None = None) -> list[tuple[str, int, str]]:
    """(name, value, what it limits) for every limit, in declaration order."""
    limits = limits or current()
    return [(f.name, getattr(limits, f.name), f.metadata["help"]) for f in fields(limits)]


def check_parameters(n: int, limits: Limits | None = None, what: str = "the model") -> None:
    """Raise LimitError when `n` parameters exceed `limits.max_parameters`."""
    limits = limits or current()
    if n > limits.max_parameters:
        raise LimitError(f"{what} would have {n:,} parameters ({fmt_mb(4 * n)} of weights), over the limit of "
                         f"{limits.max_parameters:,} parameters; make it smaller (fewer filters, heads, layers or "
                         "a smaller vocabulary), or raise the limit on the command line (--max-parameters) "
                         "or with env TEXTCLS_MAX_PARAMETERS")


def fmt_mb(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:,.0f} MB"


__all__ = ["COUNTS", "Limits", "LimitError", "MAX_JSON_BYTES", "check_count", "check_parameters", "count_problem",
           "current", "describe", "fmt_mb"]
