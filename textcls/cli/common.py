"""What every command shares: the parser class, the one error style, the options several commands take (each
with one help text), the numeric checks (every count option is checked here, at parse time, against
`textcls.runtime.limits.COUNTS`: exit 2 with one line), the limit flags, and the text escaping of terminal output.

Error style: bad input raises `UsageError` (or one of `bad_input_types()`) and exits 2 with one line; a run that
fails otherwise exits 1 with one line (`textcls.cli.main`). Imports no torch.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
from typing import Any, Sequence

PROG = "textcls"


class UsageError(Exception):
    """Bad command-line input: exit code 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (argparse prints the whole usage otherwise)
        sys.stderr.write(f"{self.prog}: error: {printable(message)} (see --help)\n")
        raise SystemExit(2)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def printable(text: Any) -> str:
    """`text` safe for a terminal: control characters (NUL, BEL, ESC of terminal escape sequences, ...) shown as
    \\xNN / \\uNNNN escapes; tabs and newlines are kept (callers that need one line use `one_line`)."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1] if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                        str(text))


def one_line(e: BaseException | str) -> str:
    """An exception (or a message) as one printable line."""
    if isinstance(e, BaseException):
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
    else:
        msg = e
    msg = printable(" ".join(str(msg).split()))
    return msg or type(e).__name__


def bad_input_types() -> tuple[type, ...]:
    """Exceptions that mean the user's input is wrong (exit 2): usage, data, limits, checkpoint folders, entity
    markers, counterfactual rules."""
    from textcls.checkpoint import CheckpointError
    from textcls.data.datasets import DataError
    from textcls.runtime.limits import LimitError
    from textcls.data.relation import EntitySpanError
    return (UsageError, CheckpointError, DataError, LimitError, EntitySpanError)


# ---------------------------------------------------------------- numbers


class OutOfBounds(int):
    """A count option's value outside its bounds, kept until `check_counts` reports it (exit 2 from `main`, like
    every other bad value, instead of argparse's SystemExit)."""
    problem = ""


def count(name: str):
    """argparse `type=` for the count option --NAME: a whole number (else argparse's one-line error), checked
    against `textcls.runtime.limits.COUNTS[name]` by `check_counts` once the command line is parsed."""
    from textcls.runtime.limits import count_problem
    flag = "--" + name.replace("_", "-")

    def parse(raw: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid int value: {raw!r} (a whole number expected)") from None
        problem = count_problem(name, value)
        if problem:
            value = OutOfBounds(value)
            value.problem = f"{flag} {problem}"
        return value
    parse.__name__ = name
    return parse


def epochs_arg(raw: str):
    """argparse `type=` for --epochs: a whole number (checked as the count "epochs"), or a fraction of an epoch
    above 0 (for an hf: encoder; the model's own rules check it once the model is known). Whole values come back
    as int."""
    import math
    try:
        value = float(raw.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {raw!r}") from None
    if value.is_integer():
        return count("epochs")(str(int(value)))
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"invalid number: {raw!r}")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"--epochs must be above 0, got {raw!r}")
    return value


def check_counts(args) -> None:
    """Every count option of the parsed command line inside its bounds, else UsageError naming the first one
    that is not (the one place where numeric options are checked)."""
    for value in vars(args).values():
        if isinstance(value, OutOfBounds):
            raise UsageError(value.problem)


# ---------------------------------------------------------------- shared options (one help text each)

HELP = {
    "data": "data set: a bundled name (see `list`), a data folder, a CSV/TSV/JSONL/Parquet file, or hf:ID",
    "data_root": "folder(s) of data sets, searched by name before the bundled ones (default: TEXTCLS_DATA)",
    "split": "split name: train, dev or test (default test)",
    "limit": "use at most N texts per split (quick runs)",
    "device": "auto, cpu, cuda, cuda:N or mps",
    "batch_size": "texts per batch",
    "seed": "random seed (default 0)",
    "checkpoint": "checkpoint folder",
    "json": "print JSON",
    "quiet": "no progress bar",
}


def add_data(p: argparse.ArgumentParser, required: bool = False) -> None:
    p.add_argument("--data", required=required, default=None,
                   help=HELP["data"] + ("" if required else " (default: the one the checkpoint was trained on)"))


