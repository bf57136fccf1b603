"""`textcls explain DIR TEXT... --methods a,b [--json]`: the words of each text and one weight per word for
each explanation method (the context-mixing methods where the model has self-attention, the model's own
attention, the Captum methods, leave-one-out), integrated gradients with its convergence delta."""
from __future__ import annotations

import json
import time

from textcls.cli.common import (UsageError, add_checkpoint, add_explanation_options, add_seed, json_value,
    methods_of, one_line, printable)


def _methods(raw: str | None, model) -> list[str]:
    """--methods, or by default every context-mixing method the model supports and integrated gradients."""
    if raw is None:
        from textcls.interpret.methods import REGISTRY, methods_for
        return [m for m in methods_for(model) if REGISTRY[m].kind == "context mixing"] + ["integrated_gradients"]
    return methods_of(raw, model)


def explain_texts(predictor, texts: list[str], methods: list[str], *, baseline: str = "pad", n_steps: int = 50,
                  seed: int = 0) -> list[dict]:
    """One dict per text: words, predicted label, and per method the weights (one per word) and, for
    integrated gradients, the convergence delta."""
    from textcls.interpret.sources import as_source
    from textcls.interpret.measures import explain_any
    src = as_source(predictor)
    insts = src.instances(texts)
    for text, inst in zip(texts, insts):
        if inst.n == 0:
            raise UsageError(f"text {text!r} has no words the model reads")
    results = [{"text": t, "words": list(i.tokens or []), "methods": {}} for t, i in zip(texts, insts)]
    for m in methods:
        kw = {} if m == "leave_one_out" else {"baseline": baseline, "n_steps": n_steps, "seed": seed,
                                                "labels": predictor.labels}
        t0 = time.perf_counter()
        try:
            got = explain_any(predictor.model, insts, m, **kw)
        except ValueError as e:
            raise UsageError(f"{m}: {one_line(e)}") from None
        per_text = (time.perf_counter() - t0) / len(insts)
        for r, a in zip(results, got):
            scores = getattr(a, "scores", a)
            entry = {"weights": [float(x) for x in scores], "seconds_per_text": per_text}
            if getattr(a, "target", None) is not None:
                r["label"] = predictor.labels[int(a.target)] if predictor.labels else int(a.target)
            if getattr(a, "delta", None) is not None:
                entry.update(delta=float(a.delta), converged=bool(a.converged), n_steps=a.n_steps)
            r["methods"][m] = entry
    return results


def cmd_explain(args) -> int:
    from textcls.checkpoint import load_checkpoint
    predictor = load_checkpoint(args.checkpoint, device="cpu")
    methods = _methods(args.methods, predictor.model)
    texts = list(args.texts)
    if not all(t.strip() for t in texts):
        raise UsageError("an empty text has no words to explain")
    results = explain_texts(predictor, texts, methods, baseline=args.baseline, n_steps=args.steps, seed=args.seed)
    if args.json:
        clean = [{k: v for k, v in r.items() if k != "text"} for r in results]
        obj = clean[0] if len(clean) == 1 else clean
        print(json.dumps(obj, default=json_value))
        return 0
    for r in results:
        print(printable(f"{r['text']}  ->  {r.get('label', '?')}"))
        width = max(8, *(len(w) for w in r["words"]))
        print(f"{'word':<{width}} " + " ".join(f"{m[:13]:>13}" for m in methods))
        for i, w in enumerate(r["words"]):
            print(printable(f"{w:<{width}} ") + " ".join(f"{r['methods'][m]['weights'][i]:>13.3f}" for m in methods))
        for m in methods:
            e = r["methods"][m]
            if "delta" in e:
                print(f"{m}: convergence delta {e['delta']:.2e} ({e['n_steps']} steps, "
                      f"{'converged' if e['converged'] else 'NOT converged'})")
        print()
    return 0


def add_parser(sub) -> None:
    f = sub.add_parser("explain", help="one weight per word for each explanation method",
                       description="The words of each TEXT and one weight per word for each method. Default "
                                   "methods: every context-mixing method the model supports (norm, globenc, alti, "
                                   "value_zeroing, decompx) and integrated_gradients. --json: {\"words\": [...], "
                                   "\"label\": ..., \"methods\": {\"norm\": {\"weights\": [...], ...}}} for one "
                                   "text, a list of them for several.")
    add_checkpoint(f)
    f.add_argument("texts", nargs="+", metavar="TEXT", help="texts to explain")
    add_explanation_options(f, "every context-mixing method the model supports, and integrated_gradients")
    add_seed(f)
    f.add_argument("--json", action="store_true", help="JSON on stdout")
    f.set_defaults(func=cmd_explain)
