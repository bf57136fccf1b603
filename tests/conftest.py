import os
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("TEXTCLS_TEST_DATA", REPO.parent / "shared" / "data"))

# OMP_NUM_THREADS, when set, wins (2 threads on an oversubscribed machine run ~30x slower than 1)
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "0") or 0) or max(1, min(2, os.cpu_count() or 1)))


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    yield


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not (SHARED_DATA / "sst2" / "dataset.json").exists():
        pytest.fail(f"bundled data not found at {SHARED_DATA} (set TEXTCLS_TEST_DATA)")
    return SHARED_DATA
