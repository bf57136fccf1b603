"""Latency under background load (`python -m textcls bench --latency [--load N]`): one sentence through the
shipped sst2 checkpoints and their integrated gradients per torch thread count - how textcls/runtime/threads.py's defaults
were chosen."""
from __future__ import annotations

import fnmatch
import os
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from textcls.runtime import threads
from textcls.checkpoint import CheckpointError, list_checkpoints, load_checkpoint
from textcls.interpret import attribute_texts
from textcls.experiments.background import LATENCY_PATTERN, BusyLoad, cpu_seconds, others_cores
from textcls.experiments.bench import text_table
from textcls.experiments.measure import environment, time_call
from textcls.experiments.specs import EXAMPLE_SENTENCE


def latency_thread_settings() -> list[int]:
    """The thread counts the latency benchmark compares: 1, torch's default, and the policy's counts."""
    pol = threads.policy()
    counts = {1, threads.torch_default_threads()} | {n for n in (pol.interactive, pol.batch) if isinstance(n, int)}
    return sorted(counts)


def bench_latency(root: str | Path = "checkpoints", *, pattern: str = LATENCY_PATTERN, load: int = 0,
                  thread_settings: Sequence[int] | None = None, sentence: str = EXAMPLE_SENTENCE,
                  warmup: int = 1, repeats: int = 7, ig: bool = True, ig_repeats: int = 3,
                  progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """What a user waits for on a busy machine: one sentence through every checkpoint matching `pattern`
    (default the six shipped sst2 models; predict, and predict with the internals' maps, ms) and their integrated
    gradients (attribute_texts(...,
    "integrated_gradients"), the Attribute page's default, ms), at each thread count, on an idle machine and -
    with `load` > 0 - with `load` busy background processes that this function starts and stops.

    Each figure is the median of `repeats` (IG: `ig_repeats`) timed passes over all models after `warmup`
    untimed ones, with the calling thread's torch thread count set for the pass and restored afterwards.
    Returns {"rows": [{"load", "threads", "policy", "predict_ms", "ig_ms", ...}], "models", "environment", ...};
    `format_latency` prints it.

    The busy processes are `python -c "while True: pass"` (background.BusyLoad), always stopped; each row also says
    how many cores *other* processes used meanwhile (/proc/stat), since on a shared machine that decides whether
    the row means what it says."""
    say = progress or (lambda msg: None)
    if load < 0:
        raise ValueError(f"load must be >= 0, got {load}")
    counts = sorted(set(thread_settings)) if thread_settings else latency_thread_settings()
    if not counts or min(counts) < 1:
        raise ValueError(f"thread settings must be positive integers, got {thread_settings!r}")
    infos = [i for i in list_checkpoints(root) if fnmatch.fnmatch(i.name, pattern)]
    predictors, errors = {}, []
    for info in infos:
        try:
            predictors[info.name] = load_checkpoint(info.path)
        except CheckpointError as e:
            errors.append(f"{info.name}: {e}")
    pol = threads.policy()
    result: dict[str, Any] = {"root": str(root), "pattern": pattern, "models": list(predictors), "errors": errors,
                              "sentence": sentence, "load": load, "threads": counts, "repeats": repeats,
                              "ig_repeats": ig_repeats if ig else 0, "policy": pol.describe(),
                              "policy_env": os.environ.get(threads.ENV), "policy_error": None, "rows": []}
    try:
        threads.parse_policy(result["policy_env"])
    except ValueError as e:
        result["policy_error"] = str(e)
    result["environment"] = environment()
    if not predictors:
        return result

    def predict_all():
        for p in predictors.values():
            p.predict([sentence])

    def maps_all():
        for p in predictors.values():
            p.predict([sentence], return_maps=True)

    def ig_all():
        for p in predictors.values():
            attribute_texts(p, [sentence], "integrated_gradients")

    t0 = time.perf_counter()
    for n_busy in ([0, load] if load else [0]):
        with BusyLoad(n_busy) as busy:
            for n in counts:
                say(f"{n_busy} busy process(es), {n} thread(s)")
                auto = threads.auto_threads()             # what "auto" picks under this load
                row: dict[str, Any] = {"load": n_busy, "threads": n, "busy_pids": busy.pids, "auto_picks": auto,
                                       "policy": [k for k in threads.KINDS
                                                  if pol.threads(k) == n or (pol.threads(k) == "auto" and auto == n)]}
                snap = cpu_seconds(busy.pids)
                with threads.interactive(n):             # outermost scope: the library's own scopes defer to it
                    row["torch_threads"] = torch.get_num_threads()
                    t = time_call(predict_all, warmup=warmup, repeats=repeats)
                    row["predict_ms"], row["predict_ms_max"] = 1000 * t["median"], 1000 * t["max"]
                    t = time_call(maps_all, warmup=warmup, repeats=repeats)
                    row["maps_ms"], row["maps_ms_max"] = 1000 * t["median"], 1000 * t["max"]
                    if ig:
                        t = time_call(ig_all, warmup=min(warmup, 1), repeats=ig_repeats)
                        row["ig_ms"], row["ig_ms_max"] = 1000 * t["median"], 1000 * t["max"]
                others = others_cores(snap, cpu_seconds(busy.pids))
                row["other_cores"] = None if others is None else round(others, 2)
                row["loadavg"] = environment()["loadavg"]
                result["rows"].append(row)
    result["seconds"] = time.perf_counter() - t0
    return result


def format_latency(result: dict[str, Any]) -> str:
    """The latency table: one row per (background load, thread count)."""
    env = result["environment"]
    n = len(result["models"])
    out = [f"textcls bench --latency - {env['time']}, torch {env['torch']}, {env['cpu_count']} CPU(s), "
           f"load average {env['loadavg']} at the start",
           f"thread policy: {result['policy']} ("
           + (f"TEXTCLS_THREADS={result['policy_env']!r} is invalid, so the defaults" if result.get("policy_error")
              else f"TEXTCLS_THREADS={result['policy_env']}" if result["policy_env"] else "the defaults") + ")"]
    if not n:
        out.append(f"No checkpoint matching {result['pattern']!r} in {result['root']}.")
        out += [f"  skipped: {e}" for e in result.get("errors", [])]
        return "\n".join(out)
    out.append(f"{n} checkpoint(s) matching {result['pattern']!r} ({', '.join(result['models'])}), one sentence; "
               f"median of {result['repeats']} passes (IG: {result['ig_repeats']}), ms for all {n} models")
    out.append("")
    headers = ["background load", "threads", "policy", "predict ms", "with maps ms", "IG ms", "other CPU"]
    rows = []
    for r in result["rows"]:
        rows.append([f"{r['load']} busy process(es)" if r["load"] else "idle", r["threads"],
                     ", ".join(r["policy"]) or "-", f"{r['predict_ms']:.0f}",
                     f"{r['maps_ms']:.0f}" if "maps_ms" in r else "-",
                     f"{r['ig_ms']:.0f}" if "ig_ms" in r else "-",
                     "?" if r.get("other_cores") is None else f"{r['other_cores']:.1f}"])
    out.append(text_table(headers, rows))
    out.append("policy: the kinds of work TEXTCLS_THREADS runs with this many threads under this load (auto: "
               "the count it picked at the row's start)")
    out.append("other CPU: cores used on average by processes other than the benchmark and its busy processes "
               "while the row ran (on a shared machine: more than ~0.2 means the row is not what it says)")
    out += [f"  skipped: {e}" for e in result.get("errors", [])]
    if "seconds" in result:
        out.append(f"({result['seconds']:.0f} s)")
    return "\n".join(out)
