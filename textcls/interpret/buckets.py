"""Shapes and buckets of the data-set path (textcls.interpret.batched, attention_tests): each text cut to its own
shape (`own_shape`: no padding beyond its last real token, as if encoded alone) and texts grouped into padded
batches of equal or near shape (`buckets`), bounded by padded positions, rows, items and attention-map cells.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from textcls.interpret.instances import Instance

TOKENS_PER_BATCH = 8192       # padded positions per forward pass of erasure variants
MAX_ROWS = 2048               # rows per forward pass
ATTENTION_CELLS = 1 << 20     # rows x length^2 per pass that records attention maps (they grow with the square:
                              # 3 texts of 512 word pieces; MiniLM keeps 72 maps of length^2 floats per text)


def own_shape(inst: Instance) -> Instance:
    """The instance without padding beyond its last real token (flat: positions; hierarchical: sentences and
    word columns): its shape when encoded alone. An empty text keeps one masked position."""
    m = inst.mask
    if inst.n == 0:
        shape = (1,) * m.dim()
    elif not inst.hierarchical:
        shape = (int(m.nonzero()[-1, 0]) + 1,)
    else:
        shape = (int(m.any(1).nonzero()[-1, 0]) + 1, int(m.any(0).nonzero()[-1, 0]) + 1)
    if tuple(m.shape) == shape:
        return inst
    sl = tuple(slice(0, s) for s in shape)
    return Instance(inst.ids[sl].clone(), m[sl].clone(), inst.tokens, inst.pad_id, inst.unk_id)


def n_positions(shape: Sequence[int]) -> int:
    """Positions of an item of this shape (the product of its sizes; 1 for a scalar)."""
    return int(np.prod(shape)) if len(shape) else 1


def buckets(shapes: Sequence[tuple[int, ...]], rows_per_item: int = 1, tokens: int = TOKENS_PER_BATCH,
            max_rows: int = MAX_ROWS, max_items: int | None = None, cells: int | None = None) -> list[list[int]]:
    """Indices grouped into batches of near shape: sorted by shape, each batch at most `tokens` padded positions
    (rows x the largest item's size; `rows_per_item` rows per item), `max_rows` rows, `max_items` items and, when
    given, `cells` rows x size^2 (what attention maps cost)."""
    order = sorted(range(len(shapes)), key=lambda i: (tuple(shapes[i]), i))
    out: list[list[int]] = []
    cur: list[int] = []
    dims: list[int] = []
    for i in order:
        new = [max(a, b) for a, b in zip(dims, shapes[i])] if cur else list(shapes[i])
        rows = (len(cur) + 1) * rows_per_item
        if cur and (rows * n_positions(new) > tokens or rows > max_rows or (max_items and len(cur) >= max_items)
                    or (cells and rows * n_positions(new) ** 2 > cells)):
            out.append(cur)
            cur, new = [], list(shapes[i])
        cur.append(i)
        dims = new
    if cur:
        out.append(cur)
    return out


__all__ = ["TOKENS_PER_BATCH", "MAX_ROWS", "ATTENTION_CELLS", "own_shape", "n_positions", "buckets"]
