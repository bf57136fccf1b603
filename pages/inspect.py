"""Inspect: one checkpoint (or two side by side) on one text, its internals drawn the way its paper draws them.

The views come from `textcls.viz` (a registry keyed by model name; each view declares the maps it needs and
the controls it takes), so this page knows no model: any model gets at least the generic view.

Only the selected view of each checkpoint is built, and its figures are cached per (checkpoint, text, view,
controls) across reruns and sessions, so switching back to a view is instant. Each checkpoint's panel is a
fragment: changing its view or a control reruns that panel only, not the page. The checkpoint(s) and the text
live in the URL (`?ckpt=A,B&text=...`), so a copied link reopens the same view. A view of three figures or more
(a BERT's matrix, head view, grid and cls row) shows them in tabs, and only the open tab's figure is drawn.

The model work - loading (the folder's full check first), the maps, the word pieces, the faithfulness line, the
context-mixing panel - runs in the model worker when it is on (pages.common.cache); this page holds no model,
only its `ModelFacts` (specs, vocabulary, word pieces), and draws.
"""
from __future__ import annotations

import zlib

import streamlit as st

from pages.common import cache, context_mixing, contrast, inside_app, neuron_view, shared, urlstate
from pages.common import widgets as w
from textcls import viz
from textcls.analysis.lengths import length_note

TABS_FROM = 3                   # a view of this many figures shows them in tabs, only the open one drawn
VERDICT_PASSES = "200 to 1,500"  # interpret.chance: every order up to 8 words, 19-99 random orders of 11 variants beyond, and the NAOPC bounds

inside_app(__file__)

st.title("Inspect a model")
st.caption("A model's own tensors on your text - attention, feature maps, gates - drawn as in its paper, with the "
           "tokens on every axis. Hover for exact values; every figure downloads as PNG, SVG, CSV and JSON.")

valid = w.require_checkpoints()
by_name = {i.name: i for i in valid}
names = list(by_name)
if urlstate.restore("inspect", {"ckpt": "insp_ckpt", "text": "insp_text"}, options={"ckpt": names}):
    linked = [n for n in st.query_params.get("ckpt", "").split(",") if n in names]
    if linked:
        st.session_state["insp_ckpt"] = linked[0]
        st.session_state["insp_two"] = len(linked) > 1
        if len(linked) > 1:
            st.session_state["insp_ckpt2"] = linked[1]

# no link: the checkpoint chosen last on another page (the encoder just added on Compare), else the main task's first
st.session_state.setdefault("insp_ckpt", shared.latest(names) or w.main_task_checkpoints(valid)[0])
c1, c2 = st.columns([3, 2])
first = c1.selectbox("Checkpoint", names, key="insp_ckpt", format_func=lambda n: w.ckpt_label(by_name[n]),
                     on_change=lambda: shared.note_latest(st.session_state["insp_ckpt"]))
shared.seed_value("insp_two", False)
two = c2.toggle("Side by side with a second checkpoint", key="insp_two",
                disabled=len(names) < 2, help="Needs at least two checkpoints.")
shared.keep_value("insp_two", two)
slots = [first]
if two and len(names) > 1:
    rest = [n for n in names if n != first]
    # the second checkpoint starts on the first one's task (its data set, else its labels): never a relation model
    # beside a sentiment one
    same = ([n for n in rest if by_name[n].data == by_name[first].data]
            or [n for n in rest if list(by_name[n].labels) == list(by_name[first].labels)] or rest)
    shared.seed_value("insp_ckpt2", same[0], options=rest)
    slots.append(c2.selectbox("Second checkpoint", rest, key="insp_ckpt2",
                              format_func=lambda n: w.ckpt_label(by_name[n])))
    shared.keep_value("insp_ckpt2", slots[-1])

relation = any(w.needs_entities(by_name[n]) for n in slots)
if relation:
    w.marker_help()
