"""`python -m textcls study NAME [--scale quick|full] [--device ...] [--json]` and `study --list`: run one of
the paper studies (textcls.experiments.study_defs), resumable, cached in the user folder."""
from __future__ import annotations

import json
import sys

from textcls.cli.common import UsageError, add_data_root, add_device


def add_parser(sub) -> None:
    s = sub.add_parser("study", help="run a paper study (a grid of short trainings) and print its points",
                       description="Run one of the papers' studies (a grid of trainings behind a figure), resumable; "
                                   "finished runs are cached in $TEXTCLS_HOME/studies and reused.")
    s.add_argument("name", nargs="?", help="study name (see --list)")
    s.add_argument("--list", action="store_true", help="list the studies and their scales")
    s.add_argument("--scale", default="quick", choices=("quick", "medium", "full"),
                   help="quick: minutes on a CPU; medium: about an hour per study (results ship); full: hours")
    add_device(s, None, "the training default")
    add_data_root(s)
    s.add_argument("--yes", action="store_true", help="start even when the estimate is over 6 hours")
    s.add_argument("--json", action="store_true", help="print the points as JSON")
    s.set_defaults(func=cmd_study)


def cmd_study(args) -> int:
    from textcls.experiments.study_defs import STUDIES, get_study
    if args.list:
        for st in STUDIES.values():
            print(f"{st.name:9} {st.figure:16} {st.title}")
            for name, sc in st.scales.items():
                print(f"{'':9}   {name:5}: {len(st.points)} points; {sc.describe()}")
        return 0
    if not args.name:
        raise UsageError("give a study name or --list")
    try:
        st = get_study(args.name)
    except ValueError as e:
        raise UsageError(str(e)) from None
    from textcls.runtime import threads
    from textcls.experiments.study_results import reading, rows
    from textcls.experiments.study_run import StudyError, estimate_seconds, run_study
    log = (lambda m: print(m, file=sys.stderr)) if args.json else print
    log(f"{st.name} ({args.scale}): estimate {estimate_seconds(st, args.scale) / 60:.0f} min for the uncached runs")
    try:
        with threads.batch(1):
            run_study(st, args.scale, device=args.device, data_root=args.data_root, confirm_long=args.yes, log=log)
    except StudyError as e:
        raise UsageError(str(e)) from None
    rs = rows(st, args.scale)
    if args.json:
        print(json.dumps({"study": st.name, "scale": args.scale, "points": rs,
                          "reading": reading(st, args.scale)}, indent=1))
    else:
        for r in rs:
            paper = f"{r['paper']:.1f}" if r["paper"] is not None else "-"
            print(f"  {r['key']:28} {r['mean']:5.1f} % +- {r['std']:.1f} (n={r['n']})  paper {paper:>5}  "
                  f"{r['seconds_per_epoch']:.2f} s/epoch")
        print(reading(st, args.scale))
    return 0
