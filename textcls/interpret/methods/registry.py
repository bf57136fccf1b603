"""The registry of explanation methods: every method is registered once, by the module that implements it, and
every consumer - `explain` (many instances) and `explanation` (one), faithfulness of a split
(`batched.importances`, `SliceRun`), the measures, the CLI's `--methods`, the Attribute page, its cache and the
lessons - reads it. Adding a method is one module with one `@register_method(...)` and its test.

A method may declare typed options of its own (`options=(Option(...), ...)`, textcls.interpret.options: the
window of occlusion, the samples of Shapley and LIME): the CLI's `explain --option NAME=VALUE`, the Attribute page's
widgets and the cache key are built from them, and `explain` checks each value (OptionError, one line).

A method is a function `explain(model, instances, **options) -> list` giving one explanation per instance (an
`Attribution`, or a vector of one weight per token); the options every consumer passes are `labels`,
`baseline`, `n_steps`, `seed` and `removal` (a method uses those it declares and ignores the rest), and
`contrast`: a foil label (name, index or "runner-up"; None = an ordinary explanation) that a `contrastive` method
explains its label against - the gradient and erasure methods, on logit(label) - logit(foil)
(textcls.interpret.contrastive). The model's own attention and the context-mixing methods are not contrastive:
they weigh how tokens mix, not a label's score.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from textcls.interpret.options import Option, OptionError, resolve_options

KINDS = ("attention", "gradient", "perturbation", "context mixing", "reference")   # how a method reads the model
COSTS = {   # cost class -> what one explanation of one text costs
    "pass": "one or two forward (and backward) passes",
    "steps": "one forward and backward pass per integration step (doubled until it converges)",
    "per word": "one forward pass per word (or per layer and word)",
    "samples": "one forward pass per random sample",
    "free": "no model pass",
}


@dataclass(frozen=True)
class Method:
    """One explanation method as every consumer sees it."""

    name: str                          # the key: CLI, JSON, cache and page keys
    label: str                         # on screen ("Integrated gradients")
    short: str                         # in a grid row name ("IG")
    kind: str                          # a value of KINDS
    explain: Callable[..., list]       # (model, instances, **options) -> one explanation per instance
    signed: bool                       # whether a weight can speak against the label (negative)
    needs_gradients: bool              # backward passes through the model
    uses_baseline: bool                # reads the `baseline` option (pad / unk / zero)
    uses_steps: bool = False           # reads `n_steps` (integrated gradients)
    uses_removal: bool = False         # reads `removal` (leave-one-out)
    cost: str = "pass"                 # a key of COSTS
    applies: Callable[[Any], str | None] = lambda model: None   # None where it applies, else why not
    aliases: tuple[str, ...] = ()
    help: str = ""
    bucketed: bool = True              # batched.importances groups texts by length (False: it batches itself)
    reference_only: bool = False       # a floor to compare with (random), not an explanation to show
    contrastive: bool = False          # reads `contrast`: explains logit(label) - logit(foil)
    options: tuple[Option, ...] = ()   # typed options of its own (its explain reads them by name)

    def resolve(self, given: dict | None = None) -> dict[str, Any]:
        """Its own options' values: `given` (only those it declares are read; None means its default) checked,
        defaults for the rest."""
        own = {o.name for o in self.options}
        return resolve_options(self.options, {k: v for k, v in (given or {}).items() if k in own and v is not None},
                               self.name)

    @property
    def slow(self) -> bool:
        """One pass per word or per sample: the Attribute page caps the text length for these."""
        return self.cost in ("per word", "samples")

    def signed_with(self, contrast=None) -> bool:
        """Whether a weight can be negative: a contrastive erasure speaks for the foil when it is (leave-one-out,
        unsigned alone, is then signed); saliency stays a size (the L1 norm of the gradient)."""
        return self.signed or (contrast is not None and self.contrastive and self.kind == "perturbation")


STANDARD_OPTIONS = ("labels", "baseline", "n_steps", "seed", "removal", "contrast", "target", "output")  # every
# consumer may pass these to any method (each uses those it declares with uses_*); a method's own options add to them

REGISTRY: dict[str, Method] = {}     # in registration order: the order the CLI and the pages list them
_ALIASES: dict[str, str] = {}


def register_method(name: str, label: str, *, short: str, kind: str, signed: bool, needs_gradients: bool,
                    uses_baseline: bool, cost: str, help: str, uses_steps: bool = False, uses_removal: bool = False,
                    applies: Callable[[Any], str | None] | None = None, aliases: Sequence[str] = (),
                    bucketed: bool = True, reference_only: bool = False, contrastive: bool = False,
                    options: Sequence[Option] = ()):
    """Decorator: register `explain(model, instances, **options)` under `name` (once)."""
    own = [o.name for o in options]
    if len(set(own)) != len(own) or any(not n.isidentifier() or n in STANDARD_OPTIONS for n in own):
        raise ValueError(f"options of {name!r} must be distinct identifiers other than {', '.join(STANDARD_OPTIONS)}")
    for o in options:
        o.check(o.default)                                # a default outside its own range is a bug
    if cost not in COSTS:
        raise ValueError(f"cost class {cost!r}: choose one of {', '.join(COSTS)}")
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r}: choose one of {', '.join(KINDS)}")

    def deco(fn):
        if name in REGISTRY or name in _ALIASES:
            raise ValueError(f"explanation method {name!r} registered twice")
        for a in aliases:
            if a in REGISTRY or a in _ALIASES:
                raise ValueError(f"alias {a!r} of {name!r} is already a method or an alias")
        REGISTRY[name] = Method(name, label, short, kind, fn, signed, needs_gradients, uses_baseline, uses_steps,
                                uses_removal, cost, applies or (lambda model: None), tuple(aliases), help,
                                bucketed, reference_only, contrastive, tuple(options))
        _ALIASES.update(dict.fromkeys(aliases, name))
        return fn
    return deco


def unregister_method(name: str) -> None:
    """Remove a method (tests register one and take it away again)."""
    m = REGISTRY.pop(name)
    for a in m.aliases:
        _ALIASES.pop(a, None)


def canonical(name: str) -> str:
    """The registered name of a method or alias (case-insensitive); ValueError naming the choices otherwise."""
    key = str(name).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in REGISTRY:
        raise ValueError(f"unknown method {name!r}; the explanation methods: {', '.join(REGISTRY)}")
    return key


def get(name: str) -> Method:
    return REGISTRY[canonical(name)]


def names(*, reference: bool = True) -> list[str]:
    """Every method's name, in registration order (without `random` and other reference floors when
    reference=False)."""
    return [n for n, m in REGISTRY.items() if reference or not m.reference_only]


def labels() -> dict[str, str]:
    return {n: m.label for n, m in REGISTRY.items()}


def why_not(model, name: str) -> str | None:
    """None where the method applies to the model, else a one-line reason."""
    return get(name).applies(model)


def methods_for(model, *, reference: bool = False) -> list[str]:
    """The methods that apply to `model`, in registration order."""
    return [n for n in names(reference=reference) if REGISTRY[n].applies(model) is None]


def parse(raw: str, model=None) -> list[str]:
    """A comma-separated list of methods or aliases -> registered names (deduplicated, in order). ValueError for
    an unknown name, an empty list, or (with a model) a method that does not apply to it."""
    out = []
    for part in str(raw).split(","):
        if part.strip():
            m = canonical(part)
            if model is not None and (why := REGISTRY[m].applies(model)) is not None:
                raise ValueError(f"{m} does not apply to this model: {why}")
            out.append(m)
    if not out:
        raise ValueError("no explanation method given")
    return list(dict.fromkeys(out))


def own_options(names_: Sequence[str]) -> dict[str, tuple[Option, ...]]:
    """{method: its own options} of the methods named (unknown names and methods without any left out)."""
    return {n: REGISTRY[n].options for n in names_ if n in REGISTRY and REGISTRY[n].options}


def options_used(name: str, *, baseline: str = "pad", n_steps: int = 50, removal: str = "delete",
                 contrast=None, options: dict | None = None) -> dict[str, Any]:
    """The options that change this method's result (a cache key ignores the others); "options": its own options'
    values (None for a method without any; OptionError for a bad value)."""
    m = get(name)
    return {"baseline": baseline if m.uses_baseline else None, "n_steps": n_steps if m.uses_steps else None,
            "removal": removal if m.uses_removal else None, "contrast": contrast if m.contrastive else None,
            "options": m.resolve(options) if m.options else None}


def explain(model, instances: Sequence, method: str, **options) -> list:
    """One explanation per instance by a registered method (thread policy: one to a few texts are interactive
    work, more are batch work; textcls.runtime.threads). A `contrast` for a method that is not contrastive is
    a ValueError (one line)."""
    from textcls.runtime.threads import for_texts
    m = get(method)
    why = m.applies(model)
    if why is not None:
        raise ValueError(f"{m.name} does not apply to this model: {why}")
    if options.get("contrast") is not None and not m.contrastive:
        from textcls.interpret.contrastive import NOT_CONTRASTIVE
        raise ValueError(f"{m.name} cannot explain one label rather than another: {NOT_CONTRASTIVE}")
    if m.options:                                  # its own options checked (OptionError), defaults filled in
        own = {o.name for o in m.options}
        options = {k: v for k, v in options.items() if k not in own} | m.resolve(options)
    if not instances:
        return []
    with for_texts(len(instances)):
        return list(m.explain(model, list(instances), **options))


def explanation(model, inst, method: str, *, labels=None, baseline: str = "pad", steps: int = 50,
                removal: str = "delete", contrast=None, options: dict | None = None):
    """One explanation of one instance by a registered method: an `Attribution` or a vector of one weight per
    token (`baseline`, `steps`, `removal` and `contrast` reach the methods that use them, `options` a method's
    own options)."""
    opts = {} if contrast is None else {"contrast": contrast}
    return explain(model, [inst], method, labels=labels, baseline=baseline, n_steps=steps, removal=removal,
                   **opts, **(options or {}))[0]


__all__ = ["COSTS", "KINDS", "STANDARD_OPTIONS", "Method", "Option", "OptionError", "REGISTRY", "canonical", "explain",
           "explanation", "get", "labels", "methods_for", "names", "options_used", "own_options", "parse",
           "register_method", "unregister_method", "why_not"]
