"""ACT's config and its enrolment (the model: textcls.models.act). No torch here."""
from __future__ import annotations

from dataclasses import dataclass

from textcls.models.configs.base import param
from textcls.models.configs.relation import RelationConfig
from textcls.models.registration import declare_model

CONV_MODES = ("attentive", "plain")
CONV_PADDINGS = ("right", "center")


@dataclass
class ACTConfig(RelationConfig):
    embed_dim: int = param(300, "word vectors (300-d GloVe in the paper)")
    d_model: int = param(300, "d_w: width of every layer")
    n_heads: int = param(6, "h: attentive-convolution heads")
    n_filters: int = param(100, "m: filters per head")
    kernel_size: int = param(3, "n: convolution window")
    n_layers: int = param(3, "N: attentive-convolution layers")
    d_attn: int = param(200, "d_a: width of the global attention's scores")
    d_pos: int = param(60, "d_p: position-embedding size of the global attention")
    max_positions: int = param(500, "P: rows of the position table (longest input)")
    fc_dim: int = param(100, "width of the hidden layer before the output")
    dropout: float = param(0.4, "dropout before the classifier")
    conv_mode: str = param("attentive", "attentive: the paper; plain: ablation \"- attentive conv.\" (feature maps "
                           "used directly)", choices=CONV_MODES)
    conv_padding: str = param("right", "right: window j = tokens j..j+n-1; center: centred on token j",
                              choices=CONV_PADDINGS)
    global_rep: bool = param(True, "off: ablation \"- global rep.\" (no o.g term in the global attention)")
    position_embed: bool = param(True, "off: ablation \"- position embed.\" (no W_p p_j term)")
    center_loss_weight: float = param(0.001, "weight of the center loss (Wen et al. 2016); 0 = off")
    center_loss_rate: float = param(0.1, "alpha of Wen et al.: the centres' own learning rate")

    @property
    def position_limit(self) -> int | None:
        return self.max_positions if self.position_embed else None


RELATION_SETTINGS = dict(n_layers=1, n_heads=6, n_filters=40, kernel_size=3, relative_positions=True, d_pos=60)

declare_model(
    "act", ACTConfig, module="textcls.models.act",
    description="ACT (Li et al. 2021): attentive convolution heads, global attention, center loss",
    presets={"small": dict(embed_dim=16, d_model=12, n_heads=2, n_filters=6, n_layers=2, d_attn=8, d_pos=4,
                           max_positions=64, fc_dim=8, dropout=0.1),
             # the paper's relation-extraction settings (Sec. 4): one layer, h = 6, m = 40, n = 3, and two
             # relative-position embeddings of 30 dimensions, concatenated, in the global attention
             "relation": dict(RELATION_SETTINGS)},
    variants={"no_attentive_conv": dict(conv_mode="plain"), "single_head": dict(n_heads=1),
              "no_global_rep": dict(global_rep=False), "no_position": dict(position_embed=False),
              "relative_positions": dict(relative_positions=True)})
