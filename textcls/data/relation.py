"""Relation classification input (SemEval-2010 Task 8): entity spans from `<e1>..</e1>` / `<e2>..</e2>` markers,
relative positions, and the token-stream settings of the tokenizer (`TokenizerConfig.entities`).

A relation sentence marks its two entities in the text: "the <e1>burst</e1> has been caused by water hammer
<e2>pressure</e2>". The word tokenizer keeps each tag as one token (`text._WORD`), so spans are parsed from
tokens. A well-formed sentence has each of the four tags exactly once, `<eK>` before `</eK>`, at least one
word inside, and the two spans disjoint (either entity may come first). Anything else is an `EntitySpanError`
(a ValueError) saying what is wrong; the tokenizer adds the row ("text 12: ...").

Tokenizer settings (`entities`):
  "none"  the tags are ordinary tokens, nothing is checked (every data set but a relation one);
  "keep"  spans checked; the tags stay in the token stream as tokens (the relation models need them there:
          they compute each token's relative positions from them, and may or may not read them as words -
          the model switch `markers_as_words`);
  "drop"  spans checked; the tags are removed: plain text, for models without entity positions;
  "mask"  spans checked; the tags stay and each entity's words become one token, `subj-entity` / `obj-entity`
          (the ACT paper's TACRED example replaces entities by SUBJ-TYPE / OBJ-TYPE; SemEval has no entity
          types, so the type is "entity").

Relative position of token j to an entity spanning tokens [s, e]: j - s before it, 0 inside, j - e after it,
clipped to [-window, window] (`relative_positions`; the models compute the same thing on id tensors, see
models/relation.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

E1_START, E1_END, E2_START, E2_END = "<e1>", "</e1>", "<e2>", "</e2>"
MARKERS = (E1_START, E1_END, E2_START, E2_END)
SUBJ, OBJ = "subj-entity", "obj-entity"
ENTITY_MODES = ("none", "keep", "drop", "mask")
# plain text (no markdown): the CLI prints it and the pages escape it, so backticks would show as backticks
MARKER_SYNTAX = ("Mark the two entities with tags: <e1> ... </e1> around the first and <e2> ... </e2> "
                 "around the second, each exactly once, e.g. \"The <e1>burst</e1> was caused by water hammer "
                 "<e2>pressure</e2>.\" Either entity may come first; the spans must not overlap.")
_TAG = re.compile(r"</?e[12]>", re.IGNORECASE)


class EntitySpanError(ValueError):
    """A relation sentence whose entity markers are missing, repeated, nested, reversed or empty."""


@dataclass(frozen=True)
class Spans:
    """Entity spans as inclusive token indices into the token list they were parsed from (tags included)."""

    e1: tuple[int, int]
    e2: tuple[int, int]


def has_markers(text: str) -> bool:
    """Whether a raw text contains any entity tag."""
    return bool(_TAG.search(text))


def parse_spans(tokens: Sequence[str]) -> Spans:
    """Entity spans (first and last word inside each pair of tags) of a token list that includes the tags.
    Raises EntitySpanError naming what is wrong."""
    where: dict[str, list[int]] = {m: [] for m in MARKERS}
    for i, t in enumerate(tokens):
        if t in where:
            where[t].append(i)
    missing = [m for m in MARKERS if not where[m]]
    if missing:
        raise EntitySpanError(f"missing entity marker(s) {' '.join(missing)}. {MARKER_SYNTAX}")
    repeated = [m for m in MARKERS if len(where[m]) > 1]
    if repeated:
        raise EntitySpanError(f"entity marker(s) {' '.join(repeated)} appear more than once. {MARKER_SYNTAX}")
    spans = []
    for k, (start, end) in enumerate(((E1_START, E1_END), (E2_START, E2_END)), 1):
        s, e = where[start][0], where[end][0]
        if e < s:
            raise EntitySpanError(f"{end} comes before {start} (reversed markers of entity {k})")
        if e == s + 1:
            raise EntitySpanError(f"entity {k} is empty ({start}{end} with no word inside)")
        spans.append((s + 1, e - 1))
    (s1, e1), (s2, e2) = spans
    if not (e1 + 1 < s2 - 1 or e2 + 1 < s1 - 1):     # the tag pairs overlap or nest
        raise EntitySpanError("entity spans overlap or are nested; each entity's tags must close before the "
                              "other entity's open")
    return Spans((s1, e1), (s2, e2))


def apply_entity_mode(tokens: list[str], mode: str) -> list[str]:
    """The token stream for a tokenizer `entities` mode (see the module docstring); checks the spans first."""
    if mode not in ENTITY_MODES:
        raise ValueError(f"entities must be one of {ENTITY_MODES}, got {mode!r}")
    if mode == "none":
        return tokens
    spans = parse_spans(tokens)
    if mode == "keep":
        return tokens
    if mode == "drop":
        return [t for t in tokens if t not in MARKERS]
    (s1, e1), (s2, e2) = spans.e1, spans.e2
    out: list[str] = []
    for i, t in enumerate(tokens):
        if s1 <= i <= e1:
            if i == s1:
                out.append(SUBJ)
        elif s2 <= i <= e2:
            if i == s2:
                out.append(OBJ)
        else:
            out.append(t)
    return out


def entity_window(tokens: Sequence[str], n: int) -> list[str]:
    """At most n of `tokens` (with the tags) keeping both entities and their four tags: the first n when they
    hold them all, else the tags and entity words plus the other tokens nearest them (ties: the earlier), in
    text order. A relation text longer than the model reads thus keeps its entities instead of losing the tags
    past the window. EntitySpanError when the two entities alone take more than n tokens."""
    tokens = list(tokens)
    if len(tokens) <= n:
        return tokens
    sp = parse_spans(tokens)
    (s1, e1), (s2, e2) = sp.e1, sp.e2
    if max(e1, e2) + 1 < n:
        return tokens[:n]
    needed = set(range(s1 - 1, e1 + 2)) | set(range(s2 - 1, e2 + 2))
    if len(needed) > n:
        raise EntitySpanError(f"the two entities and their tags take {len(needed)} tokens, more than the {n} "
                              "this model reads per text")
    anchors = sorted(needed)

    def distance(i: int) -> int:
        return min(abs(i - a) for a in anchors)
    rest = sorted((i for i in range(len(tokens)) if i not in needed), key=lambda i: (distance(i), i))
    keep = sorted(needed | set(rest[:n - len(needed)]))
    return [tokens[i] for i in keep]


def relative_positions(n: int, span: tuple[int, int], window: int) -> list[int]:
    """Relative position of each of n tokens to an entity spanning [start, end]: j - start before it, 0 inside,
    j - end after it, clipped to [-window, window]."""
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    s, e = span
    out = []
    for j in range(n):
        r = j - s if j < s else (j - e if j > e else 0)
        out.append(max(-window, min(window, r)))
    return out


def word_spans(tokens: Sequence[str]) -> Spans:
    """Spans in the token list with the tags removed (what a model that does not read the tags sees)."""
    sp = parse_spans(tokens)
    before = [0] * (len(tokens) + 1)
    for i, t in enumerate(tokens):
        before[i + 1] = before[i] + (t not in MARKERS)
    return Spans((before[sp.e1[0]], before[sp.e1[1]]), (before[sp.e2[0]], before[sp.e2[1]]))


def entity_roles(tokens: Sequence[str]) -> list[str | None] | None:
    """Per token "e1" / "e2" (a word of that entity), "tag" (one of the four tags) or None; None for the whole
    list when it has no well-formed spans (plain text, or the tags were dropped). For figures that mark the
    entities."""
    tokens = [str(t) for t in tokens]
    if not any(t in MARKERS for t in tokens):
        return None
    try:
        sp = parse_spans(tokens)
    except EntitySpanError:
        return None
    roles: list[str | None] = ["tag" if t in MARKERS else None for t in tokens]
    for name, (s, e) in (("e1", sp.e1), ("e2", sp.e2)):
        for i in range(s, e + 1):
            roles[i] = name
    return roles


def is_relation_task(task: str | None, labels: Sequence[str] = ()) -> bool:
    """Whether a data set is relation classification: its task text says so, or its labels are SemEval's
    directed relations ("Cause-Effect(e1,e2)")."""
    if task and task.strip().lower().startswith("relation"):
        return True
    return any(isinstance(x, str) and x.endswith(("(e1,e2)", "(e2,e1)")) for x in labels)
