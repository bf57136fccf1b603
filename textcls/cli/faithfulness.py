"""`textcls faithfulness`: ERASER comprehensiveness / sufficiency, rank agreement, erasure flips and the attention
permutation / uniform tests of a checkpoint's explanations over a whole split, batched across texts
(textcls/interpret/batched.py)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from textcls.cli.common import (UsageError, add_checkpoint, add_data_options, add_explanation_options, add_seed, count,
    data_of, json_value, methods_of, one_line, printable)

DEFAULT_FAITH_METHODS = "attention,random,leave_one_out,integrated_gradients,grad_x_input"
FAST_METHODS = "attention,random,leave_one_out"


def _max_rss_mb() -> float | None:
    """Peak resident memory of this process in MB (None where the platform does not say)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(rss / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def gold_by_name(gold: list, data_labels: list, model_labels) -> list[int] | None:
    """The data's gold label indices mapped to the checkpoint's labels by name (the app's rule); a gold label the
    checkpoint does not have is a UsageError (exit 2). None without gold labels or label names."""
    if not gold or not model_labels:
        return None
    index = {str(x).lower(): i for i, x in enumerate(model_labels)}
    out = []
    for g in gold:
        name = str(data_labels[int(g)]) if data_labels and 0 <= int(g) < len(data_labels) else str(g)
        if name.lower() not in index:
            raise UsageError(f"the data's label {name!r} is not one of the checkpoint's labels "
                             f"({', '.join(map(str, model_labels))})")
        out.append(index[name.lower()])
    return out


def write_lines(path: Path, objs: list[dict]) -> None:
    """The JSON lines to `path`, replaced whole (a temporary file renamed over it): never half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    tmp.write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    tmp.replace(path)


def _lines(rep, head: dict, extra: dict) -> list[dict]:
    """The report as JSON-ready objects: one per method, then the summary."""
    head = {**head, "n_texts": rep.settings["n_texts"], "n_total": rep.settings.get("n_total"),
            "stopped": rep.settings.get("stopped", False), **extra}
    lines = [{**head, "kind": "method", **row} for row in rep.rows]
    summary = {**head, "kind": "summary", "method": None, "seconds": round(rep.seconds, 3),
               **{k: v for k, v in rep.model_row.items() if k != "seconds"},
               "attention_tests_seconds": rep.model_row.get("seconds"),
               "timings": {k: round(v, 3) for k, v in rep.timings.items()}, "max_rss_mb": _max_rss_mb(),
               **{k: rep.settings.get(k) for k in ("removal", "reference", "baseline", "n_steps", "n_permutations",
                                                   "random_orders", "flip_orders", "naopc_beam", "variants_scored",
                                                   "notes")}}
    return [{k: json_value(v) for k, v in o.items()} for o in lines + [summary]]


def cmd_faithfulness(args) -> int:
    from textcls.checkpoint import load_checkpoint
    from textcls.interpret.batched import SliceRun

    from textcls.interpret.sharded import run_sharded
    from textcls.runtime.distributed import init
    methods = methods_of(args.methods or (FAST_METHODS if args.fast else DEFAULT_FAITH_METHODS))
    try:
        ctx = init(args.device)                  # under torchrun: join the group (gloo on CPU, nccl on CUDA)
    except ValueError as e:
        raise UsageError(one_line(e)) from None
    predictor = load_checkpoint(args.checkpoint, device=str(ctx.device))
    bundle = data_of(args, predictor)
    texts = list(bundle.splits[args.split].texts)[: args.limit]
    gold = gold_by_name(list(bundle.splits[args.split].labels)[: args.limit], list(bundle.labels), predictor.labels)
    reference = "leave_one_out" if "leave_one_out" in methods else methods[0]
    try:
        run = SliceRun(predictor, texts, methods, reference=reference, removal=args.removal, baseline=args.baseline,
                       n_steps=args.steps, n_permutations=args.permutations,
                       attention_tests=not (args.no_attention_tests or args.fast), seed=args.seed,
                       flip_orders=not (args.no_flip_orders or args.fast), flips=not args.no_flips,
                       chunk=args.chunk, naopc_beam=None if args.no_naopc else args.beam,
                       **({} if args.random_orders is None else {"random_orders": args.random_orders}))
    except ValueError as e:
        raise UsageError(one_line(e)) from None
    head = {"checkpoint": str(args.checkpoint), "model": predictor.info.get("model"), "data": bundle.name,
            "split": args.split, "world_size": ctx.world_size}
    bar = None
    if not args.quiet and ctx.is_main:
        from tqdm import tqdm
        bar = tqdm(total=run.total, desc=f"{Path(args.checkpoint).name} on {bundle.name}/{args.split}",
                   unit="text", file=sys.stderr, dynamic_ncols=True, mininterval=0.5 if sys.stderr.isatty() else 5.0)

    def progress(done: int, total: int) -> None:
        if bar is not None:
            bar.update(done - bar.n)
        if args.out is not None and ctx.is_main and not ctx.active and 0 < done < total:
            write_lines(args.out, _lines(run.report(), head, {}))       # what is done so far survives a stop
    try:
        main_rank = run_sharded(run, progress)
    finally:
        if bar is not None:
            bar.close()
    if not main_rank:                            # rank 0 reports for the group
        return 0
    rep = run.report()
    if args.out is not None:
        write_lines(args.out, _lines(rep, head, {"sanity": "pending"}))   # scored: kept whatever the checks do
    from textcls.interpret.measures import slice_measures
    extra, extra_notes = slice_measures(run, gold, predictor.labels, sanity_texts=args.sanity, seed=args.seed)
    for row in rep.rows:
        row.update(extra.get(row["method"], {}))
    rep.settings["notes"] = list(rep.settings["notes"]) + extra_notes
    objs = _lines(rep, head, {})
    if args.out is not None:
        write_lines(args.out, objs)
    if args.json:
        for obj in objs:
            print(json.dumps(obj))
        return 0
    print(printable(f"{head['checkpoint']} ({head['model']}) on {bundle.name}/{args.split}: {rep.settings['n_texts']} texts, "
          f"{rep.seconds:.1f} s"))
    print(f"{'method':<22} {'NAOPC c/s':>11} {'AOPC comp. [95% CI]':<26} {'AOPC suff. [95% CI]':<26} {'tau vs ref':>10} "
          f"{'top flip':>9} {'to flip':>8} {'seconds':>8} {'AUPRC':>6} {'tok F1':>6} {'rand rho':>8} {'s/text':>7}")

    def ci(row, key):
        lo, hi = row.get(key + "_ci", (float("nan"), float("nan")))
        return f"{row.get(key, float('nan')):.3f} [{lo:.3f}, {hi:.3f}]"
    for row in rep.rows:
        nc, ns = row.get("naopc_comprehensiveness", float("nan")), row.get("naopc_sufficiency", float("nan"))
        print(f"{row['method']:<22} {nc:>5.3f}/{ns:<5.3f} {ci(row, 'aopc_comprehensiveness'):<26} "
              f"{ci(row, 'aopc_sufficiency'):<26} "
              f"{row.get('kendall_tau_ref', float('nan')):>10.3f} {row.get('erasure_top_flip', float('nan')):>9.3f} "
              f"{row.get('erasure_fraction_to_flip', float('nan')):>8.3f} {row['seconds']:>8.1f} "
              f"{row.get('plausibility_auprc', float('nan')):>6.3f} {row.get('plausibility_token_f1', float('nan')):>6.3f} "
              f"{row.get('sanity_rho', float('nan')):>8.3f}{'!' if row.get('sanity_flag') else ' '}"
              f"{row.get('seconds_per_text', float('nan')):>7.3f}")
    mr = rep.model_row
    if mr:
        print(f"attention tests ({', '.join(mr['attention_maps'])}): permutation median TVD "
              f"{mr['permutation_median_tvd']:.3f}, flip rate {mr['permutation_flip_rate']:.3f}; uniform TVD "
              f"{mr['uniform_tvd']:.3f}, flip rate {mr['uniform_flip_rate']:.3f} ({mr['seconds']:.1f} s)")
    for note in rep.settings["notes"]:
        print(f"note: {note}")
    return 0


def add_parser(sub) -> None:
    f = sub.add_parser("faithfulness", help="faithfulness of explanations over a data split (batched)",
                       description="ERASER comprehensiveness / sufficiency (AOPC with bootstrap 95 % intervals), "
                                   "rank agreement with leave-one-out, erasure flips, and the attention permutation "
                                   "/ uniform tests over a whole split, batched across texts. With --json: one "
                                   "JSON object per method, then a summary object (kind 'summary': the attention "
                                   "tests, total seconds, settings). Progress bar on stderr.")
    add_checkpoint(f)
    add_data_options(f)
    add_explanation_options(f, f"{DEFAULT_FAITH_METHODS}; with --fast {FAST_METHODS}; a method that does not "
                               "apply to the model is skipped with a note")
    f.add_argument("--fast", action="store_true",
                   help=f"the fast set: {FAST_METHODS} (unless --methods says otherwise), AOPC with intervals, rank "
                        "agreement and single-word flips, without the erasure-flip orders and the permutation / "
                        "uniform tests (those cost most of a run's passes: for a 22 M-parameter encoder they take "
                        "a full split from minutes to an hour)")
    f.add_argument("--removal", choices=("delete", "pad", "unk"), default="delete",
                   help="how a token is removed (default delete)")
    f.add_argument("--permutations", type=count("permutations"), default=30,
                   help="attention permutations per text (default 30)")
    f.add_argument("--random-orders", type=count("random_orders"), default=None,
                   help="random orders of the erasure-flip test per text (default 1: the mean over texts averages "
                        "them; 5 gives the numbers of one text's own report)")
    f.add_argument("--no-attention-tests", action="store_true", help="skip the permutation / uniform tests")
    f.add_argument("--no-flips", action="store_true",
                   help="skip the flip test (single-word flips and erasure-flip orders): no one-word variants are "
                        "scored unless leave-one-out is a method (AOPC, NAOPC and rank agreement need none)")
    f.add_argument("--no-flip-orders", action="store_true",
                   help="skip the erasure-flip orders (the fraction of words removed before the label flips); the "
                        "single-word flips stay")
    f.add_argument("--chunk", type=count("chunk"), default=128,
                   help="texts per step (default 128); under torchrun rank r scores steps r, r + N, ... and rank 0 "
                        "reports the numbers one process gives with the same --chunk")
    f.add_argument("--device", default="cpu", help="cpu (default), cuda, auto; under torchrun each rank takes its "
                   "local GPU (nccl) or the CPU (gloo)")
    f.add_argument("--sanity", type=count("sanity"), default=32, metavar="N",
                   help="the randomisation sanity check (layers re-initialised top-down, Spearman rho of each "
                        "explanation before / after) on the first N texts (default 32; 0 skips it); a '!' flags "
                        "rho >= 0.5 after the whole model is random")
    f.add_argument("--beam", type=count("beam"), default=1,
                   help="NAOPC (Edin et al. 2025): each text's lowest and highest AOPC over word orders, exact up "
                        "to 8 words, beyond by a beam search of this width (default 1, greedy: about ten times the "
                        "erasure passes of the curves alone; 0: exact bounds only, NAOPC blank on longer texts)")
    f.add_argument("--no-naopc", action="store_true", help="no NAOPC (raw AOPC only: the fastest run)")
    f.add_argument("--out", type=Path, default=None, metavar="FILE",
                   help="also write the JSON lines to FILE, rewritten after every chunk of texts and again before "
                        "the randomisation check: a stopped or failed run keeps what it had scored")
    add_seed(f)
    f.add_argument("--json", action="store_true", help="JSON lines on stdout: one object per method, then a summary")
    f.add_argument("--quiet", action="store_true", help="no progress bar")
    f.set_defaults(func=cmd_faithfulness)
