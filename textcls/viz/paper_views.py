"""The paper views (ACT, Transformer, HCAN/CAN, Kim CNN/AGCNN, LAMA, and "generic" for any model), registered
in `views`, and `reasons_figure`: several models' token weights one above the other."""
from __future__ import annotations

from functools import partial

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from textcls.interpret.concentration import concentration
from textcls.viz.axes import AXIS_TITLES, axis_labels, token_window
from textcls.viz.headview import head_view
from textcls.viz.maps import (attention_grid, find_spec, find_specs, grid_table, heatmap_from_slice, slice_map,
    slice_table, window_sizes)
from textcls.viz.style import FONT, FigureOut, esc, short
from textcls.interpret.importance import token_weights
from textcls.viz.tokens import (ENTITY_NOTE, SHADE_NOTE, has_entities, highlight_table, token_highlight_rows,
    token_rows_html)
from textcls.viz.view_parts import chars_per_line, ctrl, heat, ngram, stretch_control, token_choice, with_trust
from textcls.viz.views import Control, ViewInput, register_view

if TYPE_CHECKING:  # outputs imports torch; MapSpec is imported where two views build one
    from textcls.records import SpecRecord as MapSpec     # MapSpec's fields, without torch


# ---- generic: every map

@register_view("generic", "All maps (generic)", "One heatmap per map the model declares, axes from map_specs().",
               models=(), needs=lambda specs: True,
               controls=lambda vi: _generic_controls(vi))
def _generic(vi: ViewInput) -> list[FigureOut]:
    """opts: "maps" (names to draw; default all), one index per leading axis ("layer", "head", ...)."""
    out = []
    only = vi.opts.get("maps")
    for spec in vi.specs.values():
        if spec.name not in vi.maps or (only is not None and spec.name not in only):
            continue
        arr = np.asarray(vi.maps[spec.name])
        index = {a: min(int(vi.opts.get(a, 0)), arr.shape[i] - 1) for i, a in enumerate(spec.axes[:-2])}
        if spec.values == "index":   # token positions: show the token each cell points at
            s = slice_map(arr, spec, vi.tokens, sentences=vi.sentences, index=index)
            fig = heatmap_from_slice(s, spec, title=f"{vi.title} · {spec.name}", cell_tokens=vi.tokens,
                                      colors=dict(colorscale="Greys", zmin=0, zmax=max(1, len(vi.tokens) - 1) * 1.6))
            tab = slice_table(s)
            tab["token"] = [vi.tokens[int(v)] if 0 <= int(v) < len(vi.tokens) else "" for v in tab["value"]]
            out.append(FigureOut(f"{vi.model}_{spec.name}", spec.name, fig, tab, spec.description,
                                 meta={"map": spec.name, "axes": list(spec.axes), "kind": spec.kind}))
            continue
        out.append(_blank_heat(vi, spec.name, spec, arr, title=f"{vi.title} · {spec.name}",
                               caption=spec.description, index=index, aggregate=bool(vi.opts.get("aggregate"))))
    return out


def _generic_controls(vi: ViewInput) -> list[Control]:
    sizes: dict[str, int] = {}
    for spec in vi.specs.values():
        if spec.name in vi.maps:
            arr = np.asarray(vi.maps[spec.name])
            for i, a in enumerate(spec.axes[:-2]):
                sizes[a] = max(sizes.get(a, 0), arr.shape[i])
    out = []
    for a, n in sizes.items():
        if n > 1:
            labels = axis_labels(a, n, vi.tokens, sentences=vi.sentences)
            out.append(Control(a, AXIS_TITLES.get(a, a), list(range(n)), labels))
    return out


def _entity_note(rows) -> str:
    """The legend of the entity outlines, for relation sentences only."""
    return " " + ENTITY_NOTE if has_entities(rows) else ""


# ---- ACT

def _act_specs(specs):
    M = find_spec(specs, axes=("layer", "head", "filter", "token"), names=("M", "feature_map"))
    arg = find_spec(specs, axes=("layer", "head", "filter"), values="index")
    alpha = find_spec(specs, axes=("token",), kind="attention", names=("alpha",))
    return M, arg, alpha


@register_view("ACT-T4", "ACT Table 4: words shaded by global attention",
               "The sentence with each word shaded by the global-attention weight alpha (ACT eq. 6). "
               "Open a Transformer checkpoint beside it to get the paper's Transformer-above-ACT table.",
               models=("act", "transformer"),
               needs=lambda specs: find_spec(specs, axes=("token",), kind="attention") is not None,
               controls=lambda vi: [stretch_control()])
