"""`python -m textcls train --model hf:PATH_OR_ID --data DATA`: fine-tune a Hugging Face encoder (textcls.train.hf)
through `train.pipeline.train_from_spec`, with the CLI's progress bar and one line per error; `cli.train` hands
hf: models here after claiming --out."""
from __future__ import annotations


def train_hf_cli(args, progress_cls, usage_error) -> int:
    from textcls.checkpoint import CheckpointError
    from textcls.data.datasets import check_trainable, load_data
    from textcls.train.pipeline import train_from_spec

    over = {k: v for k, v in dict(batch_size=args.batch_size, lr=args.lr, max_len=args.max_len,
                                  max_steps=args.max_steps,
                                  freeze_word_embeddings=args.freeze_word_embeddings).items() if v is not None}
    try:
        from textcls.train.hf import settings_problems
        problems = settings_problems(args.epochs, over)   # --lr, --max-len, --batch-size too
        if problems:
            raise ValueError("--" + problems[0])
        if args.limit is not None and args.limit < 1:
            raise ValueError("--limit must be >= 1")
        bundle = load_data(args.data, root=args.data_root, limit=args.limit, seed=args.seed,
                           text_column=args.text_column, label_column=args.label_column)
        check_trainable(bundle)
        if args.out is None:
            from textcls.runtime.paths import new_run_dir
            args.out = str(new_run_dir(args.model.replace(":", "-").replace("/", "-"), args.data))
    except (KeyError, TypeError, ValueError, FileNotFoundError) as e:
        raise usage_error(str(e).splitlines()[0] if str(e) else type(e).__name__) from None
    progress = progress_cls(f"{args.model} on {bundle.name}", enabled=not args.quiet)
    try:
        result = train_from_spec(bundle, args.model, epochs=args.epochs, out=args.out, callbacks=[progress],
                                 seed=args.seed, train_overrides=over)
    except CheckpointError as e:
        raise usage_error(str(e)) from None
    finally:
        progress.close()
    from textcls.cli.common import report_result
    return report_result(args, result)
