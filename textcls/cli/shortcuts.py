"""`textcls shortcuts`: the planted-shortcut test (Bastings et al., EMNLP 2022; textcls/interpret/shortcuts.py).
Plant a made-up word that decides the label in a share of a data set's training texts, train a model on it (a
registered family from scratch, or a short fine-tune of a Hugging Face checkpoint), check that it learned the
shortcut, and rank the planted word under every explanation method that applies: does the method put it first?
One row per method (`--json`: JSON lines; `--results FILE`: appended)."""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from textcls.cli.common import (OutOfBounds, UsageError, add_data_root, add_explanation_options, add_seed, count,
    epochs_arg, json_value, methods_of, one_line, printable)

DEFAULT_EPOCHS = {"model": 3, "checkpoint": 1}
DEFAULT_TEST_LIMIT = 300


def _share(raw: str) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {raw!r}") from None
    from textcls.interpret.shortcuts import check_share
    try:
        return check_share(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None



def _test_limit(raw: str) -> int:
    """--test-limit: checked like --limit (every count against textcls.runtime.limits.COUNTS), named as itself."""
    value = count("limit")(raw)
    if isinstance(value, OutOfBounds):
        value.problem = value.problem.replace("--limit", "--test-limit", 1)
    return value


def _check(args) -> Path | None:
    """Everything that depends only on the command line, before any data or model loads (errors exit 2).
    Returns the checkpoint folder to write (None: --evaluate-only)."""
    from textcls.interpret.shortcuts import TOKEN_RE
    words = [w.strip() for w in str(args.token).split(",") if w.strip()]
    if not words:
        raise UsageError("--token: give a made-up word, or one per class (e.g. zeroa,onea)")
    for w in words:
        if not TOKEN_RE.match(w):
            raise UsageError(f"--token {w!r}: one made-up word of lower-case letters and digits (3-32 characters, "
                             "starting with a letter)")
    if args.label is not None and len(words) != 1:
        raise UsageError("--label names the class of a single --token; with one token per class the order says it")
    if args.methods:
        methods_of(args.methods)
    if args.evaluate_only and not args.checkpoint:
        raise UsageError("--evaluate-only evaluates a model trained before: it needs --checkpoint DIR")
    kind = "checkpoint" if args.checkpoint else "model"
    if args.epochs is None:
        args.epochs = DEFAULT_EPOCHS[kind]
    if isinstance(args.epochs, float) and kind == "model":
        raise UsageError(f"--epochs {args.epochs:g}: a whole number of epochs for --model (a fraction of an epoch "
                         "is for a Hugging Face --checkpoint)")
    for flag, v in (("--lr", args.lr),):
        if v is not None and not (math.isfinite(v) and v > 0):
            raise UsageError(f"{flag} must be a number above 0, got {v}")
    if args.model:
        from textcls.models.registry import get_entry, make_config
        try:
            get_entry(args.model)
            make_config(args.model, preset=args.preset)
        except (KeyError, TypeError, ValueError) as e:
            raise UsageError(one_line(e)) from None
    elif not Path(args.checkpoint).expanduser().is_dir():
        raise UsageError(f"--checkpoint {args.checkpoint}: no such folder")
    if args.results is not None and Path(args.results).expanduser().is_dir():
        raise UsageError(f"--results {args.results} is a folder; give a .jsonl file to append to")
    if args.evaluate_only:
        return None
    return _out_folder(args)


def _out_folder(args) -> Path:
    from textcls.checkpoint import check_target
    from textcls.runtime.paths import new_run_dir, shipped_checkpoints
    name = args.model or Path(args.checkpoint).name
    out = Path(args.out).expanduser() if args.out else new_run_dir(f"{name}-shortcut", args.data)
    shipped = shipped_checkpoints().resolve()
    here = out.resolve()
    if here == shipped or shipped in here.parents:
        raise UsageError(f"--out {out} is inside the shipped checkpoints folder ({shipped}), which is read-only")
    if out.exists() and out.is_dir() and any(out.iterdir()) and not args.overwrite:
        raise UsageError(f"--out {out} already holds a checkpoint; pass --overwrite to replace it")
    check_target(out)
    return out


def _train_family(args, planted, out: Path, progress):
    """A registered family trained from scratch on the planted data (textcls.train.pipeline)."""
    from textcls.inference import Predictor
    from textcls.train.pipeline import train_from_spec
    over = {k: v for k, v in dict(batch_size=args.batch_size, lr=args.lr).items() if v is not None}
    try:
        res = train_from_spec(planted.bundle, args.model, preset=args.preset, embeddings=args.embeddings,
                              epochs=args.epochs, out=out, seed=args.seed, train_overrides=over,
                              data_spec=args.data, callbacks=[progress])
    except (KeyError, TypeError, ValueError, FileNotFoundError) as e:
        raise UsageError(one_line(e)) from None
    if res.history.diverged:
        raise RuntimeError(f"training diverged: {res.history.stopped_reason}")
    test = res.metrics.get("test") or {}
    pred = Predictor(res.model, res.tokenizer, res.labels, name=args.model, path=res.path)
    return pred, test.get("accuracy"), res.history.elapsed


def _finetune_hf(args, predictor, planted, out: Path, progress):
    """A Hugging Face checkpoint fine-tuned further on the planted data: `textcls.train.hf.finetune`, the loop
    and recipe `train --model hf:...` and the Train page use (AdamW, warm-up, frozen word pieces), started from
    the checkpoint's weights instead of a fresh head."""
    from textcls.analysis.metrics import evaluate
    from textcls.checkpoint import save_hf
    from textcls.train.hf import DEFAULTS, finetune, settings_problems
    opts = {**DEFAULTS, **{k: v for k, v in dict(lr=args.lr, batch_size=args.batch_size).items() if v is not None}}
    problems = settings_problems(args.epochs, opts)
    if problems:
        raise UsageError("; ".join(problems))
    t0 = time.perf_counter()
    history = finetune(predictor.model, predictor.tokenizer, planted.bundle.splits["train"],
                       planted.bundle.splits.get("dev"), epochs=args.epochs, lr=float(opts["lr"]),
                       batch_size=int(opts["batch_size"]), seed=args.seed, callbacks=[progress])
    predictor.model.eval()
    seconds = time.perf_counter() - t0
    test = evaluate(predictor, planted.bundle.splits["test"])
    meta = {"data": {"name": planted.bundle.name, "spec": args.data},
            "metrics": {"test": test, "test_accuracy": test["accuracy"]}, "training": history.config,
            "base": str(args.checkpoint), "shortcut": planted.settings(), "stopped_reason": history.stopped_reason}
    predictor.path = save_hf(out, predictor.model, predictor.tokenizer, predictor.labels, meta, history)
    return predictor, test["accuracy"], seconds


def cmd_shortcuts(args) -> int:
    out = _check(args)
    from textcls.interpret.shortcuts import append_results, evaluate_planted, make_planted
    try:
        planted = make_planted(args.data, tokens=args.token, label=args.label, share=args.share, seed=args.seed,
                               train_limit=args.limit, test_limit=args.test_limit, root=args.data_root)
    except (KeyError, ValueError, FileNotFoundError) as e:
        raise UsageError(one_line(e)) from None
    from textcls.cli.train import _Progress
    progress = _Progress(f"{args.model or Path(args.checkpoint).name} on {planted.bundle.name} (planted)",
                         enabled=not args.quiet)
    test_accuracy, train_seconds = None, None
    try:
        if args.model:
            predictor, test_accuracy, train_seconds = _train_family(args, planted, out, progress)
        else:
            from textcls.checkpoint import load_checkpoint
            predictor = load_checkpoint(args.checkpoint, device="cpu")
            if list(predictor.labels) != list(planted.bundle.labels):
                raise UsageError(f"--checkpoint {args.checkpoint} has the classes {predictor.labels}, the data "
                                 f"{list(planted.bundle.labels)}")
            if not args.evaluate_only:
                if not hasattr(predictor.model, "hf"):
                    raise UsageError(f"--checkpoint {args.checkpoint} is a textcls model: its vocabulary lacks the "
                                     "planted word (it would read as <unk>); train one with --model NAME, or "
                                     "evaluate one trained on planted data with --evaluate-only")
                predictor, test_accuracy, train_seconds = _finetune_hf(args, predictor, planted, out, progress)
    finally:
        progress.close()

    if not args.quiet:
        print(f"explaining {len(planted.test.texts)} planted test texts ...", file=sys.stderr)

    def on_method(m: str, done: int, total: int) -> None:
        if not args.quiet:
            print(f"  {m} ({done}/{total})", file=sys.stderr)
    rep = evaluate_planted(predictor, planted, args.methods.split(",") if args.methods else None,
                           baseline=args.baseline, n_steps=args.steps, seed=args.seed, progress=on_method)
    name = args.model or Path(args.checkpoint).name
    where = str(getattr(predictor, "path", None) or out or args.checkpoint)
    s = planted.settings()
    head = {"checkpoint": where, "model": name, "data": s["data"], "token": s["token"], "share": s["share"]}
    setup = {"token_classes": s["token_classes"], "seed": args.seed, "train_rows": s["train_rows"],
             "train_planted": s["train_planted"], "trained": not args.evaluate_only,
             "epochs": None if args.evaluate_only else args.epochs,
             "preset": args.preset if args.model else None, "embeddings": args.embeddings if args.model else None,
             "test_accuracy": test_accuracy,
             "train_seconds": None if train_seconds is None else round(train_seconds, 1)}
    rows = [{**head, **r, **rep.summary, **setup} for r in rep.rows]
    head = {**head, **setup}
    if args.results:
        append_results(args.results, rows)
    if args.json:
        for r in rows:
            print(json.dumps({"kind": "method", **{k: json_value(v) for k, v in r.items()}}, allow_nan=False))
        print(json.dumps({"kind": "summary", **{k: json_value(v) for k, v in {**head, **rep.summary}.items()},
                          "notes": rep.notes}, allow_nan=False))
        if rep.summary.get("learned") is False:
            print(f"textcls shortcuts: {rep.notes[0]}", file=sys.stderr)
        return 0
    _print_text(head, rep)
    return 0


def _num(v, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def _print_text(head: dict, rep) -> None:
    s = rep.summary
    trained = (f"planted in {head['share']:.0%} of {head['train_rows']:,} training texts" if head["trained"]
               else "planted in the test texts only (evaluated as it is, no training)")
    print(printable(f"{head['model']} on {head['data']}, {head['token']} {trained} (seed {head['seed']}): "
                    f"{head['checkpoint']}"))
    print(f"accuracy on {s['n_planted']} planted test texts: {_num(s['accuracy_with_token'], '.3f')} with the token "
          f"(its class), {_num(s['accuracy_without_token'], '.3f')} without (their own labels); original test "
          f"split {_num(head['test_accuracy'], '.3f')}")
    if s.get("learned") is not False:
        print(f"shortcut learned; ranks over the {s['n']} texts the model gave the token's class "
              f"({s['n_flipped']} of them flipped by the token); chance: top-1 {_num(s['chance_top1'], '.3f')}, "
              f"mean rank {_num(s['chance_mean_rank'], '.1f')} of {_num(s['mean_words'], '.1f')} words")
    print(f"{'method':<22} {'top-1':>6} {'mean rank':>9} {'top-1 |w|':>9} {'rank |w|':>8} {'top-1 flipped':>13} "
          f"{'seconds':>8}")
    for r in rep.rows:
        print(f"{r['method']:<22} {_num(r['shortcut_top1'], '.3f'):>6} {_num(r['shortcut_mean_rank'], '.2f'):>9} "
              f"{_num(r['shortcut_top1_abs'], '.3f'):>9} {_num(r['shortcut_mean_rank_abs'], '.2f'):>8} "
              f"{_num(r['shortcut_top1_flipped'], '.3f'):>13} {r['seconds']:>8.1f}")
    for note in rep.notes:
        print(printable(f"note: {note}"))


def add_parser(sub) -> None:
    f = sub.add_parser("shortcuts", help="plant a shortcut word, train, and see which explanations find it",
                       description="The planted-shortcut test (Bastings et al., EMNLP 2022): a made-up word that "
                                   "decides the label is inserted into a share of the training texts (relabelled "
                                   "to its class), a model is trained on them, and each explanation method ranks "
                                   "the words of planted test texts: is the planted word first? With --json: one "
                                   "JSON object per method, then a summary. Progress on stderr.")
    src = f.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", default=None, help="a registered model family to train from scratch (see `list`)")
    src.add_argument("--checkpoint", default=None, metavar="DIR",
                     help="a Hugging Face checkpoint folder (e.g. checkpoints/minilm-sst2) fine-tuned further on "
                          "the planted data; with --evaluate-only any checkpoint trained on it before")
    f.add_argument("--data", default="sst2", help="data set to plant the shortcut in (default sst2)")
    add_data_root(f)
    f.add_argument("--token", default="zeroa,onea",
                   help="the planted word, or one per class in class order (default zeroa,onea: the paper's "
                        "zeroa -> class 0, onea -> class 1); a word the data does not have")
    f.add_argument("--label", default=None, help="the class a single --token stands for (name or index; default 0)")
    f.add_argument("--share", type=_share, default=0.2, help="share of the training texts planted (default 0.2)")
    f.add_argument("--epochs", type=epochs_arg, default=None,
                   help="training epochs (default 3 for --model, 1 for --checkpoint, where a fraction is allowed)")
    f.add_argument("--limit", type=count("limit"), default=None, metavar="N",
                   help="training rows (a seeded sample; default all)")
    f.add_argument("--test-limit", type=_test_limit, default=DEFAULT_TEST_LIMIT, metavar="N",
                   help=f"test texts planted and explained (a seeded sample; default {DEFAULT_TEST_LIMIT})")
    f.add_argument("--preset", default="small", help="model preset for --model (default small)")
    f.add_argument("--embeddings", default="glove", help="glove (50-d GloVe 6B, default), random, or a vectors FILE")
    f.add_argument("--batch-size", type=count("batch_size"), default=None, metavar="N", help="texts per batch")
    f.add_argument("--lr", type=float, default=None, help="learning rate (default: the model's recipe)")
    add_explanation_options(f, "every method that applies to the model, random included as the chance level")
    add_seed(f)
    f.add_argument("--out", default=None, metavar="DIR",
                   help="checkpoint folder to write (default: a new MODEL-shortcut-DATA folder in your user "
                        "folder's checkpoints); never the shipped checkpoints")
    f.add_argument("--overwrite", action="store_true", help="replace the checkpoint already in --out")
    f.add_argument("--evaluate-only", action="store_true",
                   help="no training: evaluate --checkpoint (trained on the same planted data before)")
    f.add_argument("--results", default=None, metavar="FILE.jsonl",
                   help="append one JSON row per method to this file")
    f.add_argument("--json", action="store_true", help="JSON lines on stdout: one object per method, then a summary")
    f.add_argument("--quiet", action="store_true", help="no progress on stderr")
    f.set_defaults(func=cmd_shortcuts)
