"""What the benchmarks run: the model rows (BenchModel, default_models), building one at its paper
configuration with random weights, random inputs without padding, parameter counts, the example sentence."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn as nn

from textcls.runtime.limits import current
from textcls.models.registry import create_model, get_entry, list_models

EXAMPLE_SENTENCE = ("The food was great and the staff were friendly, but the service was painfully slow "
                    "and I would not come back.")


@dataclass
class BenchModel:
    """One row of the per-model table: a registered model at a preset/variant (None = the paper's config)."""
    label: str
    model: str
    preset: str | None = None
    variant: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)


def default_models(preset: str | None = None) -> list[BenchModel]:
    """Every registered model at its paper configuration, plus the ACT paper's Transformer baseline and
    LAMA + Ctx (the comparisons the papers make). `preset` (e.g. "small", for tests) is applied to every row
    whose model has it, except the baseline row, whose preset is its configuration."""
    rows = [BenchModel(name, name) for name in list_models()]
    extra = [("transformer", "act_baseline", None, "transformer (ACT baseline)"),
             ("lama", None, "ctx", "lama + ctx")]
    for name, own_preset, variant, label in extra:
        entry = get_entry(name)
        if (own_preset is None or own_preset in entry.presets) and (variant is None or variant in entry.variants):
            rows.append(BenchModel(label, name, own_preset, variant))
    if preset is not None:
        for r in rows:
            if r.preset is None and preset in get_entry(r.model).presets:
                r.preset = preset
    return rows


def make_inputs(input_kind: str, batch_size: int, seq_len: int, vocab_size: int, *, words_per_sentence: int = 14,
                seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Random ids (no padding): (B, L) for "tokens" models, (B, S, W) with S*W >= L for "sentences" models
    (hierarchical models such as HCAN get the same tokens as sentences of `words_per_sentence` words)."""
    if batch_size < 1 or seq_len < 1:
        raise ValueError(f"batch_size and seq_len must be >= 1, got {batch_size}, {seq_len}")
    g = torch.Generator().manual_seed(seed)
    low = 2 if vocab_size > 2 else 0                                   # skip pad (0) and unk (1)
    if input_kind == "sentences":
        W = max(1, min(words_per_sentence, seq_len))
        S = math.ceil(seq_len / W)
        ids = torch.randint(low, vocab_size, (batch_size, S, W), generator=g)
        mask = torch.ones(batch_size, S, W, dtype=torch.bool)
        extra = S * W - seq_len                                         # the last sentence is shorter
        if extra:
            mask[:, -1, W - extra:] = False
            ids[:, -1, W - extra:] = 0
        return ids, mask
    ids = torch.randint(low, vocab_size, (batch_size, seq_len), generator=g)
    return ids, torch.ones(batch_size, seq_len, dtype=torch.bool)


BENCH_MAX_PARAMETERS = 100_000_000   # the largest paper configuration benched with random weights (~60 M)


def build(spec: BenchModel, *, vocab_size: int = 20000, num_labels: int = 4, seed: int = 0) -> nn.Module:
    """The row's model with random weights (seeded): its paper configuration unless a preset/variant is set."""
    torch.manual_seed(seed)
    limits = current()          # the papers' sizes (Transformer ~29 M parameters) are benched, never trained here
    limits = dataclasses.replace(limits, max_parameters=max(limits.max_parameters, BENCH_MAX_PARAMETERS))
    return create_model(spec.model, vocab_size=vocab_size, num_labels=num_labels, preset=spec.preset,
                        variant=spec.variant, limits=limits, **dict(spec.overrides))


def parameter_counts(model: nn.Module) -> dict[str, int]:
    """Total, without embeddings (the models' own rule: `model.num_parameters(include_embeddings=...)`, the
    embedding tables being the only difference), embeddings, trainable."""
    total = model.num_parameters(include_embeddings=True)
    body = model.num_parameters(include_embeddings=False)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return {"total": total, "without_embeddings": body, "embeddings": total - body, "trainable": trainable}
