"""Listing checkpoints (the dashboard's Home page) must not import torch: `import textcls` resolves its public
names lazily, and textcls.checkpoint / textcls.viz / pages.common import torch only where it is used.

Each check runs in a fresh interpreter (this test process has imported torch already).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHECKPOINTS = REPO / "checkpoints"


def run_python(code: str) -> str:
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_listing_checkpoints_does_not_import_torch():
    out = run_python(f"""
        import sys
        import textcls
        from textcls.checkpoint import list_checkpoints
        infos = list_checkpoints({str(CHECKPOINTS)!r}, include_invalid=True)
        assert "torch" not in sys.modules, "listing checkpoints imported torch"
        print(len(infos), sum(i.valid for i in infos))
        """)
    n, n_valid = map(int, out.split())
    assert n_valid > 0 and n_valid == n  # the shipped checkpoints are all listed, and valid


def test_public_names_still_resolve():
    run_python("""
        import sys
        import textcls
        assert "torch" not in sys.modules
        assert set(textcls.__all__) <= set(dir(textcls))
        assert textcls.__version__
        from textcls import create_model, list_models, load_checkpoint, Predictor, ClassifierOutput, MapSpec
        assert "torch" in sys.modules
        assert callable(textcls.create_model) and textcls.create_model is create_model
        assert "kim_cnn" in list_models()
        ns = {}
        exec("from textcls import *", ns)
        missing = set(textcls.__all__) - set(ns)
        assert not missing, missing
        try:
            textcls.no_such_name
        except AttributeError:
            pass
        else:
            raise AssertionError("textcls.no_such_name resolved")
        """)


def test_dashboard_helpers_do_not_import_torch():
    run_python(f"""
        import sys
        sys.path.insert(0, {str(REPO)!r})
        import pages.common.cache, pages.common.widgets
        from textcls import viz
        assert "torch" not in sys.modules, "pages.common imported torch"
        assert viz.MapSpec.__name__ == "MapSpec"   # still reachable; importing it brings torch
        assert "torch" in sys.modules
        """)


def test_the_app_warm_up_imports_what_the_first_model_page_needs(tmp_path):
    """Without the model worker (TEXTCLS_WORKER=0), the app's warm-up thread (started after Home is drawn) imports
    what the first page that runs models would otherwise import while the person waits: the pages' listing (our folders validated in full; a Hugging Face
    folder's deep check, transformers' import, waits until someone selects it) and predicting with one import no
    new module afterwards (and the validation on the meta device needs neither torch._dynamo nor sympy). It
    imports what each page it is given imports at its top, too."""
    page = tmp_path / "page.py"
    page.write_text("import tabnanny\n")
    out = run_python(f"""
        import os, sys
        os.environ["TEXTCLS_WORKER"] = "0"                  # with the worker, the model work is not this process's
        from pages.common import warmup
        assert "tabnanny" not in sys.modules
        warmup.warm_up([{str(page)!r}]).join()
        assert "tabnanny" in sys.modules                    # what the page imports at its top
        before = set(sys.modules)
        from textcls.checkpoint import list_checkpoints, load_checkpoint
        infos = list_checkpoints({str(CHECKPOINTS)!r}, deep="textcls")     # the pages' listing (cache.LISTING_DEEP)
        sst2 = next(i for i in infos if i.data == "sst2")
        load_checkpoint(sst2.path).predict(["a good film"], return_maps=True)
        new = sorted(m for m in set(sys.modules) - before if m.split(".")[0] in ("torch", "sympy", "captum"))
        print(len(infos), new)
        """)
    n, new = out.split(" ", 1)
    assert int(n) > 0 and new.strip() == "[]", new

