"""The neuron view (Vig 2019; bertviz's `neuron_view`): for one text, one attention site ("layer") and its heads,
the query vector q of a chosen word, every key vector k, their elementwise product q x k, the score the model
feeds its softmax (q . k times the model's scale, plus the mask or additive term it adds) and the softmax itself -
read from the model by forward hooks during one forward pass (no copy of the model, no second implementation of
its layers). `neuron_view(predictor, text, layer, head, query) -> NeuronView` (plain data, `to_dict()` is JSON).

Where q and k come from, per family (`applies` gives the one-line reason elsewhere):
- Transformer: each encoder layer's W_Q / W_K outputs (hooks on `attn.q`, `attn.k`), split into heads; the mask
  (padding, local chunks) is rebuilt from what the layer was called with (a pre-hook: mask, window, offset); with
  cls pooling the cls token is a query and a key. Global pooling adds ACT's global attention; decoder pooling the
  <s> query's cross-attention (hooks on `cross.q`, `cross.k`).
- ACT: its attentive convolutions have no query-key product; its global attention (eq. 6) has one: the query is
  the global representation g, the keys the top layer's outputs o_j (a pre-hook on `global_attention`), scale
  1/sqrt(d), and the model's own context term c . GELU(W_o o_j + W_p p_j) (its map `score_context`) is the
  additive term.
- LAMA: not a scaled dot product. f_ij = (P^T u_i)_j (Q^T c)_j = u_i . (p_j (q_j . c)): head j's query is the
  fixed vector p_j (q_j . c) (c the context vector), the keys u_i = tanh(W_w h_i + b_w) (a hook on `attn.w`),
  scale 1; the softmax reads f^ = tanh(f) (the shipped reading; "l2_heads" divides by the norm across heads,
  "layernorm_heads" is a LayerNorm across heads), divided by the temperature when one is learnt.
- HCAN / CAN: branch a and b self-attentions (Q, K = ELU(Conv1d(x)), heads by channel split, 1/sqrt(d_h)) and the
  target attention (query = the learnt target T per head, keys ELU(Conv1d(Z)), the model's own score scale), at
  word level (the query word's sentence) and sentence level (its sentence). A hook on each attention module takes
  its input and computes q and k with the module's own convolution (`hcan._conv`, the path its forward takes).
- Hugging Face encoders (BERT, DistilBERT, RoBERTa, ELECTRA, XLM-R, ALBERT, ... and GPT-2): the attention module's
  query / key projections (`query`/`key`, `q_lin`/`k_lin`, `q_proj`/`k_proj`, GPT-2's fused `c_attn`), split into
  heads, scale = the module's `scaling`; the mask is 0 (one unpadded text), -inf above the diagonal for a causal
  model. Families whose score adds terms the projections do not show (rotary or relative positions) are refused.

Word level: Hugging Face pieces are kept, each with its own q and k (so every softmax is the model's own, exact),
labelled with their word; the query word's pieces are its query rows; `word_weights` is the word view's rule
(textcls.data.pieces.WORD_RULE): a key word sums its pieces' weights, a query word averages its pieces' rows, the
special pieces are left out and each row renormalised. The check: `max_error` is the largest difference between
the softmax recomputed from the shown numbers and the model's own attention (tests/test_neurons.py: <= 1e-5).
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import numpy as np

TRANSFORMS = {"none": "s = q . k * scale + bias", "tanh": "s = tanh(q . k) (LAMA: f^ = tanh f)",
              "l2_heads": "s = tanh(f) / ||tanh(f)||, the norm across heads (LAMA l2_heads)",
              "layernorm_heads": "s = LayerNorm across heads of f (LAMA layernorm_heads)"}
CHECK_TOLERANCE = 1e-4      # a recomputed softmax further than this from the model's is refused, never shown


class NeuronError(ValueError):
    """A text, layer, head or query the neuron view cannot show (one line)."""


# ---------------------------------------------------------------- the result (plain data)

def _json(a) -> list:
    """A numpy array as nested lists of floats, NaN and +-inf as None (JSON)."""
    a = np.asarray(a, dtype=float)
    out = a.astype(object)
    out[~np.isfinite(a)] = None
    return out.tolist()


@dataclass(frozen=True)
class NeuronView:
    """One site, one query, its heads: the numbers bertviz's neuron view draws. Arrays are float64 numpy,
    h = len(heads), R = query rows (the pieces of the query word; 1 elsewhere), K = keys, d = the head's width."""

    model: str                          # the family ("transformer", "hf:BertForSequenceClassification", ...)
    site: str                           # e.g. "layer 1 self-attention"
    layer: int                          # index of the site in `sites`
    sites: tuple[str, ...]              # every attention site of the model, in order
    heads: tuple[int, ...]              # the heads shown (indices)
    n_heads: int
    words: tuple[str, ...]              # the text's words
    query: int                          # the chosen word (-1: the position the classifier reads)
    query_label: str                    # what the query is ("not", "[CLS]", "g (global representation)")
    rows: tuple[str, ...]               # label of each query row (R)
    row_keys: tuple[int, ...]           # the key each query row is (-1: a query that is not a key: g, c, T)
    keys: tuple[str, ...]               # label of each key (K)
    key_words: tuple[int, ...]          # each key's word (-1: a special piece, the cls token or a sentence)
    key_kind: str                       # word | piece | sentence
    q: np.ndarray                       # (h, R, d)
    k: np.ndarray                       # (h, K, d)
    scale: float                        # what q . k is multiplied by (1/sqrt(d), the model's scale, 1)
    bias: np.ndarray                    # (h, R, K) added to q . k * scale: 0, -inf where masked, ACT's context term
    dot: np.ndarray                     # (h, R, K) q . k
    scores: np.ndarray                  # (h, R, K) what the softmax reads
    weights: np.ndarray                 # (h, R, K) the softmax recomputed from the numbers above
    model_weights: np.ndarray           # (h, R, K) the model's own attention
    word_weights: np.ndarray            # (h, words) the word view of the rows (empty for sentences)
    transform: str = "none"             # how the score is made from q . k (TRANSFORMS)
    temperature: float = 1.0
    formula: str = ""
    max_error: float = 0.0              # max |weights - model_weights|
    seconds: float = 0.0
    note: str = ""

    @property
    def product(self) -> np.ndarray:
        """(h, R, K, d) the elementwise q x k; its sum over d is `dot`."""
        return self.q[:, :, None, :] * self.k[:, None, :, :]

    def to_dict(self) -> dict:
        plain = {f: getattr(self, f) for f in self.__dataclass_fields__}
        plain = {f: _json(v) if isinstance(v, np.ndarray) else list(v) if isinstance(v, tuple) else v
                 for f, v in plain.items()}
        return {**plain, "product": _json(self.product)}