def _act_t4(vi: ViewInput) -> list[FigureOut]:
    tw = token_weights(vi.specs, vi.maps, vi.tokens, vi.sentences)
    if tw is None:
        return []
    w, src = tw
    name = vi.title or vi.model
    rows = [(f"{name} → {vi.label}" if vi.label else name, vi.tokens, w)]
    kw = dict(title=f"{name}: global attention over the words", window=vi.window,
              stretch=bool(vi.opts.get("stretch")))
    return [with_trust(FigureOut(f"{vi.model}_act-t4", "words shaded by global attention",
                             token_highlight_rows(rows, chars_per_line=chars_per_line(vi), **kw), highlight_table(rows),
                             caption=f"Weights: {src}. {SHADE_NOTE}" + _entity_note(rows),
                             html=token_rows_html(rows, **kw)),
                   concentration(w, vi.tokens))]


def _layer_head_controls(vi: ViewInput, spec: MapSpec | None) -> list[Control]:
    """Layer and head pickers for a map whose first two axes are (layer, head); the last layer by default."""
    if spec is None or spec.name not in vi.maps:
        return []
    nl, nh = np.asarray(vi.maps[spec.name]).shape[:2]
    return [ctrl("layer", nl, "layer ", "layer", default=nl - 1), ctrl("head", nh, "head ", "head")]


def _act_controls(vi: ViewInput) -> list[Control]:
    return _layer_head_controls(vi, _act_specs(vi.specs)[0])


@register_view("ACT-FM", "ACT Fig. 1: feature maps per head and layer",
               "The attentive-convolution feature map M (filter x token) of one layer and head; circles mark "
               "each filter's max-pooled position, and the table lists the n-gram each filter fires on.",
               models=("act",), needs=lambda specs: _act_specs(specs)[0] is not None, controls=_act_controls)
def _act_fm(vi: ViewInput) -> list[FigureOut]:
    M, arg, _ = _act_specs(vi.specs)
    Ma = np.asarray(vi.maps[M.name])
    l = min(int(vi.opts.get("layer", Ma.shape[0] - 1)), Ma.shape[0] - 1)
    h = min(int(vi.opts.get("head", 0)), Ma.shape[1] - 1)
    n = len(vi.tokens)
    kernel = int(vi.config.get("kernel_size", 3))
    shift = (kernel - 1) // 2 if vi.config.get("conv_padding") == "center" else 0   # window start = j - shift
    fmap = Ma[l, h][:, :n]                                           # (filter, token)
    picks = np.asarray(vi.maps[arg.name])[l, h].astype(int) if arg is not None and arg.name in vi.maps \
        else fmap.argmax(axis=1)

    def gram(j: int) -> str:
        return ngram(vi.tokens, j - shift, kernel + min(0, j - shift))

    marks = [(f, int(j), f"f{f + 1} max at token {int(j) + 1}: '{gram(int(j))}' ({fmap[f, int(j)]:.4g})")
             for f, j in enumerate(picks) if 0 <= int(j) < n]
    item = heat(vi, f"act-fm_l{l + 1}_h{h + 1}", M, Ma, index={"layer": l, "head": h}, marks=marks,
                 title=f"{vi.title} · feature map M", caption=M.description)
    # the n-grams: strongest filters first
    rows = []
    for f, j in enumerate(picks):
        j = int(j)
        if 0 <= j < n:
            rows.append({"filter": f"f{f + 1}", "max_value": float(fmap[f, j]), "position": j,
                         "ngram": gram(j)})
    tab = pd.DataFrame(rows).sort_values("max_value", ascending=False) if rows else \
        pd.DataFrame(columns=["filter", "max_value", "position", "ngram"])
    top = tab.head(20)
    bar = go.Figure(go.Bar(x=top["max_value"], y=[f"{esc(r.filter)}: {esc(short(r.ngram, 40))}"
                                                   for r in top.itertuples()],
                           orientation="h", marker_color="#c0392b",
                           hovertemplate="%{y}<br>max activation %{x:.6g}<extra></extra>"))
    bar.update_layout(title=dict(text=esc(f"{vi.title} · the n-gram each filter picks (layer {l + 1}, head {h + 1}, "
                                          f"top {len(top)} of {len(tab)} filters)"), x=0.01, font=dict(size=14)),
                      yaxis=dict(autorange="reversed", automargin=True), height=int(150 + 22 * max(1, len(top))),
                      margin=dict(l=10, r=10, t=45, b=10), xaxis=dict(title="max activation", automargin=True),
                      font=dict(family=FONT),
                      plot_bgcolor="white")
    ng = FigureOut(f"{vi.model}_act-ngrams_l{l + 1}_h{h + 1}", "n-grams per filter", bar, tab,
                   caption=f"Kernel {kernel}: the window at position j covers tokens "
                           f"{'j-%d..j+%d' % (shift, kernel - 1 - shift) if shift else 'j..j+%d' % (kernel - 1)}.")
    return [item, ng]


