"""Speed of the Explore page's data-set tools, and the flip rates of every counterfactual generator.

    python scripts/bench_explore.py [--models act,lama] [--limit 500] [--json OUT] [--skip-flips]

1. Projector: representations of the full sst2 test split (1,821 texts) for two shipped checkpoints plus their PCA
   projection, timed end to end from loaded models (target: under 10 s on a 2-core CPU).
2. Counterfactuals: every generator over the first `--limit` sst2 test texts for each of the six shipped sst2
   checkpoints (target: under 30 s per model per generator, except HotFlip and ablation flip, reported).
Prints markdown tables (flip rate, mean change of p(original label), seconds); the machine's load average is
printed with them, since timings on a shared machine vary.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from textcls.analysis import counterfactuals as cf  # noqa: E402
from textcls.analysis import representations as rp  # noqa: E402
from textcls.checkpoint import load_checkpoint  # noqa: E402
from textcls.data.datasets import load_data  # noqa: E402

RULES = "good -> bad, great -> awful, best -> worst, funny -> boring"
MODELS = ("act", "agcnn", "hcan", "kim_cnn", "lama", "transformer")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="act,lama", help="two checkpoints for the projector (MODEL-sst2)")
    ap.add_argument("--limit", type=int, default=500, help="texts per generator (default 500)")
    ap.add_argument("--json", default=None, metavar="OUT", help="also write the results as JSON")
    ap.add_argument("--skip-flips", action="store_true", help="only the projector")
    args = ap.parse_args(argv)
    test = load_data("sst2").splits["test"]
    out = {"load_average": os.getloadavg(), "projector": [], "flips": []}
    print(f"load average at start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")

    preds = {m: load_checkpoint(REPO / "checkpoints" / f"{m}-sst2") for m in MODELS}
    rp.project(rp.representations(preds["act"], test.texts[:50]), "pca")          # warm-up (first call imports)
    t0 = time.perf_counter()
    for m in args.models.split(","):
        t = time.perf_counter()
        X = rp.representations(preds[m], test.texts)
        t_rep = time.perf_counter() - t
        t = time.perf_counter()
        rp.project(X, "pca")
        out["projector"].append({"model": m, "texts": len(test), "features": X.shape[1], "representations_s": t_rep,
                                 "pca_s": time.perf_counter() - t})
    total = time.perf_counter() - t0
    out["projector_total_s"] = total
    print("\n| checkpoint | texts | features | representations (s) | PCA (s) |\n|---|---:|---:|---:|---:|")
    for r in out["projector"]:
        print(f"| {r['model']}-sst2 | {r['texts']:,} | {r['features']} | {r['representations_s']:.2f} | "
              f"{r['pca_s']:.2f} |")
    print(f"\nprojector, {len(out['projector'])} models, full sst2 test: {total:.2f} s")

    if not args.skip_flips:
        texts = test.texts[:args.limit]
        print("\n| generator | " + " | ".join(f"{m}-sst2" for m in MODELS) + " |")
        print("|---|" + "---:|" * len(MODELS))
        for g in cf.GENERATORS:
            shared = None if cf.GENERATORS[g].needs_model else cf.generate(g, texts, rules=RULES)
            cells = []
            for m in MODELS:
                r = cf.run_generator(preds[m], texts, g, checkpoint=f"{m}-sst2", rules=RULES, edits=shared)
                out["flips"].append(r.summary())
                cells.append(f"{100 * r.flip_rate:.1f} % ({r.mean_prob_change:+.2f}; {r.n}; {r.seconds:.1f} s)")
            print(f"| {g} | " + " | ".join(cells) + " |", flush=True)
        print("\ncell: flip rate (mean change of p(original label); texts edited; seconds)")
    print(f"load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
