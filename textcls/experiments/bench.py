"""Model size, speed and memory: `run_bench()` (one JSON-able dict: every model at its paper configuration,
ACT Table 5, LAMA Fig. 4, the shipped checkpoints) and its text report for `python -m textcls bench`."""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from textcls.runtime import threads as thread_policy
from textcls.checkpoint import CheckpointError, list_checkpoints, load_checkpoint
from textcls.runtime.files import atomic_write_json
from textcls.models.registry import get_entry
from textcls.experiments.measure import environment, load_note, peak_memory, time_call
from textcls.experiments.bench_report import model_rows  # noqa: F401  (torch-free, re-exported)
from textcls.experiments.paper_bench import act_table5, lama_f4
from textcls.experiments.specs import (EXAMPLE_SENTENCE, BenchModel, build, default_models, make_inputs,
    parameter_counts)


# ---------------------------------------------------------------- one model


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
    """Size, inference and training speed and memory of one model (random weights; speed and size do not
    depend on them).

    - Inference: `model(ids, mask)` in eval mode under `torch.inference_mode()` on `make_inputs` batches of
      `seq_len` tokens (default 56, a typical AG News length), `warmup` untimed calls first, then the median of
      `repeats` timed calls (time.perf_counter), for a batch of `batch_size` (100) and for a single sentence
      (B = 1, the latency a user sees).
    - Training: `train_steps` optimiser steps (Adam, cross-entropy + the model's extra loss) on batches of
      `train_batch_size` after one untimed step; seconds per epoch = median step time x ceil(epoch_examples /
      train_batch_size). Data loading and the dev evaluation are not included.
    - Memory: `peak_memory` of one batch and of the first training step (activations, gradients and the
      optimiser state), a lower bound."""
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


# ---------------------------------------------------------------- shipped checkpoints


RELATION_SENTENCE = "The <e1>burst</e1> has been caused by water hammer <e2>pressure</e2>."


def _needs_entities(predictor) -> bool:
    """Whether the checkpoint's tokenizer wants <e1>..</e2> entity tags (a relation classifier)."""
    return getattr(getattr(predictor.tokenizer, "config", None), "entities", "none") not in (None, "none")


def bench_checkpoints(root: str | Path = "checkpoints", *, sentence: str = EXAMPLE_SENTENCE, warmup: int = 1,
                      repeats: int = 5) -> dict[str, Any]:
    """Time the shipped checkpoints: load, one sentence through all of them after a warm-up (the Compare page),
    one sentence with maps each (the Inspect page)."""
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
        text = RELATION_SENTENCE if _needs_entities(p) else sentence   # a relation model reads tagged entities
        predictors[info.name] = (p, text)
        one = time_call(lambda p=p, text=text: p.predict([text]), warmup=warmup, repeats=repeats)
        maps = time_call(lambda p=p, text=text: p.predict([text], return_maps=True), warmup=warmup, repeats=repeats)
        out["checkpoints"].append({"sentence": text,
            "name": info.name, "model": info.model, "data": info.data, "test_accuracy": info.test_accuracy,
            "parameters": p.model.num_parameters(include_embeddings=True),
            "parameters_without_embeddings": p.model.num_parameters(),
            "load_seconds": load_s, "predict_ms": 1000 * one["median"], "predict_with_maps_ms": 1000 * maps["median"],
            "n_maps": len(p.predict([text], return_maps=True)[0].maps)})
    if predictors:
        def all_of_them():
            for p, text in predictors.values():
                p.predict([text])
        t = time_call(all_of_them, warmup=warmup, repeats=repeats)
        out["all_predict_ms"] = 1000 * t["median"]
        out["n"] = len(predictors)
    return out


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
    keep (default: all of default_models()). `checkpoints=None` skips the shipped checkpoints. `threads`:
    torch.set_num_threads before measuring; the count in force and the load average are recorded, since on a
    shared machine every timing is inflated by the load (the report says so)."""
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


def text_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table: the first column left-aligned, the others right-aligned, a rule under the headers."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_report(result: dict[str, Any]) -> str:
    """The text tables `python -m textcls bench` prints for a `run_bench` result."""
    env, s = result["environment"], result["settings"]
    out = [f"textcls bench ({'quick' if s['quick'] else 'full'}"
           f"{', preset ' + s['preset'] if s.get('preset') else ''}) - {env['time']}, torch {env['torch']}, "
           f"{env['torch_threads']} thread(s), {env['cpu_count']} CPU(s), load average {env['loadavg']} -> "
           f"{result.get('environment_end', {}).get('loadavg')}",
           result.get("load_note", load_note(env)), ""]
    t5 = result.get("act_t5")
    if t5:
        out.append(f"ACT Table 5 (random weights, batch of {t5['batch_size']} x {t5['seq_len']} tokens, CPU):")
        out.append(text_table(["model", "params", "paper", "s / batch", "paper (GPU)"],
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
        out.append(text_table(["heads", "LAMA (P,Q,c)", "LAMA (+W_w)", "LAMA+Ctx", "SAN", "Transformer"],
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
        out.append(text_table(["model", "params", "with emb.", f"s/batch {s['batch_size']}", "ms/sentence",
                               "s/epoch", "MB infer", "MB train"], rows))
        out.append("")
    ck = result.get("checkpoints")
    if ck is not None:
        if not ck["checkpoints"]:
            out.append(f"No valid checkpoint in {ck['root']}.")
        else:
            out.append(f"Shipped checkpoints in {ck['root']} (one sentence, after warm-up):")
            out.append(text_table(["checkpoint", "model", "params (total)", "load s", "predict ms", "with maps ms"],
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
    """Write a result as JSON, atomically (textcls.runtime.files.atomic_write_json)."""
    return atomic_write_json(path, result, indent=1, default=float)
