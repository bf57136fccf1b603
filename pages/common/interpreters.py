"""The one door from a page to any registered interpreter (textcls.interpret.interpreters): its option widgets built
from its declared options, and its result - computed where `cache.model_job` decides (the model worker when it is
on), keyed on (interpreter, checkpoint folder, its stamp, inputs, options). A cheap interpreter (cost "pass") is
cached across sessions with st.cache_data; one that passes over a split or a training set runs on a click with a
progress bar and is kept in this session. A page lays out what comes back; it computes nothing itself."""
from __future__ import annotations

import json
from pathlib import Path

import streamlit as st

from pages.common import widgets as w
from pages.common.cache import ask, stamp

KEPT_RUNS = 8          # results of runs over a split or a training set kept per session (the newest)


def options_form(name: str, key: str, *, skip: tuple[str, ...] = (), columns: int = 3) -> dict:
    """One widget per option of interpreter `name` (its help as the tooltip); `skip`: options the page sets
    itself. Returns {option: value}."""
    from textcls.interpret.interpreters import get
    return option_widgets([o for o in get(name).options if o.name not in skip], key, columns=columns)


def method_option_widgets(methods, key: str) -> dict[str, dict]:
    """{method: {option: value}}: one widget per option of each of these explanation methods that declares any
    (textcls.interpret.methods: Method.options), keyed `{key}_{method}_{option}`."""
    from textcls.interpret.methods import own_options
    return {m: option_widgets(opts, f"{key}_{m}") for m, opts in own_options(methods).items()}


def option_widgets(shown, key: str, *, columns: int = 3) -> dict:
    """One widget per typed option (textcls.interpret.options.Option: an interpreter's or an explanation
    method's), keyed `{key}_{name}`, its help as the tooltip. Returns {option: value}."""
    out = {}
    cols = st.columns(columns) if shown else []          # a third of the row each, as the settings above
    for n, o in enumerate(shown):
        k = f"{key}_{o.name}"
        preset = k in st.session_state              # a value set by the page (or the URL): no default beside it
        with cols[n % len(cols)]:
            if o.choices:
                at = {} if preset else {"index": list(o.choices).index(o.default)}
                out[o.name] = st.selectbox(o.title, list(o.choices), help=o.help, key=k, **at)
            elif o.type is bool:
                out[o.name] = st.checkbox(o.title, help=o.help, key=k, **({} if preset else {"value": o.default}))
            elif o.type in (int, float):
                out[o.name] = st.number_input(o.title, min_value=o.type(o.low) if o.low is not None else None,
                                              max_value=o.type(o.high) if o.high is not None else None,
                                              step=1 if o.type is int else None, help=o.help, key=k,
                                              **({} if preset else {"value": o.default}))
            else:
                out[o.name] = st.text_input(o.title, help=o.help, key=k, **({} if preset else {"value": o.default}))
    return out


def split_inputs(key: str, data: str | None, split: str | None, *, help: str, default: int = 500) -> dict:
    """The inputs of an interpreter that reads a split: the data set and split the page chose, and a widget for how
    many of its texts (a seeded sample; 0 = all)."""
    limit = st.number_input("Split texts (0 = the whole split)", 0, 1_000_000, default, step=100, key=f"{key}_limit",
                            help=help)
    inputs = {"data": data, "split": split or "test", "limit": int(limit) or None}
    return {k: v for k, v in inputs.items() if v is not None}


def interpret(name: str, path: str | Path, inputs: dict, options: dict | None = None):
    """The result of interpreter `name` on a checkpoint, cached per (interpreter, checkpoint and its stamp, inputs,
    options). Raises InterpreterError (one line) for bad input or a model it does not apply to."""
    return ask("interpret", name, str(path), stamp(path), dict(inputs), dict(options or {}))


def on_click(name: str, path: str | Path, inputs: dict, options: dict | None, *, key: str, button: str,
             what: str):
    """A run over a split or a training set: the result kept in this session if it was computed, else a button
    that computes it with a progress bar (errors are one line). None until computed."""
    store = st.session_state.setdefault("_interpreted", {})
    request = (name, str(path), stamp(path), json.dumps(inputs, sort_keys=True), json.dumps(options or {},
                                                                                            sort_keys=True))
    if request in store:
        return store[request]
    if not st.button(button, key=f"{key}_run", type="primary", icon=":material/play_arrow:"):
        return None
    bar = st.progress(0.0, text="Starting…")

    def progress(done: int, total: int) -> None:
        bar.progress(min(1.0, done / max(total, 1)), text=f"{done:,} / {total:,}")
    from textcls.interpret.interpreters import InterpreterError
    with w.or_one_line(what, stop=False):
        try:
            store[request] = ask("interpret", name, str(path), request[2], dict(inputs), dict(options or {}),
                                 keep=0, progress=progress)      # kept in this session, not in the shared cache
            while len(store) > KEPT_RUNS:                # a split's result can be large: the oldest go
                store.pop(next(iter(store)))
        except InterpreterError as e:             # bad input: a message, never a traceback
            st.warning(w.md_escape(" ".join(str(e).split())), icon=":material/info:")
    bar.empty()
    return store.get(request)


def why_not(name: str, path: str | Path) -> str | None:
    """None where interpreter `name` applies to the checkpoint, else the one line saying why not (cached)."""
    return ask("interpret_why_not", name, str(path), stamp(path))
