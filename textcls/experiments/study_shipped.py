"""A study's results shipped with the package (`textcls/experiments/shipped_studies/NAME-scale.json`, package data,
so a clone installed with pip has them too): the per-seed numbers of every run, measured here, with the scale,
the machine, the torch version and the date. `results(study, scale)` is what the page and the CLI draw: the user
folder's own runs when there are any (they replace the shipped ones there, and only there), else the shipped
file. `ship` writes a user folder's finished study into that folder (refused unless every point has >= 3 seeds).
No torch."""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
from dataclasses import asdict
from pathlib import Path
from typing import Any

from textcls.experiments.study_defs import Study
from textcls.experiments.study_run import StudyError, cache_path, load_cache, matches, run_key, signature

SHIPPED_DIR = Path(__file__).with_name("shipped_studies")
MIN_SEEDS = 3           # a shipped study has every point at >= this many seeds
_RUN_FIELDS = ("seed", "dev_accuracy", "test_accuracy", "curve", "seconds", "train_seconds", "cpu_seconds",
               "seconds_per_epoch",
               "parameters", "device", "finished")


def shipped_path(study: Study, scale: str, root: Path | None = None) -> Path:
    return Path(root or SHIPPED_DIR) / f"{study.name}-{scale}.json"


def _current_runs(study: Study, scale: str, runs: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Per point key, its runs whose signature matches the study's current definition."""
    sc = study.scales[scale]
    out = {}
    for pt in study.points:
        rs = [runs[k] for k in (run_key(pt, s) for s in range(sc.seeds))
              if k in runs and matches(runs[k].get("signature"), pt, sc)]
        if rs:
            out[pt.key] = rs
    return out


def load_shipped(study: Study, scale: str, root: Path | None = None) -> dict[str, Any] | None:
    """The shipped file as a cache (runs with their signatures re-attached), or None when there is none, it
    cannot be read, or it was measured under another definition of the scale (then it is stale)."""
    if scale not in study.scales:
        return None
    try:
        data = json.loads(shipped_path(study, scale, root).read_text())
    except (OSError, ValueError):
        return None
    sigs = data.get("signatures", {})
    runs = {}
    for key, rs in data.get("runs", {}).items():
        for r in rs:
            runs[f"{key}|seed={r['seed']}"] = {**r, "point": key, "signature": sigs.get(key)}
    cache = {**{k: v for k, v in data.items() if k not in ("runs", "signatures")}, "runs": runs}
    if not _current_runs(study, scale, runs):
        return None
    return cache


def results(study: Study, scale: str, root: Path | None = None) -> tuple[dict[str, Any], str]:
    """(cache, source): source "user" when this machine's user folder has finished runs of the study at this
    scale, "shipped" when the package's file is used, "none" when neither has any."""
    mine = load_cache(study, scale)
    if _current_runs(study, scale, mine.get("runs", {})):
        return mine, "user"
    shipped = load_shipped(study, scale, root)
    if shipped is not None:
        return shipped, "shipped"
    return mine, "none"


def completeness(study: Study, scale: str, cache: dict[str, Any]) -> tuple[int, int]:
    """(points with at least one current run, the fewest current runs of any point (0 when one has none))."""
    cur = _current_runs(study, scale, cache.get("runs", {}))
    return len(cur), min((len(cur.get(p.key, [])) for p in study.points), default=0)


def machine() -> str:
    """e.g. 'Linux x86_64, 2 CPU core(s), AMD EPYC 7B13'."""
    model = platform.processor()
    try:
        model = next(ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                     if ln.startswith("model name")) or model
    except (OSError, StopIteration):
        pass
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPU core(s)" + (f", {model}" if model else "")


def ship(study: Study, scale: str, root: Path | None = None) -> Path:
    """Write the user folder's runs of the study at this scale into the shipped folder; StudyError unless every
    point has at least MIN_SEEDS current runs."""
    if scale not in study.scales:
        raise StudyError(f"{study.name} has no scale {scale!r}")
    cache = load_cache(study, scale)
    points, seeds = completeness(study, scale, cache)
    if points < len(study.points) or seeds < MIN_SEEDS:
        raise StudyError(f"{study.name} ({scale}) is not finished: {points} of {len(study.points)} points have "
                         f"runs, the fewest seeds of a point is {seeds} (need >= {MIN_SEEDS} for every point)")
    import torch                                       # only for its version string
    cur = _current_runs(study, scale, cache["runs"])
    sc = study.scales[scale]
    seconds = sum(r.get("seconds") or 0 for rs in cur.values() for r in rs)
    shared = {r.get("finished") for rs in cur.values() for r in rs}
    out = {"study": study.name, "scale": scale, "scale_settings": {k: v for k, v in asdict(sc).items()
                                                                   if k != "help"},
           "machine": machine(), "torch": torch.__version__, "python": platform.python_version(),
           "date": _dt.date.today().isoformat(), "threads": 1,
           "minutes": round(seconds / 60, 1),
           "cpu_minutes": (round(sum(r["cpu_seconds"] for rs in cur.values() for r in rs) / 60, 1)
                           if all(r.get("cpu_seconds") for rs in cur.values() for r in rs) else None),
           "note": "measured here at medium scale: one torch thread, nice 19, on a 2-core CPU shared with other "
                   "jobs (seconds are wall-clock under that load)" if scale == "medium" else "",
           "distinct_runs": len(shared),
           "signatures": {p.key: signature(p, sc) for p in study.points},
           "runs": {k: [{f: r.get(f) for f in _RUN_FIELDS} for r in rs] for k, rs in cur.items()}}
    path = shipped_path(study, scale, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(json.loads(json.dumps(out, default=list)), indent=1))
    os.replace(tmp, path)
    return path
