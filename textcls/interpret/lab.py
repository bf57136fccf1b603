"""The Lab's teaching demos as library functions (the Lab page only draws them).

- activation_statistics: AGCNN Fig. 2 - the mean and variance of the activations through 10 dense layers of 100
  units (batch 100, inputs N(0, 1), biases 0.1), for ReLU, NLReLU, SELU and tanh, with the paper's two weight
  initialisations N(0, 1) and N(0, 1.5). The paper writes N(mean, variance): the second scale is read as
  variance 1.5 (std 1.22); `weight_stds` overrides both.
- negation_demo: short inputs ("good" / "not good" / "not very good" ...) through several models: probability
  of the positive class and each model's own attention per token.
- hcan_branches: HCAN's (or CAN's) two parallel self-attention branches at word level and their product
  Z = LayerNorm(H_a * H_b): per word the size of H_a (ELU values), of H_b (tanh values in [-1, 1], a signed soft
  gate), of the product, and the share of channels where branch b flips branch a's sign; plus one word's
  attention rows A_a and A_b (the paper's Fig. 5).
- gate_suppression: AGCNN's attention gates on one sentence: how much of each feature map they let through,
  how many max-pool picks they change, the per-token gate profile, and the prediction with every gate forced
  to 1 (no gating) or 0.
`DEMO_TEXT` holds a short text per demo that a teacher can read aloud; it and the demos' other words are in
textcls.interpret.lab_texts (no torch: the Lab page reads them in the app's server).
"""
from __future__ import annotations

import math
import re
import threading
from typing import Any, Sequence

import torch

from textcls.models.layers import make_activation, masked_max
from textcls.runtime.threads import interactive_work
from textcls.interpret.instances import Instance
from textcls.interpret.probabilities import check_model, prob_fn, score
from textcls.interpret.sources import as_source
from textcls.interpret.interventions import ForceGate, intervene
from textcls.interpret.lab_texts import (DEMO_TEXT, GATE_SENTENCE, NEGATION_SENTENCES, TVD_WORDS,  # noqa: F401
                                         gate_closure_lines, gate_title)


# ---------------------------------------------------------------- AG-F2: activations through dense layers

@interactive_work
def activation_statistics(activations: Sequence[str] = ("relu", "nlrelu", "selu", "tanh"),
                          weight_stds: Sequence[float] | None = None, n_layers: int = 10, width: int = 100,
                          batch: int = 100, bias: float = 0.1, seed: int = 0) -> list[dict[str, Any]]:
    """One row per (activation, weight scale, layer): mean and variance of that layer's activations.

    The same input batch and, per weight scale, the same weights are used for every activation, so the curves
    differ only by the activation. Computed in float64 (ReLU's activations reach ~1e8 at layer 10)."""
    if n_layers < 1 or width < 1 or batch < 2:
        raise ValueError("need n_layers >= 1, width >= 1, batch >= 2")
    scales = [(1.0, "N(0, 1)"), (math.sqrt(1.5), "N(0, 1.5)")] if weight_stds is None else \
        [(float(s), f"N(0, {s:g}^2)") for s in weight_stds]
    gen = torch.Generator().manual_seed(seed)
    x0 = torch.randn(batch, width, generator=gen, dtype=torch.float64)
    rows = []
    for std, label in scales:
        weights = [torch.randn(width, width, generator=gen, dtype=torch.float64) * std for _ in range(n_layers)]
        for name in activations:
            f = make_activation(name)
            x = x0
            for i, W in enumerate(weights, start=1):
                x = f(x @ W + bias)
                rows.append({"activation": name, "weights": label, "weight_std": std, "layer": i,
                             "mean": float(x.mean()), "variance": float(x.var())})
    return rows


# ---------------------------------------------------------------- negation and scaling

def positive_index(labels: Sequence[str] | None, num_labels: int = 2) -> int:
    """Index of the positive class: a label starting with "pos" (or equal to "1"), else the last class."""
    for i, name in enumerate(labels or []):
        if str(name).lower().startswith("pos") or str(name) == "1":
            return i
    return num_labels - 1


@interactive_work
def negation_demo(sources, sentences: Sequence[str] = NEGATION_SENTENCES) -> list[dict[str, Any]]:
    """For each model (mapping name -> Predictor / (model, tokenizer)) and sentence: p(positive), the predicted
    label, tokens and the model's own per-token attention importance (None where a model has none)."""
    from textcls.interpret.attention import attention_importance_instances

    items = sources.items() if hasattr(sources, "items") else [(getattr(s, "name", f"model {i}"), s)
                                                               for i, s in enumerate(sources)]
    rows = []
    for name, s in items:
        src = as_source(s)
        check_model(src.model)
        insts = src.instances(list(sentences))
        pos = positive_index(src.labels, src.model.config.num_labels)
        probs = score(prob_fn(src.model), insts)
        try:
            imps = [a.scores for a in attention_importance_instances(src.model, insts)]
        except ValueError:
            imps = [None] * len(insts)
        for sent, inst, p, imp in zip(sentences, insts, probs, imps):
            k = int(p.argmax())
            rows.append({"model": str(name), "sentence": sent, "p_positive": float(p[pos]),
                         "label": src.labels[k] if src.labels else str(k), "tokens": inst.tokens,
                         "importance": imp})
    return rows


