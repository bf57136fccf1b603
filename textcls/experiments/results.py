"""The reproduction's results file (docs/results.json: read, written under a lock) and what it shows: each
cell's mean and spread, the table rows, the accuracy target and the Markdown report beside it. No torch."""
from __future__ import annotations

import contextlib
import json
import math
import statistics
from pathlib import Path
from typing import Any, Callable

from textcls.runtime.files import atomic_write, atomic_write_json
from textcls.experiments.cells import DEFAULT_SUITES, GPU_SUITES, NOT_RUN_NOTES, SUITES
from textcls.experiments.papers import AGCNN_COLUMNS, AGCNN_TABLE3

RESULTS_VERSION = 1
DEFAULT_OUT = "docs/results.json"


# ---------------------------------------------------------------- the results file


def load_results(path: str | Path) -> dict[str, Any]:
    """The results file, or an empty one when it does not exist. A corrupt file is a ValueError."""
    path = Path(path)
    if not path.exists():
        return {"version": RESULTS_VERSION, "cells": {}, "sessions": []}
    try:
        res = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: cannot read the results file: {e}") from None
    if not isinstance(res, dict) or not isinstance(res.get("cells"), dict):
        raise ValueError(f"{path}: not a textcls results file (no 'cells' object)")
    res.setdefault("sessions", [])
    return res


@contextlib.contextmanager
def _locked(path: Path):
    """Hold an exclusive lock beside `path` (POSIX; elsewhere no lock), so reproduce runs can share a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: one process at a time, as before
        yield
        return
    with open(path.with_name(f".{path.name}.lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def update_results(out: Path, md: Path, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Re-read `out` under the lock, apply `change`, write it and the Markdown: runs of other processes
    writing the same file meanwhile are kept."""
    with _locked(out):
        results = load_results(out)
        change(results)
        save_results(results, out)
        write_markdown(results, md)
    return results


def save_results(results: dict[str, Any], path: str | Path) -> None:
    """Write the results file atomically (textcls.runtime.files.atomic_write_json)."""
    atomic_write_json(Path(path), results, indent=1, sort_keys=False)


# ---------------------------------------------------------------- summaries and Markdown


def summarize(entry: dict[str, Any]) -> dict[str, Any]:
    """Mean and spread (in %) of a cell's runs; with one run the binomial s.e. on its evaluation split."""
    cell, runs = entry["cell"], entry.get("runs", [])
    accs = [100 * r.get("score", r["accuracy"]) for r in runs]       # "score": the cell's metric
    if not accs:
        return {"n_runs": 0, "mean": None, "sd": None, "se": None}
    mean = statistics.fmean(accs)
    sd = statistics.stdev(accs) if len(accs) > 1 else None
    n_eval = runs[-1].get("n", {}).get(cell.get("metric_split", "test"))
    binomial = cell.get("metric", "accuracy") == "accuracy"          # no binomial s.e. for an F1
    se = 100 * math.sqrt(mean / 100 * (1 - mean / 100) / n_eval) if n_eval and binomial else None
    paper = cell.get("paper")
    return {"n_runs": len(accs), "mean": mean, "sd": sd, "se": se, "n_eval": n_eval,
            "delta": None if paper is None else mean - paper, "seeds": [r["seed"] for r in runs]}


def gap_line(entry: dict[str, Any]) -> str:
    """One line: why ours differs from the paper's figure."""
    cell, runs = entry["cell"], entry.get("runs", [])
    parts = list(cell.get("gaps", []))
    if runs:
        sig = runs[-1].get("signature", {})
        ep = sig.get("epochs")
        ran = sorted({r.get("epochs_run") for r in runs})
        stopped = "" if ran == [ep] else f", stopped early after {'/'.join(str(x) for x in ran)}"
        parts.append(f"{ep} CPU epoch(s){stopped} (paper: GPU training to convergence)")
        if sig.get("limit"):
            parts.append(f"--limit {sig['limit']}: a sample of at most {sig['limit']} texts per split")
        if len(runs) < cell.get("runs", 1):
            parts.append(f"{len(runs)} run(s) (paper: mean of {cell['runs']})")
        if any(r.get("diverged") for r in runs):
            parts.append("a run diverged")
    s = summarize(entry)
    if s["n_runs"] == 1 and s["se"] is not None:
        parts.append(f"one run: +-{s['se']:.1f} (binomial s.e. on {s['n_eval']} texts)")
    return "; ".join(parts)


def fmt_number(x: float | None, nd: int = 1, signed: bool = False) -> str:
    """`x` with `nd` decimals (a sign with `signed`), or a dash for None."""
    if x is None:
        return "—"
    return f"{x:+.{nd}f}" if signed else f"{x:.{nd}f}"


