"""AGCNN: Attention-Gated CNN with NLReLU (Liu et al., "An attention-gated convolutional neural network for
sentence classification"; official TensorFlow demo: fabyangliu/AGCNN-Sentence-Classification).

Per window size h (paper: 1..5, 100 filters each):
  C^h = f(Conv(E; h) + b)                 "valid" conv, window j covers tokens j..j+h-1; windows that run past
                                          the sentence's end are zeroed AFTER f (f(b) > 0 there for NLReLU).
Per gate window k (paper: 1, 3, 5) and gate index g = 1..G (paper G = 1; the demo code uses 2):
  D^{h,k,g} = f(v * C^h + b2)             v: ONE temporal kernel of size k shared by all filters of C^h (a
                                          depthwise conv with tied weights), b2 a scalar; "same" zero padding
                                          with floor((k-1)/2) before and ceil((k-1)/2) after (Theorem 1), the
                                          zeros past the sentence's end acting as the right padding. The gate
                                          activation is f itself (NLReLU / SELU / ...), not a sigmoid.
  m^{h,k,g} = C^h * D^{h,k,g}             elementwise; masked max over time -> n_filters features.
All m-features are concatenated (h, then k, then g) -> dropout -> Linear. The ungated C^h never reaches the
classifier. Inputs shorter than max(h) are right-padded (masked) to max(h) tokens.

Choices (written here as the config does not enforce them at forward time):
  activation       "nlrelu" (default, the paper's), "selu", "relu", "elu", "leaky_relu", "softplus", "sigmoid"
                   - the Table 5 set that base.ACTIVATIONS has. f is looked up from `config.activation` on every
                   forward, so a deep-copied model whose config.activation was changed computes with the new f
                   (any name in base.ACTIVATIONS is accepted there, e.g. "identity" for a lab demo).
  embedding_mode   rand / static / non-static (default) / multichannel with `channels` = 2 or 3 (BaseConfig);
                   the first conv spans all channels.
  gate_init        "demo" (default): gate kernels ~ truncated N(0, 0.1), gate bias 0.1, as the official code;
                   "he": He-normal gate kernels, as the paper's text says for "all convolutional layers".

Deviations from docs/models.md / the paper (reasons):
  - PReLU of Table 5 is not offered: it has a learned slope, and base.ACTIVATIONS holds only fixed functions.
  - Initialisation: the first conv is He-normal (paper) with bias 0.1 (demo code), the Linear Xavier (paper) with
    bias 0. Gate kernels default to the demo's small init: with He init and NLReLU/ReLU, a k = 1 gate whose single
    weight starts negative (half of them) is 0, with no gradient, at 80-97% of the positions where C^h > 0
    (measured at paper size, 50-d embeddings); the demo init leaves such gates mostly open.

Maps (token axis = window start, exactly the input length L, zero past each sentence's valid windows; suffix
`_g{g}` only when n_gates > 1):
  conv_pre_h{h}           (B, filter, token)  before f            conv_h{h}   (B, filter, token)  C^h after f
  gate_h{h}_k{k}[_g{g}]   (B, filter, token)  D, kind "gate"      gated_h{h}_k{k}[_g{g}]  (B, filter, token)  m
  argmax_h{h}_k{k}[_g{g}] (B, filter)         window start the max-pool picked on m (-> tokens j..j+h-1)
Fig. 4 of the paper is conv_pre_h1, conv_h1, gate_h1_k1, gate_h1_k3, gated_h1_k1, gated_h1_k3 (variant "fig4").
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from textcls.models.outputs import InterventionSpec, MapSpec
from textcls.models.base import Probe, TextClassifier
from textcls.models.layers import (ACTIVATIONS, WordEmbedding, make_activation, masked_max, rezero,
    to_length, window_mask)
from textcls.models.configs.agcnn import AGCNNConfig
from textcls.models.registration import model_class

def same_padding(k: int) -> tuple[int, int]:
    """Theorem 1: k - 1 zeros in all, floor((k-1)/2) before and ceil((k-1)/2) after."""
    return (k - 1) // 2, k // 2


def _gate(conv: nn.Conv1d, x: torch.Tensor, L: int) -> torch.Tensor:
    """conv(x) for a one-input-channel gate convolution, as k shifted multiply-adds: the same function as
    Conv1d, 3-15x faster on (B*F, 1, L) rows than the library convolution (which is slow for one channel)."""
    w, k = conv.weight[:, 0], conv.weight.shape[-1]                     # (G, k)
    z = conv.bias[None, :, None] + w[None, :, 0, None] * x[:, :, 0:L]
    for j in range(1, k):
        z = z + w[None, :, j, None] * x[:, :, j:j + L]
    return z


def _suffix(g: int, n_gates: int) -> str:
    return f"_g{g}" if n_gates > 1 else ""


@model_class('agcnn')
class AGCNN(TextClassifier):
    def __init__(self, config: AGCNNConfig, embeddings=None):
        super().__init__(config)
        c = config
        self.embed = WordEmbedding(c.vocab_size, c.embed_dim, c.embedding_mode, c.channels, embeddings, c.pad_id)
        self.convs = nn.ModuleList(nn.Conv1d(self.embed.out_dim, c.n_filters, h) for h in c.windows)
        # one Conv1d(1 -> G, k) per (h, k): output channel g is gate g's own tied kernel v (G, 1, k), bias (G,)
        self.gates = nn.ModuleDict({f"h{h}_k{k}": nn.Conv1d(1, c.n_gates, k)
                                    for h in c.windows for k in c.gate_windows})
        self.dropout = nn.Dropout(c.dropout)
        self.fc = nn.Linear(self.n_features, c.num_labels)
        self._init_weights()

    @property
    def n_features(self) -> int:
        c = self.config
        return c.n_filters * len(c.windows) * len(c.gate_windows) * c.n_gates

    @property
    def act_name(self) -> str:
        """The activation f, read from the config on every forward (interventions may change it on a copy)."""
        return self.config.activation

    def _init_weights(self) -> None:
        for conv in self.convs:
            nn.init.kaiming_normal_(conv.weight, nonlinearity="relu")   # He (paper)
            nn.init.constant_(conv.bias, 0.1)                           # demo code
        for gate in self.gates.values():
            if self.config.gate_init == "he":
                nn.init.kaiming_normal_(gate.weight, nonlinearity="relu")
            else:
                nn.init.trunc_normal_(gate.weight, std=0.1, a=-0.2, b=0.2)  # demo: truncated_normal(stddev=0.1)
            nn.init.constant_(gate.bias, 0.1)
        nn.init.xavier_uniform_(self.fc.weight)                         # Xavier (paper)
        nn.init.zeros_(self.fc.bias)

    def gate_kernel(self, h: int, k: int, g: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
        """(v (k,), b2 scalar) of gate g (1-based) on window h with gate window k."""
        conv = self.gates[f"h{h}_k{k}"]
        return conv.weight[g - 1, 0], conv.bias[g - 1]

    def interventions(self) -> InterventionSpec:
        c = self.config
        return InterventionSpec(filters=self.filter_maps(c.n_filters), activation_field="activation",
                                activations=tuple(ACTIVATIONS))

    def map_specs(self) -> list[MapSpec]:
        c = self.config
        specs = []
        for h in c.windows:
            specs += [
                MapSpec(f"conv_pre_h{h}", ("filter", "token"), "feature_map",
                        f"window-{h} convolution before {c.activation}; token = first word of the {h}-gram"),
                MapSpec(f"conv_h{h}", ("filter", "token"), "activation",
                        f"C^{h}: window-{h} feature map after {c.activation}"),
            ]
            for k in c.gate_windows:
                for g in range(1, c.n_gates + 1):
                    s = _suffix(g, c.n_gates)
                    specs += [
                        MapSpec(f"gate_h{h}_k{k}{s}", ("filter", "token"), "gate",
                                f"attention gate D = {c.activation}(v * C^{h} + b), one width-{k} kernel for all "
                                f"filters"),
                        MapSpec(f"gated_h{h}_k{k}{s}", ("filter", "token"), "feature_map",
                                f"gated map m = C^{h} * D (h={h}, k={k}); max-pooled into the classifier"),
                        MapSpec(f"argmax_h{h}_k{k}{s}", ("filter",), "feature_map",
                                f"start of the {h}-gram each filter's max-pool picked on the gated map",
                                values="index"),
                    ]
        return specs

    def _forward(self, token_ids, mask, probe: Probe):
        c = self.config
        act = make_activation(self.act_name)
        B, L = token_ids.shape
        min_len = max(c.windows)
        if L < min_len:                                                 # too short for the widest window
            token_ids = F.pad(token_ids, (0, min_len - L), value=c.pad_id)
            mask = F.pad(mask, (0, min_len - L), value=False)
        x = rezero(self.embed(token_ids), mask).transpose(1, 2)        # (B, E, L')
        pooled = []
        for h, conv in zip(c.windows, self.convs):
            wmask = to_length(window_mask(mask, h), L)                  # (B, L) valid window starts
            wm = wmask.unsqueeze(1).to(x.dtype)                         # (B, 1, L)
            pre = to_length(conv(x), L) * wm                            # (B, F, L) windows past the end zeroed
            pre = probe(f"conv_pre_h{h}", pre, mask=wmask)
            C = probe(f"conv_h{h}", act(pre) * wm, mask=wmask)          # (B, F, L) C^h, zero past the end
            n_f = C.shape[1]
            flat = C.reshape(B * n_f, 1, L)                             # (B*F, 1, L) every filter row alike
            for k in c.gate_windows:
                gate_conv = self.gates[f"h{h}_k{k}"]
                z = _gate(gate_conv, F.pad(flat, same_padding(k)), L)  # (B*F, G, L) tied depthwise conv
                D_all = act(z).reshape(B, n_f, c.n_gates, L) * wm.unsqueeze(2)  # (B, F, G, L)
                for g in range(1, c.n_gates + 1):
                    s = _suffix(g, c.n_gates)
                    D = probe(f"gate_h{h}_k{k}{s}", D_all[:, :, g - 1], mask=wmask)  # (B, F, L)
                    m = probe(f"gated_h{h}_k{k}{s}", C * D, mask=wmask)              # (B, F, L)
                    values, index = masked_max(m, wmask.unsqueeze(1), dim=-1)       # (B, F)
                    probe(f"argmax_h{h}_k{k}{s}", index)
                    pooled.append(values)
        features = torch.cat(pooled, dim=1)                             # (B, F * |h| * |k| * G)
        return self.fc(self.dropout(features)), features
