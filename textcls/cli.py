"""Command line: `python -m textcls {train,evaluate,predict,faithfulness,counterfactuals,list,limits,bench,reproduce,study}`.
Other tools rely on these spellings.

    python -m textcls train --model NAME --data DATA --epochs N --out DIR [--embeddings glove|random|FILE]
                            [--device auto|cpu|cuda[:N]|mps] [--amp [bf16|fp16]] [--workers N]
    torchrun --nproc_per_node N -m textcls train ...   (DistributedDataParallel; see textcls/distributed.py)
    python -m textcls evaluate DIR [--data DATA] [--split test] [--json]
    python -m textcls predict DIR "some text" [more texts | -] [--json]
    python -m textcls faithfulness DIR [--data DATA] [--split test] [--methods M,...] [--limit N] [--json]
    python -m textcls counterfactuals DIR [--data DATA] [--split test] --generator NAME [--limit N]
                                      [--rules "good -> bad"] [--json]
    python -m textcls limits [--json]
    python -m textcls list [--checkpoints ROOT] [--json]
    python -m textcls bench [--quick] [--json OUT]
    python -m textcls bench --latency [--load N] [--json OUT]   (thread policy: TEXTCLS_THREADS, textcls/threads.py)
    python -m textcls reproduce [--suite NAME[,NAME]] [--only GLOB] [--runs K] [--epochs N] [--limit N]
                                [--out docs/results.json] [--list | --dry-run | --report]
    python -m textcls study NAME [--scale quick|full] [--device ...] [--json]   |   study --list  (cli_study.py)

Exit codes: 0 ok, 1 runtime failure (including a training run that diverged), 2 usage or bad input
(unknown model/data set/option, invalid checkpoint folder). Errors are one line on stderr, no traceback
(set TEXTCLS_DEBUG=1 to see one). Under torchrun each rank's message starts with "rank R of N"; a rank whose
peer failed says so in one line, and only rank 0 prints results and writes the checkpoint. Training shows a tqdm progress bar on stderr; results go to stdout.

This file is longer than 600 lines on purpose: it is the one place that defines every subcommand and its options
(the library, textcls/experiments included, takes plain arguments). It imports no torch; each command imports
what it runs.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from .experiments.background import LATENCY_PATTERN
from .experiments.cells import SUITES, select_cells
from .experiments.results import DEFAULT_OUT, fmt_number, load_results, table_rows, write_markdown

PROG = "textcls"


class UsageError(Exception):
    """Bad command-line input: exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (argparse prints the whole usage otherwise)
        sys.stderr.write(f"{self.prog}: error: {message} (see --help)\n")
        raise SystemExit(2)


def _one_line(e: BaseException) -> str:
    msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
    msg = " ".join(str(msg).split())
    return msg or type(e).__name__


# ---------------------------------------------------------------- argument helpers


def _parse_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        pass
    low = raw.strip()
    if low in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[low]
    return raw


def _parse_pairs(pairs: Sequence[str] | None, what: str, config_cls=None) -> dict[str, Any]:
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


def _device(name: str | None) -> str:
    from .devices import resolve_device
    try:
        return str(resolve_device(name))
    except (ValueError, RuntimeError) as e:
        raise UsageError(f"--device: {_one_line(e)}") from None


def _dist_context():
    """The distributed Context when this process joined a group (without importing torch otherwise)."""
    mod = sys.modules.get(f"{__package__}.distributed")
    return mod.context() if mod is not None else None


def _rank_prefix() -> str:
    ctx = _dist_context()
    return f"rank {ctx.rank} of {ctx.world_size}: " if ctx is not None and ctx.active else ""


def _join_group(device: str | None):
    """Join torchrun's process group when launched by torchrun (a bad device or backend: UsageError)."""
    if int(os.environ.get("WORLD_SIZE", "1") or 1) <= 1:
        return None
    from . import distributed
    try:
        return distributed.init(device)
    except ValueError as e:
        raise UsageError(f"--device: {_one_line(e)}") from None


def _data_error_types() -> tuple[type, ...]:
    from .limits import LimitError
    try:
        from .data import DataError
        return (DataError, LimitError)
    except ImportError:  # pragma: no cover - data module missing
        return (LimitError,)


LIMIT_FLAGS = {"max_parameters": "--max-parameters", "max_train_memory_mb": "--max-train-memory-mb",
               "max_file_mb": "--max-file-mb"}


def _limit_flags(parser: argparse.ArgumentParser, names=tuple(LIMIT_FLAGS)) -> None:
    """The flags that raise (or lower) `textcls.limits` for this run; the browser has none of them."""
    from .limits import Limits, describe
    helps = {n: h for n, _, h in describe(Limits())}
    for name in names:
        parser.add_argument(LIMIT_FLAGS[name], type=int, default=None, metavar="N", dest=name,
                            help=f"{helps[name]} (default {getattr(Limits(), name):,}; env "
                                 f"TEXTCLS_{name.upper()})")


def _apply_limit_flags(args) -> dict[str, str | None]:
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


def cmd_limits(args) -> int:
    from .limits import current, describe
    rows = describe(current())
    if args.json:
        print(json.dumps({n: v for n, v, _ in rows}, indent=2))
        return 0
    for n, v, h in rows:
        print(f"{n:<22} {v:>12,}  {h}")
    return 0


# ---------------------------------------------------------------- train


