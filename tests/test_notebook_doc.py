"""docs/notebook.md is code a researcher copies into a notebook: every ```python block of it runs, in order, as
one script, from the repository root (its paths are a clone's)."""
from __future__ import annotations

import os
import re

from app_pages import REPO


def test_every_code_block_of_the_notebook_page_runs(monkeypatch, tmp_path, capsys):
    doc = (REPO / "docs" / "notebook.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", doc, re.S)
    assert len(blocks) >= 4
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("TEXTCLS_HOME", str(tmp_path))
    monkeypatch.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "1"))
    scope: dict = {}
    exec(compile("\n".join(blocks), "docs/notebook.md", "exec"), scope)      # noqa: S102 - our own document
    out = capsys.readouterr().out
    assert scope["pred"].label in ("negative", "positive")
    assert scope["item"].table is not None and len(scope["item"].table) > 0
    assert "ACT-FM" in scope["views"] and scope["maps"]
    assert {"attention", "grad_x_input", "random"} <= set(scope["table"]["method"])
    assert 0.5 < scope["report"]["accuracy"] <= 1.0                         # act-sst2 on sst2's test split
    assert "accuracy" in out
