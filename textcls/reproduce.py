"""Reproduce the papers' accuracy tables on the bundled data: `python -m textcls reproduce`.

Each *cell* is one configuration a paper reports (model, variant, embeddings, data set) with the paper's figure
beside it. Cells are grouped in *suites* so a subset can run:

  agcnn_t3      AGCNN Table 3: Kim CNN and AGCNN (SELU, NLReLU) x rand / static / non-static on MR, Subj,
                SST-1 and SST-2 (trained on phrases, as the papers; also on sentences), TREC
  matton_sst5   Matton: word-level Transformer on SST-5 with GloVe, pooling cls (new token) / max / decoder
  lama_imdb     LAMA Table 3: LAMA, LAMA + Ctx and the CNN baseline on IMDB
  act_mini      ACT Table 2: ACT vs its Transformer baseline on ag_news_mini / dbpedia_mini - mini sets,
                NOT the AG News / DBpedia benchmarks (the paper's figures are shown for orientation only)
  act_ablation  ACT Table 3: the four ablations (dev accuracy; paper: Yelp F. dev, ours: ag_news_mini dev)
  hcan_imdb     HCAN vs CAN (its flat, word-level-only form) on IMDB (the HCAN paper has no IMDB figure)
  smoke         two tiny models on TREC for checking the pipeline (not a reproduction)

Runs: a cell runs `runs` times with seeds seed, seed+1, ... (default: the number of runs the paper averaged -
ACT: 5 - else 1); the table gives the mean and the spread (sample standard deviation over runs; with one run,
the binomial standard error of the accuracy on the test set). Results go to a JSON file (default
docs/results.json) after every run, and a Markdown table (same name, .md) is rebuilt from it: each cell next to
the paper's figure, the difference, and one line saying why they differ (50-d GloVe vs the papers' 300-d
vectors, few CPU epochs, mini sets, one fixed split vs 10-fold cross-validation, ...).

Resuming: a run is skipped when the results file already holds a run of the same cell with the same seed and
the same settings (model config, training settings, epochs, limit, data); a run whose settings changed is
replaced. `force=True` (--force) re-runs everything selected.

Every run records os.getloadavg() and the torch thread count: on a shared machine the seconds per epoch are
inflated by the load, and the Markdown says so.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import fnmatch
import json
import math
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import torch

from .files import atomic_write

RESULTS_VERSION = 1
DEFAULT_OUT = "docs/results.json"

# ---------------------------------------------------------------- the papers' figures (from figures.md)

AGCNN_COLUMNS = ("CR", "MR", "Subj", "SST-1", "SST-2", "TREC")
AGCNN_TABLE3: dict[str, tuple[float, ...]] = {
    "CNN-rand": (79.8, 76.1, 89.6, 45.0, 82.7, 91.2),
    "CNN-static": (84.7, 81.0, 93.0, 45.5, 86.8, 92.8),
    "CNN-non-static": (84.3, 81.5, 93.4, 48.0, 87.2, 93.6),
    "AGCNN-SELU-rand": (82.3, 78.3, 91.8, 44.7, 83.7, 92.9),
    "AGCNN-SELU-static": (86.4, 81.7, 93.9, 48.3, 87.1, 94.3),
    "AGCNN-SELU-non-static": (85.8, 81.6, 94.1, 49.2, 87.2, 94.5),
    "AGCNN-NLReLU-rand": (82.1, 78.3, 91.6, 44.4, 83.5, 92.5),
    "AGCNN-NLReLU-static": (86.2, 81.6, 93.8, 48.0, 87.2, 94.3),
    "AGCNN-NLReLU-non-static": (85.0, 81.3, 93.9, 49.6, 87.3, 94.9),
}
MATTON_SST5 = {"decoder": 42.7, "cls": 40.5, "max": 32.7}
LAMA_IMDB = {"LAMA": 89.5, "LAMA + Ctx": 90.0, "CNN": 87.4, "BiGRU": 87.6, "Transformer encoder": 81.7}
ACT_TABLE2 = {("act", "ag_news_mini"): 94.25, ("act", "dbpedia_mini"): 99.19,
              ("transformer", "ag_news_mini"): 93.89, ("transformer", "dbpedia_mini"): 98.98}
ACT_TABLE3_YELPF_DEV = {"ACT": 68.3, "- attentive conv.": 67.1, "- multi-head": 67.0, "- global rep.": 67.6,
                        "- position embed.": 67.4}

GAP_GLOVE = "50-d GloVe 6B (paper: 300-d word2vec)"
GAP_CV = "one fixed 80/10/10 split (paper: 10-fold cross-validation)"
GAP_SENTENCES = "trained on sentences (paper: on all labelled phrases, see the *_phrases column)"
GAP_MINI = "MINI set (6-11k training texts), NOT the benchmark (paper: full AG News / DBpedia training sets)"


@dataclass
class Cell:
    """One configuration a paper reports, with the paper's figure."""
    suite: str
    table: str                       # the paper's table, e.g. "AGCNN Table 3"
    setting: str                     # the paper's row, e.g. "CNN-non-static"
    data: str                        # bundled data set name
    model: str                       # registered model name
    preset: str | None = None
    variant: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    embeddings: str = "glove"        # glove | random
    paper: float | None = None       # the paper's accuracy (%)
    paper_note: str = ""             # what the paper's figure is on, when it is not this data set's test set
    column: str = ""                 # the paper's column label (data set as the paper names it)
    metric_split: str = "test"
    runs: int = 1                    # runs the paper averaged
    epochs: int = 10
    train: dict[str, Any] = field(default_factory=dict)       # TrainConfig fields
    tokenizer: dict[str, Any] = field(default_factory=dict)   # TokenizerConfig fields
    extra_vocab: int = 0             # most frequent GloVe words added to the vocabulary (train_from_spec)
    gaps: tuple[str, ...] = ()       # known reasons for a gap to the paper

    @property
    def key(self) -> str:
        slug = self.setting.lower().replace(" + ", "-").replace(" ", "-").replace(".", "").replace("--", "-")
        return f"{self.suite}/{slug.strip('-')}/{self.data}"

    def signature(self, epochs: int, limit: int | None) -> dict[str, Any]:
        """What a run's result depends on (besides the seed): a stored run with another signature is stale."""
        return {"model": self.model, "preset": self.preset, "variant": self.variant,
                "overrides": _plain(self.overrides), "embeddings": self.embeddings, "data": self.data,
                "train": _plain(self.train), "tokenizer": _plain(self.tokenizer), "epochs": int(epochs),
                "limit": limit, "metric_split": self.metric_split,
                **({"extra_vocab": self.extra_vocab} if self.extra_vocab else {})}

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["gaps"] = list(self.gaps)
        d["key"] = self.key
        return _plain(d)


