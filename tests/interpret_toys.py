"""Tiny hand-made models and probability functions whose explanations can be computed by hand
(used by the tests/test_interpret_*.py files)."""
import math

import torch
import torch.nn as nn

from textcls.models.base import BaseConfig, TextClassifier
from textcls.models.layers import WordEmbedding, masked_softmax, rezero
from textcls.models.outputs import MapSpec
from textcls.data.text import PAD, UNK, Tokenizer, TokenizerConfig, Vocab

# word ids: 0 pad, 1 unk, then these
WORDS = [PAD, UNK, "good", "bad", "the", "movie", "very", "not", "a", "plot"]
ID = {w: i for i, w in enumerate(WORDS)}


class ToyLinear(TextClassifier):
    """logit_1 = sum_t w . e_t, logit_0 = 0: IG with a zero baseline is exactly w . e_t per token."""

    def __init__(self, vocab=len(WORDS), dim=3, seed=0):
        super().__init__(BaseConfig(vocab_size=vocab, num_labels=2, embed_dim=dim, embedding_mode="rand"))
        g = torch.Generator().manual_seed(seed)
        self.embed = WordEmbedding(vocab, dim, "rand")
        with torch.no_grad():
            self.embed.tables[0].weight.copy_(torch.randn(vocab, dim, generator=g))
            self.embed.tables[0].weight[0] = 0  # pad row zero: the pad and zero baselines coincide
        self.w = nn.Linear(dim, 1, bias=False)
        with torch.no_grad():
            self.w.weight.copy_(torch.randn(1, dim, generator=g))

    def map_specs(self):
        return [MapSpec("token_logit", ("token",), "feature_map", "w . e_t")]

    def _forward(self, ids, mask, probe):
        e = rezero(self.embed(ids), mask)                       # (B, L, E)
        s = probe("token_logit", self.w(e).squeeze(-1) * mask)  # (B, L)
        logit = s.sum(1)
        return torch.stack([torch.zeros_like(logit), logit], 1), None


class ToyAttention(TextClassifier):
    """Embedding dim 2: column 0 an attention score, column 1 a value. alpha = masked softmax(score),
    logit_1 = sum_t alpha_t value_t, logit_0 = 0."""

    SCORES = {"good": 2.0, "bad": 2.0, "not": 1.0}   # others 0
    VALUES = {"good": 3.0, "bad": -3.0}               # others 0

    def __init__(self):
        V = len(WORDS)
        super().__init__(BaseConfig(vocab_size=V, num_labels=2, embed_dim=2, embedding_mode="rand"))
        self.embed = WordEmbedding(V, 2, "rand")
        w = torch.zeros(V, 2)
        for word, s in self.SCORES.items():
            w[ID[word], 0] = s
        for word, v in self.VALUES.items():
            w[ID[word], 1] = v
        with torch.no_grad():
            self.embed.tables[0].weight.copy_(w)

    def map_specs(self):
        return [MapSpec("alpha", ("token",), "attention", "softmax of the score column")]

    def _forward(self, ids, mask, probe):
        e = self.embed(ids)                                                    # (B, L, 2)
        alpha = probe("alpha", masked_softmax(e[..., 0], mask), mask=mask)     # (B, L)
        logit = (alpha * e[..., 1]).sum(1)
        return torch.stack([torch.zeros_like(logit), logit], 1), None


def ids_of(*words):
    return torch.tensor([ID[w] for w in words])


def counting_probs(ids, mask):
    """A fixed probability function: p1 = 0.5 + 0.1 * #good - 0.1 * #bad (pads and replaced ids count nothing)."""
    m = mask.bool()
    good = ((ids == ID["good"]) & m).flatten(1).sum(1).double()
    bad = ((ids == ID["bad"]) & m).flatten(1).sum(1).double()
    p1 = (0.5 + 0.1 * good - 0.1 * bad).clamp(0, 1)
    return torch.stack([1 - p1, p1], 1)


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


def toy_tokenizer(hierarchical=False):
    return Tokenizer(TokenizerConfig(hierarchical=hierarchical), Vocab(WORDS))
