"""Salience clustering (Ebert et al. 2022), following LIT (PAIR-code/lit, lit_nlp/components/salience_clustering.py).

Per example, its explanation by any registered method (textcls.interpret.methods) becomes a fixed-length vector
over the vocabulary of every token seen: a token's signed salience (a token met twice keeps the value largest in
magnitude) at its vocabulary index for the `top_k` tokens of largest |salience| - ties with the k-th included - and
0 elsewhere, L2-normalised (an all-zero explanation stays all zero). K-means (scikit-learn, seeded) groups the
vectors into `k` clusters; a cluster's top tokens are those of largest |mean value| over its examples (zeros
dropped). The vocabulary is built from the tokens in the order they first appear (LIT's `_build_vocab`, used
when the model has no embedding table to read; the order does not change the clusters).

Clusters are numbered by size (largest first), so a seeded run gives the same numbers every time. Imports no
torch at import time.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

N_INIT = 10               # k-means restarts (scikit-learn, seeded)


# ---------------------------------------------------------------- LIT's units (tested against its values)

def build_vocab(token_lists: Sequence[Sequence[str]]) -> tuple[dict[str, int], list[str]]:
    """({token: index}, [token]) in the order tokens first appear."""
    lookup: dict[str, int] = {}
    for tokens in token_lists:
        for t in tokens:
            lookup.setdefault(t, len(lookup))
    return lookup, list(lookup)


def token_weights(tokens: Sequence[str], salience: Sequence[float]) -> dict[str, float]:
    """{token: salience}; a token met more than once keeps the value largest in magnitude (the first on a tie)."""
    out: dict[str, float] = {}
    for t, s in zip(tokens, salience):
        s = float(s)
        out[t] = max([out.get(t, s), s], key=abs)
    return out


def bow_vector(weights: dict[str, float], lookup: dict[str, int], top_k: int) -> np.ndarray:
    """A vocabulary-sized vector: the salience of the top_k tokens by |salience| (ties with the k-th included)."""
    v = np.zeros(len(lookup))
    ranked = sorted(weights.items(), key=lambda x: abs(x[1]), reverse=True)
    if not ranked:
        return v
    end = min(top_k, len(ranked))
    threshold = abs(ranked[end - 1][1])
    while end < len(ranked) and abs(ranked[end][1]) == threshold:
        end += 1
    for t, w in ranked[:end]:
        if t in lookup:
            v[lookup[t]] = w
    return v


def representations(token_lists: Sequence[Sequence[str]], saliences: Sequence[Sequence[float]],
                    lookup: dict[str, int], top_k: int) -> np.ndarray:
    """(N, V): each example's top-k vector, L2-normalised (an all-zero row stays zero)."""
    X = np.stack([bow_vector(token_weights(t, s), lookup, top_k) for t, s in zip(token_lists, saliences)]) \
        if len(token_lists) else np.zeros((0, len(lookup)))
    norms = np.linalg.norm(X, axis=1, keepdims=True)                                  # (N, 1)
    return np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)


def kmeans(X: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """Cluster ids (N,) of k-means on the rows of X (scikit-learn, `N_INIT` seeded restarts)."""
    from sklearn.cluster import KMeans
    return KMeans(n_clusters=k, random_state=seed, n_init=N_INIT).fit_predict(X).astype(int)


def top_tokens(X: np.ndarray, ids: np.ndarray, vocab: Sequence[str], k: int, n_tokens: int
               ) -> list[list[tuple[str, float]]]:
    """Per cluster 0..k-1: up to n_tokens (token, mean value) of largest |mean| over its rows, zeros dropped."""
    out = []
    for c in range(k):
        rows = X[ids == c]
        if not rows.size:
            out.append([])
            continue
        mean = rows.mean(0)                                                             # (V,)
        order = np.argsort(-np.abs(mean), kind="stable")[:n_tokens]
        out.append([(vocab[i], float(mean[i])) for i in order if mean[i] != 0.0])
    return out


def cluster_vectors(token_lists: Sequence[Sequence[str]], saliences: Sequence[Sequence[float]], *, k: int = 10,
                    top_k: int = 5, n_tokens: int = 10, seed: int = 0
                    ) -> tuple[np.ndarray, np.ndarray, list[str], list[list[tuple[str, float]]]]:
    """(representations (N, V), cluster ids (N,) numbered by size, vocab, top tokens per cluster)."""
    lookup, vocab = build_vocab(token_lists)
    X = representations(token_lists, saliences, lookup, top_k)
    raw = kmeans(X, k, seed)
    sizes = np.bincount(raw, minlength=k)
    rank = np.empty(k, dtype=int)
    rank[np.argsort(-sizes, kind="stable")] = np.arange(k)
    ids = rank[raw]
    return X, ids, vocab, top_tokens(X, ids, vocab, k, n_tokens)


# ---------------------------------------------------------------- over a split

@dataclass(frozen=True)
class Cluster:
    id: int
    size: int
    top_tokens: tuple[tuple[str, float], ...]     # (token, mean salience over the cluster, after normalising)
    examples: tuple[int, ...]                     # indices into ClusterResult.texts
    labels: dict = field(default_factory=dict)    # predicted label -> count


@dataclass(frozen=True)
class ClusterResult:
    """Salience clusters of a split: the clusters, and per example its text, prediction, gold label, cluster and
    top tokens (its representation's non-zero entries)."""

    method: str
    k: int
    top_k: int
    seed: int
    clusters: tuple[Cluster, ...]
    texts: tuple[str, ...]
    predicted: tuple[str, ...]
    gold: tuple[str | None, ...]
    assignment: tuple[int, ...]
    example_tokens: tuple[tuple[tuple[str, float], ...], ...]
    seconds: dict
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "k": self.k, "top_k": self.top_k, "seed": self.seed,
                "seconds": dict(self.seconds), "notes": list(self.notes),
                "clusters": [{"id": c.id, "size": c.size, "top_tokens": [[t, w] for t, w in c.top_tokens],
                              "labels": dict(c.labels), "examples": list(c.examples)} for c in self.clusters],
                "examples": [{"text": t, "predicted": p, "gold": g, "cluster": a,
                              "tokens": [[tok, w] for tok, w in toks]}
                             for t, p, g, a, toks in zip(self.texts, self.predicted, self.gold, self.assignment,
                                                         self.example_tokens)]}


