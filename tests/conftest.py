import os
import sys
import tempfile
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("TEXTCLS_TEST_DATA", REPO.parent / "shared" / "data"))

# Hermetic paths: the suite never reads a user's data/checkpoint settings and never writes into the user's folder
# or the repository (the Train page and the CLI write to TEXTCLS_HOME).
for _var in ("TEXTCLS_DATA", "TEXTCLS_CHECKPOINTS"):
    os.environ.pop(_var, None)
os.environ["TEXTCLS_HOME"] = tempfile.mkdtemp(prefix="textcls-test-home-")
os.environ["TEXTCLS_CACHE"] = tempfile.mkdtemp(prefix="textcls-test-cache-")

# OMP_NUM_THREADS, when set, wins (2 threads on an oversubscribed machine run ~30x slower than 1)
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "0") or 0) or max(1, min(2, os.cpu_count() or 1)))


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    yield


@pytest.fixture(autouse=True)
def _main_module():
    """AppTest runs a page script as __main__ and leaves it there; multiprocessing's spawn (the training jobs)
    re-runs __main__ by its path in the child, which for a page made from a function is a script that cannot run
    alone. Each test gets the original __main__ back."""
    main = sys.modules.get("__main__")
    yield
    if main is not None:
        sys.modules["__main__"] = main


@pytest.fixture(autouse=True)
def _user_home(tmp_path, monkeypatch):
    """Each test gets an empty user folder, so nothing one test trains is listed on another's pages."""
    monkeypatch.setenv("TEXTCLS_HOME", str(tmp_path / "textcls-home"))


@pytest.fixture(scope="session")
def bundled_data() -> Path:
    """The data embedded in the package (sst2, sst2_phrases, trec): present in every clone."""
    from textcls.runtime.paths import BUNDLED_DATA
    assert (BUNDLED_DATA / "sst2" / "dataset.json").is_file(), f"embedded data missing at {BUNDLED_DATA}"
    return BUNDLED_DATA


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The larger collection (../shared/data, or TEXTCLS_TEST_DATA): tests that need it skip without it."""
    if not (SHARED_DATA / "imdb" / "dataset.json").exists():
        pytest.skip(f"the larger data collection is not at {SHARED_DATA} (set TEXTCLS_TEST_DATA); "
                    "present in CI, not in a bare clone")
    return SHARED_DATA


class _Shipped(dict):
    """name -> the shipped checkpoint's Predictor, loaded on first use and shared by the whole session: tests read
    it and never change it."""

    def __missing__(self, name: str):
        import textcls
        folder = REPO / "checkpoints" / name
        if not (folder / "config.json").is_file():
            raise KeyError(f"no shipped checkpoint {name!r}")
        self[name] = textcls.load_checkpoint(folder)
        return self[name]


@pytest.fixture(scope="session")
def shipped_predictors() -> dict:
    """The shipped checkpoints' Predictors by folder name (checkpoints/NAME), loaded lazily, shared read-only."""
    return _Shipped()


def shipped_names() -> list[str]:
    """The folders under checkpoints/ (for parametrising over every shipped checkpoint)."""
    return sorted(p.name for p in (REPO / "checkpoints").iterdir() if p.is_dir() and not p.name.startswith("."))
