"""Command line: `python -m textcls {train,evaluate,predict,faithfulness,counterfactuals,list,limits,bench,reproduce,study,shortcuts}`.
Other tools rely on these spellings.

    python -m textcls train --model NAME --data DATA --epochs N [--out DIR [--overwrite]]
                            [--embeddings glove|random|FILE]
                            [--device auto|cpu|cuda[:N]|mps] [--amp [bf16|fp16]] [--workers N]
    torchrun --nproc_per_node N -m textcls train ...   (DistributedDataParallel; see textcls/runtime/distributed.py)
    python -m textcls evaluate DIR [--data DATA] [--split test] [--json]
    python -m textcls predict DIR "some text" [more texts | -] [--json]
    python -m textcls faithfulness DIR [--data DATA] [--split test] [--methods M,...] [--limit N] [--json]
    python -m textcls counterfactuals DIR [--data DATA] [--split test] --generator NAME [--limit N]
                                      [--rules "good -> bad"] [--json]
    python -m textcls patch DIR --clean TEXT --corrupt TEXT [--by layer|position|head|gate|filter] [--lens] [--json]
    python -m textcls limits [--json]
    python -m textcls list [--checkpoints ROOT] [--json]
    python -m textcls bench [--quick] [--json OUT]
    python -m textcls bench --latency [--load N] [--json OUT]   (thread policy: TEXTCLS_THREADS, textcls/runtime/threads.py)
    python -m textcls reproduce [--suite NAME[,NAME]] [--only GLOB] [--runs K] [--epochs N] [--limit N]
                                [--out docs/results.json] [--list | --dry-run | --report]
    python -m textcls study NAME [--scale quick|full] [--device ...] [--json]   |   study --list
    python -m textcls shortcuts --model NAME | --checkpoint DIR [--data sst2] [--token zeroa,onea] [--share 0.2]
                                [--epochs N] [--limit N] [--test-limit N] [--methods M,...] [--results FILE] [--json]

Exit codes: 0 ok, 1 runtime failure (including a training run that diverged), 2 usage or bad input
(unknown model/data set/option, invalid checkpoint folder). Errors are one line on stderr, no traceback
(set TEXTCLS_DEBUG=1 to see one); text from the data or the user is printed with control characters escaped.
Under torchrun each rank's message starts with "rank R of N"; a rank whose peer failed says so in one line, and
only rank 0 prints results and writes the checkpoint. Training shows a tqdm progress bar on stderr; results go
to stdout.

One module per command (or small group): train, evaluate (+ predict), faithfulness, counterfactuals, listing
(list + limits), bench, reproduce, study; `common` holds the parser class, the error style, the options several
commands share (one help text each) and the numeric checks (every count against textcls.runtime.limits.COUNTS, once
the command line is parsed: exit 2). No module imports torch at import time; each command imports what it runs.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from textcls.cli import (bench, counterfactuals, evaluate, explain, faithfulness, interpreters, listing, patch, reproduce,
    shortcuts, study, train)
from textcls.cli.common import (PROG, Parser, UsageError, apply_limit_flags, bad_input_types, check_counts, one_line,
    rank_prefix)

COMMANDS = "{train,evaluate,predict,explain,faithfulness,counterfactuals,patch,list,limits,bench,reproduce,study,shortcuts}"


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog=PROG, description="Small interpretable text classifiers: train, evaluate, predict, list.")
    from textcls.interpret.interpreters import REGISTRY
    extra = "".join(f",{i.command}" for i in REGISTRY.values() if i.command)
    sub = p.add_subparsers(dest="command", metavar=COMMANDS[:-1] + extra + "}", parser_class=Parser)
    sub.required = True
    train.add_parser(sub)
    evaluate.add_parsers(sub)                  # evaluate, predict
    counterfactuals.add_parser(sub)
    listing.add_parsers(sub)                   # list, limits
    explain.add_parser(sub)
    faithfulness.add_parser(sub)
    patch.add_parser(sub)
    bench.add_parser(sub)
    reproduce.add_parser(sub)
    study.add_parser(sub)
    shortcuts.add_parser(sub)
    interpreters.add_parsers(sub)              # one command per registered interpreter that names one
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command: 0 ok, 1 a failed run, 2 bad input (one line on stderr), 130 interrupted."""
    args = build_parser().parse_args(argv)
    saved: dict[str, str | None] = {}
    clean = False                                   # ran through: the ranks leave their group together
    try:
        bad_input = bad_input_types()
        check_counts(args)
        saved = apply_limit_flags(args)
        if "MPLCONFIGDIR" not in os.environ:        # matplotlib (imported by Captum) writes its cache in the user folder
            from textcls.runtime.paths import user_home
            saved["MPLCONFIGDIR"] = None
            os.environ["MPLCONFIGDIR"] = str(user_home() / "matplotlib")
        code = int(args.func(args) or 0)
        clean = True
        return code
    except bad_input as e:
        print(f"{PROG} {args.command}: error: {rank_prefix()}{one_line(e)}", file=sys.stderr)
        if os.environ.get("TEXTCLS_DEBUG"):
            raise
        return 2
    except KeyboardInterrupt:
        print(f"{PROG} {args.command}: {rank_prefix()}interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - the CLI's contract: one line, no traceback
        if os.environ.get("TEXTCLS_DEBUG"):
            raise
        prefix = rank_prefix()
        dist = sys.modules.get("textcls.runtime.distributed")
        if prefix and dist is not None and dist.is_peer_failure(e):
            print(f"{PROG} {args.command}: error: {prefix}stopped because another rank failed or was killed "
                  f"(its own message says why); no checkpoint written", file=sys.stderr)
        else:
            print(f"{PROG} {args.command}: error: {prefix}{type(e).__name__}: {one_line(e)}", file=sys.stderr)
        return 1
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        dist_mod = sys.modules.get("textcls.runtime.distributed")
        if dist_mod is not None:
            dist_mod.shutdown(clean)


__all__ = ["PROG", "UsageError", "build_parser", "main"]
