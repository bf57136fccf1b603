"""The one unknown-word rule of every page and command, without torch (the app's server asks it of a model's
facts sent by the worker): which tokens a word vocabulary reads as unknown."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

PAD_ID = 0             # the id of the padding token in every textcls vocabulary
UNK_ID = 1             # the id every word outside the vocabulary is read as


def unknown_tokens(vocab: Any, tokens: Sequence[str]) -> list[str] | None:
    """The tokens a word vocabulary reads as unknown, in order and with repeats: words it lacks, and a literal pad
    or unknown token typed by the user (the tokenizer maps both to the unknown id). `vocab`: a `Vocab`, anything
    with a `stoi` map (a worker's ModelFacts), or the map itself. None for a vocabulary with no word table to
    check (a Hugging Face tokenizer reads every word as pieces)."""
    stoi = vocab if isinstance(vocab, Mapping) else getattr(vocab, "stoi", None)
    if stoi is None:
        return None
    unk, pad = getattr(vocab, "unk_id", UNK_ID), getattr(vocab, "pad_id", PAD_ID)
    return [t for t in tokens if stoi.get(t, unk) in (unk, pad)]


__all__ = ["PAD_ID", "UNK_ID", "unknown_tokens"]