def add_data_root(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-root", default=None, help=HELP["data_root"])


def add_split(p: argparse.ArgumentParser) -> None:
    p.add_argument("--split", default="test", help=HELP["split"])


def add_limit(p: argparse.ArgumentParser) -> None:
    p.add_argument("--limit", type=count("limit"), default=None, metavar="N", help=HELP["limit"])


def add_device(p: argparse.ArgumentParser, default: str | None, default_says: str) -> None:
    p.add_argument("--device", default=default, help=f"{HELP['device']} (default: {default_says})")


def add_batch_size(p: argparse.ArgumentParser, default: int | None, default_says: str | None = None) -> None:
    p.add_argument("--batch-size", type=count("batch_size"), default=default, metavar="N",
                   help=f"{HELP['batch_size']} (default {default_says or default})")


def add_seed(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=count("seed"), default=0, help=HELP["seed"])


def add_checkpoint(p: argparse.ArgumentParser) -> None:
    p.add_argument("checkpoint", metavar="DIR", help=HELP["checkpoint"])


def add_data_options(p: argparse.ArgumentParser) -> None:
    """--data, --split, --data-root and --limit of the commands that read a checkpoint's data split."""
    add_data(p)
    add_split(p)
    add_data_root(p)
    add_limit(p)


def add_explanation_options(p: argparse.ArgumentParser, default_says: str) -> None:
    """--methods, --baseline and --steps of the commands that compute explanations (explain, faithfulness); the
    choices and their help come from the method registry (textcls.interpret.methods)."""
    from textcls.interpret.methods import REGISTRY
    listed = "; ".join(f"{m.name} ({m.label}{', alias ' + '/'.join(m.aliases) if m.aliases else ''})"
                       for m in REGISTRY.values())
    p.add_argument("--methods", default=None,
                   help=f"comma-separated explanation methods (default {default_says}): {listed}")
    p.add_argument("--baseline", choices=("pad", "unk", "zero"), default="pad",
                   help="baseline of the methods that compare with one: integrated gradients, occlusion, Shapley, "
                        "LIME (default pad)")
    p.add_argument("--steps", type=count("steps"), default=50,
                   help="integrated-gradients steps, first try (doubled until converged)")


def methods_of(raw: str, model=None) -> list[str]:
    """--methods -> registered names (aliases resolved, duplicates dropped); with a model, each must apply to it.
    A UsageError names the choices."""
    from textcls.interpret.methods import parse
    try:
        return parse(raw, model)
    except ValueError as e:
        raise UsageError(f"--methods: {one_line(e)}") from None


# ---------------------------------------------------------------- --set / --tokenizer pairs


def _parse_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        pass
    low = raw.strip()
    if low in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[low]
    return raw


def parse_pairs(pairs: Sequence[str] | None, what: str, config_cls=None) -> dict[str, Any]:
    """["key=value", ...] -> dict; values parsed as JSON (numbers, true/false, null, [lists]) else strings.
    Lists become tuples where `config_cls`'s field default is a tuple."""
    out: dict[str, Any] = {}
    defaults = {}
    if config_cls is not None:
        for f in dataclasses.fields(config_cls):
            if f.default is not dataclasses.MISSING:
                defaults[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
                defaults[f.name] = f.default_factory()  # type: ignore[misc]
    for item in pairs or []:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"{what} expects key=value, got {item!r}")
        value = _parse_value(raw)
        if isinstance(value, list) and isinstance(defaults.get(key), tuple):
            value = tuple(value)
        out[key] = value
    return out


# ---------------------------------------------------------------- devices and torchrun


def device(name: str | None) -> str:
    from textcls.runtime.devices import resolve_device
    try:
        return str(resolve_device(name))
    except (ValueError, RuntimeError) as e:
        raise UsageError(f"--device: {one_line(e)}") from None


def dist_context():
    """The distributed Context when this process joined a group (without importing torch otherwise)."""
    mod = sys.modules.get("textcls.runtime.distributed")
    return mod.context() if mod is not None else None


def rank_prefix() -> str:
    ctx = dist_context()
    return f"rank {ctx.rank} of {ctx.world_size}: " if ctx is not None and ctx.active else ""


def join_group(device_name: str | None):
    """Join torchrun's process group when launched by torchrun (a bad device or backend: UsageError)."""
    if int(os.environ.get("WORLD_SIZE", "1") or 1) <= 1:
        return None
    from textcls.runtime import distributed
    try:
        return distributed.init(device_name)
    except ValueError as e:
        raise UsageError(f"--device: {one_line(e)}") from None


# ---------------------------------------------------------------- limit flags

LIMIT_FLAGS = {"max_parameters": "--max-parameters", "max_train_memory_mb": "--max-train-memory-mb",
               "max_file_mb": "--max-file-mb"}


def limit_flags(parser: argparse.ArgumentParser, names=tuple(LIMIT_FLAGS)) -> None:
    """The flags that raise (or lower) `textcls.runtime.limits` for this run; the browser has none of them."""
    from textcls.runtime.limits import Limits, describe
    helps = {n: h for n, _, h in describe(Limits())}
    for name in names:
        parser.add_argument(LIMIT_FLAGS[name], type=int, default=None, metavar="N", dest=name,
                            help=f"{helps[name]} (default {getattr(Limits(), name):,}; env "
                                 f"TEXTCLS_{name.upper()})")


def apply_limit_flags(args) -> dict[str, str | None]:
    """Limit flags given on the command line become the environment's limits while the command runs, so every
    library call it makes (data loading, model building, training) enforces the same values. Returns the
    previous values for `main` to put back (the CLI is also called in-process, by tests and scripts)."""
    before: dict[str, str | None] = {}
    for name, flag in LIMIT_FLAGS.items():
        v = getattr(args, name, None)
        if v is not None:
            if v < 1:
                raise UsageError(f"{flag} must be >= 1")
            key = f"TEXTCLS_{name.upper()}"
            before[key] = os.environ.get(key)
            os.environ[key] = str(v)
    return before


# ---------------------------------------------------------------- a checkpoint's data split


def data_of(args, predictor, limit: int | None = None):
    """The data set of --data (default: the one the checkpoint records), with --split checked: bad input is a
    UsageError (exit 2). `limit` rows per split (evaluate's --limit)."""
    from textcls.data.datasets import load_data

    data = args.data
    if data is None:
        recorded = predictor.info.get("data") if isinstance(predictor.info.get("data"), dict) else {}
        data = recorded.get("spec") or recorded.get("name")
        if not data:
            raise UsageError("the checkpoint does not record its data set; pass --data")
    try:
        bundle = load_data(data, root=args.data_root, limit=limit)
    except (KeyError, ValueError, FileNotFoundError, RecursionError) as e:
        raise UsageError(one_line(e)) from None
    if args.split not in bundle.splits:
        raise UsageError(f"data set {bundle.name!r} has no split {args.split!r} (has: {', '.join(bundle.splits)})")
    return bundle


def json_value(v):
    """A value for json.dumps: NaN -> None, tensors and numpy scalars -> Python numbers."""
    import math
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):
        return json_value(v.item())
    if isinstance(v, (list, tuple)):
        return [json_value(x) for x in v]
    return v


