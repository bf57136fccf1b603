"""`textcls train`: train a model on a data set, evaluate it on dev/test and save a checkpoint folder (a tqdm bar
and the epoch lines on stderr, the summary on stdout). Under torchrun every rank trains and rank 0 saves."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

from textcls.cli.common import (PROG, UsageError, add_batch_size, add_data, add_data_root, add_device, add_limit,
    add_seed, count, device, epochs_arg, join_group, limit_flags, one_line, parse_pairs, rank_prefix, report_result)


class _Progress:
    """tqdm bar on stderr fed by fit's events; epoch summaries written above the bar."""

    def __init__(self, desc: str, enabled: bool = True):
        self.desc, self.enabled, self.bar = desc, enabled, None

    def __call__(self, event) -> None:
        from textcls.records import EpochEvent, StepEvent
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


def _use_arrow(args) -> bool:
    """--arrow / --no-arrow, else the library's rule (textcls.data.datasets.use_arrow)."""
    from textcls.data.datasets import use_arrow
    return use_arrow(args.data, args.arrow)


def claim_file(out: Path) -> Path:
    """The hidden file beside --out that says which process is training into it."""
    return out.parent / f".{out.name}.claim"


def _claim_out(args) -> tuple[Path, Path | None]:
    """The folder to write: refused inside the shipped checkpoints, or when it holds a checkpoint already and
    --overwrite is not given, or while another live process trains into it (its claim file beside the folder,
    created atomically; a dead process's claim is taken over). Returns (folder, claim file to remove at the end;
    None on torchrun ranks but 0, which never save)."""
    from textcls.checkpoint import check_target
    from textcls.runtime.paths import new_run_dir, shipped_checkpoints

    if args.out is None:
        args.out = str(new_run_dir(args.model, args.data))
    out = check_target(args.out)
    shipped = shipped_checkpoints().resolve()
    here = out.expanduser().resolve()
    if here == shipped or shipped in here.parents:
        raise UsageError(f"--out {out} is inside the shipped checkpoints folder ({shipped}), which is read-only; "
                         "write elsewhere (without --out it goes to your user folder)")
    if out.exists() and any(out.iterdir()) and not args.overwrite:
        raise UsageError(f"--out {out} already holds a checkpoint; pass --overwrite to replace it, or choose "
                         "another folder")
    if os.environ.get("RANK", "0") != "0":
        return out, None
    out.parent.mkdir(parents=True, exist_ok=True)
    claim = claim_file(out)
    for _ in range(2):
        try:
            fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                pid = int(claim.read_text().strip() or 0)
            except (OSError, ValueError):
                pid = 0
            if pid and pid != os.getpid() and _alive(pid):
                raise UsageError(f"--out {out}: another training (process {pid}) is writing to it; wait for it "
                                 "or choose another folder") from None
            claim.unlink(missing_ok=True)               # left by a process that is gone
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return out, claim
    raise UsageError(f"--out {out}: could not claim it (another training started at the same moment)")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _check_input(args):
    """Everything that depends only on the user's input, checked before any data is read: errors exit 2.
    Returns (model overrides, tokenizer overrides, training overrides, device name, use the Arrow path)."""
    from textcls.train.pipeline import tokenizer_config_for
    from textcls.models.registry import check_config, get_entry, make_config
    from textcls.data.text import TokenizerConfig
    from textcls.train.config import TrainConfig

    try:
        entry = get_entry(args.model)
        overrides = parse_pairs(args.set, "--set", entry.config_cls)
        model_config = make_config(args.model, preset=args.preset, variant=args.variant, **overrides)
        check_config(args.model, model_config)
        tok = parse_pairs(args.tokenizer, "--tokenizer", TokenizerConfig)
        if args.max_len is not None:
            tok["max_len"] = args.max_len
        tokenizer_config_for(model_config, entry.input_kind, tok)
        train_over = {k: v for k, v in dict(batch_size=args.batch_size, lr=args.lr, optimizer=args.optimizer,
                                             patience=args.patience, clip_norm=args.clip, max_norm=args.max_norm,
                                             max_steps=args.max_steps, device=args.device, amp=args.amp,
                                             workers=args.workers, pin_memory=args.pin_memory).items()
                      if v is not None}
        TrainConfig(epochs=args.epochs, seed=args.seed, **train_over)
        dev_name = device(args.device)
        emb = args.embeddings
        if emb not in ("glove", "random") and not Path(emb).expanduser().is_file():
            raise UsageError(f"--embeddings must be glove, random or an existing file; no file {emb!r}")
        if args.extra_vocab and emb != "glove":
            raise UsageError("--extra-vocab adds GloVe words: it needs --embeddings glove")
        use_arrow = _use_arrow(args)
    except (KeyError, TypeError, ValueError, FileNotFoundError) as e:
        raise UsageError(one_line(e)) from None
    return overrides, tok, train_over, dev_name, use_arrow