class _Progress:
    """tqdm bar on stderr fed by fit's events; epoch summaries written above the bar."""

    def __init__(self, desc: str, enabled: bool = True):
        self.desc, self.enabled, self.bar = desc, enabled, None

    def __call__(self, event) -> None:
        from .records import EpochEvent, StepEvent
        if not self.enabled:
            return
        if isinstance(event, StepEvent):
            if self.bar is None:
                from tqdm import tqdm
                self.bar = tqdm(total=event.total_steps, desc=self.desc, file=sys.stderr, unit="step",
                                dynamic_ncols=True, mininterval=0.5 if sys.stderr.isatty() else 5.0)
            self.bar.update(1)
            if event.step % 10 == 0 or event.step == event.total_steps:
                self.bar.set_postfix(epoch=event.epoch, loss=f"{event.loss:.4f}", refresh=False)
        elif isinstance(event, EpochEvent):
            dev = "" if event.dev is None else (f", dev acc {event.dev['accuracy']:.4f}"
                                                f"{' *' if event.improved else ''}")
            line = (f"epoch {event.epoch}/{event.epochs}: train loss {event.train_loss:.4f}, "
                    f"train acc {event.train_accuracy:.4f}{dev} ({event.elapsed:.1f} s)")
            if self.bar is not None:
                self.bar.write(line, file=sys.stderr)
            else:
                print(line, file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


ARROW_AUTO_BYTES = 256 * 2 ** 20     # local files at least this big take the memory-mapped path by default


def _use_arrow(args) -> bool:
    """--arrow / --no-arrow, else automatic: hub data sets and local files of ARROW_AUTO_BYTES or more."""
    if args.arrow is not None:
        return bool(args.arrow)
    if str(args.data).startswith("hf:"):
        return True
    p = Path(str(args.data)).expanduser()
    return p.is_file() and p.stat().st_size >= ARROW_AUTO_BYTES


def cmd_train(args) -> int:
    if str(args.model).startswith("hf:"):        # a Hugging Face encoder: textcls.cli_hf
        from .cli_hf import train_hf_cli
        return train_hf_cli(args, _Progress, UsageError)
    from .checkpoint import check_target
    from .data import check_trainable, load_data
    from .registry import get_entry, make_config
    from .pipeline import tokenizer_config_for, train_from_spec
    from .training import TrainConfig

    # --- everything that depends only on the user's input: errors here exit 2
    try:
        entry = get_entry(args.model)
        overrides = _parse_pairs(args.set, "--set", entry.config_cls)
        model_config = make_config(args.model, preset=args.preset, variant=args.variant, **overrides)
        from .text import TokenizerConfig
        tok = _parse_pairs(args.tokenizer, "--tokenizer", TokenizerConfig)
        if args.max_len is not None:
            tok["max_len"] = args.max_len
        tokenizer_config_for(model_config, entry.input_kind, tok)
        train_over = {k: v for k, v in dict(batch_size=args.batch_size, lr=args.lr, optimizer=args.optimizer,
                                             patience=args.patience, clip_norm=args.clip, max_norm=args.max_norm,
                                             max_steps=args.max_steps, device=args.device, amp=args.amp,
                                             workers=args.workers, pin_memory=args.pin_memory).items()
                      if v is not None}
        TrainConfig(epochs=args.epochs, seed=args.seed, **train_over)
        device = _device(args.device)
        emb = args.embeddings
        if emb not in ("glove", "random") and not Path(emb).expanduser().is_file():
            raise UsageError(f"--embeddings must be glove, random or an existing file; no file {emb!r}")
        if args.limit is not None and args.limit < 1:
            raise UsageError("--limit must be >= 1")
        if args.extra_vocab < 0:
            raise UsageError("--extra-vocab must be >= 0")
        if args.extra_vocab and emb != "glove":
            raise UsageError("--extra-vocab adds GloVe words: it needs --embeddings glove")
        if args.out is None:
            from .paths import new_run_dir
            args.out = str(new_run_dir(args.model, args.data))
        out = check_target(args.out)
        if args.num_proc is not None and args.num_proc < 1:
            raise UsageError("--num-proc must be >= 1")
        use_arrow = _use_arrow(args)
    except (KeyError, TypeError, ValueError, FileNotFoundError) as e:
        raise UsageError(_one_line(e)) from None
    ctx = _join_group(args.device)              # before the data: the Arrow path lets rank 0 build caches first
    try:
        if use_arrow:
            from .arrow_data import check_trainable_arrow, load_arrow
            bundle = load_arrow(args.data, root=args.data_root, limit=args.limit, seed=args.seed,
                                text_column=args.text_column, label_column=args.label_column)
            check_trainable_arrow(bundle)
        else:
            bundle = load_data(args.data, root=args.data_root, limit=args.limit, seed=args.seed,
                               text_column=args.text_column, label_column=args.label_column)
            check_trainable(bundle)
    except (KeyError, TypeError, ValueError, FileNotFoundError) as e:
        raise UsageError(_one_line(e)) from None
    main_rank = ctx is None or ctx.is_main
    if args.amp not in (None, "off"):
        import torch

        from .devices import resolve_amp
        note = resolve_amp(args.amp, ctx.device if ctx is not None else torch.device(device), warn=False).note
        if note:
            import warnings
            warnings.filterwarnings("ignore", message="--amp", category=RuntimeWarning)  # said once, here
            if main_rank:
                print(f"{PROG} train: warning: {note}", file=sys.stderr)

    where = "" if ctx is None else f" ({ctx.describe()})"
    progress = _Progress(f"{args.model} on {bundle.name}{where}", enabled=not args.quiet and main_rank)
    try:
        result = train_from_spec(bundle, args.model, preset=args.preset, variant=args.variant, overrides=overrides,
                                 embeddings=emb, epochs=args.epochs, out=out, callbacks=[progress],
                                 min_freq=args.min_freq, max_vocab=args.max_vocab,
                                 extra_vocab=args.extra_vocab, tokenizer_overrides=tok,
                                 train_overrides=train_over, paper_training=args.paper_training, seed=args.seed,
                                 float16=args.float16, limit=args.limit, data_spec=args.data, arrow=use_arrow,
                                 num_proc=args.num_proc)
    finally:
        progress.close()
    if not main_rank:
        return 0                     # rank 0 reports (and wrote the checkpoint)
    h = result.history
    test, dev = result.metrics.get("test"), result.metrics.get("dev")
    summary = {"checkpoint": str(result.path), "model": args.model, "data": result.data_name,
               "epochs": len(h.epochs), "steps": h.steps, "seconds": round(h.elapsed, 2),
               "stopped_reason": h.stopped_reason, "diverged": h.diverged,
               "dev_accuracy": dev and dev["accuracy"], "test_accuracy": test and test["accuracy"],
               "test_macro_f1": test and test["macro_f1"], "embedding_coverage": result.embedding_coverage}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        acc = "n/a" if test is None else f"{test['accuracy']:.4f} (macro-F1 {test['macro_f1']:.4f})"
        print(f"saved {result.path}: test accuracy {acc}; {h.stopped_reason}; {h.elapsed:.1f} s")
    if h.diverged:
        print(f"{PROG} train: error: training diverged: {h.stopped_reason}", file=sys.stderr)
        return 1
    return 0


# ---------------------------------------------------------------- evaluate


def _format_report(r: dict[str, Any]) -> str:
    labels = r["labels"]
    w = max(8, max(len(x) for x in labels))
    lines = [f"accuracy {r['accuracy']:.4f}   macro-F1 {r['macro_f1']:.4f}"
             + (f" (without {r['ignore_label']!r}; all classes {r['macro_f1_all']:.4f})" if r["ignore_label"] else "")
             + f"   n = {r['n']}", "",
             f"{'class':<{w}}  precision  recall     f1  support"]
    for lab in labels:
        c = r["per_class"][lab]
        lines.append(f"{lab:<{w}}  {c['precision']:9.4f}  {c['recall']:6.4f}  {c['f1']:.4f}  {c['support']:7d}")
    if r.get("per_relation"):
        lines += ["", f"per relation, directions together (official-style: a hit needs the right direction); "
                      f"macro-F1 over relations {r['macro_f1_official']:.4f}",
                  f"{'relation':<{w}}  precision  recall     f1  support"]
        for rel, c in r["per_relation"].items():
            lines.append(f"{rel:<{w}}  {c['precision']:9.4f}  {c['recall']:6.4f}  {c['f1']:.4f}  {c['support']:7d}")
    lines += ["", "confusion (rows: true, columns: predicted, in the order above)"]
    lines += ["  " + " ".join(f"{v:5d}" for v in row) for row in r["confusion"]]
    return "\n".join(lines)


def _data_of(args, predictor, limit: int | None = None):
    """The data set of --data (default: the one the checkpoint records), with --split checked: bad input is a
    UsageError (exit 2). `limit` rows per split (evaluate's --limit)."""
    from .data import load_data

    data = args.data
    if data is None:
        recorded = predictor.info.get("data") if isinstance(predictor.info.get("data"), dict) else {}
        data = recorded.get("spec") or recorded.get("name")
        if not data:
            raise UsageError("the checkpoint does not record its data set; pass --data")
    try:
        bundle = load_data(data, root=args.data_root, limit=limit)
    except (KeyError, ValueError, FileNotFoundError) as e:
        raise UsageError(_one_line(e)) from None
    if args.split not in bundle.splits:
        raise UsageError(f"data set {bundle.name!r} has no split {args.split!r} (has: {', '.join(bundle.splits)})")
    return bundle


def cmd_evaluate(args) -> int:
    from .checkpoint import load_checkpoint
    from .metrics import default_ignore_label, evaluate

    predictor = load_checkpoint(args.checkpoint, device=_device(args.device))
    bundle = _data_of(args, predictor, limit=args.limit)
    ignore = default_ignore_label(bundle.name, predictor.labels)
    try:
        report = evaluate(predictor, bundle.splits[args.split], label_names=bundle.labels, ignore_label=ignore,
                          batch_size=args.batch_size)
    except ValueError as e:  # label mismatch between data and model
        raise UsageError(_one_line(e)) from None
    report = {"checkpoint": str(args.checkpoint), "model": predictor.info.get("model"), "data": bundle.name,
              "split": args.split, **report}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{report['checkpoint']} ({report['model']}) on {bundle.name}/{args.split}")
        print(_format_report(report))
    return 0


# ---------------------------------------------------------------- faithfulness (textcls/interpret/batched.py)

DEFAULT_FAITH_METHODS = "attention,random,leave_one_out,integrated_gradients,grad_x_input"


def _faithfulness_methods(raw: str) -> list[str]:
    from .interpret.faithfulness import EXPLANATIONS
    from .interpret.attributions import ALIASES
    methods = []
    for m in (x.strip().lower() for x in raw.split(",")):
        if not m:
            continue
        m = {"loo": "leave_one_out", "own_attention": "attention"}.get(m, ALIASES.get(m, m))
        if m not in EXPLANATIONS:
            raise UsageError(f"--methods: unknown method {m!r}; choose from {', '.join(EXPLANATIONS)}")
        methods.append(m)
    if not methods:
        raise UsageError("--methods: no method given")
    return list(dict.fromkeys(methods))


def _json_value(v):
    import math
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):
        return _json_value(v.item())
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    return v


