"""HCAN's and CAN's configs and their enrolment (the models: textcls.models.hcan). No torch here."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textcls.models.configs.base import BaseConfig, param
from textcls.models.registration import declare_model

TARGET_SCALES = ("keras", "learned", "head", "fixed")

@dataclass
class ConvAttentionConfig(BaseConfig):
    """Fields shared by HCAN and CAN; defaults are the paper's (Word2Vec 512-d embeddings, d = 512, h = 8)."""

    embed_dim: int = param(512, "word vectors (Word2Vec 512-d in the paper)")
    d_model: int = param(512, "d: width of every layer (channels of every convolution / attention)")
    n_heads: int = param(8, "h: heads (d_h = d / h = 64)")
    kernel_size: int = param(3, "convolution window (odd, \"same\" padding)")
    dropout: float = param(0.1, "dropout")
    self_attentions: int = param(2, "2: parallel branches a (ELU values) and b (tanh values); 1: branch a only")
    pooling: str = param("target", "target attention, or max: masked max-pool (Table 2)", choices=("target", "max"))
    target_value_conv: bool = param(False, "on: eq. 5, V = ELU(Conv1d(Z)); off: the reference code, V = Z")
    target_init: str = param("uniform", "the target vectors' init: uniform = U[0, 1) per head (the authors' later "
                             "reference code); normal = N(0, 1/d), unit norm (our first choice, like HCAN's "
                             "orthogonal 1 x d row)", choices=("uniform", "normal"))
    target_scale: str = param("keras", "target-attention score scale: keras = one learned scalar per level, init 1 "
                              "(Keras Attention(use_scale=True), the reference code); learned = the same, init "
                              "1/sqrt(d) (the reference code's later scaled_attention); head = fixed 1/sqrt(d_h); "
                              "fixed = target_scale_value, not learned", choices=TARGET_SCALES)
    target_scale_value: float = param(1.0, "the fixed target-attention scale (used with target_scale='fixed'; 1 = "
                                      "Keras Attention without use_scale); larger = sharper target attention")

    # what a stored config that predates a field meant (checkpoint loading fills these in when absent)
    LEGACY_DEFAULTS: ClassVar[dict] = {"target_init": "normal", "target_scale": "head", "target_scale_value": 1.0}


@dataclass
class HCANConfig(ConvAttentionConfig):
    max_sentences: int = param(100, 'rows of the learned sentence-position table')
    max_words: int = param(100, 'rows of the learned word-position table (words per sentence)')


@dataclass
class CANConfig(ConvAttentionConfig):
    max_positions: int = param(512, 'rows of the learned token-position table (tokenizer max_len is capped at it)')

    @property
    def position_limit(self) -> int | None:
        return self.max_positions


_VARIANTS = {
    "one_self_attention": dict(self_attentions=1),
    "maxpool": dict(pooling="max"),
    "one_self_attention_maxpool": dict(self_attentions=1, pooling="max"),
    "eq5_value_conv": dict(target_value_conv=True),
    "normal_target": dict(target_init="normal", target_scale="head"),   # our first choice (checkpoints before #31)
    "scaled_target": dict(target_scale="learned"),                      # the later reference: scale init 1/sqrt(d)
}
_SMALL = dict(embed_dim=16, d_model=16, n_heads=2)

declare_model("hcan", HCANConfig, module="textcls.models.hcan", input_kind="sentences",
              description="Gao et al. (2018) hierarchical convolutional attention network, d 512, 8 heads",
              presets={"small": dict(_SMALL)}, variants=dict(_VARIANTS))
declare_model("can", CANConfig, module="textcls.models.hcan", input_kind="tokens",
              description="Gao et al. (2018) flat convolutional attention network (HCAN's word level only)",
              presets={"small": dict(_SMALL)}, variants=dict(_VARIANTS))
