"""`textcls patch DIR --clean TEXT --corrupt TEXT [--by layer|position|head|gate|filter] [--json]`: activation
patching of a minimal pair (the clean run's activations put into the corrupted run one cell at a time; the share of
the logit difference each cell restores), attribution patching beside it and their agreement; `--lens` adds the
classifier head read at every layer of both texts (textcls.interpret.patching, textcls.interpret.lens)."""
from __future__ import annotations

import json

from textcls.cli.common import UsageError, add_checkpoint, json_value, one_line, printable

BYS = ("layer", "position", "head", "gate", "filter")      # textcls.interpret.patching.BYS (no numpy here)
BY_HELP = ("the grid: layer (default: each layer's stream x position), position (the same; AGCNN: each gate x "
           "position), head (layer x head), gate (AGCNN: gate x channel group), filter (Kim CNN, AGCNN, ACT: filter "
           "groups)")


def _grid(title: str, rows: list[str], columns: list[str], values) -> list[str]:
    width = max(8, *(len(c) for c in columns))
    head = max(8, *(len(r) for r in rows))
    out = [title, printable(" " * head + " " + " ".join(f"{c[:width]:>{width}}" for c in columns))]
    for r, vals in zip(rows, values):
        cells = " ".join(f"{'-':>{width}}" if v != v else f"{v:>{width}.3f}" for v in vals)
        out.append(printable(f"{r:>{head}} {cells}"))
    return out


def _lens(predictor, texts: list[str]) -> list[dict] | None:
    from textcls.interpret.lens import layer_lens
    try:
        lenses = [layer_lens(predictor, t) for t in texts]
    except ValueError:
        return None                                    # a family without a stack of layers: no lens
    return [{"text": t, "rows": L.rows, "predicted": L.predicted, "labels": L.labels,
             "probabilities": [[float(p) for p in row] for row in L.probabilities]} for t, L in zip(texts, lenses)]


def cmd_patch(args) -> int:
    from textcls.checkpoint import load_checkpoint
    from textcls.interpret.patching import PairError, patch_pair
    if not 1 <= args.groups <= 1000:
        raise UsageError(f"--groups must be between 1 and 1000, got {args.groups}")
    if not args.clean.strip() or not args.corrupt.strip():
        raise UsageError("--clean and --corrupt need a text each")
    predictor = load_checkpoint(args.checkpoint, device="cpu")
    try:
        r = patch_pair(predictor, args.clean, args.corrupt, args.by, attribution=not args.no_attribution,
                       groups=args.groups)
    except PairError as e:
        raise UsageError(one_line(e)) from None
    lens = _lens(predictor, [args.clean, args.corrupt]) if args.lens else None
    if args.json:
        obj = r.to_dict()
        if args.lens:
            obj["lens"] = lens
        print(json.dumps(obj, default=json_value, allow_nan=False))
        return 0
    for name, text, pred in (("clean", r.clean, r.clean_prediction), ("corrupt", r.corrupt, r.corrupt_prediction)):
        print(printable(f"{name:>8}: {text}  ->  {pred['label']} ({pred['probabilities'][pred['label']]:.3f})"))
    t, f = r.labels[r.target], r.labels[r.foil]
    print(printable(f"LD = logit[{t}] - logit[{f}]: clean {r.ld_clean:.3f}, corrupt {r.ld_corrupt:.3f}; "
                    f"nothing patched restores {r.nothing:.1e}"))
    print()
    print("\n".join(_grid(f"restored (activation patching, clean into corrupt): rows {r.row_axis}, columns "
                          f"{r.column_axis}", r.rows, r.columns, r.restored)))
    if r.attribution is not None:
        print()
        print("\n".join(_grid("attribution patching (first-order estimate of the same share)", r.rows, r.columns,
                              r.attribution)))
        a = r.agreement
        if a.get("cells"):
            print(f"agreement over {int(a['cells'])} cells ('all' left out): Pearson {a['pearson']:.3f}, "
                  f"Spearman {a['spearman']:.3f}")
    if args.lens and lens is None:
        print(f"\nlens: {r.model} has no stack of layers to read the head from (docs/patching.md)")
    for item in lens or []:
        print()
        print(printable(f"lens ({item['text']}): P({item['labels'][-1]}) per layer: " + ", ".join(
            f"{row} {p[-1]:.3f}" for row, p in zip(item["rows"], item["probabilities"]))))
    print()
    for note in r.notes + [r.definition]:
        print(printable(note))
    return 0


def add_parser(sub) -> None:
    f = sub.add_parser("patch", help="activation and attribution patching of a minimal pair",
                       description="Patch the clean text's activations into the corrupted text's run, one cell "
                                   "(layer x position, head, gate, filter group) at a time, and report the share "
                                   "of the logit difference each cell restores; attribution patching beside it. "
                                   "The two texts must line up word by word (exit 2 otherwise). --json: {\"rows\", "
                                   "\"columns\", \"axes\", \"restored\": [[...]], \"attribution\": [[...]], "
                                   "\"cells\": [{\"row\", \"column\", \"restored\", \"attribution\", "
                                   "\"prediction\"}], \"clean_prediction\", \"corrupt_prediction\", \"agreement\", "
                                   "\"definition\", ...}.")
    add_checkpoint(f)
    f.add_argument("--clean", required=True, metavar="TEXT", help="the text whose activations are patched in")
    f.add_argument("--corrupt", required=True, metavar="TEXT", help="the text they are patched into")
    f.add_argument("--by", choices=BYS, default="layer", help=BY_HELP)
    f.add_argument("--groups", type=int, default=10, help="filter or channel groups for --by filter/gate (10)")
    f.add_argument("--no-attribution", action="store_true", help="activation patching only")
    f.add_argument("--lens", action="store_true",
                   help="also the classifier head read at every layer of both texts (Transformer, ACT, Hugging Face)")
    f.add_argument("--json", action="store_true", help="JSON on stdout")
    f.set_defaults(func=cmd_patch)
