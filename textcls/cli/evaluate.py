"""`textcls evaluate` (accuracy, macro-F1, per-class scores and the confusion matrix of a checkpoint on a data
split) and `textcls predict` (classify texts given on the command line or on stdin)."""
from __future__ import annotations

import json
import sys
from typing import Any

from textcls.cli.common import (UsageError, add_batch_size, add_checkpoint, add_data_options, add_device, data_of,
    device, limit_flags, one_line, printable)


def format_report(r: dict[str, Any]) -> str:
    labels = [printable(x) for x in r["labels"]]
    w = max(8, max(len(x) for x in labels))
    lines = [f"accuracy {r['accuracy']:.4f}   macro-F1 {r['macro_f1']:.4f}"
             + (f" (without {printable(r['ignore_label'])!r}; all classes {r['macro_f1_all']:.4f})"
                if r["ignore_label"] else "")
             + f"   n = {r['n']}", "",
             f"{'class':<{w}}  precision  recall     f1  support"]
    for lab, shown in zip(r["labels"], labels):
        c = r["per_class"][lab]
        lines.append(f"{shown:<{w}}  {c['precision']:9.4f}  {c['recall']:6.4f}  {c['f1']:.4f}  {c['support']:7d}")
    if r.get("per_relation"):
        lines += ["", f"per relation, directions together (official-style: a hit needs the right direction); "
                      f"macro-F1 over relations {r['macro_f1_official']:.4f}",
                  f"{'relation':<{w}}  precision  recall     f1  support"]
        for rel, c in r["per_relation"].items():
            lines.append(f"{printable(rel):<{w}}  {c['precision']:9.4f}  {c['recall']:6.4f}  {c['f1']:.4f}  "
                         f"{c['support']:7d}")
    if r.get("confusion") is None:          # too many classes for a matrix (metrics.MAX_CONFUSION_LABELS)
        lines += ["", printable(r.get("confusion_note") or "no confusion matrix"),
                  f"{'true':<{w}}  {'predicted':<{w}}  count"]
        lines += [f"{printable(c['true']):<{w}}  {printable(c['predicted']):<{w}}  {c['count']:5d}"
                  for c in r.get("confusions") or []]
        return "\n".join(lines)
    lines += ["", "confusion (rows: true, columns: predicted, in the order above)"]
    lines += ["  " + " ".join(f"{v:5d}" for v in row) for row in r["confusion"]]
    return "\n".join(lines)


def cmd_evaluate(args) -> int:
    from textcls.checkpoint import load_checkpoint
    from textcls.analysis.metrics import default_ignore_label, evaluate

    predictor = load_checkpoint(args.checkpoint, device=device(args.device))
    bundle = data_of(args, predictor, limit=args.limit)
    ignore = default_ignore_label(bundle.name, predictor.labels)
    try:
        report = evaluate(predictor, bundle.splits[args.split], label_names=bundle.labels, ignore_label=ignore,
                          batch_size=args.batch_size)
    except ValueError as e:  # label mismatch between data and model
        raise UsageError(one_line(e)) from None
    report = {"checkpoint": str(args.checkpoint), "model": predictor.info.get("model"), "data": bundle.name,
              "split": args.split, **report}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(printable(f"{report['checkpoint']} ({report['model']}) on {bundle.name}/{args.split}"))
        print(format_report(report))
    return 0


def cmd_predict(args) -> int:
    from textcls.checkpoint import load_checkpoint

    texts = []
    for t in args.texts:
        if t == "-":
            texts += [line.rstrip("\r\n") for line in sys.stdin]      # one prediction per line, blank ones too
        else:
            texts.append(t)
    if not texts:
        raise UsageError("no text to classify")
    predictor = load_checkpoint(args.checkpoint, device=device(args.device))
    preds = predictor.predict(texts, batch_size=args.batch_size)
    empty = [t for t, p in zip(texts, preds) if t.strip() and not p.tokens]
    if empty:                      # a text (not a blank line) that its tokenizer leaves nothing of gets no verdict
        short = empty[0] if len(empty[0]) <= 40 else empty[0][:37] + "..."
        more = f" (and {len(empty) - 1} more)" if len(empty) > 1 else ""
        raise UsageError(f"text {printable(short)!r}{more} has no words the model reads (nothing is left after its "
                         "tokenizer); no prediction")
    if args.json:
        items = [{"text": t, **p.to_dict()} for t, p in zip(texts, preds)]
        print(json.dumps(items[0] if len(items) == 1 else items, indent=2, ensure_ascii=False))
    else:
        for t, p in zip(texts, preds):
            short = t if len(t) <= 70 else t[:67] + "..."
            note = "  [truncated]" if p.truncated else ""
            shown = printable(" ".join(short.split())) or "(empty text)"      # never the type name of the text
            print(f"{printable(p.label)}\t{p.probabilities[p.label]:.4f}\t{shown}{note}")
    return 0


def add_parsers(sub) -> None:
    e = sub.add_parser("evaluate", help="evaluate a checkpoint on a data split",
                       description="Accuracy, macro-F1 (SemEval: without Other), per-class scores, confusion.")
    add_checkpoint(e)
    add_data_options(e)
    e.add_argument("--json", action="store_true",
                   help="print JSON: accuracy, macro_f1, per_class, confusion, labels, n, loss")
    add_batch_size(e, 128)
    add_device(e, "cpu", "cpu")
    limit_flags(e, ("max_file_mb", "max_parameters"))
    e.set_defaults(func=cmd_evaluate)

    r = sub.add_parser("predict", help="classify texts with a checkpoint",
                       description="Classify texts; '-' reads one text per line from stdin. With --json: one "
                                   "object for one text, a list for several.")
    add_checkpoint(r)
    r.add_argument("texts", nargs="+", metavar="TEXT", help="text(s) to classify, or - for stdin")
    r.add_argument("--json", action="store_true", help="print label, probabilities, tokens, truncated as JSON")
    add_batch_size(r, 64)
    add_device(r, "cpu", "cpu")
    limit_flags(r, ("max_parameters",))
    r.set_defaults(func=cmd_predict)
