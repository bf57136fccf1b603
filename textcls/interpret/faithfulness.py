"""Faithfulness of explanations (ERASER, DeYoung et al. 2020, and the tests defined below), per explanation and
over a data-set slice.

m(x)_j is the probability of the class j predicted on the full input x. An *importance* is one value per real
token (an Attribution, or any vector). "Removing" tokens follows `removal` (see instances.py): "delete" (default;
the tokens are taken out and the text closes up), "pad" or "unk" (the id is replaced, the position stays).

- comprehensiveness(k) = m(x)_j - m(x \\ r_k)_j, r_k the top-k% tokens by importance (ERASER; high = faithful);
  sufficiency(k) = m(x)_j - m(r_k)_j (only r_k kept; low = faithful). k% of n tokens is ceil(k n / 100) tokens
  (at least one, at most n). AOPC = the mean over k in {0 (the empty set), 1, 5, 10, 20, 50}%: comprehensiveness
  of the empty set is 0; sufficiency of the empty set is m(x)_j - m(nothing kept)_j.
- leave_one_out: importance of token t = TVD(y(x), y(x without t)), TVD(p, q) = 1/2 sum |p_i - q_i|.
- kendall_tau (tau-b, ties handled) and topk_overlap |top_k(a) & top_k(b)| / k between two importance vectors.
- permutation_test (Jain & Wallace): the model's normalised attention maps are replaced, through edits, by
  random permutations of themselves among the real key positions (each row its own permutation; pads and the
  cls share stay in place); the median output TVD over the permutations.
- uniform_attention_test (Wiegreffe & Pinter): every attention row made uniform over its real keys (the row's
  mass spread evenly; a cls share stays); output TVD and whether the decision flips.
- erasure_flip (Serrano & Smith): remove the most important token vs a random other one (the exact expectation
  over all other tokens, so no sampling noise): does the decision flip; and removing tokens in decreasing
  importance, the fraction removed when it first flips (1.0, with never_flipped, if it never does), compared
  with random orders.
- infidelity (Captum `infidelity`, Yeh et al. 2019) at the token level: perturbations I are random token subsets
  (each token with probability 1/2) set to the baseline; infidelity = E[(sum_t I_t s_t - (F(x) - F(x_I)))^2],
  with Captum's optimal scaling of s (normalize=True) so unsigned and signed methods compare.
  sensitivity (Captum `sensitivity_max`): the largest relative change of the token scores when the embeddings
  are perturbed uniformly within `radius` (n_perturb samples).
`textcls.interpret.batched.evaluate_slice` runs all of it for a model over N texts, batched across texts; the
functions here, one text each, are its reference.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
from captum.metrics import infidelity as _captum_infidelity
from captum.metrics import sensitivity_max as _captum_sensitivity_max

from textcls.runtime.threads import interactive_work
from textcls.interpret.attention_edits import permute_rows, uniform_like
from textcls.interpret.buckets import buckets
from textcls.interpret.embedding_forward import EmbeddingForward
from textcls.interpret.instances import REMOVALS, Instance
from textcls.interpret.probabilities import check_model, prob_fn, score, tvd
from textcls.interpret.vectors import as_vector, top_indices
from textcls.interpret.rankings import (LEVEL, N_RANDOM, ONE_TEXT_NOTE, VERDICT_RULE, VERDICTS,  # noqa: F401
                                        agreement, kendall_tau, n_tokens, text_seed, topk_overlap, versus_random)
from textcls.interpret.attributions import _targets, baseline_embedding, canonical_method, token_attributions

BINS = (1, 5, 10, 20, 50)
N_PERMUTATIONS = 50      # attention permutations of one text (Attribute and the lessons draw the same ones)


def _check_removal(removal: str) -> None:
    if removal not in REMOVALS:
        raise ValueError(f"unknown removal {removal!r}; choose one of {REMOVALS}")


def _base_probs(fn, inst: Instance, target: int | None) -> tuple[np.ndarray, int]:
    p = score(fn, [inst])[0]
    return p, int(np.argmax(p)) if target is None else int(target)


# ---------------------------------------------------------------- ERASER

def _erasure_variants(inst: Instance, importance, bins: Sequence[float], removal: str) -> tuple[list, list]:
    """(the tokens kept or removed per bin, the variants to score): the top-k removed per bin, the top-k kept per
    bin, then nothing kept."""
    imp = as_vector(importance, inst.n)
    ks = [n_tokens(inst.n, b) for b in bins]
    tops = [top_indices(imp, k) for k in ks]
    variants = [inst.remove(t, removal) for t in tops] + [inst.keep_only(t, removal) for t in tops]
    variants.append(inst.keep_only([], removal))                      # nothing kept
    return ks, variants


def _curves(bins: Sequence[float], ks: list, p: np.ndarray, j: int, q: np.ndarray, removal: str) -> dict[str, Any]:
    """The curves' dict from the target's probability on the whole text (p[j]) and on `_erasure_variants` (q)."""
    nb = len(bins)
    comp = [0.0] + [float(p[j] - x) for x in q[:nb]]
    suff = [float(p[j] - q[-1])] + [float(p[j] - x) for x in q[nb:2 * nb]]
    return {"bins": [0.0] + [float(b) for b in bins], "k_tokens": [0] + ks, "comprehensiveness": comp,
            "sufficiency": suff, "aopc_comprehensiveness": float(np.mean(comp)),
            "aopc_sufficiency": float(np.mean(suff)), "target": j, "p_target": float(p[j]), "removal": removal}


@interactive_work
def erasure_curves(model, inst: Instance, importance, bins: Sequence[float] = BINS, removal: str = "delete",
                   target: int | None = None) -> dict[str, Any]:
    """Comprehensiveness and sufficiency at each bin (plus the empty set), and their AOPCs."""
    _check_removal(removal)
    fn = prob_fn(model)
    ks, variants = _erasure_variants(inst, importance, bins, removal)
    probs = score(fn, [inst] + variants)                               # the text and its variants in one batch
    j = int(np.argmax(probs[0])) if target is None else int(target)
    return _curves(bins, ks, probs[0], j, probs[1:, j], removal)


@interactive_work
def comprehensiveness(model, inst: Instance, importance, pct: float = 20, removal: str = "delete",
                      target: int | None = None) -> float:
    """m(x)_j - m(x without the top-pct% tokens)_j."""
    fn = prob_fn(model)
    imp = as_vector(importance, inst.n)
    p, j = _base_probs(fn, inst, target)
    q = score(fn, [inst.remove(top_indices(imp, n_tokens(inst.n, pct)), removal)])[0]
    return float(p[j] - q[j])


@interactive_work
def sufficiency(model, inst: Instance, importance, pct: float = 20, removal: str = "delete",
                target: int | None = None) -> float:
    """m(x)_j - m(only the top-pct% tokens)_j."""
    fn = prob_fn(model)
    imp = as_vector(importance, inst.n)
    p, j = _base_probs(fn, inst, target)
    q = score(fn, [inst.keep_only(top_indices(imp, n_tokens(inst.n, pct)), removal)])[0]
    return float(p[j] - q[j])


# ---------------------------------------------------------------- leave-one-out and rank agreement

@interactive_work
def leave_one_out(model, inst: Instance, removal: str = "delete") -> np.ndarray:
    """(n,) TVD between the output on x and on x without token t."""
    _check_removal(removal)
    fn = prob_fn(model)
    if inst.n == 0:
        return np.zeros(0)
    probs = score(fn, [inst] + [inst.remove([t], removal) for t in range(inst.n)])
    return tvd(probs[1:], probs[0][None])


# ---------------------------------------------------------------- attention tests

def attention_maps(model, names: Sequence[str] | None = None) -> list[str]:
    """Names of the attention maps the attention tests edit: normalised attention ("real", or "partial" when a
    cls token takes the rest of the row) distributions over a key axis (token / word / sentence)."""
    keys = ("token", "key_token", "word", "key_word", "sentence", "key_sentence")
    ok = [s.name for s in model.map_specs() if s.kind == "attention" and s.values in ("real", "partial")
          and s.axes and s.axes[-1] in keys]
    if names is None:
        return ok
    bad = [n for n in names if n not in ok]
    if bad:
        raise ValueError(f"{type(model).__name__}: {bad} are not attention distributions over a key axis; "
                         f"editable maps: {ok}")
    return list(names)


@interactive_work
def permutation_test(model, inst: Instance, n_permutations: int = N_PERMUTATIONS, maps: Sequence[str] | None = None,
                     seed: int | None = None, batch_size: int = 50) -> dict[str, Any]:
    """Median TVD of the output when the attention weights are randomly permuted (Jain & Wallace). The
    permutations are random draws; seed None draws them from the text itself (`chance.text_seed`), so every page
    and lesson shows the same ones for the same text; "tvd_iqr" is their spread (25th, 75th percentile)."""
    if seed is None:
        seed = text_seed(inst.tokens, inst.n)
    check_model(model)
    names = attention_maps(model, maps)
    if not names:
        raise ValueError(f"{type(model).__name__} has no attention map to permute")
    p = score(prob_fn(model), [inst])[0]
    gen = torch.Generator().manual_seed(seed)

    def edit(t, layer=None, mask=None):
        return permute_rows(t, mask, gen)

    fn = prob_fn(model, edits={n: edit for n in names})
    outs = []
    for i in range(0, n_permutations, batch_size):
        outs.append(score(fn, [inst] * min(batch_size, n_permutations - i), batch_size=batch_size))
    q = np.concatenate(outs)
    d = tvd(q, p[None])
    return {"median_tvd": float(np.median(d)), "tvds": d, "tvd_iqr": [float(x) for x in np.percentile(d, [25, 75])],
            "seed": seed, "flip_rate": float(np.mean(q.argmax(1) != p.argmax())),
            "maps": names, "n_permutations": n_permutations, "p": p}


@interactive_work
def uniform_attention_test(model, inst: Instance, maps: Sequence[str] | None = None) -> dict[str, Any]:
    """Output with every attention row made uniform over its real keys (Wiegreffe & Pinter)."""
    check_model(model)
    names = attention_maps(model, maps)
    if not names:
        raise ValueError(f"{type(model).__name__} has no attention map to make uniform")
    p = score(prob_fn(model), [inst])[0]
    q = score(prob_fn(model, edits={n: (lambda t, layer=None, mask=None: uniform_like(t, mask)) for n in names}),
              [inst])[0]
    return {"tvd": float(tvd(p, q)), "flipped": bool(p.argmax() != q.argmax()), "p": p, "p_uniform": q,
            "maps": names}


@interactive_work
def erasure_flip(model, inst: Instance, importance, removal: str = "delete", n_random_orders: int = 5,
                 seed: int = 0) -> dict[str, Any]:
    """Serrano & Smith's erasure test on one example (see the module docstring)."""
    _check_removal(removal)
    fn = prob_fn(model)
    imp = as_vector(importance, inst.n)
    n = inst.n
    p = score(fn, [inst])[0]
    label = int(p.argmax())
    if n == 0:
        return {"top_flip": False, "random_flip": float("nan"), "fraction_to_flip": float("nan"),
                "random_fraction_to_flip": float("nan"), "never_flipped": True, "n": 0}
    order = top_indices(imp, n)
    rng = np.random.default_rng(seed)
    orders = [order] + [list(rng.permutation(n)) for _ in range(n_random_orders)]
    singles = [inst.remove([t], removal) for t in range(n)]
    prefixes = [inst.remove(o[:k], removal) for o in orders for k in range(1, n + 1)]
    probs = score(fn, singles + prefixes)
    flips_single = probs[:n].argmax(1) != label
    others = [t for t in range(n) if t != order[0]]
    fr = []
    never = []
    for r in range(len(orders)):
        changed = probs[n + r * n: n + (r + 1) * n].argmax(1) != label
        first = int(np.argmax(changed)) + 1 if changed.any() else n
        fr.append(first / n)
        never.append(not changed.any())
    return {"top_flip": bool(flips_single[order[0]]),
            "random_flip": float(np.mean(flips_single[others])) if others else float("nan"),
            "fraction_to_flip": fr[0], "never_flipped": never[0],
            "random_fraction_to_flip": float(np.mean(fr[1:])) if n_random_orders else float("nan"), "n": n}


