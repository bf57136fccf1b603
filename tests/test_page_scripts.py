"""The page scripts and app.py as Streamlit reads them: app.py serves itself as an st.App (its start-up and
middleware: pages.common.warmup) and runs as the script of every page view; no page relies on Streamlit's
"magic", which .streamlit/config.toml turns off."""
import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = [ROOT / "app.py", *sorted((ROOT / "pages").rglob("*.py"))]


def _bare_expressions(body: list[ast.stmt], top: bool) -> list[str]:
    """Statements magic would draw: an expression on its own that is not a call (module level and inside
    with / if / for / while / try blocks; not inside functions or classes, where magic does not look)."""
    found = []
    for i, node in enumerate(body):
        if isinstance(node, ast.Expr) and not isinstance(node.value, (ast.Call, ast.Await, ast.Yield,
                                                                        ast.YieldFrom)):
            docstring = top and i == 0 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            if not docstring:
                found.append(f"line {node.lineno}: {ast.unparse(node)[:60]}")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for block in ("body", "orelse", "finalbody"):
            found += _bare_expressions(getattr(node, block, []) or [], False)
        for handler in getattr(node, "handlers", []) or []:
            found += _bare_expressions(handler.body, False)
    return found


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_script_relies_on_magic(script):
    assert _bare_expressions(ast.parse(script.read_text()).body, True) == []


def test_magic_is_off_in_the_apps_config():
    import tomllib
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert cfg["runner"]["magicEnabled"] is False


def test_bare_expressions_are_found():
    src = "'''doc'''\nx = 1\nx\nwith open('f') as f:\n    'shown'\ndef g():\n    y\n"
    assert _bare_expressions(ast.parse(src).body, True) == ["line 3: x", "line 5: 'shown'"]


def test_app_py_imported_is_the_server_and_pulls_no_page():
    """`streamlit run app.py` imports app.py to serve it: it must find an st.App there that serves app.py itself,
    and importing it must neither draw a page nor import torch or the pages' heavy modules (the start-up does
    that in a thread, once the server is up)."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import sys
        import streamlit as st
        import app
        from pathlib import Path
        assert isinstance(app.app, st.App), type(app.app)
        assert Path(app.app.script_path).resolve() == Path(app.__file__).resolve()     # it serves itself
        print(sorted(m for m in ("torch", "pandas", "pages.common.cache", "pages.common.widgets")
                     if m in sys.modules))
        """)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"