def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def measured_on(runs: list[dict[str, Any]]) -> str:
    """Where a cell's runs were measured, e.g. "cpu", "cuda:0 (NVIDIA H100) x 8, bf16" (runs before devices
    were recorded: "cpu")."""
    seen: dict[str, None] = {}
    for r in runs:
        where = r.get("device_name") or r.get("device") or "cpu"
        if str(where).startswith("cpu"):
            where = "cpu"
        world = r.get("world_size") or 1
        amp = r.get("amp") or "off"
        seen[where + (f" x {world}" if world > 1 else "") + (f", {amp}" if amp != "off" else "")] = None
    return "; ".join(seen)


def table_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One flat row per cell that has runs, in suite order (for the Benchmarks page and the Markdown)."""
    suite_rank = {s: i for i, s in enumerate(SUITES)}
    entries = [e for e in results.get("cells", {}).values() if e.get("runs") and e.get("cell")]
    entries.sort(key=lambda e: (suite_rank.get(e["cell"]["suite"], 99), e["cell"].get("order", 0)))
    rows = []
    for e in entries:
        c, s = e["cell"], summarize(e)
        spr = (f"sd {s['sd']:.1f} ({s['n_runs']} runs)" if s["sd"] is not None
               else f"1 run, s.e. {s['se']:.1f}" if s["se"] is not None else "1 run")
        last = e["runs"][-1]
        rows.append({
            "suite": c["suite"], "table": c["table"], "key": c["key"], "setting": c["setting"], "data": c["data"],
            "column": c.get("column", ""),
            "metric": c.get("metric_split", "test") + ("" if c.get("metric", "accuracy") == "accuracy"
                                                       else f" {c['metric']}"),
            "ours": s["mean"], "spread": spr, "sd": s["sd"], "se": s["se"], "runs": s["n_runs"],
            "paper": c.get("paper"), "paper_note": c.get("paper_note", ""), "delta": s["delta"],
            "epochs": last.get("signature", {}).get("epochs"), "epochs_run": last.get("epochs_run"),
            "seconds_per_epoch": last.get("seconds_per_epoch"), "loadavg": (last.get("loadavg_end") or [None])[0],
            "limit": last.get("signature", {}).get("limit"), "gap": gap_line(e),
            "measured": measured_on(e["runs"])})
    return rows


# Issue 7's accuracy target: within TARGET_POINTS of the papers' non-static CNN / AGCNN numbers on these data sets.
TARGET_POINTS = 2.0
TARGET_SETTINGS = ("CNN-non-static", "AGCNN-SELU-non-static", "AGCNN-NLReLU-non-static")
TARGET_DATA = {"SST-2": ("sst2_phrases", "sst2"), "Subj": ("subj",), "TREC": ("trec",)}


def accuracy_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (setting, paper column) of the accuracy target: our best cell (SST-2: trained on phrases, as
    the paper, or on sentences, whichever is higher), the paper's figure, and whether it is within the target."""
    rows = table_rows(results)
    out = []
    for setting in TARGET_SETTINGS:
        for column, datas in TARGET_DATA.items():
            cand = [r for r in rows if r["suite"] == "agcnn_t3" and r["setting"] == setting and r["data"] in datas
                    and r["ours"] is not None]
            paper = AGCNN_TABLE3[setting][AGCNN_COLUMNS.index(column)]
            best = max(cand, key=lambda r: r["ours"]) if cand else None
            delta = None if best is None else best["ours"] - paper
            out.append({"setting": setting, "column": column, "data": best["data"] if best else None,
                        "ours": best["ours"] if best else None, "runs": best["runs"] if best else 0,
                        "paper": paper, "delta": delta,
                        "met": None if delta is None else delta >= -TARGET_POINTS})
    return out


def targets_met(targets: list[dict[str, Any]]) -> tuple[int, int]:
    """(cells that meet the target, cells measured) of `accuracy_targets`' rows; the rest were not run."""
    ran = [r for r in targets if r["met"] is not None]
    return sum(bool(r["met"]) for r in ran), len(ran)


def _targets_markdown(results: dict[str, Any]) -> list[str]:
    t = accuracy_targets(results)
    met, ran = targets_met(t)
    lines = [f"## Target: within {TARGET_POINTS:g} points of the papers' non-static CNN / AGCNN", "",
             f"Met in **{met} of {ran}** measured cells ({len(t) - ran} not run). "
             "SST-2 takes the better of training on phrases (the papers' protocol) and on sentences.", "",
             "| setting | paper column | our data | ours | paper | Δ | met |", "|---|---|---|---:|---:|---:|---|"]
    for r in t:
        met = "—" if r["met"] is None else ("yes" if r["met"] else "no")
        lines.append(f"| {r['setting']} | {r['column']} | {r['data'] or '—'} | {fmt_number(r['ours'])} | "
                     f"{r['paper']:g} | {fmt_number(r['delta'], signed=True)} | {met} |")
    lines.append("")
    return lines


