"""The short path of a BERT-like encoder (textcls/models/hf/pooled.py: the last layer for [CLS] only, texts of mixed
length packed) against the full model, in one process, text by text, who goes first alternating: integrated
gradients and gradient x input at ferret's settings (the logit, 50 steps), and comprehensiveness + sufficiency at
ferret's counts (`explain_bench.ferret_aopc`). Medians per text (the first text left out) and the largest
difference of any score between the two.

    python scripts/bench_pooled.py [--checkpoint checkpoints/minilm-sst2] [--texts 30]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", default=str(REPO / "checkpoints" / "minilm-sst2"))
    ap.add_argument("--texts", type=int, default=30, help="sst2 test texts (default 30)")
    args = ap.parse_args(argv)
    import numpy as np
    import torch
    torch.set_num_threads(1)
    from textcls.checkpoint import load_checkpoint
    from textcls.experiments.explain_bench import ferret_aopc, sst2_texts
    from textcls.interpret.methods import explain
    from textcls.interpret.sources import as_source
    p = load_checkpoint(args.checkpoint)
    m = p.model
    if not getattr(m, "pooled_last", False):
        print(f"{args.checkpoint}: no short path for this model (not a BERT-like encoder)", file=sys.stderr)
        return 2
    src, positions = as_source(p, None), m._positions
    times = {k: {True: [], False: []} for k in ("integrated gradients", "gradient x input", "AOPC")}
    diff = {k: 0.0 for k in times}
    for i, text in enumerate(sst2_texts(args.texts)):
        inst = src.instances([text])
        got = {}
        for short in ((True, False) if i % 2 else (False, True)):
            m.pooled_last, m._positions = short, positions if short else None
            t = time.perf_counter()
            ig = explain(m, inst, "integrated_gradients", output="logit", n_steps=50, max_steps=50, baseline="pad")[0]
            times["integrated gradients"][short].append(time.perf_counter() - t)
            t = time.perf_counter()
            gx = explain(m, inst, "grad_x_input", output="logit")[0]
            times["gradient x input"][short].append(time.perf_counter() - t)
            t = time.perf_counter()
            aopc = ferret_aopc(m, inst[0], ig.scores, ig.target)
            times["AOPC"][short].append(time.perf_counter() - t)
            got[short] = (ig.scores, gx.scores, np.array(aopc[:2]))
        for k, a, b in zip(times, got[True], got[False]):
            diff[k] = max(diff[k], float(np.abs(a - b).max()))
    m.pooled_last, m._positions = True, positions
    print(f"{args.checkpoint}, {args.texts} sst2 test texts, 1 thread: full model -> short path, median ms per text")
    for k, v in times.items():
        full, short = (statistics.median(v[s][1:]) * 1e3 for s in (False, True))
        print(f"  {k:22s} {full:8.1f} -> {short:8.1f} ms  ({short / full:.2f}x)  largest |difference| {diff[k]:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
