"""The interpreter contract: every kind of model work beyond a per-token explanation method (concepts, training-data
attribution, salience clusters, the neuron view, ...) is registered once, by the module that implements it, with
what it applies to, its typed options, what it reads, its output kind and its cost. Consumers read only this:

- the CLI builds one command per interpreter that names one (`textcls.cli.interpreters`): the checkpoint, the inputs
  it declares and one flag per option, with the option's type, default, choices and help;
- the model worker runs any of them through one job (`textcls.serve.work.interpret`), the pages through one cached
  call (`pages.common.work.interpret`) keyed on (interpreter, checkpoint stamp, inputs, options);
- a page builds its widgets from the same options (`pages.common.widgets.interpreter_options`).

An interpreter is `run(predictor, inputs, progress=None, **options) -> result`: `inputs` is a dict of plain data
(`text`, `texts`, `data`, `split`, `concept`, ... as declared in `inputs`), `progress(done, total)` is given where
`progress=True`, and the result is plain picklable data with `to_dict()` (JSON) - never a tensor or a model - so the
server reads it without torch. `applies(predictor)` is None where it applies, else one line saying why not. Adding
one is one module that calls `register_interpreter` and its test; tests/test_interpreters.py runs every registered
interpreter's contract. Imports no torch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from textcls.interpret.options import Option, OptionError, find_option, resolve_options

OUTPUTS = ("table", "ranking", "clusters", "vectors", "figure")     # what a result holds (how a page lays it out)
COSTS = {   # cost class -> what one run costs
    "pass": "a few forward and backward passes",
    "split": "a pass over a data split",
    "training set": "a pass over the training set per saved epoch",
}
INPUTS = {  # input name -> what it is (the CLI's spelling of it)
    "text": "one text (positional TEXT)",
    "texts": "several texts (positional TEXT ..., or - for stdin)",
    "data": "a data set by name or path (--data)",
    "split": "the split of --data (--split, default test)",
    "concept": "concept texts: a file of one text per line (--concept FILE) or texts separated by '|'",
    "limit": "at most N texts of the split (--limit)",
    "data_root": "where --data's folders are looked for (--data-root)",
}


class InterpreterError(OptionError):
    """Bad input for an interpreter (an option out of range, a concept of two texts, a checkpoint without what it
    needs): one line, exit 2 in the CLI, a message on a page."""


@dataclass(frozen=True)
class Interpreter:
    """One kind of model work as every consumer sees it."""

    name: str                          # the key: worker job, cache and page keys
    label: str                         # on screen
    run: Callable[..., Any]            # (predictor, inputs, progress=None, **options) -> result with to_dict()
    inputs: tuple[str, ...]            # keys of INPUTS it reads (required unless in `optional`)
    options: tuple[Option, ...] = ()
    output: str = "table"              # a value of OUTPUTS
    cost: str = "pass"                 # a key of COSTS
    applies: Callable[[Any], str | None] = lambda predictor: None
    progress: bool = False             # reports progress(done, total)
    help: str = ""
    command: str | None = None         # the CLI command that runs it (None: app and Python only)
    optional: tuple[str, ...] = ()     # inputs it can do without
    render: Callable[[Any], str] | None = None     # the CLI's text output (default: the JSON, indented)
    example: dict | None = None        # {"inputs": ..., "options": ...}: a quick run on the checkpoint it names
                                       # ("checkpoint": a folder under checkpoints/) for the contract tests and docs
    extra: dict = field(default_factory=dict)      # anything else a consumer may read (documented by the module)

    def option(self, name: str) -> Option:
        try:
            return find_option(self.options, name, self.name)
        except OptionError as e:
            raise InterpreterError(str(e)) from None

    def resolve(self, given: dict | None = None) -> dict[str, Any]:
        """Every option's value: `given` checked and coerced, the defaults for the rest; InterpreterError for an
        unknown option or a bad value."""
        try:
            return resolve_options(self.options, given, self.name)
        except OptionError as e:
            raise InterpreterError(str(e)) from None


REGISTRY: dict[str, Interpreter] = {}


def register_interpreter(name: str, label: str, *, inputs: Sequence[str], options: Sequence[Option] = (),
                         output: str = "table", cost: str = "pass", applies: Callable | None = None,
                         progress: bool = False, help: str = "", command: str | None = None,
                         optional: Sequence[str] = (), render: Callable | None = None, example: dict | None = None,
                         extra: dict | None = None):
    """Decorator: register `run(predictor, inputs, progress=None, **options)` under `name` (once)."""
    if output not in OUTPUTS:
        raise ValueError(f"output {output!r}: choose one of {', '.join(OUTPUTS)}")
    if cost not in COSTS:
        raise ValueError(f"cost class {cost!r}: choose one of {', '.join(COSTS)}")
    for i in (*inputs, *optional):
        if i not in INPUTS:
            raise ValueError(f"input {i!r}: choose from {', '.join(INPUTS)}")
    names_ = [o.name for o in options]
    if len(set(names_)) != len(names_) or any(not n.isidentifier() for n in names_):
        raise ValueError(f"options of {name!r} must be distinct identifiers: {names_}")
    for o in options:
        o.check(o.default)                                # a default outside its own range is a bug

    def deco(fn):
        if name in REGISTRY:
            raise ValueError(f"interpreter {name!r} registered twice")
        if command is not None and any(i.command == command for i in REGISTRY.values()):
            raise ValueError(f"CLI command {command!r} registered twice")
        REGISTRY[name] = Interpreter(name, label, fn, tuple(inputs), tuple(options), output, cost,
                                     applies or (lambda predictor: None), progress, help, command,
                                     tuple(optional), render, example, dict(extra or {}))
        return fn
    return deco


def unregister_interpreter(name: str) -> None:
    """Remove an interpreter (tests register a toy one and take it away again)."""
    REGISTRY.pop(name)


def get(name: str) -> Interpreter:
    key = str(name).strip().lower()
    if key not in REGISTRY:
        raise InterpreterError(f"unknown interpreter {name!r}; the interpreters: {', '.join(REGISTRY)}")
    return REGISTRY[key]


def names() -> list[str]:
    return list(REGISTRY)


def why_not(predictor, name: str) -> str | None:
    """None where the interpreter applies to the checkpoint, else a one-line reason."""
    return get(name).applies(predictor)


def for_model(predictor) -> list[str]:
    """The interpreters that apply to a checkpoint, in registration order."""
    return [n for n, i in REGISTRY.items() if i.applies(predictor) is None]


def run(predictor, name: str, inputs: dict | None = None, options: dict | None = None, progress=None):
    """Interpreter `name` on a loaded checkpoint: its applicability checked, its inputs and options checked
    (InterpreterError, one line), then run (thread policy: batch work where it passes over a split)."""
    it = get(name)
    why = it.applies(predictor)
    if why is not None:
        raise InterpreterError(f"{it.label} does not apply to this model: {why}")
    inputs = dict(inputs or {})
    missing = [i for i in it.inputs if i not in inputs or inputs[i] is None]
    if missing:
        raise InterpreterError(f"{it.label} needs {', '.join(INPUTS[m] for m in missing)}")
    unknown = [k for k in inputs if k not in it.inputs and k not in it.optional]
    if unknown:
        raise InterpreterError(f"{it.label} reads no {', '.join(map(repr, unknown))}")
    opts = it.resolve(options)
    from textcls.runtime.threads import scope
    with scope("batch" if it.cost != "pass" else "interactive"):
        return it.run(predictor, inputs, progress=progress if it.progress else None, **opts)


__all__ = ["COSTS", "INPUTS", "OUTPUTS", "Interpreter", "InterpreterError", "Option", "REGISTRY", "for_model",
           "get", "names", "register_interpreter", "run", "unregister_interpreter", "why_not"]
