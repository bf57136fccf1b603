"""NAOPC (normalised AOPC, Edin et al. 2025; textcls.interpret.chance) of every shipped checkpoint's own attention
and of a random ranking over the whole test split of its data set -> docs/faithfulness_naopc.json, in the format of
docs/faithfulness.json (scripts/faithfulness_table.py), which Benchmarks reads to colour and rank models: raw AOPC's
range depends on the model, NAOPC's does not.

    .venv/bin/python scripts/naopc_table.py [--data sst2] [--limit N] [--models act,lama] [--beam 1]

Runs `python -m textcls faithfulness CKPT --methods attention,random --fast --sanity 0 --beam B --json` once per
checkpoint with attention maps, in a fresh process (about 6x the passes of the same run without NAOPC: the bounds).
With --models, the other rows are kept from the existing file.
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


def run(path: Path, data: str, limit: int, beam: int) -> list[dict]:
    cmd = [sys.executable, "-m", "textcls", "faithfulness", os.path.relpath(path, REPO), "--data", data, "--split",
           "test", "--methods", "attention,random", "--fast", "--sanity", "0", "--beam", str(beam), "--json",
           "--quiet"] + (["--limit", str(limit)] if limit else [])
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run(cmd, cwd=REPO, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def rows_of(info, lines: list[dict]) -> dict:
    summary = lines[-1]
    return {"checkpoint": info.name, "created": info.created, "n": summary["n_texts"],
            "methods": {r["method"]: r for r in lines[:-1]}, "summary": summary}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="sst2")
    ap.add_argument("--limit", type=int, default=0, help="first N test texts (0 = all)")
    ap.add_argument("--models", default=None, help="comma-separated models or checkpoint names to (re-)measure")
    ap.add_argument("--beam", type=int, default=1, help="the bounds' beam width (default 1)")
    ap.add_argument("--from-jsonl", default=None, metavar="DIR",
                    help="read NAME.jsonl files that `faithfulness --json` wrote (the command above) instead of running")
    ap.add_argument("--out", default=str(REPO / "docs" / "faithfulness_naopc.json"))
    args = ap.parse_args(argv)
    only = set(args.models.split(",")) if args.models else None
    out = Path(args.out)
    kept = json.loads(out.read_text()) if only and out.is_file() else []
    rows = []
    for info in list_checkpoints(REPO / "checkpoints"):
        if info.data != args.data or info.model.startswith("hf:"):
            continue
        if only is not None and info.model not in only and info.name not in only:
            rows += [r for r in kept if r["checkpoint"] == info.name]
            continue
        if args.from_jsonl:
            f = Path(args.from_jsonl) / f"{info.name}.jsonl"
            if not f.is_file():
                continue
            lines = [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
        else:
            lines = run(info.path, args.data, args.limit, args.beam)
        if not lines or lines[-1].get("kind") != "summary":
            continue
        rows.append(rows_of(info, lines))
        m = rows[-1]["methods"]
        print(f"{info.name}: NAOPC attention {m['attention'].get('naopc_comprehensiveness')}, random "
              f"{m['random'].get('naopc_comprehensiveness')} over {rows[-1]['n']} texts", file=sys.stderr)
    out.write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
