"""Tokenisation: text cleaning, word / character tokens, sentence splitting, the vocabulary, and batch encoding.

Choices (written down because every model and every heatmap depends on them):

- Cleaning (`clean_text`), before anything else: HTML line breaks (`<br />`, as left in IMDB) become spaces and
  numeric character references (`&#39;`, and AG News' bare `#39;`) and named entities are decoded when
  `strip_html`; control characters (C0/C1, zero-width spaces, BOM, lone surrogates) are removed and every
  whitespace run becomes one space; typographic quotes become ASCII ones; non-ASCII text is NFC-normalised.
- Word level (`level="word"`): one regular expression in the style of the Penn Treebank tokeniser (which made
  the bundled SST files, already tokenised by spaces; Kim 2014's `clean_str` splits clitics the same way) and
  of GloVe's vocabulary, so raw text comes out like those files (98% of SST-2 sentences identically): clitics
  split (`don't` -> `do n't`, `it's` -> `it 's`), hyphenated compounds and decimal numbers kept whole
  (`re-imagining`, `3.5`), markup tags kept as one token (SemEval's `<e1>`, `</e1>`: dropped unless the
  `entities` mode is a relation one), every other symbol its own token (punctuation, each emoji code point). Lower-cased when `lowercase`.
- Character level (`level="char"`): the cleaned text's characters, whitespace runs as one `" "` token.
- Sentences (`split_sentences`, used for HCAN's (B, S, W) input, built by `to_hierarchical`): a sentence ends after each `.`, `!` or `?` token, which stays its last token; a trailing remainder
  is the last sentence. `...` is one token and ends no sentence; abbreviations (`mr.`, `u.s.`) are one token.
- Vocabulary: `<pad>` = 0, `<unk>` = 1, then tokens by descending frequency (ties alphabetically), keeping
  those seen `min_freq` times, at most `max_size` entries in total (the two specials included, so
  `max_size` is the model's vocab_size). A text containing the literal string `<pad>` gets `<unk>`, never id 0.
- Encoding: ids padded with 0 to the longest text of the batch (at least one position), `mask` True on real
  tokens. Flat inputs keep the first `max_len` tokens (a relation input whose tags lie past them: the tokens
  around its entities, `relation.entity_window`); hierarchical ones the first `max_sentences` sentences and the
  first `max_words` words of each. `Encoded.tokens` are exactly the tokens at the unmasked positions, in order
  (the normalised word, also for words the vocabulary does not know: the heatmap shows the word,
  the model saw `<unk>`); `truncated[i]` says whether anything was cut.
- Empty input (`""`, only spaces or control characters): no tokens; its row is one pad position with an
  all-False mask (every model accepts an all-pad row and returns finite logits, so a prediction is still
  made - from the biases alone), `tokens[i] == []`, `sentences[i] == []`.

Speed: a text of 100,000 characters is cleaned (C-speed regexes) and then tokenised lazily, stopping at the
first token past the limit (about 2 ms). Encoding 10,000 SST-2 sentences takes about 0.22 s of CPU time on one
core (flat, with padding and tensors; 0.30 s hierarchical). Hugging Face `tokenizers` (WordLevel + the same
regex as a Split pre-tokenizer, TOKENIZERS_PARALLELISM off) needed 0.32 s for the ids alone, and 0.23 s with
a bare whitespace pre-tokenizer: per-call overhead dominates on short sentences, so it is not used here.
"""
from __future__ import annotations

import html
import itertools
import json
import re
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass, fields
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
import torch

PAD = "<pad>"
UNK = "<unk>"
from textcls.data.unknown import PAD_ID, UNK_ID, unknown_tokens  # noqa: F401  (one rule; re-exported)
from textcls.data.readable import readable  # noqa: F401  (torch-free, for the app's server; re-exported)
LEVELS = ("word", "char")
SENTENCE_END = frozenset({".", "!", "?"})
# SemEval's entity tags (relation.MARKERS): with entities="none" (every model not made for relation data) they are
# dropped, as "drop" does; the relation modes keep, check or mask them
RELATION_TAGS = frozenset({"<e1>", "</e1>", "<e2>", "</e2>"})

# ------------------------------------------------------------------------------------------------ cleaning

