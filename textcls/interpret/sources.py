"""Where instances come from: a Predictor, or a model with its tokenizer, as one `Source` (model, encoder, label
names, unknown-word id)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from textcls.data.text import PAD_ID, UNK_ID
from textcls.interpret.instances import Instance
from textcls.interpret.probabilities import is_model


@dataclass
class Source:
    """What text-level functions need: the model, an encoder of texts, label names, the unknown-word id."""

    model: Any
    encode: Callable[[list[str]], Any]
    labels: list[str] | None = None
    name: str = ""
    unk_id: int = UNK_ID

    def instances(self, texts: Sequence[str]) -> list[Instance]:
        if isinstance(texts, str):
            raise TypeError("pass a list of texts, not one string")
        enc = self.encode(list(texts))
        pad = getattr(self.model.config, "pad_id", PAD_ID)
        return Instance.from_batch(enc.token_ids, enc.mask, getattr(enc, "tokens", None), pad_id=pad,
                                   unk_id=self.unk_id)


def _unk_id(tokenizer: Any) -> int:
    vocab = getattr(tokenizer, "vocab", None)
    return int(getattr(vocab, "unk_id", UNK_ID))


def as_source(obj: Any, tokenizer: Any = None, labels: Sequence[str] | None = None) -> Source:
    """A Predictor (has .model and .encode), or a model with a tokenizer (has .encode), or a Source."""
    if isinstance(obj, Source):
        return obj
    if isinstance(obj, tuple) and len(obj) == 2 and tokenizer is None:
        obj, tokenizer = obj
    if tokenizer is None and hasattr(obj, "model") and hasattr(obj, "encode"):
        return Source(obj.model, obj.encode, list(getattr(obj, "labels", None) or []) or None,
                      str(getattr(obj, "name", "")), _unk_id(getattr(obj, "tokenizer", None)))
    if is_model(obj) and tokenizer is not None and hasattr(tokenizer, "encode"):
        return Source(obj, tokenizer.encode, list(labels) if labels else None, getattr(obj, "registry_name", ""),
                      _unk_id(tokenizer))
    raise TypeError("expected a Predictor, or a model with a tokenizer (model, tokenizer)")


__all__ = ["Source", "as_source"]
