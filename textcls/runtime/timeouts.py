"""How long a distributed job waits for a stuck peer: the one wait that ends a hung run, read from the environment
here without importing torch, so `textcls limits` lists it beside the limits (textcls.runtime.limits).

A torchrun rank that dies is noticed at once by the others (its connection closes). A rank that hangs - stopped,
deadlocked, swapping - is not: the others wait at their next collective (a gradient all-reduce, the gathering of
dev predictions) for `dist_timeout_s()` seconds, then fail with one line each and write no checkpoint.
"""
from __future__ import annotations

import os
from typing import Mapping

DIST_TIMEOUT_ENV = "TEXTCLS_DIST_TIMEOUT"
DIST_TIMEOUT_DEFAULT = 1800
DIST_TIMEOUT_HELP = (
    "Seconds a torchrun rank waits at a collective for the other ranks before it fails (env TEXTCLS_DIST_TIMEOUT): "
    "a hung rank holds the whole job this long; a dead one is noticed at once.")


def dist_timeout_s(environ: Mapping[str, str] | None = None) -> int:
    """TEXTCLS_DIST_TIMEOUT when it is a positive whole number of seconds, else DIST_TIMEOUT_DEFAULT (1800)."""
    raw = (os.environ if environ is None else environ).get(DIST_TIMEOUT_ENV, "")
    try:
        value = int(str(raw).strip())
    except ValueError:
        return DIST_TIMEOUT_DEFAULT
    return value if value >= 1 else DIST_TIMEOUT_DEFAULT


def describe() -> list[tuple[str, int, str]]:
    """(name, value, what it bounds) of each wait, like `limits.describe`."""
    return [("dist_timeout_s", dist_timeout_s(), DIST_TIMEOUT_HELP)]


__all__ = ["DIST_TIMEOUT_DEFAULT", "DIST_TIMEOUT_ENV", "DIST_TIMEOUT_HELP", "describe", "dist_timeout_s"]
