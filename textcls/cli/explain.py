"""`textcls explain DIR TEXT... --methods a,b [--json]`: the words of each text and one weight per word for
each explanation method (the context-mixing methods where the model has self-attention, the model's own
attention, the Captum methods, leave-one-out), integrated gradients with its convergence delta. `--contrast B`:
why the predicted label rather than B (textcls.interpret.contrastive) for the gradient and erasure methods."""
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


def method_options(raw: list[str] | None, methods: list[str]) -> dict[str, dict]:
    """--option NAME=VALUE (repeatable) -> {method: {NAME: value}} for each chosen method that declares NAME
    (Method.options), its value checked; UsageError for a NAME none of them declares or a bad value."""
    from textcls.interpret.methods import REGISTRY, OptionError
    given: dict[str, str] = {}
    for item in raw or ():
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise UsageError(f"--option: expected NAME=VALUE, got {item!r}")
        given[name.strip()] = value.strip()
    out: dict[str, dict] = {}
    for m in methods:
        mine = {k: v for k, v in given.items() if any(o.name == k for o in REGISTRY[m].options)}
        try:
            out[m] = REGISTRY[m].resolve(mine)
        except OptionError as e:
            raise UsageError(f"--option {m}: {one_line(e).removeprefix('--')}") from None
    unused = [k for k in given if not any(k in out[m] for m in methods)]
    if unused:
        declared = "; ".join(f"{m}: {', '.join(o.name for o in REGISTRY[m].options)}"
                             for m in methods if REGISTRY[m].options) or "none of them has any"
        raise UsageError(f"--option {unused[0]}: no chosen method has this option (theirs: {declared})")
    return {m: o for m, o in out.items() if o}


def explain_texts(predictor, texts: list[str], methods: list[str], *, baseline: str = "pad", n_steps: int = 50,
                  seed: int = 0, verdicts: bool = True, contrast=None, options: dict | None = None) -> list[dict]:
    """One dict per text: words, predicted label, and per method the weights (one per word), for integrated
    gradients the convergence delta, and (verdicts) its faithfulness on the text: AOPC and NAOPC, p-values
    against the text's word orders, the verdict and its line (the rule of every page). With `contrast` (a foil:
    a label name, an index or "runner-up"; ValueError for a label the model does not have) the contrastive
    methods explain logit(label) - logit(foil), each entry names its foil ("contrast": the label, None for a
    method that is not contrastive) and the text's "contrast" says which foil was used. `options`: {method: its
    own options} (`method_options`), recorded in each entry ("options")."""
    from textcls.interpret.contrastive import parse
    from textcls.interpret.methods import REGISTRY
    asked, contrast = contrast, parse(contrast, predictor.labels, predictor.model.config.num_labels)
    from textcls.interpret.sources import as_source
    from textcls.interpret.measures import explain_any
    src = as_source(predictor)
    insts = src.instances(texts)
    for text, inst in zip(texts, insts):
        if inst.n == 0:
            raise UsageError(f"text {text!r} has no words the model reads")
    cut = list(getattr(src.encode(list(texts)), "truncated", None) or [False] * len(texts))
    results = [{"text": t, "words": list(i.tokens or []), "truncated": bool(c), "methods": {}}
               for t, i, c in zip(texts, insts, cut)]
    for r, inst in zip(results, insts):
        if r["truncated"]:
            r["note"] = truncation_note(predictor, inst.n)
    for m in methods:
        kw = {} if m == "leave_one_out" else {"baseline": baseline, "n_steps": n_steps, "seed": seed,
                                                "labels": predictor.labels}
        if contrast is not None and REGISTRY[m].contrastive:
            kw.update(contrast=contrast, labels=predictor.labels)
        own = (options or {}).get(m) or {}
        kw.update(own)
        t0 = time.perf_counter()
        try:
            got = explain_any(predictor.model, insts, m, **kw)
        except ValueError as e:
            raise UsageError(f"{m}: {one_line(e)}") from None
        per_text = (time.perf_counter() - t0) / len(insts)
        for r, a in zip(results, got):
            scores = getattr(a, "scores", a)
            entry = {"weights": [float(x) for x in scores], "seconds_per_text": per_text,
                     **({"options": own} if own else {})}
            if getattr(a, "target", None) is not None:
                r["label"] = predictor.labels[int(a.target)] if predictor.labels else int(a.target)
            if getattr(a, "delta", None) is not None:
                entry.update(delta=float(a.delta), converged=bool(a.converged), n_steps=a.n_steps)
            if contrast is not None:
                entry["contrast"] = _contrast_of(r, a, predictor.labels)
            r["methods"][m] = entry
    if contrast is not None:
        for r in results:
            _contrast_note(r, asked)
    if verdicts:
        _verdicts(predictor.model, insts, results)
    return results


