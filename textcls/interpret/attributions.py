"""Captum attributions on the embedding layer (`model.embed`) of every model, as per-token scores.

Methods (`METHODS`; their labels, aliases and properties are registered in textcls.interpret.methods):
  integrated_gradients (ig)    Captum IntegratedGradients (Gauss-Legendre) from a baseline. The convergence delta
                               sum(attributions) - (F(x) - F(baseline)) is reported; the step count is doubled
                               (50 -> 100 -> 200 ...) per example until |delta| <= tolerance * |F(x) - F(baseline)|
                               + atol, or max_steps is reached (then `converged` is False).
  saliency                     Captum Saliency: |dF/de| summed over the embedding dimensions (unsigned).
  grad_x_input (input_x_gradient)  Captum InputXGradient: e . dF/de per token (signed; baseline-free).
  occlusion                    Captum Occlusion: windows of `window` tokens (all embedding dims) replaced by the
                               baseline; a token's score is F(x) - F(occluded), averaged over the windows that
                               cover it.
  shapley (shapley_value_sampling)  Captum ShapleyValueSampling with a feature mask grouping each token's
                               embedding dims: `n_samples` random token orders (default 25). Scores sum exactly
                               to F(x) - F(baseline).
  lime                         Captum Lime with the same per-token feature mask, `n_samples` (default 200)
                               Bernoulli(0.5) token subsets, Captum's cosine exponential kernel, and a closed-form
                               weighted ridge fit (`WeightedRidge`; scikit-learn is not needed).
Baselines (`BASELINES`): the embedding of the pad id ("pad") or the unknown-word id ("unk") at every real
position, or the zero vector ("zero"). Pad positions keep their own embedding, so they never move.
F is the probability of the target class (output="prob", default) or its logit (output="logit"); the target is
the predicted class unless given. With `contrast` (a foil label: an index, a name, or "runner-up"; see
textcls.interpret.contrastive) F is logit(target) - logit(foil) whatever `output` says: every method then explains
why the target rather than the foil (the foil is recorded in the Attribution's extras, "contrast"). Gradient
methods sum over embedding dimensions; perturbation methods give one value per token (the mask groups a token's
dimensions). HCAN's (S, W) input is attributed on its (S, W, E) embeddings; scores come back per real token,
flattened sentence by sentence (the order of Prediction.tokens), and as `grid` (S, W).

How the layer is reached: `EmbeddingForward` substitutes the tensor Captum perturbs for model.embed's output
(a call-scoped, thread-local forward hook), which is exactly what Captum's LayerIntegratedGradients on
model.embed does (tests check the two agree) and lets every method above - and infidelity / sensitivity_max -
share one code path. Batched and single-example results agree (models are padding invariant; tests check it).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
# Captum exports no public base class for LIME's `interpretable_model`; its own linear models derive from this one.
from captum._utils.models.model import Model as _CaptumModel
from captum.attr import (InputXGradient, IntegratedGradients, Lime, Occlusion, Saliency,
                         ShapleyValueSampling)

from textcls.runtime.threads import for_texts
from textcls.interpret.contrastive import RUNNER_UP, mark, parse
from textcls.interpret.contrastive import foils as foils_of
from textcls.interpret.embedding_forward import EmbeddingForward
from textcls.interpret.instances import as_batch, Instance, stack
from textcls.interpret.probabilities import check_model
from textcls.interpret.sources import as_source
from textcls.interpret.records import BASELINES, Attribution  # noqa: F401  (torch-free records, re-exported)

METHODS = ("integrated_gradients", "saliency", "grad_x_input", "occlusion", "shapley", "lime")   # this engine's
TOKENS_PER_PASS = 65536
IG_TOKEN_STEPS = 1 << 18       # texts x steps x positions per IG call at most (memory: about 4 copies of that x E floats)
IG_CALL_BYTES = 1 << 27        # ... and at most this many bytes of those copies (16 E bytes a token-step): 128 MB


def canonical_method(method: str) -> str:
    """The registered name of a Captum method or its alias (labels, aliases: textcls.interpret.methods)."""
    from textcls.interpret.methods.registry import REGISTRY, canonical   # the package registers every method
    try:
        m = canonical(method)
    except ValueError:
        m = None
    if m not in METHODS:
        aliases = sorted(a for n in METHODS for a in REGISTRY[n].aliases)
        raise ValueError(f"unknown attribution method {method!r}; choose one of {', '.join(METHODS)} "
                         f"(aliases {', '.join(aliases)})")
    return m


class WeightedRidge(_CaptumModel):
    """Closed-form weighted ridge regression with intercept, as Captum's interpretable model for LIME.

    Minimises sum_i w_i (y_i - b - x_i . beta)^2 + alpha ||beta||^2 (the intercept unpenalised)."""

    def __init__(self, alpha: float = 1e-2):
        self.alpha = float(alpha)
        self.coef: torch.Tensor | None = None
        self.intercept: torch.Tensor | None = None

    def fit(self, train_data, **kwargs):
        xs, ys, ws = [], [], []
        for batch in train_data:
            x, y = batch[0], batch[1]
            w = batch[2] if len(batch) > 2 else torch.ones(x.shape[0])
            xs.append(x.double().reshape(x.shape[0], -1))
            ys.append(y.double().reshape(x.shape[0], -1)[:, 0])
            ws.append(w.double().reshape(-1))
        X, y, w = torch.cat(xs), torch.cat(ys), torch.cat(ws).clamp(min=0)
        sw = w.sum().clamp(min=1e-12)
        xm, ym = (w[:, None] * X).sum(0) / sw, (w * y).sum() / sw
        Xc, yc = X - xm, y - ym
        A = Xc.T @ (w[:, None] * Xc) + self.alpha * torch.eye(X.shape[1], dtype=X.dtype)
        beta = torch.linalg.solve(A, Xc.T @ (w * yc))
        self.coef, self.intercept = beta, ym - xm @ beta
        return {"n_samples": int(X.shape[0])}

    def representation(self) -> torch.Tensor:
        if self.coef is None:
            raise RuntimeError("WeightedRidge.fit has not been called")
        return self.coef.float()[None]  # (1, n_features)

    def __call__(self, x):
        return x.double().reshape(x.shape[0], -1) @ self.coef + self.intercept


# ---------------------------------------------------------------- helpers

def baseline_embedding(f: EmbeddingForward, ids: torch.Tensor, mask: torch.Tensor, baseline: str,
                       unk_id: int, emb: torch.Tensor | None = None) -> torch.Tensor:
    """The baseline tensor shaped like the embedding output: real positions replaced, pads kept."""
    if baseline not in BASELINES:
        raise ValueError(f"unknown baseline {baseline!r}; choose one of {BASELINES}")
    emb = f.embed(ids) if emb is None else emb
    if baseline == "zero":
        return emb * (~mask).unsqueeze(-1).to(emb.dtype)
    pad_id = getattr(f.model.config, "pad_id", 0)
    new_id = pad_id if baseline == "pad" else unk_id
    return f.embed(torch.where(mask, torch.full_like(ids, new_id), ids))


def _targets(f: EmbeddingForward, emb, ids, mask, target) -> torch.Tensor:
    B = ids.shape[0]
    if target is None:
        with torch.no_grad():
            logits = f.model(ids, mask).logits
        return logits.argmax(-1)
    if isinstance(target, int):
        t = torch.full((B,), int(target), dtype=torch.long)
    else:
        t = torch.as_tensor(list(target), dtype=torch.long).reshape(-1)
        if t.numel() != B:
            raise ValueError(f"{t.numel()} targets for {B} examples")
    C = f.model.config.num_labels
    if ((t < 0) | (t >= C)).any():
        raise ValueError(f"target out of range for {C} classes: {t.tolist()}")
    return t


def _foils(f: EmbeddingForward, ids, mask, targets, contrast, logits=None) -> torch.Tensor | None:
    """(B,) long: each example's foil (a parsed contrast: an index or RUNNER_UP), or None without a contrast;
    `logits` (B, C): the model's on these texts, when the caller has them."""
    if contrast is None:
        return None
    if logits is not None:
        logits = logits.numpy()
    if contrast == RUNNER_UP and logits is None:
        with torch.no_grad():
            logits = f.model(ids, mask).logits.numpy()                         # (B, C)
    return torch.as_tensor(foils_of(logits if logits is not None else np.zeros((ids.shape[0], 1)),
                                    targets.tolist(), contrast))               # (B,)