# ---- Transformer

def _tr_specs(specs):
    att = find_spec(specs, axes=("layer", "head", "query_token", "key_token"), kind="attention",
                    names=("attention",))
    cls = find_spec(specs, axes=("layer", "head", "key_token"), kind="attention",
                    names=("cls_attention", "decoder_attention", "pooled_attention"))
    return att, cls


def _query_control(vi: ViewInput) -> Control:
    """The head view's query token: every token (-1), or one, as bertviz's hover does."""
    toks = vi.tokens or [""]
    return Control("query", "head view: lines from", [-1, *range(len(toks))],
                   ["every token", *(f"{i + 1}: {t}" for i, t in enumerate(toks))], default=-1)


def _tr_controls(vi: ViewInput) -> list[Control]:
    return _layer_head_controls(vi, _tr_specs(vi.specs)[0]) + [_query_control(vi)]


@register_view("TR-ATT", "Transformer self-attention: one layer and head, and the grid of all heads",
               "Self-attention weights (query x key) for one layer and head; the grid of every layer and head "
               "(bertviz's model view); with cls pooling also the classification token's row per layer and head.",
               models=("transformer", "hf"), needs=lambda specs: _tr_specs(specs)[0] is not None,
               controls=_tr_controls)
def _tr_att(vi: ViewInput) -> list[FigureOut]:
    from textcls.records import SpecRecord as MapSpec     # MapSpec's fields, without torch

    att, cls = _tr_specs(vi.specs)
    A = np.asarray(vi.maps[att.name])
    nl, nh = A.shape[:2]
    l = min(int(vi.opts.get("layer", nl - 1)), nl - 1)
    h = min(int(vi.opts.get("head", 0)), nh - 1)
    partial = " Rows sum to less than 1: the rest of each query's weight is on the cls token." \
        if att.values == "partial" and "cls" not in att.description else ""
    n = min(len(vi.tokens), A.shape[-1])
    unit = str(vi.opts.get("unit", "word"))               # what the tokens are ("piece": an encoder's word pieces)
    out = [with_trust(heat(vi, f"tr-att_l{l + 1}_h{h + 1}", att, A, index={"layer": l, "head": h},
                        title=f"{vi.title} · self-attention (rows: queries, columns: keys)",
                        caption=att.description + partial), concentration(A[l, h, :n, :n], vi.tokens, unit=unit),
                  "heads")]
    q = int(vi.opts.get("query", -1))
    out.append(head_view(A[l], vi.tokens, query=None if q < 0 else q, window=vi.window,
                         title=f"{vi.title} · head view, layer {l + 1}", key=f"{vi.model}_tr-headview_l{l + 1}"))
    grid = attention_grid(A, vi.tokens, window=vi.window, max_width=int(vi.opts.get("max_width", 900)),
                          title=f"{vi.title} · all layers x heads (rows: queries, columns: keys)")
    out.append(with_trust(FigureOut(f"{vi.model}_tr-grid", "all layers x heads", grid,
                                grid_table(A, vi.tokens, window=vi.window),
                                caption="Each cell is one head's attention matrix (bertviz's model view); hover for "
                                        "the tokens and the weight."),
                      concentration(A[:, :, :n, :n], vi.tokens, unit=unit), "heads"))
    if cls is not None and cls.name in vi.maps:
        C = np.asarray(vi.maps[cls.name])                                  # (layer, head, token)
        flat = C.reshape(C.shape[0] * C.shape[1], -1)
        spec = MapSpec(cls.name, ("head", "token"), cls.kind, cls.description)
        s = slice_map(flat, spec, vi.tokens, window=vi.window)
        s.row_labels = [f"L{i // C.shape[1] + 1} H{i % C.shape[1] + 1}" for i in range(flat.shape[0])]
        s.row_axis = "layer·head"
        what = {"cls_attention": "the classification token", "decoder_attention": "the decoder query"}.get(
            cls.name, "the pooled position")
        fig = heatmap_from_slice(s, spec, title=f"{vi.title} · what {what} attends to, per layer and head")
        out.append(FigureOut(f"{vi.model}_tr-cls", "cls row", fig, slice_table(s), caption=cls.description))
    return out


