"""Benchmarks: model size, speed and memory, the ACT paper's Table 5 and the LAMA paper's Fig. 4.

`run_bench()` returns one JSON-able dict; `format_report()` turns it into the text tables that
`python -m textcls bench [--quick] [--json OUT]` prints (`bench_latency()` and `format_latency()`: the
`--latency` table). Nothing here trains a model to convergence: weights are random (speed and size do not
depend on them) unless shipped checkpoints are timed.

What is measured, and how (the choices the papers leave open):
- Parameters: `model.num_parameters(include_embeddings=...)` (the embedding tables are the only difference),
  at each model's paper configuration (the config defaults) with a vocabulary of `vocab_size` words.
- Inputs: batches of random token ids with no padding, `seq_len` tokens each (default 56, a typical
  AG News length). Hierarchical models (HCAN) get the same tokens as sentences of `words_per_sentence` words.
- Inference: `model(ids, mask)` in eval mode under `torch.inference_mode()`, `warmup` untimed calls first, then
  the median of `repeats` timed calls (time.perf_counter), for a batch of `batch_size` (100) and for a single
  sentence (B = 1, the latency a user sees). Two models being compared (ACT-T5) are timed alternately, call by
  call, so a change in machine load hits both alike.
- Training: `train_steps` optimiser steps (Adam, cross-entropy + the model's extra loss) on batches of
  `train_batch_size` after one untimed step; seconds per epoch = median step time x ceil(epoch_examples /
  train_batch_size). Data loading and the dev evaluation are not included.
- Memory: the growth of the process's resident set (RSS) above its level just before the call, sampled every
  millisecond from /proc/self/statm by a helper thread, after glibc's malloc_trim has returned freed memory to
  the OS. Without /proc (macOS, Windows) it falls back to the growth of `resource.getrusage().ru_maxrss`,
  which only sees a new all-time peak (then 0 is a lower bound). tracemalloc is not used: it does not see
  PyTorch's tensor allocations. Memory the allocator already held is reused and not counted, so the figure is
  a lower bound of the call's working memory (activations, gradients and optimiser state for training).
- Threads: `torch.set_num_threads(threads)` when `threads` is given; the number in force is recorded, with
  os.getloadavg(): on a shared machine every timing is inflated by the load, and the report says so.
- Shipped checkpoints (`checkpoints/`): load time, one sentence through every checkpoint after a warm-up
  (the Compare page), and one sentence with its maps (the Inspect page) per checkpoint.
- Latency and the thread policy (`bench --latency [--load N]`, `bench_latency`): one sentence through the six
  shipped sst2 checkpoints and their integrated gradients, per torch thread count, on the machine as it is and
  with N busy background processes (`python -c "while True: pass"`) that the command starts and always stops;
  each row also says how many cores *other* processes used meanwhile (/proc/stat), since on a shared machine
  that decides whether the row means what it says. It is how textcls/threads.py's defaults were chosen.
"""
from __future__ import annotations

import ctypes
import datetime as _dt
import json
import math
import os
import platform
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

# ACT paper, Table 5 (Yelp F., batch of 100, NVIDIA Tesla P40 GPU)
ACT_T5_PAPER = {"act": {"parameters": 1.49e6, "seconds_per_batch": 0.07},
                "transformer": {"parameters": 3.38e6, "seconds_per_batch": 0.19}}
ACT_T5_PAPER_RATIO = 0.19 / 0.07          # 2.7x "faster inference speed"
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
    from .registry import get_entry, list_models
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


# ---------------------------------------------------------------- environment and low-level measurement


def environment() -> dict[str, Any]:
    """What the timings depend on: threads, load, CPU, versions."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    cpus = os.cpu_count() or 1
    return {
        "time": _dt.datetime.now().isoformat(timespec="seconds"),
        "python": sys.version.split()[0], "torch": torch.__version__, "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(), "cpu_count": cpus,
        "torch_threads": torch.get_num_threads(), "torch_interop_threads": torch.get_num_interop_threads(),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "loadavg": [round(x, 2) for x in load],
        "loaded": bool(load[0] > 0.75 * cpus),
        "cuda": torch.cuda.is_available(),
    }


def load_note(env: dict[str, Any]) -> str:
    """One line on how far the machine's load distorts the timings."""
    la, cpus = env.get("loadavg", [0.0])[0], env.get("cpu_count", 1)
    if la != la:  # NaN: unknown
        return "machine load unknown"
    if la > 0.75 * cpus:
        return (f"TIMINGS DISTORTED: load average {la:.1f} on {cpus} CPU(s) - other processes share the cores, "
                f"so absolute times are inflated (ratios measured alternately are less affected)")
    return f"load average {la:.1f} on {cpus} CPU(s): a quiet machine"


def time_call(fn: Callable[[], Any], *, warmup: int = 1, repeats: int = 5) -> dict[str, Any]:
    """Median / min / max seconds of `repeats` calls of fn after `warmup` untimed calls."""
    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats must be >= 1 and warmup >= 0, got {repeats}, {warmup}")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return {"median": statistics.median(times), "min": min(times), "max": max(times), "repeats": repeats,
            "times": times}


