"""`textcls reproduce`: train the papers' configurations on the bundled data and write results.json and its
Markdown table next to the papers' figures (resumable; textcls/experiments/reproduce.py)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

from textcls.experiments.cells import SUITES, select_cells
from textcls.experiments.results import DEFAULT_OUT, fmt_number, load_results, table_rows, write_markdown
from textcls.cli.common import (UsageError, add_data_root, add_device, add_limit, add_seed, count, device,
    join_group, one_line)

def _csv(raw: str | None) -> list[str] | None:
    if raw is None:
        return None
    items = [x.strip() for x in raw.split(",") if x.strip()]
    return items or None


def _reproduce_arguments(p) -> None:
    p.add_argument("--suite", default=None,
                   help=f"comma-separated suites (default: all but smoke): {', '.join(SUITES)}")
    p.add_argument("--runs", type=count("runs"), default=None, help="runs per cell (default: as many as the paper averaged)")
    p.add_argument("--epochs", type=count("epochs"), default=None, help="epochs per run (default: each suite's)")
    add_limit(p)
    p.add_argument("--out", default=DEFAULT_OUT, help=f"results JSON (default {DEFAULT_OUT}); the Markdown "
                                                      "table goes beside it with the suffix .md")
    p.add_argument("--markdown", default=None, help="Markdown file (default: OUT with .md)")
    p.add_argument("--data", default=None, help="comma-separated data sets to keep (e.g. trec,sst2)")
    p.add_argument("--model", default=None, help="comma-separated models to keep (e.g. kim_cnn,agcnn)")
    p.add_argument("--only", default=None, help="comma-separated glob patterns on cell keys "
                                                "(e.g. 'agcnn_t3/cnn-non-static/*')")
    add_seed(p)                                                  # runs use seed, seed + 1, ...
    add_data_root(p)
    p.add_argument("--force", action="store_true", help="re-run cells already in the results file")
    p.add_argument("--list", action="store_true", help="list the selected cells and exit")
    p.add_argument("--dry-run", action="store_true", help="say what would run and exit")
    p.add_argument("--report", action="store_true", help="only rebuild the Markdown from the results file")
    add_device(p, None, "auto; under torchrun every rank trains each cell together (DDP)")
    p.add_argument("--amp", nargs="?", const="auto", default=None, choices=("off", "auto", "bf16", "fp16"),
                   help="mixed precision on CUDA for every run (default: each suite's; the GPU suites use auto)")


def _reproduce_job(args) -> Callable[[], int]:
    """Check the `textcls reproduce` arguments (ValueError on bad input) and return the job that runs it."""
    out = Path(args.out)
    md = Path(args.markdown) if args.markdown else out.with_suffix(".md")
    if out.is_dir() or md.is_dir():
        raise ValueError(f"--out {out} / --markdown {md} must be files, not folders")
    results = load_results(out)                                 # a corrupt file is an error before any run
    n_sessions = len(results.get("sessions", []))
    if args.report:
        def report() -> int:
            print(f"wrote {write_markdown(results, md)}")
            return 0
        return report
    cells = select_cells(_csv(args.suite), data=_csv(args.data), models=_csv(args.model), only=_csv(args.only))
    if not cells:
        raise ValueError("no cell matches the selection (see --list)")
    if args.list:
        def listing() -> int:
            for c in cells:
                paper = "-" if c.paper is None else f"{c.paper}"
                print(f"{c.key:<48} {c.model:<12} runs {c.runs}  epochs {c.epochs:<3} paper {paper}")
            return 0
        return listing

    if args.device is not None:
        device(args.device)

    def job() -> int:
        from textcls.experiments.reproduce import reproduce
        ctx = join_group(args.device)
        command = "python -m textcls reproduce " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else ""
        if ctx is not None:
            command = f"torchrun (world size {ctx.world_size}) " + command
        res = reproduce(cells, out=out, markdown=md, runs=args.runs, epochs=args.epochs, limit=args.limit,
                        seed=args.seed, data_root=args.data_root, force=args.force, dry_run=args.dry_run,
                        log=lambda m: print(m, file=sys.stderr, flush=True), command=command,
                        device=args.device, amp=args.amp)
        if args.dry_run or (ctx is not None and not ctx.is_main):
            return 0
        keys = {c.key for c in cells}
        for r in table_rows(res):
            if r["key"] in keys:
                paper = "-" if r["paper"] is None else f"{r['paper']:.1f}"
                print(f"{r['key']:<48} ours {fmt_number(r['ours']):>5} ({r['spread']})  paper {paper:>5}  "
                      f"delta {fmt_number(r['delta'], signed=True)}")
        print(f"wrote {out} and {md}")
        new_session = len(res.get("sessions", [])) > n_sessions
        failed = res["sessions"][-1].get("failed", []) if new_session else []
        return 1 if failed else 0
    return job


def cmd_reproduce(args) -> int:
    try:
        job = _reproduce_job(args)
    except (KeyError, ValueError) as e:
        raise UsageError(one_line(e)) from None
    return job()


def add_parser(sub) -> None:
    rp = sub.add_parser("reproduce", help="train the papers' configurations, write results.json + .md",
                        description="Train the configurations the papers report on the bundled data and write "
                                    "the results next to the papers' figures (resumable).")
    _reproduce_arguments(rp)
    rp.set_defaults(func=cmd_reproduce)
