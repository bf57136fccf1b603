"""Re-create the shipped relation-classification checkpoints (SemEval-2010 Task 8) with one command:

    .venv/bin/python scripts/make_relation_checkpoints.py [--models act,transformer] [--seed 0]

checkpoints/act-semeval2010 and checkpoints/transformer-semeval2010: each model at its "relation" preset (the
ACT paper's relation-extraction settings: one layer, 6 heads, 40 filters, kernel 3, two 30-d relative-position
embeddings in the global attention; the Transformer: the ACT baseline with one layer and the same positions),
50-d GloVe, on the bundled semeval2010 (train on train, early-stopped on dev, tested on test). To keep both under
7 MB together the vocabulary keeps words seen at least twice (MIN_FREQ) and the weights are stored in float16
(kept only when the reloaded float16 checkpoint's test macro-F1 is within 0.5 points of float32). The headline
metric is macro-F1 over the 18 directed relations without Other. About 10 minutes per model on one CPU thread.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from textcls.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from textcls.data.datasets import load_data  # noqa: E402
from textcls.analysis.metrics import evaluate  # noqa: E402
from textcls.train.pipeline import train_from_spec  # noqa: E402

DATA = "semeval2010"
MIN_FREQ = 2
TRAIN = dict(optimizer="adam", batch_size=50, lr=1e-3, patience=3, clip_norm=5.0)
RECIPES = {"act": dict(lr=1e-3), "transformer": dict(lr=5e-4)}
EPOCHS = 15


def folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(REPO / "checkpoints"))
    ap.add_argument("--models", default=",".join(RECIPES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=EPOCHS)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    bundle = load_data(DATA)
    out_root = Path(args.out)
    for model in args.models.split(","):
        target = out_root / f"{model}-{DATA}"
        res = train_from_spec(bundle, model, epochs=args.epochs, out=target, min_freq=MIN_FREQ, seed=args.seed,
                              train_overrides={**TRAIN, **RECIPES[model]}, data_spec=DATA)
        f32 = res.metrics["test"]["macro_f1"]
        with tempfile.TemporaryDirectory() as tmp:
            half = Path(tmp) / "half"
            meta = json.loads((target / "config.json").read_text())
            keep = {k: meta[k] for k in ("data", "metrics", "training", "preset", "variant", "overrides",
                                        "embeddings", "vocab", "library_version") if k in meta}
            save_checkpoint(half, res.model, res.tokenizer, res.labels, meta=keep, history=res.history,
                            float16=True)
            pred = load_checkpoint(half)
            f16 = evaluate(pred, bundle.splits["test"], label_names=bundle.labels, ignore_label="Other")["macro_f1"]
            use16 = abs(f16 - f32) <= 0.005
            keep["storage"] = {"float16": use16, "test_macro_f1_float16": f16, "test_macro_f1_float32": f32}
            save_checkpoint(target, res.model, res.tokenizer, res.labels, meta=keep, history=res.history,
                            float16=use16)
        print(json.dumps({"checkpoint": str(target), "test_macro_f1": round(f32, 4),
                          "test_macro_f1_float16": round(f16, 4), "float16": abs(f16 - f32) <= 0.005,
                          "test_accuracy": round(res.metrics["test"]["accuracy"], 4),
                          "epochs": len(res.history.epochs), "best_epoch": res.history.best_epoch,
                          "seconds": round(res.history.elapsed, 1), "mb": round(folder_mb(target), 2)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
