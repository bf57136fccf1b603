"""Build textcls/data/bundled/word_polarity/sst_words.csv.gz: every single word the SST training trees label
as polar (the one-word phrases of ../shared/data/sst5_phrases/train.csv whose label is not neutral), with its
label collapsed to negative / positive. Words the trees label neutral, and words they never label, are left
out (plausibility counts them as not evidence).

    python scripts/make_word_polarity.py [../shared/data/sst5_phrases/train.csv]
"""
from __future__ import annotations

import csv
import gzip
import sys
from pathlib import Path

POLAR = {"very negative": "negative", "negative": "negative", "positive": "positive",
         "very positive": "positive"}
OUT = Path(__file__).resolve().parents[1] / "textcls/data/bundled/word_polarity/sst_words.csv.gz"


def main(src: str) -> int:
    words: dict[str, str] = {}
    with open(src, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            text = row["text"].strip()
            if len(text.split()) == 1 and row["label"] in POLAR:
                words[text] = POLAR[row["label"]]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(OUT, "wt", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["word", "polarity"])
        for word in sorted(words):
            w.writerow([word, words[word]])
    print(f"{len(words)} polar words -> {OUT}")
    return 0


if __name__ == "__main__":
    here = Path(__file__).resolve().parents[1]
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else str(here.parent / "shared/data/sst5_phrases/train.csv")))
