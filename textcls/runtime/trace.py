"""A timeline of the app's work for the benchmarks (`TEXTCLS_TRACE=FILE`): each line `what start end`, seconds
since the epoch, appended by whichever process did it (the server's page runs and model-worker calls, the
worker's imports and loads). `scripts/bench_app.py --trace` sets it and prints the timeline beside its figures.
Off (nothing written, one dictionary look-up) unless the variable is set."""
from __future__ import annotations

import os
import time
from contextlib import contextmanager

ENV = "TEXTCLS_TRACE"


def record(what: str, start: float, end: float | None = None) -> None:
    """Append `what start end` to the trace file, when there is one; never raises."""
    path = os.environ.get(ENV)
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{what.replace(' ', '_')} {start:.3f} {time.time() if end is None else end:.3f}\n")
    except OSError:
        pass


@contextmanager
def span(what: str):
    """Record the time the block takes as `what` (when tracing)."""
    start = time.time()
    try:
        yield
    finally:
        record(what, start)


def process_start() -> float:
    """When this process started (seconds since the epoch; Linux's /proc), else now."""
    try:
        with open(f"/proc/{os.getpid()}/stat", encoding="ascii") as f:
            ticks = float(f.read().rsplit(")", 1)[1].split()[19])           # field 22: starttime, since boot
        with open("/proc/uptime", encoding="ascii") as f:
            up = float(f.read().split()[0])                                  # now, since boot
        return time.time() - (up - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return time.time()


def read(path: str) -> list[tuple[str, float, float]]:
    """The trace file's (what, start, end) lines, in order of start."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3:
                try:
                    out.append((parts[0], float(parts[1]), float(parts[2])))
                except ValueError:
                    continue
    return sorted(out, key=lambda e: e[1])