w.example_picker("insp_text")
with st.form("insp_form"):
    # a link's text, an example's, the one typed on another page, else the default
    shared.seed_text("insp_text", w.RELATION_EXAMPLE if relation else w.EXAMPLE,
                     fits=lambda t: w.has_markers(t) == relation)
    text = st.text_area("Text", height=100, key="insp_text",
                        help="Several sentences are fine: hierarchical models (HCAN) split them. Relation "
                             "checkpoints: mark the entities <e1>..</e1> and <e2>..</e2>.")
    st.form_submit_button("Inspect", type="primary")
urlstate.publish("inspect", {"ckpt": slots, "text": text})
shared.keep_text(text)
text = w.clean_text(text)
if text is None:
    st.stop()

loaded = []
skip = w.missing_markers([by_name[n] for n in slots], text)
for n in slots:
    info = by_name[n]
    if info in skip:
        continue
    pred = w.facts(info)                # what the page reads of the model (it stays in the worker)
    if pred is None:
        continue
    r = w.safe_predict_maps(info, text)
    if r is None:
        continue
    specs = {s.name: s for s in pred.map_specs()}
    loaded.append((info, pred, r, specs))
if not loaded:
    st.stop()

if not any(r.tokens for _, _, r, _ in loaded):
    st.warning("The text has no tokens these models can read (it is empty after tokenisation), so there is "
               "nothing to draw. Try a sentence with words.")
    st.stop()

# Long texts: one token window shared by every view (heatmaps and shaded words page through the text).
n_max = max(len(r.tokens) for _, _, r, _ in loaded)
window = None
if n_max > viz.MAX_TOKENS:
    st.info(f"Long text: {n_max:,} tokens. Figures show a window of the tokens; move it with the slider "
            "(or average into bins in the generic view).", icon=":material/swap_horiz:")
    wc1, wc2 = st.columns([3, 1])
    size = wc2.selectbox("Window", [50, 100, 200], index=2, key="insp_wsize")
    start = wc1.slider("First token shown", 1, max(1, n_max - size + 1), 1, key="insp_wstart")
    window = (start - 1, size)

if len(loaded) == 2:
    items = [dict(name=i.name, model=i.model, specs=s, maps=r.maps, tokens=r.tokens, sentences=r.sentences,
                  label=r.label) for i, _, r, s in loaded]
    if [it["model"] for it in items] == ["act", "transformer"]:
        items.reverse()                                   # the paper's order: Transformer above ACT
    with st.container(border=True):
        stretch = st.toggle("Stretch the shading to each row's range", value=False, key="insp_stretch")
        reasons = viz.reasons_figure(items, title="Words shaded by each model's weight (ACT Table 4 style)",
                                     window=window, stretch=stretch)
        if reasons is not None:
            w.show_figure(reasons, "insp_reasons")


def control_widget(c: viz.Control, key: str):
    """The control's widget. Its key carries a digest of the option labels: a new text (new words to pick from)
    is a new widget at its default, never the previous text's choice shown beside the new figure (the browser
    keeps a keyed widget's displayed option while the key stays the same)."""
    key = f"{key}_{zlib.crc32(chr(31).join(c.labels).encode()):08x}"
    labels = dict(zip(c.options, c.labels))
    idx = c.options.index(c.default) if c.default in c.options else 0
    if len(c.options) <= 1:
        return c.options[0] if c.options else 0
    if len(c.options) <= 8 and max(len(x) for x in c.labels) <= 24:
        return st.radio(c.label, c.options, index=idx, horizontal=True, key=key, format_func=labels.get)
    return st.selectbox(c.label, c.options, index=idx, key=key, format_func=labels.get)


