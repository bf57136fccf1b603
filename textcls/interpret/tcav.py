"""TCAV: testing with concept activation vectors (Kim et al. 2018), following LIT's protocol
(PAIR-code/lit, lit_nlp/components/tcav.py, default TCAV).

A concept is a few texts ("the film was wonderful", ...). For one layer:
- activations: the layer's activation of a text pooled over its real positions (mean; or the [CLS] position,
  `pooling="cls"`, where the model has one); sites without positions (Kim CNN's pooled filters) are read as they are;
- a CAV: sklearn's SGDClassifier (random_state=seed) trained on the concept's activations (label 1) against as many
  comparison texts of the data split (label 0), 33% held out (stratified, random_state=seed) to measure its accuracy;
  the CAV is the classifier's weight vector (LIT's `get_trained_cav`);
- directional derivative of an example: the gradient of its predicted class's logit with respect to the layer's
  activation, summed over the positions the pooling reads (the derivative of that logit when the CAV is added at
  every one of them), dotted with the CAV;
- TCAV score of a class: the share of the split's examples predicted as that class whose directional derivative is
  > 0 (LIT's `compute_tcav_score`; LIT also counts the examples predicted as the class);
- runs: n = min(concept texts, split texts) (one less when equal); `runs` CAVs of the concept (a sample of n concept
  texts - all of them when n is their number) against n random split texts, and `runs` random-vs-random CAVs (two
  independent samples of n split texts, as LIT draws them); p = two-sided Student t-test of the concept runs' scores
  against the random runs' (scipy.stats.ttest_ind, LIT's `hyp_test`); p > 0.05 (or undefined): not significant;
- reported as LIT does: the score and accuracy of the concept run whose CAV was the most accurate, the p-value and
  the random runs' mean; beside them the concept runs' mean and spread.

Layers per family (`layer_names`): the Transformer's blocks, ACT's filter space per layer (the attentive-convolution
feature maps M of every head), HCAN's sentence level (CAN: its one level), AGCNN's gated maps per window (every
gate's), LAMA's BiGRU states, Kim CNN's pooled filters (the classifier's input) and a Hugging Face model's layers.
Read through the models' probe maps (`edits` that record and change nothing) or forward hooks that act only in this
thread and are removed in `finally`; the model is never changed. Imports no torch at import time.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

TEST_SIZE = 0.33          # LIT's held-out share of each CAV's training texts
ALPHA = 0.05              # p above this: not significant
POOLINGS = ("mean", "cls")
FAMILIES = ("transformer", "act", "hcan", "can", "agcnn", "kim_cnn", "lama", "hf")
DEFINITION = ("TCAV score = share of the split's examples predicted as the class whose directional derivative "
              "(gradient of that class's logit w.r.t. the layer's pooled activation, dotted with the CAV) is > 0; "
              "the CAV separates the concept's activations from random split texts (SGD linear classifier, 33% held "
              "out); p = two-sided t-test of the concept's scores over its runs against random-vs-random runs' "
              "scores (LIT); p > 0.05: not significant.")


class TcavError(ValueError):
    """Input TCAV cannot use (too few texts, an unknown layer or label, a model without layers): one line."""


# ---------------------------------------------------------------- LIT's units (tested against its values)

def tcav_score(dir_derivs: Sequence[float]) -> float:
    """The share of directional derivatives > 0 (NaN for none)."""
    d = np.asarray(dir_derivs, dtype=np.float64)
    return float((d > 0).mean()) if d.size else float("nan")


def hyp_test(scores: Sequence[float], random_scores: Sequence[float]) -> float:
    """The p-value of a two-sided Student t-test of the concept's scores against the random runs' (NaN when both are
    constant and equal)."""
    import warnings

    from scipy.stats import ttest_ind
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)          # constant input: scipy warns and gives NaN
        return float(ttest_ind(np.asarray(scores, float), np.asarray(random_scores, float)).pvalue)


def train_cav(x, y, test_size: float = TEST_SIZE, random_state: int | None = None) -> tuple[np.ndarray, float]:
    """(CAV (1, d): the weights of an SGD linear classifier of y on x, accuracy on the held-out share)."""
    from sklearn.linear_model import SGDClassifier
    from sklearn.model_selection import train_test_split
    x_train, x_test, y_train, y_test = train_test_split(np.asarray(x), np.asarray(y), test_size=test_size,
                                                        stratify=y, random_state=random_state)
    lm = SGDClassifier(random_state=random_state).fit(x_train, y_train)
    return lm.coef_, float((lm.predict(x_test) == y_test).mean())


def directional_derivatives(cav: np.ndarray, grads: np.ndarray) -> np.ndarray:
    """Each example's gradient (N, d) dotted with the CAV: (N,)."""
    return np.asarray(grads, dtype=np.float64) @ np.asarray(cav, dtype=np.float64).reshape(-1)