# ---- HCAN (hierarchical) and CAN (its flat, word-level-only variant)

@dataclass
class _Hier:
    selfs: list[tuple[MapSpec, np.ndarray]]       # each (S, head, W, W)
    beta: tuple[MapSpec, np.ndarray] | None       # (S, head, W)
    gamma: tuple[MapSpec, np.ndarray] | None      # (head, S)
    sentences: list[list[str]]


def _hcan_specs(specs):
    selfs = find_specs(specs, axes=("sentence", "head", "query_word", "key_word"), kind="attention") or \
        find_specs(specs, axes=("head", "query_token", "key_token"), kind="attention")
    beta = find_spec(specs, axes=("sentence", "head", "word"), kind="attention", names=("beta",)) or \
        find_spec(specs, axes=("head", "token"), kind="attention", names=("beta",))
    gamma = find_spec(specs, axes=("head", "sentence"), kind="attention", names=("gamma",))
    return selfs, beta, gamma


def _hier(vi: ViewInput) -> _Hier:
    """HCAN maps as they are, CAN maps with a sentence axis of one added (the text is one sentence)."""
    selfs, beta, gamma = _hcan_specs(vi.specs)
    flat = bool(selfs) and "query_token" in selfs[0].axes or (beta is not None and "token" in beta.axes)
    sents = [list(vi.tokens)] if flat or not vi.sentences else [list(x) for x in vi.sentences]
    fix = (lambda a: np.asarray(a)[None]) if flat else np.asarray
    return _Hier([(s, fix(vi.maps[s.name])) for s in selfs if s.name in vi.maps],
                 (beta, fix(vi.maps[beta.name])) if beta is not None and beta.name in vi.maps else None,
                 (gamma, np.asarray(vi.maps[gamma.name])) if gamma is not None and gamma.name in vi.maps else None,
                 sents)


def _flat_word(sents: list[list[str]], k: int) -> tuple[int, int]:
    """Flat token index k -> (sentence, word)."""
    for si, s in enumerate(sents):
        if k < len(s):
            return si, k
        k -= len(s)
    return max(0, len(sents) - 1), max(0, len(sents[-1]) - 1) if sents else 0


def _hcan_controls(vi: ViewInput) -> list[Control]:
    return [token_choice(vi, "token", "chosen word (its self-attention row)")]


def _hcan_f4_controls(vi: ViewInput) -> list[Control]:
    return _hcan_controls(vi) + [stretch_control()]


def _hcan_self_rows(vi: ViewInput, hi: _Hier, tag: str) -> list[FigureOut]:
    """The chosen word's self-attention row in each branch, one row per head (HCAN Fig. 4 right / Fig. 5)."""
    from textcls.records import SpecRecord as MapSpec     # MapSpec's fields, without torch

    si, wi = _flat_word(hi.sentences, int(vi.opts.get("token", 0)))
    words = hi.sentences[si] if si < len(hi.sentences) else []
    word = words[wi] if wi < len(words) else "?"
    where = f"S{si + 1}, word {wi + 1}" if len(hi.sentences) > 1 else f"word {wi + 1}"
    out = []
    for spec, A in hi.selfs:
        if si >= A.shape[0] or wi >= A.shape[2]:
            continue
        n = max(1, min(len(words), A.shape[3]))
        rowmap = A[si, :, wi, :n]                                         # (head, key_word)
        s2 = MapSpec(spec.name, ("head", "key_word"), spec.kind, spec.description, values=spec.values)
        s = slice_map(rowmap, s2, None, sentences=[words], index={}, window=None)
        s.col_labels = [str(w) for w in words[:n]]
        s.fixed, s.fixed_labels = {"sentence": si, "query_word": wi}, {}
        branch = {"A_a": "branch a (ELU values)", "A_b": "branch b (tanh values)"}.get(spec.name, spec.name)
        fig = heatmap_from_slice(s, s2, title=f"{vi.title} · {branch}: where '{short(word, 20)}' ({where}) looks")
        out.append(FigureOut(f"{vi.model}_hcan-{tag}-{spec.name}_s{si + 1}_w{wi + 1}", f"{spec.name} row", fig,
                             slice_table(s), caption=spec.description))
    return out


