"""The neuron view as an interpreter (`textcls neurons CKPT TEXT --layer L --head H --query Q [--json]`): for one
text, one attention site and its heads, the chosen query word's q, every key k, q x k, the score and the softmax,
read from the model by hooks (textcls.interpret.neurons; docs/neuron_view.md). Imports no torch."""
from __future__ import annotations

from textcls.interpret.interpreters.registry import InterpreterError, Option, register_interpreter

OPTIONS = (
    Option("layer", 0, "the attention site: a layer's self-attention, or a pooling attention after them (0-based; "
                       "an error lists them)", low=0),
    Option("head", -1, "the head (0-based); -1: every head", low=-1),
    Option("query", 0, "the query word (0-based index into the text's words); -1: the position the classifier "
                       "reads ([CLS], the cls token); ignored where the query is not a word (ACT's g, LAMA's c, "
                       "HCAN's target)", low=-1),
)


def _applies(predictor) -> str | None:
    from textcls.interpret.neurons import reason
    return reason(predictor)


def _render(result) -> str:
    """The CLI's text: per head, one line per key (q . k, the score, the softmax, the model's own weight)."""
    lines = [f"{result.model}: {result.site} (site {result.layer} of {len(result.sites)}), query "
             f"{result.query_label!r}; {result.formula}", f"scale {result.scale:.4g}; recomputed softmax vs the "
             f"model's attention: max difference {result.max_error:.2g}; {result.seconds * 1000:.0f} ms"]
    if result.note:
        lines.append(result.note)
    for i, h in enumerate(result.heads):
        for r, row in enumerate(result.rows):
            lines.append(f"head {h}, query {row!r}:")
            lines.append(f"  {'key':<24} {'q.k':>9} {'score':>9} {'softmax':>8} {'model':>8}")
            for j, key in enumerate(result.keys):
                s = result.scores[i, r, j]
                lines.append(f"  {key[:24]:<24} {result.dot[i, r, j]:>9.3f} {s:>9.3f} "
                             f"{result.weights[i, r, j]:>8.4f} {result.model_weights[i, r, j]:>8.4f}")
    return "\n".join(lines)


@register_interpreter("neurons", "Neuron view", inputs=("text",), options=OPTIONS, output="vectors", cost="pass",
                      applies=_applies, command="neurons", render=_render,
                      example={"checkpoint": "transformer-sst2", "inputs": {"text": "the movie was not good"},
                               "options": {"layer": 0, "head": 0, "query": 3}},
                      help="one attention head as bertviz's neuron view draws it: the query word's q, every key k, "
                           "q x k, q . k and the softmax, read from the model by hooks")
def run(predictor, inputs: dict, progress=None, layer: int = 0, head: int = -1, query: int = 0):
    from textcls.interpret.neurons import NeuronError, neuron_view
    text = str(inputs.get("text") or "")
    if not text.strip():
        raise InterpreterError("the text is empty")
    try:
        return neuron_view(predictor, text, layer=layer, head=head, query=query)
    except NeuronError as e:
        raise InterpreterError(" ".join(str(e).split())) from None