# ---------------------------------------------------------------- where a layer is read

@dataclass(frozen=True)
class _Site:
    """One layer: `kind` "edit" (the model's probe maps `keys` = ((map, layer), ...)), "out" (a module's output),
    "features" (the classifier's input, out.features). `view` turns the recorded tensors into (B, T, d) (or (B, d));
    `real(ids, mask, T, kw_mask)` gives the (B, T) positions the pooling reads; `cls`: position 0 is a [CLS]."""

    name: str
    kind: str
    keys: tuple = ()
    module: Any = None
    view: Callable | None = None
    real: Callable | None = None
    cls: bool = False


def _family(model) -> str:
    name = getattr(model, "registry_name", "")
    if name not in FAMILIES:
        raise TcavError(f"TCAV reads the layers of the six families and Hugging Face models; "
                        f"{name or type(model).__name__} is not one of them")
    return name


def _first(out):
    import torch
    return out if isinstance(out, torch.Tensor) else out[0]


def sites(model) -> list[_Site]:
    """The layers TCAV offers for a model, in order (module docstring)."""
    import torch
    fam = _family(model)
    plain = lambda ids, mask, T, kw: mask[:, :T]                                       # noqa: E731
    given = lambda ids, mask, T, kw: (mask if kw is None else kw)[:, :T]               # noqa: E731  the map's mask
    if fam == "transformer":
        s = model.n_special

        def real(ids, mask, T, kw):
            return torch.cat([mask.new_ones(mask.shape[0], s), mask], 1)[:, :T]      # (B, s + L)
        return [_Site(f"block {i + 1}", "out", module=lay, view=lambda ts: ts[0], real=real, cls=bool(s))
                for i, lay in enumerate(model.layers)]
    if fam == "act":
        act_view = lambda ts: ts[0].permute(0, 3, 1, 2).flatten(2)                     # noqa: E731  (B, L, h m)
        return [_Site(f"layer {i + 1} filters", "edit", (("feature_map", i),), view=act_view, real=given)
                for i in range(model.config.n_layers)]
    if fam == "hcan":
        def sentences(ids, mask, T, kw):
            counts = mask.any(-1).sum(1)                                               # (B,) real sentences
            return torch.arange(T, device=mask.device)[None] < counts[:, None]        # (B, T) packed first
        return [_Site("sentence level", "out", module=model.sent_level.norm, view=lambda ts: ts[0], real=sentences)]
    if fam == "can":
        return [_Site("text level", "out", module=model.level.norm, view=lambda ts: ts[0], real=plain)]
    if fam == "agcnn":
        c = model.config
        out = []
        for h in c.windows:
            keys = tuple((f"gated_h{h}_k{k}{f'_g{g}' if c.n_gates > 1 else ''}", None)
                         for k in c.gate_windows for g in range(1, c.n_gates + 1))
            out.append(_Site(f"window {h} gated", "edit", keys, view=lambda ts: torch.cat(ts, 1).transpose(1, 2),
                             real=given))
        return out
    if fam == "lama":
        return [_Site("BiGRU", "edit", (("hidden", None),), view=lambda ts: ts[0], real=given)]
    if fam == "kim_cnn":
        return [_Site("pooled filters", "features", view=lambda ts: ts[0])]
    from textcls.interpret.lens import hf_layers
    try:
        layers = hf_layers(model.hf)
    except ValueError as e:
        raise TcavError(str(e)) from None

    def pieces(ids, mask, T, kw):
        return model._layout(ids, mask).real[:, :T]                                   # (B, T) real pieces
    return [_Site(f"layer {i + 1}", "out", module=lay, view=lambda ts: ts[0], real=pieces, cls=bool(model.prefix))
            for i, lay in enumerate(layers)]


