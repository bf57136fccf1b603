"""Render the context-mixing results (`textcls faithfulness --json` files, one per checkpoint) as the table of
docs/faithfulness.md's section "Context mixing, plausibility, sanity, cost", replaced between its markers.

    python -m textcls faithfulness checkpoints/NAME --split test --limit N --methods M --no-attention-tests \
        --no-flip-orders --sanity S --json > results/NAME.jsonl
    python scripts/context_mixing_table.py results/*.jsonl [--doc docs/faithfulness.md]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- context-mixing:begin -->", "<!-- context-mixing:end -->"
sys.path.insert(0, str(REPO))
from textcls.interpret.methods import labels  # noqa: E402  (the registry's names, no torch)

LABELS = labels()


def _f(x, fmt=".3f"):
    return "-" if x is None else format(x, fmt)


def _ci(r, key):
    lo, hi = r.get(key + "_ci") or (None, None)
    return f"{_f(r.get(key))} [{_f(lo)}, {_f(hi)}]"


def render(files: list[str]) -> str:
    out = ["| checkpoint | texts | explanation | AOPC comp. [95% CI] | AOPC suff. [95% CI] | tau vs LOO | AUPRC | "
           "token F1 | rand. rho | s / text |", "|---|---:|---|---|---|---:|---:|---:|---:|---:|"]
    notes, best = [], {}
    for f in files:
        rows = [json.loads(x) for x in Path(f).read_text().splitlines() if x.strip()]
        name = Path(rows[0]["checkpoint"]).name
        for r in rows:
            if r["kind"] != "method":
                notes += [f"{name}: {n}" for n in r.get("notes", []) if n.startswith("sanity")]
                continue
            key = (name, r["method"])                 # a checkpoint in several files (the costly methods on
            if key not in best or r["n"] > best[key]["n"]:   # fewer texts): each method's run over the most texts
                best[key] = r
    for (name, method), r in best.items():
        flag = " (!)" if r.get("sanity_flag") else ""
        out.append(f"| {name} | {r['n']} | {LABELS.get(method, method)} | "
                   f"{_ci(r, 'aopc_comprehensiveness')} | {_ci(r, 'aopc_sufficiency')} | "
                   f"{_f(r.get('kendall_tau_ref'))} | {_f(r.get('plausibility_auprc'))} | "
                   f"{_f(r.get('plausibility_token_f1'))} | {_f(r.get('sanity_rho'))}{flag} | "
                   f"{_f(r.get('seconds_per_text'), '.4f')} |")
    return "\n".join(out) + "\n\n" + "\n".join(f"- {n}" for n in notes) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--doc", default=str(REPO / "docs" / "faithfulness.md"))
    args = ap.parse_args(argv)
    doc = Path(args.doc)
    text = doc.read_text()
    if BEGIN not in text:
        raise SystemExit(f"{doc} has no {BEGIN} marker")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    doc.write_text(head + BEGIN + "\n" + render(args.files) + END + tail)
    print(f"wrote the table into {doc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