def report_result(args, result) -> int:
    """The end of a training run on the terminal: the summary (--json: one object), and exit 1 if it diverged."""
    h = result.history
    test, dev = result.metrics.get("test"), result.metrics.get("dev")
    summary = {"checkpoint": None if result.path is None else str(result.path), "model": args.model,
               "data": result.data_name,
               "epochs": len(h.epochs), "steps": h.steps, "seconds": round(h.elapsed, 2),
               "stopped_reason": h.stopped_reason, "diverged": h.diverged,
               "dev_accuracy": dev and dev["accuracy"], "test_accuracy": test and test["accuracy"],
               "test_macro_f1": test and test["macro_f1"], "embedding_coverage": result.embedding_coverage}
    if args.json:
        print(json.dumps(summary, indent=2))
    elif result.path is not None:
        acc = "n/a" if test is None else f"{test['accuracy']:.4f} (macro-F1 {test['macro_f1']:.4f})"
        print(f"saved {result.path}: test accuracy {acc}; {h.stopped_reason}; {h.elapsed:.1f} s")
    if h.diverged and result.path is None:       # nothing trained: no checkpoint (pipeline.nothing_trained)
        print(f"{PROG} train: error: training diverged: {h.stopped_reason}; no checkpoint was written (try a "
              "smaller --lr, or --clip)", file=sys.stderr)
        return 1
    if h.diverged:
        print(f"{PROG} train: error: training diverged: {h.stopped_reason}", file=sys.stderr)
        return 1
    return 0