def _plain(obj):
    """JSON-stable form (tuples -> lists, keys sorted on dump)."""
    return json.loads(json.dumps(obj, sort_keys=True, default=list))


# ---------------------------------------------------------------- the suites


# Tuned on dev (docs/tuning.md, scripts/tune.py): the 30k most frequent GloVe words join the vocabulary, so test
# words unseen in training keep their GloVe vectors (Kim 2014 built the vocabulary over all texts for this),
# and up to 20 epochs with patience 5. Kim's Adadelta + max-norm 3 was no better on dev with 50-d vectors.
AGCNN_EXTRA_VOCAB = 30_000


def _agcnn_t3() -> list[Cell]:
    rows = []
    for emb in ("rand", "static", "non-static"):
        rows.append((f"CNN-{emb}", "kim_cnn", {}, emb))
    for act in ("SELU", "NLReLU"):
        for emb in ("rand", "static", "non-static"):
            rows.append((f"AGCNN-{act}-{emb}", "agcnn", {"activation": act.lower()}, emb))
    datasets = [("mr", "MR"), ("subj", "Subj"), ("sst5_phrases", "SST-1"), ("sst2_phrases", "SST-2"),
                ("trec", "TREC"), ("sst5", "SST-1"), ("sst2", "SST-2")]
    cells = []
    for data, col in datasets:
        for setting, model, over, emb in rows:
            gaps = []
            if emb != "rand":
                gaps.append(GAP_GLOVE)
            if data in ("mr", "subj"):
                gaps.append(GAP_CV)
            if data in ("sst2", "sst5"):
                gaps.append(GAP_SENTENCES)
            if model == "kim_cnn":
                gaps.append("Adam (Kim 2014: Adadelta with a max-norm 3 constraint; no better on dev here, "
                            "docs/tuning.md)")
            phrases = data.endswith("_phrases")    # 10-20x more training texts: fewer epochs suffice
            cells.append(Cell(
                suite="agcnn_t3", table="AGCNN Table 3", setting=setting, data=data, model=model,
                overrides={**over, "embedding_mode": emb}, embeddings="random" if emb == "rand" else "glove",
                paper=AGCNN_TABLE3[setting][AGCNN_COLUMNS.index(col)], column=col, epochs=10 if phrases else 20,
                train={"optimizer": "adam", "lr": 1e-3, "batch_size": 50, "patience": 3 if phrases else 5},
                extra_vocab=0 if emb == "rand" else AGCNN_EXTRA_VOCAB, gaps=tuple(gaps)))
    return cells