# ---------------------------------------------------------------- numbers from vectors (the check's arithmetic)

def score_of(dot: np.ndarray, scale: float, bias: np.ndarray, transform: str = "none", temperature: float = 1.0,
             layernorm: tuple | None = None) -> np.ndarray:
    """What the softmax reads, from q . k (head first: (h, R, K)); `l2_heads` and `layernorm_heads` need every
    head (they normalise across axis 0)."""
    f = np.asarray(dot, dtype=float) * scale
    if transform == "tanh":
        f = np.tanh(f)
    elif transform == "l2_heads":
        t = np.tanh(f)
        f = t / np.maximum(np.sqrt((t ** 2).sum(0, keepdims=True)), 1e-12)
    elif transform == "layernorm_heads":
        gain, shift, eps = layernorm
        mu, var = f.mean(0, keepdims=True), f.var(0, keepdims=True)
        f = (f - mu) / np.sqrt(var + eps) * np.asarray(gain)[:, None, None] + np.asarray(shift)[:, None, None]
    return f / temperature + bias


def softmax(scores: np.ndarray) -> np.ndarray:
    """Softmax over the last axis; -inf keys get 0 and a row with no finite score is all 0 (the models' masked
    softmax rule)."""
    s = np.asarray(scores, dtype=float)
    finite = np.isfinite(s)
    top = np.where(finite, s, -np.inf).max(-1, keepdims=True)
    e = np.where(finite, np.exp(s - np.where(np.isfinite(top), top, 0.0)), 0.0)
    total = e.sum(-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def word_view(weights: np.ndarray, key_words, n_words: int) -> np.ndarray:
    """(h, words): a key word's weight = the sum over its keys, the rows (query pieces) averaged, keys of no word
    (-1) left out and each row renormalised - the rule of the models' word maps."""
    w = np.asarray(weights, dtype=float).mean(1)                                   # (h, K)
    out = np.zeros((w.shape[0], n_words))
    for j, word in enumerate(key_words):
        if 0 <= word < n_words:
            out[:, word] += w[:, j]
    total = out.sum(-1, keepdims=True)
    return np.divide(out, total, out=np.zeros_like(out), where=total > 0)


# ---------------------------------------------------------------- one attention site, as read from the model

@dataclass
class _Site:
    name: str
    q: np.ndarray                       # (H, Q, d)
    k: np.ndarray                       # (H, K, d)
    scale: float
    bias: np.ndarray                    # (H|1, Q, K)
    model: np.ndarray                   # (H, Q, K)
    keys: list[str]
    key_words: list[int]
    query_words: list[tuple[int, ...]]  # the words each query position covers ((): a special position)
    query_labels: list[str]
    formula: str
    kind: str = "word"
    fixed: str = ""                     # the query when it is not a word position
    pooled: tuple[int, ...] = ()        # the query rows that --query -1 picks
    transform: str = "none"
    temperature: float = 1.0
    layernorm: tuple | None = None


def _np(t) -> np.ndarray:
    return t.detach().float().cpu().numpy().astype(float)


def _heads(t, h: int) -> np.ndarray:
    """(T, h * d) -> (h, T, d)."""
    a = _np(t)
    return a.reshape(a.shape[0], h, -1).transpose(1, 0, 2)


def _mask_bias(allowed) -> np.ndarray:
    return np.where(np.asarray(allowed, dtype=bool), 0.0, -np.inf)


def _hooked(handles: list, fn, *args):
    """fn(*args) with the hook `handles` in place, removed after."""
    try:
        return fn(*args)
    finally:
        for h in handles:
            h.remove()


def _mine(fn):
    """A hook that records only the calls of the thread that registered it."""
    owner = threading.get_ident()

    def hook(*args, **kwargs):
        if threading.get_ident() == owner:
            return fn(*args, **kwargs)
    return hook


def _encode(predictor, text: str):
    try:
        enc = predictor.encode([text])
    except (ValueError, KeyError) as e:                                  # relation data without its markers, ...
        raise NeuronError(" ".join(str(e).split()) or type(e).__name__) from None
    return enc, [str(t) for t in enc.tokens[0]]


def _forward(predictor, enc):
    import torch
    device = predictor.device
    with torch.no_grad():
        out = predictor.model(enc.token_ids.to(device), enc.mask.to(device), return_maps=True)
    return {k: v[0] for k, v in out.maps.items()}                        # batch axis removed


# ---------------------------------------------------------------- Transformer and ACT

def _global_site(rec: dict, maps: dict, words: list[str]) -> _Site | None:
    """ACT's global attention (eq. 6), also the Transformer's global pooling: query g, keys o_j."""
    o, mask, g = rec["global"]
    if g is None:
        return None
    L, d = o.shape[1], o.shape[2]
    real = _np(mask[0]) > 0                                                          # (L,)
    bias = np.where(real, _np(maps["score_context"])[:L], -np.inf)[None, None, :]    # (1, 1, L)
    return _Site("global attention (ACT eq. 6)", _np(g)[None, :, :], _np(o[0])[None], 1 / math.sqrt(d), bias,
                 _np(maps["alpha"])[None, None, :L], list(words[:L]), list(range(L)), [()],
                 ["g (global representation)"],
                 "score_j = g . o_j / sqrt(d) + c . GELU(W_o o_j + W_p p_j); the second term (the model's map "
                 "score_context) is the additive term", fixed="g (global representation)", pooled=(0,))


def _transformer_sites(predictor, enc, words):
    from textcls.models.transformer import local_block_mask
    m = predictor.model
    rec: dict = {}

    def pre(name):
        return _mine(lambda mod, args: rec.__setitem__(name, args))

    def out(name):
        return _mine(lambda mod, args, o: rec.__setitem__(name, o))
    regs = []
    for i, layer in enumerate(m.layers):
        regs += [layer.register_forward_pre_hook(pre(("layer", i))),
                 layer.attn.q.register_forward_hook(out(("q", i))), layer.attn.k.register_forward_hook(out(("k", i)))]
    if m.config.pooling == "global":
        regs.append(m.global_attention.register_forward_pre_hook(
            _mine(lambda mod, args: rec.__setitem__("global", args[:3]))))
    if m.config.pooling == "decoder":
        regs.append(m.decoder.register_forward_pre_hook(pre("decoder")))
        for j, dl in enumerate(m.decoder.layers):
            regs += [dl.cross.q.register_forward_hook(out(("cq", j))), dl.cross.k.register_forward_hook(out(("ck", j)))]
    maps = _hooked(regs, _forward, predictor, enc)
    sites, h = [], m.config.n_heads
    for i, layer in enumerate(m.layers):
        _, mask, s, window, offset = rec[("layer", i)][:5]
        L = mask.shape[1]
        real = np.concatenate([np.ones(s, bool), _np(mask[0]) > 0])                  # (T,)
        allowed = real[:, None] & real[None, :]                                      # (T, T)
        if window:
            allowed &= _np(local_block_mask(L, window, offset, s)) > 0
        att = _np(maps["attention"][i])                                              # (h, L, L)
        if s:
            full = np.zeros((h, L + 1, L + 1))
            full[:, 0, 0], full[:, 0, 1:] = _np(maps["cls_self"][i]), _np(maps["cls_attention"][i])
            full[:, 1:, 0], full[:, 1:, 1:] = _np(maps["attention_to_cls"][i]), att
            att = full
        labels = ["[cls]"] * s + list(words[:L])
        sites.append(_Site(f"layer {i + 1} self-attention", _heads(rec[("q", i)][0], h), _heads(rec[("k", i)][0], h),
                           1 / math.sqrt(layer.attn.dh), _mask_bias(allowed)[None], att, labels,
                           [-1] * s + list(range(L)), [()] * s + [(j,) for j in range(L)], labels,
                           "score = q . k / sqrt(d_h), -inf where the mask (padding, local chunks) forbids",
                           pooled=(0,) if s else ()))
    if m.config.pooling == "global":
        g = _global_site(rec, maps, words)
        sites += [g] if g is not None else []
    if m.config.pooling == "decoder":
        mask = rec["decoder"][1]
        L = mask.shape[1]
        for j, dl in enumerate(m.decoder.layers):
            bias = _mask_bias(_np(mask[0]) > 0)[None, None, :]                        # (1, 1, L)
            sites.append(_Site(f"decoder layer {j + 1} cross-attention", _heads(rec[("cq", j)][0], h),
                               _heads(rec[("ck", j)][0], h), 1 / math.sqrt(dl.cross.dh), bias,
                               _np(maps["decoder_attention"][j])[:, None, :L], list(words[:L]), list(range(L)), [()],
                               ["<s>"], "score = q(<s>) . k / sqrt(d_h)", fixed="<s> (the decoder's query)",
                               pooled=(0,)))
    return sites


def _act_sites(predictor, enc, words):
    m = predictor.model
    rec: dict = {}
    reg = m.global_attention.register_forward_pre_hook(_mine(lambda mod, args: rec.__setitem__("global", args[:3])))
    maps = _hooked([reg], _forward, predictor, enc)
    site = _global_site(rec, maps, words)
    return [site] if site is not None else []


# ---------------------------------------------------------------- LAMA

def _lama_sites(predictor, enc, words):
    m = predictor.model
    rec: dict = {}
    reg = m.attn.w.register_forward_hook(_mine(lambda mod, args, o: rec.__setitem__("w", o)))
    maps = _hooked([reg], _forward, predictor, enc)
    u = np.tanh(_np(rec["w"][0]))                                                    # (L, 2d) keys u_i
    c = _np(maps["context"])                                                         # (2d,)
    P, Q = _np(m.attn.P), _np(m.attn.Q)                                              # (2d, m) each
    q = (P * (c @ Q)[None, :]).T[:, None, :]                                         # (m, 1, 2d) p_j (q_j . c)
    H, L = q.shape[0], u.shape[0]
    real = _np(enc.mask[0]) > 0
    t = m.attn.temperature()
    norm = m.attn.norm
    transform = "layernorm_heads" if norm is not None else m.config.score_norm
    ln = (_np(norm.weight), _np(norm.bias), float(norm.eps)) if norm is not None else None
    return [_Site("low-rank attention (LAMA)", q, np.broadcast_to(u, (H, L, u.shape[1])).copy(), 1.0,
                  _mask_bias(real)[None, None, :], _np(maps["attention"])[:, None, :L], list(words[:L]),
                  list(range(L)), [()], ["c (context vector)"],
                  "f_ij = u_i . (p_j (q_j . c)) with u_i = tanh(W_w h_i + b_w); not a scaled dot product: the "
                  "softmax reads " + TRANSFORMS[transform].split("= ", 1)[1]
                  + (" divided by the learnt temperature" if t is not None else ""),
                  fixed="c: head j's query is p_j (q_j . c)", pooled=(0,), transform=transform,
                  temperature=float(t) if t is not None else 1.0, layernorm=ln)]


# ---------------------------------------------------------------- HCAN / CAN

def _hcan_sites(predictor, enc, words, query: int):
    import torch
    import torch.nn.functional as F
    from textcls.models.hcan import _conv
    m = predictor.model
    hier = m.registry_name == "hcan"
    levels = [("word ", m.word_level), ("sentence ", m.sent_level)] if hier else [("", m.level)]
    rec: dict = {}

    def selfatt(name):
        def hook(mod, args, out):
            x, mask = args[0], args[1]
            with torch.no_grad():
                q, k, _ = _conv(x, mask, mod.qkv).split(mod.d, dim=-1)              # (N, L, d) each
            rec[name] = (F.elu(q), F.elu(k), mask, out[1], mod.heads)
        return _mine(hook)

    def target(name):
        def hook(mod, args, out):
            z, mask = args[0], args[1]
            with torch.no_grad():
                k = F.elu(_conv(z, mask, mod.key))                                   # (N, L, d)
            rec[name] = (mod.target[None], k, mask, out[1][:, :, None, :], mod.heads, float(mod.score_scale()))
        return _mine(hook)
    regs, names = [], []
    for prefix, level in levels:
        for attr, label in (("branch_a", "self-attention a (ELU values)"), ("branch_b", "self-attention b (tanh)")):
            if getattr(level, attr) is not None:
                names.append(prefix + label)
                regs.append(getattr(level, attr).register_forward_hook(selfatt(names[-1])))
        if level.pool is not None:
            names.append(prefix + "target attention")
            regs.append(level.pool.register_forward_hook(target(names[-1])))
    _hooked(regs, _forward, predictor, enc)
    sentences = [list(map(str, s)) for s in (enc.sentences[0] if hier else [words])]
    starts = np.cumsum([0] + [len(s) for s in sentences])
    which = next((i for i in range(len(sentences)) if starts[i] <= query < starts[i + 1]), 0)
    sent_labels = [f"S{i + 1}: " + " ".join(s) for i, s in enumerate(sentences)]
    sites = []
    for name in names:
        q, k, mask, att, h, *scale = rec[name]
        target_site, n = bool(scale), 0 if name.startswith("sentence ") else which    # n: the row of the batch
        L = int(mask[n].sum())
        if name.startswith("sentence "):
            keys, key_words, kind = sent_labels[:L], [-1] * L, "sentence"
            covers = [tuple(range(starts[i], starts[i + 1])) for i in range(L)]
        else:
            keys, kind, key_words = sentences[n][:L], "word", list(range(int(starts[n]), int(starts[n]) + L))
            covers = [(w,) for w in key_words]
        real = _np(mask[n][:L]) > 0
        sites.append(_Site(
            name, _heads(q if target_site else q[n][:L], h), _heads(k[n][:L], h),
            scale[0] if target_site else 1 / math.sqrt(q.shape[-1] // h),
            _mask_bias(real[None, :] if target_site else real[:, None] & real[None, :])[None],
            _np(att[n])[:, :, :L][:, :(1 if target_site else L)], keys, key_words,
            [()] if target_site else covers, ["T (the learnt target)"] if target_site else keys,
            "score = T_h . k * scale (the model's target scale)" if target_site else
            "score = q . k / sqrt(d_h), q, k = ELU(Conv1d(x)) split into heads", kind=kind,
            fixed="T (the learnt target)" if target_site else "", pooled=(0,) if target_site else ()))
    return sites


# ---------------------------------------------------------------- Hugging Face encoders

_PAIRS = (("query", "key"), ("q_lin", "k_lin"), ("query_proj", "key_proj"), ("q_proj", "k_proj"))


def _projections(hf) -> list[tuple]:
    """(attention module, query projection, key projection or None, fused width or None) per attention module,
    in module order; GPT-2's fused c_attn gives q and k as its first two thirds."""
    import torch.nn as nn
    found = []
    for mod in hf.modules():
        for qn, kn in _PAIRS:
            qm, km = getattr(mod, qn, None), getattr(mod, kn, None)
            if isinstance(qm, nn.Module) and isinstance(km, nn.Module):
                found.append((mod, qm, km, None))
                break
        else:
            fused = getattr(mod, "c_attn", None)
            if isinstance(fused, nn.Module) and isinstance(getattr(mod, "split_size", None), int):
                found.append((mod, fused, None, mod.split_size))
    return found


def _hf_reason(model) -> str | None:
    """None when the neuron view can show this Hugging Face model, else why not (one line)."""
    hf = model.hf
    cfg = hf.config
    name = type(hf).__name__
    if model.family.attention == "none":
        return model.attention_note
    rotary = any("rotary" in type(mod).__name__.lower() for mod in hf.modules()) or any(
        getattr(cfg, a, None) is not None for a in ("rope_theta", "rotary_dim", "rotary_emb_base"))
    if rotary:
        return f"{name} rotates q and k by their positions (rotary embeddings) after the projections: q . k of " \
               "the projections is not its score"
    relative = str(getattr(cfg, "position_embedding_type", "absolute") or "absolute") != "absolute" or \
        getattr(cfg, "relative_attention", False) or str(cfg.model_type).startswith("deberta")
    if relative:
        return f"{name} adds relative-position terms to q . k: its score is not q . k of the projections"
    if not _projections(hf):
        return f"{name}: no query/key projection found to read q and k from"
    return None


def _hf_sites(predictor, text: str):
    from textcls.models.hf.pieces import piece_attention_of
    qs, ks, regs = [], [], []
    for att, qm, km, fused in _projections(predictor.model.hf):
        if fused is not None:
            def split(mod, a, o, att=att, w=fused):
                qs.append((att, o[..., :w]))
                ks.append(o[..., w:2 * w])
            regs.append(qm.register_forward_hook(_mine(split)))
        else:
            regs += [qm.register_forward_hook(_mine(lambda mod, a, o, att=att: qs.append((att, o)))),
                     km.register_forward_hook(_mine(lambda mod, a, o: ks.append(o)))]
    try:
        pa = _hooked(regs, piece_attention_of, predictor, text)
    except ValueError as e:
        raise NeuronError(" ".join(str(e).split())) from None
    n_layers, H, L = pa.attention.shape[0], pa.attention.shape[1], len(pa.pieces)
    if len(qs) != n_layers or len(ks) != n_layers:
        raise NeuronError(f"{len(qs)} query projections ran for {n_layers} attention layers: the neuron view "
                          "cannot pair them")
    family = predictor.model.family
    allowed = np.tril(np.ones((L, L), bool)) if family.causal else np.ones((L, L), bool)
    labels = [p.replace("Ġ", " ").replace("▁", " ").strip() or p for p in pa.pieces]   # as bertviz shows them
    sites = []
    for i, ((att, q), k) in enumerate(zip(qs, ks)):
        q, k = _np(q[0, :L]), _np(k[0, :L])                                          # (L, H d), (L, H_kv d)
        hd = q.shape[-1] // H
        q = q.reshape(L, H, hd).transpose(1, 0, 2)                                   # (H, L, d)
        k = k.reshape(L, -1, hd).transpose(1, 0, 2)                                  # (H_kv, L, d)
        k = np.repeat(k, H // k.shape[0], axis=0)                                    # grouped query: (H, L, d)
        scale = float(getattr(att, "scaling", None) or hd ** -0.5)
        sites.append(_Site(f"layer {i + 1} self-attention", q, k, scale, _mask_bias(allowed)[None],
                           pa.attention[i].astype(float), labels, list(pa.owner),
                           [(o,) if o >= 0 else () for o in pa.owner], labels,
                           f"score = q . k * {scale:.4g} (the module's scaling) + mask ("
                           + ("-inf above the diagonal: causal)" if family.causal else "0: one text, no padding)"),
                           kind="piece", pooled=pa.pooled_rows))
    return sites, list(pa.words)


# ---------------------------------------------------------------- the door

NO_DOT = {"kim_cnn": "Kim CNN has convolutions and max-pooling, no attention: no query or key",
          "agcnn": "AGCNN gates its convolution maps with other convolutions, no query-key attention"}


def reason(predictor) -> str | None:
    """None when the neuron view applies to the checkpoint's model, else one line why not."""
    m = predictor.model
    family = getattr(m, "registry_name", "") or type(m).__name__
    if family in NO_DOT:
        return NO_DOT[family]
    if family == "hf":
        return _hf_reason(m)
    if family == "act" and not m.config.global_rep:
        return "ACT without its global representation g has no query-key product (its score is c . GELU(W_o o_j))"
    if family in ("transformer", "act", "lama", "hcan", "can"):
        return None
    return f"{family}: the neuron view knows no query and key of this model family"


def _sites(predictor, text: str, query: int) -> tuple[list[_Site], list[str]]:
    """(the model's attention sites for `text`, the text's words)."""
    family = predictor.model.registry_name
    if family == "hf":
        return _hf_sites(predictor, text)
    enc, words = _encode(predictor, text)
    if not words:
        raise NeuronError("the text has no word the model reads")
    build = {"transformer": _transformer_sites, "act": _act_sites, "lama": _lama_sites}.get(family)
    return (build(predictor, enc, words) if build else _hcan_sites(predictor, enc, words, max(query, 0))), words


def _rows(site: _Site, query: int, words: list[str]) -> tuple[list[int], str]:
    if site.fixed:
        return [0], site.fixed
    if query == -1:
        if not site.pooled:
            raise NeuronError(f"--query -1: {site.name} has no position the classifier reads; choose a word "
                              f"(0..{len(words) - 1})")
        return list(site.pooled), " + ".join(site.query_labels[r] for r in site.pooled)
    rows = [r for r, covers in enumerate(site.query_words) if query in covers]
    if not rows:
        raise NeuronError(f"--query {query}: word {words[query]!r} is not a query of {site.name}")
    return rows, words[query]


def neuron_view(predictor, text: str, layer: int = 0, head: int = -1, query: int = 0) -> NeuronView:
    """The neuron view of `text` at attention site `layer`, head `head` (-1: every head), query word `query`
    (an index into the text's words; -1: the position the classifier reads, [CLS] or the cls token). NeuronError
    (one line) for a model without dot-product attention, an empty text or an index out of range."""
    why = reason(predictor)
    if why is not None:
        raise NeuronError(why)
    start = time.perf_counter()
    sites, words = _sites(predictor, text, query)
    if not sites:
        raise NeuronError("this model computes no query-key attention for this text")
    names = tuple(s.name for s in sites)
    if not 0 <= layer < len(sites):
        raise NeuronError(f"--layer {layer}: this model has {len(sites)} attention site(s), 0..{len(sites) - 1}: "
                          + "; ".join(f"{i} {n}" for i, n in enumerate(names)))
    site = sites[layer]
    H = site.q.shape[0]
    if not -1 <= head < H:
        raise NeuronError(f"--head {head}: {site.name} has {H} head(s), 0..{H - 1} (-1: all)")
    if not -1 <= query < len(words):
        raise NeuronError(f"--query {query}: the text has {len(words)} word(s), 0..{len(words) - 1} (-1: the "
                          "position the classifier reads)")
    rows, label = _rows(site, query, words)
    dot = np.einsum("hrd,hkd->hrk", site.q[:, rows], site.k)                        # (H, R, K)
    bias = np.broadcast_to(site.bias[:, rows], dot.shape)                           # (H, R, K)
    scores = score_of(dot, site.scale, bias, site.transform, site.temperature, site.layernorm)  # all heads
    shown = list(range(H)) if head == -1 else [head]
    weights = softmax(scores)[shown]                                                # (h, R, K)
    model_w = site.model[:, rows][shown]
    error = float(np.abs(weights - model_w).max()) if weights.size else 0.0
    if not error <= CHECK_TOLERANCE:
        raise NeuronError(f"{site.name}: the softmax of q . k recomputed from the read vectors differs from the "
                          f"model's attention by {error:.2g}; its score holds terms the neuron view does not read")
    ww = word_view(weights, site.key_words, len(words)) if site.kind != "sentence" else np.zeros((len(shown), 0))
    m = predictor.model
    return NeuronView(
        model=f"hf:{type(m.hf).__name__}" if m.registry_name == "hf" else m.registry_name, site=site.name, layer=layer, sites=names, heads=tuple(shown), n_heads=H,
        words=tuple(words), query=query, query_label=label, rows=tuple(site.query_labels[r] for r in rows),
        row_keys=tuple(-1 if site.fixed else r for r in rows),
        keys=tuple(site.keys), key_words=tuple(int(w) for w in site.key_words), key_kind=site.kind,
        q=site.q[shown][:, rows], k=site.k[shown], scale=float(site.scale), bias=np.array(bias[shown]),
        dot=dot[shown], scores=np.array(scores[shown]), weights=weights, model_weights=model_w, word_weights=ww,
        transform=site.transform, temperature=site.temperature, formula=site.formula, max_error=error,
        seconds=time.perf_counter() - start, note=_note(site))


def _note(site: _Site) -> str:
    if site.kind == "piece":
        return ("Word pieces kept, each with its own q and k (the softmax is the model's, exact); a word's weight "
                "is the sum of its pieces', a query word's row the mean of its pieces' rows, special pieces left "
                "out and renormalised.")
    if site.transform != "none":
        return f"LAMA's score is not a scaled dot product: q . k goes through {site.transform} before the softmax."
    return ""


__all__ = ["CHECK_TOLERANCE", "NeuronError", "NeuronView", "TRANSFORMS", "neuron_view", "reason", "score_of",
           "softmax", "word_view"]
