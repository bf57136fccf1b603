"""The app's model worker on a GPU, once (the `device` tool's machine; no Streamlit needed): `python3
scripts/gpu_worker_check.py`. The worker (textcls.serve) is started as the app starts it and asked what the pages
ask: where predictions run, the shipped sst2 checkpoints' predictions (on the GPU) and maps (on the CPU), the same
checkpoint asked by eight sessions at once (one batch), Evaluate's predictions ahead (`prefetch_start` /
`prefetch_next`), the pretrained encoder, and a worker killed mid-request. Each answer is compared with the same
checkpoint loaded on the CPU in this process. Prints one line per check; exit 1 if one fails."""
from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TEXTS = ["a warm , funny and moving film .", "dull , tedious and far too long .", "not bad at all",
         "the plot is thin but the actors are superb"]
failed: list[str] = []


def stamp(path: Path) -> float:
    """What the pages pass as a checkpoint's stamp (pages.common.cache.stamp, which needs Streamlit): a digest of
    every file the checkpoint reads (textcls.checkpoint.files.checkpoint_stamp)."""
    from textcls.checkpoint.stamp import checkpoint_stamp
    return checkpoint_stamp(path)


def check(name: str, ok: bool, detail: str) -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)
    if not ok:
        failed.append(name)


def main() -> int:
    import numpy as np
    import torch

    import textcls
    from textcls.serve import client, worker
    print("torch", torch.__version__, "cuda", torch.cuda.is_available(),
          torch.cuda.get_device_name(0) if torch.cuda.is_available() else "", flush=True)
    w = client.ModelWorker().start()
    try:
        t = time.perf_counter()
        where = w.call_env(worker.device_description)
        check("device", "cuda" in where.lower() or "gpu" in where.lower() or not torch.cuda.is_available(),
              f"{where!r} (first answer {time.perf_counter() - t:.2f} s, the worker's start and torch)")
        names = ["act-sst2", "agcnn-sst2", "hcan-sst2", "kim_cnn-sst2", "lama-sst2", "transformer-sst2"]
        for name in names:
            path = str(ROOT / "checkpoints" / name)
            saved = stamp(Path(path))
            t = time.perf_counter()
            got = w.predict(path, saved, TEXTS)
            first = time.perf_counter() - t
            t = time.perf_counter()
            got = w.predict(path, saved, TEXTS)
            again = time.perf_counter() - t
            maps = w.predict(path, saved, TEXTS[:1], maps=True)
            ref = textcls.load_checkpoint(path, device="cpu").predict(TEXTS)
            diff = max(abs(a.probabilities[k] - b.probabilities[k]) for a, b in zip(got, ref) for k in a.probabilities)
            same = [a.label for a in got] == [b.label for b in ref]
            check(f"predict {name}", same and diff < 2e-2 and bool(maps[0].maps),
                  f"labels {'=' if same else '!='} CPU, max |p - p_cpu| {diff:.1e}, first {first:.2f} s, "
                  f"again {again * 1000:.0f} ms, {len(maps[0].maps)} maps on the CPU")
        path = str(ROOT / "checkpoints" / "act-sst2")
        saved = stamp(Path(path))
        out: dict = {}

        def session(k: int) -> None:
            out[k] = w.predict(path, saved, [f"{TEXTS[k % 4]} take {k}"])

        threads = [threading.Thread(target=session, args=(k,)) for k in range(8)]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        check("eight sessions at once", len(out) == 8 and all(len(v) == 1 for v in out.values()),
              f"{len(out)} answers in {time.perf_counter() - t:.3f} s")
        from textcls.data.datasets import load_bundled
        bundle = load_bundled(ROOT / "textcls" / "data" / "bundled" / "sst2")
        texts = list(bundle.splits["test"].texts)
        t = time.perf_counter()
        w.call_env(worker.prefetch_start, "k", path, saved, texts, 64)
        n = 0
        while (item := w.call(worker.prefetch_next, "k")) is not None:
            n += len(item[1])
        secs = time.perf_counter() - t
        check("Evaluate ahead", n == len(texts), f"{n} of {len(texts)} sst2 test texts in {secs:.2f} s, "
              f"batches of 64 through the worker")
        enc = ROOT / "checkpoints" / "minilm-sst2"
        if enc.is_dir():
            t = time.perf_counter()
            try:
                got = w.predict(str(enc), stamp(enc), TEXTS)
                check("pretrained encoder", [p.label for p in got][:2] == ["positive", "negative"],
                      f"{[p.label for p in got]} in {time.perf_counter() - t:.2f} s (transformers' import and load)")
            except Exception as e:  # noqa: BLE001 - reported, the other checks go on
                check("pretrained encoder", False, f"{type(e).__name__}: {str(e)[:300]}")
        pid = w.pid()
        killer = threading.Timer(0.05, lambda: os.kill(pid, 9))
        killer.start()
        t = time.perf_counter()
        try:
            got = w.predict(path, saved, TEXTS * 200)
            check("killed mid-request", len(got) == 800 and w.pid() != pid,
                  f"answered after a restart in {time.perf_counter() - t:.2f} s (pid {pid} -> {w.pid()})")
        except Exception as e:  # noqa: BLE001
            check("killed mid-request", False, f"{type(e).__name__}: {e}")
    finally:
        w.stop()
    print("failed:", failed or "none", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
