"""What the app keys its caches (and the model worker its models) on: a checkpoint folder's identity - every file
its load may read - and a stamp of it (a number that changes whenever any of those files changes). Above `files`
and `hf`: the identity of a Hugging Face delta includes its installed base folder."""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from textcls.checkpoint.files import file_identity
from textcls.checkpoint.hf import base_folder_of

_BASES: dict[tuple, Any] = {}               # (folder, its config.json's identity) -> a delta's base folder or None


def checkpoint_identity(folder: str | Path) -> tuple:
    """Every file a checkpoint folder's load may read, as (name, inode, size, mtime) - `file_identity` of the
    folder (weights, config, vocabulary, tokenizer.json, vocab.txt, special tokens, tokenizer config, textcls.json,
    ...) and, for a Hugging Face delta, of its installed base folder, where the tokenizer and the base weights
    are read from. A file replaced, edited or added changes it."""
    folder = Path(folder)
    ident = file_identity(folder)
    config = next((e for e in ident if e[0] == "config.json"), None)
    key = (str(folder.absolute()), config)
    base = _BASES.get(key)
    if key not in _BASES:
        delta, base = base_folder_of(folder) if config is not None else (False, None)
        if len(_BASES) > 1024:
            _BASES.clear()
        if base is not None or not delta:          # a delta whose base is not installed yet is looked up again
            _BASES[key] = base
    return ident, ((str(base), file_identity(base)) if base is not None else None)


def checkpoint_stamp(folder: str | Path) -> float:
    """`checkpoint_identity` of a folder (and its path) as one number, what the app keys its caches and the model
    worker its models on: a float that changes whenever any file the checkpoint reads changes (53 bits of a
    digest, exact as a float)."""
    raw = repr((str(Path(folder).absolute()), checkpoint_identity(folder))).encode("utf-8", "surrogatepass")
    return float(int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "little") >> 11)


__all__ = ["checkpoint_identity", "checkpoint_stamp"]
