"""textcls's explanations and their scoring against ferret-xai, text by text (`python -m textcls bench
--explanations [--ferret PYTHON]`).

For N texts of the bundled sst2 test split, with one torch thread, each text's time of: integrated gradients and
gradient x input (`textcls.interpret.methods.explain`), and comprehensiveness + sufficiency of the IG explanation
(`textcls.interpret.faithfulness.erasure_curves`). With `ferret` (the path of another Python where ferret-xai is
installed; textcls never imports it), the same texts go through ferret's IntegratedGradientExplainer,
GradientExplainer and AOPC evaluators in a persistent subprocess (scripts/ferret_side.py: one JSON request per line,
one answer per line; its start-up is not timed, each answer carries the seconds of ferret's call alone), text by
text right beside textcls's, who goes first alternating from text to text, so both see the same machine. ferret
needs a plain Hugging Face folder: the checkpoint is exported to a temporary one (`export_hf`, the library's
`save_hf`), and the logits ferret's transformers reads from it are checked against textcls's.

Settings that make both compute the same thing (ferret's defaults, which textcls is given):
- IG: the logit of the predicted class (textcls: output="logit"; default: its probability), 50 Gauss-Legendre
  steps, no doubling (textcls: n_steps = max_steps = 50; default: doubled until the convergence check passes), the
  [PAD] embedding at every word piece as the baseline ([CLS]/[SEP] kept; textcls: baseline "pad").
- gradient x input: the logit of the predicted class.
- AOPC, ferret's definition (textcls's own: ERASER's bins 0, 1, 5, 10, 20, 50 %, ceil): the top int(p x n) tokens
  for p = 0.1, 0.2, ..., 1.0 (np.arange(0.1, 1.1, 0.1), n the text's tokens), only tokens with a positive score (so
  at most the positive ones), a count already used skipped; comprehensiveness deletes them, sufficiency keeps only
  them (removal "delete"); AOPC = the mean over those counts of p(target | text) - p(target | variant), without
  textcls's empty-set bin; no positive score: 0 and 1, as ferret. textcls runs `erasure_curves` at those counts
  (`ferret_counts`) and averages its curves without their first (empty-set) point.
What still differs: ferret ranks word pieces and textcls words (a word's pieces summed), so the two AOPCs agree only
where every word is one piece; ferret deletes pieces by decoding and re-tokenising the text.

Correctness lines (in the result): the largest |logit| difference of the export; per attribution method, the largest
|textcls - ferret| per word (ferret's pieces summed per word, [CLS]/[SEP] left out) over the texts where both read
the same pieces; the largest AOPC difference over the texts whose words are single pieces.
`--load N` runs N busy processes (`background.BusyLoad`) for the whole timed run; "other CPU" is what processes
other than the benchmark, its ferret process and the busy ones used meanwhile.
"""
from __future__ import annotations

import json
import os
import queue
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from textcls.checkpoint import load_checkpoint
from textcls.checkpoint.hf import save_hf
from textcls.data.datasets import load_data
from textcls.experiments.background import BusyLoad, cpu_seconds, others_cores
from textcls.experiments.bench import text_table
from textcls.experiments.measure import environment
from textcls.interpret.faithfulness import erasure_curves
from textcls.interpret.methods import explain
from textcls.interpret.sources import as_source
from textcls.runtime import threads

DEFAULT_CHECKPOINT = "checkpoints/minilm-sst2"
DEFAULT_TEXTS = 50
METHODS = ("integrated_gradients", "grad_x_input", "aopc")
LABELS = {"integrated_gradients": "integrated gradients", "grad_x_input": "gradient x input",
          "aopc": "comprehensiveness + sufficiency"}
IG_STEPS = 50                                  # Captum's and so ferret's default, no doubling
THRESHOLDS = np.arange(0.1, 1.1, 0.1)          # ferret's default removal thresholds (parse_evaluator_args)
CHECK_TEXTS = 5                                # texts whose logits check the export
SIDE_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "ferret_side.py"
SIDE_TIMEOUT = 600.0                           # seconds one answer (or ferret's start) may take


def sst2_texts(n: int) -> list[str]:
    """The first n texts of the bundled sst2 test split."""
    texts = load_data("sst2").splits["test"].texts
    if not 1 <= n <= len(texts):
        raise ValueError(f"--texts must be between 1 and {len(texts)} (the sst2 test split), got {n}")
    return list(texts[:n])


