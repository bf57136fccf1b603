"""The Transformer classifier's config and its enrolment (the model: textcls.models.transformer). No torch here."""
from __future__ import annotations

from dataclasses import dataclass

from textcls.models.configs.base import ACTIVATION_NAMES, param
from textcls.models.configs.relation import RelationConfig
from textcls.models.registration import declare_model

POOLINGS = ("cls", "max", "mean", "global", "decoder")


@dataclass
class TransformerConfig(RelationConfig):
    embed_dim: int = param(512, "word-vector size")
    d_model: int = param(512, "d: width of every layer")
    n_heads: int = param(8, "attention heads")
    d_ff: int = param(2048, "feed-forward width")
    n_layers: int = param(6, "encoder layers")
    dropout: float = param(0.1, "dropout (the paper also tries 0.7)")
    attention_dropout: float = param(0.1, "dropout on the attention weights")
    ffn_activation: str = param("relu", "feed-forward activation", choices=ACTIVATION_NAMES)
    pre_ln: bool = param(True, "layer norm before each sub-layer (off: after)")
    scale_embedding: bool = param(True, "multiply the embeddings by sqrt(d)")
    pooling: str = param("cls", "how the text vector is read off the last layer", choices=POOLINGS)
    decoder_layers: int = param(6, "decoder blocks when pooling is decoder (the paper: 6)")
    local_window: int = param(0, "0: full attention; w > 0: attention within chunks of w tokens")
    local_shift: bool = param(False, "shift the chunk grid by ceil(w/2) on odd layers")
    init_convs: int = param(0, "k > 0: Conv1d then k x [Conv1d + ReLU] before the layers (the paper: 6)")
    # pooling="global": ACT's global attention (layers.GlobalAttention)
    d_attn: int = param(200, "global pooling: width of the attention scores")
    d_pos: int = param(60, "global pooling: position-embedding size")
    max_positions: int = param(500, "global pooling: rows of the position table")
    global_rep: bool = param(True, "global pooling: use the o.g term")
    position_embed: bool = param(True, "global pooling: use the W_p p_j term")
    fc_dim: int = param(0, "> 0 adds z = act(Linear(d -> fc_dim)(Dropout(pooled))) before the output (ACT's: 100)")
    fc_activation: str = param("gelu", "activation of that hidden layer", choices=ACTIVATION_NAMES)
    center_loss_weight: float = param(0.0, "> 0: ACT's center loss on the features")
    center_loss_rate: float = param(0.1, "the centres' own learning rate (center loss)")

    @property
    def position_limit(self) -> int | None:
        """Only the global pooling has a learned position table; the encoder's positions are sinusoidal."""
        return self.max_positions if self.pooling == "global" and self.position_embed else None


_ACT_BASELINE = dict(n_layers=3, n_heads=6, d_model=300, embed_dim=300, d_ff=1200, pooling="global",
                     d_attn=200, d_pos=60, max_positions=500, fc_dim=100, fc_activation="gelu",
                     ffn_activation="gelu", dropout=0.4, center_loss_weight=0.001)

declare_model(
    "transformer", TransformerConfig, module="textcls.models.transformer",
    description="Transformer encoder classifier (Matton): cls / max / mean / global / decoder pooling, "
                "local attention, character-level initial convolutions",
    presets={"small": dict(embed_dim=16, d_model=16, n_heads=2, d_ff=32, n_layers=2, decoder_layers=1,
                           d_attn=8, d_pos=4, max_positions=64),
             # character level: "we divide all embedding dimensions by 4" (Sec. 5.1)
             "char": dict(embed_dim=128, d_model=128, d_ff=512),
             # the ACT paper's Transformer baseline (Table 5): 3 layers, h = 6, d = 300, d_ff = 1200,
             # ACT's global attention and classifier, GELU, dropout 0.4, center loss
             "act_baseline": dict(_ACT_BASELINE),
             # relation classification: the ACT baseline with ACT's relation settings (one layer, the same two
             # 30-d relative-position embeddings in the global attention; models/relation.py)
             "relation": dict(_ACT_BASELINE, n_layers=1, relative_positions=True)},
    variants={"max": dict(pooling="max"), "mean": dict(pooling="mean"), "global": dict(pooling="global"),
              "decoder": dict(pooling="decoder"),
              "local": dict(local_window=50), "local_shift": dict(local_window=50, local_shift=True),
              "convs": dict(init_convs=6), "local_convs": dict(local_window=50, init_convs=6),
              "dropout07": dict(dropout=0.7), "post_ln": dict(pre_ln=False),
              "relative_positions": dict(pooling="global", relative_positions=True)})
