"""The relation-classification fields of ACT and the Transformer (`RelationConfig`; the entity positions they
drive are textcls.models.relation). No torch here."""
from __future__ import annotations

from dataclasses import dataclass

from textcls.models.configs.base import BaseConfig, param


@dataclass
class RelationConfig(BaseConfig):
    """Relation-classification fields of ACT and the Transformer (off by default: ordinary text)."""

    relative_positions: bool = param(False, "relation classification: the global attention's position term uses two "
                                     "relative-position embeddings (to entity 1 and 2, d_pos/2 each, concatenated) "
                                     "instead of absolute positions; needs the <e1>..</e2> marker tokens in the input")
    rel_window: int = param(50, "relative positions are clipped to [-rel_window, rel_window]")
    markers_as_words: bool = param(True, "on: the <e1> </e1> <e2> </e2> tags are tokens the model reads; off: they "
                                   "only mark the spans (masked out of the model; relative positions count the "
                                   "other tokens)")
    e1_start_id: int = param(-1, "vocabulary id of <e1> (set from the vocabulary when training; -1: none)")
    e1_end_id: int = param(-1, "vocabulary id of </e1>")
    e2_start_id: int = param(-1, "vocabulary id of <e2>")
    e2_end_id: int = param(-1, "vocabulary id of </e2>")

    @property
    def marker_ids(self) -> tuple[int, int, int, int]:
        return self.e1_start_id, self.e1_end_id, self.e2_start_id, self.e2_end_id
