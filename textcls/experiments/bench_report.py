"""Reading a benchmark's result with no torch (the Benchmarks page reads docs/bench.json in the app's server):
the per-model table (`model_rows`), the shipped checkpoints' timings (`checkpoint_rows`), whether ACT Table 5's
speed target is met (`act_t5_met`) and how far the machine's load distorts the timings (`load_note`).
textcls.experiments.bench and measure, which make the result, re-export them."""
from __future__ import annotations

from typing import Any

ACT_T5_TARGET = 2.0          # ACT at least this many times faster than the Transformer on batch inference


def load_note(env: dict[str, Any]) -> str:
    """One line on how far the machine's load distorts the timings."""
    la, cpus = env.get("loadavg", [0.0])[0], env.get("cpu_count", 1)
    if la != la:  # NaN: unknown
        return "machine load unknown"
    if la > 0.75 * cpus:
        return (f"TIMINGS DISTORTED: load average {la:.1f} on {cpus} CPU(s) - other processes share the cores, "
                f"so absolute times are inflated (ratios measured alternately are less affected)")
    return f"load average {la:.1f} on {cpus} CPU(s): a quiet machine"


def model_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-model table as flat dicts (for a DataFrame or the text report)."""
    rows = []
    for r in result.get("models", []):
        p = r["parameters"]
        rows.append({"model": r["label"], "params (no emb.)": p["without_embeddings"], "params (total)": p["total"],
                     "s / batch": r["seconds_per_batch"], "ms / sentence": r["ms_per_sentence"],
                     "s / epoch (est.)": r.get("seconds_per_epoch"),
                     "MB infer": None if r.get("inference_memory_bytes") is None
                     else r["inference_memory_bytes"] / 2 ** 20,
                     "MB train step": None if r.get("training_memory_bytes") is None
                     else r["training_memory_bytes"] / 2 ** 20})
    return rows


def checkpoint_rows(ck: dict[str, Any]) -> list[dict[str, Any]]:
    """A stored benchmark's timed checkpoints (its "checkpoints" entry) as flat dicts under the table's names,
    test accuracy in %."""
    names = {"name": "checkpoint", "data": "data set", "test_accuracy": "test accuracy",
             "parameters_without_embeddings": "params (no emb.)", "load_seconds": "load s",
             "predict_ms": "ms / sentence", "predict_with_maps_ms": "ms with maps", "n_maps": "maps"}
    rows = []
    for r in ck.get("checkpoints") or []:
        r = dict(r)
        if r.get("test_accuracy") is not None:
            r["test_accuracy"] = 100 * r["test_accuracy"]
        rows.append({names.get(k, k): v for k, v in r.items()})
    return rows


def act_t5_met(t5: dict[str, Any]) -> bool:
    """Whether a measured ACT Table 5 meets the target: ACT at least ACT_T5_TARGET times faster than the
    Transformer on batch inference (`speed_ratio`: the Transformer's time over ACT's)."""
    return t5["speed_ratio"] >= ACT_T5_TARGET


__all__ = ["ACT_T5_TARGET", "act_t5_met", "checkpoint_rows", "load_note", "model_rows"]
