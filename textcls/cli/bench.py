"""`textcls bench`: parameters, speed and memory of every model (random weights) and the shipped checkpoints
(ACT Table 5, LAMA Fig. 4); with --latency, one sentence's latency per thread count, idle and under --load; with
--explanations, textcls's explanations and their scoring per text, beside ferret-xai's when --ferret names a Python
that has it (textcls/experiments/bench.py, latency.py, explain_bench.py). The experiments import torch: they are
imported where the command runs, so `--help` and `list` stay light."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable

from textcls.experiments.background import LATENCY_PATTERN
from textcls.cli.common import UsageError, add_batch_size, count, one_line


def _bench_arguments(p) -> None:
    p.add_argument("--quick", action="store_true", help="fewer repeats and training steps (about a minute)")
    p.add_argument("--json", default=None, metavar="OUT", help="also write the full results as JSON to OUT")
    p.add_argument("--models", default=None, help="comma-separated model names to bench (default: all)")
    p.add_argument("--seq-len", type=count("seq_len"), default=56, help="tokens per input (default 56, ~ AG News)")
    add_batch_size(p, 100, "100, ACT Table 5")
    p.add_argument("--threads", type=count("threads"), default=None, help="torch.set_num_threads (default: as set)")
    p.add_argument("--checkpoints", default=os.environ.get("TEXTCLS_CHECKPOINTS", "checkpoints"),
                   help="folder of checkpoints to time (default: checkpoints)")
    p.add_argument("--no-memory", action="store_true", help="skip the memory measurements")
    p.add_argument("--no-training", action="store_true", help="skip the training-step timings")
    g = p.add_argument_group("latency (--latency): what a user waits for on a busy machine")
    g.add_argument("--latency", action="store_true",
                   help="only time one sentence through the shipped sst2 checkpoints (predict) and their integrated "
                        "gradients, at each thread count (1, torch's default, TEXTCLS_THREADS'), idle and with --load")
    g.add_argument("--load", type=count("load"), default=0, metavar="N",
                   help="with --latency: also measure with N busy background processes (started and stopped by "
                        "the command), e.g. 2; with --explanations: the whole timed run beside them")
    g.add_argument("--latency-threads", default=None, metavar="N,M",
                   help="with --latency: the thread counts to compare (default: 1, torch's default and the policy's)")
    g.add_argument("--pattern", default=LATENCY_PATTERN,
                   help=f"with --latency: checkpoint folder names to time (default {LATENCY_PATTERN})")
    g.add_argument("--no-ig", action="store_true", help="with --latency: skip integrated gradients")
    e = p.add_argument_group("explanations (--explanations): textcls's explanations per text, beside ferret-xai's")
    e.add_argument("--explanations", action="store_true",
                   help="time integrated gradients, gradient x input and comprehensiveness + sufficiency (AOPC) per "
                        "sst2 test text with one torch thread (--threads to change), at ferret's settings; with "
                        "--load N under N busy processes (docs/performance.md)")
    e.add_argument("--checkpoint", default=None, metavar="DIR",
                   help="with --explanations: the checkpoint (default checkpoints/minilm-sst2; --ferret needs a "
                        "Hugging Face one)")
    e.add_argument("--texts", type=int, default=None, metavar="N",
                   help="with --explanations: the first N sst2 test texts (default 50)")
    e.add_argument("--ferret", default=None, metavar="PYTHON",
                   help="with --explanations: a Python where ferret-xai is installed (e.g. /tmp/fenv/bin/python); "
                        "the same texts go through ferret's explainers and AOPC in that process, text by text beside "
                        "textcls's (textcls never imports ferret)")


def _progress(message: str) -> None:
    print(f"... {message}", file=sys.stderr, flush=True)


def _bench_job(args) -> Callable[[], int]:
    """Check the `textcls bench` arguments (ValueError on bad input) and return the job that runs it."""
    from textcls.experiments.bench import format_report, run_bench, write_json
    from textcls.experiments.specs import default_models
    models = None
    if args.models is not None:
        models = [m.strip() for m in args.models.split(",") if m.strip()]
        known = {s.model for s in default_models()} | {s.label for s in default_models()}
        unknown = sorted(set(models) - known)
        if unknown or not models:
            raise ValueError(f"--models: unknown model(s) {unknown}; known: {', '.join(sorted(known))}")
    if args.json is not None and Path(args.json).is_dir():
        raise ValueError(f"--json {args.json} is a folder; give a file name")
    if getattr(args, "explanations", False):
        return _explain_job(args)
    explain_flags = [f for f, v in (("--checkpoint", getattr(args, "checkpoint", None)),
                                    ("--texts", getattr(args, "texts", None)),
                                    ("--ferret", getattr(args, "ferret", None))) if v is not None]
    if explain_flags:
        raise ValueError(f"{', '.join(explain_flags)} go(es) with --explanations")
    if getattr(args, "latency", False):
        return _latency_job(args)
    if getattr(args, "load", 0) or getattr(args, "latency_threads", None):
        raise ValueError("--load goes with --latency or --explanations; --latency-threads with --latency")

    def job() -> int:
        result = run_bench(quick=args.quick, models=models, seq_len=args.seq_len, batch_size=args.batch_size,
                           threads=args.threads, checkpoints=args.checkpoints, memory=not args.no_memory,
                           training=not args.no_training, progress=_progress)
        print(format_report(result))
        if args.json:
            print(f"wrote {write_json(result, args.json)}")
        return 0
    return job


def _latency_job(args) -> Callable[[], int]:
    from textcls.experiments.bench import write_json
    from textcls.experiments.latency import bench_latency, format_latency
    if not Path(args.checkpoints).is_dir():
        raise ValueError(f"--checkpoints {args.checkpoints}: no such folder")
    counts = None
    if args.latency_threads:
        try:
            counts = sorted({int(x) for x in args.latency_threads.split(",") if x.strip()})
        except ValueError:
            counts = []
        if not counts or min(counts) < 1:
            raise ValueError(f"--latency-threads expects positive integers separated by commas, got "
                             f"{args.latency_threads!r}")
    elif args.threads is not None:
        counts = [args.threads]
    quick = args.quick

    def job() -> int:
        result = bench_latency(args.checkpoints, pattern=args.pattern, load=args.load, thread_settings=counts,
                               repeats=3 if quick else 7, ig=not args.no_ig, ig_repeats=1 if quick else 3,
                               progress=_progress)
        print(format_latency(result))
        if args.json:
            print(f"wrote {write_json(result, args.json)}")
        return 0 if result["models"] else 1
    return job


def _explain_job(args) -> Callable[[], int]:
    from textcls.experiments.bench import write_json
    from textcls.experiments.explain_bench import (DEFAULT_CHECKPOINT, DEFAULT_TEXTS, FerretUnavailable,
                                                   format_explain_bench, python_path, run_explain_bench, sst2_texts)
    if args.latency or args.latency_threads or args.models is not None:
        raise ValueError("--explanations goes without --latency, --latency-threads and --models")
    checkpoint = args.checkpoint or DEFAULT_CHECKPOINT
    if not Path(checkpoint).is_dir():
        raise ValueError(f"--checkpoint {checkpoint}: no such folder")
    n = DEFAULT_TEXTS if args.texts is None else args.texts
    sst2_texts(n)                                                  # ValueError: outside the test split
    ferret = python_path(args.ferret) if args.ferret is not None else None
    if ferret:
        from textcls.checkpoint.hf import is_hf_folder
        if not is_hf_folder(checkpoint):
            raise ValueError(f"--ferret needs a Hugging Face checkpoint (e.g. {DEFAULT_CHECKPOINT}); {checkpoint} "
                             "is not one")

    def job() -> int:
        try:
            result = run_explain_bench(checkpoint, texts=n, load=args.load, ferret=ferret,
                                       torch_threads=args.threads or 1, progress=_progress)
        except FerretUnavailable as e:
            raise UsageError(one_line(e)) from None
        print(format_explain_bench(result))
        if args.json:
            print(f"wrote {write_json(result, args.json)}")
        return 0
    return job


def cmd_bench(args) -> int:
    try:
        job = _bench_job(args)
    except (KeyError, ValueError) as e:
        raise UsageError(one_line(e)) from None
    return job()


def add_parser(sub) -> None:
    b = sub.add_parser("bench", help="parameters, speed and memory of every model; ACT Table 5, LAMA Fig. 4",
                       description="Benchmark the models (random weights) and the shipped checkpoints; with "
                                   "--latency, one sentence's latency per thread count, idle and under --load; with "
                                   "--explanations, explanations and their scoring per text beside ferret-xai's.")
    _bench_arguments(b)
    b.set_defaults(func=cmd_bench)