def layer_names(model) -> list[str]:
    return [s.name for s in sites(model)]


def choose(all_sites: list[_Site], layer: str) -> list[_Site]:
    """`layer`: "all", "last", or layer names separated by commas (case-insensitive)."""
    key = str(layer or "all").strip().lower()
    if key == "all":
        return list(all_sites)
    if key == "last":
        return all_sites[-1:]
    by = {s.name.lower(): s for s in all_sites}
    wanted = [p.strip() for p in key.split(",") if p.strip()]
    bad = [p for p in wanted if p not in by]
    if bad or not wanted:
        raise TcavError(f"unknown layer {', '.join(bad) or layer!r}; this model's layers: "
                        f"{', '.join(s.name for s in all_sites)} (or all, last)")
    return [by[p] for p in dict.fromkeys(wanted)]


@contextmanager
def _recording(model, chosen: list[_Site]):
    """Yields (edits for the forward, got): got[(map, layer)] = [(tensor, mask)], got[id(module)] = [tensor]."""
    owner, got, handles = threading.get_ident(), {}, []

    def edit(name):
        def fn(t, layer=None, mask=None):
            got.setdefault((name, layer), []).append((t, mask))
            return t
        return fn

    def hook(module, args, out):
        if threading.get_ident() == owner:
            got.setdefault(id(module), []).append(_first(out))
    names = {k[0] for s in chosen if s.kind == "edit" for k in s.keys}
    try:
        for s in chosen:
            if s.kind == "out":
                handles.append(s.module.register_forward_hook(hook))
        yield {n: edit(n) for n in names}, got
    finally:
        for h in handles:
            h.remove()


def _raw(site: _Site, got: dict, out) -> tuple[list, Any]:
    """The recorded tensors of a site and the mask its map came with (edits) or None."""
    if site.kind == "features":
        return [out.features], None
    if site.kind == "out":
        ts = got.get(id(site.module), [])
        if len(ts) != 1:
            raise TcavError(f"{site.name}: the layer ran {len(ts)} times in one forward pass")
        return ts, None
    found = []
    for name, layer in site.keys:
        calls = got.get((name, layer), [])
        if len(calls) != 1:
            raise TcavError(f"{site.name}: map {name} was recorded {len(calls)} times in one forward pass")
        found.append(calls[0])
    return [t for t, _ in found], found[0][1]


def _pool(site: _Site, x, real, pooling: str, grad: bool):
    """(B, T, d) -> (B, d): the mean over real positions (a gradient: their sum), or position 0 for cls."""
    if x.dim() == 2:
        return x                                                                       # (B, d) already pooled
    if pooling == "cls":
        return x[:, 0]                                                                 # (B, d)
    r = real.to(x.dtype).unsqueeze(-1)                                                 # (B, T, 1)
    total = (x * r).sum(1)                                                             # (B, d)
    return total if grad else total / r.sum(1).clamp(min=1)                           # (B, d)


