"""Per-layer views beside activation patching (interpret/patching.py): a lens per layer, linear probes per layer
with control tasks, and a planted mechanism whose answer is known by construction.

- Lens (`layer_lens`): the model's own classifier head applied to each layer's stream, as if the layers above were
  skipped: the top layer's output is replaced by the stream entering layer 1 ("embeddings") or leaving layer i,
  and the rest of the model (final LayerNorm, pooling, head) runs as it is. For the Transformer and every Hugging
  Face encoder or decoder (its final norm, pooler and head), and ACT (its stream; the global representation g
  stays the top layer's own, so ACT's rows below the top are a partial lens). What stands in for it elsewhere:
  Kim CNN and AGCNN have one convolution layer of parallel windows (patching's branch shares say which window
  decides); LAMA has one BiGRU (patching per direction); HCAN has two levels (the word level's sentence vectors
  and the sentence level: patching's rows).
- Probes (`probe_layers`): per layer, logistic regression on the stream averaged over the real positions,
  k-fold accuracy, and the same probe on a control task (Hewitt & Liang 2019): every *type* (e.g. the text's
  adjective) gets a random label, in the task's proportions, so only memorising types can solve it.
  Selectivity = task accuracy - control accuracy: a probe that is accurate everywhere because it can memorise
  says little; one accurate where the control is not says the layer holds the property.
- Planted (`planted_source`): a hand-set 2-layer textcls Transformer on a synthetic task ("the movie was not
  good"): the label is the adjective's polarity, flipped when "not" is in the text. Layer 1's head 1 moves "not"
  to the adjective (the adjective queries for it); layer 2's feed-forward computes the flipped polarity at the
  adjective (four ReLU units); mean pooling and the output read only that. Every other weight is 0. Token vectors
  are 10^4 times the sinusoidal positions, so every LayerNorm is (to 1e-4) a fixed scaling: the mechanism is
  known, not learned, and the tests (tests/test_patching.py) check that patching, the lens and the probes find it.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from textcls.runtime.threads import batch_work, interactive_work

PLANTED_POSITIVE = ("good", "great", "fine", "superb", "lovely", "brilliant", "charming", "solid")
PLANTED_NEGATIVE = ("bad", "awful", "dull", "poor", "boring", "terrible", "weak", "bland")
PLANTED_SUBJECTS = ("movie", "film", "plot", "story")
PLANTED_VERBS = ("was", "is")
PLANTED_ADVERBS = ("not", "very", "really", "quite", "so")


def hf_layers(hf) -> list:
    """A Hugging Face model's layers, in order: the first ModuleList of `num_hidden_layers` modules of one class.
    ValueError (one line) when there is none (ALBERT shares one layer across depth)."""
    import torch.nn as nn
    n = int(getattr(hf.config, "num_hidden_layers", 0) or 0)
    for _, mod in hf.named_modules():
        if isinstance(mod, nn.ModuleList) and n and len(mod) == n and len({type(m) for m in mod}) == 1:
            return list(mod)
    raise ValueError(f"{type(hf).__name__}: no list of its {n} layers found (shared layers, as ALBERT's?); the "
                    "per-layer views need one module per layer")


_OUT_PROJ = ("attention.output.dense", "attention.out_lin", "attention.dense", "attn.c_proj", "self_attn.o_proj",
             "self_attn.dense", "self_attn.out_proj", "attn.Wo", "attn.o_proj", "attn.out_proj",
             "self_attention.dense")


def hf_out_projection(layer):
    """The linear map a Hugging Face layer applies to its attention heads' concatenated outputs (BERT's
    attention.output.dense, Llama's self_attn.o_proj, GPT-2's attn.c_proj, ...), or None."""
    for path in _OUT_PROJ:
        try:
            return layer.get_submodule(path)
        except AttributeError:
            continue
    return None


def stream_sites(model) -> list[tuple[str, Any, str]]:
    """(label, module, "in" | "out") of the stream per layer: entering layer 1, then leaving each layer.
    ValueError for a family without a layered stream (see the module docstring for what stands in)."""
    name = getattr(model, "registry_name", "")
    if name in ("transformer", "act"):
        layers = list(model.layers)
    elif name == "hf":
        layers = hf_layers(model.hf)
    else:
        raise ValueError(f"{name or type(model).__name__} has no stack of layers to read a lens or probes from "
                         "(the module docstring of textcls.interpret.lens says what stands in)")
    return [("embeddings", layers[0], "in")] + [(f"layer {i + 1}", m, "out") for i, m in enumerate(layers)]


@contextmanager
def _streams(sites, replace_last=None):
    """Record every site's stream tensor (`got`); with replace_last, a function of the top layer's output tensor
    that returns its replacement. Hooks removed in `finally`; they act only in this thread."""
    import threading

    import torch
    got, handles, owner = [], [], threading.get_ident()

    def first(x):
        return x if isinstance(x, torch.Tensor) else x[0]

    def out_hook(i, m, args, out):
        if threading.get_ident() != owner:
            return None
        got.append((i, first(out)))
        if replace_last is not None and i == len(sites) - 1:
            new = replace_last(first(out))
            return new if isinstance(out, torch.Tensor) else (new,) + tuple(out[1:])
        return None

    def in_hook(i, m, args, kwargs):
        if threading.get_ident() == owner:
            got.append((i, args[0] if args else kwargs.get("hidden_states", next(iter(kwargs.values())))))
    try:
        for i, (_, mod, where) in enumerate(sites):
            if where == "in":
                handles.append(mod.register_forward_pre_hook(lambda m, a, k, i=i: in_hook(i, m, a, k),
                                                             with_kwargs=True))
            else:
                handles.append(mod.register_forward_hook(lambda m, a, o, i=i: out_hook(i, m, a, o)))
        yield got
    finally:
        for h in handles:
            h.remove()


@dataclass
class LensResult:
    """The head read at every layer: rows (embeddings, layer 1..N), logits (R, K), probabilities (R, K)."""

    text: str
    rows: list[str]
    labels: list[str]
    logits: np.ndarray
    probabilities: np.ndarray
    notes: list[str] = field(default_factory=list)

    @property
    def predicted(self) -> list[str]:
        return [self.labels[int(i)] for i in self.probabilities.argmax(1)]


@interactive_work
def layer_lens(predictor, text: str) -> LensResult:
    """The classifier head applied to each layer's stream (module docstring); the last row is the model itself."""
    import torch
    from textcls.interpret.probabilities import check_model
    from textcls.interpret.sources import as_source
    src = as_source(predictor)
    model = src.model
    check_model(model)
    sites = stream_sites(model)
    (inst,) = src.instances([text])
    device = next(model.parameters()).device
    ids, mask = (t.to(device) for t in inst.batch())
    with torch.no_grad():
        with _streams(sites) as got:
            model(ids, mask)
        streams = [t for _, t in sorted(got, key=lambda p: p[0])]                # R x (1, T, d)
        R = len(sites)
        stack = torch.cat(streams, 0)                                           # (R, T, d)
        reps = (R,) + (1,) * (ids.dim() - 1)
        with _streams(sites, replace_last=lambda out: stack.to(out.dtype)):
            logits = model(ids.repeat(reps), mask.repeat(reps)).logits.double().cpu().numpy()   # (R, K)
    p = np.exp(logits - logits.max(1, keepdims=True))
    labels = list(src.labels or [str(i) for i in range(logits.shape[1])])
    notes = ["the top layer's output replaced by each row's stream; the final norm, pooling and head run as they are"]
    if getattr(model, "registry_name", "") == "act":
        notes.append("ACT: the global representation g stays the top layer's own, so rows below the top are partial")
    return LensResult(text, [s[0] for s in sites], labels, logits, p / p.sum(1, keepdims=True), notes)