_HTML_BREAK = re.compile(r"<\s*br\s*/?\s*>", re.IGNORECASE)
_NUMERIC_REF = re.compile(r"&?#(\d{1,7});")  # "&#39;" and AG News' bare "#39;"
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f\u200b\u200c\u200e\u200f\u202a-\u202e\u2060\u2066-\u2069"
                      "\ufeff\ud800-\udfff]")   # bidi embeddings/overrides/isolates would mirror the tokens shown
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201b": "'", "\u2032": "'",
                         "\u201c": '"', "\u201d": '"', "\u201f": '"', "\u00a0": " "})

_WORD = re.compile(r"""
    \w+(?:-\w+)*(?![\w.'-]|[,:]\d)  # fast path: a word or compound not followed by . ' - or ,digit
  | </?[a-z][a-z0-9]*>          # markup kept as one token: SemEval's <e1> </e1>
  | -[lr][rsc]b-                # Penn Treebank brackets as in the SST files: -lrb- -rrb-
  | \w+(?=n't\b) | n't\b        # do n't, ca n't (Penn Treebank / Kim 2014 style)
  | '(?:s|re|ve|d|ll|m)\b       # clitics: it 's, we 're, i 've, he 'd, you 'll, i 'm
  | '\d0s\b                     # decades: '70s
  | (?:[a-z]\.){2,}             # initialisms: u.s. e.t. a.m.
  | (?:mrs?|ms|dr|jr|sr|st|vs|prof|inc|ltd|mt|gen|sen|gov|capt|sgt)\.   # titles and abbreviations
  | \d+(?:[.,:]\d+)+            # 3.5  1,000  10:30
  | \w+(?:-\w+)*                # words and hyphenated compounds: re-imagining, cutting-room
  | \.{3,} | -{2,} | `` | ''    # ellipsis, dash, Penn Treebank quotes
  | [^\w\s]                     # any other symbol alone: punctuation, each emoji code point
""", re.VERBOSE | re.IGNORECASE)


def _numeric_ref(m: re.Match) -> str:
    code = int(m.group(1))
    if code == 0 or code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        return ""
    return chr(code)


def clean_text(text: str, strip_html: bool = True) -> str:
    """Normalise one raw text (see the module docstring): the string every tokeniser level starts from."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if strip_html:
        if "<" in text:
            text = _HTML_BREAK.sub(" ", text)
        if "#" in text:
            text = _NUMERIC_REF.sub(_numeric_ref, text)
        if "&" in text:
            text = html.unescape(text)
    if not text.isprintable():  # control, format and whitespace characters other than " "
        text = _CONTROL.sub("", text)
    if not text.isascii():
        text = unicodedata.normalize("NFC", text).translate(_QUOTES)
    return " ".join(text.split())


def iter_sentences(tokens: Iterable[str], ends: frozenset[str] = SENTENCE_END) -> Iterator[list[str]]:
    """Lazy sentence split over any token iterable (lets long texts stop early): a sentence ends after each
    `.`, `!` or `?` token, which stays its last token; a trailing remainder is the last sentence.
    `split_sentences` is this, with limits."""
    current: list[str] = []
    for tok in tokens:
        current.append(tok)
        if tok in ends:
            yield current
            current = []
    if current:
        yield current


def _check_limit(name: str, value: int | None) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ValueError(f"{name} must be a positive int or None, got {value!r}")


def split_sentences(tokens: Sequence[str], max_sentences: int | None = None,
                    max_words: int | None = None) -> list[list[str]]:
    """Split a token list into sentences after each ".", "!" or "?" token (it stays as the sentence's last
    token); a trailing remainder without a terminator is the last sentence; no tokens -> [].
    `max_sentences` keeps the first sentences, `max_words` the first words of each sentence."""
    _check_limit("max_sentences", max_sentences)
    _check_limit("max_words", max_words)
    if isinstance(tokens, str):
        raise TypeError("split_sentences takes a list of tokens, not a string (tokenize first)")
    sentences = list(iter_sentences(tokens))
    if max_sentences is not None:
        sentences = sentences[:max_sentences]
    if max_words is not None:
        sentences = [s[:max_words] for s in sentences]
    return sentences


def to_hierarchical(ids_list: Sequence[Sequence[Sequence[int]]], max_sentences: int | None = None,
                    max_words: int | None = None, pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Documents as lists of per-sentence id lists -> (token_ids (B, S, W) long, mask (B, S, W) bool).

    S / W are the largest sentence count / sentence length in the batch, capped by max_sentences / max_words
    (longer documents and sentences are truncated), and at least 1, so a document with no sentences is an
    all-pad row. Mask is True at every kept position (ids equal to pad_id inside a sentence stay real)."""
    _check_limit("max_sentences", max_sentences)
    _check_limit("max_words", max_words)
    docs = [list(doc)[:max_sentences] if max_sentences else list(doc) for doc in ids_list]
    docs = [[list(s)[:max_words] if max_words else list(s) for s in doc] for doc in docs]
    S = max([len(d) for d in docs] + [1])
    W = max([len(s) for d in docs for s in d] + [1])
    ids = torch.full((len(docs), S, W), pad_id, dtype=torch.long)
    mask = torch.zeros((len(docs), S, W), dtype=torch.bool)
    for b, doc in enumerate(docs):
        for s, sent in enumerate(doc):
            if sent:
                ids[b, s, :len(sent)] = torch.as_tensor(sent, dtype=torch.long)
                mask[b, s, :len(sent)] = True
    return ids, mask