@register_view("HCAN-F4", "HCAN Fig. 4: word and sentence target attention; one word's self-attention",
               "Each sentence's words shaded by the word-level target attention (beta, mean of heads), each "
               "sentence's weight gamma, and the self-attention row of one chosen word in both branches.",
               models=("hcan", "can"), needs=lambda specs: _hcan_specs(specs)[1] is not None,
               controls=_hcan_f4_controls,
               per_model={"can": ("CAN (HCAN's flat model): word target attention; one word's self-attention",
                                  "The text's words shaded by the target attention (mean of heads) - one "
                                  "distribution over the whole text, as CAN has no sentences - and the "
                                  "self-attention row of one chosen word in both branches. HCAN's Fig. 4 draws "
                                  "the same for its word level.")})
def _hcan_f4(vi: ViewInput) -> list[FigureOut]:
    hi = _hier(vi)
    out = []
    if hi.beta is not None:
        B = hi.beta[1].mean(axis=1)                                       # (S, W)
        G = hi.gamma[1].mean(axis=0) if hi.gamma is not None else None     # (S,)
        rows = []
        window = vi.window
        flat = len(hi.sentences) == 1                 # CAN: one "sentence", the token window applies inside it
        lo, hi_ = token_window(sum(len(x) for x in hi.sentences), None if flat else window, 10**9)
        start = 0
        for si, sent in enumerate(hi.sentences[: B.shape[0]]):
            end, begin = start + len(sent), start
            start = end
            if not flat and window is not None and (end <= lo or begin >= hi_):
                continue                              # long documents: the sentences in the token window
            g = f"  (sentence weight {G[si]:.3f})" if G is not None and si < G.shape[0] else ""
            lab = f"S{si + 1}{g}" if len(hi.sentences) > 1 or G is not None else vi.title
            rows.append((lab, sent, B[si, : len(sent)]))
        title = f"{vi.title} · word-level target attention" + (" per sentence" if len(rows) > 1 else "")
        if not flat and window is not None and len(rows) < len(hi.sentences):
            title += f" (sentences {rows[0][0].split()[0]}-{rows[-1][0].split()[0]} of {len(hi.sentences)})"
        kw = dict(title=title, window=window if flat else None, stretch=bool(vi.opts.get("stretch")))
        sents = hi.sentences[: B.shape[0]]
        conc = concentration([hi.beta[1][si, :, : len(x)] for si, x in enumerate(sents) if len(x) >= 2] or
                             [B[0, :1]])                               # each head's distribution per sentence
        out.append(with_trust(FigureOut(f"{vi.model}_hcan-f4-words", "word target attention per sentence",
                                    token_highlight_rows(rows, chars_per_line=chars_per_line(vi), **kw), highlight_table(rows),
                                    caption=("Words shaded by the target attention (mean over heads), the "
                                             "text's words as one distribution; concentration per head. " if flat
                                             else "Words shaded by beta (mean over heads), each sentence's words "
                                             "as a distribution of their own; concentration per head and "
                                             "sentence. ") + SHADE_NOTE, html=token_rows_html(rows, **kw)), conc, "heads"))
        if G is not None:
            n = min(len(G), len(hi.sentences))
            labels = axis_labels("sentence", n, sentences=hi.sentences)
            bar = go.Figure(go.Bar(x=G[:n], y=[esc(x) for x in labels], orientation="h", marker_color="#2c7fb8",
                                   hovertemplate="%{y}<br>gamma %{x:.6g}<extra></extra>"))
            bar.update_layout(title=dict(text=esc(f"{vi.title} · sentence-level target attention (gamma, mean "
                                                  f"of heads)"), x=0.01, font=dict(size=14)),
                              yaxis=dict(autorange="reversed", automargin=True), height=int(150 + 28 * n),
                              margin=dict(l=10, r=10, t=45, b=10), plot_bgcolor="white", font=dict(family=FONT),
                              xaxis=dict(title="weight (the sentences' weights sum to 1)", automargin=True,
                                         range=[0, 1.02]))
            tab = pd.DataFrame({"sentence_index": range(n), "sentence": labels, "value": G[:n]})
            out.append(with_trust(FigureOut(f"{vi.model}_hcan-f4-sentences", "sentence attention", bar, tab,
                                        caption=hi.gamma[0].description),
                              concentration(hi.gamma[1][:, :n], labels, unit="sentence"), "heads"))
    out += _hcan_self_rows(vi, hi, tag="f4")
    return out