def render_markdown(results: dict[str, Any]) -> str:
    """The Markdown report: each cell next to the paper's figure, the difference, and why they differ."""
    rows = table_rows(results)
    sessions = results.get("sessions", [])
    loads = [x for ss in sessions for x in (ss.get("loadavg_start", [None])[:1] + ss.get("loadavg_end", [None])[:1])
             if x is not None]
    cpus = next((ss.get("cpu_count") for ss in sessions if ss.get("cpu_count")), None)
    lines = ["# Reproducing the papers' tables on this machine", "",
             "Generated by `python -m textcls reproduce` from `results.json` (do not edit by hand). Accuracy in % "
             "on the test split unless the table says dev; *ours* is the mean over runs (seeds 0, 1, ...), "
             "*spread* the sample standard deviation over runs, or with one run the binomial standard error of "
             "the accuracy. Δ = ours - paper, in points.", ""]
    lines.append("**What differs from the papers everywhere:** 50-d GloVe 6B vectors (the papers: 300-d word2vec / "
                 "GloVe), a few epochs on shared CPU cores (the papers: GPUs, training to convergence), and one "
                 "fixed train/dev/test split per data set. AG News and DBpedia are represented by *mini* sets "
                 "(ag_news_mini, dbpedia_mini) that are NOT the benchmarks. Each row says in one line what else "
                 "differs.")
    lines.append("")
    if loads and cpus:
        mx = max(loads)
        distorted = mx > 0.75 * cpus
        lines.append(f"Machine: {cpus} CPU core(s), torch threads "
                     f"{sorted({ss['torch_threads'] for ss in sessions if ss.get('torch_threads')})}, load average during the runs "
                     f"{min(loads):.1f}-{mx:.1f}."
                     + (" **The seconds per epoch are distorted by that load** (other jobs shared the cores); "
                        "they are not speed measurements - see `python -m textcls bench` on a quiet machine."
                        if distorted else ""))
        lines.append("")
    if results.get("updated"):
        lines.append(f"Last updated {results['updated']}.")
        lines.append("")
    if any(r["suite"] == "agcnn_t3" for r in rows):
        lines += _targets_markdown(results)
    by_table: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_table.setdefault(r["table"], []).append(r)
    for table, trs in by_table.items():
        lines.append(f"## {table}")
        lines.append("")
        suite = trs[0]["suite"]
        if suite in SUITES:
            lines.append(f"Suite `{suite}`: {SUITES[suite][0]}.")
            lines.append("")
        lines.append("| setting | data | ours | spread | paper | Δ | epochs (s/epoch) | measured on | "
                     "why the numbers differ |")
        lines.append("|---|---|---:|---|---:|---:|---|---|---|")
        for r in trs:
            paper = "—" if r["paper"] is None else f"{r['paper']:.2f}".rstrip("0").rstrip(".")
            if r["paper_note"]:
                paper += f" ({r['paper_note']})"
            data = r["data"] + (f" ({r['column']})" if r["column"] and r["column"] != r["data"] else "")
            spe = "" if r["seconds_per_epoch"] is None else f" ({r['seconds_per_epoch']:.0f} s)"
            ep = f"{r['epochs_run']}/{r['epochs']}{spe}"
            lines.append(f"| {_md(r['setting'])} | {_md(data)} | {fmt_number(r['ours'])} | {_md(r['spread'])} | "
                         f"{_md(paper)} | {fmt_number(r['delta'], signed=True)} | {ep} | {_md(r['measured'])} | "
                         f"{_md(r['gap'])} |")
        lines.append("")
    from textcls.experiments.study_results import summary_markdown
    lines += summary_markdown("medium")
    # what is still missing, per suite
    lines.append("## Not run yet")
    lines.append("")
    have = {r["key"] for r in rows}
    any_missing = False
    for name in DEFAULT_SUITES:
        missing = [c for c in SUITES[name][1]() if c.key not in have]
        if missing:
            any_missing = True
            total = len(SUITES[name][1]())
            lines.append(f"- `{name}`: {len(missing)} of {total} cells "
                         f"(`python -m textcls reproduce --suite {name}`)"
                         + (f": {NOT_RUN_NOTES[name]}" if name in NOT_RUN_NOTES else ""))
    if not any_missing:
        lines.append("- nothing: every cell of every suite has at least one run.")
    for name in GPU_SUITES:
        missing = [c for c in SUITES[name][1]() if c.key not in have]
        if missing:
            lines.append(f"- `{name}` (full benchmarks, needs GPUs): {len(missing)} of {len(SUITES[name][1]())} "
                         f"cells (`python -m textcls reproduce --suite {name} --device cuda`, or under "
                         f"`torchrun --nproc_per_node N -m textcls reproduce --suite {name}`)")
    lines.append("")
    return "\n".join(lines)


def write_markdown(results: dict[str, Any], path: str | Path) -> Path:
    """Write `render_markdown(results)` atomically."""
    path = Path(path)
    atomic_write(path, render_markdown(results))
    return path