# ------------------------------------------------------------------------------------------------ config

@dataclass
class TokenizerConfig:
    """How texts become token ids. Saved with every checkpoint (`Tokenizer.to_dict`)."""

    level: str = "word"          # "word" or "char"
    lowercase: bool = True
    max_len: int = 400           # flat inputs: tokens kept per text
    hierarchical: bool = False   # (B, S, W) sentence/word input for HCAN
    max_sentences: int = 30      # hierarchical: sentences kept per text
    max_words: int = 50          # hierarchical: words kept per sentence
    strip_html: bool = True
    entities: str = "none"       # relation data: "keep" / "drop" / "mask" the <e1>..</e2> tags (relation.py)

    def __post_init__(self):
        if self.level not in LEVELS:
            raise ValueError(f"tokenizer level must be one of {LEVELS}, got {self.level!r}")
        from textcls.data.relation import ENTITY_MODES
        if self.entities not in ENTITY_MODES:
            raise ValueError(f"tokenizer entities must be one of {ENTITY_MODES}, got {self.entities!r}")
        if self.entities != "none" and (self.level != "word" or self.hierarchical):
            raise ValueError("tokenizer entities (relation markers) need flat word-level input")
        for name in ("max_len", "max_sentences", "max_words"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"tokenizer {name} must be a positive integer, got {v!r}")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TokenizerConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown tokenizer settings {unknown}; known: {sorted(known)}")
        return cls(**d)


# ------------------------------------------------------------------------------------------------ vocabulary

class Vocab:
    """Token <-> id table with `<pad>` = 0 and `<unk>` = 1."""

    pad_id = PAD_ID
    unk_id = UNK_ID

    def __init__(self, itos: Sequence[str] | None = None):
        itos = [PAD, UNK] if itos is None else list(itos)
        if len(itos) < 2 or itos[0] != PAD or itos[1] != UNK:
            raise ValueError(f"a vocabulary starts with {PAD!r}, {UNK!r}; got {itos[:2]!r}")
        bad = [t for t in itos if not isinstance(t, str) or not t]
        if bad:
            raise ValueError(f"vocabulary entries must be non-empty strings; got {bad[:3]!r}")
        self.itos: list[str] = itos
        self.stoi: dict[str, int] = {t: i for i, t in enumerate(itos)}
        if len(self.stoi) != len(itos):
            dup = [t for t, c in Counter(itos).items() if c > 1]
            raise ValueError(f"duplicate vocabulary entries: {dup[:5]!r}")
        self._lookup = dict(self.stoi)
        del self._lookup[PAD]  # text saying "<pad>" is an unknown word, never a pad

    @classmethod
    def build(cls, token_lists: Iterable[Iterable[str]], min_freq: int = 1, max_size: int | None = None) -> "Vocab":
        """Count tokens; keep those seen >= min_freq times, most frequent first (ties alphabetical), at most
        max_size entries including `<pad>` and `<unk>`."""
        if min_freq < 1:
            raise ValueError(f"min_freq must be >= 1, got {min_freq}")
        if max_size is not None and max_size < 2:
            raise ValueError(f"max_size must be >= 2 (room for {PAD} and {UNK}), got {max_size}")
        counts: Counter[str] = Counter()
        for toks in token_lists:
            counts.update(toks)
        for special in (PAD, UNK):
            counts.pop(special, None)
        kept = sorted((kv for kv in counts.items() if kv[1] >= min_freq), key=lambda kv: (-kv[1], kv[0]))
        if max_size is not None:
            kept = kept[: max_size - 2]
        return cls([PAD, UNK] + [t for t, _ in kept])

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    def __eq__(self, other) -> bool:
        return isinstance(other, Vocab) and self.itos == other.itos

    def __repr__(self) -> str:
        return f"Vocab({len(self)} tokens)"

    def lookup(self, tokens: Iterable[str]) -> list[int]:
        get = self._lookup.get
        return [get(t, UNK_ID) for t in tokens]

    def to_dict(self) -> dict[str, Any]:
        return {"pad": PAD, "unk": UNK, "itos": list(self.itos)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, data: str | bytes | dict | list) -> "Vocab":
        """Inverse of `to_json`; also accepts the parsed dict or a bare token list."""
        if isinstance(data, (str, bytes)):
            try:
                data = json.loads(data)
            except json.JSONDecodeError as e:
                raise ValueError(f"vocabulary is not valid JSON: {e}") from None
        if isinstance(data, dict):
            if "itos" not in data:
                raise ValueError(f"vocabulary JSON needs an 'itos' list; keys found: {sorted(data)}")
            data = data["itos"]
        if not isinstance(data, list):
            raise ValueError(f"vocabulary JSON must hold a token list, got {type(data).__name__}")
        return cls(data)


