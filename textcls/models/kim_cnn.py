"""Kim CNN (Kim 2014), the baseline of the AGCNN paper and its Fig. 3 (feature maps before/after ReLU).

Embedding -> for each window h: Conv1d(E -> n_filters, h) -> ReLU -> masked max over time -> concat ->
dropout -> Linear. Window j covers tokens j..j+h-1 ("valid" convolution). Inputs shorter than the largest
window are right-padded (with pads, masked) to that length, so every window size has at least one window.

Maps, per window size h (token axis = window start, cropped/padded to the input length L; windows that run
past the sentence's end are zeroed):
  conv_pre_h{h}  (B, filter, token)  before ReLU      conv_h{h}  (B, filter, token)  after ReLU
  argmax_h{h}    (B, filter)          the window start the max-pool picked (-> n-gram tokens j..j+h-1)
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from textcls.models.outputs import InterventionSpec, MapSpec
from textcls.models.base import Probe, TextClassifier
from textcls.models.layers import WordEmbedding, masked_max, rezero, to_length, window_mask
from textcls.models.configs.kim_cnn import KimCNNConfig
from textcls.models.registration import model_class


@model_class('kim_cnn')
class KimCNN(TextClassifier):
    def __init__(self, config: KimCNNConfig, embeddings=None):
        super().__init__(config)
        c = config
        self.embed = WordEmbedding(c.vocab_size, c.embed_dim, c.embedding_mode, c.channels, embeddings, c.pad_id)
        self.convs = nn.ModuleList(nn.Conv1d(self.embed.out_dim, c.n_filters, h) for h in c.windows)
        self.dropout = nn.Dropout(c.dropout)
        self.fc = nn.Linear(c.n_filters * len(c.windows), c.num_labels)

    def interventions(self) -> InterventionSpec:
        c = self.config
        return InterventionSpec(filters=self.filter_maps(c.n_filters))

    def map_specs(self) -> list[MapSpec]:
        specs = []
        for h in self.config.windows:
            specs += [
                MapSpec(f"conv_pre_h{h}", ("filter", "token"), "feature_map",
                        f"window-{h} convolution before ReLU; token = first word of the {h}-gram"),
                MapSpec(f"conv_h{h}", ("filter", "token"), "activation", f"window-{h} feature map after ReLU"),
                MapSpec(f"argmax_h{h}", ("filter",), "feature_map",
                        f"start of the {h}-gram each filter's max-pool picked", values="index"),
            ]
        return specs

    def _forward(self, token_ids, mask, probe: Probe):
        B, L = token_ids.shape
        min_len = max(self.config.windows)
        if L < min_len:                                               # too short for the widest window
            token_ids = F.pad(token_ids, (0, min_len - L), value=self.config.pad_id)
            mask = F.pad(mask, (0, min_len - L), value=False)
        x = rezero(self.embed(token_ids), mask).transpose(1, 2)      # (B, E, L')
        pooled = []
        for h, conv in zip(self.config.windows, self.convs):
            wmask = window_mask(mask, h)                              # (B, L'-h+1)
            wmask = to_length(wmask, L)                               # (B, L) window starts past L are all pads
            pre = to_length(conv(x), L) * wmask.unsqueeze(1)          # (B, F, L) windows past the end zeroed
            pre = probe(f"conv_pre_h{h}", pre)
            act = probe(f"conv_h{h}", F.relu(pre))                    # (B, F, L)
            values, index = masked_max(act, wmask.unsqueeze(1), dim=-1)  # (B, F)
            probe(f"argmax_h{h}", index)
            pooled.append(values)
        features = torch.cat(pooled, dim=1)                           # (B, F * len(windows))
        return self.fc(self.dropout(features)), features