def _matton_sst5() -> list[Cell]:
    names = {"cls": "new token (cls)", "max": "max-pool", "decoder": "decoder (vanilla)"}
    return [Cell(suite="matton_sst5", table="Matton word-level SST-5", setting=f"Transformer, {names[p]}",
                 data="sst5", model="transformer", overrides={"pooling": p}, paper=MATTON_SST5[p], column="SST-5",
                 epochs=10, train={"optimizer": "noam", "lr": 5e-4, "batch_size": 64},
                 gaps=("50-d GloVe projected to d = 512 (paper: GloVe, d = 512)",
                       "Noam warm-up = 10% of the run's steps, batches of 64 texts (paper: 8,000 steps, "
                       "batches of 4,096 words)"))
            for p in ("cls", "max", "decoder")]


def _lama_imdb() -> list[Cell]:
    gap = "50-d GloVe (paper: 100-d word2vec trained on the corpus)"
    common = dict(suite="lama_imdb", table="LAMA Table 3 (IMDB)", data="imdb", column="IMDB", epochs=5,
                  train={"optimizer": "adam", "lr": 1e-3, "batch_size": 32, "patience": 2})
    return [
        Cell(setting="LAMA", model="lama", paper=LAMA_IMDB["LAMA"], gaps=(gap, "texts cut at 400 tokens"), **common),
        Cell(setting="LAMA + Ctx", model="lama", variant="ctx", paper=LAMA_IMDB["LAMA + Ctx"],
             gaps=(gap, "the mean embedding (50-d) is projected to 2d = 100 by a Linear (paper: e = 2d)",
                   "texts cut at 400 tokens"), **common),
        Cell(setting="CNN", model="kim_cnn", paper=LAMA_IMDB["CNN"],
             gaps=(gap, "Kim CNN windows 3/4/5 (the LAMA paper's CNN configuration is not given)",
                   "texts cut at 400 tokens"), **common),
    ]


# The ACT paper trains with SGD (lr 0.01, momentum 0.9, x0.9 after 10 epochs without improvement) for many GPU
# epochs; on this CPU budget (5 epochs) Adam converges where SGD at 0.01 has barely started. Both models of a
# comparison get the same optimiser, so ACT vs Transformer stays like for like.
ACT_TRAIN = {"optimizer": "adam", "lr": 1e-3, "batch_size": 100, "patience": 2, "clip_norm": 5.0}
GAP_ACT_OPT = "Adam 1e-3 for 5 CPU epochs (paper: SGD 0.01, momentum 0.9, many GPU epochs)"


def _act_mini() -> list[Cell]:
    cells = []
    for data, col in (("ag_news_mini", "AG News"), ("dbpedia_mini", "DBpedia")):
        for setting, model, preset in (("ACT", "act", None), ("Transformer", "transformer", "act_baseline")):
            cells.append(Cell(
                suite="act_mini", table="ACT Table 2 (mini sets)", setting=setting, data=data, model=model,
                preset=preset, paper=ACT_TABLE2[(model, data)], column=col,
                paper_note=f"full {col} benchmark - not comparable", runs=5, epochs=5, train=dict(ACT_TRAIN),
                gaps=(GAP_MINI, "50-d GloVe projected to d_w = 300 (paper: 300-d GloVe)", GAP_ACT_OPT)))
    return cells


def _act_ablation() -> list[Cell]:
    rows = [("ACT", None), ("- attentive conv.", "no_attentive_conv"), ("- multi-head", "single_head"),
            ("- global rep.", "no_global_rep"), ("- position embed.", "no_position")]
    return [Cell(suite="act_ablation", table="ACT Table 3 (ablation, dev accuracy)", setting=s,
                 data="ag_news_mini", model="act", variant=v, paper=ACT_TABLE3_YELPF_DEV[s], column="dev",
                 paper_note="Yelp F. dev", metric_split="dev", epochs=5, train=dict(ACT_TRAIN),
                 gaps=("paper: Yelp F. dev (5-way reviews), ours: ag_news_mini dev - compare the drops from "
                       "the ACT row, not the levels",
                       "50-d GloVe projected to d_w = 300", GAP_ACT_OPT))
            for s, v in rows]


def _hcan_imdb() -> list[Cell]:
    note = "the HCAN paper reports Yelp'16 / Amazon / PubMed, not IMDB: no figure to compare"
    common = dict(suite="hcan_imdb", table="HCAN vs CAN (IMDB)", data="imdb", column="IMDB", epochs=5,
                  train={"optimizer": "adam", "lr": 2e-4, "batch_size": 32, "patience": 2})
    return [Cell(setting="HCAN", model="hcan", gaps=(note, "lr 2e-4 (paper 2e-5) for few CPU epochs",
                                                     "50-d GloVe (paper: 512-d word2vec)"), **common),
            Cell(setting="CAN (flat)", model="can", gaps=(note, "lr 2e-4 (paper 2e-5) for few CPU epochs",
                                                         "50-d GloVe (paper: 512-d word2vec)"), **common)]