# ------------------------------------------------------------------------------------------------ encoding

@dataclass
class Encoded:
    """A batch ready for a model (see the module docstring for what each field holds)."""

    token_ids: torch.Tensor            # (B, L) or (B, S, W) long
    mask: torch.Tensor                 # same shape, bool
    tokens: list[list[str]]            # per text, the tokens at the unmasked positions, in order
    sentences: list[list[list[str]]] | None = None   # hierarchical: per text, per sentence
    truncated: list[bool] | None = None

    def __post_init__(self):
        if self.truncated is None:
            self.truncated = [False] * len(self.tokens)

    def __len__(self) -> int:
        return self.token_ids.shape[0]

    @property
    def hierarchical(self) -> bool:
        return self.token_ids.dim() == 3

    def select(self, index: Sequence[int] | torch.Tensor, trim: bool = True) -> "Encoded":
        """Rows `index` as a new Encoded; with `trim`, padding columns no selected row uses are cut
        (at least one position stays), so a mini-batch is only as long as its longest text."""
        idx = torch.as_tensor(index, dtype=torch.long)
        ids, mask = self.token_ids[idx], self.mask[idx]
        if trim:
            if ids.dim() == 2:
                L = max(1, int(mask.sum(1).max())) if len(idx) else 1
                ids, mask = ids[:, :L], mask[:, :L]
            else:
                S = max(1, int(mask.any(2).sum(1).max())) if len(idx) else 1
                W = max(1, int(mask.sum(2).max())) if len(idx) else 1
                ids, mask = ids[:, :S, :W], mask[:, :S, :W]
        rows = idx.tolist()
        return Encoded(ids, mask, [self.tokens[i] for i in rows],
                       None if self.sentences is None else [self.sentences[i] for i in rows],
                       [self.truncated[i] for i in rows])