def time_alternating(fns: dict[str, Callable[[], Any]], *, warmup: int = 1, repeats: int = 5
                     ) -> dict[str, dict[str, Any]]:
    """Like time_call for several functions, called in turn (a, b, a, b, ...) so load drift hits all alike."""
    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats must be >= 1 and warmup >= 0, got {repeats}, {warmup}")
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t)
    return {k: {"median": statistics.median(v), "min": min(v), "max": max(v), "repeats": repeats, "times": v}
            for k, v in times.items()}


def _malloc_trim() -> None:
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _rss_bytes() -> int | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def peak_memory(fn: Callable[[], Any], interval: float = 0.001) -> dict[str, Any]:
    """Peak RSS growth (bytes) while fn runs; see the module docstring. Returns {"bytes", "method"}."""
    import gc
    gc.collect()
    _malloc_trim()
    base = _rss_bytes()
    if base is None:
        import resource
        scale = 1 if sys.platform == "darwin" else 1024   # ru_maxrss: bytes on macOS, KiB on Linux
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        fn()
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return {"bytes": max(0, after - before) * scale, "method": "ru_maxrss growth (lower bound)"}
    peak = [base]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            r = _rss_bytes()
            if r is not None and r > peak[0]:
                peak[0] = r
            stop.wait(interval)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    try:
        fn()
    finally:
        stop.set()
        th.join()
    end = _rss_bytes()
    if end is not None:
        peak[0] = max(peak[0], end)
    return {"bytes": int(peak[0] - base), "method": "RSS growth sampled from /proc/self/statm"}


# ---------------------------------------------------------------- inputs and models