def is_hf(predictor) -> bool:
    return hasattr(predictor.model, "hf") and hasattr(predictor.tokenizer, "hf")


def export_hf(predictor, folder: str | Path) -> Path:
    """The checkpoint as a plain Hugging Face folder that AutoModelForSequenceClassification and AutoTokenizer load
    (`checkpoint.hf.save_hf`: save_pretrained, plus textcls.json and history.json, which transformers ignores), its
    tokenizer's model_max_length capped at the pieces textcls gives the model (so that a long text is cut, not run
    past the position table)."""
    if not is_hf(predictor):
        raise ValueError("only a Hugging Face checkpoint (e.g. checkpoints/minilm-sst2) can be exported for ferret")
    out = Path(save_hf(folder, predictor.model, predictor.tokenizer, predictor.labels))
    tc = out / "tokenizer_config.json"
    cfg = json.loads(tc.read_text(encoding="utf-8")) if tc.is_file() else {}
    limit = int(predictor.model.config.max_len)
    if not isinstance(cfg.get("model_max_length"), int) or cfg["model_max_length"] > limit:
        cfg["model_max_length"] = limit
        tc.write_text(json.dumps(cfg, indent=2), encoding="utf-8")
    return out


def logits_of(predictor, texts: Sequence[str]) -> np.ndarray:
    """(len(texts), C) textcls's logits, one text at a time."""
    rows = []
    with torch.no_grad():
        for t in texts:
            enc = predictor.encode([t])
            rows.append(predictor.model(enc.token_ids, enc.mask).logits[0].double().numpy())  # (C,)
    return np.stack(rows)


def ferret_counts(n: int, n_positive: int) -> list[int]:
    """The token counts ferret's AOPC removes for n tokens of which n_positive score above 0 (module docstring)."""
    ks = [min(int(p * n), n_positive) for p in THRESHOLDS if 0 < int(p * n) <= n]
    return sorted({k for k in ks if k > 0})


def ferret_aopc(model, inst, scores, target: int) -> tuple[float, float, list[int]]:
    """(comprehensiveness, sufficiency, the token counts) as ferret defines them, by textcls's `erasure_curves`."""
    scores = np.asarray(scores, dtype=np.float64)
    ks = ferret_counts(inst.n, int((scores > 0).sum()))
    if not ks:
        return 0.0, 1.0, []
    c = erasure_curves(model, inst, scores, bins=[100.0 * k / inst.n for k in ks], removal="delete", target=target)
    if c["k_tokens"][1:] != ks:
        raise RuntimeError(f"erasure_curves removed {c['k_tokens'][1:]} tokens where ferret removes {ks}")
    return float(np.mean(c["comprehensiveness"][1:])), float(np.mean(c["sufficiency"][1:])), ks


class TextclsSide:
    """textcls's three timed calls on one text, from the text (its instance is built inside the timing)."""

    def __init__(self, predictor):
        self.predictor = predictor
        self.source = as_source(predictor)
        self.scores: dict[str, np.ndarray] = {}

    def target(self, text: str) -> int:
        return int(logits_of(self.predictor, [text])[0].argmax())

    def run(self, method: str, text: str, target: int) -> tuple[float, Any]:
        t0 = time.perf_counter()
        inst = self.source.instances([text])
        if method == "aopc":
            out = ferret_aopc(self.predictor.model, inst[0], self.scores["integrated_gradients"], target)
        else:
            out = explain(self.predictor.model, inst, method, output="logit", n_steps=IG_STEPS, max_steps=IG_STEPS,
                          baseline="pad", target=target)[0].scores
        seconds = time.perf_counter() - t0
        if method != "aopc":
            self.scores[method] = np.asarray(out, dtype=np.float64)
        return seconds, out


class FerretUnavailable(ValueError):
    """--ferret's Python cannot run ferret's side (ferret-xai not importable there, the folder not loadable): bad
    input, one line."""


