"""`textcls list` (the registered models, the data sets and the checkpoints, invalid ones with the reason) and
`textcls limits` (the limits that protect the machine)."""
from __future__ import annotations

import json

from textcls.cli.common import UsageError, add_data_root, one_line, printable


def cmd_list(args) -> int:
    from textcls.checkpoint import list_all_checkpoints, list_checkpoints
    from textcls.data.datasets import list_datasets
    from textcls.runtime.paths import checkpoint_roots
    from textcls.models.registry import get_entry, list_models

    models = [{"name": n, "input": get_entry(n).input_kind, "presets": sorted(get_entry(n).presets),
               "variants": sorted(get_entry(n).variants), "description": get_entry(n).description}
              for n in list_models()]
    try:
        datasets = list_datasets(args.data_root)
    except (ValueError, FileNotFoundError) as e:
        raise UsageError(one_line(e)) from None
    cks = (list_checkpoints(args.checkpoints, include_invalid=True, deep=True) if args.checkpoints
           else list_all_checkpoints(include_invalid=True, deep=True))
    if args.json:
        print(json.dumps({"models": models, "datasets": datasets,
                          "checkpoints": [{"name": c.name, "path": str(c.path), "model": c.model, "data": c.data,
                                           "test_accuracy": c.test_accuracy, "valid": c.valid, "error": c.error}
                                          for c in cks]}, indent=2))
        return 0
    print("models:")
    for m in models:
        extra = f" [presets: {', '.join(m['presets'])}]" if m["presets"] else ""
        print(f"  {m['name']:<12} {m['input']:<9} {m['description']}{extra}")
    print("data sets:" + ("" if datasets else " none found (set TEXTCLS_DATA or --data-root)"))
    for d in datasets:
        print(f"  {printable(d)}")
    where = args.checkpoints or " and ".join(str(r) for r in checkpoint_roots())
    print(printable(f"checkpoints in {where}:") + ("" if cks else " none"))
    for c in cks:
        if c.valid:
            acc = "n/a" if c.test_accuracy is None else f"{c.test_accuracy:.4f}"
            print(printable(f"  {c.name:<24} {c.model:<12} {c.data:<14} test acc {acc}"))
        else:
            print(f"  {printable(c.name):<24} INVALID: {one_line(c.error or '')}")
    return 0


def cmd_limits(args) -> int:
    from textcls.runtime import timeouts
    from textcls.runtime.limits import current, describe
    rows = describe(current()) + timeouts.describe()
    if args.json:
        print(json.dumps({n: v for n, v, _ in rows}, indent=2))
        return 0
    for n, v, h in rows:
        print(f"{n:<22} {v:>12,}  {h}")
    return 0


def add_parsers(sub) -> None:
    s = sub.add_parser("list", help="list models, data sets and checkpoints",
                       description="List the registered models, the bundled data sets and the checkpoints.")
    s.add_argument("--checkpoints", default=None,
                   help="one folder of checkpoint folders (default: the shipped ones, TEXTCLS_CHECKPOINTS or "
                        "./checkpoints, and yours, $TEXTCLS_HOME/checkpoints)")
    add_data_root(s)
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=cmd_list)

    lm = sub.add_parser("limits", help="print the limits that protect the machine",
                        description="The limits in force (textcls/runtime/limits.py, overridden by TEXTCLS_* variables); "
                                    "train/evaluate/predict take flags that raise them for one run.")
    lm.add_argument("--json", action="store_true", help="print JSON")
    lm.set_defaults(func=cmd_limits)
