"""TracIn's saved epochs in a native checkpoint folder (the file `tracin.safetensors`, optional; its format and the
maths that reads it: textcls.interpret.influence): written by `save_checkpoint` beside the weights, checked by the
full validation like every other file - a regular file inside the folder, the strict safetensors header, the
format's metadata, finite floating tensors that fit the model's output layer (or its whole state for full
snapshots). A bad file makes the folder invalid, with one line saying why. Imports no torch at import."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from textcls.checkpoint.files import CheckpointError, safe, safetensors_header

SNAPSHOT_FILE = "tracin.safetensors"            # = textcls.interpret.influence.SNAPSHOT_FILE (tested)


def write_snapshots(folder: Path, snapshots: Any, float16: bool = False) -> None:
    """Write `snapshots` (influence.Snapshots) into `folder` as SNAPSHOT_FILE (full snapshots in float16 when the
    weights are)."""
    from safetensors.torch import save_file

    from textcls.interpret.influence import pack_snapshots
    tensors, meta = pack_snapshots(snapshots, float16=float16 and snapshots.kind == "full")
    save_file(tensors, str(Path(folder) / SNAPSHOT_FILE), metadata=meta)


def check_snapshots(path: Path, model: Any) -> None:
    """CheckpointError unless the folder's SNAPSHOT_FILE is a snapshot file that fits `model` (built on the meta
    device)."""
    from textcls.interpret.influence import check_fits, read_snapshots
    safetensors_header(path / SNAPSHOT_FILE)              # the one strict header reader
    try:
        snaps = read_snapshots(path)
        if snaps is not None:
            check_fits(snaps, model)
    except ValueError as e:
        raise CheckpointError(f"{safe(path, 1000)}: {safe(e, 1000)}") from None


__all__ = ["SNAPSHOT_FILE", "check_snapshots", "write_snapshots"]
