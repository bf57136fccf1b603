"""Seconds per sentence of each context-mixing method on one checkpoint (the target: < 300 ms per method for one
sentence on minilm-sst2, idle). Median of --repeat runs after one warm-up.

    python scripts/bench_context_mixing.py [checkpoints/minilm-sst2] [--repeat 5] [--text "..."]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
TEXT = "the acting is superb , but the plot drags and the ending feels like a cheap trick ."


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint", nargs="?", default=str(REPO / "checkpoints" / "minilm-sst2"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--text", default=TEXT)
    args = ap.parse_args(argv)
    import textcls
    from textcls.interpret import methods as M
    from textcls.interpret.sources import as_source
    p = textcls.load_checkpoint(args.checkpoint)
    inst = as_source(p).instances([args.text])
    print(f"{Path(args.checkpoint).name}, {inst[0].n} words: {args.text}")
    for m in [m for m in M.methods_for(p.model) if M.REGISTRY[m].kind == "context mixing"]:
        M.explain(p.model, inst, m)                     # as the app and the CLI run it (thread policy included)
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            M.explain(p.model, inst, m)
            times.append(time.perf_counter() - t0)
        print(f"{m:<14} {1000 * statistics.median(times):8.1f} ms  (median of {args.repeat})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
