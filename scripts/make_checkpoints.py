"""Re-create the shipped checkpoints in checkpoints/ from the bundled data, with one command:

    .venv/bin/python scripts/make_checkpoints.py [--data-root ../shared/data] [--only sst2] [--models act,lama]

Every model is trained with 50-d GloVe (non-static) on sst2 (sentiment) and trec (question type), at a
laptop size (RECIPES below: the paper architecture, narrower where the paper's width would make a CPU
dashboard slow), early-stopped on dev, then stored in float16 when that leaves test accuracy unchanged
(checked by reloading the float16 checkpoint and re-evaluating). Each checkpoint's config.json records its
test accuracy. The whole run takes roughly 30-60 minutes on 2 CPU cores.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from textcls.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from textcls.data import load_data  # noqa: E402
from textcls.metrics import evaluate  # noqa: E402
from textcls.training import train_from_spec  # noqa: E402

DATASETS = ("sst2", "trec")

# model -> (preset, config overrides, training overrides, epochs)
RECIPES: dict[str, tuple[str | None, dict, dict, int]] = {
    "kim_cnn": (None, {}, dict(batch_size=50, lr=1e-3, patience=3), 10),
    "agcnn": (None, {}, dict(batch_size=50, lr=1e-3, patience=3), 10),
    "act": (None, dict(d_model=120, n_heads=4, n_filters=60, n_layers=2, d_attn=100, d_pos=30,
                       max_positions=200, dropout=0.3),
            dict(batch_size=50, lr=1e-3, patience=3, clip_norm=5.0), 10),
    # the ACT paper's baseline family (pooling = ACT's global attention), so ACT-T4 compares like with like
    "transformer": ("act_baseline", dict(d_model=120, n_heads=4, d_ff=240, n_layers=2, d_attn=100, d_pos=30,
                                          max_positions=200, dropout=0.3),
                    dict(batch_size=50, lr=5e-4, patience=3, clip_norm=5.0), 10),
    "hcan": (None, dict(attention_dim=96, heads=4, dropout=0.2),
             dict(batch_size=50, lr=1e-3, patience=3, clip_norm=5.0), 10),
    "lama": (None, {}, dict(batch_size=50, lr=1e-3, patience=3), 10),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-root", default=None, help="folder of the bundled data sets (default: TEXTCLS_DATA)")
    ap.add_argument("--out", default=str(REPO / "checkpoints"))
    ap.add_argument("--only", default=",".join(DATASETS), help="comma-separated data sets")
    ap.add_argument("--models", default=",".join(RECIPES), help="comma-separated models")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    out_root = Path(args.out)
    out_root.mkdir(parents=True, exist_ok=True)
    summary = []
    for data_name in args.only.split(","):
        bundle = load_data(data_name, root=args.data_root, seed=args.seed)
        for model in args.models.split(","):
            preset, overrides, train_over, epochs = RECIPES[model]
            t0 = time.time()
            res = train_from_spec(bundle, model, preset=preset, overrides=overrides, embeddings="glove",
                                  epochs=epochs, out=None, train_overrides=train_over, seed=args.seed)
            acc32 = res.metrics["test"]["accuracy"]
            final = out_root / f"{model}-{data_name}"
            meta = _meta(res, data_name, preset, overrides, train_over)
            with tempfile.TemporaryDirectory() as tmp:
                half = save_checkpoint(Path(tmp) / "half", res.model, res.tokenizer, res.labels, meta=meta,
                                       history=res.history, float16=True)
                acc16 = evaluate(load_checkpoint(half), bundle.splits["test"])["accuracy"]
            use16 = abs(acc16 - acc32) < 1e-9
            meta["storage"] = {"float16": use16, "test_accuracy_float16": acc16, "test_accuracy_float32": acc32}
            save_checkpoint(final, res.model, res.tokenizer, res.labels, meta=meta, history=res.history,
                            float16=use16)
            size = sum(f.stat().st_size for f in final.iterdir()) / 1e6
            row = dict(checkpoint=final.name, test_accuracy=round(acc32, 4), float16=use16, mb=round(size, 2),
                       seconds=round(time.time() - t0, 1), epochs_run=len(res.history.epochs))
            summary.append(row)
            print(json.dumps(row), flush=True)
    total = sum(f.stat().st_size for f in out_root.rglob("*") if f.is_file()) / 1e6
    print(f"checkpoints/ total: {total:.1f} MB")
    return 0


def _meta(res, data_name, preset, overrides, train_over) -> dict:
    dev, test = res.metrics.get("dev", {}), res.metrics["test"]
    return {
        "data": {"name": data_name, "spec": data_name},
        "metrics": {"dev_accuracy": dev.get("accuracy"), "dev_macro_f1": dev.get("macro_f1"),
                    "test_accuracy": test["accuracy"], "test_macro_f1": test["macro_f1"], "dev": dev, "test": test},
        "training": {**train_over, "stopped_reason": res.history.stopped_reason, "best_epoch": res.history.best_epoch,
                     "seconds": res.history.elapsed},
        "preset": preset, "overrides": overrides,
        "embeddings": {"source": "glove", "coverage": res.embedding_coverage},
        "recipe": "scripts/make_checkpoints.py",
    }


if __name__ == "__main__":
    raise SystemExit(main())