def _smoke() -> list[Cell]:
    gaps = ("SMOKE TEST: the small preset, random embeddings - checks the pipeline, reproduces nothing",)
    return [Cell(suite="smoke", table="Smoke test (not a reproduction)", setting=s, data="trec", model=m,
                 preset="small", overrides={"embedding_mode": "rand"}, embeddings="random", paper=p, column="TREC",
                 epochs=1, train={"batch_size": 50}, gaps=gaps)
            for s, m, p in (("CNN-rand", "kim_cnn", AGCNN_TABLE3["CNN-rand"][5]),
                            ("AGCNN-NLReLU-rand", "agcnn", AGCNN_TABLE3["AGCNN-NLReLU-rand"][5]))]


SUITES: dict[str, tuple[str, Callable[[], list[Cell]]]] = {
    "agcnn_t3": ("AGCNN Table 3: Kim CNN and AGCNN, rand/static/non-static, on MR, Subj, SST-1, SST-2, TREC",
                 _agcnn_t3),
    "matton_sst5": ("Matton: word-level Transformer on SST-5, cls / max / decoder pooling", _matton_sst5),
    "lama_imdb": ("LAMA Table 3: LAMA, LAMA + Ctx and CNN on IMDB", _lama_imdb),
    "act_mini": ("ACT vs Transformer on the MINI AG News / DBpedia sets (not the benchmarks)", _act_mini),
    "act_ablation": ("ACT Table 3: ablations, dev accuracy on ag_news_mini", _act_ablation),
    "hcan_imdb": ("HCAN vs CAN on IMDB", _hcan_imdb),
    "smoke": ("two tiny models on TREC, 1 epoch: a pipeline check, not a reproduction", _smoke),
}
DEFAULT_SUITES = tuple(s for s in SUITES if s != "smoke")


def all_cells(suites: Iterable[str] | None = None) -> list[Cell]:
    names = list(DEFAULT_SUITES if suites is None else suites)
    unknown = [s for s in names if s not in SUITES]
    if unknown:
        raise ValueError(f"unknown suite(s) {unknown}; known: {', '.join(SUITES)}")
    cells: list[Cell] = []
    for s in names:
        cells += SUITES[s][1]()
    return cells


def select_cells(suites: Iterable[str] | None = None, *, data: Iterable[str] | None = None,
                 models: Iterable[str] | None = None, only: Iterable[str] | None = None) -> list[Cell]:
    """Cells of the suites, kept when their data set is in `data`, their model in `models`, and their key
    matches one of the `only` glob patterns (e.g. "agcnn_t3/cnn-non-static/*")."""
    cells = all_cells(suites)
    if data:
        data = set(data)
        cells = [c for c in cells if c.data in data]
    if models:
        models = set(models)
        cells = [c for c in cells if c.model in models]
    if only:
        pats = list(only)
        cells = [c for c in cells if any(fnmatch.fnmatchcase(c.key, p) for p in pats)]
    return cells


# ---------------------------------------------------------------- results file


def load_results(path: str | Path) -> dict[str, Any]:
    """The results file, or an empty one when it does not exist. A corrupt file is a ValueError."""
    path = Path(path)
    if not path.exists():
        return {"version": RESULTS_VERSION, "cells": {}, "sessions": []}
    try:
        res = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: cannot read the results file: {e}") from None
    if not isinstance(res, dict) or not isinstance(res.get("cells"), dict):
        raise ValueError(f"{path}: not a textcls results file (no 'cells' object)")
    res.setdefault("sessions", [])
    return res


@contextlib.contextmanager
def _locked(path: Path):
    """Hold an exclusive lock beside `path` (POSIX; elsewhere no lock), so reproduce runs can share a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: one process at a time, as before
        yield
        return
    with open(path.with_name(f".{path.name}.lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _update(out: Path, md: Path, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Re-read `out` under the lock, apply `change`, write it and the Markdown: runs of other processes
    writing the same file meanwhile are kept."""
    with _locked(out):
        results = load_results(out)
        change(results)
        save_results(results, out)
        write_markdown(results, md)
    return results


def save_results(results: dict[str, Any], path: str | Path) -> None:
    atomic_write(Path(path), json.dumps(results, indent=1, sort_keys=False) + "\n")


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else []


def done_seeds(entry: dict[str, Any] | None, signature: dict[str, Any]) -> set[int]:
    if not entry:
        return set()
    return {r["seed"] for r in entry.get("runs", []) if r.get("signature") == signature}