@register_view("HCAN-F5", "HCAN Fig. 5: one word's self-attention, branch a vs branch b",
               "The self-attention row of one chosen word in each parallel self-attention (A_a, A_b), one row per "
               "head; a one-self-attention checkpoint has a single branch.",
               models=("hcan", "can"), needs=lambda specs: bool(_hcan_specs(specs)[0]), controls=_hcan_controls,
               per_model={"can": ("CAN (HCAN's flat model): one word's self-attention, branch a vs branch b",
                                  "The self-attention row of one chosen word in each parallel self-attention "
                                  "(A_a, A_b), one row per head, over the whole text (as HCAN's Fig. 5 draws it "
                                  "within a sentence); a one-self-attention checkpoint has a single branch.")})
def _hcan_f5(vi: ViewInput) -> list[FigureOut]:
    hi = _hier(vi)
    out = _hcan_self_rows(vi, hi, tag="f5")
    si, wi = _flat_word(hi.sentences, int(vi.opts.get("token", 0)))
    words = hi.sentences[si] if si < len(hi.sentences) else []
    for spec, A in hi.selfs:                                  # each branch's heads over the chosen word's sentence
        if si < A.shape[0] and len(words) >= 2:
            n = min(len(words), A.shape[-1])
            branch = {"A_a": "branch a", "A_b": "branch b"}.get(spec.name, spec.name)
            out.append(head_view(A[si, :, :n, :n], words[:n], query=wi if wi < n else None,
                                 title=f"{vi.title} · head view, {branch}" + (f", sentence {si + 1}"
                                                                             if len(hi.sentences) > 1 else ""),
                                 key=f"{vi.model}_hcan-headview-{spec.name}_s{si + 1}"))
    return out


# ---- Kim CNN / AGCNN

def _h_control(vi: ViewInput, default: int | None = None) -> Control:
    hs = window_sizes(vi.specs) or [1]
    d = hs.index(default) if default in hs else 0
    return Control("h", "window size h", hs, [f"h = {h}" for h in hs], default=hs[d])


_NGRAM_MAP = re.compile(r"(?:conv_pre|conv|gate|gated)_h(\d+)(?:_k\d+)?")   # column j: the h-gram at word j


def _past_end(vi: ViewInput, name: str, arr) -> np.ndarray:
    """A convolution or gate map (Kim CNN, AGCNN) with its columns past the sentence's last complete h-gram blank
    (NaN), never 0: the model pads them with zeros, and a 0 reads as a silent feature or a closed gate. Other maps
    are returned as they are."""
    a = np.asarray(arr, dtype=float)
    m = _NGRAM_MAP.fullmatch(name)
    if m is None or not vi.tokens or a.ndim == 0:
        return a
    valid = max(0, len(vi.tokens) - int(m.group(1)) + 1)          # h-grams that fit in the sentence
    if a.shape[-1] > valid:
        a = a.copy()
        a[..., valid:] = np.nan
    return a


def _short_map_note(vi: ViewInput, arr, h: int) -> str:
    """Why the last columns of a convolution map are blank (grey): a window of h words starts at no later token."""
    missing = min(h - 1, len(vi.tokens)) if vi.tokens else 0
    if missing <= 0:
        return ""
    return (f" Grey columns: the last {missing} token(s) start no complete {h}-word window, so the map has no "
            "value there (each column is the n-gram that starts at its token; blank, not 0).")


def _said(description: str) -> str:
    """A map's description as a sentence (a caption goes on after it)."""
    d = description.strip()
    return d if not d or d.endswith((".", "!", "?")) else d + "."


def _blank_heat(vi: ViewInput, key: str, spec: MapSpec, arr, **kw) -> FigureOut:
    """`_heat` of a map whose columns past the sentence's end are blank: those cells grey, never hovered."""
    item = heat(vi, key, spec, _past_end(vi, spec.name, arr), **kw)
    item.fig.update_traces(hoverongaps=False, selector=dict(type="heatmap"))
    item.fig.update_layout(plot_bgcolor="#d9d9d9")
    return item


