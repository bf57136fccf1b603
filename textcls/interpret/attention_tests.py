"""The attention tests of many texts, batched: `faithfulness.permutation_test` and `uniform_attention_test` (one text
each, the reference) over a whole data set. The permuted copies of many texts run in one batch; each text's
block of sort keys is drawn from its own generator (its seed) with the shape its maps have when the text runs
alone, so the permutations are exactly the per-text ones. Uniform attention: one batch per bucket. Used by
`batched.SliceRun` (tested equal to the per-text path in tests/test_interpret_batched.py).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from textcls.interpret.attention_edits import permute_rows, uniform_like
from textcls.interpret.buckets import buckets
from textcls.interpret.faithfulness import attention_maps
from textcls.interpret.instances import Instance, stack
from textcls.interpret.probabilities import check_model, prob_fn, tvd


def _map_shape(spec, inst: Instance, t_shape: Sequence[int]) -> tuple[int, ...]:
    """The shape (without batch) a map handed to an edit has when `inst` runs alone."""
    axes = [a for a in spec.axes if a != "layer"]
    if len(axes) != len(t_shape) - 1:
        raise RuntimeError(f"map {spec.name!r}: {len(t_shape) - 1} axes, spec says {axes}")
    out = []
    for d, a in enumerate(axes):
        if "token" in a:
            out.append(int(inst.ids.shape[0]))
        elif "sentence" in a:
            out.append(int(inst.ids.shape[0]))
        elif "word" in a:
            out.append(int(inst.ids.shape[-1]))
        else:
            out.append(int(t_shape[d + 1]))
    return tuple(out)


def permutation_tests(model, instances: Sequence[Instance], seeds: Sequence[int], base: Sequence[np.ndarray],
                      n_permutations: int = 30, maps: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """`faithfulness.permutation_test` of every instance (seed seeds[i], unedited probabilities base[i]), many
    texts a batch; each text's permutations are exactly those of its own per-text run."""
    check_model(model)
    names = attention_maps(model, maps)
    if not names:
        raise ValueError(f"{type(model).__name__} has no attention map to permute")
    specs = {s.name: s for s in model.map_specs()}
    out: list[dict[str, Any] | None] = [None] * len(instances)
    for group in buckets([tuple(i.ids.shape) for i in instances], rows_per_item=n_permutations):
        insts = [instances[g] for g in group]
        gens = [torch.Generator().manual_seed(int(seeds[g])) for g in group]

        def edit_for(name):
            spec = specs[name]

            def edit(t, layer=None, mask=None):
                rand = torch.zeros(t.shape)
                for b, (inst, gen) in enumerate(zip(insts, gens)):
                    shape = _map_shape(spec, inst, t.shape)
                    block = torch.rand((n_permutations,) + shape, generator=gen)
                    rand[(slice(b * n_permutations, (b + 1) * n_permutations),) +
                         tuple(slice(0, s) for s in shape)] = block
                return permute_rows(t, mask, None, rand=rand)
            return edit

        ids, mask = stack([i for i in insts for _ in range(n_permutations)])
        q = torch.as_tensor(prob_fn(model, edits={n: edit_for(n) for n in names})(ids, mask)).double().numpy()
        for b, g in enumerate(group):
            qb = q[b * n_permutations:(b + 1) * n_permutations]
            p = np.asarray(base[g])
            d = tvd(qb, p[None])
            out[g] = {"median_tvd": float(np.median(d)), "tvds": d,
                      "flip_rate": float(np.mean(qb.argmax(1) != p.argmax())), "maps": names,
                      "n_permutations": n_permutations, "p": p}
    return out  # type: ignore[return-value]


def uniform_attention_tests(model, instances: Sequence[Instance], base: Sequence[np.ndarray],
                            maps: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """`faithfulness.uniform_attention_test` of every instance, many texts a batch."""
    check_model(model)
    names = attention_maps(model, maps)
    if not names:
        raise ValueError(f"{type(model).__name__} has no attention map to make uniform")
    fn = prob_fn(model, edits={n: (lambda t, layer=None, mask=None: uniform_like(t, mask)) for n in names})
    out: list[dict[str, Any] | None] = [None] * len(instances)
    for group in buckets([tuple(i.ids.shape) for i in instances]):
        ids, mask = stack([instances[g] for g in group])
        q = torch.as_tensor(fn(ids, mask)).double().numpy()
        for b, g in enumerate(group):
            p = np.asarray(base[g])
            out[g] = {"tvd": float(tvd(p, q[b])), "flipped": bool(p.argmax() != q[b].argmax()), "p": p,
                      "p_uniform": q[b], "maps": names}
    return out  # type: ignore[return-value]


__all__ = ["permutation_tests", "uniform_attention_tests"]