# ---------------------------------------------------------------- Captum metrics

@interactive_work
def infidelity(model, inst: Instance, importance, baseline: str = "pad", n_perturb: int = 50, seed: int = 0,
               normalize: bool = True, output: str = "prob", target: int | None = None) -> float:
    """Captum infidelity at the token level (module docstring). Lower is better."""
    f = EmbeddingForward(model, output=output)
    s = torch.as_tensor(as_vector(importance, inst.n), dtype=torch.float32)[None]   # (1, n)
    if inst.n == 0:
        return float("nan")
    ids, mask = inst.batch()
    emb = f.embed(ids)
    base = baseline_embedding(f, ids, mask, baseline, inst.unk_id, emb)
    t = _targets(f, emb, ids, mask, target)
    pos = tuple(inst.positions.T)

    def forward(pres):                                                # (N, n) token presence in [0, 1]
        N = pres.shape[0]
        e, b = emb.expand(N, *emb.shape[1:]).clone(), base.expand(N, *base.shape[1:])
        gate = torch.ones(e.shape[:-1])
        gate[(slice(None),) + pos] = pres.to(gate.dtype)
        e = b + gate.unsqueeze(-1) * (e - b)
        return f(e, ids.expand(N, *ids.shape[1:]), mask.expand(N, *mask.shape[1:]))

    gen = torch.Generator().manual_seed(seed)

    def perturb(inputs):
        z = (torch.rand(inputs.shape, generator=gen) < 0.5).to(inputs.dtype)
        return z, inputs - z

    with torch.no_grad():
        val = _captum_infidelity(forward, perturb, torch.ones(1, inst.n), s, target=t, n_perturb_samples=n_perturb,
                                 normalize=normalize)
    return float(val[0])


