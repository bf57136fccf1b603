"""Re-create the shipped checkpoints in checkpoints/ from the bundled data, with one command:

    .venv/bin/python scripts/make_checkpoints.py [--data-root ../shared/data] [--only sst2] [--models act,lama]
        [--overrides JSON (model-config fields)] [--tuning JSON (DATA_TUNING fields)]

(lama-trec ships in its 1 MB size class: `--only trec --models lama --tuning '{"extra_vocab": 0, "epochs": 10,
"patience": 3}'`.)

Every model is trained with 50-d GloVe (non-static) on sst2 (sentiment) and trec (question type), and the two
document models (HCAN, CAN) also on imdb (full movie reviews, several sentences each: `--only imdb`, needs the
larger collection: `--data-root ../shared/data`), at a laptop size (RECIPES below: the paper architecture, narrower where the paper's width would make a CPU
dashboard slow), early-stopped on dev, then stored in float16 when that leaves test accuracy unchanged
(checked by reloading the float16 checkpoint and re-evaluating). Each checkpoint's config.json records its
test accuracy. The whole run takes roughly 30-60 minutes on 2 CPU cores.
The relation-classification checkpoints (act-semeval2010, transformer-semeval2010) have their own recipe:
scripts/make_relation_checkpoints.py.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from textcls.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from textcls.data.datasets import load_data  # noqa: E402
from textcls.analysis.metrics import evaluate  # noqa: E402
from textcls.train.pipeline import train_from_spec  # noqa: E402

DATASETS = ("sst2", "trec")           # the default; "imdb" on request (--only imdb)
SIX = ("kim_cnn", "agcnn", "act", "transformer", "hcan", "lama")
MODELS_OF = {"imdb": ("hcan", "can")}  # the models trained on each data set (default: the six)

# Per data set, on top of every recipe: what the tuning (docs/tuning.md, docs/results.md) found better on dev.
# TREC: the 30k most frequent GloVe words join the vocabulary (test words unseen in training keep their GloVe
# vectors instead of all being <unk>) and up to 20 epochs with patience 5 (dev +2.4 for Kim CNN).
# SST-2: training on every labelled phrase (sst2_phrases: same dev and test), as the papers do (dev +2.3 for
# Kim CNN, +3.7 for AGCNN); 10x more, shorter texts, so 5 epochs; the 30k GloVe words as for TREC.
DATA_TUNING: dict[str, dict] = {
    "trec": dict(extra_vocab=30_000, epochs=20, patience=5),
    "sst2": dict(train_data="sst2_phrases", extra_vocab=30_000, epochs=5, patience=2),
    # IMDB: reviews of 10-30 sentences, what HCAN was designed for (its Fig. 4 is a Yelp review). A seeded
    # sample of 8,000 training reviews (a CPU epoch of a few minutes), 20 sentences x 40 words kept, words seen
    # at least 3 times (the vocabulary, and the checkpoint, stay small); dev and test are the full splits.
    # The target attention's scale (issue 31), fixed per model: at 4 the word attention of hcan-imdb collapsed onto
    # one word per sentence (median normalised entropy 0.000, sentences 0.212) at 86.6 % test accuracy; at 2 it was
    # 0.651 / 0.806 at 87.1 %, at 1.75 0.897 / 0.907 at 87.7 % (shipped: the entropy targets at the accuracy of
    # the learned scale, 88.1 %, within a point), at 1.5 0.931 / 0.927 at 87.5 %. can-imdb: 2 (0.885, 87.2 %).
    # model_overrides: model-config fields per model trained on this data set.
    "imdb": dict(train_rows=8_000, tokenizer=dict(max_sentences=20, max_words=40), min_freq=3, epochs=4,
                 patience=2, batch_size=32, model_overrides={"hcan": dict(target_scale_value=1.75),
                                                             "can": dict(target_scale_value=2.0)}),
}

FIXED_TARGET = dict(target_scale="fixed", target_scale_value=4.0)

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
    # HCAN / CAN: the target attention's scale fixed at 4 (not learned): with the reference code's learned scale
    # the target attention trains towards uniform (issue 31; textcls/models/hcan.py). hcan-trec: word attention
    # median normalised entropy 0.70 at 91.8 % (learned: 0.99 at 92.0 %) - peaked, but its comprehensiveness AOPC
    # is no better than random (0.134 [0.114, 0.153] vs 0.129 [0.109, 0.149]). imdb: DATA_TUNING.
    "hcan": (None, dict(d_model=96, n_heads=4, dropout=0.2, **FIXED_TARGET),
             dict(batch_size=50, lr=1e-3, patience=3, clip_norm=5.0), 10),
    "lama": (None, {}, dict(batch_size=50, lr=1e-3, patience=3), 10),
    "can": (None, dict(d_model=96, n_heads=4, dropout=0.2, **FIXED_TARGET),
            dict(batch_size=50, lr=1e-3, patience=3, clip_norm=5.0), 10),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-root", default=None, help="folder of the bundled data sets (default: TEXTCLS_DATA)")
    ap.add_argument("--out", default=str(REPO / "checkpoints"))
    ap.add_argument("--only", default=",".join(DATASETS), help="comma-separated data sets")
    ap.add_argument("--models", default=",".join(RECIPES), help="comma-separated models")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--overrides", default="{}", help="JSON model-config fields on top of every recipe's, e.g. "
                    "'{\"target_scale\": \"fixed\", \"target_scale_value\": 4}'")
    ap.add_argument("--keep-better", action="store_true",
                    help="replace an existing checkpoint only when the new one is at least as good on DEV")
    ap.add_argument("--tuning", default="{}", help="JSON DATA_TUNING fields for this run, e.g. "
                    "'{\"extra_vocab\": 0, \"epochs\": 10, \"patience\": 3}' (lama-trec's size class)")
    args = ap.parse_args(argv)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    out_root = Path(args.out)
    out_root.mkdir(parents=True, exist_ok=True)
    summary = []
    for data_name in args.only.split(","):
        tuning_all = {**DATA_TUNING.get(data_name, {}), **json.loads(args.tuning)}
        train_data = tuning_all.pop("train_data", data_name)
        train_rows = tuning_all.pop("train_rows", None)
        tok = tuning_all.pop("tokenizer", None)
        min_freq = tuning_all.pop("min_freq", 1)
        data_overrides = tuning_all.pop("model_overrides", {})
        bundle = load_data(train_data, root=args.data_root, seed=args.seed)
        if train_rows:
            bundle.splits["train"] = bundle.splits["train"].sample(train_rows, seed=args.seed)
        for model in args.models.split(","):
            if model not in MODELS_OF.get(data_name, SIX):
                continue
            preset, overrides, train_over, epochs = RECIPES[model]
            overrides = {**overrides, **data_overrides.get(model, {}), **json.loads(args.overrides)}
            tuning = dict(tuning_all)
            extra = tuning.pop("extra_vocab", 0)
            epochs = tuning.pop("epochs", epochs)
            train_over = {**train_over, **tuning}
            t0 = time.time()
            res = train_from_spec(bundle, model, preset=preset, overrides=overrides, embeddings="glove",
                                  epochs=epochs, out=None, train_overrides=train_over, seed=args.seed,
                                  extra_vocab=extra, min_freq=min_freq, tokenizer_overrides=tok, data_spec=data_name)
            acc32 = res.metrics["test"]["accuracy"]
            final = out_root / f"{model}-{data_name}"
            old_dev = _dev_accuracy(final) if args.keep_better else None
            new_dev = res.metrics.get("dev", {}).get("accuracy")
            if old_dev is not None and new_dev is not None and new_dev < old_dev:
                print(json.dumps(dict(checkpoint=final.name, kept="existing", dev_existing=round(old_dev, 4),
                                      dev_new=round(new_dev, 4), test_new=round(acc32, 4),
                                      seconds=round(time.time() - t0, 1))), flush=True)
                continue
            meta = _meta(res, data_name, preset, overrides, train_over)
            meta["data"]["trained_on"] = train_data
            meta["data"]["train_rows"] = len(bundle.splits["train"])
            meta["vocab"] = {"size": len(res.tokenizer.vocab), "extra_vocab": extra, "min_freq": min_freq}
            with tempfile.TemporaryDirectory() as tmp:
                half = save_checkpoint(Path(tmp) / "half", res.model, res.tokenizer, res.labels, meta=meta,
                                       snapshots=res.snapshots,
                                       history=res.history, float16=True)
                acc16 = evaluate(load_checkpoint(half), bundle.splits["test"])["accuracy"]
            use16 = abs(acc16 - acc32) < 1e-9
            meta["storage"] = {"float16": use16, "test_accuracy_float16": acc16, "test_accuracy_float32": acc32}
            save_checkpoint(final, res.model, res.tokenizer, res.labels, meta=meta, snapshots=res.snapshots,
                            history=res.history,
                            float16=use16)
            size = sum(f.stat().st_size for f in final.iterdir()) / 1e6
            row = dict(checkpoint=final.name, dev_accuracy=new_dev, dev_existing=old_dev,
                       test_accuracy=round(acc32, 4), float16=use16, mb=round(size, 2),
                       seconds=round(time.time() - t0, 1), epochs_run=len(res.history.epochs))
            summary.append(row)
            print(json.dumps(row), flush=True)
    total = sum(f.stat().st_size for f in out_root.rglob("*") if f.is_file()) / 1e6
    print(f"checkpoints/ total: {total:.1f} MB")
    return 0


def _dev_accuracy(path: Path) -> float | None:
    """Dev accuracy recorded in an existing checkpoint's config.json (None when there is none)."""
    try:
        return json.loads((path / "config.json").read_text())["metrics"]["dev_accuracy"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


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
