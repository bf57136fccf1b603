"""Writing files so a crash never leaves half of one: `atomic_write` (bytes or text to a temporary file beside the
target, fsync, rename over it) and `fsync_dir`. No torch; every writer in the library goes through here. Reading
a file someone else may have planted: `open_regular` / `read_regular` (regular files only, capped)."""
from __future__ import annotations

import json
import math
import os
import stat
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


def finite_json(obj: Any) -> Any:
    """`obj` with every non-finite float (NaN, inf: not JSON) replaced by None, through dicts, lists and tuples."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    return obj


def atomic_write_json(path: str | Path, obj: Any, **dumps_kw: Any) -> Path:
    """`atomic_write` of `json.dumps(obj, **dumps_kw)` plus a final newline."""
    return atomic_write(path, json.dumps(obj, **dumps_kw) + "\n")


def open_regular(path: Path) -> int:
    """A file descriptor on `path`, which must be a regular file in its folder: a FIFO, a device, a socket, or a
    symlink leading out of the folder (to /dev/zero, say) raises ValueError before a byte is read (opened
    non-blocking, so a FIFO never hangs the reader). FileNotFoundError when it is missing."""
    path = Path(path)
    if path.is_symlink():
        target = path.resolve()
        if target.parent != path.parent.resolve():
            raise ValueError(f"{path}: a symlink out of its folder (to {target}); not read")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise
    except OSError as e:
        raise ValueError(f"{path}: cannot read: {e.strerror or e}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ValueError(f"{path}: not a regular file (a FIFO, device or socket); not read")
    return fd


def read_regular(path: Path, cap: int, what: str = "the file") -> bytes:
    """The bytes of the regular file `path` (see `open_regular`), at most `cap` of them: a bigger file (or one that
    grows while it is read) raises ValueError."""
    fd = open_regular(path)
    try:
        with os.fdopen(fd, "rb") as f:
            data = f.read(cap + 1)
    except OSError as e:
        raise ValueError(f"{path}: cannot read {what}: {e}") from None
    if len(data) > cap:
        raise ValueError(f"{path}: {what} is over the {cap:,}-byte limit for this file")
    return data
