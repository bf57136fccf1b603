"""`textcls faithfulness` sharded over two torchrun ranks (gloo) gives the numbers one process gives: the same
chunks are scored by the same code, and rank 0 puts them back in order (textcls.interpret.sharded)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
dist = pytest.importorskip("torch.distributed", reason="torch.distributed is not built in")
pytestmark = pytest.mark.skipif(not (dist.is_available() and dist.is_gloo_available()),
                                reason="torch.distributed with the gloo backend is not available")

ARGS = ["faithfulness", str(REPO / "checkpoints/transformer-sst2"), "--split", "test", "--limit", "7", "--methods",
        "norm,alti,random,leave_one_out", "--fast", "--sanity", "0", "--chunk", "2", "--quiet", "--json"]


def _rows(cmd, tmp_path) -> list[dict]:
    env = {**os.environ, "TEXTCLS_HOME": str(tmp_path / "home"), "OMP_NUM_THREADS": "1"}
    r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    return [json.loads(x) for x in r.stdout.splitlines()]


def test_two_gloo_ranks_give_the_numbers_of_one_process(tmp_path):
    one = _rows([sys.executable, "-m", "textcls", *ARGS], tmp_path)
    two = _rows([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                 "-m", "textcls", *ARGS], tmp_path)                       # 4 chunks: rank 0 scores 0 and 2
    assert [r["kind"] for r in two] == [r["kind"] for r in one] == ["method"] * 4 + ["summary"]
    assert one[-1]["world_size"] == 1 and two[-1]["world_size"] == 2 and two[-1]["n_texts"] == 7
    timing = {"seconds", "seconds_per_text", "world_size"}
    for a, b in zip(one[:-1], two[:-1]):
        assert {k: v for k, v in a.items() if k not in timing} == {k: v for k, v in b.items() if k not in timing}
        assert a["n"] == 7 and a["aopc_comprehensiveness"] is not None
