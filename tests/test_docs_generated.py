"""Docs that are generated stay generated: docs/interfaces.md is what scripts/make_interfaces.py writes from the
code (module docstrings, `__all__`, signatures), so a renamed function or a new module cannot leave it stale."""
from __future__ import annotations

import subprocess
import sys

from app_pages import REPO


def test_interfaces_page_is_what_the_code_says():
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "make_interfaces.py"), "--check"], cwd=REPO,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