def _gate_heat(vi: ViewInput, key: str, spec: MapSpec, arr, h: int, *, title: str) -> FigureOut:
    """A gate map D with its closed gates marked: exactly 0 is "off" (dark, and "off" on hover and, where the
    cells are large enough, in the cell: the filter's feature never reaches the max-pool there), open gates
    green by how much they let through, positions past the sentence's end blank (grey). meta["off"]: how many
    of the gates on the sentence are off."""
    from textcls.viz.explanations import CLOSED_COLOR
    item = _blank_heat(vi, key, spec, arr, title=title)
    tr = item.fig.data[0]
    z = np.asarray(tr.z, dtype=float)
    valid = np.isfinite(z)
    off = valid & (z == 0)
    zmax = float(max(np.nanmax(z) if valid.any() else 0.0, 1e-6))
    text = np.where(off, "off", "")
    tr.update(colorscale=[[0.0, CLOSED_COLOR], [1e-9, "#f7fcf5"], [1.0, "#00441b"]], zmin=0, zmax=zmax,
              zmid=None, reversescale=False, text=text.tolist(),
              hovertemplate=tr.hovertemplate.replace("<extra></extra>", " %{text}<extra></extra>"))
    if z.size <= 400:                                       # cells large enough to read a word in
        tr.update(texttemplate="%{text}", textfont=dict(color="white", size=11))
    else:
        tr.update(texttemplate=None)
    n_off, n_valid = int(off.sum()), int(valid.sum())
    share = f"{100 * n_off / n_valid:.0f} %" if n_valid else "none"
    item.caption = (f"{_said(spec.description)} Dark cells are off: a closed gate (exactly 0) switches its filter's "
                    f"feature off at that n-gram, before the max-pool. Off on this text: {n_off:,} of {n_valid:,} "
                    f"gates drawn ({share}); green: the share of the feature let through (above 1: amplified)."
                    + _short_map_note(vi, arr, h))
    item.meta["off"] = {"off": n_off, "gates": n_valid}
    return item


def _picks(vi: ViewInput, name: str, h: int) -> list[tuple[int, int, str]] | None:
    if name not in vi.maps:
        return None
    idx = np.asarray(vi.maps[name]).astype(int).reshape(-1)
    return [(f, int(j), f"f{f + 1} max-pool picks '{ngram(vi.tokens, int(j), h)}'") for f, j in enumerate(idx)]


@register_view("AG-F3", "AGCNN Fig. 3: Kim CNN feature maps before / after ReLU",
               "The convolution feature maps for one window size, before and after the ReLU (filter x token, "
               "token = first word of the n-gram); circles mark each filter's max-pooled n-gram.",
               models=("kim_cnn",), needs=lambda specs: bool(window_sizes(specs)),
               controls=lambda vi: [_h_control(vi)])
def _ag_f3(vi: ViewInput) -> list[FigureOut]:
    hs = window_sizes(vi.specs)
    h = int(vi.opts.get("h", hs[0]))
    h = h if h in hs else hs[0]
    marks = _picks(vi, f"argmax_h{h}", h)
    out = []
    for name, what in ((f"conv_pre_h{h}", "before ReLU"), (f"conv_h{h}", "after ReLU")):
        if name in vi.maps:
            out.append(_blank_heat(vi, f"ag-f3_{name}", vi.specs[name], vi.maps[name], marks=marks,
                             title=f"{vi.title} · h = {h}, {what}",
                             caption=_said(vi.specs[name].description) + _short_map_note(vi, vi.maps[name], h)))
    return out


def _agf4_gates(vi: ViewInput, h: int) -> list[MapSpec]:
    return sorted((s for s in vi.specs.values() if s.kind == "gate" and re.match(rf"gate_h{h}_k\d+", s.name)),
                  key=lambda s: [int(x) for x in re.findall(r"\d+", s.name)])


def _agf4_controls(vi: ViewInput) -> list[Control]:
    """The window size h, and which gate width k to show (one at a time fits a screen; "all" is the paper's
    full stack)."""
    hc = _h_control(vi, default=1)
    ks = sorted({int(re.search(r"_k(\d+)", s.name).group(1)) for s in vi.specs.values()
                 if s.kind == "gate" and re.search(r"_k(\d+)", s.name)})
    if len(ks) <= 1:
        return [hc]
    return [hc, Control("k", "gate width k", [*ks, 0], [*(f"k = {k}" for k in ks), "all"], ks[0])]


@register_view("AG-F4", "AGCNN Fig. 4: conv maps, gates k = 1/3/5, gated maps",
               "For one window size h: the convolution map before and after the activation, each attention "
               "gate D (one per gate width k) and each gated map m = C * D that the max-pool reads.",
               models=("agcnn",), needs=lambda specs: any(s.kind == "gate" for s in specs.values()),
               controls=_agf4_controls)