def _outputs(f: EmbeddingForward, emb, ids, mask, targets, foils=None) -> np.ndarray:
    with torch.no_grad():
        out = f(emb, ids, mask, foils)                                         # (B, C)
    return out.gather(1, targets[:, None])[:, 0].double().numpy()


def _feature_mask(mask: torch.Tensor, E: int) -> tuple[torch.Tensor, int]:
    """(1, ..., E) long: token index at each real position (row-major), n for pads (one extra group)."""
    n = int(mask.sum())
    fm = torch.full(mask.shape, n, dtype=torch.long)
    fm[mask] = torch.arange(n)
    return fm.unsqueeze(-1).expand(*mask.shape, E).contiguous(), n


def _crop(inst: Instance) -> Instance:
    """A flat example without trailing pads (shorter batches for per-example methods)."""
    if inst.hierarchical or inst.n == 0:
        return inst
    last = int(inst.positions[-1, 0]) + 1
    return Instance(inst.ids[:last], inst.mask[:last], inst.tokens, inst.pad_id, inst.unk_id)


# ---------------------------------------------------------------- main entry points

def attribute_instances(model, instances: Sequence[Instance], method: str = "integrated_gradients", *,
                        baseline: str = "pad", target=None, output: str = "prob", n_steps: int = 50,
                        tolerance: float = 0.05, atol: float = 1e-4, max_steps: int = 800, window: int = 1,
                        n_samples: int | None = None, seed: int = 0, internal_batch_size: int = 1024,
                        edits: dict | None = None, labels: Sequence[str] | None = None,
                        contrast=None) -> list[Attribution]:
    """Attributions of each instance (see the module docstring for the methods and arguments)."""
    with for_texts(len(instances)):  # thread policy (textcls.runtime.threads): one text is interactive work
        return _attribute_instances(model, instances, method, baseline=baseline, target=target, output=output,
                                    n_steps=n_steps, tolerance=tolerance, atol=atol, max_steps=max_steps,
                                    window=window, n_samples=n_samples, seed=seed,
                                    internal_batch_size=internal_batch_size, edits=edits, labels=labels,
                                    contrast=contrast)


