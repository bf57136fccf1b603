import os
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("TEXTCLS_TEST_DATA", REPO.parent / "shared" / "data"))

torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    yield


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not (SHARED_DATA / "sst2" / "dataset.json").exists():
        pytest.fail(f"bundled data not found at {SHARED_DATA} (set TEXTCLS_TEST_DATA)")
    return SHARED_DATA
