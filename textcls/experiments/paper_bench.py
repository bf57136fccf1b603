"""The papers' size and speed figures measured on our code: ACT Table 5 (ACT vs its Transformer baseline) and
LAMA Fig. 4 (attention-layer parameters vs heads, with the SAN and Transformer attention modules it compares)."""
from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.nn as nn

from textcls.models.lama import attention_parameter_count
from textcls.models.layers import masked_softmax
from textcls.models.registry import create_model
from textcls.experiments.measure import time_alternating
from textcls.experiments.papers import ACT_T5_PAPER, ACT_T5_PAPER_PARAMETER_RATIO, ACT_T5_PAPER_RATIO
from textcls.experiments.specs import BenchModel, build, make_inputs


# ---------------------------------------------------------------- ACT Table 5


def act_table5(*, seq_len: int = 56, batch_size: int = 100, warmup: int = 1, repeats: int = 5,
               vocab_size: int = 20000, num_labels: int = 5, seed: int = 0) -> dict[str, Any]:
    """ACT vs the ACT paper's Transformer baseline at the paper's configuration (d_w 300, 6 heads, 3 layers):
    parameters without embeddings and seconds per batch of `batch_size`, random weights, timed alternately."""
    specs = {"act": BenchModel("ACT", "act"),
             "transformer": BenchModel("Transformer (ACT baseline)", "transformer", preset="act_baseline")}
    models = {k: build(s, vocab_size=vocab_size, num_labels=num_labels, seed=seed).eval() for k, s in specs.items()}
    ids, mask = make_inputs("tokens", batch_size, seq_len, vocab_size, seed=seed)

    def runner(m):
        def run():
            with torch.inference_mode():
                m(ids, mask)
        return run

    times = time_alternating({k: runner(m) for k, m in models.items()}, warmup=warmup, repeats=repeats)
    rows = []
    for k, s in specs.items():
        rows.append({"key": k, "model": s.label, "parameters": models[k].num_parameters(),
                     "parameters_paper": ACT_T5_PAPER[k]["parameters"],
                     "seconds_per_batch": times[k]["median"],
                     "seconds_per_batch_paper": ACT_T5_PAPER[k]["seconds_per_batch"], "timing": times[k]})
    t_act, t_tr = times["act"]["median"], times["transformer"]["median"]
    n_act, n_tr = rows[0]["parameters"], rows[1]["parameters"]
    return {"rows": rows, "seq_len": seq_len, "batch_size": batch_size, "num_labels": num_labels,
            "speed_ratio": t_tr / t_act, "speed_ratio_paper": ACT_T5_PAPER_RATIO,
            "parameter_ratio": n_tr / n_act, "parameter_ratio_paper": ACT_T5_PAPER_PARAMETER_RATIO,
            "device": "cpu", "paper_device": "NVIDIA Tesla P40 GPU, Yelp F. batches",
            "note": (f"random weights, {batch_size} x {seq_len} tokens without padding, embeddings excluded from "
                     f"the parameter counts; paper timed Yelp F. batches on a GPU, ours on "
                     f"{torch.get_num_threads()} CPU thread(s)")}


# ---------------------------------------------------------------- LAMA Fig. 4


class SelfAttentiveAttention(nn.Module):
    """The attention layer of SAN (Lin et al. 2017): A = softmax(W_s2 tanh(W_s1 H^T)), no biases, r = m heads."""

    def __init__(self, width: int, heads: int, d_a: int = 350):
        super().__init__()
        self.ws1 = nn.Linear(width, d_a, bias=False)
        self.ws2 = nn.Linear(d_a, heads, bias=False)

    def forward(self, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        s = self.ws2(torch.tanh(self.ws1(h))).transpose(1, 2)          # (B, m, L)
        return masked_softmax(s, mask.unsqueeze(1))                     # (B, m, L)


class FixedHeadAttention(nn.Module):
    """Transformer multi-head attention with a fixed per-head size d_k (Vaswani et al. eq. 20): W^Q, W^K, W^V
    (width -> m d_k) and W^O (m d_k -> width), no biases - so its size grows with the number of heads."""

    def __init__(self, width: int, heads: int, d_k: int = 64):
        super().__init__()
        self.h, self.dk = heads, d_k
        self.q, self.k, self.v = (nn.Linear(width, heads * d_k, bias=False) for _ in range(3))
        self.o = nn.Linear(heads * d_k, width, bias=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        B, L, _ = x.shape
        q, k, v = (p(x).view(B, L, self.h, self.dk).transpose(1, 2) for p in (self.q, self.k, self.v))
        a = masked_softmax(q @ k.transpose(-1, -2) / self.dk ** 0.5, mask[:, None, None, :])  # (B, h, L, L)
        return self.o((a @ v).transpose(1, 2).reshape(B, L, -1))       # (B, L, width)


def _numel(module_or_params) -> int:
    ps = module_or_params.parameters() if isinstance(module_or_params, nn.Module) else module_or_params
    return sum(p.numel() for p in ps if p is not None)


def lama_f4(heads: Sequence[int] = (1, 2, 5, 10, 15, 20, 25, 30), *, d: int = 50, d_a: int = 350,
            d_k: int = 64) -> dict[str, Any]:
    """Attention-layer parameters vs heads, counted on real modules: LAMA's LowRankAttention (from a built
    LAMA model; "P, Q, c" as the paper's §3.3.2 counts, and the whole module with W_w), LAMA + Ctx, SAN's
    attention and a Transformer multi-head attention with fixed d_k. d = GRU size per direction (width 2d)."""
    hs = [int(h) for h in heads]
    if not hs or min(hs) < 1:
        raise ValueError(f"heads must be positive integers, got {heads!r}")
    out: dict[str, Any] = {"heads": hs, "d": d, "width": 2 * d, "d_a": d_a, "d_k": d_k,
                           "lama": [], "lama_with_mlp": [], "lama_ctx": [], "san": [], "transformer": [],
                           "formula": {"lama": [], "san": [], "transformer": []}}
    for m in hs:
        lama = create_model("lama", vocab_size=10, num_labels=2, n_heads=m, hidden_dim=d, embed_dim=2 * d)
        a = lama.attn
        out["lama"].append(_numel([a.P, a.Q, a.c]))
        out["lama_with_mlp"].append(_numel(a))
        ctx = create_model("lama", vocab_size=10, num_labels=2, n_heads=m, hidden_dim=d, embed_dim=2 * d,
                           variant="ctx")
        out["lama_ctx"].append(_numel(ctx.attn))
        out["san"].append(_numel(SelfAttentiveAttention(2 * d, m, d_a)))
        out["transformer"].append(_numel(FixedHeadAttention(2 * d, m, d_k)))
        out["formula"]["lama"].append(attention_parameter_count(m, d, "lama", include_mlp=False))
        out["formula"]["san"].append(attention_parameter_count(m, d, "san", d_a=d_a))
        out["formula"]["transformer"].append(attention_parameter_count(m, d, "transformer", d_k=d_k))
    out["note"] = (f"GRU size d = {d} per direction (states 2d = {2 * d} wide), SAN d_a = {d_a} (Lin et al.), "
                   f"Transformer d_k = {d_k} per head; 'lama' counts P, Q, c (the paper's 2d(2m+1)); "
                   f"'lama_with_mlp' adds W_w, b_w (2d x 2d + 2d), which the module also has")
    return out
