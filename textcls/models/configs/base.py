"""What every model config has: `param` (a field with the help and choices the Train page's form shows),
`BaseConfig` (the fields every family shares) and the names the families choose from (`EMBEDDING_MODES`,
`ACTIVATION_NAMES`: textcls.models.layers implements them). No torch here."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textcls.data.unknown import PAD_ID

EMBEDDING_MODES = ("rand", "static", "non-static", "multichannel")
# the activations the papers compare (AGCNN Table 5) and the Transformer's; layers.ACTIVATIONS, in this order
ACTIVATION_NAMES = ("nlrelu", "relu", "selu", "elu", "leaky_relu", "tanh", "sigmoid", "gelu", "softplus", "identity")


def param(default: Any, help: str, *, choices: tuple[str, ...] = ()) -> Any:
    """A config field with the help and options a generated form shows (`dataclasses.field` metadata, as Hugging
    Face's TrainingArguments does); the default is the paper's value."""
    return field(default=default, metadata={"help": help, "choices": tuple(choices)})


@dataclass
class BaseConfig:
    """Fields every model config has. Subclasses add their own with the paper's values as defaults."""

    vocab_size: int = 20000
    num_labels: int = 2
    embed_dim: int = param(300, "word-vector size")
    embedding_mode: str = param("non-static", "rand: random, trained; static: pretrained, frozen; non-static: "
                                "pretrained, fine-tuned; multichannel: `channels` copies, the first fine-tuned, the "
                                "others frozen (the first conv spans them)", choices=EMBEDDING_MODES)
    channels: int = param(2, "embedding copies in the multichannel mode")
    pad_id: int = PAD_ID

    @property
    def position_limit(self) -> int | None:
        """The longest flat input the model can read (the rows of a learned position table), or None. Tokenizers
        are capped at it when trained (pipeline.tokenizer_config_for) and when loaded (checkpoint)."""
        return None
