"""The pages' cached data sets and training jobs (Train, Evaluate, the warm-up): `dataset` (a DataBundle per spec,
its files' modification time and settings) and `job_registry` (the app's one registry of background training
jobs). pages.common.cache re-exports both."""
from __future__ import annotations

from pathlib import Path

import streamlit as st


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
             root: str | None, as_split: str | None):
    from textcls.data.datasets import load_data
    return load_data(spec, root=root, limit=limit, text_column=text_column, label_column=label_column, seed=seed,
                     as_split=as_split)


def dataset(spec: str, *, limit: int | None = None, text_column: str = "text", label_column: str = "label",
            seed: int = 0, root: str | None = None, as_split: str | None = None):
    """A `DataBundle` (textcls.data.datasets.load_data), cached per (spec, its files' modification time, settings).
    Raises DataError like load_data; treat the result as read-only."""
    return _dataset(str(spec), _data_stamp(str(spec)), limit, text_column, label_column, seed, root, as_split)


@st.cache_resource(show_spinner=False)
def job_registry():
    """The app's one registry of background training jobs (textcls.train.jobs), shared by every session;
    sessions keep their job ids in st.session_state. A resource, so it survives the dev server's re-imports."""
    from textcls.train.jobs import JobRegistry
    return JobRegistry()


__all__ = ["dataset", "job_registry"]
