"""AGCNN's config and its enrolment (the model: textcls.models.agcnn). No torch here."""
from __future__ import annotations

from dataclasses import dataclass

from textcls.models.configs.base import EMBEDDING_MODES, BaseConfig, param
from textcls.models.registration import declare_model

# The activations of the paper's Table 5 that layers.ACTIVATIONS provides (PReLU is learned; see docstring).
ACTIVATION_CHOICES = ("nlrelu", "selu", "relu", "elu", "leaky_relu", "softplus", "sigmoid")
GATE_INITS = ("demo", "he")


@dataclass
class AGCNNConfig(BaseConfig):
    windows: tuple[int, ...] = param((1, 2, 3, 4, 5), "h: first-convolution window sizes")
    n_filters: int = param(100, "filters per window size")
    gate_windows: tuple[int, ...] = param((1, 3, 5), "k: gate kernel sizes")
    n_gates: int = param(1, "G: gates per (h, k), each with its own kernel")
    activation: str = param("nlrelu", "f, used by the convolution and by the gates (Table 5 compares them)",
                            choices=ACTIVATION_CHOICES)
    dropout: float = param(0.5, "dropout on the penultimate layer only")
    gate_init: str = param("demo", "demo: the paper's demonstration init; he: He-normal", choices=GATE_INITS)

    def __post_init__(self) -> None:
        self.windows = _positive_ints("windows", self.windows)
        self.gate_windows = _positive_ints("gate_windows", self.gate_windows)
        for name in ("n_filters", "n_gates"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"AGCNNConfig.{name} must be a positive integer, got {v!r}")
        if self.activation not in ACTIVATION_CHOICES:
            raise ValueError(f"AGCNNConfig.activation {self.activation!r} is not one of {ACTIVATION_CHOICES}")
        if self.gate_init not in GATE_INITS:
            raise ValueError(f"AGCNNConfig.gate_init {self.gate_init!r} is not one of {GATE_INITS}")
        if not 0.0 <= float(self.dropout) < 1.0:
            raise ValueError(f"AGCNNConfig.dropout must be in [0, 1), got {self.dropout!r}")
        if self.embedding_mode not in EMBEDDING_MODES:
            raise ValueError(f"AGCNNConfig.embedding_mode {self.embedding_mode!r} is not one of {EMBEDDING_MODES}")
        if self.embedding_mode == "multichannel" and self.channels < 2:
            raise ValueError(f"AGCNNConfig.channels must be >= 2 for multichannel, got {self.channels!r}")


def _positive_ints(name: str, values) -> tuple[int, ...]:
    """A non-empty tuple of distinct positive ints (lists from a JSON config are accepted)."""
    try:
        out = tuple(values)
    except TypeError:
        raise ValueError(f"AGCNNConfig.{name} must be a sequence of positive integers, got {values!r}") from None
    if not out or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in out):
        raise ValueError(f"AGCNNConfig.{name} must be a non-empty sequence of positive integers, got {values!r}")
    if len(set(out)) != len(out):
        raise ValueError(f"AGCNNConfig.{name} has repeated sizes: {values!r}")
    return out


declare_model(
    "agcnn", AGCNNConfig, module="textcls.models.agcnn",
    description="Liu et al. AGCNN: conv h=1..5 x 100, tied gate convs k=1/3/5, m = C * f(v*C + b), NLReLU",
    presets={"small": dict(embed_dim=16, n_filters=8, windows=(1, 2, 3), gate_windows=(1, 3, 5))},
    variants={
        "selu": dict(activation="selu"), "relu": dict(activation="relu"),
        "elu": dict(activation="elu"), "leaky_relu": dict(activation="leaky_relu"),
        "softplus": dict(activation="softplus"), "sigmoid": dict(activation="sigmoid"),
        "rand": dict(embedding_mode="rand"), "static": dict(embedding_mode="static"),
        "multichannel": dict(embedding_mode="multichannel", channels=2),
        "multichannel3": dict(embedding_mode="multichannel", channels=3),
        "gates2": dict(n_gates=2),                    # the demo code's two gates per (h, k)
        "single_gate_window": dict(gate_windows=(3,)),
        "fig4": dict(windows=(1,), gate_windows=(1, 3), embedding_mode="static"),
    })
