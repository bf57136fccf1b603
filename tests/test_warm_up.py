"""The app's warm-up (pages/common/cache.warm_up): it gives way to running pages, and what it computes ahead for
Evaluate is exactly what the page would compute itself."""
import threading

import numpy as np

from pages.common import cache
from textcls.checkpoint import load_checkpoint


def test_the_warm_up_waits_while_a_page_runs():
    """Between its steps the warm-up waits for every script run in progress (app.py wraps each in
    cache.page_run), so a page clicked straight after Home does not share the interpreter with Captum's import."""
    assert cache._wait_for_no_page_run(patience=0)
    entered, leave = threading.Event(), threading.Event()

    def a_page() -> None:
        with cache.page_run():
            entered.set()
            leave.wait(10)

    t = threading.Thread(target=a_page)
    t.start()
    entered.wait(10)
    assert not cache._wait_for_no_page_run(patience=0.2)      # a page is running: the warm-up would wait
    leave.set()
    assert cache._wait_for_no_page_run(patience=10)           # the page is done: it goes on at once
    t.join()
    try:
        with cache.page_run():
            raise RuntimeError("a page that fails")
    except RuntimeError:
        pass
    assert cache._wait_for_no_page_run(patience=0)            # a failed run is no longer counted



def test_evaluate_predictions_computed_ahead_are_the_pages_own_numbers():
    """The warm-up predicts Evaluate's default checkpoints on its default split batch by batch while no page runs;
    the page's first `predict` then takes those, and they are the numbers the page would compute (the same
    batches and thread setting; a different thread count under another load changes only the last bits)."""
    cache._PREFETCHED.clear()
    done = cache._prefetch_evaluate()
    assert len(done) >= 2                               # the main task's small checkpoints (six sst2 ones shipped)
    (path, mtime, texts), ahead = next((k, v) for k, v in cache._PREFETCHED.items() if k[0].endswith(done[0]))
    own = load_checkpoint(path).predict(list(texts))
    assert [p.label for p in ahead] == [p.label for p in own] and len(own) == len(texts) > 1000
    # the same batches; the thread count the machine's load allows may differ, and with it the last bits
    assert np.allclose([list(p.probabilities.values()) for p in ahead],
                       [list(p.probabilities.values()) for p in own], rtol=0, atol=1e-6)
    assert cache._predict(path, mtime, texts) is not None and (path, mtime, texts) not in cache._PREFETCHED