# ---------------------------------------------------------------- running


def run_cell(cell: Cell, seed: int, *, epochs: int, limit: int | None = None, data_root=None,
             callbacks: Sequence[Callable] = (), stop_event=None) -> dict[str, Any]:
    """Train one cell once (no checkpoint written) and return the run record."""
    from .pipeline import train_from_spec

    t0 = time.perf_counter()
    load0 = _loadavg()
    res = train_from_spec(cell.data, cell.model, preset=cell.preset, variant=cell.variant,
                          overrides=dict(cell.overrides), embeddings=cell.embeddings, epochs=epochs, out=None,
                          callbacks=callbacks, stop_event=stop_event, data_root=data_root, limit=limit,
                          tokenizer_overrides=dict(cell.tokenizer) or None, train_overrides=dict(cell.train),
                          extra_vocab=cell.extra_vocab, seed=seed)
    h = res.history
    m = res.metrics
    if cell.metric_split not in m:
        raise RuntimeError(f"{cell.key}: no {cell.metric_split} metrics (stopped: {h.stopped_reason})")
    per_epoch = [e["seconds"] for e in h.epochs]
    return {
        "seed": seed,
        "accuracy": m[cell.metric_split]["accuracy"],
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
    }


def reproduce(cells: Sequence[Cell], *, out: str | Path = DEFAULT_OUT, markdown: str | Path | None = None,
              runs: int | None = None, epochs: int | None = None, limit: int | None = None, seed: int = 0,
              data_root=None, force: bool = False, dry_run: bool = False,
              log: Callable[[str], None] = print, callbacks: Sequence[Callable] = (),
              command: str = "") -> dict[str, Any]:
    """Run the cells (skipping runs already in `out`), saving `out` and the Markdown after every run.

    runs/epochs override every cell's own; limit samples at most `limit` examples per split (quick runs).
    Returns the results dict (also written to `out`)."""
    for name, v in (("runs", runs), ("epochs", epochs), ("limit", limit)):
        if v is not None and (isinstance(v, bool) or int(v) < 1):
            raise ValueError(f"{name} must be >= 1, got {v}")
    out = Path(out)
    md = Path(markdown) if markdown is not None else out.with_suffix(".md")
    results = load_results(out)
    session = {"started": _dt.datetime.now().isoformat(timespec="seconds"), "command": command,
               "loadavg_start": _loadavg(), "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
               "torch": torch.__version__, "ran": 0, "skipped": 0, "failed": []}
    plan = []
    for cell in cells:
        e = epochs or cell.epochs
        sig = cell.signature(e, limit)
        want = list(range(seed, seed + (runs or cell.runs)))
        have = set() if force else done_seeds(results["cells"].get(cell.key), sig)
        todo = [s for s in want if s not in have]
        session["skipped"] += len(want) - len(todo)
        plan += [(cell, s, e, sig) for s in todo]
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

    results = _update(out, md, put_session)
    for i, (cell, s, e, sig) in enumerate(plan, 1):
        log(f"[{i}/{len(plan)}] {cell.key} seed {s}: {cell.model} {e} epoch(s) on {cell.data}"
            + (f" (limit {limit})" if limit else ""))
        try:
            record = run_cell(cell, s, epochs=e, limit=limit, data_root=data_root, callbacks=callbacks)
        except KeyboardInterrupt:
            session["interrupted"] = True
            break
        except Exception as ex:  # noqa: BLE001 - one failing cell must not lose the others; it is recorded
            msg = f"{cell.key} seed {s}: {type(ex).__name__}: {' '.join(str(ex).split())}"
            log(f"  FAILED {msg}")
            session["failed"].append(msg)
            results = _update(out, md, put_session)
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

        results = _update(out, md, put_run)
        log(f"  {cell.metric_split} accuracy {100 * record['accuracy']:.1f} % "
            f"(paper {cell.paper if cell.paper is not None else '-'}), {record['epochs_run']} epoch(s), "
            f"{record['seconds']:.0f} s, load {record['loadavg_end'][:1]}")
    session["finished"] = _dt.datetime.now().isoformat(timespec="seconds")
    session["loadavg_end"] = _loadavg()
    results = _update(out, md, put_session)
    return results


# ---------------------------------------------------------------- summaries and Markdown