def _ag_f4(vi: ViewInput) -> list[FigureOut]:
    hs = window_sizes(vi.specs)
    h = int(vi.opts.get("h", 1 if 1 in hs else hs[0]))
    h = h if h in hs else hs[0]
    out = []
    for name, what in ((f"conv_pre_h{h}", "before activation"), (f"conv_h{h}", "after activation (C)")):
        if name in vi.maps:
            out.append(_blank_heat(vi, f"ag-f4_{name}", vi.specs[name], vi.maps[name],
                             title=f"{vi.title} · h = {h}, {what}",
                             caption=_said(vi.specs[name].description) + _short_map_note(vi, vi.maps[name], h)))
    want = int(vi.opts.get("k", 0) or 0)                      # 0: every gate width (the paper's stack)
    for g in _agf4_gates(vi, h):
        k = re.search(r"_k(\d+)", g.name).group(1)
        if g.name not in vi.maps or (want and int(k) != want):
            continue
        gated = g.name.replace("gate_", "gated_", 1)
        argn = g.name.replace("gate_", "argmax_", 1)
        out.append(_gate_heat(vi, f"ag-f4_{g.name}", g, vi.maps[g.name], h,
                              title=f"{vi.title} · gate D, h = {h}, k = {k}"))
        if gated in vi.maps:
            out.append(_blank_heat(vi, f"ag-f4_{gated}", vi.specs[gated], vi.maps[gated], marks=_picks(vi, argn, h),
                                   title=f"{vi.title} · gated map m = C·D, h = {h}, k = {k}",
                                   caption=_said(vi.specs[gated].description) + _short_map_note(vi, vi.maps[gated], h)))
    return out


# ---- LAMA

def _lama_spec(specs):
    return find_spec(specs, axes=("head", "token"), kind="attention", names=("attention",))


@register_view("LAMA-HT", "LAMA: attention of each head over the tokens",
               "A (head x token): each of the m heads' attention distribution over the words, and the words "
               "shaded by the mean over heads.",
               models=("lama",), needs=lambda specs: _lama_spec(specs) is not None,
               controls=lambda vi: [stretch_control()])
def _lama(vi: ViewInput) -> list[FigureOut]:
    spec = _lama_spec(vi.specs)
    A = np.asarray(vi.maps[spec.name])
    n = min(len(vi.tokens), A.shape[-1])
    out = [with_trust(heat(vi, "lama-ht", spec, A, title=f"{vi.title} · head x token attention",
                        caption=spec.description, aggregate=bool(vi.opts.get("aggregate"))),
                  concentration(A[:, :n], vi.tokens), "heads")]
    rows = [(f"{vi.title} → {vi.label}" if vi.label else vi.title, vi.tokens, A.mean(axis=0)[: len(vi.tokens)])]
    kw = dict(title=f"{vi.title} · words shaded by the mean over heads", window=vi.window,
              stretch=bool(vi.opts.get("stretch")))
    out.append(with_trust(FigureOut(f"{vi.model}_lama-mean", "mean over heads",
                                token_highlight_rows(rows, chars_per_line=chars_per_line(vi), **kw), highlight_table(rows),
                                caption=SHADE_NOTE, html=token_rows_html(rows, **kw)),
                      concentration(A.mean(axis=0)[:n], vi.tokens)))
    return out


# ---------------------------------------------------------------- several models' reasons (ACT-T4 style)

def reasons_figure(items: Sequence[dict[str, Any]], *, title: str = "What each model looked at",
                   window: tuple[int, int] | None = None, stretch: bool = False,
                   chars_per_line: int = 90) -> FigureOut | None:
    """items: dicts with name, model, specs, maps, tokens, sentences, label. One shaded row per model."""
    rows, srcs = [], []
    for it in items:
        tw = token_weights(it["specs"], it["maps"], it["tokens"], it.get("sentences"))
        if tw is None:
            continue
        rows.append((f"{it['name']} → {it.get('label', '')}", it["tokens"], tw[0]))
        srcs.append(f"{it['name']}: {tw[1]}")
    if not rows:
        return None
    fig = partial(token_highlight_rows, rows, title=title, window=window, stretch=stretch,    # built when exported
                  chars_per_line=chars_per_line)
    return FigureOut("reasons", title, fig, partial(highlight_table, rows),                # a table when exported
                     caption="Weights - " + "; ".join(srcs) + ". " + SHADE_NOTE + _entity_note(rows),
                     html=token_rows_html(rows, title=title, window=window, stretch=stretch))
