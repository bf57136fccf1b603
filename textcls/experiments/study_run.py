"""Running a study (study_defs): every point x seed through `pipeline.run_training` (the CLI's training
path), each finished run cached at once in the user folder (`<user home>/studies/<NAME>-<scale>.json`), so a
stopped or crashed study resumes where it was and a second call reuses everything. One study at a time per user
folder (a lock file naming the process). No Streamlit."""
from __future__ import annotations

import datetime as _dt
import json
import os
import statistics
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

from textcls.runtime.paths import user_home
from textcls.experiments.study_defs import Scale, Study, StudyPoint

LONG_RUN_S = 6 * 3600          # a plan longer than this is refused unless confirmed


class StudyError(RuntimeError):
    """A study cannot start (absent data, no dev split, another study running, too long unconfirmed)."""


def studies_dir() -> Path:
    return user_home() / "studies"


def cache_path(study: Study, scale: str) -> Path:
    return studies_dir() / f"{study.name}-{scale}.json"


_OPTIONAL = ("overrides", "base", "tokenizer")      # left out of the signature when empty (older caches stay valid)


def signature(point: StudyPoint, sc: Scale) -> dict[str, Any]:
    """What a run's result depends on besides its seed: a cached run with another signature is stale."""
    return json.loads(json.dumps({"point": asdict(point), "scale": {
        k: v for k, v in asdict(sc).items() if k not in ("seconds_per_run", "help", "seeds")
        and (k not in _OPTIONAL or v)}}, default=list))


def matches(stored: dict[str, Any] | None, point: StudyPoint, sc: Scale) -> bool:
    """Whether a cached run's signature is current. How many seeds the scale has does not change one run (older
    caches recorded it: ignored), so a scale can gain seeds and keep its runs."""
    if not isinstance(stored, dict):
        return False
    stored = {**stored, "scale": {k: v for k, v in stored.get("scale", {}).items() if k != "seeds"}}
    current = signature(point, sc)
    return stored == current or _today_names(stored) == current


