"""Faithfulness of every shipped checkpoint's explanations over the whole test split of its data set (default sst2)
-> docs/faithfulness.md (sst2) or docs/faithfulness_<data>.md (`--data semeval2010`: the relation checkpoints).

    .venv/bin/python scripts/faithfulness_table.py [--data semeval2010] [--limit N] [--models act,lama]
        [--data-root ../shared/data] [--light minilm-sst2]

Runs `python -m textcls faithfulness` (the batched data-set path, textcls/interpret/batched.py) once per checkpoint
in a fresh process, twice: the speed benchmark's first set (own attention + random + leave-one-out + the
permutation (30 permutations) and uniform-attention tests) and then everything in the table (the same plus
integrated gradients with its convergence check and gradient x input). Seconds and peak memory of each run go
into the table. Per method: AOPC comprehensiveness / sufficiency (ERASER; removal = deletion) with a bootstrap
95% interval over texts, Kendall tau with leave-one-out, the erasure flip test; per model the permutation and
uniform-attention tests (definitions: textcls/interpret/faithfulness.py). The JSON beside --out keeps every number.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from textcls import list_checkpoints  # noqa: E402

FAST = "attention,random,leave_one_out"
ALL = "attention,integrated_gradients,grad_x_input,leave_one_out,random"
LABELS = {"attention": "own attention", "integrated_gradients": "integrated gradients",
          "grad_x_input": "gradient x input", "leave_one_out": "leave-one-out", "random": "random ranking"}


def run_cli(path: Path, data: str, methods: str, limit: int, data_root: str | None, *extra: str) -> list[dict]:
    rel = os.path.relpath(path, REPO)            # the JSON names the folder relative to the repository
    cmd = [sys.executable, "-m", "textcls", "faithfulness", rel, "--data", data, "--split", "test",
           "--methods", methods, "--json", *extra]
    if limit:
        cmd += ["--limit", str(limit)]
    if data_root:
        cmd += ["--data-root", data_root]
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run(cmd, cwd=REPO, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=0, help="first N test sentences (0 = all)")
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--data", default="sst2", help="the shipped checkpoints of this data set (default sst2)")
    ap.add_argument("--out", default=None, help="default docs/faithfulness.md (sst2), docs/faithfulness_DATA.md")
    ap.add_argument("--models", default=None,
                    help="comma-separated models or checkpoint names (e.g. minilm-sst2) to (re-)measure; the other rows are "
                         "kept from the JSON beside --out")
    ap.add_argument("--light", default="",
                    help="comma-separated checkpoint names measured without the erasure-flip orders and the "
                         "attention permutation / uniform tests (`faithfulness --fast`, and `--no-flip-orders "
                         "--no-attention-tests` for the full set): for a pretrained encoder those take a full "
                         "split from minutes to an hour; their columns read '-'")
    args = ap.parse_args(argv)
    light = set(filter(None, args.light.split(",")))
    args.out = args.out or str(REPO / "docs" / ("faithfulness.md" if args.data == "sst2" else
                                                f"faithfulness_{args.data}.md"))
    only = set(args.models.split(",")) if args.models else None
    stored = Path(args.out).with_suffix(".json")
    kept = json.loads(stored.read_text()) if only and stored.is_file() else []
    rows = []
    for info in list_checkpoints(REPO / "checkpoints"):
        if info.data != args.data:
            continue
        if only is not None and info.model not in only and info.name not in only:
            rows += [r for r in kept if r["checkpoint"] == info.name]
            continue
        lite = info.name in light
        fast = run_cli(info.path, args.data, FAST, args.limit, args.data_root, *(["--fast"] if lite else []))
        full = run_cli(info.path, args.data, ALL, args.limit, args.data_root,
                       *(["--no-flip-orders", "--no-attention-tests"] if lite else []))
        summary = full[-1]
        rows.append({"checkpoint": info.name, "created": info.created, "n": summary["n_texts"],
                     "methods": {r["method"]: r for r in full[:-1]}, "summary": summary,
                     "fast_summary": fast[-1]})
        print(f"{info.name}: {fast[-1]['seconds']:.1f} s (attention, random, LOO, attention tests), "
              f"{summary['seconds']:.1f} s (all), {summary.get('max_rss_mb')} MB", file=sys.stderr, flush=True)
    Path(args.out).with_suffix(".json").write_text(json.dumps(rows, indent=1, default=str))
    out = Path(args.out)
    kept_section = ""                   # the context-mixing section (scripts/context_mixing_table.py) stays
    if out.is_file() and "<!-- context-mixing:begin -->" in out.read_text():
        old = out.read_text()
        kept_section = "\n" + old[old.index("## Context mixing"):] if "## Context mixing" in old else ""
    out.write_text(render(rows, args.data) + kept_section)
    print(render(rows, args.data))
    return 0


def _f(v, nd=3):
    return "-" if v is None else f"{v:.{nd}f}" if isinstance(v, (int, float)) else str(v)


def _ci(row, key):
    lo, hi = row.get(key + "_ci") or (None, None)
    return f"{_f(row.get(key))} [{_f(lo)}, {_f(hi)}]"


MARKERS = ("The entity tags (<e1> </e1> <e2> </e2>) are tokens of the input like the words: an explanation may rank "
           "them, and deleting one takes away the anchor the relative-position features are measured from (both "
           "shipped relation checkpoints use them).")


def render(rows, data: str = "sst2") -> str:
    n = max((r["n"] for r in rows), default=0)
    out = [f"# Faithfulness of the shipped {data} models' explanations ({data} test split)", "",
           "Raw AOPC compares methods within one model, not models: how one-text verdicts, NAOPC (which compares "
           "models) and the randomisation check are computed is in [verdicts.md](verdicts.md); the six families' "
           "NAOPC over this split is in `faithfulness_naopc.json` (`scripts/naopc_table.py`).", "",
           f"Generated by `scripts/faithfulness_table.py` over {n} test sentences (`python -m textcls faithfulness`, "
           "the batched data-set path; definitions: textcls/interpret/faithfulness.py; removal = deleting the token). A faithful "
           "explanation has higher comprehensiveness, lower sufficiency, a higher flip rate when its top token is "
           "removed and a smaller fraction removed before the decision flips; the seeded random ranking is the "
           "floor. Brackets: bootstrap 95% interval of the mean over texts (1000 resamples): two AOPCs whose "
           "intervals do not overlap differ by more than sampling noise. Kendall tau is against leave-one-out "
           "importance (so leave-one-out has none). Integrated gradients: pad baseline, 50 steps doubled per "
           "text until |delta| <= 5% of the output difference (at most 800)."
           + (" " + MARKERS if data == "semeval2010" else ""), "",
           "| checkpoint | explanation | AOPC comp. [95% CI] | AOPC suff. [95% CI] | tau vs LOO | top-token flip "
           "| fraction to flip |",
           "|---|---|---|---|---:|---:|---:|"]
    for r in rows:
        for m in ("attention", "integrated_gradients", "grad_x_input", "leave_one_out", "random"):
            row = r["methods"].get(m)
            if row is None:
                continue
            out.append(f"| {r['checkpoint']} | {LABELS[m]} | {_ci(row, 'aopc_comprehensiveness')} | "
                       f"{_ci(row, 'aopc_sufficiency')} | {_f(row.get('kendall_tau_ref'))} | "
                       f"{_f(row.get('erasure_top_flip'))} | {_f(row.get('erasure_fraction_to_flip'))} |")
    out += ["", "Kim CNN and AGCNN have no attention weights: their own explanation is the max-pool picks "
            "(textcls/interpret/attention.py) and the attention tests do not apply ('-'). Random order: tokens "
            "removed in a random order until the decision flips, one order per text (`--random-orders`, default 1: "
            "the mean over texts does the averaging), the same orders for every explanation of a model.",
            "", "Seconds: wall-clock from texts to report (loading excluded), thread policy `batch=auto`, on the machine "
            "and under the load of the run that generated this file (README.md says which); peak memory: the larger "
            "of the two runs' peak resident memory. \"(light)\": measured with `--light` (the fast set without the "
            "erasure-flip orders and the attention tests, `faithfulness --fast`): its fraction-to-flip and test "
            "columns are not measured.",
            "", "| checkpoint | texts | random order: fraction to flip | perm. median TVD | perm. flip rate "
            "| uniform TVD | uniform flip | IG converged | IG mean steps | seconds: attention + random + LOO + "
            "tests | seconds: all | peak memory (MB) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        s, fs = r["summary"], r["fast_summary"]
        ig = r["methods"].get("integrated_gradients", {})
        rnd = r["methods"].get("random", {})
        mem = max(x for x in (s.get("max_rss_mb"), fs.get("max_rss_mb"), 0) if x is not None)
        name = r["checkpoint"] + (" (light)" if s.get("flip_orders") is False else "")
        out.append(f"| {name} | {r['n']} | {_f(rnd.get('erasure_random_fraction_to_flip'))} | "
                   f"{_f(s.get('permutation_median_tvd'))} | {_f(s.get('permutation_flip_rate'))} | "
                   f"{_f(s.get('uniform_tvd'))} | {_f(s.get('uniform_flip_rate'))} | {_f(ig.get('ig_converged'))} | "
                   f"{_f(ig.get('ig_steps'), 1)} | {_f(fs.get('seconds'), 1)} | {_f(s.get('seconds'), 1)} | "
                   f"{_f(mem, 0)} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
