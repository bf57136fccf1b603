"""A study's runs as rows (mean and spread over seeds per point, with the per-seed numbers) and the reading of
whether the paper's trend holds here: per series, holds / does not hold / cannot be resolved, with the statistic
behind it (study_stats: the Welch 95 % interval of a difference of means over seeds; Spearman's rank correlation
over a numeric grid). The runs are this machine's (user folder) or, when it has none, the shipped ones
(study_shipped.results). No torch."""
from __future__ import annotations

import statistics
from typing import Any

from textcls.experiments.study_defs import Study
from textcls.experiments.study_shipped import results
from textcls.experiments.study_stats import spearman, spearman_interval, welch

HOLDS, NOT_HOLDS, UNRESOLVED, NO_CLAIM = "holds", "does not hold", "cannot be resolved", "no claim to check"


def metric_of(study: Study) -> str:
    return "test_accuracy" if study.measure == "test_accuracy" else "dev_accuracy"


def rows_from(study: Study, scale: str, cache: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per point with a finished run: mean / std (over seeds) of the measure in %, the per-seed values,
    seconds, seed 0's curve."""
    from textcls.experiments.study_shipped import _current_runs
    cur = _current_runs(study, scale, cache.get("runs", {}))
    metric = metric_of(study)
    out = []
    for pt in study.points:
        rs = cur.get(pt.key, [])
        vals = [100 * r[metric] for r in rs if r.get(metric) is not None]
        if not vals:
            continue
        out.append({"series": pt.series, "x": pt.x, "key": pt.key, "mean": statistics.mean(vals),
                    "std": statistics.stdev(vals) if len(vals) > 1 else 0.0, "n": len(vals), "values": vals,
                    "seeds": [r.get("seed") for r in rs if r.get(metric) is not None], "paper": pt.paper,
                    "seconds_per_epoch": statistics.mean(r.get("seconds_per_epoch") or 0 for r in rs),
                    "seconds": statistics.mean(r.get("seconds") or 0 for r in rs), "curve": rs[0]["curve"],
                    "parameters": rs[0].get("parameters")})
    return out


def rows(study: Study, scale: str) -> list[dict[str, Any]]:
    return rows_from(study, scale, results(study, scale)[0])


def _numeric(xs) -> bool:
    return all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in xs)