class FerretSide:
    """scripts/ferret_side.py in `python`, started once; `ask(request)` sends one line and reads one answer."""

    def __init__(self, python: str, folder: str | Path, torch_threads: int, check_texts: Sequence[str]):
        if not SIDE_SCRIPT.is_file():
            raise ValueError(f"--ferret needs {SIDE_SCRIPT} (run from the source tree)")
        env = dict(os.environ, OMP_NUM_THREADS=str(torch_threads), MKL_NUM_THREADS=str(torch_threads),
                   TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1")
        env.pop("PYTHONPATH", None)                     # the other Python's own packages, not this tree's
        self.err = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([python, str(SIDE_SCRIPT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, text=True, bufsize=1, env=env)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        try:
            self.ready = self.ask({"model": str(folder), "threads": torch_threads, "texts": list(check_texts)})
        except RuntimeError as e:
            self.close()
            raise FerretUnavailable(f"--ferret {python} cannot run ferret: {e}") from None
        except BaseException:
            self.close()
            raise

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def ask(self, request: dict, timeout: float = SIDE_TIMEOUT) -> dict:
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            line = self.lines.get(timeout=timeout)
        except (BrokenPipeError, OSError):
            line = None
        except queue.Empty:
            raise RuntimeError(f"ferret's process gave no answer in {timeout:.0f} s") from None
        if line is None:
            raise RuntimeError(f"ferret's process stopped: {self.stderr_tail()}")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"ferret's side: {answer['error']}")
        return answer

    def stderr_tail(self) -> str:
        try:
            self.err.seek(0)
            lines = [x.strip() for x in self.err.read().splitlines() if x.strip()]
        except (OSError, ValueError):
            return "?"
        return lines[-1][:300] if lines else f"exit code {self.proc.poll()}"

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                self.proc.stdin.write(json.dumps({"quit": True}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self.err.close()

    def __enter__(self) -> "FerretSide":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def python_path(raw: str) -> str:
    """--ferret's Python as an absolute path to an executable file; ValueError (one line) otherwise."""
    found = shutil.which(raw) if os.sep not in raw else raw
    if not found or not Path(found).is_file() or not os.access(found, os.X_OK):
        raise ValueError(f"--ferret {raw}: not an executable Python (give e.g. /tmp/fenv/bin/python)")
    return str(Path(found).absolute())


def word_sums(predictor, text: str, scores: Sequence[float], input_ids: Sequence[int]) -> np.ndarray | None:
    """ferret's per-piece scores summed per textcls word ([CLS]/[SEP] left out); None where the two read different
    pieces."""
    pieces = predictor.tokenizer.split([text])[0][1]
    inner = [int(i) for i in input_ids[1:-1]]
    if [p for w in pieces for p in w] != inner or len(scores) != len(input_ids):
        return None
    inner_scores, out, at = np.asarray(scores[1:-1], dtype=np.float64), [], 0
    for w in pieces:
        out.append(inner_scores[at:at + len(w)].sum())
        at += len(w)
    return np.asarray(out)


def _stats(ms: list[float]) -> dict[str, float]:
    return {"median_ms": statistics.median(ms), "mean_ms": statistics.fmean(ms)} if ms else {}


def run_explain_bench(checkpoint: str | Path = DEFAULT_CHECKPOINT, *, texts: int | Sequence[str] = DEFAULT_TEXTS,
                      load: int = 0, ferret: str | None = None, torch_threads: int = 1,
                      progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Time textcls (and with `ferret`, ferret) text by text; see the module docstring. Returns the per-text rows,
    the summary per method (median and mean ms, the ratios textcls : ferret) and the correctness lines. `texts`: the
    first N sst2 test texts, or the texts themselves."""
    say = progress or (lambda msg: None)
    if load < 0 or torch_threads < 1:
        raise ValueError(f"need load >= 0 and torch_threads >= 1, got {load}, {torch_threads}")
    sample = sst2_texts(texts) if isinstance(texts, int) else [str(t) for t in texts]
    if not sample:
        raise ValueError("no text to time")
    python = python_path(ferret) if ferret else None
    say(f"loading {checkpoint}")
    predictor = load_checkpoint(checkpoint)
    if python and not is_hf(predictor):
        raise ValueError(f"--ferret needs a Hugging Face checkpoint (e.g. {DEFAULT_CHECKPOINT}); {checkpoint} is not")
    result: dict[str, Any] = {"checkpoint": str(checkpoint), "texts": len(sample),
                              "source": "sst2 test" if isinstance(texts, int) else "given", "load": load,
                              "torch_threads": torch_threads, "ig_steps": IG_STEPS, "ferret": python,
                              "thresholds": [round(float(p), 1) for p in THRESHOLDS], "rows": []}
    mine = TextclsSide(predictor)
    with ExitStack() as stack:
        side = None
        if python:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="textcls-ferret-"))) / "model"
            say("exporting the checkpoint for ferret and starting ferret's process")
            export_hf(predictor, folder)
            side = stack.enter_context(FerretSide(python, folder, torch_threads, sample[:CHECK_TEXTS]))
            theirs = np.asarray(side.ready["logits"], dtype=np.float64)
            result["ferret_versions"] = side.ready["versions"]
            result["ferret_import"] = side.ready["ferret_import"]
            result["ferret_torch_threads"] = side.ready["threads"]
            result["export_max_abs_logit_diff"] = float(np.abs(logits_of(predictor, sample[:CHECK_TEXTS])
                                                               - theirs).max())
        busy = stack.enter_context(BusyLoad(load))
        with threads.interactive(torch_threads):
            result["environment"] = environment()
            say("warm-up (first text, untimed)")
            _one_text(predictor, mine, side, sample[0], 0)
            pids = busy.pids + ([side.proc.pid] if side else [])
            snap = cpu_seconds(pids)
            t0 = time.perf_counter()
            for i, text in enumerate(sample):
                if i % 10 == 0:
                    say(f"text {i + 1} of {len(sample)}")
                result["rows"].append(_one_text(predictor, mine, side, text, i))
            result["seconds"] = time.perf_counter() - t0
            others = others_cores(snap, cpu_seconds(pids))
            result["other_cores"] = None if others is None else round(others, 2)
            result["loadavg_end"] = environment()["loadavg"]
    result["summary"] = summarise(result["rows"], side is not None)
    if side is not None:
        result["correctness"] = correctness(result["rows"])
    return result


def _one_text(predictor, mine: TextclsSide, side: FerretSide | None, text: str, i: int) -> dict[str, Any]:
    """One text: each method by textcls and ferret in turn (textcls first on even texts, ferret on odd ones)."""
    target = mine.target(text)
    first = "textcls" if i % 2 == 0 or side is None else "ferret"
    row: dict[str, Any] = {"index": i, "target": target, "first": first, "words": None, "textcls_ms": {},
                           "ferret_ms": {}, "diff": {}}
    for method in METHODS:
        for who in ((first, "ferret" if first == "textcls" else "textcls") if side else ("textcls",)):
            if who == "textcls":
                seconds, out = mine.run(method, text, target)
                row["textcls_ms"][method] = 1000 * seconds
                if method == "aopc":
                    row["textcls_aopc"] = [out[0], out[1]]
            else:
                req = {"method": method, "text": text, "target": target}
                if method == "aopc":
                    req["explanation"] = "integrated_gradients"
                answer = side.ask(req)
                row["ferret_ms"][method] = 1000 * answer["seconds"]
                if method == "aopc":
                    row["ferret_aopc"] = [answer["comprehensiveness"], answer["sufficiency"]]
                else:
                    row.setdefault("ferret", {})[method] = answer
    row["words"] = len(mine.scores["integrated_gradients"])
    if side is not None:
        for method in ("integrated_gradients", "grad_x_input"):
            ans = row["ferret"].pop(method)
            summed = word_sums(predictor, text, ans["scores"], ans["input_ids"])
            row["pieces"] = len(ans["input_ids"]) - 2
            if summed is not None and len(summed) == len(mine.scores[method]):
                row["diff"][method] = float(np.abs(summed - mine.scores[method]).max(initial=0.0))
                row.setdefault("max_abs_score", {})[method] = float(np.abs(mine.scores[method]).max(initial=0.0))
        row.pop("ferret")
        if row["pieces"] == row["words"] and "integrated_gradients" in row["diff"]:
            row["diff"]["aopc"] = float(np.abs(np.subtract(row["textcls_aopc"], row["ferret_aopc"])).max())
    return row


def summarise(rows: list[dict], with_ferret: bool) -> dict[str, dict]:
    """Per method: textcls's (and ferret's) median and mean ms over the texts, the ratios textcls : ferret (of the
    medians, of the means) and the median of the per-text ratios."""
    out = {}
    for m in METHODS:
        mine = [r["textcls_ms"][m] for r in rows]
        entry: dict[str, Any] = {"textcls": _stats(mine)}
        if with_ferret:
            theirs = [r["ferret_ms"][m] for r in rows]
            entry["ferret"] = _stats(theirs)
            entry["ratio_median"] = entry["textcls"]["median_ms"] / entry["ferret"]["median_ms"]
            entry["ratio_mean"] = entry["textcls"]["mean_ms"] / entry["ferret"]["mean_ms"]
            entry["ratio_per_text_median"] = statistics.median(a / b for a, b in zip(mine, theirs) if b > 0)
        out[m] = entry
    return out


def correctness(rows: list[dict]) -> dict[str, Any]:
    """The largest differences between textcls and ferret, per method, and over how many texts."""
    out = {}
    for m in METHODS:
        d = [r["diff"][m] for r in rows if m in r["diff"]]
        out[m] = {"max_abs_diff": max(d) if d else None, "texts": len(d),
                  "max_abs_score": max((r["max_abs_score"][m] for r in rows if m in r.get("max_abs_score", {})),
                                       default=None)}
    return out


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def format_explain_bench(result: dict[str, Any]) -> str:
    """The report: the settings, one row per method, and the correctness lines."""
    env = result["environment"]
    out = [f"textcls bench --explanations - {env['time']}, torch {env['torch']}, {env['cpu_count']} CPU(s), "
           f"load average {env['loadavg']} at the start, {result['loadavg_end']} at the end",
           f"{result['checkpoint']}: {result['texts']} {result['source']} texts, "
           f"{result['torch_threads']} torch thread(s), "
           f"{result['load']} busy background process(es); IG {result['ig_steps']} steps on the logit, no doubling; "
           "AOPC as ferret defines it (thresholds 10 %, 20 %, ..., 100 % of the tokens, positive scores only)"]
    if result.get("ferret"):
        v = result["ferret_versions"]
        out.append(f"ferret-xai {v.get('ferret-xai')} in {result['ferret']} (torch {v.get('torch')}, transformers "
                   f"{v.get('transformers')}, captum {v.get('captum')}; {result['ferret_torch_threads']} thread(s)), "
                   "text by text beside textcls, who goes first alternating")
    ferret = bool(result.get("ferret"))
    headers = ["per text", "textcls median ms", "textcls mean ms"]
    if ferret:
        headers += ["ferret median ms", "ferret mean ms", "textcls : ferret (medians)", "(means)",
                    "(per-text median)"]
    rows = []
    for m in METHODS:
        s = result["summary"][m]
        row = [LABELS[m], _ms(s["textcls"].get("median_ms")), _ms(s["textcls"].get("mean_ms"))]
        if ferret:
            row += [_ms(s["ferret"].get("median_ms")), _ms(s["ferret"].get("mean_ms")), f"{s['ratio_median']:.2f}",
                    f"{s['ratio_mean']:.2f}", f"{s['ratio_per_text_median']:.2f}"]
        rows.append(row)
    out += ["", text_table(headers, rows), ""]
    if ferret:
        out.append(f"correctness: export |logit difference| <= {result['export_max_abs_logit_diff']:.2g} "
                   f"on {min(CHECK_TEXTS, result['texts'])} text(s) (ferret's transformers)")
        for m in METHODS:
            c = result["correctness"][m]
            what = ("per word, ferret's pieces summed" if m != "aopc"
                    else "comprehensiveness and sufficiency, texts whose words are single pieces")
            top = f" (largest |score| {c['max_abs_score']:.3g})" if c["max_abs_score"] is not None else ""
            out.append(f"  {LABELS[m]}: max |textcls - ferret| = "
                       f"{'-' if c['max_abs_diff'] is None else format(c['max_abs_diff'], '.2g')}{top}, "
                       f"{c['texts']} of {result['texts']} texts ({what})")
        if not result["ferret_import"].startswith("package"):
            out.append(f"  ferret imported as {result['ferret_import']}")
    others = result.get("other_cores")
    out.append(f"other CPU: {'?' if others is None else format(others, '.1f')} core(s) used on average by processes "
               "other than the benchmark, ferret's process and the busy ones (more than ~0.2: the machine was shared)")
    out.append(f"({result['seconds']:.0f} s timed)")
    return "\n".join(out)


__all__ = ["CHECK_TEXTS", "DEFAULT_CHECKPOINT", "DEFAULT_TEXTS", "IG_STEPS", "METHODS", "THRESHOLDS", "FerretSide",
           "FerretUnavailable",
           "TextclsSide", "export_hf", "ferret_aopc", "ferret_counts", "format_explain_bench", "logits_of",
           "python_path", "run_explain_bench", "sst2_texts", "word_sums"]
