"""Running the reproduction (`python -m textcls reproduce`): train each selected cell `runs` times with seeds
seed, seed+1, ..., skipping runs already in the results file, saving it and the Markdown after every run.

`device` / `amp` go to every run's TrainConfig. Under torchrun (the CLI joins the process group first) every
rank runs every cell together (DDP); only rank 0 reads and writes the results file and logs. Each run records
where it was measured (device, its name, world size, AMP), and the table says so per row."""
from __future__ import annotations

import datetime as _dt
import os
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from textcls.runtime import distributed
from textcls.runtime.devices import describe_device, resolve_device
from textcls.train.pipeline import TrainSpec, run_training
from textcls.experiments.cells import SUITES, Cell, all_cells
from textcls.experiments.results import DEFAULT_OUT, load_results
from textcls.experiments.results import update_results as _update_results


def _loadavg() -> list[float]:
    """os.getloadavg() rounded, or [] where the platform has none."""
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else []


def _silent(message: str) -> None:
    pass


def done_seeds(entry: dict[str, Any] | None, signature: dict[str, Any]) -> set[int]:
    """The seeds of a stored cell entry whose runs have this signature (the runs resuming can skip)."""
    if not entry:
        return set()
    return {r["seed"] for r in entry.get("runs", [])
            if r.get("signature") == signature or _today_names(r.get("signature")) == signature}


def _today_names(sig: Any) -> Any:
    """A stored run's signature with its model config overrides under today's names (`checkpoint.FIELD_ALIASES`),
    so runs recorded before a field was renamed still count."""
    if not isinstance(sig, dict) or not isinstance(sig.get("overrides"), dict) or not sig.get("model"):
        return sig
    from textcls.checkpoint import CheckpointError, current_names
    from textcls.models.registry import get_entry
    try:
        return {**sig, "overrides": current_names(get_entry(str(sig["model"])).config_cls, sig["overrides"])}
    except (KeyError, CheckpointError):
        return sig


# ---------------------------------------------------------------- running


def run_cell(cell: Cell, seed: int, *, epochs: int, limit: int | None = None, data_root=None,
             callbacks: Sequence[Callable] = (), stop_event=None, device: str | None = None,
             amp: str | None = None) -> dict[str, Any]:
    """Train one cell once (no checkpoint written) and return the run record (with the load average and the
    torch thread count: on a shared machine the seconds per epoch are inflated by the load)."""
    t0 = time.perf_counter()
    load0 = _loadavg()
    train = dict(cell.train)
    if device is not None:
        train["device"] = device
    if amp is not None:
        train["amp"] = amp
    ctx = distributed.context()
    where = ctx.device if ctx.active else resolve_device(train.get("device", "auto"))
    if where.type != "cuda":
        train.pop("amp", None)               # a cell's amp is for CUDA; float32 elsewhere, without a warning
    spec = TrainSpec(cell.source or cell.data, cell.model, preset=cell.preset, variant=cell.variant,
                     overrides=dict(cell.overrides), embeddings=cell.embeddings, epochs=epochs, data_root=data_root,
                     limit=limit, tokenizer_overrides=dict(cell.tokenizer) or None, train_overrides=train,
                     extra_vocab=cell.extra_vocab, seed=seed, text_column=cell.text_column,
                     arrow=None)                              # the one rule: hub ids take the Arrow path
    res = run_training(spec, callbacks=callbacks, stop_event=stop_event)
    h = res.history
    m = res.metrics
    if cell.metric_split not in m:
        raise RuntimeError(f"{cell.key}: no {cell.metric_split} metrics (stopped: {h.stopped_reason})")
    per_epoch = [e.seconds for e in h.epochs]
    return {
        "seed": seed,
        "accuracy": m[cell.metric_split]["accuracy"],
        "score": m[cell.metric_split][cell.metric],      # what the cell reports (accuracy or macro_f1)
        "test_accuracy": m.get("test", {}).get("accuracy"), "dev_accuracy": m.get("dev", {}).get("accuracy"),
        "test_macro_f1": m.get("test", {}).get("macro_f1"),
        "n": {s: m[s]["n"] for s in m if "n" in m[s]},
        "epochs_run": len(h.epochs), "best_epoch": h.best_epoch, "steps": h.steps,
        "seconds": round(time.perf_counter() - t0, 2), "train_seconds": round(h.elapsed, 2),
        "seconds_per_epoch": round(statistics.median(per_epoch), 2) if per_epoch else None,
        "stopped_reason": h.stopped_reason, "diverged": h.diverged,
        "embedding_coverage": res.embedding_coverage,
        "parameters": res.model.num_parameters(include_embeddings=False),
        "parameters_total": res.model.num_parameters(include_embeddings=True),
        "finished": _dt.datetime.now().isoformat(timespec="seconds"),
        "loadavg_start": load0, "loadavg_end": _loadavg(), "torch_threads": torch.get_num_threads(),
        "device": h.device, "device_name": describe_device(h.device),
        "world_size": distributed.context().world_size, "amp": h.config.get("amp_used", "off"),
    }


