"""Words for Hugging Face encoders: a tokenizer that gives textcls one id per word (`textcls.models.hf`).

`HFWordTokenizer(hf_tokenizer, table, max_len)` wraps a transformers *fast* tokenizer. A text is cleaned
(`text.clean_text`), split into words by the tokenizer's own pre-tokenizer (BERT: whitespace and punctuation,
so `don't` is `don`, `'`, `t`), each word cut into its word pieces by the tokenizer's model, and each word's
piece sequence becomes one id of the `WordTable`. `Encoded.tokens` are the words as written in the text.

Words are clean: the leading space that byte-level BPE (GPT-2, RoBERTa, ModernBERT) and sentencepiece (ALBERT,
XLM-R, DeBERTa-v3) tokenizers keep in a word's offsets is dropped, and a word is never shown as its pieces
(no `##`, `Ġ` or `▁`).

Long texts are TRUNCATED (never windowed): whole words are kept while their pieces, plus the special pieces, fit in
`max_len` (at most the model's position table); `truncated[i]` says a text was cut (the pages show it). A first
word longer than that budget keeps its first pieces.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from textcls.models.hf.model import MAX_PIECES_PER_WORD, WordTable
from textcls.data.text import Encoded, clean_text

CHARS_PER_PIECE = 40              # a text is cut to max_len * this many characters before tokenising


@dataclass
class HFTokenizerConfig:
    """The settings the pages read from `tokenizer.config` (flat word-level input)."""

    max_len: int = 512
    level: str = "word"
    hierarchical: bool = False
    lowercase: bool = False
    strip_html: bool = True
    entities: str = "none"


class WordVocab:
    """The word table seen as a vocabulary: pad_id 0, unk_id 1. `itos` (HotFlip's candidates) first registers every
    whole-word piece of the model's vocabulary (not "##..."-continuations, not specials) as a word, so a search over
    the vocabulary sees the model's own words, then names each table entry by its pieces joined."""

    pad_id = 0
    unk_id = 1

    def __init__(self, table: WordTable, hf_tokenizer):
        self.table = table
        self.hf = hf_tokenizer
        self._itos: list[str] = []

    def __len__(self) -> int:
        return len(self.table)

    @property
    def itos(self) -> list[str]:
        if not self._itos:
            specials = set(self.hf.all_special_ids)
            for token, pid in sorted(self.hf.get_vocab().items(), key=lambda kv: kv[1]):
                if pid not in specials and not token.startswith("##"):
                    self.table.id((pid,))
        n = len(self.table)
        if len(self._itos) < n:
            extra = [self.hf.convert_tokens_to_string(self.hf.convert_ids_to_tokens(list(self.table.pieces(i))))
                     .strip() for i in range(len(self._itos), n)]
            self._itos = self._itos + extra
        return self._itos[:n]


def _clean_words(text: str, spans: list[list[int]], pieces: list[list[int]]) -> tuple[list[str], list[list[int]]]:
    """Each word as written, without the space a byte-level or sentencepiece tokenizer keeps in front of it (its
    offsets cover ' acting'); a word that is only spaces gives its pieces to the next word (the last: to the one
    before it)."""
    words: list[str] = []
    kept: list[list[int]] = []
    carry: list[int] = []
    for (a, b), p in zip(spans, pieces):
        w = text[a:b].strip()
        if not w:
            carry += p
            continue
        words.append(w)
        kept.append(carry + p)
        carry = []
    if carry and kept:
        kept[-1] += carry
    return words, kept


class HFWordTokenizer:
    """texts -> `Encoded` of word ids (see the module docstring)."""

    def __init__(self, hf_tokenizer, table: WordTable, max_len: int = 512, specials: int = 2):
        if not getattr(hf_tokenizer, "is_fast", False):
            raise ValueError("the tokenizer is not a fast (Rust) tokenizer; textcls needs its word boundaries")
        self.hf = hf_tokenizer
        self.table = table
        self.config = HFTokenizerConfig(max_len=int(max_len),
                                        lowercase=bool(getattr(hf_tokenizer, "do_lower_case", False)))
        self.vocab = WordVocab(table, hf_tokenizer)
        self.specials = int(specials)                     # the special pieces the model adds ([CLS] and [SEP]: 2)

    @property
    def budget(self) -> int:
        return max(1, self.config.max_len - self.specials)

    def words(self, text: str) -> tuple[list[str], list[tuple[int, ...]], bool]:
        return self.split([text])[0]

    def split(self, texts: Sequence[str]) -> list[tuple[list[str], list[tuple[int, ...]], bool]]:
        """Per text: (words as written, each word's piece ids, truncated)."""
        cap = self.config.max_len * CHARS_PER_PIECE
        cleaned = [clean_text(t, self.config.strip_html) for t in texts]
        cut = [len(t) > cap for t in cleaned]
        cleaned = [t[:cap] for t in cleaned]
        batch = self.hf(cleaned, add_special_tokens=False, return_offsets_mapping=True, truncation=False,
                        verbose=False)
        out = []
        for i, text in enumerate(cleaned):
            enc = batch.encodings[i]
            spans: list[list[int]] = []
            pieces: list[list[int]] = []
            last = None
            for pid, wid, (a, b) in zip(enc.ids, enc.word_ids, enc.offsets):
                if wid is None:
                    continue
                if wid != last:
                    spans.append([a, b])
                    pieces.append([pid])
                    last = wid
                else:
                    pieces[-1].append(pid)
                    spans[-1][1] = b
            words, pieces = _clean_words(text, spans, pieces)
            pieces = [p[:MAX_PIECES_PER_WORD] for p in pieces]
            truncated = cut[i]
            if truncated and words:                       # the cut may have split the last word
                words, pieces = words[:-1], pieces[:-1]
            kept, used = 0, 0
            for p in pieces:
                if used + len(p) > self.budget:
                    break
                used += len(p)
                kept += 1
            if kept < len(pieces):
                truncated = True
                if kept == 0:
                    pieces[0] = pieces[0][:self.budget]
                    kept = 1
            out.append((words[:kept], [tuple(p) for p in pieces[:kept]], truncated))
        return out

    def tokenize(self, text: str) -> list[str]:
        return self.split([text])[0][0]

    def encode(self, texts: Sequence[str]) -> Encoded:
        rows = self.split(list(texts))
        W = max([len(w) for w, _, _ in rows] + [1])
        ids = torch.zeros(len(rows), W, dtype=torch.long)           # (B, W) pad word 0
        mask = torch.zeros(len(rows), W, dtype=torch.bool)          # (B, W)
        for b, (_, pieces, _) in enumerate(rows):
            if pieces:
                ids[b, :len(pieces)] = torch.tensor([self.table.id(p) for p in pieces])
                mask[b, :len(pieces)] = True
        return Encoded(ids, mask, [w for w, _, _ in rows], None, [t for _, _, t in rows])

    def pieces_of(self, text: str) -> tuple[list[str], list[int]]:
        """(the word pieces the encoder reads between [CLS] and [SEP], the index of each piece's word)."""
        words, pieces, _ = self.split([text])[0]
        toks, owner = [], []
        for w, p in enumerate(pieces):
            toks += self.hf.convert_ids_to_tokens(list(p))
            owner += [w] * len(p)
        return toks, owner


__all__ = ["CHARS_PER_PIECE", "HFTokenizerConfig", "HFWordTokenizer", "WordVocab"]
