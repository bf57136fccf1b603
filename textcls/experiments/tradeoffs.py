"""Which checkpoint to pick: test accuracy against latency (and size) per task, the Pareto front, and a one-line
reading derived from the numbers ("fastest within 1 point of the best: ...").

A row is a dict with at least `name`, `accuracy` (test accuracy in %) and `ms` (milliseconds per sentence);
`parameters` and `faith` (own-attention faithfulness over the test split, `attention_faithfulness`) are optional.
Used by the Benchmarks page; the figure is `viz.tradeoff_figure`.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence


def pareto_front(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The names of the rows no other row beats: none is at least as accurate and at least as fast, and strictly
    better in one. Ordered fastest first."""
    front = []
    for r in rows:
        dominated = any(o is not r and o["accuracy"] >= r["accuracy"] and o["ms"] <= r["ms"]
                        and (o["accuracy"] > r["accuracy"] or o["ms"] < r["ms"]) for o in rows)
        if not dominated:
            front.append(r)
    return [r["name"] for r in sorted(front, key=lambda r: (r["ms"], -r["accuracy"]))]


def reading(rows: Sequence[dict[str, Any]], within: float = 1.0) -> str:
    """One sentence from the numbers: the most accurate checkpoint, and the fastest (and the smallest) within
    `within` points of it, with what choosing them costs and saves."""
    rows = [r for r in rows if r.get("accuracy") is not None and r.get("ms") is not None]
    if not rows:
        return "No checkpoint here has both a test accuracy and a measured latency."
    best = max(rows, key=lambda r: (r["accuracy"], -r["ms"]))
    near = [r for r in rows if r["accuracy"] >= best["accuracy"] - within]
    fast = min(near, key=lambda r: (r["ms"], -r["accuracy"]))
    head = f"Most accurate: {best['name']} ({best['accuracy']:.1f} %, {best['ms']:.1f} ms per sentence)"
    if fast is best:
        out = head + f"; nothing within {within:g} point of it is faster"
    else:
        out = (f"Fastest within {within:g} point of the best: {fast['name']} ({fast['accuracy']:.1f} %, "
               f"{fast['ms']:.1f} ms per sentence, {best['ms'] / max(fast['ms'], 1e-9):.1f}x faster than "
               f"{best['name']} at {best['accuracy'] - fast['accuracy']:.1f} points less)")
    sized = [r for r in near if r.get("parameters")]
    if sized:
        small = min(sized, key=lambda r: r["parameters"])
        if small is not fast and small is not best:
            out += f"; smallest within {within:g} point: {small['name']} ({small['parameters'] / 1e6:.2f} M parameters)"
    faith = [r for r in near if r.get("faith") and r["faith"].get("naopc") is not None]
    if faith:                   # across models only NAOPC compares (raw AOPC's range depends on the model)
        top = max(faith, key=lambda r: r["faith"]["naopc"])
        f = top["faith"]
        out += (f"; most faithful own attention within {within:g} point: {top['name']} (NAOPC {f['naopc']:.3f}"
                + (f" against {f['random_naopc']:.3f} for a random ranking" if f.get("random_naopc") is not None
                   else "") + ")")
    return out + "."


def tradeoff_rows(infos: Sequence[Any], timed: dict[str, dict[str, Any]],
                  faith: dict[str, dict[str, Any]] | None = None) -> tuple[list[dict[str, Any]], list[Any]]:
    """(rows, untimed): a row (see the module docstring) per checkpoint (CheckpointInfo) with a test accuracy and a
    timing in `timed` ({name: a stored benchmark's checkpoint entry, `predict_ms`, or `time_checkpoints`' row,
    `ms`}); accuracy in %, `from` "shipped" or "yours", `faith` from `attention_faithfulness`. `untimed`: the
    checkpoints with a test accuracy and no timing."""
    rows, untimed = [], []
    for i in infos:
        if i.test_accuracy is None:
            continue
        t = timed.get(i.name)
        if t is None:
            untimed.append(i)
            continue
        rows.append({"name": i.name, "from": "shipped" if i.shipped else "yours", "accuracy": 100 * i.test_accuracy,
                     "ms": t.get("ms", t.get("predict_ms")), "parameters": t.get("parameters"),
                     "faith": (faith or {}).get(i.name)})
    return rows, untimed


