"""Benchmark of issue 30's targets: MiniLM (checkpoints/minilm-sst2) beside the shipped sst2 checkpoints.

    python scripts/bench_hf.py [--faith-limit N] [--busy 2] [--json out.json]

Measures, per sst2 checkpoint: test accuracy (recorded), one-sentence predict and predict-with-maps latency under
the interactive thread policy (median of 15 after a warm-up), idle and with `--busy` spinning processes; for
MiniLM: integrated gradients (50 steps, one sentence); the Compare workload (every sst2 checkpoint on one
sentence, library side); faithfulness over the sst2 test split (own attention, random, leave-one-out; IG with
--ig), AOPC comprehensiveness per method and the time it took. The machine may be shared: the busy runs are
relative to whatever else runs; say so when reporting.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import time
from pathlib import Path

SENTENCE = "the food was great but the service was painfully slow , and i would not come back ."


def _spin(stop) -> None:
    x = 0
    while not stop.is_set():
        x += 1


def _latencies(preds: dict, repeats: int) -> dict:
    from textcls.experiments.measure import time_call
    from textcls.runtime.threads import interactive
    out = {}
    for name, p in preds.items():
        with interactive():
            one = time_call(lambda p=p: p.predict([SENTENCE]), warmup=2, repeats=repeats)
            maps = time_call(lambda p=p: p.predict([SENTENCE], return_maps=True), warmup=2, repeats=repeats)
        out[name] = {"predict_ms": 1000 * one["median"], "maps_ms": 1000 * maps["median"]}
    with interactive():
        allp = time_call(lambda: [p.predict([SENTENCE]) for p in preds.values()], warmup=1, repeats=repeats)
    out["_compare_all_ms"] = 1000 * allp["median"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default="checkpoints")
    ap.add_argument("--faith-limit", type=int, default=None, help="test texts for faithfulness (default: all)")
    ap.add_argument("--faith-models", default="minilm-sst2", help="comma-separated checkpoints for faithfulness")
    ap.add_argument("--ig", action="store_true", help="also integrated gradients in the faithfulness run")
    ap.add_argument("--busy", type=int, default=2, help="spinning processes for the busy latency")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    import textcls
    from textcls.checkpoint import list_checkpoints
    from textcls.data.datasets import load_data
    from textcls.interpret import attribute_texts, evaluate_slice
    from textcls.runtime.threads import interactive

    infos = [i for i in list_checkpoints(args.root, include_invalid=True) if i.name.endswith("-sst2")]
    result: dict = {"sentence": SENTENCE, "rows": {}, "errors": []}
    preds = {}
    for info in infos:
        if not info.valid:
            result["errors"].append(info.error)
            continue
        t = time.perf_counter()
        preds[info.name] = textcls.load_checkpoint(info.path)
        result["rows"][info.name] = {"model": info.model, "test_accuracy": info.test_accuracy,
                                     "load_s": time.perf_counter() - t,
                                     "parameters": preds[info.name].model.num_parameters(include_embeddings=True)}
    idle = _latencies(preds, args.repeats)
    stop = mp.Event()
    procs = [mp.Process(target=_spin, args=(stop,), daemon=True) for _ in range(args.busy)]
    for p in procs:
        p.start()
    try:
        busy = _latencies(preds, args.repeats)
    finally:
        stop.set()
        for p in procs:
            p.join()
    for name in preds:
        result["rows"][name].update({"predict_ms_idle": idle[name]["predict_ms"], "maps_ms_idle": idle[name]["maps_ms"],
                                     "predict_ms_busy": busy[name]["predict_ms"], "maps_ms_busy": busy[name]["maps_ms"]})
    result["compare_all_ms_idle"], result["compare_all_ms_busy"] = idle["_compare_all_ms"], busy["_compare_all_ms"]
    if "minilm-sst2" in preds:
        with interactive():
            t = time.perf_counter()
            (a,) = attribute_texts(preds["minilm-sst2"], [SENTENCE], "integrated_gradients", n_steps=50)
            result["minilm_ig_s"] = time.perf_counter() - t
            result["minilm_ig"] = {"delta": a.delta, "steps": a.n_steps, "converged": a.converged}
    test = load_data("sst2").splits["test"]
    texts = test.texts[:args.faith_limit] if args.faith_limit else test.texts
    methods = ("attention", "random", "leave_one_out") + (("integrated_gradients",) if args.ig else ())
    result["faithfulness"] = {}
    for name in [m for m in args.faith_models.split(",") if m in preds]:
        t = time.perf_counter()
        rep = evaluate_slice(preds[name], texts, methods, attention_tests=False)
        frame = rep.frame()
        result["faithfulness"][name] = {
            "texts": len(texts), "seconds": time.perf_counter() - t,
            "aopc_comprehensiveness": dict(zip(frame["method"], frame["aopc_comprehensiveness"].astype(float))),
            "aopc_sufficiency": dict(zip(frame["method"], frame["aopc_sufficiency"].astype(float)))}
    for name, r in result["rows"].items():
        acc = "n/a" if r["test_accuracy"] is None else f"{100 * r['test_accuracy']:.1f} %"
        print(f"{name:22s} {r['model']:34s} acc {acc:>7s}  predict {r.get('predict_ms_idle', float('nan')):6.1f} ms "
              f"idle / {r.get('predict_ms_busy', float('nan')):6.1f} busy; maps {r.get('maps_ms_idle', float('nan')):6.1f}"
              f" / {r.get('maps_ms_busy', float('nan')):6.1f} ms")
    print(f"compare (all {len(preds)} sst2 checkpoints, one sentence): {result['compare_all_ms_idle']:.0f} ms idle, "
          f"{result['compare_all_ms_busy']:.0f} ms busy")
    if "minilm_ig_s" in result:
        print(f"MiniLM IG 50 steps, one sentence: {result['minilm_ig_s']:.2f} s ({result['minilm_ig']})")
    for name, f in result["faithfulness"].items():
        print(f"faithfulness {name} over {f['texts']} test texts: {f['seconds']:.0f} s; AOPC comp. "
              + ", ".join(f"{k} {v:.3f}" for k, v in f["aopc_comprehensiveness"].items()))
    for e in result["errors"]:
        print("error:", e)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, default=float))


if __name__ == "__main__":
    main()