def series_readings(study: Study, rs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per series of the study, a checkable reading:
    - a series where the paper names the best x (`paper_best`): d = mean(paper's best) - mean(the best other point
      here), compared among the points the paper has numbers for when it has several, else among all; the Welch
      95 % interval of d over seeds decides: above 0 -> holds, below 0 -> does not hold, across 0 -> cannot be
      resolved (also when a point has fewer than 2 seeds);
    - every series on a numeric grid also gets Spearman's rho of accuracy against x over all runs (per seed), with
      an approximate 95 % interval - the trend's direction, reported beside the verdict (the verdict of a series
      without a claim is "no claim to check")."""
    best = dict(study.paper_best)
    out = []
    for series in dict.fromkeys(p.series for p in study.points):
        n_pts = sum(p.series == series for p in study.points)
        mine = [r for r in rs if r["series"] == series]
        item: dict[str, Any] = {"series": series, "claim": None, "verdict": NO_CLAIM, "points": len(mine),
                                "grid": n_pts}
        xs = [r["x"] for r in mine]
        if len(mine) >= 3 and _numeric(xs):
            px = [r["x"] for r in mine for _ in r["values"]]
            py = [v for r in mine for v in r["values"]]
            rho = spearman(px, py)
            if rho is not None:
                ci = spearman_interval(rho, len(py))
                item["spearman"] = {"rho": round(rho, 3), "n": len(py),
                                    **({"lo": round(ci[0], 3), "hi": round(ci[1], 3)} if ci else {})}
        if series in best:
            target = best[series]
            item["claim"] = f"{target} is best"
            if len(mine) < n_pts:
                item["verdict"] = UNRESOLVED
                item["why"] = f"{len(mine)} of {n_pts} points finished"
                out.append(item)
                continue
            at = next(r for r in mine if r["x"] == target)
            pool = [r for r in mine if r["x"] != target]
            with_paper = [r for r in pool if r["paper"] is not None]
            if at["paper"] is not None and with_paper:
                pool = with_paper
            other = max(pool, key=lambda r: r["mean"])
            item.update({"against": other["x"], "diff": round(at["mean"] - other["mean"], 2)})
            if at["n"] < 2 or other["n"] < 2:
                item["verdict"] = UNRESOLVED
                item["why"] = "fewer than 2 seeds: no interval"
            else:
                w = welch(at["values"], other["values"])
                item.update({"lo": round(w["lo"], 2), "hi": round(w["hi"], 2), "df": round(w["df"], 1)})
                item["verdict"] = HOLDS if w["lo"] > 0 else NOT_HOLDS if w["hi"] < 0 else UNRESOLVED
        out.append(item)
    return out


def describe_item(it: dict[str, Any]) -> str:
    """One reading item in words, e.g. 'layers: paper 3 best; here 3 - 2 = +1.2 points [-0.8, +3.2] - cannot be
    resolved'."""
    s = f"{it['series']}: "
    if it["claim"] is not None:
        s += f"paper: {it['claim']}; "
        if "diff" in it:
            s += f"here minus the best other ({it['against']}) = {it['diff']:+.1f} points"
            if "lo" in it:
                s += f", 95 % interval [{it['lo']:+.1f}, {it['hi']:+.1f}]"
            elif it.get("why"):
                s += f" ({it['why']})"
        elif it.get("why"):
            s += it["why"]
        s += f" - {it['verdict']}"
    else:
        s += "the paper makes no claim here"
    if "spearman" in it:
        sp = it["spearman"]
        s += f"; rank correlation with {it['series']}: rho = {sp['rho']:+.2f}"
        if "lo" in sp:
            s += f" [{sp['lo']:+.2f}, {sp['hi']:+.2f}]"
    return s


def reading_from(study: Study, scale: str, rs: list[dict[str, Any]]) -> str:
    if not rs:
        return "No finished points yet."
    parts = [describe_item(it) for it in series_readings(study, rs)]
    # several configurations with one score to the last digit: one constant prediction. Points that share their
    # runs (the base configuration in every series of a one-knob-at-a-time grid) have the same per-seed numbers
    # by construction and count once.
    same: dict[float, dict[tuple, list[str]]] = {}
    for r in rs:
        runs = tuple(round(float(v), 6) for v in r.get("values", ())) or (r["key"],)
        same.setdefault(round(r["mean"], 2), {}).setdefault(runs, []).append(r["key"])
    flat = [f"{', '.join(k for keys in groups.values() for k in keys)} ({v:.1f} %)" for v, groups in same.items()
            if len(groups) > 1 and sum(map(len, groups.values())) > 2]
    if flat:
        parts.append("identical scores for " + "; ".join(flat) + " usually mean one constant prediction (the "
                     "majority class): those runs did not learn at this scale")
    stuck = [f"{r['key']} ({r['mean']:.1f} %)" for r in rs
             if len(r.get("values", ())) > 1 and max(r["values"]) - min(r["values"]) < 1e-9]
    if stuck:
        parts.append("every seed gives the same score for " + ", ".join(stuck) + ": most likely one constant "
                     "prediction (the majority class), so these points did not learn at this scale")
    if study.measure == "time":
        done = sorted(rs, key=lambda r: r["seconds"])
        parts.append("fastest here: " + str(done[0]["x"]) + ", most accurate: "
                     + str(max(rs, key=lambda r: r["mean"])["x"]))
    if study.measure == "curve" and len(rs) > 1:
        best = max(rs, key=lambda r: r["mean"])
        parts.append(f"best final dev accuracy here: {best['key']} ({best['mean']:.1f} %); the paper's curve "
                     "values are not readable, so no comparison")
    sc = study.scales[scale]
    seeds = "one seed, so no interval" if sc.seeds == 1 else f"{sc.seeds} seeds per point"
    return "; ".join(parts) + f" ({sc.describe()}; {seeds})."