# ---------------------------------------------------------------- HCAN branches

def _level(model):
    for attr in ("word_level", "level"):
        lvl = getattr(model, attr, None)
        if lvl is not None and hasattr(lvl, "branch_a"):
            return lvl
    raise ValueError(f"{type(model).__name__} is not HCAN/CAN (no word-level branches)")


@interactive_work
def hcan_branches(model, inst: Instance, word: int = 0) -> dict[str, Any]:
    """Word-level branch outputs of HCAN/CAN on one example (module docstring). `word` indexes the real tokens
    for the attention rows. The branch outputs are read by call-scoped, thread-local forward hooks that only
    record (nothing is changed)."""
    check_model(model)
    lvl = _level(model)
    if lvl.branch_b is None:
        raise ValueError("this model has one self-attention (variant one_self_attention): no branch b")
    if not 0 <= word < max(inst.n, 1):
        raise IndexError(f"word {word} out of range for {inst.n} tokens")
    local = threading.local()
    local.rec = {}
    me = threading.get_ident()

    def recorder(key):
        def hook(module, inputs, out):
            if threading.get_ident() == me and key not in local.rec:
                local.rec[key] = (out[0].detach(), inputs[1].detach())   # (N, L, d), mask (N, L)
        return hook

    handles = [lvl.branch_a.register_forward_hook(recorder("a")), lvl.branch_b.register_forward_hook(recorder("b"))]
    try:
        ids, mask = inst.batch()
        with torch.no_grad():
            out = model(ids, mask, return_maps=True)
    finally:
        for h in handles:
            h.remove()
    (ha, m), (hb, _) = local.rec["a"], local.rec["b"]
    real = m.bool()
    ha, hb = ha[real].double(), hb[real].double()                        # (n, d) in real-token order
    prod = ha * hb
    maps = {k: v[0].double() for k, v in out.maps.items()}
    pos = inst.positions[word]
    if inst.hierarchical:
        s, w = int(pos[0]), int(pos[1])
        row_a, row_b = maps["A_a"][s, :, w].mean(0), maps["A_b"][s, :, w].mean(0)   # (W,)
        keys = inst.mask[s]
        row_tokens = [inst.tokens[i] for i in range(inst.n) if int(inst.positions[i, 0]) == s] if inst.tokens \
            else None
    else:
        w = int(pos[0])
        row_a, row_b = maps["A_a"][:, w].mean(0), maps["A_b"][:, w].mean(0)          # (L,)
        keys = inst.mask
        row_tokens = inst.tokens
    return {"tokens": inst.tokens, "word": word,
            "norm_a": ha.norm(dim=-1).numpy(), "norm_b": hb.norm(dim=-1).numpy(),
            "norm_product": prod.norm(dim=-1).numpy(), "gate_b": hb.abs().mean(-1).numpy(),
            "sign_flip_share": (hb < 0).double().mean(-1).numpy(),
            "row_a": row_a[keys].numpy(), "row_b": row_b[keys].numpy(), "row_tokens": row_tokens,
            "logits": out.logits[0].double().numpy()}


# ---------------------------------------------------------------- AGCNN gate suppression