def _attribute_instances(model, instances, method, *, baseline, target, output, n_steps, tolerance, atol,
                         max_steps, window, n_samples, seed, internal_batch_size, edits, labels, contrast):
    method = canonical_method(method)
    check_model(model)
    contrast = parse(contrast, labels, model.config.num_labels)
    if not instances:
        return []
    if n_steps < 1 or max_steps < n_steps:
        raise ValueError(f"need 1 <= n_steps <= max_steps, got n_steps={n_steps}, max_steps={max_steps}")
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    f = EmbeddingForward(model, output=output, edits=edits)
    unk_id = instances[0].unk_id
    if method in ("shapley", "lime"):
        results = []
        tlist = _target_list(target, len(instances))
        for i, inst in enumerate(instances):
            results += _perturbation(f, [_crop(inst)], method, baseline, tlist[i], unk_id, n_samples, seed,
                                     contrast)
    else:
        ids, mask = stack(instances)
        if method == "integrated_gradients":
            results = _integrated_gradients(f, ids, mask, baseline, target, unk_id, n_steps, tolerance, atol,
                                            max_steps, internal_batch_size, contrast)
        else:
            results = _batched(f, ids, mask, method, baseline, target, unk_id, window, contrast)
    for inst, r in zip(instances, results):
        r.tokens = inst.tokens
        r.grid = inst.grid(r.scores)
        if labels is not None:
            r.label = str(labels[r.target])
            if "contrast" in r.extras:
                mark(r, r.extras["contrast"], labels)
    return results


def _target_list(target, n: int) -> list:
    if target is None or isinstance(target, int):
        return [target] * n
    t = list(target)
    if len(t) != n:
        raise ValueError(f"{len(t)} targets for {n} examples")
    return [int(x) for x in t]


