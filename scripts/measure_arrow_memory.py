"""Peak memory of reading and tokenising a big local CSV: the in-memory path (data.load_data + encode_split)
against the memory-mapped Arrow path (arrow_data: load_arrow + streaming vocabulary + map(num_proc) + one pass
over the batches). Each path runs in a fresh process; prints peak RSS (this process, and its tokenising
children), the peak of anonymous memory (RSS without the memory-mapped files' pages) and seconds.

    python scripts/measure_arrow_memory.py [--rows 200000] [--words 80] [--num-proc 2] [--paths arrow,memory]
"""
from __future__ import annotations

import argparse
import csv
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORDS = ("the a film movie plot actor good bad great awful dull brilliant boring superb story scene music "
         "slow funny sad long short script cast director ending twist , . !").split()


def make_csv(path: Path, rows: int, words: int) -> None:
    rng = random.Random(0)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        for i in range(rows):
            n = rng.randint(words // 2, words * 3 // 2)
            w.writerow([" ".join(rng.choice(WORDS) + (str(rng.randint(0, 5000)) if rng.random() < 0.1 else "")
                                 for _ in range(n)), str(rng.randint(1, 5))])


class AnonPeak:
    """The peak of this process's anonymous memory (RssAnon: heap, not the memory-mapped Arrow files, whose
    pages count in RSS while read but belong to the page cache), sampled every 20 ms."""

    def __init__(self):
        import threading
        self.peak, self.stop = 0, False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    @staticmethod
    def now() -> int:
        try:
            for line in open("/proc/self/status"):
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0

    def run(self):
        while not self.stop:
            self.peak = max(self.peak, self.now())
            time.sleep(0.02)


def run_path(kind: str, path: Path, num_proc: int, cache: str) -> dict:
    sys.path.insert(0, str(REPO))
    anon = AnonPeak()
    t0 = time.perf_counter()
    from textcls.data.text import TokenizerConfig
    cfg = TokenizerConfig(max_len=400)
    if kind == "memory":
        from textcls.data.batching import encode_split, make_batches
        from textcls.data.datasets import load_data
        from textcls.data.text import Tokenizer
        b = load_data(str(path))
        tok = Tokenizer.build(b.splits["train"].texts, cfg)
        enc = encode_split(tok, b.splits["train"])
        n = len(enc)
    else:
        from textcls.data.arrow import build_tokenizer, encode_arrow, load_arrow
        from textcls.data.batching import make_batches
        b = load_arrow(str(path), cache_dir=cache)
        tok = build_tokenizer(b.splits["train"], cfg)
        enc = encode_arrow(tok, b.splits["train"], num_proc=num_proc, cache_dir=cache)
        n = len(enc)
    import torch
    for index in make_batches(enc.lengths, 256, torch.Generator().manual_seed(0))[:200]:
        enc.batch(index)
    anon.stop = True
    return {"path": kind, "rows_train": n, "peak_anon_mb": round(max(anon.peak, anon.now()) / 1024, 1), "vocab": len(tok.vocab), "seconds": round(time.perf_counter() - t0, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "children_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--words", type=int, default=80)
    ap.add_argument("--num-proc", type=int, default=2)
    ap.add_argument("--paths", default="arrow,arrow,memory",
                    help="which paths to run, in order (default arrow,arrow,memory: the second arrow run reads the "
                         "caches back)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--file", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--cache", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(run_path(a.child, Path(a.file), a.num_proc, a.cache)))
        return 0
    with tempfile.TemporaryDirectory(prefix="textcls-mem-") as tmp:
        path = Path(tmp) / "big.csv"
        make_csv(path, a.rows, a.words)
        print(f"{a.rows:,} rows, {path.stat().st_size / 2 ** 20:.0f} MB CSV", flush=True)
        for kind in a.paths.split(","):
            r = subprocess.run([sys.executable, __file__, "--child", kind, "--file", str(path), "--cache",
                                str(Path(tmp) / "cache"), "--num-proc", str(a.num_proc)],
                               capture_output=True, text=True)
            print(r.stdout.strip() or r.stderr[-2000:], flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
