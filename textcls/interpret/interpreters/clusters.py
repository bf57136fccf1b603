"""The "clusters" interpreter: the split's texts grouped by the words an explanation method ranks first (salience
clustering, Ebert et al. 2022, as LIT does it: textcls.interpret.salience_clusters). Command `textcls clusters CKPT
[--data NAME] [--split S] [--limit N] [--method NAME] [--k 10] [--top-k 5] [--n-tokens 10] [--seed 0] [--json]`.
Imports no torch."""
from __future__ import annotations

from textcls.interpret.interpreters.registry import InterpreterError, Option, register_interpreter
from textcls.interpret.methods import names as method_names


def _applies(predictor) -> str | None:
    import importlib.util
    if importlib.util.find_spec("sklearn") is None:
        return "salience clustering needs scikit-learn (pip install scikit-learn)"
    return None


def _render(r) -> str:
    lines = [f"{len(r.texts)} texts, {r.method}, top {r.top_k} tokens each, {r.k} clusters (seed {r.seed}), "
             f"{r.seconds['total']:.1f} s"]
    for c in r.clusters:
        toks = ", ".join(f"{t} {w:+.2f}" for t, w in c.top_tokens)
        labels = ", ".join(f"{k} {v}" for k, v in sorted(c.labels.items()))
        lines.append(f"cluster {c.id}: {c.size} texts ({labels}) | {toks}")
        lines += [f"    {r.texts[i][:100]}" for i in c.examples[:3]]
    return "\n".join(lines + list(r.notes))


@register_interpreter(
    "clusters", "Salience clusters", inputs=(), optional=("data", "split", "limit", "data_root"),
    options=(Option("method", "grad_x_input", "the explanation method whose top tokens are clustered",
                    choices=tuple(method_names())),
             Option("k", 10, "number of clusters", low=2, high=100),
             Option("top_k", 5, "tokens of largest |salience| kept per text", low=1, high=20),
             Option("n_tokens", 10, "top tokens shown per cluster", low=1, high=50),
             Option("seed", 0, "k-means seed", low=0, high=2**31 - 1)),
    output="clusters", cost="split", progress=True, command="clusters", applies=_applies, render=_render,
    help="k-means over each text's top salient tokens: groups of texts the model decides on the same words",
    example={"checkpoint": "act-sst2", "inputs": {"limit": 60}, "options": {"k": 4}})
def run(predictor, inputs: dict, progress=None, *, method: str, k: int, top_k: int, n_tokens: int, seed: int):
    from textcls.interpret.interpreters._inputs import split_rows
    from textcls.interpret.methods import why_not
    from textcls.interpret.salience_clusters import salience_clusters
    why = why_not(predictor.model, method)
    if why is not None:
        raise InterpreterError(f"{method} does not apply to this model: {why}")
    texts, gold = split_rows(predictor, inputs)
    try:
        return salience_clusters(predictor, texts, method, gold=gold, k=k, top_k=top_k, n_tokens=n_tokens,
                                 seed=seed, progress=progress)
    except ValueError as e:
        raise InterpreterError(" ".join(str(e).split())) from None