@st.fragment
def render(slot: int, info, pred, r, specs) -> None:
    st.markdown(f"#### {w.md_escape(info.name)}")
    if not r.tokens:                                  # nothing left after its tokenizer: no verdict, nothing to draw
        st.info("This model reads no words in the text (nothing is left after its tokenizer), so it gives no "
                "prediction and there is nothing to draw.")
        return
    p = r.probabilities[r.label]
    st.markdown(f"{w.md_escape(viz.model_title(info.model))} · {w.md_escape(info.data or 'unknown data')} · predicts "
                f"**{w.md_escape(r.label)}** ({100 * p:.1f} %)")
    unk = w.count_unknown(r)
    notes = [f"{len(r.tokens)} tokens"]
    if r.sentences:
        notes.append(f"{len(r.sentences)} sentence(s)")
    if unk:
        named = w.unknown_words(r) or []
        notes.append(f"{unk} not in this model's vocabulary (read as unknown): "
                     + ", ".join(f"“{w.md_escape(viz.short(x, 30))}”" for x in named[:w.MAX_UNKNOWN_NAMED])
                     + (f" and {len(named) - w.MAX_UNKNOWN_NAMED} more" if len(named) > w.MAX_UNKNOWN_NAMED else ""))
    if r.truncated:
        notes.append("the text was cut to the model's maximum length")
    st.caption(" · ".join(notes))
    short_text = length_note(info, len(text.split()), valid)
    if short_text:
        st.info(w.md_escape(short_text), icon=":material/short_text:")
    note = pred.attention_note                               # a Hugging Face family without (editable) attention
    if note:
        st.info(w.md_escape(note))
        if not specs:
            return
    # the column's room: a side-by-side column is about 470 px (44 shaded words' characters, 52 title characters)
    opts: dict = {"window": window, "chars_per_line": 90 if len(loaded) == 1 else 44,
                  "max_width": 900 if len(loaded) == 1 else 470}
    title_chars = 110 if len(loaded) == 1 else 52
    if pred.word_pieces and st.radio(
            "Attention over", ["Words", "Word pieces"], horizontal=True, key=f"insp_units_{slot}_{info.name}",
            help="This encoder reads word pieces, not words: every page shows words, each made of its pieces "
                 "(how is said under the figures). Word pieces shows the weights the encoder computed.") \
            == "Word pieces":
        return piece_panel(slot, info, text, opts, title_chars)
    views = viz.views_for(info.model, specs)
    ids = [v.id for v in views]
    vid = st.selectbox("View", ids, key=f"insp_view_{slot}_{info.name}",
                       format_func=lambda i: viz.VIEWS[i].title_for(info.model))
    st.caption(w.md_escape(viz.VIEWS[vid].description_for(info.model)))
    vi = viz.ViewInput(info.model, specs, r.maps, list(r.tokens), r.sentences, title=info.name, label=r.label,
                       config=dict(info.info.get("model_config", {})))
    controls = viz.view_controls(vid, vi)
    if controls:
        cols = st.columns(min(3, len(controls)))
        for k, c in enumerate(controls):
            with cols[k % len(cols)]:
                opts[c.name] = control_widget(c, f"insp_c_{slot}_{info.name}_{vid}_{c.name}")
    if vid == "generic":
        drawable = [s.name for s in specs.values() if s.name in r.maps]
        default = [n for n in drawable if specs[n].values != "index"][:4] or drawable[:4]
        opts["maps"] = st.multiselect("Maps", drawable, default=default, key=f"insp_maps_{slot}_{info.name}")
        if window is not None:
            opts["aggregate"] = st.toggle("Average long token axes into bins instead of a window", value=False,
                                          key=f"insp_agg_{slot}_{info.name}")
    try:
        with st.spinner("Drawing the view…"):
            figs = cache.view_figures(info.path, text, vid, model=info.model, title=info.name,
                                      config=dict(info.info.get("model_config", {})), opts=opts)
    except Exception as e:  # noqa: BLE001 - a view that cannot draw this input says so, the page goes on
        st.error(f"This view could not be drawn for this input: {type(e).__name__}: {e}")
        return
    if not figs:
        st.info("This view has nothing to draw for this input.")
        return
    box, drawn = figure_tabs(figs, f"insp_fig_{slot}_{info.name}_{vid}", info.name)
    with box:
        for k, item in drawn:
            w.show_figure(item, f"{slot}_{info.name}_{item.key}_{k}", filename=f"{info.name}_{item.key}",
                          title_chars=title_chars)
    if any("off" in f.meta for f in figs):                 # AGCNN's gates: which are off, what opening them changes
        gate_lines(info, text, opts)
    if any("concentration" in f.meta for f in figs):       # an attention view: how far to trust it on this text
        faithfulness_line(slot, info, text)
    w.zip_button(figs, f"{info.name}_{vid}", label="All figures of this view (ZIP)")
    return any(f.html is None for _, f in drawn)             # a Plotly chart was drawn