def collect(source, texts: Sequence[str], chosen: list[_Site], *, pooling: str = "mean", grads: bool = True,
            batch_size: int = 64, progress: Callable[[int], None] | None = None
            ) -> tuple[list[np.ndarray], list[np.ndarray] | None, np.ndarray]:
    """Per chosen layer the texts' pooled activations (N, d) and, with `grads`, the gradients of each text's
    predicted class logit w.r.t. them (N, d); and the predicted class indices (N,)."""
    import torch
    model = source.model
    if pooling == "cls" and any(not s.cls for s in chosen if s.kind != "features"):
        bad = next(s.name for s in chosen if not s.cls and s.kind != "features")
        raise TcavError(f"pooling cls: {bad} has no [CLS] position; use mean pooling")
    if getattr(model, "masked", True) is False:
        batch_size = 1                                   # rows of different lengths would run apart
    device = next(model.parameters()).device
    order = sorted(range(len(texts)), key=lambda i: len(texts[i].split()))             # similar lengths batched
    acts = [[] for _ in chosen]
    grad_parts = [[] for _ in chosen]
    preds = []
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        enc = source.encode([texts[i] for i in idx])
        ids, mask = enc.token_ids.to(device), enc.mask.to(device).bool()
        with torch.set_grad_enabled(grads), _recording(model, chosen) as (edits, got):
            out = model(ids, mask, edits=edits or None)
            logits = out.logits                                                        # (B, K)
            raws = [_raw(s, got, out) for s in chosen]
            pred = logits.argmax(1)                                                    # (B,)
            if grads:
                flat = [t for ts, _ in raws for t in ts]
                gs = torch.autograd.grad(logits.gather(1, pred[:, None]).sum(), flat, allow_unused=True)
                gs = [torch.zeros_like(t) if g is None else g for t, g in zip(flat, gs)]
        k = 0
        for j, (s, (ts, kw)) in enumerate(zip(chosen, raws)):
            x = s.view(ts).detach()                                                    # (B, T, d) or (B, d)
            real = s.real(ids, mask, x.shape[1], kw) if x.dim() == 3 else None         # (B, T)
            acts[j].append(_pool(s, x, real, pooling, False).double().cpu().numpy())
            if grads:
                g = s.view(gs[k:k + len(ts)])                                          # like x
                grad_parts[j].append(_pool(s, g, real, pooling, True).double().cpu().numpy())
            k += len(ts)
        preds.append(pred.cpu().numpy())
        if progress is not None:
            progress(len(idx))
    back = np.argsort(np.asarray(order))
    A = [np.concatenate(a)[back] for a in acts]
    G = [np.concatenate(g)[back] for g in grad_parts] if grads else None
    return A, G, np.concatenate(preds)[back]


# ---------------------------------------------------------------- the result

@dataclass(frozen=True)
class TcavRow:
    """One class at one layer."""

    label: str
    layer: str
    score: float | None             # LIT: the score of the concept run with the most accurate CAV
    cav_accuracy: float             # that CAV's accuracy on its held-out texts
    random_mean: float | None       # mean score of the random-vs-random runs
    p_value: float | None           # two-sided t-test, concept runs against random runs
    significant: bool
    score_mean: float | None        # over the concept runs
    score_std: float | None
    random_std: float | None
    accuracy_mean: float
    n_examples: int                 # split texts predicted as the class

    @property
    def verdict(self) -> str:
        """In words: not significant (p > 0.05), or significant and on which side of the random directions (a
        concept can push a class's logit down as surely as up)."""
        if not self.significant:
            return "not significant"
        above = (self.score_mean or 0.0) > (self.random_mean or 0.0)
        return f"significant, {'above' if above else 'below'} random"


@dataclass(frozen=True)
class TcavResult:
    """TCAV of one concept on one checkpoint: a row per (class, layer)."""

    rows: tuple[TcavRow, ...]
    labels: tuple[str, ...]
    layers: tuple[str, ...]
    n_concept: int
    n_texts: int
    n_per_run: int
    runs: int
    seed: int
    pooling: str
    seconds: float
    notes: tuple[str, ...] = ()
    definition: str = DEFINITION
    scores: dict = field(default_factory=dict)      # "label|layer" -> {"concept": [...], "random": [...]}

    def to_dict(self) -> dict[str, Any]:
        clean = lambda v: None if isinstance(v, float) and not np.isfinite(v) else v     # noqa: E731
        out = {k: v for k, v in asdict(self).items() if k not in ("rows", "scores")}
        out["rows"] = [{**{k: clean(v) for k, v in asdict(r).items()}, "verdict": r.verdict} for r in self.rows]
        out["scores"] = {k: {n: [clean(x) for x in v] for n, v in d.items()} for k, d in self.scores.items()}
        out.update(labels=list(self.labels), layers=list(self.layers), notes=list(self.notes))
        return out


def _num(v) -> float | None:
    v = float(v)
    return v if np.isfinite(v) else None


def _sample(rng, n_items: int, n: int) -> np.ndarray:
    """LIT's `_subsample`: n of n_items drawn without replacement, or all of them when n is not smaller."""
    return rng.choice(n_items, n, replace=False) if n < n_items else np.arange(n_items)


