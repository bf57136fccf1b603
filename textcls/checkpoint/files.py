"""The files of a checkpoint folder, for both kinds (native textcls folders and Hugging Face ones): the one way each
is read and the one way a folder is written.

- Reading: every file through `read_capped` / `open_file` (a regular file inside its folder - no FIFO, device,
  socket or symlink out of it - opened non-blocking, at most a given number of bytes; `runtime.files.open_regular`),
  JSON through `read_json_file`, sha256 through `file_sha256`.
- The safetensors header (`safetensors_header`): parsed strictly, the way the safetensors library itself checks it
  before a load: a capped header, a capped number of tensors, a known dtype, a shape of whole numbers, byte offsets
  that match it, tensors that neither overlap nor leave gaps, and a file exactly as long as the header says.
- Writing (`write_folder`): everything into a hidden temporary folder beside the target, every file and folder
  fsynced, then renamed into place (an existing folder moved aside first, deleted once the new one is in); a crash
  leaves the old or the new folder, and `recover_folder` finishes what a dead process left.
- One error type, `CheckpointError` (alias `HFError`), a ValueError whose message is one line naming the file.

No torch or transformers at import.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import tempfile
import uuid
from pathlib import Path
from typing import Any, Callable

from textcls.runtime.files import fsync_dir, open_regular, read_regular


class CheckpointError(ValueError):
    """A folder is not a valid checkpoint (or cannot be written as one); the message says why, in one line."""


HFError = CheckpointError              # the name the Hugging Face side used: the same type, so callers catch one
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def safe(text: Any, limit: int = 200) -> str:
    """`text` for a message: control and direction characters escaped, one line, at most `limit` characters."""
    s = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                     str(text))
    return s if len(s) <= limit else s[:limit] + "..."


def _where(path: Any) -> str:
    return safe(path, 1000)


# ---------------------------------------------------------------- reading

def open_file(path: Path) -> int:
    """A file descriptor of `path`, a regular file inside its folder (`runtime.files.open_regular`); a
    CheckpointError in one line when it is missing or not such a file."""
    path = Path(path)
    try:
        return open_regular(path)
    except FileNotFoundError:
        raise CheckpointError(f"{_where(path.parent)}: missing {safe(path.name)}") from None
    except (OSError, ValueError) as e:
        raise CheckpointError(safe(e, 1000)) from None


def check_file(path: Path, cap: int | None = None, what: str | None = None) -> int:
    """The size of `path`, which must be a regular file inside its folder of at most `cap` bytes (no cap: any
    size); nothing is read."""
    fd = open_file(path)
    try:
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if cap is not None and size > cap:
        raise CheckpointError(f"{_where(path)}: {what or path.name} is over the {cap:,}-byte limit for this file")
    return size


def read_capped(path: Path, cap: int, what: str | None = None) -> bytes:
    """The bytes of `path`, a regular file inside its folder, at most `cap` of them (`runtime.files.read_regular`);
    anything else is a CheckpointError naming the file."""
    path = Path(path)
    try:
        return read_regular(path, cap, what or path.name)
    except FileNotFoundError:
        raise CheckpointError(f"{_where(path.parent)}: missing {safe(path.name)}") from None
    except (OSError, ValueError) as e:
        raise CheckpointError(safe(e, 1000)) from None


def read_json_file(path: Path, cap: int, what: str | None = None) -> Any:
    """The JSON value of `path` (read by `read_capped`, UTF-8 with or without a BOM); a CheckpointError naming the
    file when it is not JSON or is nested too deeply."""
    path = Path(path)
    what = what or path.name
    try:
        text = read_capped(path, cap, what).decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise CheckpointError(f"{_where(path)}: cannot read {what}: {e}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{_where(path)}: {what} is not valid JSON ({e.msg} at line {e.lineno}, column "
                              f"{e.colno})") from None
    except RecursionError:
        raise CheckpointError(f"{_where(path)}: {what} is nested too deeply to be a checkpoint file") from None


def file_sha256(path: Path) -> str:
    """The sha256 of a regular file inside its folder."""
    fd = open_file(Path(path))
    h = hashlib.sha256()
    with os.fdopen(fd, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def file_identity(folder: Path) -> tuple:
    """(name, inode, size, mtime) of every entry of `folder`: what a remembered verdict depends on."""
    out = []
    try:
        for e in sorted(os.scandir(folder), key=lambda e: e.name):
            try:
                st = e.stat()
            except OSError:
                continue
            out.append((e.name, st.st_ino, st.st_size, st.st_mtime_ns))
    except OSError:
        pass
    return tuple(out)


# ---------------------------------------------------------------- the safetensors header

DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "I64": 8, "I32": 4, "I16": 2,
               "I8": 1, "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1}
FLOAT_DTYPES = ("F64", "F32", "F16", "BF16")
HEADER_CAP = 16 * 1_000_000               # a safetensors header's bytes (BERT-large's is 40 KB)
MAX_TENSORS = 20_000                      # tensors in one safetensors file (BERT-large has 391)
MAX_RANK = 8                              # dimensions of one tensor


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def safetensors_header(path: Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    """{tensor name: (dtype, shape)} of a safetensors file (no torch): a regular file inside its folder, a header
    of at most HEADER_CAP bytes and MAX_TENSORS entries, each a known dtype, a shape of whole numbers and byte
    offsets that match it; the tensors side by side from byte 0, neither overlapping nor leaving a gap, and the
    file exactly as long as they need. Anything else is a CheckpointError naming the file."""
    path = Path(path)
    where = _where(path)
    fd = open_file(path)
    try:
        with os.fdopen(fd, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(8)
            if len(head) < 8:
                raise CheckpointError(f"{where}: corrupt safetensors file (truncated: {size:,} bytes)")
            n = struct.unpack("<Q", head)[0]
            if n > size - 8:
                raise CheckpointError(f"{where}: corrupt safetensors file (truncated, or not a safetensors file: "
                                      f"a header of {n:,} bytes in a file of {size:,})")
            if n > HEADER_CAP:
                raise CheckpointError(f"{where}: safetensors header of {n:,} bytes, over the {HEADER_CAP:,}-byte "
                                      "limit")
            header = json.loads(f.read(n).decode("utf-8"))
    except CheckpointError:
        raise
    except OSError as e:
        raise CheckpointError(f"{where}: cannot read: {safe(e)}") from None
    except (UnicodeDecodeError, ValueError, RecursionError):       # JSONDecodeError is a ValueError
        raise CheckpointError(f"{where}: corrupt safetensors file (unreadable header)") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{where}: corrupt safetensors file (header is not a table)")
    if len(header) > MAX_TENSORS + 1:
        raise CheckpointError(f"{where}: {len(header):,} tensors, over the limit of {MAX_TENSORS:,}")
    meta = header.get("__metadata__")
    if meta is not None and not (isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())):
        raise CheckpointError(f"{where}: corrupt safetensors file (__metadata__ is not a table of strings)")
    out: dict[str, tuple[str, tuple[int, ...]]] = {}
    spans: list[tuple[int, int, str]] = []
    for name, t in header.items():
        if name == "__metadata__":
            continue
        bad = f"{where}: corrupt safetensors file (bad entry {safe(name, 80)!r}"
        if not isinstance(t, dict):
            raise CheckpointError(bad + ": not a table)")
        dtype, shape, offsets = t.get("dtype"), t.get("shape"), t.get("data_offsets")
        if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
            raise CheckpointError(bad + f": dtype {safe(dtype, 40)!r}, known: {', '.join(DTYPE_BYTES)})")
        if not isinstance(shape, list) or len(shape) > MAX_RANK or not all(_whole(x) for x in shape):
            raise CheckpointError(bad + f": the shape must be a list of at most {MAX_RANK} whole numbers)")
        if not isinstance(offsets, list) or len(offsets) != 2 or not all(_whole(x) for x in offsets) \
                or offsets[0] > offsets[1]:
            raise CheckpointError(bad + ": data_offsets must be two whole numbers, start <= end)")
        numel = 1
        for x in shape:
            numel *= x
        if offsets[1] - offsets[0] != numel * DTYPE_BYTES[dtype]:
            raise CheckpointError(bad + f": {dtype} {shape} in {offsets[1] - offsets[0]:,} bytes)")
        out[name] = (dtype, tuple(shape))
        spans.append((offsets[0], offsets[1], name))
    end = 0
    for a, b, name in sorted(spans):
        if a < end:
            raise CheckpointError(f"{where}: corrupt safetensors file (tensor {safe(name, 80)!r} at bytes {a:,}-{b:,} "
                                  f"overlaps the one before, which ends at {end:,})")
        if a > end:
            raise CheckpointError(f"{where}: corrupt safetensors file (a gap of {a - end:,} bytes before tensor "
                                  f"{safe(name, 80)!r})")
        end = b
    if size < 8 + n + end:
        raise CheckpointError(f"{where}: corrupt safetensors file (truncated: {size:,} bytes, the header needs "
                              f"{8 + n + end:,})")
    if size > 8 + n + end:
        raise CheckpointError(f"{where}: corrupt safetensors file ({size - 8 - n - end:,} bytes after the last "
                              "tensor: its offsets are out of range of the data)")
    return out


# ---------------------------------------------------------------- writing a folder

_LEFTOVER = re.compile(r"^\.(?P<name>.+)\.(?P<kind>tmp|old)-(?P<pid>\d+)-[^.]*$")


def fsync_tree(folder: Path) -> None:
    """fsync every file under `folder`, then every folder under it, bottom up (it itself last)."""
    for root, dirs, files in os.walk(folder, topdown=False):
        for name in files:
            p = os.path.join(root, name)
            if os.path.islink(p):
                continue
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(root)


def write_folder(path: Path, write: Callable[[Path], object]) -> Path:
    """Write a folder at `path` atomically: `write(tmp)` fills a hidden temporary folder beside it
    (`.NAME.tmp-PID-*`), every file and folder in it is fsynced, then an existing `path` is moved aside
    (`.NAME.old-PID-*`), the new folder renamed in, the parent fsynced and the old one deleted. On any failure the
    temporary folder is removed and the old folder put back. Whether `path` may be replaced is the caller's check
    (each kind knows its own folders); leftovers of dead processes in the parent are cleaned first
    (`recover_folder`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    recover_folder(path.parent)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-{os.getpid()}-", dir=path.parent))
    old: Path | None = None
    try:
        os.chmod(tmp, 0o755)
        write(tmp)
        fsync_tree(tmp)
        if path.exists():
            old = path.parent / f".{path.name}.old-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            os.rename(path, old)
        os.rename(tmp, path)
        fsync_dir(path.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and not path.exists():
            os.rename(old, path)  # put the previous folder back
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return path


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def recover_folder(root: str | Path) -> list[str]:
    """Finish or undo what a save that crashed left in `root` (see write_folder: write `.NAME.tmp-PID-*`, move the
    old `NAME` aside to `.NAME.old-PID-*`, rename the new one in, delete the old one). For a PID that is no longer
    running: a temporary folder is deleted; an aside folder goes back to NAME when NAME is missing (the crash fell
    between the two renames) and it holds a config.json, else it is deleted. Saves in progress (live PIDs) are left
    alone. Returns what was done, one line each."""
    root = Path(root)
    done: list[str] = []
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return done
    for p in entries:
        m = _LEFTOVER.match(p.name)
        if not m or not p.is_dir() or _alive(int(m["pid"])):
            continue
        target = root / m["name"]
        try:
            if m["kind"] == "old" and not target.exists() and (p / "config.json").is_file():
                os.rename(p, target)
                done.append(f"restored {target} from an interrupted save")
            else:
                shutil.rmtree(p)
                done.append(f"removed {p.name}, left by an interrupted save")
        except OSError:
            continue
    if done:
        fsync_dir(root)
    return done


def nonfinite_tensor(path: Path) -> str | None:
    """The name of the first floating tensor of a safetensors file holding NaN or infinity (None: all finite).
    Read through a memory map, tensor by tensor. Not remembered here: its caller, the full validation, is
    remembered per folder and file identity (native's `_remembered`), so listing the same folders again costs nothing."""
    import torch
    from safetensors import safe_open

    os.stat(path)                   # a missing file raises FileNotFoundError, not the CheckpointError below
    try:
        with safe_open(str(path), framework="pt") as f:
            for name in f.keys():
                t = f.get_tensor(name)
                if t.is_floating_point() and not bool(torch.isfinite(t).all()):
                    return name
    except Exception as e:  # noqa: BLE001 - safetensors raises its own error types
        raise CheckpointError(f"{path}: cannot read model.safetensors: {type(e).__name__}: {e}") from None
    return None


__all__ = ["CheckpointError", "DTYPE_BYTES", "FLOAT_DTYPES", "HEADER_CAP", "HFError", "MAX_TENSORS", "check_file",
           "file_identity", "file_sha256", "nonfinite_tensor", "fsync_tree", "open_file", "read_capped", "read_json_file",
           "recover_folder", "safe", "safetensors_header", "write_folder"]
