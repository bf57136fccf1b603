"""A model's text representation - the vector its classifier reads - over many texts, projected to 2-D (PCA,
t-SNE, UMAP) for the embedding projector, and nearest neighbours in that space.

Which vector: the penultimate features every model returns (`ClassifierOutput.features`: Kim CNN's and AGCNN's
pooled features, ACT's and the Transformer's pooled vector after the hidden layer, HCAN's document vector,
LAMA's flattened M). A model that returns none is read model-agnostically: a forward hook on its last
`nn.Linear` records that layer's input for the call (the hook is removed before the call returns; the shared
model is never changed).

Projections: PCA (numpy SVD, always), t-SNE (scikit-learn, when installed) and UMAP (umap-learn, when it
imports; it is slow to import, so it is only imported when asked for). Seeded, so a projection is repeatable.
Large splits are sampled (`sample_rows`, cap `PROJECTOR_CAP`) before anything runs. Torch is imported by
`representations` only: the app's server reads the projections and neighbours without it.
"""
from __future__ import annotations

import importlib.util
import time
from contextlib import nullcontext
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from textcls.runtime.threads import batch

if TYPE_CHECKING:
    import torch

PROJECTOR_CAP = 5000            # rows in one projection (larger splits are sampled, seeded)
PROJECTIONS = ("pca", "tsne", "umap")
PROJECTION_LABELS = {"pca": "PCA", "tsne": "t-SNE", "umap": "UMAP"}