def run_tcav(predictor, concept: Sequence[str], texts: Sequence[str], *, labels: Sequence[str] | None = None,
             layer: str = "all", runs: int = 15, seed: int = 0, pooling: str = "mean",
             progress: Callable[[int, int], None] | None = None) -> TcavResult:
    """TCAV of `concept` (texts) against the split `texts` for `labels` (default: every class) at the chosen layers
    (module docstring). TcavError (one line) for input it cannot use."""
    from textcls.interpret.sources import as_source
    from textcls.runtime.threads import batch
    t0 = time.perf_counter()
    src = as_source(predictor)
    names = list(src.labels or [])
    labels = list(labels or names)
    if bad := [x for x in labels if x not in names]:
        raise TcavError(f"unknown label {bad[0]!r}; the labels: {', '.join(names)}")
    if pooling not in POOLINGS:
        raise TcavError(f"pooling {pooling!r}: choose one of {', '.join(POOLINGS)}")
    if len(concept) < 3 or len(texts) < 3:
        raise TcavError(f"TCAV needs at least 3 concept texts and 3 split texts, got {len(concept)} and {len(texts)}")
    chosen = choose(sites(src.model), layer)
    total = len(texts) + len(concept) + 2 * runs * len(chosen)
    done = [0]

    def step(k: int) -> None:
        done[0] += k
        if progress is not None:
            progress(done[0], total)
    with batch():
        A, G, preds = collect(src, list(texts), chosen, pooling=pooling, grads=True, progress=step)
        C, _, _ = collect(src, list(concept), chosen, pooling=pooling, grads=False, progress=step)
    t_collect = time.perf_counter() - t0
    rng = np.random.default_rng(seed)
    N, M = len(texts), len(concept)
    n = min(M, N) - (1 if M == N else 0)
    concept_runs = [(_sample(rng, M, n), _sample(rng, N, n)) for _ in range(runs)]
    random_runs = [(_sample(rng, N, n), _sample(rng, N, n)) for _ in range(runs)]
    members = {lab: np.flatnonzero(preds == names.index(lab)) for lab in labels}
    rows, scores, notes = [], {}, []
    for j, site in enumerate(chosen):
        got = {"concept": [], "random": []}
        for kind, draws, pos in (("concept", concept_runs, C[j]), ("random", random_runs, A[j])):
            for a, b in draws:
                x = np.concatenate([A[j][b], pos[a]])                                  # comparison (0), concept (1)
                y = np.concatenate([np.zeros(len(b)), np.ones(len(a))])
                cav, acc = train_cav(x, y, TEST_SIZE, random_state=seed)
                dd = directional_derivatives(cav, G[j])                                # (N,)
                got[kind].append((acc, {lab: tcav_score(dd[m]) for lab, m in members.items()}))
                step(1)
        best = int(np.argmax([acc for acc, _ in got["concept"]]))
        accs = np.array([acc for acc, _ in got["concept"]])
        for lab in labels:
            cs = np.array([s[lab] for _, s in got["concept"]])
            rs = np.array([s[lab] for _, s in got["random"]])
            p = hyp_test(cs, rs) if members[lab].size else float("nan")
            rows.append(TcavRow(lab, site.name, _num(cs[best]), float(accs[best]), _num(rs.mean()), _num(p),
                                bool(np.isfinite(p) and p <= ALPHA), _num(cs.mean()), _num(cs.std()), _num(rs.std()),
                                float(accs.mean()), int(members[lab].size)))
            scores[f"{lab}|{site.name}"] = {"concept": [float(v) for v in cs], "random": [float(v) for v in rs]}
    for lab in labels:
        if not members[lab].size:
            notes.append(f"no text of the split is predicted {lab}: its scores are undefined")
    notes.append(f"activations and gradients of {N} split texts and {M} concept texts: {t_collect:.1f} s; "
                 f"{2 * runs * len(chosen)} CAVs: {time.perf_counter() - t0 - t_collect:.1f} s")
    return TcavResult(tuple(rows), tuple(labels), tuple(s.name for s in chosen), M, N, n, runs, seed, pooling,
                      time.perf_counter() - t0, tuple(notes), DEFINITION, scores)


__all__ = ["ALPHA", "DEFINITION", "FAMILIES", "POOLINGS", "TEST_SIZE", "TcavError", "TcavResult", "TcavRow", "choose",
           "collect", "directional_derivatives", "hyp_test", "layer_names", "run_tcav", "sites", "tcav_score",
           "train_cav"]