def summarize(entry: dict[str, Any]) -> dict[str, Any]:
    """Mean and spread (in %) of a cell's runs; with one run the binomial s.e. on its evaluation split."""
    cell, runs = entry["cell"], entry.get("runs", [])
    accs = [100 * r["accuracy"] for r in runs]
    if not accs:
        return {"n_runs": 0, "mean": None, "sd": None, "se": None}
    mean = statistics.fmean(accs)
    sd = statistics.stdev(accs) if len(accs) > 1 else None
    n_eval = runs[-1].get("n", {}).get(cell.get("metric_split", "test"))
    se = 100 * math.sqrt(mean / 100 * (1 - mean / 100) / n_eval) if n_eval else None
    paper = cell.get("paper")
    return {"n_runs": len(accs), "mean": mean, "sd": sd, "se": se, "n_eval": n_eval,
            "delta": None if paper is None else mean - paper, "seeds": [r["seed"] for r in runs]}


def gap_line(entry: dict[str, Any]) -> str:
    """One line: why ours differs from the paper's figure."""
    cell, runs = entry["cell"], entry.get("runs", [])
    parts = list(cell.get("gaps", []))
    if runs:
        sig = runs[-1].get("signature", {})
        ep = sig.get("epochs")
        ran = sorted({r.get("epochs_run") for r in runs})
        stopped = "" if ran == [ep] else f", stopped early after {'/'.join(str(x) for x in ran)}"
        parts.append(f"{ep} CPU epoch(s){stopped} (paper: GPU training to convergence)")
        if sig.get("limit"):
            parts.append(f"--limit {sig['limit']}: a sample of at most {sig['limit']} texts per split")
        if len(runs) < cell.get("runs", 1):
            parts.append(f"{len(runs)} run(s) (paper: mean of {cell['runs']})")
        if any(r.get("diverged") for r in runs):
            parts.append("a run diverged")
    s = summarize(entry)
    if s["n_runs"] == 1 and s["se"] is not None:
        parts.append(f"one run: +-{s['se']:.1f} (binomial s.e. on {s['n_eval']} texts)")
    return "; ".join(parts)


def _fmt(x: float | None, nd: int = 1, signed: bool = False) -> str:
    if x is None:
        return "—"
    return f"{x:+.{nd}f}" if signed else f"{x:.{nd}f}"


def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def table_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One flat row per cell that has runs, in suite order (for the Benchmarks page and the Markdown)."""
    suite_rank = {s: i for i, s in enumerate(SUITES)}
    entries = [e for e in results.get("cells", {}).values() if e.get("runs") and e.get("cell")]
    entries.sort(key=lambda e: (suite_rank.get(e["cell"]["suite"], 99), e["cell"].get("order", 0)))
    rows = []
    for e in entries:
        c, s = e["cell"], summarize(e)
        spr = (f"sd {s['sd']:.1f} ({s['n_runs']} runs)" if s["sd"] is not None
               else f"1 run, s.e. {s['se']:.1f}" if s["se"] is not None else "1 run")
        last = e["runs"][-1]
        rows.append({
            "suite": c["suite"], "table": c["table"], "key": c["key"], "setting": c["setting"], "data": c["data"],
            "column": c.get("column", ""), "metric": c.get("metric_split", "test"),
            "ours": s["mean"], "spread": spr, "sd": s["sd"], "se": s["se"], "runs": s["n_runs"],
            "paper": c.get("paper"), "paper_note": c.get("paper_note", ""), "delta": s["delta"],
            "epochs": last.get("signature", {}).get("epochs"), "epochs_run": last.get("epochs_run"),
            "seconds_per_epoch": last.get("seconds_per_epoch"), "loadavg": (last.get("loadavg_end") or [None])[0],
            "limit": last.get("signature", {}).get("limit"), "gap": gap_line(e)})
    return rows


# Issue 7's accuracy target: within TARGET_POINTS of the papers' non-static CNN / AGCNN numbers on these data sets.
TARGET_POINTS = 2.0
TARGET_SETTINGS = ("CNN-non-static", "AGCNN-SELU-non-static", "AGCNN-NLReLU-non-static")
TARGET_DATA = {"SST-2": ("sst2_phrases", "sst2"), "Subj": ("subj",), "TREC": ("trec",)}


def accuracy_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (setting, paper column) of the accuracy target: our best cell (SST-2: trained on phrases, as
    the paper, or on sentences, whichever is higher), the paper's figure, and whether it is within the target."""
    rows = table_rows(results)
    out = []
    for setting in TARGET_SETTINGS:
        for column, datas in TARGET_DATA.items():
            cand = [r for r in rows if r["suite"] == "agcnn_t3" and r["setting"] == setting and r["data"] in datas
                    and r["ours"] is not None]
            paper = AGCNN_TABLE3[setting][AGCNN_COLUMNS.index(column)]
            best = max(cand, key=lambda r: r["ours"]) if cand else None
            delta = None if best is None else best["ours"] - paper
            out.append({"setting": setting, "column": column, "data": best["data"] if best else None,
                        "ours": best["ours"] if best else None, "runs": best["runs"] if best else 0,
                        "paper": paper, "delta": delta,
                        "met": None if delta is None else delta >= -TARGET_POINTS})
    return out


