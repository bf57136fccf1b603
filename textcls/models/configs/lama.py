"""LAMA's config and its enrolment (the model: textcls.models.lama). No torch here."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textcls.models.configs.base import BaseConfig, param
from textcls.models.registration import declare_model

CONTEXTS = ("learned", "mean")
SCORE_NORMS = ("l2_heads", "layernorm_heads", "tanh")


@dataclass
class LAMAConfig(BaseConfig):
    embed_dim: int = param(100, "the paper: 100-d word2vec vectors trained on the corpus, fine-tuned")
    embedding_mode: str = "non-static"
    hidden_dim: int = param(50, "d: GRU hidden size per direction (H = 2d wide)")
    n_heads: int = param(10, "m: attention heads (the paper sweeps 1..20)")
    context: str = param("learned", "learned: one learned context vector (LAMA); mean: the masked mean of the "
                         "embeddings (LAMA + Ctx)", choices=("learned", "mean"))
    learn_temperature: bool = param(False, "A = softmax(f / T) with T learned (init temperature_init); off = the paper")
    temperature_init: float = param(1.0, "T at init when learn_temperature is on")
    score_norm: str = param("tanh", "the 'normalization layer across the dimension' of f: l2_heads = "
                            "tanh then unit L2 norm across heads (the reconstruction; bounds a head's weight ratio "
                            "by e^2); layernorm_heads = a LayerNorm across heads with learned gain and bias "
                            "(the other reading; unbounded); tanh = tanh only, no norm (the public PyTorch "
                            "implementation)", choices=SCORE_NORMS)

    # what a stored config that predates a field meant (checkpoint loading fills these in when absent)
    LEGACY_DEFAULTS: ClassVar[dict] = {"score_norm": "l2_heads", "temperature_init": 1.0}
    dropout: float = param(0.3, "dropout on flatten(M) before the classifier (the paper's value is not given)")


declare_model("lama", LAMAConfig, module="textcls.models.lama",
              description="LAMA (Mehta et al. 2019): BiGRU + low-rank multi-head attention, 10 heads",
              presets={"small": dict(embed_dim=16, hidden_dim=8, n_heads=4)},
              variants={"ctx": dict(context="mean"), "heads1": dict(n_heads=1), "heads20": dict(n_heads=20),
                        "temperature": dict(learn_temperature=True),
                        "layernorm": dict(score_norm="layernorm_heads"), "l2": dict(score_norm="l2_heads")})