def rows_per_pass(model, ids: torch.Tensor, mask: torch.Tensor, most: int) -> int:
    """Perturbed copies one forward pass of Occlusion, LIME or Shapley sampling runs: `most`, fewer where a copy's
    activations (its attention maps grow with the square of its positions: about 16 x heads x positions^2 bytes,
    plus 64 x hidden x positions) would take the pass past the explanation's memory budget
    (textcls.runtime.limits: explain_max_memory_mb)."""
    from textcls.runtime.limits import current
    cfg = getattr(model, "config", None)
    hf = getattr(getattr(model, "hf", None), "config", None)
    lengths = getattr(model, "sequence_lengths", None)
    T = int(lengths(ids, mask).max()) if callable(lengths) else int(ids[0].numel())
    heads = int(getattr(cfg, "num_heads", 0) or getattr(cfg, "n_heads", 0) or 0)
    hidden = int(getattr(hf, "hidden_size", 0) or getattr(cfg, "d_model", 0) or 256)
    per_row = 16 * heads * T * T + 64 * hidden * T
    return max(1, min(int(most), current().explain_max_memory_mb * 2**20 // max(1, per_row)))


def token_attributions(f: EmbeddingForward, method: str, emb: torch.Tensor, base: torch.Tensor | None,
                       ids: torch.Tensor, mask: torch.Tensor, targets: torch.Tensor, *, n_steps: int = 50,
                       window: int = 1, n_samples: int | None = None, internal_batch_size: int = 1024,
                       foils: torch.Tensor | None = None, endpoints: tuple | None = None
                       ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One Captum method on embeddings `emb` (B, ..., E): token-level attributions (B, ...) (0 at pads) and,
    for IG, the convergence delta (B,). Shapley / LIME run example by example with their feature masks;
    seed them from outside (torch.random.fork_rng). `foils` (B,): explain logit(target) - logit(foil).
    `endpoints` (F(x), F(baseline)), each (B,), when the caller has them: IG's delta is then Captum's
    sum(attributions) - (F(x) - F(baseline)) without Captum's own pass over x and the baseline."""
    args = (ids, mask) if foils is None else (ids, mask, foils)
    delta = None
    if method == "integrated_gradients":
        # rows per forward pass: at most internal_batch_size, and about 64k tokens (long texts, big models)
        rows = max(emb.shape[0], min(internal_batch_size, TOKENS_PER_PASS // max(1, ids[0].numel())))
        attr = IntegratedGradients(f).attribute(
            emb, baselines=base, target=targets, additional_forward_args=args, n_steps=n_steps,
            internal_batch_size=rows, return_convergence_delta=endpoints is None)
        if endpoints is None:
            attr, delta = attr
        else:
            fx, fb = (torch.as_tensor(np.asarray(e)) for e in endpoints)                   # (B,) each
            delta = attr.reshape(attr.shape[0], -1).sum(1).double() - (fx - fb)          # (B,) Captum's delta
        tok = attr.sum(-1)
    elif method == "saliency":
        tok = Saliency(f).attribute(emb.clone().requires_grad_(True), target=targets, abs=True,
                                    additional_forward_args=args).sum(-1)
    elif method == "grad_x_input":
        tok = InputXGradient(f).attribute(emb.clone().requires_grad_(True), target=targets,
                                          additional_forward_args=args).sum(-1)
    elif method == "occlusion":
        E = emb.shape[-1]
        lead = (1,) * (ids.dim() - 2)  # hierarchical: windows stay inside one sentence
        tok = Occlusion(f).attribute(emb, sliding_window_shapes=lead + (window, E), strides=lead + (1, E),
                                     baselines=base, target=targets, additional_forward_args=args,
                                     perturbations_per_eval=max(1, rows_per_pass(f.model, ids, mask, 64)
                                                                // emb.shape[0])).mean(-1)
    else:
        rows = []
        for b in range(emb.shape[0]):
            m = mask[b:b + 1]
            if not m.any():
                rows.append(torch.zeros(m.shape))
                continue
            fm, _ = _feature_mask(m[0], emb.shape[-1])
            one = (ids[b:b + 1], m) if foils is None else (ids[b:b + 1], m, foils[b:b + 1])
            kw = dict(baselines=base[b:b + 1], target=targets[b:b + 1], additional_forward_args=one,
                      feature_mask=fm[None], perturbations_per_eval=rows_per_pass(f.model, ids[b:b + 1], m, 32))
            if method == "shapley":
                attr = ShapleyValueSampling(f).attribute(emb[b:b + 1], n_samples=n_samples or 25, **kw)
            else:
                attr = Lime(f, interpretable_model=WeightedRidge()).attribute(emb[b:b + 1],
                                                                              n_samples=n_samples or 200, **kw)
            rows.append(attr.mean(-1))
        tok = torch.cat(rows)
    return tok.detach() * mask.to(tok.dtype), delta


def _per_example(tok: torch.Tensor, mask: torch.Tensor) -> list[np.ndarray]:
    return [tok[b][mask[b]].double().numpy() for b in range(tok.shape[0])]


def _integrated_gradients(f, ids, mask, baseline, target, unk_id, n_steps, tolerance, atol, max_steps, ibs,
                          contrast=None):
    emb = f.embed(ids)
    base = baseline_embedding(f, ids, mask, baseline, unk_id, emb)
    B = ids.shape[0]
    with torch.no_grad():                       # one pass for the target, the foil, F(x) and F(baseline)
        ends = f.logits(torch.cat([emb, base]), torch.cat([ids, ids]), torch.cat([mask, mask]))     # (2B, C)
    targets = ends[:B].argmax(-1) if target is None else _targets(f, emb, ids, mask, target)
    foils = _foils(f, ids, mask, targets, contrast, ends[:B])
    fx, fb = (f.from_logits(e, foils).gather(1, targets[:, None])[:, 0].double().numpy()       # (B,) each
              for e in (ends[:B], ends[B:]))
    scores: list[np.ndarray | None] = [None] * B
    deltas, steps_used = np.zeros(B), np.zeros(B, dtype=int)
    todo, steps = list(range(B)), n_steps
    while todo:
        # Captum keeps every step's gradient until it sums them: at most IG_TOKEN_STEPS (texts x steps x positions)
        # and IG_CALL_BYTES per call, so doubling the steps of many unconverged texts does not multiply the memory
        token_steps = min(IG_TOKEN_STEPS, IG_CALL_BYTES // (16 * emb.shape[-1]))
        per = max(1, token_steps // (steps * max(1, ids[0].numel())))
        for s in range(0, len(todo), per):
            part = todo[s:s + per]
            sel = torch.tensor(part)
            tok, delta = token_attributions(f, "integrated_gradients", emb[sel], base[sel], ids[sel], mask[sel],
                                            targets[sel], n_steps=steps, internal_batch_size=ibs,
                                            foils=None if foils is None else foils[sel],
                                            endpoints=(fx[part], fb[part]))
            for j, (i, sc) in enumerate(zip(part, _per_example(tok, mask[sel]))):
                scores[i], deltas[i], steps_used[i] = sc, float(delta[j]), steps
        ok = np.abs(deltas[todo]) <= tolerance * np.abs(fx[todo] - fb[todo]) + atol
        todo = [i for i, good in zip(todo, ok) if not good]
        if steps * 2 > max_steps:
            break
        steps *= 2
    unconverged = set(todo)
    return [_contrasted(Attribution("integrated_gradients", scores[i], np.zeros(0), int(targets[i]), float(fx[i]),
                                    f.output, baseline, float(fb[i]), float(deltas[i]), int(steps_used[i]),
                                    i not in unconverged,
                                    extras={"tolerance": tolerance, "atol": atol, "max_steps": max_steps}), foils, i)
            for i in range(B)]


def _contrasted(a: Attribution, foils: torch.Tensor | None, i: int) -> Attribution:
    """`a` with example i's foil recorded (extras "contrast", output_kind OUTPUT_KIND); as it is without foils."""
    return a if foils is None else mark(a, int(foils[i]))


def _gradient(f, ids, mask, method, target, contrast=None) -> list[Attribution]:
    """Saliency (|dF/de| summed over the embedding) or gradient x input (e . dF/de) from one forward and one
    backward pass: the same pass gives the predicted target, the runner-up foil and F(x) (Captum's Saliency and
    InputXGradient compute the same gradient but need the target and F(x) from passes of their own)."""
    emb = f.embed(ids)                                                           # (B, T, E) or (B, S, T, E)
    x = emb.clone().requires_grad_(True)
    with torch.enable_grad():
        logits = f.logits(x, ids, mask)                                          # (B, C)
        targets = logits.detach().argmax(-1) if target is None else _targets(f, emb, ids, mask, target)
        foils = None if contrast is None else torch.as_tensor(                   # (B,)
            foils_of(logits.detach().numpy(), targets.tolist(), contrast))
        fx = f.from_logits(logits, foils).gather(1, targets[:, None])[:, 0]     # (B,)
        grad, = torch.autograd.grad(fx.sum(), x)                                 # (B, ..., E)
    tok = grad.abs().sum(-1) if method == "saliency" else (emb * grad).sum(-1)   # (B, ...)
    tok = tok.detach() * mask.to(tok.dtype)
    fxs = fx.detach().double().numpy()
    return [_contrasted(Attribution(method, sc, np.zeros(0), int(targets[i]), float(fxs[i]), f.output, None, None),
                        foils, i) for i, sc in enumerate(_per_example(tok, mask))]


def _batched(f, ids, mask, method, baseline, target, unk_id, window, contrast=None):
    if method in ("saliency", "grad_x_input"):
        return _gradient(f, ids, mask, method, target, contrast)
    emb = f.embed(ids)
    targets = _targets(f, emb, ids, mask, target)
    foils = _foils(f, ids, mask, targets, contrast)
    fx = _outputs(f, emb, ids, mask, targets, foils)
    base, fb = None, None
    if method == "occlusion":
        base = baseline_embedding(f, ids, mask, baseline, unk_id, emb)
        fb = _outputs(f, base, ids, mask, targets, foils)
    tok, _ = token_attributions(f, method, emb, base, ids, mask, targets, window=window, foils=foils)
    out = []
    for i, sc in enumerate(_per_example(tok, mask)):
        a = Attribution(method, sc, np.zeros(0), int(targets[i]), float(fx[i]), f.output,
                        baseline if base is not None else None, None if fb is None else float(fb[i]))
        if method == "occlusion":
            a.extras["window"] = window
        out.append(_contrasted(a, foils, i))
    return out


def _perturbation(f, insts, method, baseline, target, unk_id, n_samples, seed, contrast=None):
    (inst,) = insts
    ids, mask = inst.batch()
    emb = f.embed(ids)
    base = baseline_embedding(f, ids, mask, baseline, unk_id, emb)
    targets = _targets(f, emb, ids, mask, target)
    foils = _foils(f, ids, mask, targets, contrast)
    fx, fb = _outputs(f, emb, ids, mask, targets, foils), _outputs(f, base, ids, mask, targets, foils)
    ns = n_samples or (25 if method == "shapley" else 200)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        tok, _ = token_attributions(f, method, emb, base, ids, mask, targets, n_samples=ns, foils=foils)
    return [_contrasted(Attribution(method, _per_example(tok, mask)[0], np.zeros(0), int(targets[0]), float(fx[0]),
                                    f.output, baseline, float(fb[0]), extras={"n_samples": ns}), foils, 0)]


def attribute(model, ids: torch.Tensor, mask: torch.Tensor | None = None, method: str = "integrated_gradients",
              *, tokens: Sequence[Sequence[str]] | None = None, unk_id: int = 1, **kw) -> list[Attribution]:
    """Attributions for a batch of token ids (B, L) or (B, S, W) (one example, (L,) or (S, W), is a batch of one).

    Keyword arguments as `attribute_instances`: baseline, target, output, n_steps, tolerance, atol, max_steps,
    window, n_samples, seed, internal_batch_size, edits, labels, contrast."""
    pad_id = getattr(getattr(model, "config", None), "pad_id", 0)
    ids, mask = as_batch(model, ids, mask)
    insts = Instance.from_batch(ids, mask, tokens, pad_id=pad_id, unk_id=unk_id)
    return attribute_instances(model, insts, method, **kw)


def attribute_texts(source, texts: Sequence[str], method: str = "integrated_gradients", *, tokenizer=None,
            **kw) -> list[Attribution]:
    """Attributions for texts. `source` is a Predictor or a model with `tokenizer=`; tokens and label names
    are filled in. Keyword arguments as `attribute_instances`."""
    src = as_source(source, tokenizer)
    insts = src.instances(texts)
    kw.setdefault("labels", src.labels)
    return attribute_instances(src.model, insts, method, **kw)


__all__ = ["METHODS", "BASELINES", "Attribution", "WeightedRidge", "attribute", "attribute_instances",
           "attribute_texts", "baseline_embedding", "canonical_method", "token_attributions"]
