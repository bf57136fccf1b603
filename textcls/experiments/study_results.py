"""A study's cached runs as rows (mean and spread over seeds per point) and the one-line reading of whether the
paper's trend holds here. No torch."""
from __future__ import annotations

import statistics
from typing import Any

from textcls.experiments.study_defs import Study
from textcls.experiments.study_run import load_cache, run_key, signature


NOISE_POINTS = 2.0     # differences smaller than this (points) are not read as a trend (one seed, small slices)


def rows(study: Study, scale: str) -> list[dict[str, Any]]:
    """One row per point with a finished run: mean / std (over seeds) of the measure in %, seconds, curve."""
    sc = study.scales[scale]
    runs = load_cache(study, scale)["runs"]
    metric = "test_accuracy" if study.measure == "test_accuracy" else "dev_accuracy"
    out = []
    for pt in study.points:
        rs = [runs[k] for k in (run_key(pt, s) for s in range(sc.seeds))
              if k in runs and runs[k].get("signature") == signature(pt, sc)]
        vals = [100 * r[metric] for r in rs if r.get(metric) is not None]
        if not vals:
            continue
        out.append({"series": pt.series, "x": pt.x, "key": pt.key, "mean": statistics.mean(vals),
                    "std": statistics.stdev(vals) if len(vals) > 1 else 0.0, "n": len(vals), "paper": pt.paper,
                    "seconds_per_epoch": statistics.mean(r["seconds_per_epoch"] or 0 for r in rs),
                    "seconds": statistics.mean(r["seconds"] for r in rs), "curve": rs[0]["curve"],
                    "parameters": rs[0].get("parameters")})
    return out


def reading(study: Study, scale: str) -> str:
    """Whether the paper's trend holds here, in one line (or why it cannot be said yet)."""
    rs = rows(study, scale)
    if not rs:
        return "No finished points yet."
    parts = []
    for series, paper_x in study.paper_best:
        mine = [r for r in rs if r["series"] == series]
        if len(mine) < sum(p.series == series for p in study.points):
            parts.append(f"{series}: not all points finished")
            continue
        best = max(mine, key=lambda r: r["mean"])
        at_paper = next((r for r in mine if r["x"] == paper_x), None)
        gap = best["mean"] - at_paper["mean"] if at_paper else None
        noise = max(NOISE_POINTS, 2 * max(r["std"] for r in mine))
        if best["x"] == paper_x:
            verdict = "holds"
        elif gap is not None and gap < noise:
            verdict = f"not clear ({paper_x} is {gap:.1f} points behind, within the noise of ~{noise:.0f})"
        else:
            verdict = "does not hold"
        parts.append(f"{series}: paper best {paper_x}, here {best['x']} ({best['mean']:.1f} %) - {verdict}")
    same = {}
    for r in rs:
        same.setdefault(round(r["mean"], 2), []).append(r["key"])
    flat = [f"{', '.join(k)} ({v:.1f} %)" for v, k in same.items() if len(k) > 2]
    if flat:
        parts.append("identical scores for " + "; ".join(flat) + " usually mean one constant prediction (the "
                     "majority class): those runs did not learn at this scale")
    if study.measure == "time":
        done = sorted(rs, key=lambda r: r["seconds"])
        parts.append("fastest here: " + done[0]["x"] + ", most accurate: " + max(rs, key=lambda r: r["mean"])["x"])
    if study.measure == "curve" and len(rs) > 1:
        best = max(rs, key=lambda r: r["mean"])
        parts.append(f"best final dev accuracy here: {best['key']} ({best['mean']:.1f} %); the paper's curve "
                     "values are not readable, so no comparison")
    if not parts:
        return "The paper gives no trend this study can check."
    sc = study.scales[scale]
    seeds = "one seed, so differences of a point or two are noise" if sc.seeds == 1 else f"{sc.seeds} seeds"
    return "; ".join(parts) + f" ({sc.describe()}; {seeds})."