@interactive_work
def sensitivity(model, inst: Instance, method: str = "integrated_gradients", radius: float = 0.02,
                n_perturb: int = 10, baseline: str = "pad", n_steps: int = 50, window: int = 1,
                n_samples: int | None = None, seed: int = 0, output: str = "prob",
                target: int | None = None) -> float:
    """Captum sensitivity_max of a method's token scores under embedding noise of L_inf radius `radius`.
    The target class stays the one predicted on the unperturbed input. Lower is better."""
    method = canonical_method(method)
    if method == "attention":
        raise ValueError("sensitivity is for Captum methods")
    f = EmbeddingForward(model, output=output)
    ids, mask = inst.batch()
    emb = f.embed(ids)
    base = baseline_embedding(f, ids, mask, baseline, inst.unk_id, emb)
    t = _targets(f, emb, ids, mask, target)

    def expl(e):
        e = e[0] if isinstance(e, tuple) else e
        N = e.shape[0]
        ex = lambda x: x.expand(N, *x.shape[1:])  # noqa: E731
        with torch.enable_grad():
            tok, _ = token_attributions(f, method, e, ex(base), ex(ids), ex(mask), t.expand(N), n_steps=n_steps,
                                        window=window, n_samples=n_samples)
        return (tok,)  # a tuple: sensitivity_max iterates over the explanation's tensors

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        val = _captum_sensitivity_max(expl, emb, perturb_radius=radius, n_perturb_samples=n_perturb)
    return float(val[0])