def _contrast_of(r: dict, a, labels) -> str | int | None:
    """The foil of a contrastive explanation `a` (None for a method that is not contrastive), recorded once per
    text as r["contrast"]: {"label", "index", "logit_difference"}."""
    extras = getattr(a, "extras", None) or {}
    if "contrast" not in extras:
        return None
    i = int(extras["contrast"])
    name = labels[i] if labels else i
    r.setdefault("contrast", {"label": name, "index": i, "logit_difference": float(a.output)})
    return name


def _contrast_note(r: dict, asked) -> None:
    """The text's contrast record (asked, used) and the one-line note when there is something to say."""
    from textcls.interpret.contrastive import NOT_CONTRASTIVE
    c = r.setdefault("contrast", {"label": None, "index": None, "logit_difference": None})
    c["asked"] = asked
    if c["index"] is None:
        c["note"] = f"no method here is contrastive: {NOT_CONTRASTIVE}"
    elif c["label"] == r.get("label"):
        c["note"] = (f"--contrast {c['label']} is the predicted label: a label against itself explains nothing "
                     "(every contrastive weight is 0)")
    elif any(e["contrast"] is None for e in r["methods"].values()):
        plain = ", ".join(m for m, e in r["methods"].items() if e["contrast"] is None)
        c["note"] = f"{plain}: not contrastive, shown for the predicted label alone"


def truncation_note(predictor, n: int) -> str:
    """The line that says a text was cut before it was explained."""
    cfg = getattr(getattr(predictor, "tokenizer", None), "config", None)
    limit = getattr(cfg, "max_len", None)
    pieces = hasattr(predictor.tokenizer, "pieces_of")                    # a Hugging Face encoder reads pieces
    unit = "word pieces ([CLS]/[SEP] included)" if pieces else "tokens"
    most = f" reads at most {int(limit):,} {unit}" if limit else " reads a bounded number of tokens"
    return f"only the first {n:,} words of this text were explained: the model{most}, and the rest was cut"


def _verdicts(model, insts, results: list[dict]) -> None:
    """Each method's faithfulness on each text, by the one rule of every page (rankings.versus_random against
    chance.judge): AOPCs, NAOPCs, p-values and the verdict line, added to its entry."""
    import numpy as np
    from textcls.interpret.chance import judge
    for r, inst in zip(results, insts):
        _, chance, verdicts = judge(model, inst, {m: np.asarray(e["weights"]) for m, e in r["methods"].items()})
        for m, v in verdicts.items():
            r["methods"][m].update(aopc_comprehensiveness=v["aopc"], aopc_sufficiency=v["sufficiency"],
                                   naopc_comprehensiveness=v["naopc_comprehensiveness"],
                                   naopc_sufficiency=v["naopc_sufficiency"],
                                   p_comprehensiveness=v["p_comprehensiveness"], p_sufficiency=v["p_sufficiency"],
                                   verdict=v["verdict"], verdict_line=v["line"])
        r["chance"] = {"orders": chance["n_orders"], "exact": chance["exact"], "bounds": chance["bounds"],
                       "bounds_by": chance["bounds_by"], "seed": chance["seed"]}