def _gate_maps(model, inst: Instance) -> tuple[list[str], torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """(the model's gate map names, ids, mask, every map) of one example; ValueError for a model without gates."""
    check_model(model)
    gates = [s.name for s in model.map_specs() if s.kind == "gate"]
    if not gates:
        raise ValueError(f"{type(model).__name__} has no gates (AGCNN only)")
    ids, mask = inst.batch()
    with torch.no_grad():
        maps = model(ids, mask, return_maps=True).maps
    return gates, ids, mask, maps


@interactive_work
def gate_suppression(model, inst: Instance, labels: Sequence[str] | None = None) -> dict[str, Any]:
    """How AGCNN's gates act on one example: per (h, k) the mean gate, the share of valid positions with gate
    < 1 (suppressed) and == 0 (closed), the share of |C| that survives gating, the share of filters whose
    max-pool pick moved; per token the mean gate (over filters) of the k-gates on h = min window; and the
    prediction with all gates forced to 1 and to 0."""
    from textcls.models.layers import to_length, window_mask

    gates, ids, mask, maps = _gate_maps(model, inst)
    L = ids.shape[1]
    min_len = max(int(re.search(r"_h(\d+)", g).group(1)) for g in gates)
    pm = torch.nn.functional.pad(mask, (0, max(0, min_len - L)))
    rows, profile = [], {}
    for g in gates:
        h = int(re.search(r"_h(\d+)", g).group(1))
        k = re.search(r"_k(\d+)", g).group(1)
        wm = to_length(window_mask(pm, h), L)[0]                           # (L,) valid windows
        D = maps[g][0].double()                                            # (F, L)
        C = maps[f"conv_h{h}"][0].double()
        m = maps[g.replace("gate_", "gated_")][0].double()
        valid = wm.unsqueeze(0).expand_as(D)
        dv = D[valid]
        pick_c = masked_max(C, valid)[1]
        pick_m = masked_max(m, valid)[1]
        c_mass = C.abs()[valid].sum()
        rows.append({"map": g, "h": h, "k": int(k), "mean_gate": float(dv.mean()) if dv.numel() else float("nan"),
                     "suppressed": float((dv < 1).double().mean()) if dv.numel() else float("nan"),
                     "closed": float((dv == 0).double().mean()) if dv.numel() else float("nan"),
                     "kept_mass": float(m.abs()[valid].sum() / c_mass) if c_mass > 0 else float("nan"),
                     "picks_moved": float((pick_c != pick_m).double().mean())})
        profile[g] = (D.mean(0) * wm.double()).numpy()[:inst.n]             # per window start
    open_ = intervene(model, inst, ForceGate(1.0), return_maps=False, labels=labels)
    shut = intervene(model, inst, ForceGate(0.0), return_maps=False, labels=labels)
    return {"rows": rows, "profile": profile, "tokens": inst.tokens, "probs": open_.probs_before,
            "probs_gates_open": open_.probs_after, "probs_gates_closed": shut.probs_after,
            "tvd_gates_open": open_.tvd, "tvd_gates_closed": shut.tvd}


@interactive_work
def gate_closures(model, inst: Instance, labels: Sequence[str] | None = None, candidates: int = 12) -> dict[str, Any]:
    """The gate that matters on this sentence, found by forcing gates open.

    1. Per gate map: the share of its gates that are closed (exactly 0) on the sentence and how far the
       prediction moves when that map's gates are all forced to 1 (its features pass as in a plain CNN).
    2. In the map that moves it most, the `candidates` closed gates whose feature fired most strongly (largest
       C before gating); each is opened alone (set to 1), in one batch, and the one that moves the prediction
       most is "the gate that matters": its filter, its n-gram, the feature's activation, the probabilities
       with it opened.
    Returns {maps: [{map, title, closed, tvd_open, probs_open}], map, title, gate (F, n), conv (F, n), ngrams,
    probs, label, opened: [{filter, position, ngram, activation, probs, tvd}], best}."""
    gates, ids, mask, maps = _gate_maps(model, inst)
    n = inst.n
    rows = []
    for g in gates:
        h = int(re.search(r"_h(\d+)", g).group(1))
        valid = max(0, n - h + 1)                                           # n-grams that fit in the sentence
        D = maps[g][0, :, :valid].double()                                  # (F, valid)
        forced = intervene(model, inst, ForceGate(1.0, maps=[g]), return_maps=False, labels=labels)
        rows.append({"map": g, "title": gate_title(g), "h": h, "valid": valid,
                     "closed": float((D == 0).double().mean()) if D.numel() else float("nan"),
                     "tvd_open": forced.tvd, "probs_open": forced.probs_after, "probs": forced.probs_before})
    best_map = max(rows, key=lambda r: (r["tvd_open"], r["closed"]))
    g, h, valid = best_map["map"], best_map["h"], best_map["valid"]
    D = maps[g][0].double()                                                 # (F, L)
    C = maps[f"conv_h{h}"][0].double()                                      # (F, L) the features before gating
    toks = list(inst.tokens) if inst.tokens else [str(i) for i in range(n)]
    ngrams = [" ".join(toks[j:j + h]) for j in range(valid)]
    closed = [(float(C[f, j]), f, j) for f in range(D.shape[0]) for j in range(valid) if D[f, j] == 0]
    closed = sorted(closed, reverse=True)[:candidates]
    opened = []
    if closed:
        B = len(closed)
        cells = torch.tensor([[f, j] for _, f, j in closed])                 # (B, 2)

        def open_one(t, layer=None, mask=None):                            # t (B, F, L): one gate open per row
            t = t.clone()
            t[torch.arange(B), cells[:, 0], cells[:, 1]] = 1.0
            return t
        with torch.no_grad():
            p = torch.softmax(model(ids.expand(B, *ids.shape[1:]), mask.expand(B, *mask.shape[1:]),
                                    edits={g: open_one}).logits.float(), -1).double().numpy()   # (B, C)
        p0 = best_map["probs"]
        for (act, f, j), pb in zip(closed, p):
            opened.append({"filter": f, "position": j, "ngram": ngrams[j], "activation": act, "probs": pb,
                           "tvd": float(0.5 * abs(pb - p0).sum())})
    best = max(opened, key=lambda o: o["tvd"]) if opened else None
    probs = best_map["probs"]
    return {"maps": rows, "map": g, "title": best_map["title"], "gate": D[:, :valid].numpy(),
            "conv": C[:, :valid].numpy(), "ngrams": ngrams, "tokens": toks, "probs": probs,
            "label": int(probs.argmax()), "labels": list(labels) if labels else [str(i) for i in range(len(probs))],
            "opened": opened, "best": best}


__all__ = ["DEMO_TEXT", "GATE_SENTENCE", "NEGATION_SENTENCES", "TVD_WORDS", "activation_statistics", "positive_index",
           "negation_demo", "hcan_branches", "gate_suppression", "gate_closures", "gate_closure_lines", "gate_title"]