# ---------------------------------------------------------------- per explanation and per slice

@interactive_work
def explanation_report(model, inst: Instance, importance, removal: str = "delete",
                       reference=None, bins: Sequence[float] = BINS, k_pct: float = 20) -> dict[str, Any]:
    """ERASER curves, erasure flip and (with a reference importance, e.g. leave-one-out) rank agreement."""
    out = erasure_curves(model, inst, importance, bins, removal)
    ef = erasure_flip(model, inst, importance, removal)
    out.update({f"erasure_{k}": v for k, v in ef.items() if k != "n"})
    if reference is not None:
        out["kendall_tau_ref"] = kendall_tau(importance, reference)
        out["topk_overlap_ref"] = topk_overlap(importance, reference, pct=k_pct)
    return out


@interactive_work
def random_orders_curves(model, inst: Instance, n: int = N_RANDOM, removal: str = "delete", seed: int = 0,
                         target: int | None = None, bins: Sequence[float] = BINS) -> list[dict[str, Any]]:
    """`erasure_curves` of `n` seeded random rankings of the text's words: the chance an explanation must beat.
    The whole text is scored once and every ranking's variants go through the model together, in batches of
    near length of at most TOKENS_PER_BATCH positions (`buckets`, as the data-set path batches them); one
    `erasure_curves` per ranking scored the text n times, in 2n calls of the model: 0.2-0.5 s for a small model."""
    _check_removal(removal)
    rng = np.random.default_rng(seed)
    fn = prob_fn(model)
    p, j = _base_probs(fn, inst, target)
    made = [_erasure_variants(inst, rng.random(inst.n), bins, removal) for _ in range(n)]
    variants = [v for _, vs in made for v in vs]
    q = np.empty(len(variants))                                       # (n x variants per ranking,)
    for group in buckets([tuple(v.ids.shape) for v in variants]):
        q[group] = score(fn, [variants[g] for g in group], batch_size=len(group))[:, j]
    out, at = [], 0
    for ks, vs in made:                                               # each ranking's share of q, in order
        out.append(_curves(bins, ks, p, j, q[at:at + len(vs)], removal))
        at += len(vs)
    return out


__all__ = ["BINS", "n_tokens", "erasure_curves", "comprehensiveness", "sufficiency", "leave_one_out",
           "kendall_tau", "topk_overlap", "agreement", "attention_maps", "permutation_test",
           "uniform_attention_test", "erasure_flip", "infidelity", "sensitivity", "explanation_report", "versus_random",
           "random_orders_curves", "N_RANDOM", "LEVEL", "VERDICTS", "VERDICT_RULE", "ONE_TEXT_NOTE"]