# ---------------------------------------------------------------- probes with control tasks

@dataclass
class ProbeResult:
    """Per layer: the probe's k-fold accuracy on the property, on the control task, and their difference."""

    rows: list[str]
    accuracy: np.ndarray
    control: np.ndarray
    selectivity: np.ndarray
    majority: float                      # the most frequent class's share (what a probe gets for nothing)
    n: int
    notes: list[str] = field(default_factory=list)


@batch_work
def layer_features(predictor, texts: Sequence[str], batch_size: int = 64) -> tuple[list[str], np.ndarray]:
    """(rows, features (R, N, d)): each layer's stream averaged over each text's real positions (a Hugging Face
    model: its real pieces, specials included)."""
    import torch
    from textcls.interpret.sources import as_source
    src = as_source(predictor)
    model = src.model
    sites = stream_sites(model)
    device = next(model.parameters()).device
    out = []
    for start in range(0, len(texts), batch_size):
        enc = src.encode(list(texts[start:start + batch_size]))
        ids, mask = enc.token_ids.to(device), enc.mask.to(device).bool()
        with torch.no_grad(), _streams(sites) as got:
            model(ids, mask)
        real = model._layout(ids, mask).real if hasattr(model, "_layout") else mask
        if getattr(model, "n_special", 0):
            real = torch.cat([real.new_ones(real.shape[0], model.n_special), real], 1)
        m = real.to(torch.float64).unsqueeze(-1)                                 # (B, T, 1)
        rows = [(t.double() * m).sum(1) / m.sum(1).clamp(min=1) for _, t in sorted(got, key=lambda p: p[0])]
        out.append(torch.stack(rows).cpu().numpy())                             # (R, B, d)
    return [s[0] for s in sites], np.concatenate(out, 1)


