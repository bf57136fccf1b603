"""Fault injection for tests: `FailAt(step)` is a training callback (pass it to `fit` among the others) that
makes this process fail just before optimiser step `step` - raising `InjectedFailure`, or with mode="kill"
sending itself SIGKILL - so a test can check what a failed run (or one failed rank of a torchrun job) leaves
behind. `rank` limits it to one rank. Library code reads no environment for it; the command line's one
translation (TEXTCLS_FAIL_RANK / TEXTCLS_FAIL_STEP / TEXTCLS_FAIL_MODE, for subprocess tests) is `from_env`,
called by `textcls train` only."""
from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from typing import Any, Mapping

from textcls.runtime import distributed


class InjectedFailure(RuntimeError):
    """The failure a FailAt callback asked for (tests only)."""


@dataclass
class FailAt:
    """Fail before optimiser step `step` (1-based) on rank `rank` (None: every rank): mode "raise" raises
    InjectedFailure, "kill" sends this process SIGKILL. `source` is named in the message."""
    step: int
    rank: int | None = None
    mode: str = "raise"
    source: str = ""

    def __post_init__(self) -> None:
        if self.mode not in ("raise", "kill"):
            raise ValueError(f"FailAt mode must be raise or kill, got {self.mode!r}")

    def __call__(self, event: Any) -> None:       # a callback: the events themselves are of no interest
        pass

    def before_step(self, step: int) -> None:
        rank = distributed.context().rank
        if step != self.step or (self.rank is not None and self.rank != rank):
            return
        if self.mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise InjectedFailure(f"injected failure on rank {rank} before step {step}"
                              + (f" ({self.source})" if self.source else ""))


def from_env(environ: Mapping[str, str] | None = None) -> list[FailAt]:
    """The command line's test hook: TEXTCLS_FAIL_RANK=R and TEXTCLS_FAIL_STEP=S make rank R fail before step S
    (TEXTCLS_FAIL_MODE=kill: SIGKILL). [] when they are unset."""
    env = os.environ if environ is None else environ
    rank, step = env.get("TEXTCLS_FAIL_RANK"), env.get("TEXTCLS_FAIL_STEP")
    if rank is None or step is None:
        return []
    return [FailAt(int(step), int(rank), "kill" if env.get("TEXTCLS_FAIL_MODE") == "kill" else "raise",
                   "TEXTCLS_FAIL_RANK/TEXTCLS_FAIL_STEP")]


__all__ = ["FailAt", "InjectedFailure", "from_env"]
