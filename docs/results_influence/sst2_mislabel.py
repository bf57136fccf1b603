"""The mislabel finder measured (docs/influence.md): flip 10 % of sst2's training labels (seeded), train Kim CNN
with the CLI on that copy, rank the training examples by TracIn self-influence (`influence CKPT --self`) and
score the ranking against the flipped set: ROC AUC, precision among the top 10 %, seconds. Both snapshot kinds
(`--snapshots last`, the default, and `full`, with which `--method exact` sums every weight's gradient), each
saved epoch alone and all epochs summed, and beside them the simplest competitor: the final model's loss on each
training example.

    .venv/bin/python docs/results_influence/sst2_mislabel.py [--work /tmp/textcls-mislabel] [--epochs 5]

Writes docs/results_influence/sst2_mislabel.json."""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from textcls.analysis.calibration import roc_auc  # noqa: E402
from textcls.data.datasets import load_data  # noqa: E402


def cli(*args: str) -> tuple[str, float]:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "textcls", *args], cwd=REPO, capture_output=True, text=True,
                       env={**os.environ, "TEXTCLS_HOME": os.environ.get("TEXTCLS_HOME", "/tmp/textcls-home")})
    if r.returncode:
        raise SystemExit(f"textcls {args[0]} failed: {r.stderr[-2000:]}")
    return r.stdout, time.perf_counter() - t0


