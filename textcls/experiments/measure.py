"""Measuring tools for the benchmarks: the machine's state (environment, load_note), timing (time_call,
time_alternating) and peak memory (peak_memory)."""
from __future__ import annotations

import datetime as _dt
import gc
import os
import platform
import statistics
import sys
import threading
import time
from typing import Any, Callable

import torch

from textcls.runtime.memory import return_free_memory, rss_mb
from textcls.experiments.bench_report import load_note  # noqa: F401  (torch-free, re-exported)


# ---------------------------------------------------------------- the machine


def environment() -> dict[str, Any]:
    """What the timings depend on: threads, load, CPU, versions. The thread count in force is recorded with
    os.getloadavg(): on a shared machine every timing is inflated by the load, and the reports say so."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    cpus = os.cpu_count() or 1
    return {
        "time": _dt.datetime.now().isoformat(timespec="seconds"),
        "python": sys.version.split()[0], "torch": torch.__version__, "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(), "cpu_count": cpus,
        "torch_threads": torch.get_num_threads(), "torch_interop_threads": torch.get_num_interop_threads(),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "loadavg": [round(x, 2) for x in load],
        "loaded": bool(load[0] > 0.75 * cpus),
        "cuda": torch.cuda.is_available(),
    }


# ---------------------------------------------------------------- time and memory


def time_call(fn: Callable[[], Any], *, warmup: int = 1, repeats: int = 5) -> dict[str, Any]:
    """Median / min / max seconds of `repeats` calls of fn after `warmup` untimed calls."""
    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats must be >= 1 and warmup >= 0, got {repeats}, {warmup}")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return {"median": statistics.median(times), "min": min(times), "max": max(times), "repeats": repeats,
            "times": times}


def time_alternating(fns: dict[str, Callable[[], Any]], *, warmup: int = 1, repeats: int = 5
                     ) -> dict[str, dict[str, Any]]:
    """Like time_call for several functions, called in turn (a, b, a, b, ...) so load drift hits all alike."""
    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats must be >= 1 and warmup >= 0, got {repeats}, {warmup}")
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t)
    return {k: {"median": statistics.median(v), "min": min(v), "max": max(v), "repeats": repeats, "times": v}
            for k, v in times.items()}


def _rss_bytes() -> int | None:
    mb = rss_mb()
    return None if mb is None else int(mb * 2**20)


def peak_memory(fn: Callable[[], Any], interval: float = 0.001) -> dict[str, Any]:
    """Peak RSS growth (bytes) while fn runs. Returns {"bytes", "method"}.

    The growth of the process's resident set (RSS) above its level just before the call, sampled every
    `interval` seconds from /proc/self/statm by a helper thread, after glibc's malloc_trim has returned freed
    memory to the OS. Without /proc (macOS, Windows) it falls back to the growth of
    `resource.getrusage().ru_maxrss`, which only sees a new all-time peak (then 0 is a lower bound). tracemalloc
    is not used: it does not see PyTorch's tensor allocations. Memory the allocator already held is reused and
    not counted, so the figure is a lower bound of the call's working memory."""
    gc.collect()
    return_free_memory()
    base = _rss_bytes()
    if base is None:
        import resource                                  # POSIX only: imported where /proc is missing
        scale = 1 if sys.platform == "darwin" else 1024   # ru_maxrss: bytes on macOS, KiB on Linux
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        fn()
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return {"bytes": max(0, after - before) * scale, "method": "ru_maxrss growth (lower bound)"}
    peak = [base]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            r = _rss_bytes()
            if r is not None and r > peak[0]:
                peak[0] = r
            stop.wait(interval)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    try:
        fn()
    finally:
        stop.set()
        th.join()
    end = _rss_bytes()
    if end is not None:
        peak[0] = max(peak[0], end)
    return {"bytes": int(peak[0] - base), "method": "RSS growth sampled from /proc/self/statm"}
