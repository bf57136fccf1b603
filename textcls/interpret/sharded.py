"""A SliceRun sharded over torchrun ranks (`torchrun --nproc_per_node N -m textcls faithfulness ...`; gloo on
the CPU, nccl on CUDA, textcls.runtime.distributed).

The split is cut into the chunks a single process steps through (`SliceRun.chunk` texts each); rank r scores
chunks r, r + N, r + 2N, ... with the very code of a single process, so every chunk's batches - and so its
numbers - are those one process computes. Rank 0 gathers each chunk's per-text rows, importances and
attention tests, puts them back in chunk order, and its report is the single-process report (the timings are
the ranks' summed seconds of work). Only rank 0 holds the merged run; `run_sharded` returns False elsewhere.
"""
from __future__ import annotations

import time
from typing import Callable

from textcls.runtime.distributed import context
from textcls.runtime.memory import return_free_memory
from textcls.runtime.threads import for_texts


def run_sharded(run, progress: Callable[[int, int], None] | None = None) -> bool:
    """Run `run` (a SliceRun) over this process's shard; True on the rank that holds the whole report."""
    ctx = context()
    if not ctx.active:
        run.run(progress)
        return True
    import torch.distributed as dist
    chunks = [list(range(s, min(s + run.chunk, run.total))) for s in range(0, run.total, run.chunk)]
    mine = []
    done = 0
    for idx in chunks[ctx.rank::ctx.world_size]:
        n_rows, n_perm = len(run.per_example), len(run.perm)
        t0 = time.perf_counter()
        with for_texts(len(idx)):
            run._step(idx)
        return_free_memory()
        run.seconds += time.perf_counter() - t0
        mine.append({"start": idx[0], "rows": run.per_example[n_rows:], "perm": run.perm[n_perm:],
                     "uni": run.uni[n_perm:],
                     "imps": {m: {i: d[i] for i in idx if i in d} for m, d in run.importances.items()}})
        done += len(idx)
        if progress:
            progress(done, run.total)
    payload = {"chunks": mine, "timings": dict(run.timings), "variants": run.n_variants, "seconds": run.seconds}
    gathered = [None] * ctx.world_size if ctx.is_main else None
    dist.gather_object(payload, gathered, dst=0)
    if not ctx.is_main:
        return False
    parts = sorted((c for p in gathered for c in p["chunks"]), key=lambda c: c["start"])
    run.per_example = [r for c in parts for r in c["rows"]]
    run.perm = [x for c in parts for x in c["perm"]]
    run.uni = [x for c in parts for x in c["uni"]]
    for c in parts:
        for m, d in c["imps"].items():
            run.importances[m].update(d)
    run.timings = {}
    for p in gathered:
        for k, v in p["timings"].items():
            run.timings[k] = run.timings.get(k, 0.0) + v
    run.n_variants = sum(p["variants"] for p in gathered)
    run.seconds = max(p["seconds"] for p in gathered)
    run.done = run.total
    return True


__all__ = ["run_sharded"]