def one_blas_thread():
    """numpy's BLAS on one thread for the call (threadpoolctl, when installed): on a busy 2-core machine
    multi-threaded OpenBLAS spins and was 4-15x slower on these small products (measured: PCA of 1,821 x 1,000
    features 1.5 s on its default threads, 0.1 s on one)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return nullcontext()
    return threadpool_limits(1)


def available_projections() -> list[str]:
    """The projections this machine can run: PCA always; t-SNE with scikit-learn; UMAP with umap-learn."""
    out = ["pca"]
    if importlib.util.find_spec("sklearn") is not None:
        out.append("tsne")
    if importlib.util.find_spec("umap") is not None:
        out.append("umap")
    return out


def _last_linear(model: torch.nn.Module) -> torch.nn.Module | None:
    import torch
    last = None
    for m in model.modules():
        if isinstance(m, torch.nn.Linear):
            last = m
    return last


def representations(predictor, texts: Sequence[str], *, batch_size: int = 128,
                    progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """(N, F) float32: the vector the classifier of `predictor`'s model reads, for each text (caller's order)."""
    import torch
    texts = list(texts)
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    model = predictor.model
    device = predictor.device
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out: list[np.ndarray | None] = [None] * len(texts)
    with batch(), torch.no_grad():
        for s in range(0, len(order), batch_size):
            index = order[s:s + batch_size]
            enc = predictor.encode([texts[i] for i in index])
            seen: list[torch.Tensor] = []
            handle = None
            try:
                res = model(enc.token_ids.to(device), enc.mask.to(device))
                feats = res.features
                if feats is None:
                    lin = _last_linear(model)
                    if lin is None:
                        raise ValueError(f"{type(model).__name__} returns no features and has no Linear layer")
                    handle = lin.register_forward_hook(lambda m, inp, o: seen.append(inp[0].detach()))
                    model(enc.token_ids.to(device), enc.mask.to(device))
                    feats = seen[-1]
            finally:
                if handle is not None:
                    handle.remove()
            f = feats.float().reshape(feats.shape[0], -1).cpu().numpy()
            for b, i in enumerate(index):
                out[i] = f[b]
            if progress is not None:
                progress(min(s + batch_size, len(order)), len(order))
    return np.stack(out).astype(np.float32)


def sample_rows(n: int, cap: int = PROJECTOR_CAP, seed: int = 0) -> np.ndarray:
    """Row indices to project: all of them when n <= cap, else a seeded sample of `cap` (sorted)."""
    if n <= cap:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=cap, replace=False))


def pca(X: np.ndarray, dims: int = 2, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(N, dims) coordinates and the explained-variance ratio of each component. Randomized SVD (Halko et al.
    2011: a seeded Gaussian sketch of dims + 10 columns, 7 power iterations), which matched the exact top
    components to 1e-5 on the shipped models' features and costs a few thin matrix products instead of a full SVD
    (a full LAPACK SVD took seconds on a busy 2-core machine). Sign fixed so the largest loading of each
    component is positive, so a projection does not flip between runs."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0:
        return np.zeros((0, dims)), np.zeros(dims)
    Xc = X - X.mean(axis=0)
    total = float((Xc ** 2).sum())
    k = min(dims, *Xc.shape)
    sketch = min(k + 10, *Xc.shape)
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(Xc @ rng.standard_normal((Xc.shape[1], sketch)))[0]
    for _ in range(7):
        Q = np.linalg.qr(Xc.T @ Q)[0]
        Q = np.linalg.qr(Xc @ Q)[0]
    Ub, S, Vt = np.linalg.svd(Q.T @ Xc, full_matrices=False)
    U = Q @ Ub
    signs = np.sign(Vt[np.arange(k), np.abs(Vt[:k]).argmax(axis=1)])
    signs[signs == 0] = 1
    coords = np.zeros((X.shape[0], dims))
    coords[:, :k] = U[:, :k] * S[:k] * signs
    ratio = np.zeros(dims)
    ratio[:k] = (S[:k] ** 2 / total) if total > 0 else 0.0
    return coords, ratio


def project(X: np.ndarray, method: str = "pca", *, seed: int = 0) -> np.ndarray:
    """(N, 2) coordinates of the rows of X by `method` ("pca", "tsne", "umap"). ValueError when the method is
    not available here (see available_projections) or there are too few rows for it."""
    if method not in PROJECTIONS:
        raise ValueError(f"unknown projection {method!r}; choose one of {PROJECTIONS}")
    X = np.asarray(X, dtype=np.float32)
    n = X.shape[0]
    if n < 3:
        raise ValueError(f"{n} point(s) are too few to project; choose at least 3 rows")
    if method == "pca":
        with one_blas_thread():
            return pca(X, seed=seed)[0]
    if method not in available_projections():
        pkg = "scikit-learn" if method == "tsne" else "umap-learn"
        raise ValueError(f"{PROJECTION_LABELS[method]} needs {pkg}, which is not installed here; use PCA")
    # both start from the first 50 principal components, the usual speed-up (exact for F <= 50)
    with one_blas_thread():
        Z = pca(X, min(50, X.shape[1], n), seed=seed)[0].astype(np.float32)
    if method == "tsne":
        from sklearn.manifold import TSNE
        with one_blas_thread():
            return TSNE(n_components=2, perplexity=float(min(30.0, max(2.0, (n - 1) / 3))), init="pca",
                        random_state=seed, max_iter=500).fit_transform(Z)
    import umap                                      # umap-learn: slow first import (numba)
    return umap.UMAP(n_components=2, n_neighbors=min(15, n - 1), random_state=seed).fit_transform(Z)


def normalise(X: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero): cosine similarity is then a dot product."""
    X = np.asarray(X, dtype=np.float32)
    norm = np.linalg.norm(X, axis=1, keepdims=True)
    return X / np.where(norm > 0, norm, 1.0)


def nearest_neighbours(query: np.ndarray, X: np.ndarray, k: int = 10, *, exclude: Sequence[int] = ()
                       ) -> tuple[np.ndarray, np.ndarray]:
    """The k rows of X most cosine-similar to `query` (F,), best first: (indices, similarities)."""
    Xn = normalise(X)
    q = normalise(np.asarray(query, dtype=np.float32)[None])[0]
    with one_blas_thread():
        sims = Xn @ q
    if len(exclude):
        sims[np.asarray(list(exclude), dtype=np.int64)] = -np.inf
    k = int(max(0, min(k, np.isfinite(sims).sum())))
    top = np.argpartition(-sims, k - 1)[:k] if k else np.zeros(0, dtype=np.int64)
    top = top[np.argsort(-sims[top], kind="mergesort")]
    return top, sims[top]


class Timer:
    """Seconds since creation (for the benchmark and the page's captions)."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.t0


__all__ = ["PROJECTIONS", "PROJECTION_LABELS", "PROJECTOR_CAP", "available_projections", "nearest_neighbours",
           "normalise", "pca", "project", "representations", "sample_rows"]
