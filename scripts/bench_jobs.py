"""Two sessions at once in the model worker: one session's long explanation (integrated gradients, 200 steps and
up, on the pretrained encoder, a 78-token text) computes as a job while another asks, again and again, for one
text's maps of the six small models. Prints how long those maps take alone and beside the job.

    python scripts/bench_jobs.py

A job runs in a thread of the worker (textcls.serve.worker.start_job); computed on its request loop instead, the
maps would wait for the whole job (docs/performance.md)."""
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from textcls.serve.client import ModelWorker  # noqa: E402

SMALL = [str(ROOT / "checkpoints" / f"{m}-sst2") for m in ("act", "agcnn", "hcan", "kim_cnn", "lama", "transformer")]
ENCODER = str(ROOT / "checkpoints" / "minilm-sst2")
LONG_TEXT = " ".join(["the acting is superb , but the plot is not very good ."] * 6)


def maps_round(w: ModelWorker, k: int) -> float:
    t = time.perf_counter()
    for p in SMALL:
        w.predict(p, 1.0, [f"a fine , warm film number {k}"], maps=True)
    return time.perf_counter() - t


def main() -> None:
    w = ModelWorker(timeout=300)
    try:
        for p in SMALL:                                    # loaded ahead: only the answers are timed
            w.predict(p, 1.0, ["warm"], maps=True)
        w.run_job("facts", ENCODER, 1.0)
        alone = [maps_round(w, k) for k in range(8)]
        done, job_s = threading.Event(), {}

        def job() -> None:
            t = time.perf_counter()
            w.run_job("explanation", ENCODER, 1.0, LONG_TEXT, "integrated_gradients", "pad", 200, "delete")
            job_s["s"] = time.perf_counter() - t
            done.set()
        th = threading.Thread(target=job)
        th.start()
        time.sleep(0.3)
        beside, k = [], 100
        while not done.is_set():
            beside.append(maps_round(w, k))
            k += 1
        th.join()
        print(f"six maps alone: median {statistics.median(alone):.3f} s (n={len(alone)}); beside the job: median "
              f"{statistics.median(beside):.3f} s, max {max(beside):.3f} s (n={len(beside)}); the job took "
              f"{job_s['s']:.1f} s")
    finally:
        w.stop()


if __name__ == "__main__":
    main()
