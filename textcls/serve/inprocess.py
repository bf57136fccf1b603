"""The model worker's interface answered in the calling process (TEXTCLS_WORKER=0): the same functions of
textcls.serve.worker and jobs of textcls.serve.work on the same bounded model cache (`worker.predictor`), called
directly instead of through the worker's pipe. The pages talk to `pages.common.cache.worker()`, which is the
process (textcls.serve.client.ModelWorker) or this, so there is one code path for both settings.
"""
from __future__ import annotations

import math
import os


class InProcess:
    """What pages.common.cache needs of a ModelWorker: call, call_env, run_job, predict, check, pid."""

    timeout = math.inf
    job_timeout = math.inf
    restarts = 0

    def call(self, fn, *args, timeout: float | None = None):
        return fn(*args)

    def call_env(self, fn, *args, timeout: float | None = None):
        from textcls.serve.client import passed_env
        return fn(passed_env(), *args)

    def run_job(self, job: str, *args, timeout: float | None = None, progress=None):
        """The job in this thread (a page's progress bar is drawn from the script's own thread)."""
        from textcls.serve import worker
        return worker.run_here(job, args, progress)

    def predict(self, path: str, stamp: float, texts: list[str], maps: bool = False):
        from textcls.serve import worker
        return self.call_env(worker.predict, str(path), float(stamp), list(texts), maps)

    def check(self):
        return None

    def pid(self) -> int:
        return os.getpid()


_ONE = InProcess()


def in_process() -> InProcess:
    return _ONE


__all__ = ["InProcess", "in_process"]
