"""Writing files so a crash never leaves half of one: `atomic_write` (bytes or text to a temporary file beside the
target, fsync, rename over it) and `fsync_dir`. No torch; every writer in the library goes through here."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def fsync_dir(path: str | Path) -> None:
    """Flush a folder's entries (a rename into it) to disk, where the platform allows it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str | Path, data: bytes | str) -> Path:
    """Write `data` (str as UTF-8) to `path`: a temporary file in the same folder, fsync, then rename over
    `path`. Readers see the old file or the new one, never a part; the temporary file is removed on failure."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)
    return path


def atomic_write_json(path: str | Path, obj: Any, **dumps_kw: Any) -> Path:
    """`atomic_write` of `json.dumps(obj, **dumps_kw)` plus a final newline."""
    return atomic_write(path, json.dumps(obj, **dumps_kw) + "\n")