def reading(study: Study, scale: str) -> str:
    """Per series, whether the paper's trend holds here, with the statistic, in one paragraph."""
    return reading_from(study, scale, rows(study, scale))


def verdicts(study: Study, scale: str) -> list[dict[str, Any]]:
    return series_readings(study, rows(study, scale))


def shipped_summary(scale: str = "medium") -> list[dict[str, Any]]:
    """Per paper study with that scale: its shipped results' verdicts (or why there are none), for results.md
    and the Benchmarks page. Reads only the package's shipped files, never the user folder."""
    from textcls.experiments.study_defs import STUDIES
    from textcls.experiments.study_shipped import load_shipped
    out = []
    for st in STUDIES.values():
        if scale not in st.scales:
            continue
        sc = st.scales[scale]
        cache = load_shipped(st, scale)
        d: dict[str, Any] = {"study": st.name, "figure": st.figure, "title": st.title, "scale": scale,
                             "runs": len(st.points) * sc.seeds, "describe": sc.describe(),
                             "minutes_estimate": round(len(st.points) * sc.seeds * sc.seconds_per_run / 60)}
        if cache is None:
            d["shipped"] = False
        else:
            rs = rows_from(st, scale, cache)
            d.update({"shipped": True, "date": cache.get("date"), "machine": cache.get("machine"),
                      "torch": cache.get("torch"), "minutes": cache.get("minutes"),
                      "verdicts": series_readings(st, rs), "reading": reading_from(st, scale, rs)})
        out.append(d)
    return out


def summary_rows(scale: str = "medium") -> list[dict[str, Any]]:
    """`shipped_summary` as a table, one row per study and series: its paper's claim, the verdict here, the
    difference in points with its 95 % interval (or why there is none), and when it was measured; a study not
    measured yet is one row saying how to measure it."""
    table = []
    for d in shipped_summary(scale):
        if not d["shipped"]:
            table.append({"study": d["study"], "figure": d["figure"], "series": "-", "paper's claim": "-",
                          "verdict here": "not measured yet", "difference (points)": None, "95 % interval": "",
                          "measured": f"~{d['minutes_estimate']} min: sh scripts/run_medium_studies.sh {d['study']}"})
            continue
        for it in d["verdicts"]:
            table.append({"study": d["study"], "figure": d["figure"], "series": it["series"],
                          "paper's claim": it["claim"] or "-", "verdict here": it["verdict"],
                          "difference (points)": it.get("diff"),
                          "95 % interval": f"[{it['lo']:+.1f}, {it['hi']:+.1f}]" if "lo" in it else it.get("why", ""),
                          "measured": f"{d['date']}, {d['minutes']} min"})
    return table


def summary_markdown(scale: str = "medium") -> list[str]:
    """The results.md section on the paper studies at this scale."""
    lines = [f"## Paper studies ({scale} scale)", "",
             "The papers' sweeps (`python -m textcls study`, the Studies page; docs/studies.md). Measured here, one "
             "torch thread, shipped in `textcls/experiments/shipped_studies/`; per series: the paper's claim, our "
             "difference with its 95 % Welch interval over seeds, and the verdict.", ""]
    for d in shipped_summary(scale):
        if not d["shipped"]:
            lines.append(f"- **{d['study']}** ({d['figure']}): not measured at this scale yet - {d['runs']} runs, "
                         f"about {d['minutes_estimate']} min on a quiet 2-core CPU "
                         f"(`sh scripts/run_medium_studies.sh {d['study']}`, then "
                         f"`python -m textcls study {d['study']} --scale {scale} --ship`).")
            continue
        lines.append(f"- **{d['study']}** ({d['figure']}; {d['describe']}; {d['date']}, {d['minutes']} min of runs "
                     f"on a shared CPU, torch {d['torch']}):")
        for it in d["verdicts"]:
            lines.append(f"  - {describe_item(it)}")
    lines.append("")
    return lines
