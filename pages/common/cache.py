"""The only st.cache_* wrappers of the app: checkpoint listing, models, predictions.

Models are loaded once per process (st.cache_resource) and shared read-only by every session: nothing here
or in the pages trains, edits or switches a cached model to training mode. A checkpoint replaced on disk is
reloaded because its files' modification time is part of the cache key.
"""
from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from textcls.checkpoint import CheckpointError, CheckpointInfo, list_checkpoints, load_checkpoint

REPO = Path(__file__).resolve().parents[2]
ENV = "TEXTCLS_CHECKPOINTS"


def checkpoint_root() -> Path:
    """The checkpoint folder: env TEXTCLS_CHECKPOINTS, else ./checkpoints (the repository's)."""
    raw = os.environ.get(ENV, "").strip()
    if raw:
        return Path(raw).expanduser()
    here = Path("checkpoints")
    return here if here.is_dir() else REPO / "checkpoints"


def stamp(path: str | Path) -> float:
    """Modification time of a checkpoint's files (a new save changes it)."""
    p = Path(path)
    return max((f.stat().st_mtime for f in (p / "config.json", p / "model.safetensors") if f.exists()),
               default=0.0)


@st.cache_data(ttl=10, show_spinner=False)
def checkpoints(root: str) -> tuple[list[CheckpointInfo], list[CheckpointInfo]]:
    """(valid, invalid) checkpoints directly under root; re-read every 10 s at most."""
    infos = list_checkpoints(root, include_invalid=True)
    return [i for i in infos if i.valid], [i for i in infos if not i.valid]


@st.cache_resource(show_spinner="Loading the model…", max_entries=32)
def _predictor(path: str, mtime: float):
    return load_checkpoint(path)


def predictor(path: str | Path):
    """The shared, read-only Predictor of a checkpoint folder (loaded once per process)."""
    return _predictor(str(path), stamp(path))


@st.cache_data(show_spinner=False, max_entries=512)
def _predict(path: str, mtime: float, texts: tuple[str, ...]):
    return _predictor(path, mtime).predict(list(texts), return_maps=False)


@st.cache_data(show_spinner=False, max_entries=24)
def _predict_maps(path: str, mtime: float, text: str):
    return _predictor(path, mtime).predict([text], return_maps=True)[0]


def predict(path: str | Path, texts: list[str] | tuple[str, ...]):
    """Predictions (no maps) of one checkpoint for texts, cached per (checkpoint, texts)."""
    return _predict(str(path), stamp(path), tuple(texts))


def predict_maps(path: str | Path, text: str):
    """One text's Prediction with its maps, cached per (checkpoint, text)."""
    return _predict_maps(str(path), stamp(path), text)


__all__ = ["CheckpointError", "checkpoint_root", "checkpoints", "predictor", "predict", "predict_maps", "stamp"]


# ---------------------------------------------------------------- data sets (Train / Evaluate pages)

def _data_stamp(spec: str) -> float:
    """Modification time of a data file or folder given as a path (0 for names and hub ids)."""
    p = Path(spec).expanduser()
    try:
        if p.is_file():
            return p.stat().st_mtime
        if p.is_dir():
            return max((f.stat().st_mtime for f in p.iterdir()), default=p.stat().st_mtime)
    except OSError:
        pass
    return 0.0


@st.cache_data(show_spinner="Loading the data set…", max_entries=16)
def _dataset(spec: str, stamp: float, limit: int | None, text_column: str, label_column: str, seed: int,
             root: str | None):
    from textcls.data import load_data
    return load_data(spec, root=root, limit=limit, text_column=text_column, label_column=label_column, seed=seed)


def dataset(spec: str, *, limit: int | None = None, text_column: str = "text", label_column: str = "label",
            seed: int = 0, root: str | None = None):
    """A `DataBundle` (textcls.data.load_data), cached per (spec, its files' modification time, settings).
    Raises DataError like load_data; treat the result as read-only."""
    return _dataset(str(spec), _data_stamp(str(spec)), limit, text_column, label_column, seed, root)


def refresh_checkpoints() -> None:
    """Forget the cached checkpoint listing, so a checkpoint saved just now shows on every page at once."""
    checkpoints.clear()


@st.cache_resource(show_spinner=False)
def job_registry():
    """The app's one registry of background training jobs (textcls.training_jobs), shared by every session;
    sessions keep their job ids in st.session_state. A resource, so it survives the dev server's re-imports."""
    from textcls.training_jobs import JobRegistry
    return JobRegistry()


__all__ += ["dataset", "job_registry", "refresh_checkpoints"]
