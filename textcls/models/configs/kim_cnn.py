"""Kim CNN's config and its enrolment (the model: textcls.models.kim_cnn). No torch here."""
from __future__ import annotations

from dataclasses import dataclass

from textcls.models.configs.base import BaseConfig, param
from textcls.models.registration import declare_model


@dataclass
class KimCNNConfig(BaseConfig):
    windows: tuple[int, ...] = param((3, 4, 5), "h: convolution window sizes")
    n_filters: int = param(100, "filters per window size")
    dropout: float = param(0.5, "dropout on the penultimate layer")


declare_model("kim_cnn", KimCNNConfig, module="textcls.models.kim_cnn",
              description="Kim (2014) CNN: windows 3/4/5 x 100 filters, max-pool",
              presets={"small": dict(embed_dim=16, n_filters=8, windows=(2, 3))},
              variants={"rand": dict(embedding_mode="rand"), "static": dict(embedding_mode="static"),
                        "multichannel": dict(embedding_mode="multichannel")})
