"""The SST word-polarity table (bundled/word_polarity/sst_words.csv.gz, scripts/make_word_polarity.py): every
single word the SST training trees label as polar, with "negative" or "positive". Used as human evidence by
the plausibility measure (textcls.interpret.plausibility)."""
from __future__ import annotations

import csv
import gzip
from functools import lru_cache
from pathlib import Path

TABLE = Path(__file__).resolve().parent / "bundled" / "word_polarity" / "sst_words.csv.gz"


@lru_cache(maxsize=1)
def word_polarity() -> dict[str, str]:
    """lower-cased word -> "negative" / "positive" (4,255 words)."""
    with gzip.open(TABLE, "rt", encoding="utf-8", newline="") as f:
        return {row["word"]: row["polarity"] for row in csv.DictReader(f)}


__all__ = ["TABLE", "word_polarity"]