def reproduce(cells: Sequence[Cell], *, out: str | Path = DEFAULT_OUT, markdown: str | Path | None = None,
              runs: int | None = None, epochs: int | None = None, limit: int | None = None, seed: int = 0,
              data_root=None, force: bool = False, dry_run: bool = False,
              log: Callable[[str], None] = print, callbacks: Sequence[Callable] = (),
              command: str = "", device: str | None = None, amp: str | None = None) -> dict[str, Any]:
    """Run the cells (skipping runs already in `out`), saving `out` and the Markdown after every run.

    runs/epochs override every cell's own (default runs: as many as the paper averaged); limit samples at most
    `limit` examples per split (quick runs). Resuming: a run is skipped when `out` already holds a run of the
    same cell with the same seed and the same settings (Cell.signature); a run whose settings changed is
    replaced; `force` re-runs everything selected. Several processes may share `out`: each change re-reads it
    under a lock. Returns the results dict (also written to `out`)."""
    for name, v in (("runs", runs), ("epochs", epochs), ("limit", limit)):
        if v is not None and (isinstance(v, bool) or int(v) < 1):
            raise ValueError(f"{name} must be >= 1, got {v}")
    out = Path(out)
    md = Path(markdown) if markdown is not None else out.with_suffix(".md")
    if distributed.context().is_main:
        update_results = _update_results
    else:                                            # under torchrun: rank 0 logs and writes the results
        log = _silent

        def update_results(out, md, change):
            return load_results(out)
    results = load_results(out)
    session = {"started": _dt.datetime.now().isoformat(timespec="seconds"), "command": command,
               "loadavg_start": _loadavg(), "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
               "torch": torch.__version__, "ran": 0, "skipped": 0, "failed": []}
    plan = []
    for cell in cells:
        e = epochs or cell.epochs
        sig = cell.signature(e, limit or cell.limit)
        want = list(range(seed, seed + (runs or cell.runs)))
        have = set() if force else done_seeds(results["cells"].get(cell.key), sig)
        todo = [s for s in want if s not in have]
        session["skipped"] += len(want) - len(todo)
        plan += [(cell, s, e, sig) for s in todo]
    if distributed.context().active:                 # every rank runs rank 0's plan, in its order
        keys = distributed.broadcast_object([(c.key, s) for c, s, _, _ in plan])
        by = {(c.key, s): (c, s, e, sig) for c, s, e, sig in plan}
        cell_of = {c.key: c for c in cells}

        def item(key: str, seed_: int):
            c = cell_of[key]
            return by.get((key, seed_)) or (c, seed_, epochs or c.epochs,
                                            c.signature(epochs or c.epochs, limit or c.limit))
        plan = [item(k, sd) for k, sd in keys]
    log(f"{len(plan)} run(s) to do, {session['skipped']} already in {out}")
    if dry_run:
        for cell, s, e, _ in plan:
            log(f"  would run {cell.key} seed {s} ({e} epochs)")
        return results
    if not plan:
        return results
    order = {c.key: i for i, c in enumerate(all_cells(SUITES))}
    session["id"] = f"{session['started']}-{os.getpid()}"

    def put_session(res: dict[str, Any]) -> None:   # only sessions that run something are recorded
        res["sessions"] = [x for x in res.get("sessions", []) if x.get("id") != session["id"]] + [dict(session)]

    results = update_results(out, md, put_session)
    for i, (cell, s, e, sig) in enumerate(plan, 1):
        log(f"[{i}/{len(plan)}] {cell.key} seed {s}: {cell.model} {e} epoch(s) on {cell.data}"
            + (f" (limit {limit or cell.limit})" if limit or cell.limit else ""))
        try:
            record = run_cell(cell, s, epochs=e, limit=limit or cell.limit, data_root=data_root, callbacks=callbacks,
                              device=device, amp=amp)
        except KeyboardInterrupt:
            session["interrupted"] = True
            break
        except Exception as ex:  # noqa: BLE001 - one failing cell must not lose the others; it is recorded
            if distributed.context().active and distributed.is_peer_failure(ex):
                raise                        # a lost rank ends the whole job (every rank stops)
            msg = f"{cell.key} seed {s}: {type(ex).__name__}: {' '.join(str(ex).split())}"
            log(f"  FAILED {msg}")
            session["failed"].append(msg)
            results = update_results(out, md, put_session)
            continue
        record["signature"] = sig
        session["ran"] += 1
        session["finished"] = record["finished"]
        session["loadavg_end"] = _loadavg()

        def put_run(res: dict[str, Any], cell=cell, s=s, sig=sig, record=record) -> None:
            entry = res["cells"].setdefault(cell.key, {"runs": []})
            entry["cell"] = {**cell.to_dict(), "order": order.get(cell.key, 10 ** 6)}
            entry["runs"] = [r for r in entry["runs"] if r.get("signature") == sig and r["seed"] != s] + [record]
            entry["runs"].sort(key=lambda r: r["seed"])
            res["updated"] = record["finished"]
            put_session(res)

        results = update_results(out, md, put_run)
        log(f"  {cell.metric_split} {cell.metric} {100 * record['score']:.1f} % "
            f"(paper {cell.paper if cell.paper is not None else '-'}), {record['epochs_run']} epoch(s), "
            f"{record['seconds']:.0f} s, load {record['loadavg_end'][:1]}")
    session["finished"] = _dt.datetime.now().isoformat(timespec="seconds")
    session["loadavg_end"] = _loadavg()
    results = update_results(out, md, put_session)
    return results
