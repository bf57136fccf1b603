"""A study in the background for the app: `python -m textcls study NAME --scale S` (the CLI, so the same
training path and cache) in a child process at nice +10 on 1 torch thread, its output in
`<user home>/studies/NAME-scale.log`. Progress is read from the cache and the lock; stop = SIGINT to the child
(the run in progress is discarded, finished runs stay cached; starting again resumes). No Streamlit, no torch."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field

from textcls.runtime.paths import REPO
from textcls.experiments.study_defs import Study
from textcls.experiments.study_run import (StudyError, _lock_path, cache_path, estimate_seconds, plan, running_study,
    studies_dir)


@dataclass
class Progress:
    """Where a study stands."""
    done: int = field(metadata={"help": "runs finished and cached (current settings)"})
    total: int = field(metadata={"help": "runs in the grid (points x seeds)"})
    running: str | None = field(default=None, metadata={"help": "the study running now (any), or None"})
    this_running: bool = field(default=False, metadata={"help": "whether that is this study at this scale"})
    last_log: str = field(default="", metadata={"help": "the last line the worker wrote (errors included)"})
    estimate_s: float = field(default=0.0, metadata={"help": "estimated seconds for the runs left"})


def log_path(study: Study, scale: str):
    return cache_path(study, scale).with_suffix(".log")


def progress(study: Study, scale: str) -> Progress:
    todo, have = plan(study, scale)
    holder = running_study()
    try:
        lines = [ln for ln in log_path(study, scale).read_text().splitlines() if ln.strip()]
    except OSError:
        lines = []
    return Progress(have, have + len(todo), holder, bool(holder and holder.startswith(f"{study.name} ({scale})")),
                    lines[-1] if lines else "", estimate_seconds(study, scale))


def start(study: Study, scale: str, *, device: str | None = None, confirm_long: bool = False) -> int:
    """Start the study's worker process; its pid. StudyError when another study is running."""
    holder = running_study()
    if holder is not None:
        raise StudyError(f"another study is running ({holder}); one study at a time - stop it or wait")
    studies_dir().mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "textcls", "study", study.name, "--scale", scale]
    cmd += ["--device", device] if device else []
    cmd += ["--yes"] if confirm_long else []
    env = {**os.environ, "TEXTCLS_THREADS": "1", "PYTHONPATH": os.pathsep.join(
        [str(REPO)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))}
    with open(log_path(study, scale), "w") as logf:
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                preexec_fn=lambda: os.nice(10), cwd=str(REPO))
    _lock_path().write_text(json.dumps({"study": study.name, "scale": scale, "pid": proc.pid}))
    _children[proc.pid] = proc
    return proc.pid


_children: dict[int, subprocess.Popen] = {}       # reaped when they end (no zombies in the app's process)


def stop() -> bool:
    """Ask the running study (if any) to stop; True when there was one."""
    try:
        pid = int(json.loads(_lock_path().read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return False
    if running_study() is None:
        return False
    os.kill(pid, signal.SIGINT)
    return True


def reap() -> None:
    for pid, p in list(_children.items()):
        if p.poll() is not None:
            del _children[pid]
