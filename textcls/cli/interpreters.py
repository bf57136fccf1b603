"""One command per registered interpreter that names one (textcls.interpret.interpreters): `textcls NAME DIR
[TEXT ...] [--data NAME] [--split S] [--limit N] [--concept FILE] [--OPTION VALUE ...] [--json]`, built from what
the interpreter declares - its inputs become the positional text(s) and the data flags, each option a flag with its
type, default, choices and help. The same `interpreters.run` the worker and the pages call; bad input (an option
out of range, a concept of two texts, a model it does not apply to) exits 2 with one line."""
from __future__ import annotations

import argparse
import json
import sys

from textcls.cli.common import (UsageError, add_checkpoint, add_data, add_data_root, add_limit, add_split, json_value,
    one_line)


def _type(option):
    def parse(raw: str):
        from textcls.interpret.options import OptionError
        try:
            return option.check(raw)
        except OptionError as e:
            raise argparse.ArgumentTypeError(one_line(e).removeprefix(option.flag + ": ")) from None
    parse.__name__ = option.type.__name__
    return parse


def add_parsers(sub) -> None:
    from textcls.interpret.interpreters import REGISTRY
    for it in REGISTRY.values():
        if it.command is None:
            continue
        p = sub.add_parser(it.command, help=it.help or it.label, description=f"{it.label}: {it.help}")
        add_checkpoint(p)
        reads = set(it.inputs) | set(it.optional)
        if "text" in reads:
            p.add_argument("text", nargs=None if "text" in it.inputs else "?", default=None, metavar="TEXT",
                           help="the text to explain")
        if "texts" in reads:
            p.add_argument("texts", nargs="+" if "texts" in it.inputs else "*", metavar="TEXT",
                           help="texts (- reads one per line from stdin)")
        if "data" in reads:
            add_data(p, required=False)
            add_data_root(p)
        if "split" in reads:
            add_split(p)
        if "limit" in reads:
            add_limit(p)
        if "concept" in reads:
            p.add_argument("--concept", required="concept" in it.inputs, metavar="FILE",
                           help="the concept's texts: a file of one text per line, or texts separated by '|'")
        for o in it.options:
            if o.type is bool:
                p.add_argument(o.flag, dest=o.name, action=argparse.BooleanOptionalAction, default=o.default,
                               help=o.help)
            else:
                p.add_argument(o.flag, dest=o.name, type=_type(o), default=o.default, metavar=o.type.__name__.upper(),
                               help=f"{o.help} (default {o.default})")
        p.add_argument("--json", action="store_true", help="print one JSON object")
        p.set_defaults(func=cmd_interpret, interpreter=it.name)


def inputs_of(args, it) -> dict:
    """The interpreter's inputs from the parsed command line."""
    reads = set(it.inputs) | set(it.optional)
    out = {}
    if "text" in reads and args.text is not None:
        if not args.text.strip():
            raise UsageError("the text is empty")
        out["text"] = args.text
    if "texts" in reads and args.texts:
        texts = sys.stdin.read().splitlines() if args.texts == ["-"] else list(args.texts)
        out["texts"] = [t for t in texts if t.strip()]
    for key in ("data", "data_root", "split", "limit", "concept"):
        if key in reads and getattr(args, key, None) is not None:
            out[key] = getattr(args, key)
    return out


def cmd_interpret(args) -> int:
    from textcls.checkpoint import load_checkpoint
    from textcls.interpret import interpreters
    it = interpreters.get(args.interpreter)
    inputs = inputs_of(args, it)
    options = {o.name: getattr(args, o.name) for o in it.options}
    predictor = load_checkpoint(args.checkpoint, device="cpu")
    try:
        result = interpreters.run(predictor, it.name, inputs, options)
    except interpreters.InterpreterError as e:
        raise UsageError(one_line(e)) from None
    if args.json or it.render is None:
        print(json.dumps(result.to_dict(), default=json_value, allow_nan=False, indent=None if args.json else 2))
    else:
        print(it.render(result))
    return 0
