"""`python -m textcls study NAME [--scale quick|medium|full] [--run] [--device ...] [--json]`, `study --list
[--json]` and `study NAME --scale medium --ship`: show or run one of the paper studies
(textcls.experiments.study_defs), resumable, cached in the user folder; results measured here ship with the
package (study_shipped) and are shown at once, without training, until the user runs the study again."""
from __future__ import annotations

import json
import sys

from textcls.cli.common import UsageError, add_data_root, add_device

SCALES = ("quick", "medium", "full")


def add_parser(sub) -> None:
    s = sub.add_parser("study", help="show or run a paper study (a grid of short trainings) and print its points",
                       description="Run one of the papers' studies (a grid of trainings behind a figure), resumable; "
                                   "finished runs are cached in $TEXTCLS_HOME/studies and reused. A scale whose "
                                   "results ship with textcls is shown at once; --run trains it again here.")
    s.add_argument("name", nargs="?", help="study name (see --list)")
    s.add_argument("--list", action="store_true", help="list the studies and their scales (--json: as JSON)")
    s.add_argument("--scale", default=None, choices=SCALES,
                   help="quick: minutes on a CPU; medium: about an hour per study (results ship with textcls); "
                        "full: the paper's configuration, hours. Default: medium where results ship, else quick")
    s.add_argument("--run", action="store_true",
                   help="train the study on this machine even when results ship (they go to the user folder "
                        "and replace the shipped ones there only)")
    s.add_argument("--show", action="store_true",
                   help="print what is measured so far (user folder, else shipped) without training")
    s.add_argument("--ship", action="store_true",
                   help="copy this user folder's finished runs into the package's shipped results (maintainers; "
                        "refused unless every point has >= 3 seeds)")
    add_device(s, None, "the training default")
    add_data_root(s)
    s.add_argument("--yes", action="store_true", help="start even when the estimate is over 6 hours")
    s.add_argument("--json", action="store_true", help="print the points as JSON")
    s.set_defaults(func=cmd_study)


def _list(as_json: bool) -> int:
    from textcls.experiments.study_defs import STUDIES
    from textcls.experiments.study_shipped import completeness, load_shipped
    from textcls.experiments.study_results import rows_from, series_readings
    out = []
    for st in STUDIES.values():
        scales = {}
        for name, sc in st.scales.items():
            d = {"points": len(st.points), "seeds": sc.seeds, "runs": len(st.points) * sc.seeds,
                 "describe": sc.describe(), "minutes_estimate": round(len(st.points) * sc.seeds
                                                                     * sc.seconds_per_run / 60)}
            if sc.help:
                d["how_chosen"] = sc.help
            shipped = load_shipped(st, name)
            if shipped is not None:
                points, seeds = completeness(st, name, shipped)
                d["shipped"] = {"points": points, "min_seeds": seeds, "date": shipped.get("date"),
                                "machine": shipped.get("machine"), "torch": shipped.get("torch"),
                                "minutes": shipped.get("minutes"),
                                "reading": [{k: v for k, v in it.items() if k not in ("grid",)}
                                            for it in series_readings(st, rows_from(st, name, shipped))]}
            scales[name] = d
        out.append({"name": st.name, "figure": st.figure, "title": st.title, "measure": st.measure,
                    "scales": scales})
    if as_json:
        print(json.dumps(out, indent=1))
        return 0
    for st in out:
        print(f"{st['name']:9} {st['figure']:16} {st['title']}")
        for name, d in st["scales"].items():
            ship = (f"; shipped: {d['shipped']['points']} points x >= {d['shipped']['min_seeds']} seeds"
                    if "shipped" in d else "")
            print(f"{'':9}   {name + ':':7} {d['points']} points; {d['describe']}{ship}")
    return 0


def cmd_study(args) -> int:
    from textcls.experiments.study_defs import get_study
    if args.list:
        return _list(args.json)
    if not args.name:
        raise UsageError("give a study name or --list")
    try:
        st = get_study(args.name)
    except ValueError as e:
        raise UsageError(str(e)) from None
    from textcls.experiments.study_run import StudyError, estimate_seconds, run_study
    from textcls.experiments.study_shipped import load_shipped, results, ship
    scale = args.scale or ("medium" if "medium" in st.scales and load_shipped(st, "medium") else "quick")
    if scale not in st.scales:
        raise UsageError(f"{st.name} has no scale {scale!r}; choose one of {', '.join(st.scales)}")
    if args.ship:
        try:
            print(f"shipped: {ship(st, scale)}")
        except StudyError as e:
            raise UsageError(str(e)) from None
        return 0
    from textcls.experiments.study_results import reading_from, rows_from, series_readings
    log = (lambda m: print(m, file=sys.stderr)) if args.json else print
    cache, source = results(st, scale)
    if (source != "shipped" or args.run) and not args.show:
        from textcls.runtime import threads
        log(f"{st.name} ({scale}): estimate {estimate_seconds(st, scale) / 60:.0f} min for the uncached runs")
        try:
            with threads.batch(1):
                run_study(st, scale, device=args.device, data_root=args.data_root, confirm_long=args.yes, log=log)
        except StudyError as e:
            raise UsageError(str(e)) from None
        cache, source = results(st, scale)
    rs = rows_from(st, scale, cache)
    label = (f"measured here at {scale} scale ({cache.get('date')}, {cache.get('machine')}, torch "
             f"{cache.get('torch')}; shipped with textcls - `--run` trains it again on this machine)"
             if source == "shipped" else f"run on this machine ({scale} scale, user folder)" if source == "user"
             else f"nothing measured yet at {scale} scale")
    text = reading_from(st, scale, rs)
    if args.json:
        print(json.dumps({"study": st.name, "scale": scale, "source": source, "label": label,
                          "points": [{k: v for k, v in r.items() if k != "curve"} | {"curve": r["curve"]}
                                     for r in rs],
                          "verdicts": series_readings(st, rs), "reading": text}, indent=1))
    else:
        log(f"{st.name} ({scale}): {label}")
        for r in rs:
            paper = f"{r['paper']:.1f}" if r["paper"] is not None else "-"
            print(f"  {r['key']:28} {r['mean']:5.1f} % +- {r['std']:.1f} (n={r['n']})  paper {paper:>5}  "
                  f"{r['seconds_per_epoch']:.2f} s/epoch")
        print(text)
    return 0
