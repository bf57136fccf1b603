"""The accuracy tables of README.md and docs/checkpoints.md state what the shipped checkpoints record."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from textcls.checkpoint import list_checkpoints

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("doc", ["README.md", "docs/checkpoints.md"])
def test_accuracy_tables_match_the_checkpoints(doc):
    acc = {i.name: i.test_accuracy for i in list_checkpoints(REPO / "checkpoints")}
    lines = (REPO / doc).read_text(encoding="utf-8").splitlines()
    head = next(i for i, x in enumerate(lines) if x.startswith("|") and "| act | agcnn |" in x)
    models = [c.strip() for c in lines[head].strip("|").split("|")][1:]
    rows = 0
    for line in lines[head + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        data = re.match(r"\w+", cells[0]).group(0)
        for model, cell in zip(models, cells[1:]):
            assert float(cell) == pytest.approx(100 * acc[f"{model}-{data}"], abs=0.051), (doc, model, data)
        rows += 1
    assert rows == 2