def write_flipped(folder: Path, share: float, seed: int) -> list[int]:
    """sst2 with `share` of its training labels flipped (numpy seed `seed`); dev and test as they are."""
    bundle = load_data("sst2")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dataset.json").write_text(json.dumps({"name": "sst2_flipped", "task": "sentiment",
                                                     "labels": list(bundle.labels)}))
    train = bundle.splits["train"]
    flipped = sorted(np.random.default_rng(seed).choice(len(train), int(round(share * len(train))), replace=False))
    flip = set(int(i) for i in flipped)
    for split, rows in bundle.splits.items():
        with open(folder / f"{split}.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["text", "label"])
            for i, (t, y) in enumerate(zip(rows.texts, rows.labels)):
                w.writerow([t, bundle.labels[1 - y if split == "train" and i in flip else y]])
    return [int(i) for i in flipped]


def library_rankings(ck: Path, data: Path) -> dict[str, list[float]]:
    """Rankings from the library (same checkpoint, same training set): each saved epoch's self-influence alone, all
    saved epochs summed (past the restored best one too), and the final model's cross-entropy on each example."""
    import dataclasses

    import torch
    import torch.nn.functional as F

    from textcls.checkpoint import load_checkpoint
    from textcls.interpret import influence as inf
    from textcls.runtime.threads import batch
    p, snaps = load_checkpoint(ck), inf.read_snapshots(ck)
    train = load_data(str(data)).splits["train"]
    enc, y = inf.encode(p.tokenizer, train.texts, train.labels), torch.tensor(train.labels)
    out = {}
    with batch():
        for i, e in enumerate(snaps.epochs):
            one = dataclasses.replace(snaps, epochs=[e], lrs=[snaps.lrs[i]], states=[snaps.states[i]], final_epoch=e)
            out[f"epoch {e} alone"] = inf.fast_self_influence(inf.fast_quantities(p.model, one, enc, y)).tolist()
        every = dataclasses.replace(snaps, final_epoch=snaps.epochs[-1])
        out["all epochs summed"] = inf.fast_self_influence(inf.fast_quantities(p.model, every, enc, y)).tolist()
        logits = inf.layer_inputs(p.model, snaps.layer, enc)[1]
    out["final model's loss"] = F.cross_entropy(logits, y, reduction="none").tolist()
    return out


def proponent_spread(ck: Path, data: Path, texts: int = 200, k: int = 10) -> dict:
    """How text-specific the top-k proponents are, raw and normalised (cosine): over `texts` test sentences (a
    seeded sample), how many distinct training examples fill their lists, the mean share two lists have in common,
    and the share of proponents whose label is the text's prediction."""
    import torch

    from textcls.checkpoint import load_checkpoint
    from textcls.interpret import influence as inf
    from textcls.runtime.threads import batch
    p, snaps = load_checkpoint(ck), inf.read_snapshots(ck)
    bundle = load_data(str(data))
    train, test = bundle.splits["train"], bundle.splits["test"].sample(texts, 0)
    out = {}
    with batch():
        q = inf.fast_quantities(p.model, snaps, inf.encode(p.tokenizer, train.texts, train.labels),
                                torch.tensor(train.labels))
        enc = inf.encode(p.tokenizer, test.texts, test.labels)
        pred = inf.layer_inputs(p.model, snaps.layer, enc)[1].argmax(-1)
        tq = inf.fast_quantities(p.model, snaps, enc, pred)
        for name, normalize in (("raw", False), ("normalize", True)):
            top = inf.fast_scores(tq, q, normalize).topk(k, dim=1).indices                    # (T, k)
            sets = [set(r.tolist()) for r in top]
            pairs = [len(a & b) / k for i, a in enumerate(sets) for b in sets[i + 1:]]
            out[name] = {"distinct": len(set().union(*sets)), "slots": texts * k,
                         "mean_overlap": round(sum(pairs) / len(pairs), 4),
                         "same_label_as_prediction": round(float((torch.tensor(train.labels)[top] ==
                                                                  pred[:, None]).float().mean()), 4)}
    return out


def score(flipped: list[int], n: int, ranking: list[float]) -> dict:
    y = np.zeros(n, dtype=int)
    y[flipped] = 1
    order = np.argsort(-np.asarray(ranking), kind="stable")
    k = len(flipped)
    return {"roc_auc": round(roc_auc(y, ranking), 4), "precision_at_10pc": round(float(y[order[:k]].mean()), 4),
            "found_in_top_20pc": round(float(y[order[:2 * k]].sum() / k), 4)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/textcls-mislabel")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--share", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    work = Path(args.work)
    data = work / "sst2_flipped"
    flipped = write_flipped(data, args.share, args.seed)
    n = len(load_data(str(data)).splits["train"])
    out = {"data": "sst2 (bundled; Kim 2014 split, 6,920 training sentences)", "flipped": len(flipped),
           "flip_seed": args.seed, "model": "kim_cnn (paper configuration, 50-d GloVe)", "runs": {},
           "machine": "2 CPU cores shared with other work"}
    for snaps in ("last", "full"):
        ck = work / f"kim_cnn-{snaps}"
        train_cmd = ["train", "--model", "kim_cnn", "--data", str(data), "--epochs", str(args.epochs),
                     "--batch-size", "50", "--out", str(ck), "--overwrite", "--quiet", "--snapshots", snaps]
        summary, train_s = cli(*train_cmd, "--json")
        _, one_s = cli("influence", str(ck), "a gripping , funny and moving film", "--json")
        cfg = json.loads((ck / "config.json").read_text())
        run = out["runs"][snaps] = {
            "train_command": "python -m textcls " + " ".join(train_cmd).replace(str(work), "$WORK"),
            "test_accuracy": round(cfg["metrics"]["test_accuracy"], 4), "best_epoch": cfg["training"]["best_epoch"],
            "snapshot_bytes": (ck / "tracin.safetensors").stat().st_size, "train_seconds": round(train_s, 1),
            "one_text_seconds": round(one_s, 1)}
        for method in ("fast", "exact") if snaps == "full" else ("fast",):
            command = ["influence", str(ck), "--self", "--top", "0", "--method", method, "--json"]
            rows, self_s = cli(*command)
            ranking = [0.0] * n
            for r in json.loads(rows):
                ranking[r["index"]] = r["self_influence"]
            run[f"self_influence_{method}"] = {
                "command": "python -m textcls " + " ".join(command).replace(str(work), "$WORK"),
                "seconds": round(self_s, 1), **score(flipped, n, ranking)}
        variants = library_rankings(ck, data)
        run["variants"] = {k: score(flipped, n, v)["roc_auc"] for k, v in variants.items()}
        if snaps == "last":
            out["final_loss"] = score(flipped, n, variants["final model's loss"])
            out["proponent_spread"] = proponent_spread(ck, data)
        print(json.dumps(run), flush=True)
    dest = REPO / "docs" / "results_influence" / "sst2_mislabel.json"
    dest.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
