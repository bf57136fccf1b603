"""What the pages open on, as plain functions of the checkpoint listing (no Streamlit): the main task, its
checkpoints, and the split Evaluate starts with. One implementation for the pages (through `widgets`) and for the
warm-up (`warmup.warm_up`), which computes what Evaluate's first render shows while the person reads another page."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from textcls.checkpoint import CheckpointInfo

BIG_SPLIT = 5000            # larger splits are sampled by default (the whole split is one click away)
BIG_SPLIT_SAMPLE = 2000     # the default sample of a larger split (seeded, kept in file order)


def tasks(valid: Sequence[CheckpointInfo]) -> list[str]:
    """The data sets of the checkpoints, the main task first: the one with the most shipped checkpoints (a model
    the user trains on another task does not change what the pages open on), then the most checkpoints, then by
    name. Compare opens on the first; Inspect, Evaluate and Explore open on its checkpoints."""
    return sorted({i.data for i in valid}, key=lambda d: (-sum(i.data == d and i.shipped for i in valid),
                                                          -sum(i.data == d for i in valid), str(d)))


def is_pretrained(info: CheckpointInfo) -> bool:
    """A Hugging Face encoder (its model is listed as hf:ARCHITECTURE)."""
    return str(info.model or "").startswith("hf:")


def main_task_checkpoints(valid: Sequence[CheckpointInfo], pretrained: bool = True) -> list[str]:
    """The names of the checkpoints of the main task (`tasks`), in listing order; `pretrained=False` leaves out
    the Hugging Face encoders (tens of times slower over a whole split than the small models)."""
    top = tasks(valid)[0] if valid else None
    return [i.name for i in valid if i.data == top and (pretrained or not is_pretrained(i))]


def data_spec(info: CheckpointInfo) -> str:
    """The data set a checkpoint is evaluated on: its config's data spec or name."""
    d = info.info.get("data") if isinstance(info.info, dict) else None
    if isinstance(d, dict):
        return str(d.get("spec") or d.get("name") or "")
    return str(d or info.data or "")


def available_data(spec: str, bundled: Sequence[str]) -> str | None:
    """The checkpoint's own data set when it is here (a bundled name or an existing path), else its shipped sample
    (imdb -> imdb_sample), else None."""
    if spec and (spec in bundled or Path(spec).exists()):
        return spec
    return f"{spec}_sample" if spec and f"{spec}_sample" in bundled else None


def default_split(splits: Sequence[str]) -> str:
    """The split Evaluate opens on: test, else the last one."""
    return "test" if "test" in splits else list(splits)[-1]


def default_limit(n: int) -> int:
    """How many examples Evaluate takes at first from a split of n (0: all of it)."""
    return 0 if n <= BIG_SPLIT else BIG_SPLIT_SAMPLE


def evaluated_part(split, limit: int):
    """The part of a split Evaluate runs for a limit: all of it (0), else a seeded sample kept in file order."""
    return split.sample(int(limit), seed=0) if limit else split