def make_inputs(input_kind: str, batch_size: int, seq_len: int, vocab_size: int, *, words_per_sentence: int = 14,
                seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Random ids (no padding): (B, L) for "tokens" models, (B, S, W) with S*W >= L for "sentences" models."""
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


def build(spec: BenchModel, *, vocab_size: int = 20000, num_labels: int = 4, seed: int = 0):
    from .registry import create_model
    torch.manual_seed(seed)
    return create_model(spec.model, vocab_size=vocab_size, num_labels=num_labels, preset=spec.preset,
                        variant=spec.variant, **dict(spec.overrides))


def parameter_counts(model: nn.Module) -> dict[str, int]:
    """Total, without embeddings (the models' own rule), embeddings, trainable."""
    total = model.num_parameters(include_embeddings=True)
    body = model.num_parameters(include_embeddings=False)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return {"total": total, "without_embeddings": body, "embeddings": total - body, "trainable": trainable}


def _train_step_fn(model: nn.Module, ids, mask, labels, lr: float = 1e-3) -> Callable[[], float]:
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)

    def step() -> float:
        out = model(ids, mask)
        loss = F.cross_entropy(out.logits.float(), labels)
        extra = model.extra_loss(out, labels) if hasattr(model, "extra_loss") else None
        if extra is not None:
            loss = loss + extra
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return float(loss.detach())
    return step


def bench_model(spec: BenchModel, *, seq_len: int = 56, batch_size: int = 100, train_batch_size: int = 32,
                epoch_examples: int = 6080, warmup: int = 1, repeats: int = 5, train_steps: int = 3,
                vocab_size: int = 20000, num_labels: int = 4, memory: bool = True, training: bool = True,
                seed: int = 0) -> dict[str, Any]:
    """Size, inference and training speed and memory of one model (random weights). See the module docstring."""
    from .registry import get_entry
    entry = get_entry(spec.model)
    model = build(spec, vocab_size=vocab_size, num_labels=num_labels, seed=seed)
    row: dict[str, Any] = {"label": spec.label, "model": spec.model, "preset": spec.preset, "variant": spec.variant,
                           "input": entry.input_kind, "parameters": parameter_counts(model)}
    ids, mask = make_inputs(entry.input_kind, batch_size, seq_len, vocab_size, seed=seed)
    ids1, mask1 = ids[:1].clone(), mask[:1].clone()
    model.eval()

    def infer_batch():
        with torch.inference_mode():
            model(ids, mask)

    def infer_one():
        with torch.inference_mode():
            model(ids1, mask1)

    row["inference_batch"] = time_call(infer_batch, warmup=warmup, repeats=repeats)
    row["inference_sentence"] = time_call(infer_one, warmup=warmup, repeats=repeats)
    row["seconds_per_batch"] = row["inference_batch"]["median"]
    row["ms_per_sentence"] = 1000 * row["inference_sentence"]["median"]
    row["ms_per_sentence_in_batch"] = 1000 * row["seconds_per_batch"] / batch_size
    if memory:
        row["inference_memory_bytes"] = peak_memory(infer_batch)["bytes"]
    if training:
        tids, tmask = make_inputs(entry.input_kind, train_batch_size, seq_len, vocab_size, seed=seed + 1)
        labels = torch.randint(0, num_labels, (train_batch_size,), generator=torch.Generator().manual_seed(seed))
        model.train()
        step = _train_step_fn(model, tids, tmask, labels)
        if memory:   # the first step allocates gradients and Adam's state: the training footprint
            row["training_memory_bytes"] = peak_memory(step)["bytes"]
        t = time_call(step, warmup=0 if memory else 1, repeats=max(1, train_steps))
        row["train_step"] = t
        steps_per_epoch = math.ceil(epoch_examples / train_batch_size)
        row["seconds_per_epoch"] = t["median"] * steps_per_epoch
        row["steps_per_epoch"] = steps_per_epoch
        model.eval()
    return row


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
            "parameter_ratio": n_tr / n_act, "parameter_ratio_paper": 3.38 / 1.49,
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
        from .models.layers import masked_softmax
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
        from .models.layers import masked_softmax
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
    from .models.lama import attention_parameter_count
    from .registry import create_model
    hs = [int(h) for h in heads]
    if not hs or min(hs) < 1:
        raise ValueError(f"heads must be positive integers, got {heads!r}")
    out: dict[str, Any] = {"heads": hs, "d": d, "width": 2 * d, "d_a": d_a, "d_k": d_k,
                           "lama": [], "lama_with_mlp": [], "lama_ctx": [], "san": [], "transformer": [],
                           "formula": {"lama": [], "san": [], "transformer": []}}
    for m in hs:
        lama = create_model("lama", vocab_size=10, num_labels=2, heads=m, hidden_dim=d, embed_dim=2 * d)
        a = lama.attn
        out["lama"].append(_numel([a.P, a.Q, a.c]))
        out["lama_with_mlp"].append(_numel(a))
        ctx = create_model("lama", vocab_size=10, num_labels=2, heads=m, hidden_dim=d, embed_dim=2 * d,
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


# ---------------------------------------------------------------- shipped checkpoints


def bench_checkpoints(root: str | Path = "checkpoints", *, sentence: str = EXAMPLE_SENTENCE, warmup: int = 1,
                      repeats: int = 5) -> dict[str, Any]:
    """Time the shipped checkpoints: load, one sentence through all of them, one sentence with maps each."""
    from .checkpoint import CheckpointError, list_checkpoints, load_checkpoint
    infos = list_checkpoints(root)
    out: dict[str, Any] = {"root": str(root), "sentence": sentence, "checkpoints": [], "errors": []}
    predictors = {}
    for info in infos:
        t = time.perf_counter()
        try:
            p = load_checkpoint(info.path)
        except CheckpointError as e:
            out["errors"].append(f"{info.name}: {e}")
            continue
        load_s = time.perf_counter() - t
        predictors[info.name] = p
        one = time_call(lambda p=p: p.predict([sentence]), warmup=warmup, repeats=repeats)
        maps = time_call(lambda p=p: p.predict([sentence], return_maps=True), warmup=warmup, repeats=repeats)
        out["checkpoints"].append({
            "name": info.name, "model": info.model, "data": info.data, "test_accuracy": info.test_accuracy,
            "parameters": p.model.num_parameters(include_embeddings=True),
            "parameters_without_embeddings": p.model.num_parameters(),
            "load_seconds": load_s, "predict_ms": 1000 * one["median"], "predict_with_maps_ms": 1000 * maps["median"],
            "n_maps": len(p.predict([sentence], return_maps=True)[0].maps)})
    if predictors:
        def all_of_them():
            for p in predictors.values():
                p.predict([sentence])
        t = time_call(all_of_them, warmup=warmup, repeats=repeats)
        out["all_predict_ms"] = 1000 * t["median"]
        out["n"] = len(predictors)
    return out


# ---------------------------------------------------------------- latency under background load (threads)


LATENCY_PATTERN = "*-sst2"


BUSY_LOOP = ("import os\nparent = os.getppid()\ni = 0\nwhile True:\n    i += 1\n"
             "    if i % 1000000 == 0 and os.getppid() != parent:\n        break\n")


class BusyLoad:
    """`n` busy background processes (`python -c "while True: pass"`, plus a parent check), started on entry
    and always stopped (terminate, then kill) on exit - also on an exception or Ctrl-C; should this process be
    killed outright, each stops by itself within a fraction of a second when it sees its parent gone.
    `pids` lists them while they run."""

    def __init__(self, n: int, settle: float = 0.5):
        if n < 0:
            raise ValueError(f"load must be >= 0 busy processes, got {n}")
        self.n, self.settle, self.procs = n, settle, []

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def __enter__(self) -> "BusyLoad":
        import subprocess
        try:
            for _ in range(self.n):
                self.procs.append(subprocess.Popen([sys.executable, "-c", BUSY_LOOP],
                                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                   stderr=subprocess.DEVNULL))
            if self.procs:
                time.sleep(self.settle)               # let them start spinning
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        import subprocess
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []

    def __exit__(self, *exc) -> None:
        self.stop()


def _cpu_seconds(pids: Sequence[int] = ()) -> tuple[float, float, float] | None:
    """(wall clock, busy CPU seconds of the whole machine, CPU seconds of this process + `pids`) from /proc;
    None where there is no /proc. The difference of two snapshots gives the CPU that *other* processes used."""
    try:
        with open("/proc/stat") as f:
            fields = [float(x) for x in f.readline().split()[1:]]
        tick = os.sysconf("SC_CLK_TCK")
        busy = (sum(fields[:8]) - fields[3] - (fields[4] if len(fields) > 4 else 0)) / tick   # minus idle, iowait
        own = sum(os.times()[:2])
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    st = f.read().rsplit(")", 1)[1].split()
                own += (float(st[11]) + float(st[12])) / tick                              # utime, stime
            except (OSError, IndexError, ValueError):
                pass
        return time.perf_counter(), busy, own
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _others_cores(a, b) -> float | None:
    """CPU cores used on average by processes other than ours between two `_cpu_seconds` snapshots."""
    if a is None or b is None or b[0] <= a[0]:
        return None
    return max(0.0, ((b[1] - a[1]) - (b[2] - a[2])) / (b[0] - a[0]))


def latency_thread_settings() -> list[int]:
    """The thread counts the latency benchmark compares: 1, torch's default, and the policy's counts."""
    from . import threads
    pol = threads.policy()
    counts = {1, threads.torch_default_threads()} | {n for n in (pol.interactive, pol.batch) if isinstance(n, int)}
    return sorted(counts)


def bench_latency(root: str | Path = "checkpoints", *, pattern: str = LATENCY_PATTERN, load: int = 0,
                  thread_settings: Sequence[int] | None = None, sentence: str = EXAMPLE_SENTENCE,
                  warmup: int = 1, repeats: int = 7, ig: bool = True, ig_repeats: int = 3,
                  progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """What a user waits for on a busy machine: one sentence through every checkpoint matching `pattern`
    (default the six shipped sst2 models; predict, ms) and their integrated gradients (explain(...,
    "integrated_gradients"), the Attribute page's default, ms), at each thread count, on an idle machine and -
    with `load` > 0 - with `load` busy background processes that this function starts and stops.

    Each figure is the median of `repeats` (IG: `ig_repeats`) timed passes over all models after `warmup`
    untimed ones, with the calling thread's torch thread count set for the pass and restored afterwards.
    Returns {"rows": [{"load", "threads", "policy", "predict_ms", "ig_ms", ...}], "models", "environment", ...};
    `format_latency` prints it."""
    from . import threads
    from .checkpoint import CheckpointError, list_checkpoints, load_checkpoint
    say = progress or (lambda msg: None)
    if load < 0:
        raise ValueError(f"load must be >= 0, got {load}")
    counts = sorted(set(thread_settings)) if thread_settings else latency_thread_settings()
    if not counts or min(counts) < 1:
        raise ValueError(f"thread settings must be positive integers, got {thread_settings!r}")
    import fnmatch
    infos = [i for i in list_checkpoints(root) if fnmatch.fnmatch(i.name, pattern)]
    predictors, errors = {}, []
    for info in infos:
        try:
            predictors[info.name] = load_checkpoint(info.path)
        except CheckpointError as e:
            errors.append(f"{info.name}: {e}")
    pol = threads.policy()
    result: dict[str, Any] = {"root": str(root), "pattern": pattern, "models": list(predictors), "errors": errors,
                              "sentence": sentence, "load": load, "threads": counts, "repeats": repeats,
                              "ig_repeats": ig_repeats if ig else 0, "policy": pol.describe(),
                              "policy_env": os.environ.get(threads.ENV), "policy_error": None, "rows": []}
    try:
        threads.parse_policy(result["policy_env"])
    except ValueError as e:
        result["policy_error"] = str(e)
    result["environment"] = environment()
    if not predictors:
        return result

    def predict_all():
        for p in predictors.values():
            p.predict([sentence])

    def ig_all():
        from .interpret import explain
        for p in predictors.values():
            explain(p, [sentence], "integrated_gradients")

    t0 = time.perf_counter()
    for n_busy in ([0, load] if load else [0]):
        with BusyLoad(n_busy) as busy:
            for n in counts:
                say(f"{n_busy} busy process(es), {n} thread(s)")
                auto = threads.auto_threads()             # what "auto" picks under this load
                row: dict[str, Any] = {"load": n_busy, "threads": n, "busy_pids": busy.pids, "auto_picks": auto,
                                       "policy": [k for k in threads.KINDS
                                                  if pol.threads(k) == n or (pol.threads(k) == "auto" and auto == n)]}
                snap = _cpu_seconds(busy.pids)
                with threads.interactive(n):             # outermost scope: the library's own scopes defer to it
                    row["torch_threads"] = torch.get_num_threads()
                    t = time_call(predict_all, warmup=warmup, repeats=repeats)
                    row["predict_ms"], row["predict_ms_max"] = 1000 * t["median"], 1000 * t["max"]
                    if ig:
                        t = time_call(ig_all, warmup=min(warmup, 1), repeats=ig_repeats)
                        row["ig_ms"], row["ig_ms_max"] = 1000 * t["median"], 1000 * t["max"]
                others = _others_cores(snap, _cpu_seconds(busy.pids))
                row["other_cores"] = None if others is None else round(others, 2)
                row["loadavg"] = environment()["loadavg"]
                result["rows"].append(row)
    result["seconds"] = time.perf_counter() - t0
    return result


def format_latency(result: dict[str, Any]) -> str:
    """The latency table: one row per (background load, thread count)."""
    env = result["environment"]
    n = len(result["models"])
    out = [f"textcls bench --latency - {env['time']}, torch {env['torch']}, {env['cpu_count']} CPU(s), "
           f"load average {env['loadavg']} at the start",
           f"thread policy: {result['policy']} ("
           + (f"TEXTCLS_THREADS={result['policy_env']!r} is invalid, so the defaults" if result.get("policy_error")
              else f"TEXTCLS_THREADS={result['policy_env']}" if result["policy_env"] else "the defaults") + ")"]
    if not n:
        out.append(f"No checkpoint matching {result['pattern']!r} in {result['root']}.")
        out += [f"  skipped: {e}" for e in result.get("errors", [])]
        return "\n".join(out)
    out.append(f"{n} checkpoint(s) matching {result['pattern']!r} ({', '.join(result['models'])}), one sentence; "
               f"median of {result['repeats']} passes (IG: {result['ig_repeats']}), ms for all {n} models")
    out.append("")
    headers = ["background load", "threads", "policy", "predict ms", "IG ms", "other CPU"]
    rows = []
    for r in result["rows"]:
        rows.append([f"{r['load']} busy process(es)" if r["load"] else "idle", r["threads"],
                     ", ".join(r["policy"]) or "-", f"{r['predict_ms']:.0f}",
                     f"{r['ig_ms']:.0f}" if "ig_ms" in r else "-",
                     "?" if r.get("other_cores") is None else f"{r['other_cores']:.1f}"])
    out.append(_table(headers, rows))
    out.append("policy: the kinds of work TEXTCLS_THREADS runs with this many threads under this load (auto: "
               "the count it picked at the row's start)")
    out.append("other CPU: cores used on average by processes other than the benchmark and its busy processes "
               "while the row ran (on a shared machine: more than ~0.2 means the row is not what it says)")
    out += [f"  skipped: {e}" for e in result.get("errors", [])]
    if "seconds" in result:
        out.append(f"({result['seconds']:.0f} s)")
    return "\n".join(out)


# ---------------------------------------------------------------- the whole run


def _prime() -> None:
    """One tiny forward/backward/Adam step, so one-off costs (lazy imports and kernel set-up on the first
    optimiser step, several seconds and megabytes) are not charged to the first model measured."""
    lin = nn.Linear(4, 2)
    opt = torch.optim.Adam(lin.parameters())
    F.cross_entropy(lin(torch.randn(3, 4)), torch.tensor([0, 1, 0])).backward()
    opt.step()


QUICK = dict(warmup=1, repeats=3, train_steps=2)
FULL = dict(warmup=2, repeats=7, train_steps=5)


def run_bench(*, quick: bool = False, models: Sequence[str] | None = None, seq_len: int = 56,
              batch_size: int = 100, train_batch_size: int = 32, epoch_examples: int = 6080,
              vocab_size: int = 20000, threads: int | None = None, act_t5: bool = True, lama: bool = True,
              checkpoints: str | Path | None = "checkpoints", memory: bool = True, training: bool = True,
              preset: str | None = None, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Everything the Benchmarks page and `textcls bench` show. `models`: registered names or row labels to
    keep (default: all of default_models()). `checkpoints=None` skips the shipped checkpoints."""
    if threads is not None:
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        torch.set_num_threads(threads)
    settings = dict(QUICK if quick else FULL)
    say = progress or (lambda msg: None)
    specs = default_models(preset)
    if models is not None:
        wanted = [m.strip() for m in models if m.strip()]
        known = {s.model for s in specs} | {s.label for s in specs}
        unknown = sorted(set(wanted) - known)
        if unknown:
            raise ValueError(f"unknown model(s) {unknown}; known: {sorted(known)}")
        specs = [s for s in specs if s.model in wanted or s.label in wanted]
    env_start = environment()
    result: dict[str, Any] = {
        "environment": env_start,
        "settings": {"quick": quick, "preset": preset, "seq_len": seq_len, "batch_size": batch_size,
                     "train_batch_size": train_batch_size, "epoch_examples": epoch_examples,
                     "vocab_size": vocab_size, **settings},
        "models": [],
    }
    t0 = time.perf_counter()
    if act_t5:
        say("ACT Table 5: ACT vs Transformer")
        result["act_t5"] = act_table5(seq_len=seq_len, batch_size=batch_size, warmup=settings["warmup"],
                                      repeats=settings["repeats"], vocab_size=vocab_size)
    if lama:
        say("LAMA Fig. 4: attention parameters vs heads")
        result["lama_f4"] = lama_f4()
    _prime()
    for spec in specs:
        say(f"model {spec.label}")
        result["models"].append(bench_model(
            spec, seq_len=seq_len, batch_size=batch_size, train_batch_size=train_batch_size,
            epoch_examples=epoch_examples, warmup=settings["warmup"], repeats=settings["repeats"],
            train_steps=settings["train_steps"], vocab_size=vocab_size, memory=memory, training=training))
    if checkpoints is not None and Path(checkpoints).is_dir():
        say(f"checkpoints in {checkpoints}")
        from . import threads as thread_policy
        # one sentence is interactive work: the thread policy's count (TEXTCLS_THREADS), or --threads when given
        with thread_policy.interactive(threads if threads is not None else "policy"):
            result["checkpoints"] = bench_checkpoints(checkpoints, warmup=settings["warmup"],
                                                      repeats=settings["repeats"])
    env_end = environment()
    result["environment_end"] = {"time": env_end["time"], "loadavg": env_end["loadavg"]}
    result["seconds"] = time.perf_counter() - t0
    # the 1-minute load at the end includes this benchmark's own threads: only the excess is other processes
    others_end = max(0.0, env_end["loadavg"][0] - env_start.get("torch_threads", 1))
    result["load_note"] = load_note({**env_start, "loadavg": [max(env_start["loadavg"][0], others_end)]})
    return result


# ---------------------------------------------------------------- text report


def _fmt_int(n: float | None) -> str:
    if n is None:
        return "-"
    return f"{n / 1e6:.2f}M" if n >= 1e6 else (f"{n / 1e3:.1f}k" if n >= 1e3 else f"{int(n)}")


def _fmt_mb(b: float | None) -> str:
    return "-" if b is None else f"{b / 2 ** 20:.0f}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def model_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-model table as flat dicts (for a DataFrame or the text report)."""
    rows = []
    for r in result.get("models", []):
        p = r["parameters"]
        rows.append({"model": r["label"], "params (no emb.)": p["without_embeddings"], "params (total)": p["total"],
                     "s / batch": r["seconds_per_batch"], "ms / sentence": r["ms_per_sentence"],
                     "s / epoch (est.)": r.get("seconds_per_epoch"),
                     "MB infer": None if r.get("inference_memory_bytes") is None
                     else r["inference_memory_bytes"] / 2 ** 20,
                     "MB train step": None if r.get("training_memory_bytes") is None
                     else r["training_memory_bytes"] / 2 ** 20})
    return rows


def format_report(result: dict[str, Any]) -> str:
    env, s = result["environment"], result["settings"]
    out = [f"textcls bench ({'quick' if s['quick'] else 'full'}"
           f"{', preset ' + s['preset'] if s.get('preset') else ''}) - {env['time']}, torch {env['torch']}, "
           f"{env['torch_threads']} thread(s), {env['cpu_count']} CPU(s), load average {env['loadavg']} -> "
           f"{result.get('environment_end', {}).get('loadavg')}",
           result.get("load_note", load_note(env)), ""]
    t5 = result.get("act_t5")
    if t5:
        out.append(f"ACT Table 5 (random weights, batch of {t5['batch_size']} x {t5['seq_len']} tokens, CPU):")
        out.append(_table(["model", "params", "paper", "s / batch", "paper (GPU)"],
                          [[r["model"], _fmt_int(r["parameters"]), _fmt_int(r["parameters_paper"]),
                            f"{r['seconds_per_batch']:.3f}", f"{r['seconds_per_batch_paper']:.2f}"]
                           for r in t5["rows"]]))
        out.append(f"speed ratio Transformer / ACT: {t5['speed_ratio']:.2f}x (paper {t5['speed_ratio_paper']:.1f}x); "
                   f"parameter ratio {t5['parameter_ratio']:.2f} (paper {t5['parameter_ratio_paper']:.2f})")
        out.append("")
    f4 = result.get("lama_f4")
    if f4:
        out.append(f"LAMA Fig. 4: attention-layer parameters vs heads (d = {f4['d']}, SAN d_a = {f4['d_a']}, "
                   f"Transformer d_k = {f4['d_k']}):")
        out.append(_table(["heads", "LAMA (P,Q,c)", "LAMA (+W_w)", "LAMA+Ctx", "SAN", "Transformer"],
                          [[h, a, b, c, d, e] for h, a, b, c, d, e in zip(
                              f4["heads"], f4["lama"], f4["lama_with_mlp"], f4["lama_ctx"], f4["san"],
                              f4["transformer"])]))
        out.append("")
    if result.get("models"):
        out.append(f"Models at the paper configuration (random weights, vocabulary {s['vocab_size']}, "
                   f"{s['seq_len']} tokens; epoch = {s['epoch_examples']} examples in batches of "
                   f"{s['train_batch_size']}, estimated from {s['train_steps']} steps; memory = RSS growth):")
        rows = []
        for r in model_rows(result):
            rows.append([r["model"], _fmt_int(r["params (no emb.)"]), _fmt_int(r["params (total)"]),
                         f"{r['s / batch']:.3f}", f"{r['ms / sentence']:.1f}",
                         "-" if r["s / epoch (est.)"] is None else f"{r['s / epoch (est.)']:.0f}",
                         "-" if r["MB infer"] is None else f"{r['MB infer']:.0f}",
                         "-" if r["MB train step"] is None else f"{r['MB train step']:.0f}"])
        out.append(_table(["model", "params", "with emb.", f"s/batch {s['batch_size']}", "ms/sentence",
                           "s/epoch", "MB infer", "MB train"], rows))
        out.append("")
    ck = result.get("checkpoints")
    if ck is not None:
        if not ck["checkpoints"]:
            out.append(f"No valid checkpoint in {ck['root']}.")
        else:
            out.append(f"Shipped checkpoints in {ck['root']} (one sentence, after warm-up):")
            out.append(_table(["checkpoint", "model", "params (total)", "load s", "predict ms", "with maps ms"],
                              [[c["name"], c["model"], _fmt_int(c["parameters"]), f"{c['load_seconds']:.2f}",
                                f"{c['predict_ms']:.1f}", f"{c['predict_with_maps_ms']:.1f}"]
                               for c in ck["checkpoints"]]))
            out.append(f"all {ck['n']} predictions for one sentence: {ck['all_predict_ms']:.1f} ms")
        for e in ck.get("errors", []):
            out.append(f"  skipped: {e}")
        out.append("")
    out.append(f"({result['seconds']:.0f} s)")
    return "\n".join(out)


def write_json(result: dict[str, Any], path: str | Path) -> Path:
    """Write atomically (temporary file + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(result, indent=1, default=float) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


# ---------------------------------------------------------------- figures (the Benchmarks page; pure Plotly)


def _figure_out(key: str, title: str, fig, table, caption: str = ""):
    from .viz import FONT, FigureOut
    fig.update_layout(title=dict(text=title, x=0.01, font=dict(size=14)), plot_bgcolor="white",
                      font=dict(family=FONT), margin=dict(l=10, r=10, t=60, b=10))
    fig.update_xaxes(showline=True, linecolor="#999", automargin=True)
    fig.update_yaxes(showgrid=True, gridcolor="#eee", automargin=True)
    return FigureOut(key, title, fig, table, caption)


def act_t5_figure(t5: dict[str, Any]):
    """ACT-T5: parameters and seconds per batch, ours (CPU) beside the paper's (GPU)."""
    import pandas as pd
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    names = [r["model"] for r in t5["rows"]]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("parameters (millions, without embeddings)",
                                                        f"seconds per batch of {t5['batch_size']}"))
    fig.add_trace(go.Bar(x=names, y=[r["parameters"] / 1e6 for r in t5["rows"]], name="ours",
                         marker_color="#2c7fb8", legendgroup="ours"), 1, 1)
    fig.add_trace(go.Bar(x=names, y=[r["parameters_paper"] / 1e6 for r in t5["rows"]], name="paper",
                         marker_color="#bbbbbb", legendgroup="paper"), 1, 1)
    fig.add_trace(go.Bar(x=names, y=[r["seconds_per_batch"] for r in t5["rows"]], name="ours (CPU)",
                         marker_color="#2c7fb8", legendgroup="ours", showlegend=False), 1, 2)
    fig.add_trace(go.Bar(x=names, y=[r["seconds_per_batch_paper"] for r in t5["rows"]], name="paper (GPU)",
                         marker_color="#bbbbbb", legendgroup="paper", showlegend=False), 1, 2)
    fig.update_layout(barmode="group", height=380, legend=dict(orientation="h", y=-0.15))
    table = pd.DataFrame([{"model": r["model"], "parameters": r["parameters"],
                           "parameters_paper": r["parameters_paper"], "seconds_per_batch": r["seconds_per_batch"],
                           "seconds_per_batch_paper": r["seconds_per_batch_paper"]} for r in t5["rows"]])
    cap = (f"Transformer / ACT: {t5['speed_ratio']:.2f}x slower here (paper {t5['speed_ratio_paper']:.1f}x), "
           f"{t5['parameter_ratio']:.2f}x the parameters (paper {t5['parameter_ratio_paper']:.2f}x). {t5['note']}.")
    return _figure_out("act-t5", "ACT Table 5: ACT vs Transformer", fig, table, cap)


def lama_f4_figure(f4: dict[str, Any]):
    """LAMA-F4: attention-layer parameters vs heads (log scale)."""
    import pandas as pd
    import plotly.graph_objects as go
    series = [("lama", "LAMA (P, Q, c)", "#c0392b", "solid"), ("lama_with_mlp", "LAMA (+ W_w)", "#c0392b", "dot"),
              ("san", "SAN", "#27ae60", "solid"), ("transformer", "Transformer", "#2c7fb8", "solid")]
    fig = go.Figure()
    for key, name, color, dash in series:
        fig.add_trace(go.Scatter(x=f4["heads"], y=f4[key], name=name, mode="lines+markers",
                                 line=dict(color=color, dash=dash)))
    fig.update_layout(height=400, xaxis_title="number of heads m", yaxis_title="attention-layer parameters",
                      yaxis_type="log", legend=dict(orientation="h", y=-0.3, yanchor="top"))
    table = pd.DataFrame({"heads": f4["heads"], **{name: f4[key] for key, name, _, _ in series}})
    return _figure_out("lama-f4", "LAMA Fig. 4: attention parameters vs heads", fig, table, f4["note"])


def models_figure(result: dict[str, Any]):
    """Parameters (without embeddings) and seconds per batch, per model."""
    import pandas as pd
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    rows = model_rows(result)
    names = [r["model"] for r in rows]
    bs = result["settings"]["batch_size"]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("parameters without embeddings (millions)",
                                                        f"seconds per batch of {bs}"))
    fig.add_trace(go.Bar(x=names, y=[r["params (no emb.)"] / 1e6 for r in rows], marker_color="#7f8c8d",
                         showlegend=False), 1, 1)
    fig.add_trace(go.Bar(x=names, y=[r["s / batch"] for r in rows], marker_color="#2c7fb8",
                         showlegend=False), 1, 2)
    fig.update_layout(height=400)
    return _figure_out("bench-models", "Model size and inference speed (paper configurations, random weights)",
                       fig, pd.DataFrame(rows), load_note(result["environment"]))


def accuracy_figure(rows: Sequence[dict[str, Any]], title: str = "Accuracy: ours vs the paper"):
    """Grouped bars, one group per cell: ours (error bar = spread) and the paper's figure."""
    import pandas as pd
    import plotly.graph_objects as go
    from .viz import esc
    names = [esc(f"{r['setting']} / {r['data']}") for r in rows]
    err = [r["sd"] if r.get("sd") is not None else (r.get("se") or 0.0) for r in rows]
    fig = go.Figure()
    fig.add_trace(go.Bar(x=names, y=[r["ours"] for r in rows], name="ours", marker_color="#2c7fb8",
                         error_y=dict(type="data", array=err, visible=True)))
    fig.add_trace(go.Bar(x=names, y=[r["paper"] for r in rows], name="paper", marker_color="#bbbbbb"))
    fig.update_layout(barmode="group", height=420, yaxis_title="accuracy (%)",
                      legend=dict(orientation="h", x=1, xanchor="right", y=1.02, yanchor="bottom"))
    table = pd.DataFrame([{k: r[k] for k in ("key", "setting", "data", "ours", "sd", "se", "paper", "delta")}
                          for r in rows])
    return _figure_out("accuracy-" + "-".join(sorted({r["suite"] for r in rows}))[:60], esc(title), fig, table,
                       "error bars: sd over runs, or the binomial s.e. of a single run")


# ---------------------------------------------------------------- command line (wired in cli.py)


def add_arguments(p) -> None:
    p.add_argument("--quick", action="store_true", help="fewer repeats and training steps (about a minute)")
    p.add_argument("--json", default=None, metavar="OUT", help="also write the full results as JSON to OUT")
    p.add_argument("--models", default=None, help="comma-separated model names to bench (default: all)")
    p.add_argument("--seq-len", type=int, default=56, help="tokens per input (default 56, ~ AG News)")
    p.add_argument("--batch-size", type=int, default=100, help="inference batch size (default 100, ACT Table 5)")
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: as set)")
    p.add_argument("--checkpoints", default=os.environ.get("TEXTCLS_CHECKPOINTS", "checkpoints"),
                   help="folder of checkpoints to time (default: checkpoints)")
    p.add_argument("--no-memory", action="store_true", help="skip the memory measurements")
    p.add_argument("--no-training", action="store_true", help="skip the training-step timings")
    g = p.add_argument_group("latency (--latency): what a user waits for on a busy machine")
    g.add_argument("--latency", action="store_true",
                   help="only time one sentence through the shipped sst2 checkpoints (predict) and their integrated "
                        "gradients, at each thread count (1, torch's default, TEXTCLS_THREADS'), idle and with --load")
    g.add_argument("--load", type=int, default=0, metavar="N",
                   help="with --latency: also measure with N busy background processes (started and stopped by "
                        "the command), e.g. 2")
    g.add_argument("--latency-threads", default=None, metavar="N,M",
                   help="with --latency: the thread counts to compare (default: 1, torch's default and the policy's)")
    g.add_argument("--pattern", default=LATENCY_PATTERN,
                   help=f"with --latency: checkpoint folder names to time (default {LATENCY_PATTERN})")
    g.add_argument("--no-ig", action="store_true", help="with --latency: skip integrated gradients")


def cli_job(args) -> Callable[[], int]:
    """Check the `textcls bench` arguments (ValueError on bad input) and return the job that runs it."""
    for name in ("seq_len", "batch_size"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.threads is not None and args.threads < 1:
        raise ValueError(f"--threads must be >= 1, got {args.threads}")
    models = None
    if args.models is not None:
        models = [m.strip() for m in args.models.split(",") if m.strip()]
        known = {s.model for s in default_models()} | {s.label for s in default_models()}
        unknown = sorted(set(models) - known)
        if unknown or not models:
            raise ValueError(f"--models: unknown model(s) {unknown}; known: {', '.join(sorted(known))}")
    if args.json is not None and Path(args.json).is_dir():
        raise ValueError(f"--json {args.json} is a folder; give a file name")
    if getattr(args, "latency", False):
        return _latency_job(args)
    if getattr(args, "load", 0) or getattr(args, "latency_threads", None):
        raise ValueError("--load and --latency-threads go with --latency")

    def job() -> int:
        result = run_bench(quick=args.quick, models=models, seq_len=args.seq_len, batch_size=args.batch_size,
                           threads=args.threads, checkpoints=args.checkpoints, memory=not args.no_memory,
                           training=not args.no_training,
                           progress=lambda m: print(f"... {m}", file=sys.stderr, flush=True))
        print(format_report(result))
        if args.json:
            print(f"wrote {write_json(result, args.json)}")
        return 0
    return job


def _latency_job(args) -> Callable[[], int]:
    if not Path(args.checkpoints).is_dir():
        raise ValueError(f"--checkpoints {args.checkpoints}: no such folder")
    if args.load < 0 or args.load > 64:
        raise ValueError(f"--load must be between 0 and 64 busy processes, got {args.load}")
    counts = None
    if args.latency_threads:
        try:
            counts = sorted({int(x) for x in args.latency_threads.split(",") if x.strip()})
        except ValueError:
            counts = []
        if not counts or min(counts) < 1:
            raise ValueError(f"--latency-threads expects positive integers separated by commas, got "
                             f"{args.latency_threads!r}")
    elif args.threads is not None:
        counts = [args.threads]
    quick = args.quick

    def job() -> int:
        result = bench_latency(args.checkpoints, pattern=args.pattern, load=args.load, thread_settings=counts,
                               repeats=3 if quick else 7, ig=not args.no_ig, ig_repeats=1 if quick else 3,
                               progress=lambda m: print(f"... {m}", file=sys.stderr, flush=True))
        print(format_latency(result))
        if args.json:
            print(f"wrote {write_json(result, args.json)}")
        return 0 if result["models"] else 1
    return job
