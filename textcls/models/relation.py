"""Entity positions for relation classification (ACT paper, relation-extraction settings), shared by ACT and the
Transformer.

The public call stays `model(token_ids, mask)`: the entity spans travel in the id stream as the four marker
tokens `<e1> </e1> <e2> </e2>` (tokenizer `entities="keep"` or `"mask"`, textcls/data/relation.py), whose vocabulary
ids the config records (`e1_start_id`, ...; set from the vocabulary when training). From them the model computes,
per token j, its relative position to entity 1 and to entity 2 (j - start before the entity, 0 inside, j - end
after, clipped to [-rel_window, rel_window]) and looks both up in two tables of d_pos / 2 dimensions (30 + 30
in the paper), concatenated: that (B, L, d_pos) replaces the absolute position table in the global attention's
W_p p_j term. A row without markers (plain text) gets the extra "no entity" row of each table everywhere.

`markers_as_words`: on, the tags are tokens the model reads (embedded, convolved, attended); off, they only carry
the spans: they are masked out of the model (zero vectors, no attention weight, no feature of their own - ACT's
convolution sees a blank slot where a tag was, the Transformer's sinusoidal positions still count it) and the
relative positions count the other tokens only. (Removing the tags from the stream altogether is the
tokenizer's entities="drop", for models without entity positions: the spans are then gone.) With `position_embed=False` (ACT Table 3 row 4, "- position embed.") there is no W_p p_j term at
all, so no relative positions either.

Map `relative_position` (B, token, entity) values="index": the clipped relative positions (entity 0 = e1,
1 = e2; pads and tags that are not read: 0).
"""
from __future__ import annotations

import torch
import torch.nn as nn

from textcls.models.outputs import MapSpec
from textcls.models.configs.relation import RelationConfig


def marker_overrides(vocab) -> dict[str, int]:
    """The four marker-id config fields from a Vocab (a missing tag: ValueError naming it)."""
    from textcls.data.relation import MARKERS
    missing = [m for m in MARKERS if m not in vocab]
    if missing:
        raise ValueError(f"relative positions need the entity markers in the vocabulary; missing {missing} "
                         "(train on relation data with the tokenizer's entities='keep' or 'mask')")
    names = ("e1_start_id", "e1_end_id", "e2_start_id", "e2_end_id")
    return {n: int(vocab.stoi[m]) for n, m in zip(names, MARKERS)}


def _first(hit: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(index of the first True per row, whether there is one) for hit (B, L) bool."""
    return hit.int().argmax(dim=1), hit.any(dim=1)


def relative_position_ids(token_ids: torch.Tensor, mask: torch.Tensor, marker_ids: tuple[int, int, int, int],
                          window: int, markers_as_words: bool = True
                          ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(rel (B, L, 2) long in [-window, window], found (B,) bool: the row has both spans, read_mask (B, L) bool:
    the positions the model reads - `mask` without the tags when they are not words)."""
    is_marker = torch.zeros_like(mask)
    for m in marker_ids:
        is_marker |= token_ids == m
    is_marker &= mask
    read = mask if markers_as_words else mask & ~is_marker
    counted = read.long()
    before = counted.cumsum(1) - counted                          # (B, L) counted tokens strictly before j
    s1, f1 = _first((token_ids == marker_ids[0]) & mask)
    t1, g1 = _first((token_ids == marker_ids[1]) & mask)
    s2, f2 = _first((token_ids == marker_ids[2]) & mask)
    t2, g2 = _first((token_ids == marker_ids[3]) & mask)
    found = f1 & g1 & f2 & g2
    rel = []
    for s, t in ((s1, t1), (s2, t2)):
        start = before.gather(1, s[:, None]) + counted.gather(1, s[:, None])   # (B, 1) first word inside
        end = before.gather(1, t[:, None]) - 1                                 # (B, 1) last word inside
        r = torch.where(before < start, before - start, torch.where(before > end, before - end,
                                                                     torch.zeros_like(before)))
        rel.append(r.clamp(-window, window))
    rel = torch.stack(rel, dim=-1) * read[..., None]              # (B, L, 2), 0 at pads and unread tags
    return rel, found, read


class RelativePositions(nn.Module):
    """Two relative-position tables (to e1, to e2) of d_pos / 2 dimensions each, concatenated (B, L, d_pos)."""

    def __init__(self, c: RelationConfig, d_pos: int, embed: bool = True):
        super().__init__()
        self.embed = embed                  # off (position_embed=False): only the tags' masking, no positions
        if embed and (d_pos < 2 or d_pos % 2):
            raise ValueError(f"relative positions need an even d_pos >= 2 (two halves), got {d_pos}")
        if c.rel_window < 1:
            raise ValueError(f"rel_window must be >= 1, got {c.rel_window}")
        self.window = c.rel_window
        self.marker_ids = c.marker_ids
        self.markers_as_words = c.markers_as_words
        rows = 2 * c.rel_window + 2                                  # -w..w, then "no entity"
        if embed:
            self.to_e1 = nn.Embedding(rows, d_pos // 2)
            self.to_e2 = nn.Embedding(rows, d_pos // 2)

    def map_specs(self) -> list[MapSpec]:
        if not self.embed:
            return []
        return [MapSpec("relative_position", ("token", "entity"), "activation",
                        "each token's relative position to entity 1 and entity 2 (clipped)", values="index")]

    def read_mask(self, token_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The positions the model reads (the tags masked out when markers_as_words is off)."""
        if self.markers_as_words:
            return mask
        return relative_position_ids(token_ids, mask, self.marker_ids, self.window, False)[2]

    def forward(self, token_ids: torch.Tensor, mask: torch.Tensor, probe) -> torch.Tensor | None:
        """(B, L, d_pos) position vectors, or None without position embeddings."""
        if not self.embed:
            return None
        rel, found, read = relative_position_ids(token_ids, mask, self.marker_ids, self.window,
                                                 self.markers_as_words)
        probe("relative_position", rel, mask=read)
        idx = torch.where(found[:, None, None], rel + self.window, torch.full_like(rel, 2 * self.window + 1))
        return torch.cat([self.to_e1(idx[..., 0]), self.to_e2(idx[..., 1])], dim=-1)   # (B, L, d_pos)