class Terminated(SystemExit):
    """SIGTERM (or SIGHUP) during `train`: raised from the signal handler so that every `finally` runs - the claim
    file beside --out is removed - before the process exits with 128 + the signal's number."""


@contextmanager
def _exit_cleanly_on_term():
    """While training: SIGTERM and SIGHUP end the command through Python (`Terminated`) instead of killing it outright,
    so the claim file is removed and a half-written checkpoint folder is never left (saves are atomic anyway). Only in
    the main thread, where Python delivers signals; the previous handlers are restored after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(signum, _frame):
        name = signal.Signals(signum).name
        print(f"{PROG} train: {rank_prefix()}stopped by {name}", file=sys.stderr)
        raise Terminated(128 + signum)
    saved = {}
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            saved[sig] = signal.signal(sig, on_signal)
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def cmd_train(args) -> int:
    with _exit_cleanly_on_term():
        return _cmd_train(args)


def _cmd_train(args) -> int:
    if isinstance(args.epochs, float) and not str(args.model).startswith("hf:"):
        raise UsageError(f"--epochs {args.epochs:g}: a whole number of epochs for {args.model} (a fraction of an "
                         "epoch is for hf: encoders; --max-steps stops a run early)")
    if str(args.model).startswith("hf:"):        # a Hugging Face encoder: textcls.cli.hf
        from textcls.cli.hf import train_hf_cli
        if args.out is None:
            from textcls.runtime.paths import new_run_dir
            args.out = str(new_run_dir(args.model.replace(":", "-").replace("/", "-"), args.data))
        out, claim = _claim_out(args)
        try:
            return train_hf_cli(args, _Progress, UsageError)
        finally:
            if claim is not None:
                claim.unlink(missing_ok=True)
    overrides, tok, train_over, dev_name, use_arrow = _check_input(args)
    out, claim = _claim_out(args)
    try:
        return _train(args, out, overrides, tok, train_over, dev_name, use_arrow)
    finally:
        if claim is not None:
            claim.unlink(missing_ok=True)


def _train(args, out: Path, overrides, tok, train_over, dev_name: str, use_arrow: bool) -> int:
    from textcls.data.datasets import check_trainable, load_data
    from textcls.train.pipeline import TrainSpec, run_training

    emb = args.embeddings
    ctx = join_group(args.device)              # before the data: the Arrow path lets rank 0 build caches first
    try:
        if use_arrow:
            from textcls.data.arrow import check_trainable_arrow, load_arrow
            bundle = load_arrow(args.data, root=args.data_root, limit=args.limit, seed=args.seed,
                                text_column=args.text_column, label_column=args.label_column)
            check_trainable_arrow(bundle)
        else:
            bundle = load_data(args.data, root=args.data_root, limit=args.limit, seed=args.seed,
                               text_column=args.text_column, label_column=args.label_column)
            check_trainable(bundle)
    except (KeyError, TypeError, ValueError, FileNotFoundError) as e:
        raise UsageError(one_line(e)) from None
    main_rank = ctx is None or ctx.is_main
    if args.amp not in (None, "off"):
        import torch

        from textcls.runtime.devices import resolve_amp
        note = resolve_amp(args.amp, ctx.device if ctx is not None else torch.device(dev_name), warn=False).note
        if note:
            import warnings
            warnings.filterwarnings("ignore", message="--amp", category=RuntimeWarning)  # said once, here
            if main_rank:
                print(f"{PROG} train: warning: {note}", file=sys.stderr)

    where = "" if ctx is None else f" ({ctx.describe()})"
    progress = _Progress(f"{args.model} on {bundle.name}{where}", enabled=not args.quiet and main_rank)
    try:
        spec = TrainSpec(bundle, args.model, preset=args.preset, variant=args.variant, overrides=overrides,
                         embeddings=emb, epochs=args.epochs, out=out, min_freq=args.min_freq,
                         max_vocab=args.max_vocab, extra_vocab=args.extra_vocab, tokenizer_overrides=tok,
                         train_overrides=train_over, paper_training=args.paper_training, seed=args.seed,
                         float16=args.float16, limit=args.limit, data_spec=args.data, arrow=use_arrow,
                         num_proc=args.num_proc, snapshots=args.snapshots)
        from textcls.train import faults               # the test hook's environment: read here, and only here
        result = run_training(spec, callbacks=[progress, *faults.from_env()])
    finally:
        progress.close()
    if not main_rank:
        return 0                     # rank 0 reports (and wrote the checkpoint)
    return report_result(args, result)


def add_parser(sub) -> None:
    t = sub.add_parser("train", help="train a model and save a checkpoint folder",
                       description="Train a model on a data set, evaluate it on dev/test, save a checkpoint.")
    t.add_argument("--model", required=True, help="registered model name (see `list`), or hf:PATH_OR_ID to "
                   "fine-tune a Hugging Face encoder (e.g. hf:all-MiniLM-L6-v2 when installed)")
    add_data(t, required=True)
    t.add_argument("--epochs", type=epochs_arg, required=True,
                   help="number of epochs; for hf: encoders also a fraction (0.5 = half an epoch's steps)")
    t.add_argument("--out", default=None,
                   help="checkpoint folder to write; default: a new MODEL-DATA-TIME folder in your checkpoints "
                        "($TEXTCLS_HOME/checkpoints), which the app lists beside the shipped ones. Never the "
                        "shipped checkpoints folder; an existing checkpoint only with --overwrite")
    t.add_argument("--overwrite", action="store_true",
                   help="replace the checkpoint already in --out (atomically, once the new one is complete)")
    t.add_argument("--embeddings", default="glove", help="glove (50-d GloVe 6B), random, or a vectors FILE")
    t.add_argument("--preset", default=None, help="model preset, e.g. small (default: the paper's configuration)")
    t.add_argument("--variant", default=None, help="a paper variant of the model (see `list`)")
    t.add_argument("--set", action="append", metavar="KEY=VALUE", help="model config override (repeatable)")
    t.add_argument("--tokenizer", action="append", metavar="KEY=VALUE",
                   help="tokenizer setting, e.g. level=char, max_len=200 (repeatable)")
    t.add_argument("--max-len", type=count("max_len"), default=None, help="tokens kept per text (tokenizer max_len)")
    add_batch_size(t, None, "32")
    t.add_argument("--lr", type=float, default=None, help="learning rate (default 1e-3; noam: the peak)")
    t.add_argument("--optimizer", choices=("adam", "sgd", "noam", "adadelta"), default=None,
                   help="optimiser (default adam; adadelta with --lr 1 is Kim 2014's)")
    t.add_argument("--patience", type=count("patience"), default=None,
                   help="early stopping after N epochs without dev gain")
    t.add_argument("--clip", type=float, default=None, help="gradient clipping: max global norm")
    t.add_argument("--max-norm", type=float, default=None,
                   help="Kim 2014: rescale each class's output weight vector to at most this L2 norm (e.g. 3)")
    t.add_argument("--max-steps", type=count("max_steps"), default=None, help="stop after this many optimiser steps")
    t.add_argument("--paper-training", action="store_true", help="use the paper's optimiser settings")
    add_seed(t)
    t.add_argument("--min-freq", type=count("min_freq"), default=1, help="keep words seen at least this often")
    t.add_argument("--max-vocab", type=count("max_vocab"), default=None,
                   help="vocabulary size cap (specials included)")
    t.add_argument("--extra-vocab", type=count("extra_vocab"), default=0, metavar="N",
                   help="also add the N most frequent GloVe words missing from the training texts (they keep "
                        "their GloVe vectors, so test words unseen in training are not <unk>)")
    add_data_root(t)
    add_limit(t)
    t.add_argument("--text-column", default="text", help="text column of a CSV/JSONL/Parquet file")
    t.add_argument("--label-column", default="label", help="label column of a CSV/JSONL/Parquet file")
    t.add_argument("--arrow", action=argparse.BooleanOptionalAction, default=None,
                   help="read the data as memory-mapped Arrow tables, tokenised in --num-proc processes into a "
                        "disk cache (default: for hf:ID and files of 256 MB or more)")
    t.add_argument("--num-proc", type=count("num_proc"), default=None,
                   help="tokenising processes for --arrow (default: the usable cores, at most 8)")
    t.add_argument("--float16", action="store_true", help="store the weights as float16")
    t.add_argument("--snapshots", choices=("last", "full", "off"), default="last",
                   help="what each epoch keeps for `influence` (TracIn): last = the output layer's weights and the "
                        "learning rate (a few KB, the fast variant), full = every weight (a copy of the model per "
                        "epoch), off = nothing (default: last; textcls models, not hf: encoders)")
    t.add_argument("--freeze-word-embeddings", action=argparse.BooleanOptionalAction, default=None,
                   help="--model hf:...: keep the word-piece embeddings fixed (default: frozen)")
    add_device(t, None, "cuda when there is one, under torchrun cuda:LOCAL_RANK")
    t.add_argument("--amp", nargs="?", const="auto", default=None, choices=("off", "auto", "bf16", "fp16"),
                   help="mixed precision on CUDA: bf16 (no scaler) or fp16 (with a grad scaler); --amp alone picks "
                        "bf16 where the GPU supports it. No effect on the CPU (a warning)")
    t.add_argument("--workers", type=count("workers"), default=None,
                   help="worker processes that pad batches (default: 2 on CUDA, 0 on the CPU)")
    t.add_argument("--pin-memory", action=argparse.BooleanOptionalAction, default=None,
                   help="pinned host memory for batches (default: on with CUDA; never on the CPU)")
    t.add_argument("--json", action="store_true", help="print the summary as JSON")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    limit_flags(t)
    t.set_defaults(func=cmd_train)