def _targets_markdown(results: dict[str, Any]) -> list[str]:
    t = accuracy_targets(results)
    ran = [r for r in t if r["met"] is not None]
    lines = [f"## Target: within {TARGET_POINTS:g} points of the papers' non-static CNN / AGCNN", "",
             f"Met in **{sum(r['met'] for r in ran)} of {len(ran)}** measured cells ({len(t) - len(ran)} not run). "
             "SST-2 takes the better of training on phrases (the papers' protocol) and on sentences.", "",
             "| setting | paper column | our data | ours | paper | Δ | met |", "|---|---|---|---:|---:|---:|---|"]
    for r in t:
        met = "—" if r["met"] is None else ("yes" if r["met"] else "no")
        lines.append(f"| {r['setting']} | {r['column']} | {r['data'] or '—'} | {_fmt(r['ours'])} | {r['paper']:g} | "
                     f"{_fmt(r['delta'], signed=True)} | {met} |")
    lines.append("")
    return lines


def render_markdown(results: dict[str, Any]) -> str:
    rows = table_rows(results)
    sessions = results.get("sessions", [])
    loads = [x for ss in sessions for x in (ss.get("loadavg_start", [None])[:1] + ss.get("loadavg_end", [None])[:1])
             if x is not None]
    cpus = next((ss.get("cpu_count") for ss in sessions if ss.get("cpu_count")), None)
    lines = ["# Reproducing the papers' tables on this machine", "",
             "Generated by `python -m textcls reproduce` from `results.json` (do not edit by hand). Accuracy in % "
             "on the test split unless the table says dev; *ours* is the mean over runs (seeds 0, 1, ...), "
             "*spread* the sample standard deviation over runs, or with one run the binomial standard error of "
             "the accuracy. Δ = ours - paper, in points.", ""]
    lines.append("**What differs from the papers everywhere:** 50-d GloVe 6B vectors (the papers: 300-d word2vec / "
                 "GloVe), a few epochs on shared CPU cores (the papers: GPUs, training to convergence), and one "
                 "fixed train/dev/test split per data set. AG News and DBpedia are represented by *mini* sets "
                 "(ag_news_mini, dbpedia_mini) that are NOT the benchmarks. Each row says in one line what else "
                 "differs.")
    lines.append("")
    if loads and cpus:
        mx = max(loads)
        distorted = mx > 0.75 * cpus
        lines.append(f"Machine: {cpus} CPU core(s), torch threads "
                     f"{sorted({ss['torch_threads'] for ss in sessions if ss.get('torch_threads')})}, load average during the runs "
                     f"{min(loads):.1f}-{mx:.1f}."
                     + (" **The seconds per epoch are distorted by that load** (other jobs shared the cores); "
                        "they are not speed measurements - see `python -m textcls bench` on a quiet machine."
                        if distorted else ""))
        lines.append("")
    if results.get("updated"):
        lines.append(f"Last updated {results['updated']}.")
        lines.append("")
    if any(r["suite"] == "agcnn_t3" for r in rows):
        lines += _targets_markdown(results)
    by_table: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_table.setdefault(r["table"], []).append(r)
    for table, trs in by_table.items():
        lines.append(f"## {table}")
        lines.append("")
        suite = trs[0]["suite"]
        if suite in SUITES:
            lines.append(f"Suite `{suite}`: {SUITES[suite][0]}.")
            lines.append("")
        lines.append("| setting | data | ours | spread | paper | Δ | epochs (s/epoch) | why the numbers differ |")
        lines.append("|---|---|---:|---|---:|---:|---|---|")
        for r in trs:
            paper = "—" if r["paper"] is None else f"{r['paper']:.2f}".rstrip("0").rstrip(".")
            if r["paper_note"]:
                paper += f" ({r['paper_note']})"
            data = r["data"] + (f" ({r['column']})" if r["column"] and r["column"] != r["data"] else "")
            spe = "" if r["seconds_per_epoch"] is None else f" ({r['seconds_per_epoch']:.0f} s)"
            ep = f"{r['epochs_run']}/{r['epochs']}{spe}"
            lines.append(f"| {_md(r['setting'])} | {_md(data)} | {_fmt(r['ours'])} | {_md(r['spread'])} | "
                         f"{_md(paper)} | {_fmt(r['delta'], signed=True)} | {ep} | {_md(r['gap'])} |")
        lines.append("")
    # what is still missing, per suite
    lines.append("## Not run yet")
    lines.append("")
    have = {r["key"] for r in rows}
    any_missing = False
    for name in DEFAULT_SUITES:
        missing = [c for c in SUITES[name][1]() if c.key not in have]
        if missing:
            any_missing = True
            total = len(SUITES[name][1]())
            lines.append(f"- `{name}`: {len(missing)} of {total} cells "
                         f"(`python -m textcls reproduce --suite {name}`)")
    if not any_missing:
        lines.append("- nothing: every cell of every suite has at least one run.")
    lines.append("")
    return "\n".join(lines)


