"""`textcls counterfactuals`: edit every text of a split with one generator (textcls/analysis/counterfactuals.py) and
count how often the checkpoint's decision flips."""
from __future__ import annotations

import json
from pathlib import Path

from textcls.cli.common import (UsageError, add_checkpoint, add_data_options, add_seed, count, data_of, one_line,
    printable)


def cmd_counterfactuals(args) -> int:
    from textcls.checkpoint import load_checkpoint
    from textcls.analysis.counterfactuals import CounterfactualError, run_generator

    predictor = load_checkpoint(args.checkpoint)
    bundle = data_of(args, predictor)
    texts = list(bundle.splits[args.split].texts)[:args.limit]
    if not texts:
        raise UsageError(f"{bundle.name}/{args.split} is empty")
    try:
        rep = run_generator(predictor, texts, args.generator, checkpoint=Path(args.checkpoint).name,
                            rules=args.rules, seed=args.seed)
    except CounterfactualError as e:
        raise UsageError(one_line(e)) from None
    out = {**rep.summary(), "data": bundle.name, "split": args.split}
    for k in ("flip_rate", "mean_prob_change"):
        if out[k] != out[k]:                           # NaN (nothing edited) is not JSON
            out[k] = None
    if args.json:
        if args.examples:
            out["examples"] = rep.rows.head(args.examples).to_dict(orient="records")
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        rate = "-" if out["flip_rate"] is None else f"{100 * out['flip_rate']:.1f} %"
        change = "-" if out["mean_prob_change"] is None else f"{out['mean_prob_change']:+.3f}"
        print(printable(f"{out['checkpoint']} · {args.generator} on {bundle.name}/{args.split}: {out['n']} of "
                        f"{out['n_texts']} texts edited, flip rate {rate}, mean change of p(original label) "
                        f"{change}, {out['seconds']:.1f} s"))
        for r in rep.rows.head(args.examples).itertuples():
            print(f"  {'FLIP' if r.flipped else '    '} {one_line(r.label)}->{one_line(r.new_label)}  "
                  f"{one_line(r.edited)}")
    return 0


def add_parser(sub) -> None:
    from textcls.analysis.counterfactuals import GENERATORS  # the registry (numpy and pandas, no torch)
    names = ", ".join(GENERATORS)
    cf = sub.add_parser("counterfactuals", help="generated counterfactuals over a data split: flip rate per generator",
                        description=f"Edit every text of a split with one generator ({names}) and count how often "
                                    "the checkpoint's decision flips. --json prints one object: flip_rate, "
                                    "mean_prob_change, n, ...")
    add_checkpoint(cf)
    add_data_options(cf)
    cf.add_argument("--generator", required=True, metavar="NAME", choices=list(GENERATORS),
                    help="; ".join(f"{g.name}: {g.help}" for g in GENERATORS.values()))
    cf.add_argument("--rules", default=None, help="word_replacer rules, e.g. 'good -> bad, great -> awful'")
    add_seed(cf)
    cf.add_argument("--examples", type=count("examples"), default=0, metavar="K", help="also show the first K edits")
    cf.add_argument("--json", action="store_true", help="print one JSON object")
    cf.set_defaults(func=cmd_counterfactuals)
