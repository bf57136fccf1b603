"""The model-randomisation sanity check (Adebayo et al. 2018, "Sanity Checks for Saliency Maps"), cascading.

The model's layers are re-initialised from the top down - the classifier first, then each block below it, the
embeddings last - each stage keeping the ones before it random. After each stage every explanation is
recomputed on the same texts and compared with the trained model's by Spearman's rank correlation per text
(the mean over texts is reported). An explanation that explains the model must change once the model does: one
whose correlation after the whole model is random is still >= FLAG_RHO is flagged - it explains the input (word
identity, position), not the model.

Layers (`cascade_units`): the model's child modules in the order they are defined, a ModuleList of layers (or a
module holding one, such as a Hugging Face encoder) opened into its elements, modules without parameters
skipped, then reversed (minilm-sst2: classifier, pooler, layer 5 ... layer 0, embeddings). Re-initialisation: each module's own `reset_parameters()` (Linear, LayerNorm, Embedding, Conv),
and a parameter no such module owns is redrawn from N(0, its trained standard deviation). The model is
randomised in a copy (`weights_copy`: its modules, parameters and buffers copied, what cannot be copied - a
lock, a tokenizer's native state - shared with the original): the caller's model (a cached one, shared by a
server's sessions) never changes.
"""
from __future__ import annotations

import copy
import threading
from typing import Any, Callable, Sequence

import numpy as np
import torch
import torch.nn as nn

from textcls.interpret.rankings import FLAG_RHO  # noqa: F401  (re-exported)


def _has_params(m: nn.Module) -> bool:
    return any(True for _ in m.parameters())


def _opens(m: nn.Module) -> bool:
    """Whether a module is a container of layers to open: a ModuleList of two or more, or a module with two or
    more parameterised children one of which holds such a list, or whose only such child opens."""
    kids = [c for c in m.children() if _has_params(c)]
    if isinstance(m, nn.ModuleList):
        return len(kids) >= 2
    if len(kids) == 1:
        return _opens(kids[0])
    return len(kids) >= 2 and any(isinstance(x, nn.ModuleList) and len(x) >= 2 for x in m.modules())


def cascade_units(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """(name, module) from the output down."""
    def walk(mod: nn.Module, prefix: str) -> list[tuple[str, nn.Module]]:
        out = []
        for name, ch in mod.named_children():
            if _has_params(ch):
                full = f"{prefix}{name}"
                out += walk(ch, full + ".") if _opens(ch) else [(full, ch)]
        return out
    return list(reversed(walk(model, "")))


@torch.no_grad()
def reinitialise(module: nn.Module, seed: int) -> None:
    """Re-draw every parameter of `module` (see the module docstring)."""
    gen_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        covered: set[int] = set()
        for m in module.modules():
            if hasattr(m, "reset_parameters") and callable(m.reset_parameters):
                own = list(m.parameters(recurse=False))
                if own:
                    m.reset_parameters()
                    covered.update(id(p) for p in own)
        for p in module.parameters():
            if id(p) not in covered:
                std = float(p.std()) if p.numel() > 1 else 0.02
                p.normal_(0.0, std if std > 0 else 0.02)
    finally:
        torch.random.set_rng_state(gen_state)


_SHARED_TYPES = (type(threading.Lock()), type(threading.RLock()), threading.Condition, threading.Event,
                 threading.Semaphore)


def _shared_objects(model: nn.Module) -> dict[int, Any]:
    """A deepcopy memo that shares every lock-like object reachable from the model's modules' attributes (what
    pickling refuses: a Hugging Face wrapper's word table holds a lock)."""
    memo: dict[int, Any] = {}
    seen: set[int] = set()
    stack: list[Any] = [m.__dict__ for m in model.modules()]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, (torch.Tensor, str, bytes, int, float, bool, type(None))):
            continue
        seen.add(id(obj))
        if isinstance(obj, _SHARED_TYPES):
            memo[id(obj)] = obj
        elif isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
        elif isinstance(obj, nn.Module):
            continue                                  # its own __dict__ is already on the stack
        elif hasattr(obj, "__dict__") and not isinstance(obj, type):
            stack.append(vars(obj))
    return memo


def weights_copy(model: nn.Module) -> nn.Module:
    """A copy of `model` whose parameters can be changed without touching the original's (see the module
    docstring). ValueError, in one line, where the model cannot be copied."""
    try:
        return copy.deepcopy(model, _shared_objects(model))
    except Exception as e:  # noqa: BLE001 - any object deepcopy refuses: say which, in one line
        raise ValueError(f"the model could not be copied to randomise it ({type(e).__name__}: {e})") from None


def spearman(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    from scipy.stats import spearmanr
    return float(spearmanr(a, b).statistic)


Explain = Callable[[Any, Sequence, str], list]    # (model, instances, method) -> one score vector each


def cascading_randomisation(model, instances: Sequence, methods: Sequence[str], explain: Explain,
                            seed: int = 0) -> dict[str, Any]:
    """{"stages": [unit names], "rho": {method: [mean rho after each stage]}, "final": {method: rho after the
    last stage}, "flagged": [methods whose final rho >= FLAG_RHO]}."""
    before = {m: [np.asarray(getattr(x, "scores", x), dtype=np.float64) for x in explain(model, instances, m)]
              for m in methods}
    model = weights_copy(model).eval()      # randomised in a copy: a model shared with other callers never changes
    units = cascade_units(model)
    if not units:
        raise ValueError("the model has no layers with parameters to randomise")
    rho: dict[str, list[float]] = {m: [] for m in methods}
    stages = []
    for k, (name, mod) in enumerate(units):
        reinitialise(mod, seed + k)
        stages.append(name)
        for m in methods:
            after = explain(model, instances, m)
            vals = [spearman(b, np.asarray(getattr(x, "scores", x))) for b, x in zip(before[m], after)]
            vals = [v for v in vals if not np.isnan(v)]
            rho[m].append(float(np.mean(vals)) if vals else float("nan"))
    final = {m: r[-1] for m, r in rho.items()}
    return {"stages": stages, "rho": rho, "final": final,
            "flagged": [m for m, r in final.items() if not np.isnan(r) and r >= FLAG_RHO]}


__all__ = ["FLAG_RHO", "cascade_units", "cascading_randomisation", "reinitialise", "spearman"]