def attention_faithfulness(files: Sequence[str | Path], infos: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """{checkpoint name: {"aopc", "lo", "hi", "random", "n", "naopc", "random_naopc"}}: the AOPC comprehensiveness of each checkpoint's own
    attention (with its bootstrap 95 % interval) and of a random ranking over the whole test split, from the JSON
    files scripts/faithfulness_table.py and scripts/naopc_table.py write (docs/faithfulness*.json; a checkpoint's NAOPC
    over the same texts joins its row, and "naopc" is None where no file has it). A row measured on another version of
    the checkpoint (its `created` differs from the folder's) is left out: it would describe other weights.
    Missing or malformed files give nothing."""
    created = {i.name: getattr(i, "created", None) for i in infos}
    out: dict[str, dict[str, Any]] = {}
    for f in files:
        try:
            rows = json.loads(Path(f).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for row in rows if isinstance(rows, list) else []:
            try:
                name, methods = row["checkpoint"], row["methods"]
                att = methods["attention"]
                if name not in created or (row.get("created") and row.get("created") != created[name]):
                    continue
                lo, hi = att.get("aopc_comprehensiveness_ci") or (None, None)
                rnd = (methods.get("random") or {}).get("aopc_comprehensiveness")
                nrnd = (methods.get("random") or {}).get("naopc_comprehensiveness")
                got = {"aopc": float(att["aopc_comprehensiveness"]), "lo": lo, "hi": hi,
                       "random": None if rnd is None else float(rnd), "n": row.get("n"),
                       "naopc": (None if att.get("naopc_comprehensiveness") is None
                                 else float(att["naopc_comprehensiveness"])),
                       "random_naopc": None if nrnd is None else float(nrnd)}
                if name in out and got["naopc"] is not None and out[name].get("naopc") is None \
                        and got["n"] == out[name].get("n"):      # the same split measured again with NAOPC
                    out[name].update(naopc=got["naopc"], random_naopc=got["random_naopc"])
                elif name not in out:
                    out[name] = got
            except (KeyError, TypeError, ValueError):
                continue
    return out


def explanation_rows(files: Sequence[str | Path]) -> list[dict[str, Any]]:
    """Every explanation method's row of the JSON lines `python -m textcls faithfulness --json` writes
    (docs/results_context_mixing/*.jsonl): {checkpoint, method, n, aopc, lo, hi, naopc, naopc_lo, naopc_hi,
    naopc_sufficiency (None where the run has no NAOPC), sufficiency, seconds_per_text,
    plausibility, sanity_rho, sanity_flag}. The random floor is kept (it is what every method must beat); a
    checkpoint measured twice for a method keeps the run over more texts. Missing or malformed lines give
    nothing."""
    best: dict[tuple[str, str], dict[str, Any]] = {}
    for f in files:
        try:
            lines = Path(f).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for line in lines:
            try:
                r = json.loads(line)
                if r.get("kind") != "method":
                    continue
                lo, hi = r.get("aopc_comprehensiveness_ci") or (None, None)
                nlo, nhi = r.get("naopc_comprehensiveness_ci") or (None, None)
                row = {"checkpoint": Path(str(r["checkpoint"])).name, "method": str(r["method"]), "n": int(r["n"]),
                       "aopc": float(r["aopc_comprehensiveness"]), "lo": lo, "hi": hi,
                       "naopc": r.get("naopc_comprehensiveness"), "naopc_lo": nlo, "naopc_hi": nhi,
                       "naopc_sufficiency": r.get("naopc_sufficiency"),
                       "sufficiency": r.get("aopc_sufficiency"), "seconds_per_text": r.get("seconds_per_text"),
                       "plausibility": r.get("plausibility_auprc"), "sanity_rho": r.get("sanity_rho"),
                       "sanity_flag": bool(r.get("sanity_flag"))}
            except (KeyError, TypeError, ValueError, AttributeError):
                continue
            key = (row["checkpoint"], row["method"])
            if key not in best or row["n"] > best[key]["n"]:
                best[key] = row
    return list(best.values())


def time_checkpoints(infos: Sequence[Any], sentence: str, *, warmup: int = 1, repeats: int = 5) -> list[dict]:
    """Milliseconds per sentence (median, after a warm-up) and parameters of each checkpoint (CheckpointInfo) on
    this machine: the latency of checkpoints the stored benchmark has not timed (the user's own)."""
    from textcls.checkpoint import load_checkpoint
    from textcls.experiments.measure import time_call
    out = []
    for info in infos:
        p = load_checkpoint(info.path)
        t = time_call(lambda p=p: p.predict([sentence]), warmup=warmup, repeats=repeats)
        out.append({"name": info.name, "ms": 1000 * t["median"],
                    "parameters": p.model.num_parameters(include_embeddings=True)})
    return out