def _max_rss_mb() -> float | None:
    """Peak resident memory of this process in MB (None where the platform does not say)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(rss / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def cmd_faithfulness(args) -> int:
    from .checkpoint import load_checkpoint
    from .interpret.batched import SliceRun

    methods = _faithfulness_methods(args.methods)
    if args.limit is not None and args.limit < 1:
        raise UsageError("--limit must be >= 1")
    if args.permutations < 1:
        raise UsageError("--permutations must be >= 1")
    if args.steps < 1:
        raise UsageError("--steps must be >= 1")
    if args.random_orders is not None and args.random_orders < 0:
        raise UsageError("--random-orders must be >= 0")
    predictor = load_checkpoint(args.checkpoint, device="cpu")
    bundle = _data_of(args, predictor)
    texts = list(bundle.splits[args.split].texts)[: args.limit]
    reference = "leave_one_out" if "leave_one_out" in methods else methods[0]
    try:
        run = SliceRun(predictor, texts, methods, reference=reference, removal=args.removal, baseline=args.baseline,
                       n_steps=args.steps, n_permutations=args.permutations,
                       attention_tests=not args.no_attention_tests, seed=args.seed,
                       **({} if args.random_orders is None else {"random_orders": args.random_orders}))
    except ValueError as e:
        raise UsageError(_one_line(e)) from None
    bar = None
    if not args.quiet:
        from tqdm import tqdm
        bar = tqdm(total=run.total, desc=f"{Path(args.checkpoint).name} on {bundle.name}/{args.split}",
                   unit="text", file=sys.stderr, dynamic_ncols=True, mininterval=0.5 if sys.stderr.isatty() else 5.0)

    def progress(done: int, total: int) -> None:
        if bar is not None:
            bar.update(done - bar.n)
    try:
        run.run(progress)
    finally:
        if bar is not None:
            bar.close()
    rep = run.report()
    head = {"checkpoint": str(args.checkpoint), "model": predictor.info.get("model"), "data": bundle.name,
            "split": args.split, "n_texts": rep.settings["n_texts"]}
    lines = [{**head, "kind": "method", **row} for row in rep.rows]
    summary = {**head, "kind": "summary", "method": None, "seconds": round(rep.seconds, 3),
               **{k: v for k, v in rep.model_row.items() if k != "seconds"},
               "attention_tests_seconds": rep.model_row.get("seconds"),
               "timings": {k: round(v, 3) for k, v in rep.timings.items()}, "max_rss_mb": _max_rss_mb(),
               **{k: rep.settings[k] for k in ("removal", "reference", "baseline", "n_steps", "n_permutations",
                                               "random_orders", "variants_scored", "notes")}}
    if args.json:
        for obj in lines + [summary]:
            print(json.dumps({k: _json_value(v) for k, v in obj.items()}))
        return 0
    print(f"{head['checkpoint']} ({head['model']}) on {bundle.name}/{args.split}: {head['n_texts']} texts, "
          f"{rep.seconds:.1f} s")
    print(f"{'method':<22} {'AOPC comp. [95% CI]':<26} {'AOPC suff. [95% CI]':<26} {'tau vs ref':>10} "
          f"{'top flip':>9} {'to flip':>8} {'seconds':>8}")

    def ci(row, key):
        lo, hi = row.get(key + "_ci", (float("nan"), float("nan")))
        return f"{row.get(key, float('nan')):.3f} [{lo:.3f}, {hi:.3f}]"
    for row in rep.rows:
        print(f"{row['method']:<22} {ci(row, 'aopc_comprehensiveness'):<26} {ci(row, 'aopc_sufficiency'):<26} "
              f"{row.get('kendall_tau_ref', float('nan')):>10.3f} {row.get('erasure_top_flip', float('nan')):>9.3f} "
              f"{row.get('erasure_fraction_to_flip', float('nan')):>8.3f} {row['seconds']:>8.1f}")
    mr = rep.model_row
    if mr:
        print(f"attention tests ({', '.join(mr['attention_maps'])}): permutation median TVD "
              f"{mr['permutation_median_tvd']:.3f}, flip rate {mr['permutation_flip_rate']:.3f}; uniform TVD "
              f"{mr['uniform_tvd']:.3f}, flip rate {mr['uniform_flip_rate']:.3f} ({mr['seconds']:.1f} s)")
    for note in rep.settings["notes"]:
        print(f"note: {note}")
    return 0


# ---------------------------------------------------------------- predict


def cmd_predict(args) -> int:
    from .checkpoint import load_checkpoint

    texts = []
    for t in args.texts:
        if t == "-":
            texts += [line.rstrip("\n") for line in sys.stdin]
        else:
            texts.append(t)
    if not texts:
        raise UsageError("no text to classify")
    predictor = load_checkpoint(args.checkpoint, device=_device(args.device))
    preds = predictor.predict(texts, batch_size=args.batch_size)
    if args.json:
        items = [{"text": t, **p.to_dict()} for t, p in zip(texts, preds)]
        print(json.dumps(items[0] if len(items) == 1 else items, indent=2, ensure_ascii=False))
    else:
        for t, p in zip(texts, preds):
            short = t if len(t) <= 70 else t[:67] + "..."
            note = "  [truncated]" if p.truncated else ""
            print(f"{p.label}\t{p.probabilities[p.label]:.4f}\t{short}{note}")
    return 0


# ---------------------------------------------------------------- counterfactuals


def cmd_counterfactuals(args) -> int:
    from .checkpoint import load_checkpoint
    from .counterfactuals import GENERATORS, CounterfactualError, run_generator

    if args.generator not in GENERATORS:
        raise UsageError(f"unknown generator {args.generator!r}; choose one of {', '.join(GENERATORS)}")
    if args.limit is not None and args.limit < 1:
        raise UsageError("--limit must be at least 1")
    predictor = load_checkpoint(args.checkpoint)
    bundle = _data_of(args, predictor)
    texts = list(bundle.splits[args.split].texts)[:args.limit]
    if not texts:
        raise UsageError(f"{bundle.name}/{args.split} is empty")
    try:
        rep = run_generator(predictor, texts, args.generator, checkpoint=Path(args.checkpoint).name,
                            rules=args.rules, seed=args.seed)
    except CounterfactualError as e:
        raise UsageError(_one_line(e)) from None
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
        print(f"{out['checkpoint']} · {args.generator} on {bundle.name}/{args.split}: {out['n']} of "
              f"{out['n_texts']} texts edited, flip rate {rate}, mean change of p(original label) {change}, "
              f"{out['seconds']:.1f} s")
        for r in rep.rows.head(args.examples).itertuples():
            print(f"  {'FLIP' if r.flipped else '    '} {r.label}->{r.new_label}  {r.edited}")
    return 0


# ---------------------------------------------------------------- list


def cmd_list(args) -> int:
    from .checkpoint import list_all_checkpoints, list_checkpoints
    from .data import list_datasets
    from .paths import checkpoint_roots
    from .registry import get_entry, list_models

    models = [{"name": n, "input": get_entry(n).input_kind, "presets": sorted(get_entry(n).presets),
               "variants": sorted(get_entry(n).variants), "description": get_entry(n).description}
              for n in list_models()]
    try:
        datasets = list_datasets(args.data_root)
    except (ValueError, FileNotFoundError) as e:
        raise UsageError(_one_line(e)) from None
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
        print(f"  {d}")
    where = args.checkpoints or " and ".join(str(r) for r in checkpoint_roots())
    print(f"checkpoints in {where}:" + ("" if cks else " none"))
    for c in cks:
        if c.valid:
            acc = "n/a" if c.test_accuracy is None else f"{c.test_accuracy:.4f}"
            print(f"  {c.name:<24} {c.model:<12} {c.data:<14} test acc {acc}")
        else:
            print(f"  {c.name:<24} INVALID: {c.error}")
    return 0


# ---------------------------------------------------------------- bench (textcls/experiments/bench.py, latency.py)
# The experiments import torch: they are imported where a command runs, so `--help` and `list` stay light.


def _bench_arguments(p) -> None:
    p.add_argument("--quick", action="store_true", help="fewer repeats and training steps (about a minute)")
    p.add_argument("--json", default=None, metavar="OUT", help="also write the full results as JSON to OUT")
    p.add_argument("--models", default=None, help="comma-separated model names to bench (default: all)")
    p.add_argument("--seq-len", type=int, default=56, help="tokens per input (default 56, ~ AG News)")
    p.add_argument("--batch-size", type=int, default=100, help="inference batch size (default 100, ACT Table 5)")
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: as set)")
    p.add_argument("--checkpoints", default=os.environ.get("TEXTCLS_CHECKPOINTS", "checkpoints"),
                   help="folder of checkpoints to time (default: checkpoints)")
    p.add_argument("--no-memory", action="store_true", help="skip the memory measurements")
    p.add_argument("--no-training", action="store_true", help="skip the training-step timings")
    g = p.add_argument_group("latency (--latency): what a user waits for on a busy machine")
    g.add_argument("--latency", action="store_true",
                   help="only time one sentence through the shipped sst2 checkpoints (predict) and their integrated "
                        "gradients, at each thread count (1, torch's default, TEXTCLS_THREADS'), idle and with --load")
    g.add_argument("--load", type=int, default=0, metavar="N",
                   help="with --latency: also measure with N busy background processes (started and stopped by "
                        "the command), e.g. 2")
    g.add_argument("--latency-threads", default=None, metavar="N,M",
                   help="with --latency: the thread counts to compare (default: 1, torch's default and the policy's)")
    g.add_argument("--pattern", default=LATENCY_PATTERN,
                   help=f"with --latency: checkpoint folder names to time (default {LATENCY_PATTERN})")
    g.add_argument("--no-ig", action="store_true", help="with --latency: skip integrated gradients")


def _progress(message: str) -> None:
    print(f"... {message}", file=sys.stderr, flush=True)


def _bench_job(args) -> Callable[[], int]:
    """Check the `textcls bench` arguments (ValueError on bad input) and return the job that runs it."""
    from .experiments.bench import format_report, run_bench, write_json
    from .experiments.specs import default_models
    for name in ("seq_len", "batch_size"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.threads is not None and args.threads < 1:
        raise ValueError(f"--threads must be >= 1, got {args.threads}")
    models = None
    if args.models is not None:
        models = [m.strip() for m in args.models.split(",") if m.strip()]
        known = {s.model for s in default_models()} | {s.label for s in default_models()}
        unknown = sorted(set(models) - known)
        if unknown or not models:
            raise ValueError(f"--models: unknown model(s) {unknown}; known: {', '.join(sorted(known))}")
    if args.json is not None and Path(args.json).is_dir():
        raise ValueError(f"--json {args.json} is a folder; give a file name")
    if getattr(args, "latency", False):
        return _latency_job(args)
    if getattr(args, "load", 0) or getattr(args, "latency_threads", None):
        raise ValueError("--load and --latency-threads go with --latency")

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
    from .experiments.bench import write_json
    from .experiments.latency import bench_latency, format_latency
    if not Path(args.checkpoints).is_dir():
        raise ValueError(f"--checkpoints {args.checkpoints}: no such folder")
    if args.load < 0 or args.load > 64:
        raise ValueError(f"--load must be between 0 and 64 busy processes, got {args.load}")
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


def cmd_bench(args) -> int:
    try:
        job = _bench_job(args)
    except (KeyError, ValueError) as e:
        raise UsageError(_one_line(e)) from None
    return job()


# ---------------------------------------------------------------- reproduce (textcls/experiments/reproduce.py)


def _csv(raw: str | None) -> list[str] | None:
    if raw is None:
        return None
    items = [x.strip() for x in raw.split(",") if x.strip()]
    return items or None


def _reproduce_arguments(p) -> None:
    p.add_argument("--suite", default=None,
                   help=f"comma-separated suites (default: all but smoke): {', '.join(SUITES)}")
    p.add_argument("--runs", type=int, default=None, help="runs per cell (default: as many as the paper averaged)")
    p.add_argument("--epochs", type=int, default=None, help="epochs per run (default: each suite's)")
    p.add_argument("--limit", type=int, default=None, help="at most N texts per split (quick runs)")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"results JSON (default {DEFAULT_OUT}); the Markdown "
                                                      "table goes beside it with the suffix .md")
    p.add_argument("--markdown", default=None, help="Markdown file (default: OUT with .md)")
    p.add_argument("--data", default=None, help="comma-separated data sets to keep (e.g. trec,sst2)")
    p.add_argument("--model", default=None, help="comma-separated models to keep (e.g. kim_cnn,agcnn)")
    p.add_argument("--only", default=None, help="comma-separated glob patterns on cell keys "
                                                "(e.g. 'agcnn_t3/cnn-non-static/*')")
    p.add_argument("--seed", type=int, default=0, help="first seed (runs use seed, seed+1, ...)")
    p.add_argument("--data-root", default=None, help="folder of the bundled data sets")
    p.add_argument("--force", action="store_true", help="re-run cells already in the results file")
    p.add_argument("--list", action="store_true", help="list the selected cells and exit")
    p.add_argument("--dry-run", action="store_true", help="say what would run and exit")
    p.add_argument("--report", action="store_true", help="only rebuild the Markdown from the results file")
    p.add_argument("--device", default=None, help="auto (default), cpu, cuda, cuda:N or mps; under torchrun every "
                                                  "rank trains each cell together (DDP)")
    p.add_argument("--amp", nargs="?", const="auto", default=None, choices=("off", "auto", "bf16", "fp16"),
                   help="mixed precision on CUDA for every run (default: each suite's; the GPU suites use auto)")


def _reproduce_job(args) -> Callable[[], int]:
    """Check the `textcls reproduce` arguments (ValueError on bad input) and return the job that runs it."""
    out = Path(args.out)
    md = Path(args.markdown) if args.markdown else out.with_suffix(".md")
    for name in ("runs", "epochs", "limit"):
        v = getattr(args, name)
        if v is not None and v < 1:
            raise ValueError(f"--{name} must be >= 1, got {v}")
    if out.is_dir() or md.is_dir():
        raise ValueError(f"--out {out} / --markdown {md} must be files, not folders")
    results = load_results(out)                                 # a corrupt file is an error before any run
    n_sessions = len(results.get("sessions", []))
    if args.report:
        def report() -> int:
            print(f"wrote {write_markdown(results, md)}")
            return 0
        return report
    cells = select_cells(_csv(args.suite), data=_csv(args.data), models=_csv(args.model), only=_csv(args.only))
    if not cells:
        raise ValueError("no cell matches the selection (see --list)")
    if args.list:
        def listing() -> int:
            for c in cells:
                paper = "-" if c.paper is None else f"{c.paper}"
                print(f"{c.key:<48} {c.model:<12} runs {c.runs}  epochs {c.epochs:<3} paper {paper}")
            return 0
        return listing

    if args.device is not None:
        _device(args.device)

    def job() -> int:
        from .experiments.reproduce import reproduce
        ctx = _join_group(args.device)
        command = "python -m textcls reproduce " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else ""
        if ctx is not None:
            command = f"torchrun (world size {ctx.world_size}) " + command
        res = reproduce(cells, out=out, markdown=md, runs=args.runs, epochs=args.epochs, limit=args.limit,
                        seed=args.seed, data_root=args.data_root, force=args.force, dry_run=args.dry_run,
                        log=lambda m: print(m, file=sys.stderr, flush=True), command=command,
                        device=args.device, amp=args.amp)
        if args.dry_run or (ctx is not None and not ctx.is_main):
            return 0
        keys = {c.key for c in cells}
        for r in table_rows(res):
            if r["key"] in keys:
                paper = "-" if r["paper"] is None else f"{r['paper']:.1f}"
                print(f"{r['key']:<48} ours {fmt_number(r['ours']):>5} ({r['spread']})  paper {paper:>5}  "
                      f"delta {fmt_number(r['delta'], signed=True)}")
        print(f"wrote {out} and {md}")
        new_session = len(res.get("sessions", [])) > n_sessions
        failed = res["sessions"][-1].get("failed", []) if new_session else []
        return 1 if failed else 0
    return job


def cmd_reproduce(args) -> int:
    try:
        job = _reproduce_job(args)
    except (KeyError, ValueError) as e:
        raise UsageError(_one_line(e)) from None
    return job()


# ---------------------------------------------------------------- parser and main


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Small interpretable text classifiers: train, evaluate, predict, list.")
    sub = p.add_subparsers(dest="command",
                           metavar="{train,evaluate,predict,faithfulness,counterfactuals,list,limits,bench,reproduce,study}",
                           parser_class=_Parser)
    sub.required = True

    t = sub.add_parser("train", help="train a model and save a checkpoint folder",
                       description="Train a model on a data set, evaluate it on dev/test, save a checkpoint.")
    t.add_argument("--model", required=True, help="registered model name (see `list`), or hf:PATH_OR_ID to "
                   "fine-tune a Hugging Face encoder (e.g. hf:all-MiniLM-L6-v2 when installed)")
    t.add_argument("--data", required=True, help="bundled data set name, a data folder/file, or hf:ID")
    t.add_argument("--epochs", type=int, required=True, help="number of epochs")
    t.add_argument("--out", default=None,
                   help="checkpoint folder to write (replaced atomically); default: a new MODEL-DATA-TIME folder in "
                        "your checkpoints ($TEXTCLS_HOME/checkpoints), which the app lists beside the shipped ones")
    t.add_argument("--embeddings", default="glove", help="glove (50-d GloVe 6B), random, or a vectors FILE")
    t.add_argument("--preset", default=None, help="model preset, e.g. small (default: the paper's configuration)")
    t.add_argument("--variant", default=None, help="a paper variant of the model (see `list`)")
    t.add_argument("--set", action="append", metavar="KEY=VALUE", help="model config override (repeatable)")
    t.add_argument("--tokenizer", action="append", metavar="KEY=VALUE",
                   help="tokenizer setting, e.g. level=char, max_len=200 (repeatable)")
    t.add_argument("--max-len", type=int, default=None, help="tokens kept per text (tokenizer max_len)")
    t.add_argument("--batch-size", type=int, default=None, help="batch size (default 32)")
    t.add_argument("--lr", type=float, default=None, help="learning rate (default 1e-3; noam: the peak)")
    t.add_argument("--optimizer", choices=("adam", "sgd", "noam", "adadelta"), default=None,
                   help="optimiser (default adam; adadelta with --lr 1 is Kim 2014's)")
    t.add_argument("--patience", type=int, default=None, help="early stopping after N epochs without dev gain")
    t.add_argument("--clip", type=float, default=None, help="gradient clipping: max global norm")
    t.add_argument("--max-norm", type=float, default=None,
                   help="Kim 2014: rescale each class's output weight vector to at most this L2 norm (e.g. 3)")
    t.add_argument("--max-steps", type=int, default=None, help="stop after this many optimiser steps")
    t.add_argument("--paper-training", action="store_true", help="use the paper's optimiser settings")
    t.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    t.add_argument("--min-freq", type=int, default=1, help="keep words seen at least this often")
    t.add_argument("--max-vocab", type=int, default=None, help="vocabulary size cap (specials included)")
    t.add_argument("--extra-vocab", type=int, default=0, metavar="N",
                   help="also add the N most frequent GloVe words missing from the training texts (they keep "
                        "their GloVe vectors, so test words unseen in training are not <unk>)")
    t.add_argument("--data-root", default=None, help="folder(s) of data sets searched by name before the embedded sst2, sst2_phrases, trec (default: TEXTCLS_DATA)")
    t.add_argument("--limit", type=int, default=None, help="use at most N examples per split (quick runs)")
    t.add_argument("--text-column", default="text", help="text column of a CSV/JSONL/Parquet file")
    t.add_argument("--label-column", default="label", help="label column of a CSV/JSONL/Parquet file")
    t.add_argument("--arrow", action=argparse.BooleanOptionalAction, default=None,
                   help="read the data as memory-mapped Arrow tables, tokenised in --num-proc processes into a "
                        "disk cache (default: for hf:ID and files of 256 MB or more)")
    t.add_argument("--num-proc", type=int, default=None,
                   help="tokenising processes for --arrow (default: the usable cores, at most 8)")
    t.add_argument("--float16", action="store_true", help="store the weights as float16")
    t.add_argument("--freeze-word-embeddings", action=argparse.BooleanOptionalAction, default=None,
                   help="--model hf:...: keep the word-piece embeddings fixed (default: frozen)")
    t.add_argument("--device", default=None,
                   help="auto (default: cuda when there is one, under torchrun cuda:LOCAL_RANK), cpu, cuda, "
                        "cuda:N or mps")
    t.add_argument("--amp", nargs="?", const="auto", default=None, choices=("off", "auto", "bf16", "fp16"),
                   help="mixed precision on CUDA: bf16 (no scaler) or fp16 (with a grad scaler); --amp alone picks "
                        "bf16 where the GPU supports it. No effect on the CPU (a warning)")
    t.add_argument("--workers", type=int, default=None,
                   help="worker processes that pad batches (default: 2 on CUDA, 0 on the CPU)")
    t.add_argument("--pin-memory", action=argparse.BooleanOptionalAction, default=None,
                   help="pinned host memory for batches (default: on with CUDA; never on the CPU)")
    t.add_argument("--json", action="store_true", help="print the summary as JSON")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    _limit_flags(t)
    t.set_defaults(func=cmd_train)

    e = sub.add_parser("evaluate", help="evaluate a checkpoint on a data split",
                       description="Accuracy, macro-F1 (SemEval: without Other), per-class scores, confusion.")
    e.add_argument("checkpoint", metavar="DIR", help="checkpoint folder")
    e.add_argument("--data", default=None, help="data set (default: the one the checkpoint was trained on)")
    e.add_argument("--split", default="test", help="split name (default test)")
    e.add_argument("--json", action="store_true",
                   help="print JSON: accuracy, macro_f1, per_class, confusion, labels, n, loss")
    e.add_argument("--data-root", default=None, help="folder(s) of data sets searched by name (default: TEXTCLS_DATA)")
    e.add_argument("--limit", type=int, default=None, help="use at most N examples")
    e.add_argument("--batch-size", type=int, default=128, help="batch size (default 128)")
    e.add_argument("--device", default="cpu", help="cpu (default), cuda or auto")
    _limit_flags(e, ("max_file_mb", "max_parameters"))
    e.set_defaults(func=cmd_evaluate)

    r = sub.add_parser("predict", help="classify texts with a checkpoint",
                       description="Classify texts; '-' reads one text per line from stdin. With --json: one "
                                   "object for one text, a list for several.")
    r.add_argument("checkpoint", metavar="DIR", help="checkpoint folder")
    r.add_argument("texts", nargs="+", metavar="TEXT", help="text(s) to classify, or - for stdin")
    r.add_argument("--json", action="store_true", help="print label, probabilities, tokens, truncated as JSON")
    r.add_argument("--batch-size", type=int, default=64, help="batch size (default 64)")
    r.add_argument("--device", default="cpu", help="cpu (default), cuda or auto")
    _limit_flags(r, ("max_parameters",))
    r.set_defaults(func=cmd_predict)

    cf = sub.add_parser("counterfactuals", help="generated counterfactuals over a data split: flip rate per generator",
                        description="Edit every text of a split with one generator (word_replacer, negation, "
                                    "scrambler, glove, hotflip, ablation_flip) and count how often the checkpoint's "
                                    "decision flips. --json prints one object: flip_rate, mean_prob_change, n, ...")
    cf.add_argument("checkpoint", metavar="DIR", help="checkpoint folder")
    cf.add_argument("--data", default=None, help="data set (default: the one the checkpoint was trained on)")
    cf.add_argument("--split", default="test", help="split name (default test)")
    cf.add_argument("--generator", required=True, metavar="NAME",
                    help="word_replacer, negation, scrambler, glove, hotflip or ablation_flip")
    cf.add_argument("--limit", type=int, default=None, metavar="N", help="the first N texts of the split")
    cf.add_argument("--rules", default=None, help="word_replacer rules, e.g. 'good -> bad, great -> awful'")
    cf.add_argument("--seed", type=int, default=0, help="scrambler seed (default 0)")
    cf.add_argument("--examples", type=int, default=0, metavar="K", help="also show the first K edits")
    cf.add_argument("--data-root", default=None, help="folder(s) of data sets searched by name (default: TEXTCLS_DATA)")
    cf.add_argument("--json", action="store_true", help="print one JSON object")
    cf.set_defaults(func=cmd_counterfactuals)

    s = sub.add_parser("list", help="list models, data sets and checkpoints",
                       description="List the registered models, the bundled data sets and the checkpoints.")
    s.add_argument("--checkpoints", default=None,
                   help="one folder of checkpoint folders (default: the shipped ones, TEXTCLS_CHECKPOINTS or "
                        "./checkpoints, and yours, $TEXTCLS_HOME/checkpoints)")
    s.add_argument("--data-root", default=None, help="folder(s) of data sets searched by name (default: TEXTCLS_DATA)")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=cmd_list)

    lm = sub.add_parser("limits", help="print the limits that protect the machine",
                        description="The limits in force (textcls/limits.py, overridden by TEXTCLS_* variables); "
                                    "train/evaluate/predict take flags that raise them for one run.")
    lm.add_argument("--json", action="store_true", help="print JSON")
    lm.set_defaults(func=cmd_limits)

    f = sub.add_parser("faithfulness", help="faithfulness of explanations over a data split (batched)",
                       description="ERASER comprehensiveness / sufficiency (AOPC with bootstrap 95 % intervals), "
                                   "rank agreement with leave-one-out, erasure flips, and the attention permutation "
                                   "/ uniform tests over a whole split, batched across texts. With --json: one "
                                   "JSON object per method, then a summary object (kind 'summary': the attention "
                                   "tests, total seconds, settings). Progress bar on stderr.")
    f.add_argument("checkpoint", metavar="CHECKPOINT", help="checkpoint folder")
    f.add_argument("--data", default=None, help="data set (default: the one the checkpoint was trained on)")
    f.add_argument("--split", default="test", help="split name (default test)")
    f.add_argument("--methods", default=DEFAULT_FAITH_METHODS,
                   help=f"comma-separated explanations (default {DEFAULT_FAITH_METHODS}); also occlusion, saliency, "
                        "shapley, lime")
    f.add_argument("--limit", type=int, default=None, help="the first N texts of the split")
    f.add_argument("--removal", choices=("delete", "pad", "unk"), default="delete",
                   help="how a token is removed (default delete)")
    f.add_argument("--baseline", choices=("pad", "unk", "zero"), default="pad",
                   help="baseline of IG / occlusion / Shapley / LIME (default pad)")
    f.add_argument("--steps", type=int, default=50, help="IG steps, first try (doubled until converged)")
    f.add_argument("--permutations", type=int, default=30, help="attention permutations per text (default 30)")
    f.add_argument("--random-orders", type=int, default=None,
                   help="random orders of the erasure-flip test per text (default 1: the mean over texts averages "
                        "them; 5 gives the numbers of one text's own report)")
    f.add_argument("--no-attention-tests", action="store_true", help="skip the permutation / uniform tests")
    f.add_argument("--seed", type=int, default=0, help="seed of the random baselines (default 0)")
    f.add_argument("--data-root", default=None, help="folder(s) of data sets searched by name (default: TEXTCLS_DATA)")
    f.add_argument("--json", action="store_true", help="JSON lines on stdout: one object per method, then a summary")
    f.add_argument("--quiet", action="store_true", help="no progress bar")
    f.set_defaults(func=cmd_faithfulness)

    b = sub.add_parser("bench", help="parameters, speed and memory of every model; ACT Table 5, LAMA Fig. 4",
                       description="Benchmark the models (random weights) and the shipped checkpoints; with "
                                   "--latency, one sentence's latency per thread count, idle and under --load.")
    _bench_arguments(b)
    b.set_defaults(func=cmd_bench)
    rp = sub.add_parser("reproduce", help="train the papers' configurations, write results.json + .md",
                        description="Train the configurations the papers report on the bundled data and write "
                                    "the results next to the papers' figures (resumable).")
    _reproduce_arguments(rp)
    rp.set_defaults(func=cmd_reproduce)
    from .cli_study import add_study_parser
    add_study_parser(sub, UsageError)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from .checkpoint import CheckpointError
    from .relation import EntitySpanError           # malformed <e1>..</e2> markers: the user's input
    bad_input = (UsageError, CheckpointError, EntitySpanError) + _data_error_types()
    saved: dict[str, str | None] = {}
    try:
        saved = _apply_limit_flags(args)
        return int(args.func(args) or 0)
    except bad_input as e:
        print(f"{PROG} {args.command}: error: {_rank_prefix()}{_one_line(e)}", file=sys.stderr)
        if os.environ.get("TEXTCLS_DEBUG"):
            raise
        return 2
    except KeyboardInterrupt:
        print(f"{PROG} {args.command}: {_rank_prefix()}interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - the CLI's contract: one line, no traceback
        if os.environ.get("TEXTCLS_DEBUG"):
            raise
        prefix = _rank_prefix()
        if prefix and sys.modules[f"{__package__}.distributed"].is_peer_failure(e):
            print(f"{PROG} {args.command}: error: {prefix}stopped because another rank failed or was killed "
                  f"(its own message says why); no checkpoint written", file=sys.stderr)
        else:
            print(f"{PROG} {args.command}: error: {prefix}{type(e).__name__}: {_one_line(e)}", file=sys.stderr)
        return 1
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        dist_mod = sys.modules.get(f"{__package__}.distributed")
        if dist_mod is not None:
            dist_mod.shutdown()