class Tokenizer:
    """Texts -> `Encoded`, with a `TokenizerConfig` and a `Vocab`."""

    def __init__(self, config: TokenizerConfig | None = None, vocab: Vocab | None = None):
        self.config = config if config is not None else TokenizerConfig()
        self.vocab = vocab if vocab is not None else Vocab()

    def __repr__(self) -> str:
        return f"Tokenizer({self.config}, {self.vocab!r})"

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @property
    def pad_id(self) -> int:
        return PAD_ID

    # ---- tokens
    def _stream(self, text: str) -> Iterator[str]:
        """All tokens of one text, lazily (callers stop early on long texts)."""
        c = self.config
        text = clean_text(text, c.strip_html)
        if c.lowercase:
            text = text.lower()
        if c.level == "char":
            return iter(text)
        if len(text) < 4000:          # short texts: findall is faster than a generator
            toks = iter(_WORD.findall(text))
        else:
            toks = (m.group() for m in _WORD.finditer(text))
        if c.entities == "none" and "<" in text:     # a model not made for relations: the tags are no words
            toks = (t for t in toks if t.lower() not in RELATION_TAGS)
        return toks

    def tokenize(self, text: str) -> list[str]:
        """Every token of one text (no truncation), with the `entities` setting applied (relation.py)."""
        if self.config.entities != "none":
            from textcls.data.relation import apply_entity_mode
            return apply_entity_mode(list(self._stream(text)), self.config.entities)
        return list(self._stream(text))

    def split_sentences(self, tokens: Sequence[str]) -> list[list[str]]:
        return split_sentences(tokens)

    def _flat(self, text: str) -> tuple[list[str], bool]:
        n = self.config.max_len
        if self.config.entities != "none":     # spans are checked on the whole text, then it is cut
            toks = self.tokenize(text)           # around the entities, so no tag is lost (relation.py)
            if len(toks) <= n:
                return toks, False
            from textcls.data.relation import apply_entity_mode, entity_window
            return apply_entity_mode(entity_window(list(self._stream(text)), n), self.config.entities)[:n], True
        toks = list(itertools.islice(self._stream(text), n + 1))
        return (toks[:n], True) if len(toks) > n else (toks, False)

    def _hier(self, text: str) -> tuple[list[list[str]], bool]:
        c = self.config
        sents = list(itertools.islice(iter_sentences(self._stream(text)), c.max_sentences + 1))
        cut = len(sents) > c.max_sentences or any(len(s) > c.max_words for s in sents)
        return [s[: c.max_words] for s in sents[: c.max_sentences]], cut

    # ---- batches
    def encode(self, texts: str | Sequence[str]) -> Encoded:
        """Encode a batch of texts (a single str is a batch of one)."""
        if isinstance(texts, str):
            texts = [texts]
        texts = list(texts)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TypeError(f"text {i} must be a str, got {type(t).__name__}")
        lookup = self.vocab.lookup
        B = len(texts)
        if not self.config.hierarchical:
            if self.config.entities == "none":
                pairs = [self._flat(t) for t in texts]
            else:
                pairs = []
                for i, t in enumerate(texts):
                    try:
                        pairs.append(self._flat(t))
                    except ValueError as e:       # EntitySpanError: say which row
                        raise type(e)(f"text {i}: {e}") from None
            tokens = [p[0] for p in pairs]
            lengths = np.fromiter((len(t) for t in tokens), dtype=np.int64, count=B)
            L = max(1, int(lengths.max()) if B else 1)
            mask = np.arange(L)[None, :] < lengths[:, None]                          # (B, L)
            ids = np.zeros((B, L), dtype=np.int64)
            ids[mask] = np.fromiter(itertools.chain.from_iterable(lookup(t) for t in tokens),
                                    dtype=np.int64, count=int(lengths.sum()))
            return Encoded(torch.from_numpy(ids), torch.from_numpy(mask), tokens, None, [p[1] for p in pairs])
        pairs = [self._hier(t) for t in texts]
        sentences = [p[0] for p in pairs]
        S = max([1] + [len(s) for s in sentences])
        lengths = np.zeros((B, S), dtype=np.int64)
        for b, sents in enumerate(sentences):
            lengths[b, : len(sents)] = [len(s) for s in sents]
        W = max(1, int(lengths.max()) if B else 1)
        mask = np.arange(W)[None, None, :] < lengths[:, :, None]                     # (B, S, W)
        ids = np.zeros((B, S, W), dtype=np.int64)
        flat = [tok for sents in sentences for s in sents for tok in s]
        ids[mask] = np.fromiter(lookup(flat), dtype=np.int64, count=len(flat))
        tokens = [[tok for s in sents for tok in s] for sents in sentences]
        return Encoded(torch.from_numpy(ids), torch.from_numpy(mask), tokens, sentences, [p[1] for p in pairs])

    # ---- building and saving
    @classmethod
    def build(cls, texts: Iterable[str], config: TokenizerConfig | None = None, min_freq: int = 1,
              max_size: int | None = None) -> "Tokenizer":
        """A tokenizer whose vocabulary is built from `texts` (all their tokens, before truncation)."""
        tok = cls(config)
        tok.vocab = Vocab.build((tok.tokenize(t) for t in texts), min_freq=min_freq, max_size=max_size)
        return tok

    def to_dict(self, include_vocab: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {"config": asdict(self.config)}
        if include_vocab:
            d["vocab"] = list(self.vocab.itos)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], vocab: Vocab | None = None) -> "Tokenizer":
        """Inverse of `to_dict`. `d` is {"config": {...}, "vocab": [...]} or just the config's fields;
        a `vocab` argument (e.g. read from vocab.json) takes precedence over d["vocab"]."""
        if not isinstance(d, dict):
            raise ValueError(f"tokenizer settings must be a dict, got {type(d).__name__}")
        cfg = d.get("config", {k: v for k, v in d.items() if k != "vocab"})
        if vocab is None:
            if "vocab" not in d:
                raise ValueError("tokenizer settings have no 'vocab'; pass vocab=Vocab.from_json(...)")
            vocab = Vocab.from_json(d["vocab"])
        return cls(TokenizerConfig.from_dict(cfg), vocab)