def _today_names(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored signature with its model config fields under today's names (`checkpoint.FIELD_ALIASES`: e.g. HCAN's
    attention_dim / heads are d_model / n_heads now), so runs recorded before a field was renamed stay current."""
    from textcls.checkpoint import aliases_for
    from textcls.models.registry import get_entry

    def rename(model: Any, pairs: Any) -> Any:
        try:
            aliases = aliases_for(get_entry(str(model)).config_cls)
        except KeyError:
            return pairs
        if not isinstance(pairs, list):
            return pairs
        return [[aliases.get(p[0], p[0]), *p[1:]] if isinstance(p, list) and p else p for p in pairs]

    out = json.loads(json.dumps(stored))
    point, scale = out.get("point"), out.get("scale")
    if isinstance(point, dict):
        if "overrides" in point:
            point["overrides"] = rename(point.get("model"), point["overrides"])
        if isinstance(scale, dict) and "overrides" in scale:
            scale["overrides"] = rename(point.get("model"), scale["overrides"])
    if isinstance(scale, dict) and isinstance(scale.get("base"), list):
        scale["base"] = [[b[0], rename(b[0], b[1])] if isinstance(b, list) and len(b) == 2 else b
                         for b in scale["base"]]
    return out


def config_signature(point: StudyPoint, sc: Scale) -> dict[str, Any]:
    """The signature without where the point is drawn (series, x, the paper's number): two points of a study
    with the same configuration train the same model, so one run serves both."""
    sig = signature(point, sc)
    sig["point"] = {k: v for k, v in sig["point"].items() if k not in ("series", "x", "paper")}
    return sig


def point_overrides(point: StudyPoint, sc: Scale) -> dict[str, Any]:
    """Model config fields of one run: the scale's base for the model (less what the point's variant sets: an
    ablation must stay an ablation), the point's own, the scale's overrides."""
    base = sc.base_for(point.model)
    if point.variant and base:
        from textcls.models.registry import get_entry
        for k in get_entry(point.model).variants.get(point.variant, {}):
            base.pop(k, None)
    return {**base, **dict(point.overrides), **dict(sc.overrides)}


def point_tokenizer(point: StudyPoint, sc: Scale) -> dict[str, Any] | None:
    return {**sc.tokenizer_for(point.model), **dict(point.tokenizer)} or None


def load_cache(study: Study, scale: str) -> dict[str, Any]:
    p = cache_path(study, scale)
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return {"study": study.name, "scale": scale, "runs": {}}


def _save(study: Study, scale: str, cache: dict[str, Any]) -> None:
    p = cache_path(study, scale)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(cache, indent=1))
    os.replace(tmp, p)                                  # atomic: a crash never leaves half a file


def run_key(point: StudyPoint, seed: int) -> str:
    return f"{point.key}|seed={seed}"


def plan(study: Study, scale: str) -> tuple[list[tuple[StudyPoint, int]], int]:
    """(runs still to do, runs already cached with the current signature)."""
    sc = study.scales[scale]
    runs = load_cache(study, scale)["runs"]
    todo, have = [], 0
    for seed in range(sc.seeds):                        # seed by seed: a stopped study has whole grids
        for pt in study.points:
            r = runs.get(run_key(pt, seed))
            if r is not None and matches(r.get("signature"), pt, sc):
                have += 1
            else:
                todo.append((pt, seed))
    return todo, have


def estimate_seconds(study: Study, scale: str) -> float:
    """Rough wall-clock seconds for the runs not yet cached (Scale.seconds_per_run each, or the mean measured
    time of this study's cached runs when there are some)."""
    todo, _ = plan(study, scale)
    done = [r["seconds"] for r in load_cache(study, scale)["runs"].values() if r.get("seconds")]
    per = statistics.mean(done) if done else study.scales[scale].seconds_per_run
    return len(todo) * per


def check_data(study: Study, scale: str, data_root=None) -> None:
    """StudyError when the scale's data set is absent or has no dev split (every study reads dev accuracy)."""
    from textcls.data.datasets import load_data
    sc = study.scales[scale]
    try:
        bundle = load_data(sc.data, root=data_root, limit=sc.limit)
    except (FileNotFoundError, ValueError, OSError) as e:
        raise StudyError(f"{study.name} ({scale}) needs the data set {sc.data!r}, which is not here: {e}. "
                         "Point --data-root / TEXTCLS_DATA at a folder holding it, or use --scale quick "
                         "(bundled data).") from None
    if "dev" not in bundle.splits or len(bundle.splits["dev"]) == 0:
        raise StudyError(f"{sc.data!r} has no dev split; a study compares dev accuracy. Give the data set a "
                         "dev.csv (or choose another data set).")


# ---------------------------------------------------------------- one run


def run_point(point: StudyPoint, sc: Scale, seed: int, *, stop_event=None, data_root=None,
              device: str | None = None) -> dict[str, Any] | None:
    """Train one point once; its record, or None when it was stopped before finishing (nothing kept)."""
    from textcls.train.pipeline import TrainSpec, run_training
    train = dict(sc.train)
    if device:
        train["device"] = device
    t0, c0 = time.perf_counter(), time.process_time()
    spec = TrainSpec(sc.data, point.model, preset=sc.preset, variant=point.variant,
                     overrides=point_overrides(point, sc), embeddings=sc.embeddings, epochs=sc.epochs,
                     data_root=data_root, limit=sc.limit, tokenizer_overrides=point_tokenizer(point, sc),
                     train_overrides=train, seed=seed)
    res = run_training(spec, stop_event=stop_event)
    h = res.history
    if h.stopped_by_user:
        return None
    m = res.metrics
    return {"seed": seed, "dev_accuracy": m.get("dev", {}).get("accuracy"),
            "test_accuracy": m.get("test", {}).get("accuracy"),
            "curve": [{"epoch": e.epoch, "dev_accuracy": e.dev_accuracy, "elapsed": round(e.elapsed, 3)}
                      for e in h.epochs],
            "seconds": round(time.perf_counter() - t0, 2), "train_seconds": round(h.elapsed, 2),
            "cpu_seconds": round(time.process_time() - c0, 2),      # what a quiet machine would take (1 thread)
            "seconds_per_epoch": round(statistics.median(e.seconds for e in h.epochs), 3) if h.epochs else None,
            "parameters": res.model.num_parameters(include_embeddings=False), "device": h.device,
            "finished": _dt.datetime.now().isoformat(timespec="seconds")}


# ---------------------------------------------------------------- the lock


def _lock_path() -> Path:
    return studies_dir() / "running.lock"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except (OSError, ValueError):
        return False


def running_study() -> str | None:
    """'NAME (scale), pid N' for the study holding the lock, or None (a dead holder's lock is ignored)."""
    try:
        info = json.loads(_lock_path().read_text())
    except (OSError, ValueError):
        return None
    if not _alive(int(info.get("pid", -1))):
        return None
    return f"{info['study']} ({info['scale']}), pid {info['pid']}"


def _take_lock(study: Study, scale: str) -> None:
    holder = running_study()
    if holder is not None and not holder.endswith(f"pid {os.getpid()}"):   # the app writes its child's pid
        raise StudyError(f"another study is running ({holder}); one study at a time - stop it or wait")
    p = _lock_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps({"study": study.name, "scale": scale, "pid": os.getpid()}))