def write_markdown(results: dict[str, Any], path: str | Path) -> Path:
    path = Path(path)
    atomic_write(path, render_markdown(results))
    return path


# ---------------------------------------------------------------- command line (wired in cli.py)


def _csv(raw: str | None) -> list[str] | None:
    if raw is None:
        return None
    items = [x.strip() for x in raw.split(",") if x.strip()]
    return items or None


def add_arguments(p) -> None:
    p.add_argument("--suite", default=None,
                   help=f"comma-separated suites (default: all but smoke): {', '.join(SUITES)}")
    p.add_argument("--runs", type=int, default=None, help="runs per cell (default: as many as the paper averaged)")
    p.add_argument("--epochs", type=int, default=None, help="epochs per run (default: each suite's)")
    p.add_argument("--limit", type=int, default=None, help="at most N texts per split (quick runs)")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"results JSON (default {DEFAULT_OUT}); the Markdown "
                                                      "table goes beside it with the suffix .md")
    p.add_argument("--markdown", default=None, help="Markdown file (default: OUT with .md)")
    p.add_argument("--data", default=None, help="comma-separated data sets to keep (e.g. trec,sst2)")
    p.add_argument("--model", default=None, help="comma-separated models to keep (e.g. kim_cnn,agcnn)")
    p.add_argument("--only", default=None, help="comma-separated glob patterns on cell keys "
                                                "(e.g. 'agcnn_t3/cnn-non-static/*')")
    p.add_argument("--seed", type=int, default=0, help="first seed (runs use seed, seed+1, ...)")
    p.add_argument("--data-root", default=None, help="folder of the bundled data sets")
    p.add_argument("--force", action="store_true", help="re-run cells already in the results file")
    p.add_argument("--list", action="store_true", help="list the selected cells and exit")
    p.add_argument("--dry-run", action="store_true", help="say what would run and exit")
    p.add_argument("--report", action="store_true", help="only rebuild the Markdown from the results file")


def cli_job(args) -> Callable[[], int]:
    """Check the `textcls reproduce` arguments (ValueError on bad input) and return the job that runs it."""
    out = Path(args.out)
    md = Path(args.markdown) if args.markdown else out.with_suffix(".md")
    for name in ("runs", "epochs", "limit"):
        v = getattr(args, name)
        if v is not None and v < 1:
            raise ValueError(f"--{name} must be >= 1, got {v}")
    if out.is_dir() or md.is_dir():
        raise ValueError(f"--out {out} / --markdown {md} must be files, not folders")
    results = load_results(out)                                 # a corrupt file is an error before any run
    n_sessions = len(results.get("sessions", []))
    if args.report:
        def report() -> int:
            print(f"wrote {write_markdown(results, md)}")
            return 0
        return report
    cells = select_cells(_csv(args.suite), data=_csv(args.data), models=_csv(args.model), only=_csv(args.only))
    if not cells:
        raise ValueError("no cell matches the selection (see --list)")
    if args.list:
        def listing() -> int:
            for c in cells:
                paper = "-" if c.paper is None else f"{c.paper}"
                print(f"{c.key:<48} {c.model:<12} runs {c.runs}  epochs {c.epochs:<3} paper {paper}")
            return 0
        return listing

    def job() -> int:
        command = "python -m textcls reproduce " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else ""
        res = reproduce(cells, out=out, markdown=md, runs=args.runs, epochs=args.epochs, limit=args.limit,
                        seed=args.seed, data_root=args.data_root, force=args.force, dry_run=args.dry_run,
                        log=lambda m: print(m, file=sys.stderr, flush=True), command=command)
        if args.dry_run:
            return 0
        keys = {c.key for c in cells}
        for r in table_rows(res):
            if r["key"] in keys:
                paper = "-" if r["paper"] is None else f"{r['paper']:.1f}"
                print(f"{r['key']:<48} ours {_fmt(r['ours']):>5} ({r['spread']})  paper {paper:>5}  "
                      f"delta {_fmt(r['delta'], signed=True)}")
        print(f"wrote {out} and {md}")
        new_session = len(res.get("sessions", [])) > n_sessions
        failed = res["sessions"][-1].get("failed", []) if new_session else []
        return 1 if failed else 0
    return job
