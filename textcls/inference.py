"""Predictor: text in, prediction + the tokens the model saw + its maps out.

`Predictor.predict(texts, return_maps=False, batch_size=64)` encodes texts with the model's tokenizer, runs
the model in eval mode under `torch.no_grad()` in batches (texts sorted by length inside a call, results in
the caller's order), and returns one `Prediction` per text. Maps come back as numpy arrays with the batch
axis removed and cropped to that example's true size: axes ending in "token" to len(tokens), "sentence"
axes to the number of sentences, "word" axes to the longest sentence's word count (HCAN).

Threads: a call with up to `threads.INTERACTIVE_MAX_TEXTS` texts runs under the interactive thread setting,
a larger one under the batch setting (TEXTCLS_THREADS; see textcls/runtime/threads.py).

The model is shared (the app caches one per checkpoint for every session): a Predictor never trains it,
never changes its parameters, and never stores per-call state on it.
"""
from __future__ import annotations

from pathlib import Path
from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from typing import Any, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from textcls.checkpoint.files import CheckpointError
from textcls.data.unknown import unknown_tokens
from textcls.interpret.importance import crop_map
from textcls.records import Prediction
from textcls.runtime.threads import for_texts


class ModelOutputError(CheckpointError):
    """A model returned what no prediction can be made of (NaN, a wrong shape) or a plugin's model failed: the
    checkpoint cannot be used (a CheckpointError: exit 2 in the CLI, a message on the pages); the message names
    the model, its family and, for a plugin, its package."""


# Prediction lives in textcls.records (no torch): the app's server unpickles predictions made in its model
# worker (textcls.serve) without importing torch. It is re-exported here, where it has always been named.


def _pad_min(t: torch.Tensor, value) -> torch.Tensor:
    """Make every non-batch axis at least 1 long (an all-empty batch still gives the model one pad)."""
    pads = []
    for size in reversed(t.shape[1:]):
        pads += [0, max(0, 1 - size)]
    return F.pad(t, pads, value=value) if any(pads) else t