def figure_tabs(figs: list, key: str, name: str) -> tuple:
    """Where to draw and which figures to draw there, as (index, figure). A view of up to TABS_FROM - 1 figures
    draws them all; a larger one shows them in tabs (st.tabs with on_change="rerun") and draws the open tab's
    figure only: a first render waits for the browser drawing Plotly charts (a BERT's four - the matrix, a
    4,500-element head view, the grid, the cls row - took 5.5 s of its main thread; one takes 0.1-0.4 s), and a
    figure nobody opens costs nothing. The open tab is kept by position while the view's settings change its
    figures' titles (another layer)."""
    if len(figs) < TABS_FROM:
        return st.container(), list(enumerate(figs))
    labels = []
    for f in figs:      # "minilm-sst2 · head view, layer 6" -> "head view, layer 6"; a repeated title numbered
        label = f.title.split(" · ", 1)[1] if f.title.startswith(f"{name} · ") else f.title
        labels.append(label if label not in labels else f"{label} ({sum(x.startswith(label) for x in labels) + 1})")
    if st.session_state.get(key) not in labels:          # new titles (another layer): the same position open
        st.session_state[key] = labels[min(st.session_state.get(f"{key}_open", 0), len(figs) - 1)]
    tabs = st.tabs(labels, key=key, on_change="rerun")
    for k, (tab, f) in enumerate(zip(tabs, figs)):
        if tab.open:
            st.session_state[f"{key}_open"] = k
            return tab, [(k, f)]
    return st.container(), []


def piece_panel(slot: int, info, text: str, opts: dict, title_chars: int) -> bool:
    """The self-attention view over the word pieces the encoder read (a Hugging Face checkpoint), with what the word
    view makes of them. True: Plotly charts were drawn."""
    from textcls.data.pieces import WORD_RULE, piece_window, shown_note
    try:
        with st.spinner("Reading the word pieces…"):
            pa = cache.piece_attention(info.path, text)
    except Exception as e:  # noqa: BLE001 - the word view stands without this one
        st.error(f"The word pieces could not be shown for this input: {type(e).__name__}: {e}")
        return False
    opts = {**opts, "window": piece_window(pa, opts.get("window"))}
    controls = viz.piece_controls(pa.pieces, pa.attention)
    cols = st.columns(min(3, len(controls))) if controls else []
    for k, c in enumerate(controls):
        with cols[k % len(cols)]:
            opts[c.name] = control_widget(c, f"insp_pc_{slot}_{info.name}_{c.name}")
    st.caption(w.md_escape(shown_note(pa, opts["window"], viz.MAX_TOKENS)))
    with st.spinner("Drawing the view…"):
        figs = cache.piece_figures(info.path, text, title=info.name, opts=opts)
    for k, item in enumerate(figs):
        w.show_figure(item, f"{slot}_{info.name}_{item.key}_{k}", filename=f"{info.name}_{item.key}",
                      title_chars=title_chars)
    st.caption(w.md_escape(WORD_RULE))
    w.zip_button(figs, f"{info.name}_pieces", label="All figures of this view (ZIP)")
    return any(f.html is None for f in figs)


