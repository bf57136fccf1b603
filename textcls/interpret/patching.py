"""Where does the model decide? Activation patching and attribution patching on a minimal pair, for every family.

A minimal pair is a clean text and a corrupted one that line up word by word ("the movie was not good" / "the
movie was very good"): the same number of words (HCAN: the same words per sentence; a Hugging Face model: the same
number of word pieces per word), different words where they differ. `patch_pair(predictor, clean, corrupt, by)`
runs the corrupted text once per *cell* with the clean run's activations put in at that cell only, and returns
plain data (`PatchResult`: numpy arrays, axis labels, predictions) for a page or the CLI to draw.

Definitions (`DEFINITION`, carried by every result):
- LD(run) = logit[t] - logit[f]: t = the clean run's predicted label, f = the corrupted run's (when both predict
  the same label: the clean run's runner-up).
- Denoising: a cell's clean activations are patched into the corrupted run;
  restored = (LD_patched - LD_corrupt) / (LD_clean - LD_corrupt). 1: that cell alone brings the clean decision
  back; 0: no effect; below 0 or above 1: it pushes the other way or overshoots. `nothing` is the same measure
  with every hook in place and no cell patched (0 by construction: a check of the machinery).
- Attribution patching (Nanda 2023; AtP*, Kramar et al. 2024): the first-order estimate of the same number,
  sum over the cell of (a_clean - a_corrupt) * dLD/da at the corrupted run, over the same denominator: two
  forwards and one backward for the whole grid. `agreement`: its Pearson and Spearman correlation with
  activation patching over the grid's cells (the "all" column left out).

Grids (`by`; `available_by(model)`; the table per family is in docs/patching.md). Rows are sites, columns the
units patched there; the last column, "all", patches the union of the row's cells. layer (and position) = the
stream per layer x position (Transformer, ACT with its global representation g as a column, a Hugging Face
model's hidden states with its special pieces as columns, LAMA's BiGRU per direction, HCAN's word and sentence
levels), the CNNs' feature maps per window x window start (AGCNN's position: its gates); head = layer x head;
gate = AGCNN's gates x channel group; filter = filter groups (Kim CNN, AGCNN, ACT). The CNNs' rows are parallel
branches: their "all" cells add up to 1, as the logits are linear in the max-pooled features.

Hooks (forward hooks and pre-hooks, or the models' `edits`) live for one forward each, are removed in `finally`,
and act only in the thread that placed them, so a model cached for other callers is never changed. Imports no
torch at import time (the result crosses to the app's server, which has none).
"""
from __future__ import annotations

import threading
import time
from collections import namedtuple
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from textcls.runtime.threads import interactive_work

BYS = ("layer", "position", "head", "gate", "filter")
ALL = "all"
DEFINITION = ("LD = logit[t] - logit[f] (t: the clean text's label, f: the corrupted text's, or the clean "
              "runner-up when both agree). Denoising: the clean run's activations at one cell are patched into the "
              "corrupted run; restored = (LD_patched - LD_corrupt) / (LD_clean - LD_corrupt): 1 = the cell alone "
              "restores the clean decision, 0 = no effect. Attribution patching estimates the same number to first "
              "order: (a_clean - a_corrupt) . dLD/da at the corrupted run, over the same denominator.")


class PairError(ValueError):
    """A pair (or a grid) that cannot be patched: not aligned word by word, the same to the model, no such grid."""


