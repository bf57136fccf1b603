"""ferret-xai's side of `python -m textcls bench --explanations --ferret PYTHON`, run by that other Python (the one
where ferret-xai is installed; textcls never imports ferret and does not need this script's packages).

It answers one JSON request per line on stdin with one JSON line on stdout, so that the benchmark starts it once and
times only ferret's own calls (the seconds are measured here, around the ferret call alone):

  {"model": FOLDER, "threads": 1, "texts": [...]}         first line: load FOLDER (a plain Hugging Face folder:
      -> {"ready": true, "versions": {...}, "threads": N,   AutoModelForSequenceClassification + AutoTokenizer),
          "logits": [[...], ...], "ferret_import": ...}      torch.set_num_threads; the texts' logits (a check)
  {"method": "integrated_gradients" | "grad_x_input", "text": T, "target": J}
      -> {"seconds": s, "scores": [...], "input_ids": [...]}  ferret's IntegratedGradientExplainer / GradientExplainer
                                                              (multiply_by_inputs=True) at their defaults: one score
                                                              per word piece, [CLS] and [SEP] included
  {"method": "aopc", "text": T, "target": J, "explanation": "integrated_gradients"}
      -> {"seconds": s, "comprehensiveness": c, "sufficiency": u}   ferret's AOPC_Comprehensiveness_Evaluation and
                                                              AOPC_Sufficiency_Evaluation at their defaults, of this
                                                              side's last explanation of T by that method
  {"quit": true} or end of input: exit 0.      A request that fails: {"error": "one line"}.

Everything else this process prints (ferret's, transformers' and tqdm's messages) goes to stderr.
`import ferret` also imports ferret's Benchmark (datasets, pyarrow); where that fails only for such a reason, the
explainers and evaluators are imported from ferret's folder without the package's __init__ ("submodules").
"""
from __future__ import annotations

import json
import sys
import time

REPLY = sys.stdout
sys.stdout = sys.stderr          # nothing but replies on the protocol's stream


def reply(obj) -> None:
    REPLY.write(json.dumps(obj) + "\n")
    REPLY.flush()


def one_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {' '.join(str(e).split())}"[:400]


def import_ferret():
    """(GradientExplainer, IntegratedGradientExplainer, AOPC comprehensiveness, AOPC sufficiency, how imported)."""
    how = "package"
    try:
        import ferret  # noqa: F401
    except ImportError as e:
        import importlib.util
        import types
        spec = importlib.util.find_spec("ferret")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError(f"ferret-xai is not installed in {sys.executable}") from e
        for name in [m for m in sys.modules if m == "ferret" or m.startswith("ferret.")]:
            del sys.modules[name]
        pkg = types.ModuleType("ferret")
        pkg.__path__ = list(spec.submodule_search_locations)
        pkg.__spec__ = spec
        sys.modules["ferret"] = pkg
        how = f"submodules (import ferret failed: {one_line(e)})"
    from ferret.evaluators.faithfulness_measures import AOPC_Comprehensiveness_Evaluation, AOPC_Sufficiency_Evaluation
    from ferret.explainers.gradient import GradientExplainer, IntegratedGradientExplainer
    return GradientExplainer, IntegratedGradientExplainer, AOPC_Comprehensiveness_Evaluation, \
        AOPC_Sufficiency_Evaluation, how


def versions() -> dict:
    from importlib import metadata
    out = {"python": sys.version.split()[0]}
    for dist in ("ferret-xai", "torch", "transformers", "captum", "numpy"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


class Side:
    """ferret's explainers and evaluators on one model, and the last explanation of each method."""

    def __init__(self, folder: str, threads: int):
        grad, ig, comp, suff, self.how = import_ferret()
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
        torch.set_num_threads(int(threads))
        self.torch = torch
        self.model = AutoModelForSequenceClassification.from_pretrained(folder).float().eval()
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.explainers = {"integrated_gradients": ig(self.model, self.tokenizer, multiply_by_inputs=True),
                           "grad_x_input": grad(self.model, self.tokenizer, multiply_by_inputs=True)}
        self.evaluators = (comp(self.model, self.tokenizer), suff(self.model, self.tokenizer))
        self.last: dict[str, tuple[str, object]] = {}

    def logits(self, texts) -> list:
        rows = []
        with self.torch.no_grad():
            for t in texts:
                enc = self.tokenizer(t, return_tensors="pt", truncation=True)
                rows.append([float(x) for x in self.model(**enc).logits[0]])
        return rows

    def explain(self, method: str, text: str, target: int) -> dict:
        explainer = self.explainers[method]
        t0 = time.perf_counter()
        expl = explainer(text, target=target)
        seconds = time.perf_counter() - t0
        self.last[method] = (text, expl)
        ids = self.tokenizer(text, truncation=True)["input_ids"]
        return {"seconds": seconds, "scores": [float(x) for x in expl.scores], "input_ids": [int(i) for i in ids]}

    def aopc(self, text: str, target: int, explanation: str) -> dict:
        if self.last.get(explanation, (None,))[0] != text:
            raise ValueError(f"no {explanation} explanation of this text yet: ask for it first")
        expl = self.last[explanation][1]
        comp, suff = self.evaluators
        t0 = time.perf_counter()
        c = comp.compute_evaluation(expl, target=target)
        s = suff.compute_evaluation(expl, target=target)
        seconds = time.perf_counter() - t0
        return {"seconds": seconds, "comprehensiveness": float(c.score), "sufficiency": float(s.score)}


def main() -> int:
    side = None
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if req.get("quit"):
                break
            if side is None:
                side = Side(str(req["model"]), int(req.get("threads", 1)))
                reply({"ready": True, "versions": versions(), "threads": side.torch.get_num_threads(),
                       "logits": side.logits(req.get("texts", [])), "ferret_import": side.how})
            elif req.get("method") == "aopc":
                reply(side.aopc(req["text"], int(req["target"]), req.get("explanation", "integrated_gradients")))
            elif req.get("method") in ("integrated_gradients", "grad_x_input"):
                reply(side.explain(req["method"], req["text"], int(req["target"])))
            else:
                raise ValueError(f"unknown request {str(req)[:80]}")
        except Exception as e:  # noqa: BLE001 - the protocol's contract: one line back, the process goes on
            reply({"error": one_line(e)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