def gate_lines(info, text: str, opts: dict) -> None:
    """Under AGCNN's gate maps: how many of each shown map's gates are off (closed, exactly 0) on this text and how
    far forcing them open moves the prediction, then the one closed gate whose opening moves it most - the Lab's
    numbers (`interpret.lab.gate_closures`, computed by the model worker, cached)."""
    from pages.common import work
    from textcls.interpret import lab_texts as lab
    try:
        with st.spinner("Opening the closed gates, one map at a time…"):
            closures, _ = work.agcnn_gates(work.lab_source(info.path), text)
    except Exception as e:  # noqa: BLE001 - extra information; the figures stand without it
        st.caption(f"What the closed gates change could not be computed: {w.md_escape(type(e).__name__)}.")
        return
    labels, j, p = closures["labels"], closures["label"], closures["probs"]
    h, k = opts.get("h"), int(opts.get("k", 0) or 0)
    shown = [row for row in closures["maps"] if row["h"] == h and (not k or f"_k{k}_" in row["map"] + "_")]
    lines = []
    for row in shown:
        closed = row["closed"]
        if closed != closed or closed == 0:                 # NaN: no n-gram fits; 0: nothing off
            lines.append(f"The {row['title']}: no gate is off on this text.")
            continue
        lines.append(f"The {row['title']}: {100 * closed:.0f} % of its gates are off on this text (closed: those "
                     f"features never reach the max-pool). Opening them all (gate = 1) moves {labels[j]} from "
                     f"{100 * p[j]:.1f} % to {100 * row['probs_open'][j]:.1f} %.")
    said = lab.gate_closure_lines(closures)              # the Lab's: the map that matters most, the one gate
    top = max(closures["maps"], key=lambda row: row["tvd_open"])["map"]
    lines += said[1:] if top in [row["map"] for row in shown] else said   # its first line: the shown map's, above
    st.markdown(":material/toggle_off: **Gates that are off, and what opening them changes** (as on the Lab)\n\n"
                + "\n".join(f"- {w.md_escape(x)}" for x in lines))


def faithfulness_line(slot: int, info, text: str) -> None:
    """The model's own per-token importance (the shading on Compare) against random word orders, on this text. A
    pretrained encoder runs the test when asked (a toggle, kept for the session): its 20 erasure curves are about
    220 passes of the encoder, 3-4 s on a CPU, where a small model's take 0.1-0.3 s and run at once."""
    if w.is_pretrained(info) and not st.toggle(
            "Test this attention against random word orders", key=f"insp_verdict_{slot}_{info.name}",
            help=f"{VERDICT_PASSES} passes of the encoder on this text (a few seconds on a CPU), so it runs when "
                 "asked; the small models run it at once. It stays on for the session."):
        st.caption("**Faithful on this text?** Turn on the test above: this ranking against random word orders.")
        return
    try:
        with st.spinner("Testing the attention against random word orders…"):
            v = cache.attention_verdict(info.path, text)        # erasure curves (not the flip test) vs random orders
    except Exception as e:  # noqa: BLE001 - the test is extra information; the view stands without it
        st.caption(f"Faithfulness on this text could not be computed: {w.md_escape(type(e).__name__)}.")
        return
    st.caption(f"**Faithful on this text?** {w.md_escape(v['line'])} (The weights are the model's own "
               "per-token importance, the shading on Compare.)")
    st.caption(w.md_escape(v["rule"]))


cols = st.columns(len(loaded)) if len(loaded) > 1 else [st.container()]
drew_plotly = False
for slot, ((info, pred, r, specs), col) in enumerate(zip(loaded, cols)):
    with col:
        drew_plotly |= bool(render(slot, info, pred, r, specs))
        context_mixing.inspect_panel(info, pred, text, f"insp{slot}")      # issue 43: weights vs values/residual
        contrast.inspect_panel(info, r.probabilities if r.tokens else {}, text, f"insp{slot}", window)  # rather than
        if r.tokens:
            neuron_view.panel(info.path, text, key=f"insp{slot}_nv_{info.name}")
if not drew_plotly:
    w.prefetch_plotly()                 # the other views are Plotly charts: load that code before they are picked