def cmd_explain(args) -> int:
    from textcls.checkpoint import load_checkpoint
    predictor = load_checkpoint(args.checkpoint, device="cpu")
    methods = _methods(args.methods, predictor.model)
    texts = list(args.texts)
    if not all(t.strip() for t in texts):
        raise UsageError("an empty text has no words to explain")
    if args.contrast is not None:
        from textcls.interpret.contrastive import parse
        try:
            parse(args.contrast, predictor.labels, predictor.model.config.num_labels)
        except ValueError as e:
            raise UsageError(f"--contrast: {one_line(e)}") from None
    results = explain_texts(predictor, texts, methods, baseline=args.baseline, n_steps=args.steps, seed=args.seed,
                            verdicts=not args.no_verdict, contrast=args.contrast,
                            options=method_options(args.option, methods))
    if args.json:
        clean = [{k: v for k, v in r.items() if k != "text"} for r in results]
        obj = clean[0] if len(clean) == 1 else clean
        print(json.dumps(obj, default=json_value))
        return 0
    for r in results:
        c = r.get("contrast") or {}
        why = (f" rather than {c['label']} (logit difference {c['logit_difference']:.3f})"
               if c.get("index") is not None else "")
        print(printable(f"{r['text']}  ->  {r.get('label', '?')}{why}"))
        for note in (r.get("note"), c.get("note")):
            if note:
                print(printable(f"note: {note}"))
        width = max(8, *(len(w) for w in r["words"]))
        print(f"{'word':<{width}} " + " ".join(f"{m[:13]:>13}" for m in methods))
        for i, w in enumerate(r["words"]):
            print(printable(f"{w:<{width}} ") + " ".join(f"{r['methods'][m]['weights'][i]:>13.3f}" for m in methods))
        for m in methods:
            e = r["methods"][m]
            if "verdict_line" in e:
                print(printable(f"{m}: {e['verdict_line']}"))
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
                                   "\"label\": ..., \"truncated\": ..., \"methods\": {\"norm\": {\"weights\": [...], "
                                   "\"verdict\": ..., \"naopc_comprehensiveness\": ..., ...}}} for one text, a list of "
                                   "them for several; a text cut to the model's length is explained up to the cut, "
                                   "and says so (\"note\"). With --contrast: \"contrast\": {\"label\", "
                                   "\"index\", \"logit_difference\", \"asked\", \"note\"} and each method's "
                                   "\"contrast\" (its foil, null when it is not contrastive).")
    add_checkpoint(f)
    f.add_argument("texts", nargs="+", metavar="TEXT", help="texts to explain")
    add_explanation_options(f, "every context-mixing method the model supports, and integrated_gradients")
    add_seed(f)
    f.add_argument("--contrast", default=None, metavar="LABEL",
                   help="why the predicted label rather than LABEL (a label name, an index, or runner-up: the "
                        "second most probable label): the gradient and erasure methods explain logit(predicted) - "
                        "logit(LABEL), on a 2-label model the log-odds; the attention and context-mixing methods "
                        "are not contrastive and are shown as without it (docs/contrastive.md)")
    from textcls.interpret.methods import REGISTRY
    declared = "; ".join(f"{m.name}: " + ", ".join(f"{o.name} ({o.type.__name__}, default {o.default}: {o.help})"
                                                   for o in m.options) for m in REGISTRY.values() if m.options)
    f.add_argument("--option", action="append", default=None, metavar="NAME=VALUE",
                   help=f"a method's own option, for every chosen method that has it (repeatable): {declared}")
    f.add_argument("--no-verdict", action="store_true",
                   help="weights only: no faithfulness verdict per method (the verdict re-runs the model on word "
                        "orders of the text: every order up to 8 words, 19 to 99 random orders beyond)")
    f.add_argument("--json", action="store_true", help="JSON on stdout")
    f.set_defaults(func=cmd_explain)