@dataclass
class PatchResult:
    """One minimal pair patched over one grid (see the module docstring). Arrays are (rows, columns[, labels])."""

    clean: str
    corrupt: str
    model: str
    by: str
    row_axis: str
    column_axis: str
    rows: list[str]
    columns: list[str]
    restored: np.ndarray                     # (R, C) activation patching; NaN where a cell does not apply
    patched_logits: np.ndarray               # (R, C, K) the corrupted run's logits with that cell patched
    attribution: np.ndarray | None           # (R, C) attribution patching, same scale; None when not asked
    agreement: dict[str, float]              # pearson, spearman, cells
    labels: list[str]
    target: int                              # t of LD
    foil: int                                # f of LD
    ld_clean: float
    ld_corrupt: float
    nothing: float                           # restored with every hook in place and nothing patched (0)
    clean_prediction: dict[str, Any]
    corrupt_prediction: dict[str, Any]
    clean_tokens: list[str]
    corrupt_tokens: list[str]
    differing: list[int]                     # word positions where the two texts differ
    notes: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    definition: str = DEFINITION

    def cell(self, row: int | str, column: int | str) -> dict[str, Any]:
        """What a click on a cell shows: its restored share, attribution estimate and patched prediction."""
        r = self.rows.index(row) if isinstance(row, str) else int(row)
        c = self.columns.index(column) if isinstance(column, str) else int(column)
        out = {"row": self.rows[r], "column": self.columns[c], "restored": _num(self.restored[r, c]),
               "attribution": None if self.attribution is None else _num(self.attribution[r, c])}
        logits = self.patched_logits[r, c]
        if np.all(np.isfinite(logits)):
            out["prediction"] = _prediction(logits, self.labels)
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data: the axes, the grids (null where a cell does not apply), every cell, both predictions."""
        skip = ("restored", "patched_logits", "attribution", "agreement", "target", "foil", "row_axis", "column_axis")
        out = {k: v for k, v in vars(self).items() if k not in skip}
        grid = lambda a: None if a is None else [[_num(v) for v in row] for row in a]  # noqa: E731
        out.update(axes={"rows": self.row_axis, "columns": self.column_axis}, restored=grid(self.restored),
                   attribution=grid(self.attribution), agreement={k: _num(v) for k, v in self.agreement.items()},
                   target=self.labels[self.target], foil=self.labels[self.foil],
                   cells=[self.cell(r, c) for r in range(len(self.rows)) for c in range(len(self.columns))
                          if np.isfinite(self.restored[r, c])])
        return out


def _num(v) -> float | None:
    v = float(v)
    return v if np.isfinite(v) else None


def _prediction(logits: np.ndarray, labels: list[str]) -> dict[str, Any]:
    p = np.exp(logits - logits.max())
    p = p / p.sum()
    return {"label": labels[int(np.argmax(p))], "probabilities": {lab: float(x) for lab, x in zip(labels, p)}}


# ---------------------------------------------------------------- sites: where a grid's rows reach into a model

@dataclass
class _Site:
    """One row: a tensor (or a module output's tensors) and, per column, an index per tensor (None: untouched)
    or None (the cell does not apply). where: "out" (forward hook), "in" (pre-hook on the first input), "edit"."""

    label: str
    where: str
    target: Any                              # a module, or a map name for `edits`
    cols: list                               # per column: [index tuple or None per tensor] or None
    layer: int | None = None                 # the map's layer (edits)
    picks: tuple[int, ...] = (0,)            # which elements of a tuple output


_Plan = namedtuple("_Plan", "row_axis column_axis columns sites notes")     # a grid: its axes, columns, rows (sites)


def available_by(model) -> tuple[str, ...]:
    """The grids `patch_pair` offers for a model (see the module docstring)."""
    family = _family(model)
    extra = {"transformer": ("head",), "act": ("head", "filter"), "kim_cnn": ("filter",),
             "agcnn": ("gate", "filter"), "lama": ("head",), "hcan": ("head",), "can": ("head",), "hf": ("head",)}
    return ("layer", "position") + extra[family]


def _family(model) -> str:
    name = getattr(model, "registry_name", "")
    if name not in ("transformer", "act", "kim_cnn", "agcnn", "lama", "hcan", "can", "hf"):
        raise PairError(f"patching knows the six families and Hugging Face models; {name or type(model).__name__} "
                        "is not one of them")
    return name


def _groups(n: int, k: int) -> list[tuple[int, int]]:
    """n channels in k near-equal groups [a, b)."""
    k = max(1, min(int(k), n))
    edges = np.linspace(0, n, k + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


def _per(cols: list) -> list:
    """One-tensor columns: [index or None] -> [[index] or None]."""
    return [None if ix is None else [ix] for ix in cols]


def _heads(n_heads: int, width: int) -> list:
    dh = width // n_heads
    return _per([(Ellipsis, slice(j * dh, (j + 1) * dh)) for j in range(n_heads)])


def _plan(model, by: str, ic, words: list[str], groups: int) -> _Plan:
    family = _family(model)
    n = len(words)
    pos = _per([(slice(None), p) for p in range(n)])
    stream = "the residual stream: 'embeddings' enters layer 1, 'layer i' leaves layer i; a cell is one position"
    if family == "transformer":
        c, s = model.config, model.n_special
        if by == "head":
            sites = [_Site(f"layer {i + 1}", "in", lay.attn.o, _heads(c.n_heads, c.d_model))
                     for i, lay in enumerate(model.layers)]
            return _Plan("layer", "head", [f"head {j + 1}" for j in range(c.n_heads)], sites,
                         ["a cell is one head's output (before W_O) at every position"])
        cols = _per([(slice(None), 0)] if s else []) + _per([(slice(None), s + p) for p in range(n)])
        sites = [_Site("embeddings", "in", model.layers[0], cols)] + [
            _Site(f"layer {i + 1}", "out", lay, cols) for i, lay in enumerate(model.layers)]
        return _Plan("layer", "position", (["[cls]"] if s else []) + words, sites, [stream])
    if family == "act":
        c = model.config
        if by == "head":
            sites = [_Site(f"layer {i + 1}", "edit", "feature_map", _per([(slice(None), j) for j in
                     range(c.n_heads)]), layer=i) for i in range(c.n_layers)]
            return _Plan("layer", "head", [f"head {j + 1}" for j in range(c.n_heads)], sites,
                         ["a cell is one head's attentive-convolution feature maps M (every filter and word)"])
        if by == "filter":
            gs = _groups(c.n_filters, groups)
            sites = [_Site(f"layer {i + 1} head {j + 1}", "edit", "feature_map",
                           _per([(slice(None), j, slice(a, b)) for a, b in gs]), layer=i)
                     for i in range(c.n_layers) for j in range(c.n_heads)]
            return _Plan("layer x head", "filter group", [f"filters {a + 1}-{b}" for a, b in gs], sites,
                         ["a cell is a group of one head's filters (feature maps M) at every word"])
        g = [None] if c.global_rep else []
        sites = [_Site("embeddings", "in", model.layers[0], pos + g)]
        for i, lay in enumerate(model.layers):
            top = i == len(model.layers) - 1 and c.global_rep
            cols = [[ix[0], None] for ix in pos] + ([[None, (Ellipsis,)]] if top else g)
            sites.append(_Site(f"layer {i + 1}", "out", lay, cols, picks=(0, 1)))
        return _Plan("layer", "position", words + (["g"] if c.global_rep else []), sites,
                     [stream, "g: the top layer's global representation (max-pooled maps), computed beside the "
                      "stream; without it the top layer's positions do not restore 1"])
    if family in ("kim_cnn", "agcnn"):
        c = model.config
        branch = ["rows are parallel branches: a row's 'all' is that branch's share"]
        if by == "gate" or (family == "agcnn" and by == "position"):
            gs = _groups(c.n_filters, groups)
            cols = _per([(slice(None), slice(a, b)) for a, b in gs]) if by == "gate" else \
                _per([(slice(None), slice(None), p) for p in range(n)])
            sites = [_Site(f"gate h{h} k{k}{f'_g{q}' if c.n_gates > 1 else ''}", "edit",
                           f"gate_h{h}_k{k}{f'_g{q}' if c.n_gates > 1 else ''}", cols)
                     for h in c.windows for k in c.gate_windows for q in range(1, c.n_gates + 1)]
            names = [f"filters {a + 1}-{b}" for a, b in gs] if by == "gate" else words
            return _Plan("gate", "channel group" if by == "gate" else "window start", names, sites,
                         ["a cell replaces the gate D only: the map it gates (C^h) stays the corrupted run's"] +
                         ([] if by == "gate" else ["a window-h cell at word j covers words j..j+h-1"]))
        if by == "filter":
            gs = _groups(c.n_filters, groups)
            sites = [_Site(f"window {h}", "edit", f"conv_h{h}", _per([(slice(None), slice(a, b)) for a, b in gs]))
                     for h in c.windows]
            return _Plan("window", "filter group", [f"filters {a + 1}-{b}" for a, b in gs], sites, branch)
        sites = [_Site(f"window {h}", "edit", f"conv_h{h}", _per([(slice(None), slice(None), p) for p in range(n)]))
                 for h in c.windows]
        return _Plan("window", "window start", words, sites,
                     branch + ["a window-h cell at word j covers words j..j+h-1"] +
                     (["an AGCNN C^h cell feeds that window's gates too"] if family == "agcnn" else []))
    if family == "lama":
        c = model.config
        if by == "head":
            heads = _per([(slice(None), j) for j in range(c.n_heads)])
            sites = [_Site("attention", "edit", "attention", heads), _Site("pooled M", "edit", "pooled", heads)]
            return _Plan("map", "head", [f"head {j + 1}" for j in range(c.n_heads)], sites,
                         ["attention: a head's weights over the words; pooled M: the head's weighted sum of the "
                          "BiGRU states, which the classifier reads"])
        d = c.hidden_dim
        sites = [_Site(label, "edit", "hidden", _per([(slice(None), p, part) for p in range(n)]))
                 for label, part in (("forward GRU", slice(0, d)), ("backward GRU", slice(d, 2 * d)),
                                     ("both directions", slice(None)))]
        return _Plan("BiGRU", "position", words, sites, ["a cell is one word's BiGRU state (one direction or both)"])
    if family in ("hcan", "can"):
        flat = family == "can"
        levels = [("", model.level)] if flat else [("word ", model.word_level), ("sentence ", model.sent_level)]
        if by == "head":
            sites = [_Site(f"{name}branch {b}", "out", getattr(lev, f"branch_{b}"),
                           _heads(model.config.n_heads, model.config.d_model))
                     for name, lev in levels for b in ("a", "b") if getattr(lev, f"branch_{b}") is not None]
            return _Plan("level", "head", [f"head {j + 1}" for j in range(model.config.n_heads)], sites,
                         ["a cell is one head's self-attention output (every position)"])
        if flat:
            sites = [_Site("input", "in", model.level, pos), _Site("Z", "out", model.level.norm, pos)]
            return _Plan("level", "position", words, sites, ["input: word vectors + positions; Z: LayerNorm(H_a*H_b)"])
        sents = ic.mask.any(-1).nonzero().flatten().tolist()
        rank = {s: r for r, s in enumerate(sents)}
        where = [(rank[int(s)], int(w)) for s, w in ic.positions.tolist()]
        sites = [_Site("word input", "in", model.word_level, _per([(r, w) for r, w in where])),
                 _Site("word level", "out", model.word_level.norm, _per([(r, w) for r, w in where]))]
        if model.word_level.pool is not None:
            sites.append(_Site("sentence vectors", "out", model.word_level.pool, _per([(r,) for r, _ in where])))
        sites.append(_Site("sentence level", "out", model.sent_level.norm, _per([(slice(None), r) for r, _ in where])))
        return _Plan("level", "word", words, sites,
                     ["word rows: one word; sentence rows: the cell at a word patches that word's whole sentence"])
    return _plan_hf(model, by, ic, words)


def _plan_hf(model, by: str, ic, words: list[str]) -> _Plan:
    from textcls.interpret.lens import hf_layers, hf_out_projection
    hf = model.hf
    try:
        layers = hf_layers(hf)
    except ValueError as e:
        raise PairError(str(e)) from None
    if by == "head":
        heads = int(getattr(model, "attention_heads", 0) or getattr(hf.config, "num_attention_heads", 0) or 0)
        projs = [hf_out_projection(lay) for lay in layers]
        if not heads or any(p is None for p in projs):
            raise PairError(f"{type(hf).__name__}: no attention output projection found in its layers; --by head "
                            "is not available for it (--by layer is)")
        width = [int(getattr(p, "in_features", 0) or p.weight.shape[0]) for p in projs]
        sites = [_Site(f"layer {i + 1}", "in", p, _heads(heads, w)) for i, (p, w) in enumerate(zip(projs, width))]
        return _Plan("layer", "head", [f"head {j + 1}" for j in range(heads)], sites,
                     ["a cell is one head's output (the input of the attention's output projection), every piece"])
    ids, mask = ic.batch()
    lay = model._layout(ids, mask)
    k, n = len(model.prefix), int(lay.n[0])
    word_pos = [lay.pos[0, w][lay.valid[0, w]].tolist() for w in range(len(words))]
    names = list(model.family.names)
    pre = [[j] for j in range(k)]
    post = [[n + k + j] for j in range(len(model.suffix))]
    cols = _per([(slice(None), p) for p in pre + word_pos + post])
    columns = names[:k] + words + names[k:]
    sites = [_Site("embeddings", "in", layers[0], cols)] + [
        _Site(f"layer {i + 1}", "out", layer, cols) for i, layer in enumerate(layers)]
    return _Plan("layer", "position", columns, sites,
                 ["the hidden states: 'embeddings' enter layer 1, 'layer i' leave layer i; a word's cell patches all "
                  "its pieces; special pieces are columns of their own"])


# ---------------------------------------------------------------- hooks for one forward

@contextmanager
def _tapped(model, sites: list[_Site], active, handler: Callable):
    """Hooks on the `active` sites for one forward; yields the `edits` dict to pass. Removed in `finally`; they act
    only in this thread (a cached model may serve other threads meanwhile)."""
    import torch
    owner = threading.get_ident()
    handles, edits, by_map = [], {}, {}

    def run(i, ts):
        return handler(i, ts) if threading.get_ident() == owner else ts

    def out_hook(i, module, args, out):
        if isinstance(out, torch.Tensor):
            return run(i, [out])[0]
        out = list(out)
        new = run(i, [out[k] for k in sites[i].picks])
        for k, t in zip(sites[i].picks, new):
            out[k] = t
        return tuple(out)

    def in_hook(i, module, args, kwargs):
        if args:
            return (run(i, [args[0]])[0],) + tuple(args[1:]), kwargs
        key = "hidden_states" if "hidden_states" in kwargs else next(iter(kwargs))
        return args, dict(kwargs, **{key: run(i, [kwargs[key]])[0]})

    def edit(name):
        def fn(t, layer=None, mask=None):
            for i in by_map[name].get(layer, ()):
                t = run(i, [t])[0]
            return t
        return fn

    try:
        for i in active:
            s = sites[i]
            if s.where == "edit":
                by_map.setdefault(s.target, {}).setdefault(s.layer, []).append(i)
                edits[s.target] = edit(s.target)
            elif s.where == "out":
                handles.append(s.target.register_forward_hook(lambda m, a, o, i=i: out_hook(i, m, a, o)))
            else:
                handles.append(s.target.register_forward_pre_hook(
                    lambda m, a, kw, i=i: in_hook(i, m, a, kw), with_kwargs=True))
        yield edits
    finally:
        for h in handles:
            h.remove()


def _forward(model, sites, active, handler, ids, mask):
    with _tapped(model, sites, active, handler) as edits:
        return model(ids, mask, edits=edits or None).logits


# ---------------------------------------------------------------- the pair

def _align(model, ic, ik, clean_tokens: list[str], corrupt_tokens: list[str]) -> list[int]:
    """The positions where the two texts differ; PairError (one line) when they do not line up word by word."""
    import torch
    if tuple(ic.ids.shape) != tuple(ik.ids.shape) or not torch.equal(ic.mask, ik.mask):
        what = f"{ic.n} and {ik.n} words" if ic.n != ik.n else "the same number of words in different sentences"
        raise PairError(f"the two texts do not line up word by word ({what}); patching needs a minimal pair: "
                        "change words, do not add or drop them (e.g. 'not good' / 'very good')")
    differing = [i for i, (a, b) in enumerate(zip(ic.real_ids().tolist(), ik.real_ids().tolist())) if a != b]
    if not differing:
        same = " (their differing words are all unknown to it)" if clean_tokens != corrupt_tokens else ""
        raise PairError(f"the two texts are the same to the model{same}: nothing to patch")
    table = getattr(model, "table", None)
    if table is not None:                                   # a Hugging Face model: the same pieces per word
        _, a = table.lookup(ic.ids[None])
        _, b = table.lookup(ik.ids[None])
        for w in differing:
            if int(a[0, w]) != int(b[0, w]):
                raise PairError(f"'{clean_tokens[w]}' is {int(a[0, w])} word piece(s) and '{corrupt_tokens[w]}' "
                                f"{int(b[0, w])}: the pieces do not line up; choose words of as many pieces")
    return differing


def _labels(lc: np.ndarray, lk: np.ndarray) -> tuple[int, int]:
    """t and f of LD: the clean label, and the corrupted one (the clean runner-up when they agree)."""
    t, f = int(np.argmax(lc)), int(np.argmax(lk))
    return (t, f) if f != t or len(lc) < 2 else (t, int(np.argsort(-lc, kind="stable")[1]))


def _masks(site: _Site, acts: list) -> list:
    """Per column (the last: "all", their union): a bool mask per tensor (None: untouched), or None."""
    import torch
    out = []
    for unit in site.cols:
        if unit is None:
            out.append(None)
            continue
        ms = []
        for ix, a in zip(unit, acts):
            if ix is None or a is None:
                ms.append(None)
                continue
            m = torch.zeros(a.shape, dtype=torch.bool, device=a.device)
            m[ix] = True
            ms.append(m)
        out.append(ms if any(m is not None for m in ms) else None)
    union = [None] * len(acts)
    for ms in out:
        for k, m in enumerate(ms or []):
            if m is not None:
                union[k] = m.clone() if union[k] is None else union[k] | m
    out.append(union if any(m is not None for m in union) else None)
    return out


@interactive_work
def patch_pair(predictor, clean: str, corrupt: str, by: str = "layer", *, attribution: bool = True,
               groups: int = 10, batch_size: int = 256) -> PatchResult:
    """Activation patching (and attribution patching) of `clean` into `corrupt` over one grid (module docstring).
    `predictor`: a Predictor, a (model, tokenizer) pair or a Source; `groups`: filter/channel groups (CNNs);
    `batch_size`: patched runs per forward. PairError (one line) for a pair or grid that cannot be patched."""
    import torch
    from textcls.interpret.probabilities import check_model
    from textcls.interpret.sources import as_source
    t0 = time.perf_counter()
    src = as_source(predictor)
    model = src.model
    check_model(model)
    if by not in BYS:
        raise PairError(f"unknown grid {by!r}; choose one of {', '.join(BYS)}")
    if by not in available_by(model):
        raise PairError(f"--by {by}: {_family(model)} offers {', '.join(available_by(model))}")
    ic, ik = src.instances([clean, corrupt])
    if ic.n == 0 or ik.n == 0:
        raise PairError("a text of the pair has no words the model reads")
    tc, tk = list(ic.tokens or []), list(ik.tokens or [])
    differing = _align(model, ic, ik, tc, tk)
    device = next(model.parameters()).device
    ids_c, mask_c = (t.to(device) for t in ic.batch())
    ids_k, mask_k = (t.to(device) for t in ik.batch())
    with torch.no_grad():
        lc = model(ids_c, mask_c).logits[0].double().cpu().numpy()
        lk = model(ids_k, mask_k).logits[0].double().cpu().numpy()
    labels = list(src.labels or [str(i) for i in range(len(lc))])
    target, foil = _labels(lc, lk)
    ld_c, ld_k = float(lc[target] - lc[foil]), float(lk[target] - lk[foil])
    denom = ld_c - ld_k
    if abs(denom) <= 1e-6 * max(1.0, abs(ld_c), abs(ld_k)):
        raise PairError(f"the two texts give the same logit difference ({ld_c:.4g}): nothing to restore")
    words = [a if a == b else f"{a}/{b}" for a, b in zip(tc, tk)]
    plan = _plan(model, by, ic, words, groups)
    sites, columns = plan.sites, plan.columns + [ALL]
    every = range(len(sites))

    acts: dict[int, list] = {}                                            # the clean run's activations

    def record(i, ts):
        acts[i] = [None if t is None else t.detach().clone() for t in ts]
        return ts
    with torch.no_grad():
        _forward(model, sites, every, record, ids_c, mask_c)
    masks = {i: _masks(sites[i], acts[i]) for i in every}
    cells = [None] + [(i, j) for i in every for j, m in enumerate(masks[i]) if m is not None]
    K = len(lc)
    got = np.zeros((len(cells), K))
    for start in range(0, len(cells), max(1, int(batch_size))):
        chunk = cells[start:start + max(1, int(batch_size))]
        got[start:start + len(chunk)] = _patched(model, sites, acts, masks, chunk, ids_k, mask_k)
    R, C = len(sites), len(columns)
    logits = np.full((R, C, K), np.nan)
    for (i, j), row in zip(cells[1:], got[1:]):
        logits[i, j] = row
    ld = lambda x: x[..., target] - x[..., foil]  # noqa: E731
    restored = (ld(logits) - ld_k) / denom
    t1 = time.perf_counter()
    est = _attribution(model, sites, every, acts, masks, ids_k, mask_k, target, foil, denom, (R, C)) \
        if attribution else None
    t2 = time.perf_counter()
    notes = list(plan.notes)
    if int(np.argmax(lc)) == int(np.argmax(lk)):
        notes.append(f"both texts are labelled {labels[target]}: the shares are of a difference in confidence "
                     f"(LD_clean - LD_corrupt = {denom:.3g}){', small: far outside 0..1 is common' * (abs(denom) < 1)}")
    if by == "position" and plan.column_axis == "position":
        notes.append("--by position is --by layer for this family (AGCNN's is its gates per word)")
    return PatchResult(
        clean=clean, corrupt=corrupt, model=_family(model), by=by, row_axis=plan.row_axis,
        column_axis=plan.column_axis, rows=[s.label for s in sites], columns=columns, restored=restored,
        patched_logits=logits, attribution=est, agreement=_agreement(restored, est), labels=labels, target=target,
        foil=foil, ld_clean=ld_c, ld_corrupt=ld_k, nothing=float((ld(got[0]) - ld_k) / denom),
        clean_prediction=_prediction(lc, labels), corrupt_prediction=_prediction(lk, labels), clean_tokens=tc,
        corrupt_tokens=tk, differing=differing, notes=notes,
        seconds={"activation": t1 - t0, "attribution": t2 - t1, "cells": float(len(cells))})


def _patched(model, sites, acts, masks, chunk, ids, mask) -> np.ndarray:
    """Logits (len(chunk), K) of the corrupted text, row b patched at cell chunk[b] (None: nothing patched)."""
    import torch
    B = len(chunk)
    used = sorted({c[0] for c in chunk if c is not None})
    M = {i: [None if a is None else torch.zeros((B,) + tuple(a.shape), dtype=torch.bool, device=a.device)
             for a in acts[i]] for i in used}
    for b, c in enumerate(chunk):
        if c is not None:
            for k, m in enumerate(masks[c[0]][c[1]]):
                if m is not None:
                    M[c[0]][k][b] = m

    def patch(i, ts):
        out = []
        for t, m, a in zip(ts, M[i], acts[i]):
            if t is None or m is None:
                out.append(t)
                continue
            shaped = t.reshape((B,) + tuple(a.shape))
            out.append(torch.where(m, a.unsqueeze(0).to(t.dtype), shaped).reshape(t.shape))
        return out
    reps = (B,) + (1,) * (ids.dim() - 1)
    with torch.no_grad():
        return _forward(model, sites, used, patch, ids.repeat(reps), mask.repeat(reps)).double().cpu().numpy()


def _attribution(model, sites, every, acts, masks, ids, mask, target, foil, denom, shape) -> np.ndarray:
    """(a_clean - a_corrupt) . dLD/da at the corrupted run per cell, over LD_clean - LD_corrupt: one forward with a
    zero tensor added at every site (its gradient is dLD/da there), one backward; the weights get no .grad."""
    import torch
    held: dict[int, list] = {}

    def tap(i, ts):
        out, pairs = [], []
        for t in ts:
            if t is None:
                out.append(None)
                pairs.append(None)
                continue
            z = torch.zeros_like(t, requires_grad=True)
            pairs.append((t.detach(), z))
            out.append(t + z)
        held[i] = pairs
        return out
    with torch.enable_grad():
        logits = _forward(model, sites, every, tap, ids, mask)
        ld = logits[0, target] - logits[0, foil]
        zs = [p[1] for i in every for p in held.get(i, []) if p is not None]
        grads = iter(torch.autograd.grad(ld, zs, allow_unused=True))
    est = np.full(shape, np.nan)
    for i in every:
        terms = []
        for p, a in zip(held.get(i, []), acts[i]):
            if p is None:
                terms.append(None)
                continue
            g = next(grads)
            terms.append(None if g is None else ((a - p[0]) * g).double())
        for j, ms in enumerate(masks[i]):
            if ms is not None:
                est[i, j] = sum(float(t[m].sum()) for t, m in zip(terms, ms) if t is not None and m is not None)
    return est / denom


def _agreement(restored: np.ndarray, est: np.ndarray | None) -> dict[str, float]:
    """Pearson and Spearman correlation of the two grids over the cells that apply, "all" left out."""
    if est is None:
        return {}
    a, b = restored[:, :-1].ravel(), est[:, :-1].ravel()
    keep = np.isfinite(a) & np.isfinite(b)
    a, b = a[keep], b[keep]
    out = {"cells": float(a.size), "pearson": float("nan"), "spearman": float("nan")}
    if a.size >= 3 and a.std() > 0 and b.std() > 0:
        from scipy.stats import rankdata
        out["pearson"] = float(np.corrcoef(a, b)[0, 1])
        ra, rb = rankdata(a), rankdata(b)
        out["spearman"] = float(np.corrcoef(ra, rb)[0, 1]) if ra.std() > 0 and rb.std() > 0 else float("nan")
    return out


__all__ = ["ALL", "BYS", "DEFINITION", "PairError", "PatchResult", "available_by", "patch_pair"]
