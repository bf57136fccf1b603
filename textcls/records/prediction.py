"""What a prediction is: `Prediction`, a plain dataclass with numpy maps and no torch (textcls.inference makes it;
the app's server unpickles it from its model worker without importing torch)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Prediction:
    label: str
    probabilities: dict[str, float]
    tokens: list[str]                                     # what the model saw, in order (after truncation)
    maps: dict[str, np.ndarray] = field(default_factory=dict)  # batch axis removed, cropped to true length
    truncated: bool = False                               # the text was cut to the tokenizer's max length
    sentences: list[list[str]] | None = None              # hierarchical models: the sentences' words
    label_index: int = -1
    unknown: list[str] | None = None                      # tokens its word vocabulary lacks, in order with repeats
                                                          # (None: no word vocabulary, e.g. word pieces)

    def to_dict(self, include_maps: bool = False) -> dict[str, Any]:
        d = {"label": self.label, "label_index": self.label_index, "probabilities": self.probabilities,
             "tokens": self.tokens, "truncated": self.truncated, "unknown": self.unknown}
        if self.sentences is not None:
            d["sentences"] = self.sentences
        if include_maps:
            d["maps"] = {k: v.tolist() for k, v in self.maps.items()}
        return d


__all__ = ["Prediction"]