class Predictor:
    """Wraps a trained model with its tokenizer and label names. See the module docstring."""

    def __init__(self, model: torch.nn.Module, tokenizer, labels: Sequence[str], name: str = "",
                 info: dict[str, Any] | None = None, path: str | Path | None = None):
        labels = [str(x) for x in labels]
        num_labels = getattr(getattr(model, "config", None), "num_labels", len(labels))
        if len(labels) != num_labels:
            raise ValueError(f"{len(labels)} label names for a model with {num_labels} classes")
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.labels = labels
        self.name = name
        self.info = dict(info or {})
        self.path = Path(path) if path is not None else None
        self._specs = {s.name: s for s in model.map_specs()} if hasattr(model, "map_specs") else {}

    def __repr__(self) -> str:
        model = getattr(self.model, "registry_name", type(self.model).__name__)
        return f"Predictor(name={self.name!r}, model={model!r}, labels={self.labels})"

    @property
    def device(self) -> torch.device:
        for p in self.model.parameters():
            return p.device
        return torch.device("cpu")

    def encode(self, texts: Sequence[str]):
        """The tokenizer's `Encoded` for texts, with every axis at least one position long."""
        enc = self.tokenizer.encode(list(texts))
        pad_id = int(getattr(getattr(self.tokenizer, "vocab", None), "pad_id", 0))
        enc.token_ids = _pad_min(enc.token_ids, pad_id)
        enc.mask = _pad_min(enc.mask, False)
        return enc

    def predict(self, texts: Sequence[str] | str, return_maps: bool = False, batch_size: int = 64
                ) -> list[Prediction]:
        """One Prediction per text (a single string is taken as a list of one)."""
        texts = self._checked(texts, batch_size)
        results: list[Prediction | None] = [None] * len(texts)
        with for_texts(len(texts)):  # a few texts: interactive thread setting; a split: batch (textcls.runtime.threads)
            for index, preds in self._batches(texts, return_maps, batch_size):
                for i, p in zip(index, preds):
                    results[i] = p
        return results  # type: ignore[return-value]

    def batches(self, texts: Sequence[str] | str, return_maps: bool = False, batch_size: int = 64
                ) -> Iterator[tuple[list[int], list[Prediction]]]:
        """`predict`, one batch at a time: (the texts' positions, their Predictions) per batch, in the order
        `predict` computes them (texts sorted by length), so a caller can pause between batches and get the same
        numbers. The caller chooses the thread setting (textcls.runtime.threads), which `predict` sets itself."""
        yield from self._batches(self._checked(texts, batch_size), return_maps, batch_size)

    def _checked(self, texts, batch_size) -> list[str]:
        if isinstance(texts, str):
            texts = [texts]
        elif isinstance(texts, (bytes, bytearray)):
            raise TypeError("predict: texts are bytes; decode them to str first (e.g. data.decode('utf-8'))")
        elif isinstance(texts, (Mapping, AbstractSet)):
            raise TypeError(f"predict: texts must be a str or a list of str, not a {type(texts).__name__} "
                            "(a mapping or set has no defined order of texts)")
        texts = list(texts)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TypeError(f"predict: texts[{i}] is {type(t).__name__}, expected str")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        if self.model.training:  # someone switched the shared model to training mode; predictions need eval
            self.model.eval()
        return texts

    def _batches(self, texts: list[str], return_maps: bool, batch_size: int
                 ) -> Iterator[tuple[list[int], list[Prediction]]]:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        device = self.device
        for s in range(0, len(order), batch_size):
            index = order[s:s + batch_size]
            enc = self.encode([texts[i] for i in index])
            with torch.no_grad():
                try:
                    out = self.model(enc.token_ids.to(device), enc.mask.to(device), return_maps=return_maps)
                except Exception as e:
                    plugin = self._plugin()
                    if plugin is None:
                        raise
                    raise ModelOutputError(f"{self._who()} failed: {type(e).__name__}: {e}") from None
            self._check_logits(out.logits, len(index))
            probs = torch.softmax(out.logits.float(), dim=-1).cpu().numpy()        # (B, C)
            maps = {k: v.detach().cpu().numpy() for k, v in out.maps.items()} if return_maps else {}
            preds = []
            vocab = getattr(self.tokenizer, "vocab", None)
            vocab = vocab if hasattr(vocab, "stoi") else None                  # a word vocabulary, not pieces
            for b in range(len(index)):
                sentences = enc.sentences[b] if getattr(enc, "sentences", None) is not None else None
                k = int(probs[b].argmax())
                preds.append(Prediction(
                    label=self.labels[k],
                    probabilities={lab: float(p) for lab, p in zip(self.labels, probs[b])},
                    tokens=list(enc.tokens[b]),
                    maps={name: self._crop(name, m[b], len(enc.tokens[b]), sentences) for name, m in maps.items()},
                    truncated=bool(enc.truncated[b]),
                    sentences=[list(x) for x in sentences] if sentences is not None else None,
                    label_index=k, unknown=unknown_tokens(vocab, enc.tokens[b])))
            yield index, preds

    def _plugin(self) -> str | None:
        from textcls.models.plugins import plugin_of
        return plugin_of(getattr(self.model, "registry_name", ""))

    def _who(self) -> str:
        """The model as a message names it: the checkpoint, its family, and the package a plugin came from."""
        family = getattr(self.model, "registry_name", type(self.model).__name__)
        plugin = self._plugin()
        where = f", from the model package {plugin!r}" if plugin else ""
        return f"model {self.name or family!r} ({family}{where})"

    def _check_logits(self, logits, batch: int) -> None:
        """Logits (batch, number of labels), all finite; anything else is refused naming the model (a NaN would
        otherwise read as the first label at p = NaN, a wrong shape as a probability spread over other classes)."""
        want = (batch, len(self.labels))
        if not isinstance(logits, torch.Tensor) or tuple(logits.shape) != want:
            shape = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
            raise ModelOutputError(f"{self._who()} returned logits of shape {shape}, expected {want} (texts, "
                                   "labels); refused")
        bad = ~torch.isfinite(logits.float()).all(-1)                              # (B,)
        if bool(bad.any()):
            raise ModelOutputError(f"{self._who()} returned NaN or infinite logits for {int(bad.sum())} of {batch} "
                                   "text(s); refused")

    def _crop(self, name: str, m: np.ndarray, n_tokens: int, sentences) -> np.ndarray:
        """Crop one example's map (batch axis already removed) along its sequence axes."""
        n_sent = len(sentences) if sentences is not None else None
        n_word = max((len(x) for x in sentences), default=0) if sentences is not None else None
        return crop_map(self._specs.get(name), m, n_tokens, n_sent, n_word)
