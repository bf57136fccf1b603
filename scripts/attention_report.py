"""How much the shipped checkpoints' attention singles out words: `python scripts/attention_report.py [--n 300]
[--out docs/attention.md]`.

For every shipped checkpoint with an attention view (ACT-T4, TR-ATT, HCAN-F4, LAMA-HT), the first --n test texts
of the data set it was trained on go through the model, the view is built exactly as Inspect draws it, and the
concentration its caption states (textcls.interpret.concentration: normalised entropy, 1 = uniform; peak = largest weight
over the uniform weight; both the median over heads or query rows where the view has several) is collected.
The table gives the median over texts, and the share of texts whose verdict is "nearly uniform". HCAN's sentence
attention is reported over multi-sentence texts only (a one-sentence text's sentence weight is 1 by definition).

`--before DIR` also measures the checkpoints of the same names in DIR (e.g. the ones a retraining replaced, taken
from git) and adds their entropy and peak as "before" columns; `--models lama,hcan-trec` measures only those
models' checkpoints and carries the other rows of the existing --out file over unchanged (with their own before
columns), so a retraining of a few checkpoints does not need the whole report rerun.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from textcls import viz  # noqa: E402
from textcls.checkpoint import list_checkpoints, load_checkpoint  # noqa: E402
from textcls.interpret.concentration import BANDS  # noqa: E402
from textcls.data.datasets import load_data  # noqa: E402

VIEWS = {"act": ("ACT-T4",), "transformer": ("TR-ATT", "ACT-T4"), "hcan": ("HCAN-F4",), "can": ("HCAN-F4",),
         "lama": ("LAMA-HT",)}


def report(root: Path, n: int, models: set[str] | None = None) -> tuple[list[dict], float]:
    rows, t0 = [], time.perf_counter()
    for info in list_checkpoints(root):
        views = VIEWS.get(info.model)
        if views is None or (models and info.model not in models and info.name not in models):
            continue
        pred = load_checkpoint(info.path)
        try:
            texts = load_data(info.data).splits["test"].texts[:n]
        except Exception as e:  # noqa: BLE001 - a checkpoint whose data is not here is reported, not fatal
            print(f"{info.name}: skipped ({e})", file=sys.stderr)
            continue
        specs = {s.name: s for s in pred.model.map_specs()}
        found: dict[tuple[str, str], list[dict]] = {}
        for r in pred.predict(list(texts), return_maps=True):
            if len(r.tokens) < 2:
                continue
            vi = viz.ViewInput(info.model, specs, r.maps, list(r.tokens), r.sentences, title=info.name,
                               label=r.label, config={})
            for view in views:
                if view not in {v.id for v in viz.views_for(info.model, specs)}:
                    continue
                for f in viz.build_view(view, vi):
                    c = f.meta.get("concentration")
                    if c is None or f.key.endswith("tr-grid") or f.key.endswith("lama-mean"):
                        continue
                    if "sentences" in f.key and c["n"] < 2:
                        continue                      # one sentence: its weight is 1 by definition
                    found.setdefault((view, f.key.split("_", 1)[1].split("_l")[0]), []).append(c)
        for (view, what), cs in found.items():
            ent = np.array([c["normalised_entropy"] for c in cs])
            rows.append({"checkpoint": info.name, "view": view, "map": what, "texts": len(cs),
                         "entropy": float(np.median(ent)), "peak": float(np.median([c["peak"] for c in cs])),
                         "uniform": float((ent >= BANDS[0]).mean())})
    return rows, time.perf_counter() - t0


def add_before(rows: list[dict], before: list[dict]) -> None:
    """Attach the before-run's entropy and peak to the rows of the same checkpoint, view and map."""
    old = {(r["checkpoint"], r["view"], r["map"]): r for r in before}
    for r in rows:
        b = old.get((r["checkpoint"], r["view"], r["map"]))
        if b is not None:
            r["before_entropy"], r["before_peak"] = b["entropy"], b["peak"]


def carried_rows(path: Path, measured: set[str]) -> list[dict]:
    """Rows of an existing report for checkpoints not measured now (the `--models` case), parsed back."""
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 7 or not cells[3].isdigit() or cells[0] in measured:
            continue
        r = {"checkpoint": cells[0], "view": cells[1], "map": cells[2], "texts": int(cells[3]),
             "entropy": float(cells[4]), "peak": float(cells[5]), "uniform": float(cells[6].rstrip(" %")) / 100}
        if len(cells) >= 9 and cells[7] not in ("-", ""):
            r["before_entropy"], r["before_peak"] = float(cells[7]), float(cells[8])
        rows.append(r)
    return rows


def markdown(rows: list[dict], n: int, seconds: float, before: str | None = None, models: str | None = None
             ) -> str:
    how = (f"`python scripts/attention_report.py --n {n}" + (f" --models {models}" if models else "") +
           (" --before DIR`, DIR holding the checkpoints they replaced" if before else "`"))
    if models:
        how += f"; the rows not in --models were carried over from the previous run, with their own text counts"
    lines = ["# How much the shipped checkpoints' attention singles out words", "",
             f"Regenerate: {how} ({seconds:.0f} s here). The first {n} test "
             "texts of each checkpoint's data set; each view built as Inspect draws it. Normalised entropy: 1 = "
             "uniform (median over texts of the per-text median over heads / query rows); peak: largest weight / "
             f"uniform weight; 'nearly uniform': texts whose verdict says so (normalised entropy >= {BANDS[0]}). "
             "Before: the same measure on the checkpoint this one replaced (HCAN's and LAMA's were retrained "
             "with the reference code's target attention / score normalisation; see textcls/models/hcan.py and "
             "lama.py); '-' where it was not retrained.",
             "", "| checkpoint | view | map | texts | median normalised entropy | median peak | nearly uniform | "
             "before: entropy | before: peak |", "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in sorted(rows, key=lambda r: r["checkpoint"]):              # stable: views in their report order
        b = (f"{r['before_entropy']:.3f} | {r['before_peak']:.1f}" if "before_entropy" in r else "- | -")
        lines.append(f"| {r['checkpoint']} | {r['view']} | {r['map']} | {r['texts']} | {r['entropy']:.3f} | "
                     f"{r['peak']:.1f} | {100 * r['uniform']:.0f} % | {b} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=300, help="test texts per checkpoint (default 300)")
    ap.add_argument("--checkpoints", default=str(REPO / "checkpoints"), help="folder of checkpoints")
    ap.add_argument("--out", default=str(REPO / "docs" / "attention.md"), help="markdown file to write ('-': print)")
    ap.add_argument("--before", default=None, help="folder of the checkpoints these replaced (adds before columns)")
    ap.add_argument("--models", default=None, help="comma-separated models or checkpoint names to measure; the "
                    "other rows of --out are carried over")
    args = ap.parse_args(argv)
    models = set(args.models.split(",")) if args.models else None
    rows, seconds = report(Path(args.checkpoints), args.n, models)
    if args.before:
        before, more = report(Path(args.before), args.n, models)
        add_before(rows, before)
        seconds += more
    if models and args.out != "-":
        rows += carried_rows(Path(args.out), {r["checkpoint"] for r in rows})
    text = markdown(rows, args.n, seconds, args.before, args.models)
    if args.out == "-":
        print(text)
    else:
        Path(args.out).write_text(text, encoding="utf-8")
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
