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



def test_the_model_registry_and_every_pages_imports_need_no_torch():
    """The registry lists, describes and configures every family (each preset and variant) from its torch-free
    config (textcls.models.configs); what every page imports at its top, Train's form and settings included, is
    torch-free. A family's model class, read from its entry, brings torch."""
    run_python(f"""
        import sys
        sys.path.insert(0, {str(REPO)!r})
        from pathlib import Path
        from pages.common.warmup import _import_page_modules
        for page in sorted(Path({str(REPO / "pages")!r}).glob("*.py")):
            _import_page_modules(page)
        import textcls
        from textcls.train.config import TrainConfig
        from textcls.train.forms import config_fields
        n = 0
        for name in textcls.list_models():
            entry = textcls.get_entry(name)
            for preset in (None, *entry.presets):
                for variant in (None, *entry.variants):
                    textcls.make_config(name, preset=preset, variant=variant)
                    assert config_fields(name, preset, variant)
                    n += 1
        TrainConfig(epochs=2, optimizer="noam")
        assert "torch" not in sys.modules, sorted(m for m in sys.modules if m.startswith("textcls"))
        assert n > 40
        assert textcls.get_entry("kim_cnn").cls.registry_name == "kim_cnn"
        assert "torch" in sys.modules
        """)


def test_the_train_page_counts_parameters_in_the_worker_and_the_server_never_imports_torch(tmp_path, bundled_data):
    """With the model worker on, the Train page's form comes from the configs and its check before a run (the
    model built on the meta device, its parameters counted) runs in the worker: a model over the server's
    parameter limit is refused with its count, no run starts, and the server's interpreter never imports torch."""
    out = run_python(f"""
        import os, sys
        os.environ.update(TEXTCLS_CHECKPOINTS={str(tmp_path / "shipped")!r}, TEXTCLS_HOME={str(tmp_path / "home")!r},
                          TEXTCLS_CACHE={str(tmp_path / "cache")!r}, TEXTCLS_DATA={str(bundled_data)!r},
                          HF_HUB_OFFLINE="1", TEXTCLS_MAX_PARAMETERS="50000")
        os.environ.pop("TEXTCLS_WORKER", None)
        os.makedirs(os.environ["TEXTCLS_CHECKPOINTS"])
        sys.path.insert(0, {str(REPO)!r})
        os.chdir({str(REPO)!r})
        from streamlit.testing.v1 import AppTest
        from textcls.serve import client
        try:
            at = AppTest.from_file("app.py", default_timeout=240)
            at.run()
            at.switch_page("pages/train.py").run()
            at.radio(key="tr_emb").set_value("random").run()
            field = next(x for x in at.number_input if x.key == "tr_f_kim_cnn_small_None_n_filters")
            field.set_value(2000)
            next(b for b in at.button if b.label == "Start training").click()
            at.run()
            assert not at.exception, [e.value for e in at.exception]
            errors = " | ".join(str(e.value) for e in at.error)
            assert "over the limit of 50,000 parameters" in errors, errors
            assert at.session_state["train_jobs"] == []
            assert "torch" not in sys.modules, "the server imported torch"
            print(errors)
        finally:
            client.stop_shared()
        """)
    from textcls.models.registry import get_entry, make_config
    from textcls.runtime.sizing import count_parameters
    n = count_parameters(get_entry("kim_cnn").cls, make_config("kim_cnn", preset="small", vocab_size=8, num_labels=2,
                                                                n_filters=2000))
    assert n > 50_000 and f"would have {n:,} parameters" in out, (n, out)
