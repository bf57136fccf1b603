"""Background load for the latency benchmark: busy processes that are always stopped (BusyLoad), the CPU other
processes use (cpu_seconds, others_cores), the checkpoints it times by default. No torch: the CLI reads it."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Sequence

LATENCY_PATTERN = "*-sst2"            # the shipped sst2 checkpoints (`bench --latency --pattern`)

BUSY_LOOP = ("import os\nparent = os.getppid()\ni = 0\nwhile True:\n    i += 1\n"
             "    if i % 1000000 == 0 and os.getppid() != parent:\n        break\n")


class BusyLoad:
    """`n` busy background processes (`python -c "while True: pass"`, plus a parent check), started on entry
    and always stopped (terminate, then kill) on exit - also on an exception or Ctrl-C; should this process be
    killed outright, each stops by itself within a fraction of a second when it sees its parent gone.
    `pids` lists them while they run."""

    def __init__(self, n: int, settle: float = 0.5):
        if n < 0:
            raise ValueError(f"load must be >= 0 busy processes, got {n}")
        self.n, self.settle, self.procs = n, settle, []

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def __enter__(self) -> "BusyLoad":
        return self.start()

    def start(self) -> "BusyLoad":
        """Start the processes (what `with` does); `stop()` ends them."""
        try:
            for _ in range(self.n):
                self.procs.append(subprocess.Popen([sys.executable, "-c", BUSY_LOOP],
                                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                   stderr=subprocess.DEVNULL))
            if self.procs:
                time.sleep(self.settle)               # let them start spinning
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []

    def __exit__(self, *exc) -> None:
        self.stop()


def cpu_seconds(pids: Sequence[int] = ()) -> tuple[float, float, float] | None:
    """(wall clock, busy CPU seconds of the whole machine, CPU seconds of this process + `pids`) from /proc;
    None where there is no /proc. The difference of two snapshots gives the CPU that *other* processes used."""
    try:
        with open("/proc/stat") as f:
            fields = [float(x) for x in f.readline().split()[1:]]
        tick = os.sysconf("SC_CLK_TCK")
        busy = (sum(fields[:8]) - fields[3] - (fields[4] if len(fields) > 4 else 0)) / tick   # minus idle, iowait
        own = sum(os.times()[:2])
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    st = f.read().rsplit(")", 1)[1].split()
                own += (float(st[11]) + float(st[12])) / tick                              # utime, stime
            except (OSError, IndexError, ValueError):
                pass
        return time.perf_counter(), busy, own
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def others_cores(a, b) -> float | None:
    """CPU cores used on average by processes other than ours between two `cpu_seconds` snapshots."""
    if a is None or b is None or b[0] <= a[0]:
        return None
    return max(0.0, ((b[1] - a[1]) - (b[2] - a[2])) / (b[0] - a[0]))

