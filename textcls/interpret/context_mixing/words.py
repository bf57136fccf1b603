"""From a method's weight per position to one weight per word, as every explanation in textcls: a word's
pieces summed, [CLS]/[SEP] and the cls token left out, renormalised to sum 1 in absolute value (DecompX keeps
its sign: a negative weight speaks against the class). Returns `Attribution`s, so the faithfulness machinery
scores them like Captum's."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from textcls.interpret.instances import stack
from textcls.interpret.attributions import Attribution
from textcls.interpret.context_mixing.alti import alti
from textcls.interpret.context_mixing.decompx import decompx
from textcls.interpret.context_mixing.globenc import globenc
from textcls.interpret.context_mixing.norm import norm
from textcls.interpret.context_mixing.trace import trace
from textcls.interpret.context_mixing.value_zeroing import value_zeroing

RUN = {"norm": norm, "globenc": globenc, "alti": alti, "value_zeroing": value_zeroing, "decompx": decompx}


def to_words(t, per_position: torch.Tensor) -> torch.Tensor:
    """(B, T) -> (B, W): sum over each word's pieces, renormalised to sum 1 in absolute value."""
    w = torch.einsum("bt,btw->bw", per_position.double(), t.owner.double())      # (B, W)
    return w / w.abs().sum(-1, keepdim=True).clamp(min=1e-300)


def _traces(model, instances: Sequence, idx: list[int], method: str):
    """(indices, trace) for the instances `idx`, traced together; a batch whose DecompX parts would not fit the
    memory budget together is halved (one text that does not fit alone is refused by decompx.check_memory)."""
    ids, mask = stack([instances[i] for i in idx])                               # (b, L)
    t = trace(model, ids, mask)
    if method == "decompx" and len(idx) > 1 and t.blocks:
        from textcls.interpret.context_mixing.decompx import held_bytes, row_bytes
        from textcls.interpret.context_mixing.trace import budget_bytes
        B, T, d = t.inputs[0].shape
        b = t.blocks[0]
        if held_bytes(B, T, d, b.heads) + B * row_bytes(T, d, b.ffn_in.out_features) > budget_bytes():
            half = len(idx) // 2
            yield from _traces(model, instances, idx[:half], method)
            yield from _traces(model, instances, idx[half:], method)
            return
    yield idx, t


def explain_instances(model, instances: Sequence, method: str, batch_size: int = 16) -> list[Attribution]:
    out: list[Attribution] = []
    fn = RUN[method]
    order = sorted(range(len(instances)), key=lambda i: int(instances[i].n))   # similar lengths together
    got: dict[int, Attribution] = {}
    with torch.no_grad():
        for s in range(0, len(order), batch_size):
            for idx, t in _traces(model, instances, order[s:s + batch_size], method):
                chunk = [instances[i] for i in idx]
                w = to_words(t, fn(t)).numpy()                                   # (b, L)
                probs = torch.softmax(t.logits.double(), -1).numpy()
                for r, (i, inst) in enumerate(zip(idx, chunk)):
                    m = inst.mask.numpy().astype(bool)
                    grid = np.zeros(inst.ids.shape, dtype=np.float64)
                    grid[m] = w[r, :inst.ids.shape[0]][m]
                    target = int(probs[r].argmax())
                    got[i] = Attribution(method=method, scores=grid[m], grid=grid, target=target,
                                         output=float(probs[r, target]), tokens=inst.tokens)
    out = [got[i] for i in range(len(instances))]
    return out