def control_labels(types: Sequence[str], labels: Sequence[int], seed: int = 0) -> np.ndarray:
    """Hewitt & Liang's control task: each type a random label, drawn so the classes keep the task's proportions
    over types."""
    rng = np.random.default_rng(seed)
    kinds = sorted(set(types))
    share = np.bincount(np.asarray(labels), minlength=max(labels) + 1) / len(labels)
    pool = rng.choice(len(share), size=len(kinds), p=share)
    rng.shuffle(pool)
    table = dict(zip(kinds, pool))
    return np.array([table[t] for t in types])


def probe_layers(predictor, texts: Sequence[str], labels: Sequence[int], types: Sequence[str], *, folds: int = 5,
                 seed: int = 0, C: float = 1.0) -> ProbeResult:
    """Per layer, a logistic-regression probe of `labels` (the property: an int per text) and of the control task
    over `types` (one type per text), k-fold accuracy on held-out texts (module docstring)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    y = np.asarray(labels, dtype=int)
    ctrl = control_labels(types, y, seed)
    rows, feats = layer_features(predictor, texts)
    acc, con = [], []
    for X in feats:
        probe = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=500, solver="newton-cholesky"))
        acc.append(cross_val_score(probe, X, y, cv=StratifiedKFold(folds, shuffle=True, random_state=seed)).mean())
        con.append(cross_val_score(probe, X, ctrl, cv=StratifiedKFold(folds, shuffle=True, random_state=seed)).mean())
    acc, con = np.array(acc), np.array(con)
    return ProbeResult(rows, acc, con, acc - con, float(np.bincount(y).max() / len(y)), len(y),
                       [f"logistic regression (C={C}) on the stream averaged over the real positions, {folds}-fold; "
                        "control: a random label per type (Hewitt & Liang 2019)"])


# ---------------------------------------------------------------- the planted mechanism

def planted_texts(seed: int = 0) -> tuple[list[str], list[int], list[int], list[str]]:
    """Every text of the planted task: (texts, labels (1 = positive), negated (0/1), adjectives)."""
    texts, labels, negated, adjs = [], [], [], []
    for subject in PLANTED_SUBJECTS:
        for verb in PLANTED_VERBS:
            for adverb in PLANTED_ADVERBS:
                for adj in PLANTED_POSITIVE + PLANTED_NEGATIVE:
                    texts.append(f"the {subject} {verb} {adverb} {adj}")
                    pol = adj in PLANTED_POSITIVE
                    labels.append(int(pol != (adverb == "not")))
                    negated.append(int(adverb == "not"))
                    adjs.append(adj)
    return texts, labels, negated, adjs


def planted_source(scale: float = 1e4):
    """The hand-set Transformer of the planted task and its tokenizer, as a Source (module docstring)."""
    import torch
    from textcls.data.text import PAD, UNK, Tokenizer, TokenizerConfig, Vocab
    from textcls.interpret.sources import Source
    from textcls.models.registry import create_model
    words = ["the", *PLANTED_SUBJECTS, *PLANTED_VERBS, *PLANTED_ADVERBS, *PLANTED_POSITIVE, *PLANTED_NEGATIVE]
    vocab = Vocab([PAD, UNK] + words)
    model = create_model("transformer", vocab_size=len(vocab.itos), num_labels=2, embed_dim=16, d_model=16,
                         n_heads=2, d_ff=8, n_layers=2, dropout=0.0, attention_dropout=0.0, ffn_activation="relu",
                         pooling="mean", scale_embedding=False, embedding_mode="rand", fc_dim=0)
    POL, NOT, ADJ, NEG, FLIP, FILL, IDA, IDB = range(8)          # feature f lives in dims 2f (+) and 2f + 1 (-)
    norm2 = 3.0                                                  # every token's squared feature norm
    ln = (2 * norm2 / 16) ** -0.5                                # what a LayerNorm multiplies a token vector by
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        for m in model.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.fill_(1.0)
        emb = model.embed.tables[0].weight
        for i, w in enumerate(words, start=2):
            f = torch.zeros(8)
            theta = 2 * np.pi * i / len(words)
            f[IDA], f[IDB] = 0.3 * np.cos(theta), 0.3 * np.sin(theta)   # a small identity code per word
            if w in PLANTED_POSITIVE or w in PLANTED_NEGATIVE:
                f[POL], f[ADJ] = (1.0 if w in PLANTED_POSITIVE else -1.0), 1.0
            f[NOT] = float(w == "not")
            f[FILL] = float(np.sqrt(norm2 - float((f ** 2).sum())))
            emb[i, 0::2], emb[i, 1::2] = scale * f, -scale * f
        a0 = model.layers[0].attn                                 # layer 1, head 1: adjectives look for "not"
        a0.q.weight[0, 2 * ADJ] = 10.0 / ln
        a0.k.weight[0, 2 * NOT] = 10.0 / ln                      # score ADJ_i * NOT_j * 100 / sqrt(8) = 35
        a0.v.weight[0, 2 * NOT] = 1.0 / ln                       # value: NOT
        a0.o.weight[2 * NEG, 0], a0.o.weight[2 * NEG + 1, 0] = scale, -scale     # writes NEG
        f1 = model.layers[1].ffn                                 # layer 2's feed-forward: the flipped polarity
        p_, n_ = 2 * POL, 2 * NEG
        for u, (sp, sn, b, out) in enumerate([(1, -2, 0, 1), (-1, -2, 0, -1), (1, 2, -3, -1), (-1, 2, -3, 1)]):
            f1.w1.weight[u, p_], f1.w1.weight[u, n_], f1.w1.bias[u] = sp, sn, b
            f1.w2.weight[2 * FLIP, u], f1.w2.weight[2 * FLIP + 1, u] = out * scale, -out * scale
        model.out.weight[1, 2 * FLIP], model.out.weight[0, 2 * FLIP] = 10.0, -10.0
    model.eval()
    tok = Tokenizer(TokenizerConfig(lowercase=True), vocab)
    return Source(model, tok.encode, ["negative", "positive"], "planted")


__all__ = ["LensResult", "PLANTED_ADVERBS", "PLANTED_NEGATIVE", "PLANTED_POSITIVE", "PLANTED_SUBJECTS",
           "PLANTED_VERBS", "ProbeResult", "control_labels", "hf_layers", "hf_out_projection", "layer_features",
           "layer_lens", "planted_source", "planted_texts", "probe_layers", "stream_sites"]