def _nonzero(row: np.ndarray, vocab: Sequence[str]) -> tuple[tuple[str, float], ...]:
    """A representation's non-zero entries (token, value), largest |value| first."""
    nz = np.flatnonzero(row)
    nz = nz[np.argsort(-np.abs(row[nz]), kind="stable")]
    return tuple((vocab[j], float(row[j])) for j in nz)


def _predicted(model, insts) -> list[int]:
    """The model's predicted class per instance (the class every method explains by default)."""
    from textcls.interpret.probabilities import prob_fn, score
    return score(prob_fn(model), insts).argmax(-1).tolist()


def salience_clusters(predictor, texts: Sequence[str], method: str, *, gold: Sequence[int | None] | None = None,
                      k: int = 10, top_k: int = 5, n_tokens: int = 10, seed: int = 0, chunk: int = 64,
                      progress: Callable[[int, int], None] | None = None) -> ClusterResult:
    """Explain every text by `method` (its predicted label), then cluster (module docstring). ValueError (one line)
    for fewer texts than clusters or a method that does not apply."""
    from textcls.interpret.batched import importances
    from textcls.interpret.sources import as_source
    t0 = time.perf_counter()
    src = as_source(predictor)
    insts = src.instances(list(texts))
    keep = [i for i, inst in enumerate(insts) if inst.n > 0]
    if len(keep) < k:
        raise ValueError(f"{k} clusters need at least {k} texts with words the model reads, got {len(keep)}")
    labels = list(src.labels or [])
    tokens, scores, preds = [], [], []
    for start in range(0, len(keep), chunk):
        part = [insts[i] for i in keep[start:start + chunk]]
        for inst, a in zip(part, importances(src.model, part, method, seed=seed)):
            s = np.asarray(getattr(a, "scores", a), dtype=np.float64).reshape(-1)      # (n,)
            tokens.append(list(inst.tokens or [str(j) for j in range(inst.n)]))
            scores.append(np.nan_to_num(s))
        preds += [labels[j] if j < len(labels) else str(j) for j in _predicted(src.model, part)]
        if progress is not None:
            progress(min(start + chunk, len(keep)), len(keep))
    t_explain = time.perf_counter() - t0
    X, ids, vocab, tops = cluster_vectors(tokens, scores, k=k, top_k=top_k, n_tokens=n_tokens, seed=seed)
    per_example = tuple(_nonzero(X[i], vocab) for i in range(len(keep)))
    clusters = []
    for c in range(k):
        members = tuple(int(i) for i in np.flatnonzero(ids == c))
        counts: dict[str, int] = {}
        for i in members:
            counts[preds[i]] = counts.get(preds[i], 0) + 1
        clusters.append(Cluster(c, len(members), tuple(tops[c]), members, counts))
    notes = []
    if len(keep) < len(insts):
        notes.append(f"{len(insts) - len(keep)} texts without a word the model reads were left out")
    zero = int((np.abs(X).sum(1) == 0).sum())
    if zero:
        notes.append(f"{zero} explanations were all zero (their vectors stay zero)")
    gold_names = [None if gold is None or gold[i] is None else labels[int(gold[i])] for i in keep]
    return ClusterResult(method, k, top_k, seed, tuple(clusters), tuple(texts[i] for i in keep), tuple(preds),
                         tuple(gold_names), tuple(int(x) for x in ids), per_example,
                         {"explain": t_explain, "cluster": time.perf_counter() - t0 - t_explain,
                          "total": time.perf_counter() - t0}, tuple(notes))


__all__ = ["Cluster", "ClusterResult", "N_INIT", "bow_vector", "build_vocab", "cluster_vectors", "kmeans",
           "representations", "salience_clusters", "token_weights", "top_tokens"]