def _release_lock() -> None:
    try:
        if json.loads(_lock_path().read_text()).get("pid") == os.getpid():
            _lock_path().unlink()
    except (OSError, ValueError):
        pass


# ---------------------------------------------------------------- the study


def _same_config_run(study: Study, scale: str, point: StudyPoint, seed: int) -> dict[str, Any] | None:
    """A cached run of another point of the study with the same configuration and seed, or None."""
    sc = study.scales[scale]
    want = config_signature(point, sc)
    runs = load_cache(study, scale)["runs"]
    for other in study.points:
        r = runs.get(run_key(other, seed))
        if other.key != point.key and r is not None and matches(r.get("signature"), other, sc) \
                and config_signature(other, sc) == want:
            return r
    return None


def run_study(study: Study, scale: str = "quick", *, stop_event=None, data_root=None, device: str | None = None,
              confirm_long: bool = False, on_run: Callable[[dict[str, Any]], None] | None = None,
              log: Callable[[str], None] = lambda m: None) -> dict[str, Any]:
    """Run the study's uncached runs in order, saving the cache after each; returns the cache. A stop (the
    event set) ends it after discarding the run in progress: every finished run stays cached.
    Raises StudyError before training when it cannot start."""
    if scale not in study.scales:
        raise StudyError(f"{study.name} has no scale {scale!r}; choose one of {', '.join(study.scales)}")
    sc = study.scales[scale]
    check_data(study, scale, data_root)
    est = estimate_seconds(study, scale)
    if est > LONG_RUN_S and not confirm_long:
        raise StudyError(f"{study.name} ({scale}) would take about {est / 3600:.1f} h on this machine "
                         f"({len(plan(study, scale)[0])} runs); confirm to start it anyway")
    _take_lock(study, scale)
    try:
        todo, have = plan(study, scale)
        log(f"{study.name} ({scale}): {len(todo)} run(s) to do, {have} cached in {cache_path(study, scale)}")
        for i, (pt, seed) in enumerate(todo, 1):
            if stop_event is not None and stop_event.is_set():
                break
            log(f"[{i}/{len(todo)}] {pt.key} seed {seed}")
            rec = _same_config_run(study, scale, pt, seed)
            if rec is not None:
                log(f"  the same configuration as {rec['point']}: its run is shared")
            else:
                rec = run_point(pt, sc, seed, stop_event=stop_event, data_root=data_root, device=device)
            if rec is None:
                log("  stopped; the run in progress is discarded, finished runs are kept")
                break
            rec = {**rec, "signature": signature(pt, sc), "point": pt.key}
            cache = load_cache(study, scale)
            cache["runs"][run_key(pt, seed)] = rec
            _save(study, scale, cache)
            log(f"  dev {100 * (rec['dev_accuracy'] or 0):.1f} %, {rec['seconds']:.0f} s")
            if on_run is not None:
                on_run(rec)
    finally:
        _release_lock()
    return load_cache(study, scale)
