"""textcls.viz: labels from MapSpec axes, escaping, long inputs, token highlights, the views of every model,
export. Pure Plotly: no Streamlit, no browser (one PNG/SVG test uses kaleido + Chromium when present)."""
import json
import zipfile
import io

import numpy as np
import pytest
import torch

import textcls
from textcls import viz
from textcls.models.outputs import MapSpec
from textcls.models.registry import get_entry

WORDS = "the food was not very good but the staff were kind and the room was clean".split()
HOSTILE = ["<script>alert(1)</script>", "<b>bold</b>", "a&b", "😀", '"quoted"', "<br>", "中文"]


def fig_json(fig) -> str:
    return fig.to_json()


def model_output(name, words=WORDS, sentences=None, seed=0):
    """A small random model's maps (batch axis removed) for `words` (or `sentences` for HCAN)."""
    torch.manual_seed(seed)
    model = textcls.create_model(name, vocab_size=50, num_labels=2, preset="small").eval()
    g = torch.Generator().manual_seed(seed)
    if get_entry(name).input_kind == "sentences":
        sentences = sentences or [WORDS[:5], WORDS[5:11], WORDS[11:]]
        W = max(len(s) for s in sentences)
        ids = torch.zeros(1, len(sentences), W, dtype=torch.long)
        for i, s in enumerate(sentences):
            ids[0, i, :len(s)] = torch.randint(2, 50, (len(s),), generator=g)
        tokens = [w for s in sentences for w in s]
    else:
        ids = torch.randint(2, 50, (1, len(words)), generator=g)
        tokens = list(words)
    with torch.no_grad():
        out = model(ids, return_maps=True)
    maps = {k: v[0].detach().numpy() for k, v in out.maps.items()}
    specs = {s.name: s for s in model.map_specs()}
    return specs, maps, tokens, sentences, model.config


# ---------------------------------------------------------------- labels

def test_axis_labels_every_axis_kind():
    assert viz.axis_labels("token", 3, ["a", "b", "c"]) == ["a", "b", "c"]
    assert viz.axis_labels("key_token", 4, ["a", "b"]) == ["a", "b", "<pad>", "<pad>"]
    assert viz.axis_labels("head", 3) == ["head 1", "head 2", "head 3"]
    assert viz.axis_labels("filter", 2) == ["f1", "f2"]
    assert viz.axis_labels("layer", 2) == ["layer 1", "layer 2"]
    assert viz.axis_labels("word", 2, sentences=[["x"], ["y", "z"]], sentence_index=1) == ["y", "z"]
    sl = viz.axis_labels("sentence", 2, sentences=[["the", "food"], ["but", "slow"]])
    assert sl[0].startswith("S1: the food") and sl[1].startswith("S2: but slow")


def test_heatmap_labels_axes_from_spec_and_values_exact():
    spec = MapSpec("att", ("layer", "head", "query_token", "key_token"), "attention")
    rng = np.random.default_rng(0)
    arr = rng.random((2, 3, 5, 5))
    toks = ["the", "cat", "the", "dog", "."]
    fig = viz.heatmap(arr, spec, toks, index={"layer": 1, "head": 2})
    hm = fig.data[0]
    np.testing.assert_allclose(np.asarray(hm.z), arr[1, 2])
    # duplicate tokens stay distinct positions (numeric axis, token tick labels)
    assert list(fig.layout.xaxis.ticktext) == toks and list(fig.layout.xaxis.tickvals) == [0, 1, 2, 3, 4]
    assert list(fig.layout.yaxis.ticktext) == toks
    assert fig.layout.xaxis.title.text == "key token" and fig.layout.yaxis.title.text == "query token"
    assert "layer 2" in fig.layout.title.text and "head 3" in fig.layout.title.text
    assert "%{z:.6g}" in hm.hovertemplate and "%{customdata[0]}" in hm.hovertemplate
    assert hm.customdata[0][3][1] == "dog"


def test_heatmap_filter_by_token_puts_tokens_on_x_and_transposes_token_first_maps():
    spec = MapSpec("m", ("filter", "token"), "feature_map")
    arr = np.arange(12, dtype=float).reshape(3, 4)
    fig = viz.heatmap(arr, spec, ["a", "b", "c", "d"])
    assert list(fig.layout.yaxis.ticktext) == ["f1", "f2", "f3"]
    spec_t = MapSpec("s", ("token", "head"), "attention", values="score")
    fig_t = viz.heatmap(arr.T, spec_t, ["a", "b", "c", "d"])
    assert list(fig_t.layout.xaxis.ticktext) == ["a", "b", "c", "d"]
    assert list(fig_t.layout.yaxis.ticktext) == ["head 1", "head 2", "head 3"]
    np.testing.assert_allclose(np.asarray(fig_t.data[0].z), arr)


def test_heatmap_rejects_wrong_rank_and_empty_maps():
    spec = MapSpec("m", ("filter", "token"), "feature_map")
    with pytest.raises(ValueError, match="spec says"):
        viz.heatmap(np.zeros(3), spec, ["a"])
    with pytest.raises(ValueError, match="empty"):
        viz.heatmap(np.zeros((2, 0)), spec, [])
    with pytest.raises(ValueError, match="out of range"):
        viz.heatmap(np.zeros((2, 2, 3)), MapSpec("x", ("head", "filter", "token"), "feature_map"), ["a"] * 3,
                    index={"head": 5})


def test_every_user_string_is_escaped_in_figures():
    spec = MapSpec("a", ("head", "token"), "attention")
    arr = np.full((2, len(HOSTILE)), 1 / len(HOSTILE))
    figs = [viz.heatmap(arr, spec, HOSTILE), viz.token_highlight(HOSTILE, arr[0], label="<i>x</i>"),
            viz.attention_grid(np.full((1, 1, 7, 7), 1 / 7), HOSTILE)]
    for fig in figs:
        js = fig_json(fig)
        for bad in ("<script>", "<b>bold", "<br>", "<i>x"):
            assert bad not in js, (bad, type(fig))
        assert "&lt;script&gt;" in js
    html = viz.token_highlight_html(HOSTILE, arr[0], label="<img src=x onerror=alert(1)>")
    assert "<script>" not in html and "<img" not in html and "&#60;script&#62;" in html
    assert html.count("<span") == len(HOSTILE)


def test_compare_cards_and_probability_bars_are_escaped_html_that_match_the_numbers():
    import re
    bad = "<img src=x onerror=alert(1)>"
    items = [(bad, {"neg<b>": 0.25, "pos": 0.75}), ("m2", {"neg<b>": 0.9, "pos": 0.1})]
    out = viz.probabilities_figure(items)
    for html in (out.html, viz.label_cards_html([dict(name=bad, model="<i>m</i>", data="d", label="neg<b>",
                                                      conf=0.9, agrees=False, notes=["<script>x"])])):
        assert "<img" not in html and "<b>" not in html and "<script>" not in html and "<i>" not in html
    widths = [float(w) for w in re.findall(r"width:([0-9.]+)%;background", out.html)]
    assert widths == [25.0, 75.0, 90.0, 10.0]                          # bar length = probability, in order
    assert out.html.count(" %</span>") == 4 and "75.0 %" in out.html
    assert list(out.table["probability"]) == [0.25, 0.75, 0.9, 0.1]   # the export has the same numbers
    assert len(out.fig.data) == 2                                       # and a Plotly twin for PNG/SVG
    cards = viz.label_cards_html([dict(name="a", model="m", data="", label="x", conf=1.7, agrees=None),
                                  dict(name="b", model="m", data="", label="y", conf=0.5, agrees=False)])
    assert cards.count("confidence ") == 2 and "confidence 100.0 %" in cards   # clipped to [0, 1]
    # issue 40 item 7: agreement with the majority is said in words, never as a check mark or in green/red that a
    # class reads as right and wrong
    cards = viz.label_cards_html([dict(name="a", model="m", data="", label="x", conf=0.6, agrees=True),
                                  dict(name="b", model="m", data="", label="y", conf=0.5, agrees=False)])
    assert "differs from most checkpoints" in cards and "same as most checkpoints" in cards
    assert not any(m in cards for m in ("✓", "✗", "disagrees", "#1a7f37", "#cf222e"))


# ---------------------------------------------------------------- long inputs

def test_long_input_is_paged_or_binned_never_full_size():
    n = 2000
    toks = [f"w{i}" for i in range(n)]
    spec = MapSpec("att", ("query_token", "key_token"), "attention")
    arr = np.random.default_rng(1).random((n, n)).astype(np.float32)
    fig = viz.heatmap(arr, spec, toks)
    assert np.asarray(fig.data[0].z).shape == (viz.MAX_TOKENS, viz.MAX_TOKENS)
    assert "1-200 of 2000" in fig.layout.title.text
    s = viz.slice_map(arr, spec, toks, window=(1500, 100))
    assert s.z.shape == (100, 100) and s.col_labels[0] == "w1500" and s.row_index[-1] == 1599
    np.testing.assert_allclose(s.z, arr[1500:1600, 1500:1600])
    b = viz.slice_map(arr, spec, toks, aggregate=True, max_tokens=100)
    assert b.z.shape == (100, 100)
    np.testing.assert_allclose(b.z[0, 0], arr[:20, :20].mean(), rtol=1e-5)
    grid = viz.attention_grid(np.zeros((2, 2, n, n), dtype=np.float32) + 1 / n, toks)
    m = viz.MAX_GRID_TOKENS
    assert np.count_nonzero(~np.isnan(np.asarray(grid.data[0].z, dtype=float))) == 2 * 2 * m * m
    hl = viz.token_highlight(toks, np.ones(n), window=(100, 50))
    assert list(hl.data[0].text) == toks[100:150]


def test_window_is_clamped_to_the_text():
    spec = MapSpec("m", ("filter", "token"), "feature_map")
    s = viz.slice_map(np.ones((2, 10)), spec, [str(i) for i in range(10)], window=(50, 5))
    assert 1 <= s.z.shape[1] <= 5 and s.col_index[-1] == 9


# ---------------------------------------------------------------- token highlight

def test_token_highlight_shades_relative_to_uniform_share():
    shade, scale = viz.shade_weights(np.full(10, 0.1))
    assert scale == "Reds" and np.allclose(shade, 0.0)              # uniform: nothing stands out
    w = np.array([0.7] + [0.3 / 9] * 9)
    shade, _ = viz.shade_weights(w)
    assert shade[0] == pytest.approx(1.0) and np.all(shade[1:] == 0)
    stretched, _ = viz.shade_weights(np.array([1.0, 1.1, 1.2]), stretch=True)
    np.testing.assert_allclose(stretched, [0, 0.5, 1.0])
    signed, sc = viz.shade_weights(np.array([-2.0, 1.0]))
    assert sc == "RdBu_r" and signed.tolist() == [-1.0, 0.5]


def test_token_highlight_rows_one_annotation_per_token_and_label_and_checks_lengths():
    rows = [("Transformer", WORDS, np.linspace(0, 1, len(WORDS))), ("ACT", WORDS, np.ones(len(WORDS)))]
    fig = viz.token_highlight_rows(rows, title="t")
    labels = {a.text: a.y for a in fig.layout.annotations}
    assert set(labels) == {"<b>Transformer</b>", "<b>ACT</b>"}
    assert labels["<b>Transformer</b>"] > labels["<b>ACT</b>"]           # Transformer row above the ACT row
    bars = fig.data[0]
    assert list(bars.text) == WORDS + WORDS                             # one shaded box per token
    n = len(WORDS)
    assert max(bars.y[:n]) < labels["<b>Transformer</b>"] and max(bars.y[n:]) < labels["<b>ACT</b>"]
    assert len(set(bars.marker.color[n:])) == 1                         # the uniform ACT row: one shade
    assert "weight" in bars.hovertext[0]
    assert fig.layout.width and fig.layout.height
    html = viz.token_rows_html(rows, title="t")
    assert html.count("<span title=") == 2 * n and html.index("Transformer") < html.index("ACT")
    with pytest.raises(ValueError, match="weights"):
        viz.token_highlight(WORDS, [0.1, 0.2])
    table = viz.highlight_table(rows)
    assert len(table) == 2 * len(WORDS) and set(table.columns) == {"row", "token_index", "token", "weight"}


# ---------------------------------------------------------------- views of every model

VIEW_EXPECT = {
    "kim_cnn": {"AG-F3"}, "agcnn": {"AG-F4"}, "act": {"ACT-T4", "ACT-FM"}, "transformer": {"TR-ATT"},
    "hcan": {"HCAN-F4", "HCAN-F5"}, "can": {"HCAN-F4", "HCAN-F5"}, "lama": {"LAMA-HT"},
}


@pytest.mark.parametrize("name", sorted(VIEW_EXPECT))
def test_views_of_each_model_build_with_tokens_on_axes(name):
    if name not in textcls.list_models():
        pytest.skip(f"model {name} not registered")
    specs, maps, tokens, sentences, config = model_output(name)
    views = viz.views_for(name, specs)
    ids = {v.id for v in views}
    assert VIEW_EXPECT[name] <= ids and "generic" in ids
    vi = viz.ViewInput(name, specs, maps, tokens, sentences, title=name, label="positive",
                       config=vars(config))
    for v in views:
        opts = {c.name: c.options[-1] for c in viz.view_controls(v.id, vi)}
        vi.opts = opts
        figs = viz.build_view(v.id, vi)
        assert figs, (name, v.id)
        for f in figs:
            assert len(f.table) > 0, (name, v.id, f.key)
            js = json.loads(f.json())
            assert js["title"] and js["rows"]
            assert f.csv().splitlines()[0]
            # a figure about tokens shows the tokens (tick labels, annotations, cells), not bare indices
            axes = f.meta.get("axes", ["token"])
            text = fig_json(f.fig)
            spec = specs.get(f.meta.get("map", ""))
            if spec is not None and spec.values == "index":            # cells name the token they point at
                v = int(f.table["value"].iloc[0])
                assert f"{v}: {tokens[v]}" in text and f.table["token"].iloc[0] == tokens[v], (name, f.key)
            elif any(viz.is_sequence_axis(a) for a in axes):
                assert any(t in text for t in ("food", "staff", "clean")), (name, v.id, f.key)


def test_ag_f4_has_gates_for_k_1_3_5_and_gated_maps():
    specs, maps, tokens, _, _ = model_output("agcnn")
    vi = viz.ViewInput("agcnn", specs, maps, tokens, title="agcnn", opts={"h": 1})
    keys = [f.key for f in viz.build_view("AG-F4", vi)]
    for k in (1, 3, 5):
        assert f"agcnn_ag-f4_gate_h1_k{k}" in keys and f"agcnn_ag-f4_gated_h1_k{k}" in keys
    assert "agcnn_ag-f4_conv_pre_h1" in keys and "agcnn_ag-f4_conv_h1" in keys


def test_act_fm_marks_each_filters_argmax_ngram():
    specs, maps, tokens, _, config = model_output("act")
    vi = viz.ViewInput("act", specs, maps, tokens, title="act", opts={"layer": 0, "head": 1}, config=vars(config))
    fm, ngrams = viz.build_view("ACT-FM", vi)
    arg = maps["argmax"][0, 1]
    k = config.kernel_size
    expected = {f"f{f + 1}": " ".join(tokens[j:j + k]) for f, j in enumerate(arg.astype(int))}
    got = dict(zip(ngrams.table["filter"], ngrams.table["ngram"]))
    assert got == expected
    np.testing.assert_allclose(np.asarray(fm.fig.data[0].z), maps["feature_map"][0, 1][:, :len(tokens)])
    assert len(fm.fig.data) == 2                                     # heatmap + the argmax markers


def test_tr_att_grid_has_every_layer_and_head():
    specs, maps, tokens, _, _ = model_output("transformer")
    vi = viz.ViewInput("transformer", specs, maps, tokens, title="tr")
    figs = {f.key: f for f in viz.build_view("TR-ATT", vi)}
    A = np.asarray(maps["attention"])
    L, H = A.shape[:2]
    assert_grid_tiles(figs["transformer_tr-grid"].fig, A[:, :, :len(tokens), :len(tokens)])
    assert "transformer_tr-cls" in figs


def test_hcan_f4_word_and_sentence_attention_and_chosen_word_row():
    specs, maps, tokens, sentences, _ = model_output("hcan")
    chosen = len(sentences[0]) + 2                                  # third word of sentence 2
    vi = viz.ViewInput("hcan", specs, maps, tokens, sentences, title="hcan", opts={"token": chosen})
    figs = {f.key: f for f in viz.build_view("HCAN-F4", vi)}
    words = figs["hcan_hcan-f4-words"].table
    assert list(words["token"]) == tokens
    np.testing.assert_allclose(words["weight"][: len(sentences[0])], maps["beta"][0].mean(0)[: len(sentences[0])],
                               rtol=1e-6)
    np.testing.assert_allclose(figs["hcan_hcan-f4-sentences"].table["value"], maps["gamma"].mean(0), rtol=1e-6)
    row = figs["hcan_hcan-f4-A_a_s2_w3"]
    np.testing.assert_allclose(np.asarray(row.fig.data[0].z), maps["A_a"][1, :, 2, : len(sentences[1])], rtol=1e-6)
    assert list(row.fig.layout.xaxis.ticktext) == sentences[1]


def test_token_weights_one_per_token_for_every_model():
    for name in VIEW_EXPECT:
        if name not in textcls.list_models():
            continue
        specs, maps, tokens, sentences, _ = model_output(name)
        w, src = viz.token_weights(specs, maps, tokens, sentences)
        assert w.shape == (len(tokens),) and np.all(w >= 0) and w.sum() > 0 and src, name
    specs, maps, tokens, _, _ = model_output("act")
    alpha = np.asarray(maps["alpha"], dtype=float)
    np.testing.assert_allclose(viz.token_weights(specs, maps, tokens)[0], alpha / alpha.sum())
    assert viz.token_weights(specs, maps, []) is None


def test_generic_view_respects_map_choice_and_empty_text_draws_nothing():
    specs, maps, tokens, _, _ = model_output("kim_cnn")
    vi = viz.ViewInput("kim_cnn", specs, maps, tokens, opts={"maps": ["conv_h2"]})
    assert [f.meta["map"] for f in viz.build_view("generic", vi)] == ["conv_h2"]
    assert viz.build_view("generic", viz.ViewInput("kim_cnn", specs, maps, [])) == []


def test_reasons_figure_stacks_models_in_order():
    items = []
    for name in ("transformer", "act"):
        specs, maps, tokens, _, _ = model_output(name)
        items.append(dict(name=name, model=name, specs=specs, maps=maps, tokens=tokens, label="pos"))
    r = viz.reasons_figure(items)
    assert list(dict.fromkeys(r.table["row"])) == ["transformer → pos", "act → pos"]


# ---------------------------------------------------------------- export

def test_export_zip_has_numbers_for_every_figure():
    specs, maps, tokens, _, _ = model_output("kim_cnn")
    figs = viz.build_view("AG-F3", viz.ViewInput("kim_cnn", specs, maps, tokens, title="k"))
    data = viz.export_zip(figs, images=False)
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    for f in figs:
        assert f"{f.key}.csv" in names and f"{f.key}.json" in names
    html = viz.figure_html(figs[0].fig, "svg", "x")
    assert '"format": "svg"' in html and "<html" in html


def _every_view_figure():
    """(model, view id, FigureOut) of every view of every model family, built as the pages build them."""
    import pickle
    out = []
    for name in sorted(VIEW_EXPECT):
        specs, maps, tokens, sentences, config = model_output(name)
        vi = viz.ViewInput(name, specs, maps, tokens, sentences, title=name, label="positive", config=vars(config))
        for v in viz.views_for(name, specs):
            vi.opts = {c.name: c.options[-1] for c in viz.view_controls(v.id, vi)}
            for f in viz.build_view(v.id, vi):
                out.append((name, v.id, f, pickle.loads(pickle.dumps(f))))   # st.cache_data pickles figures
    return out


def test_every_figure_keeps_its_export_size_after_the_cache_round_trip():
    """Issue 40 item 1: after Streamlit's cache (a pickle round trip) a heatmap's z is Plotly's typed array
    {"dtype", "bdata", "shape"}; export_size read len(z[0]) and raised KeyError, so PNG/SVG/ZIP export did
    nothing for every heatmap."""
    items = _every_view_figure()
    assert any(isinstance(getattr(t, "z", None), dict) for *_, g in items for t in g.fig.data)   # the case is met
    for name, vid, f, g in items:
        assert viz.export_size(g.fig) == viz.export_size(f.fig), (name, vid, f.key)
    assert viz.export_zip([g for *_, g in items][:3], images=False)


@pytest.mark.skipif(not viz.image_export_status()[0], reason="kaleido + Chromium not available")
def test_a_real_image_of_every_kind_of_figure_after_the_cache_round_trip():
    """A PNG of one figure per view (heatmaps, bars, head view, grids, HCAN's branches ...) and an SVG and a ZIP
    with images, each from the figure as it comes out of the cache."""
    seen, done = set(), []
    for name, vid, f, g in _every_view_figure():
        kind = (vid, type(g.fig.data[0]).__name__ if g.fig.data else "empty")
        if kind in seen:
            continue
        seen.add(kind)
        png = viz.figure_image(g.fig, "png", scale=1)
        assert png[:8] == b"\x89PNG\r\n\x1a\n", (name, vid, g.key)
        done.append(g)
    assert len(done) >= 8
    svg = viz.figure_image(done[0].fig, "svg")
    assert b"<svg" in svg[:500]
    names = zipfile.ZipFile(io.BytesIO(viz.export_zip(done[:2], images=True))).namelist()
    assert any(n.endswith(".png") for n in names) and any(n.endswith(".svg") for n in names)


@pytest.mark.skipif(not viz.image_export_status()[0], reason="kaleido + Chromium not available")
def test_png_and_svg_render_server_side():
    fig = viz.heatmap(np.eye(3), MapSpec("m", ("query_token", "key_token"), "attention"), ["<a>", "b", "c"])
    png = viz.figure_image(fig, "png")
    svg = viz.figure_image(fig, "svg")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and b"<svg" in svg[:500]
    assert b"&#60;a&#62;" in svg and b"<a>" not in svg            # the token is text, not markup


def test_accuracy_axes_show_tenths_of_a_percent():
    """Training curves with accuracies 0.5 % apart must not print the same whole percent on two ticks."""
    steps = [{"step": s, "loss": 1.0 / s} for s in range(1, 5)]
    epochs = [{"epoch": e, "step": 2 * e, "train_accuracy": 0.17 + 0.005 * e, "dev_accuracy": 0.18 + 0.005 * e}
              for e in range(1, 3)]
    fig = viz.live_training_figure(steps, epochs).fig
    assert fig.layout.yaxis2.tickformat == ".1%"
    curves = viz.training_curves([("run", epochs)], y="dev_accuracy").fig
    assert curves.layout.yaxis.tickformat == ".1%"


def test_head_view_draws_every_weight_over_the_floor_once_and_filters_by_query():
    rng = np.random.default_rng(0)
    a = rng.dirichlet(np.ones(6), size=(3, 6))                       # (head, query, key), rows sum to 1
    toks = ["a", "b", "c", "d", "e", "f"]
    item = viz.head_view(a, toks, floor=0.05)
    expect = {(h + 1, i, j) for h in range(3) for i in range(6) for j in range(6) if a[h, i, j] >= 0.05}
    got = {(r.head, r.query_index, r.key_index) for r in item.table.itertuples()}
    assert got == expect
    assert np.allclose(item.table["weight"], [a[h - 1, i, j] for h, i, j in zip(
        item.table["head"], item.table["query_index"], item.table["key_index"])])
    assert {t.name for t in item.fig.data if t.showlegend} == {"head 1", "head 2", "head 3"}
    one = viz.head_view(a, toks, query=2, floor=0.0)
    assert set(one.table["query_index"]) == {2} and len(one.table) == 3 * 6
    with pytest.raises(ValueError, match="head, query, key"):
        viz.head_view(a[0], toks)


def test_a_twelve_head_legend_gets_room_under_the_title_in_a_narrow_column():
    """MiniLM has 12 heads: the head view's legend wraps to 2 rows at 620 px and 3 in a side-by-side column; the
    top margin holds the title's lines and every legend row, so neither covers the other."""
    from textcls.viz.style import legend_rows
    a = np.random.default_rng(0).dirichlet(np.ones(5), size=(12, 5))
    fig = viz.head_view(a, list("abcde")).fig
    assert legend_rows(fig, 110) == 2 and legend_rows(fig, 52) == 3
    assert legend_rows(viz.head_view(a[:4], list("abcde")).fig, 52) == 1
    assert fig.layout.margin.t >= 30 + 2 * 22                               # title + 2 legend rows, unfitted
    for chars, rows in ((110, 2), (52, 3)):
        fitted = viz.fit_title(fig, chars)
        lines = fitted.layout.title.text.count("<br>") + 1
        assert fitted.layout.margin.t >= 10 + 19 * lines + 22 * rows
        plot = fitted.layout.height - fitted.layout.margin.t - fitted.layout.margin.b
        assert plot == fig.layout.height - fig.layout.margin.t - fig.layout.margin.b    # the plot keeps its room


def test_transformer_and_hcan_views_include_a_head_view():
    for name, vid in (("transformer", "TR-ATT"), ("hcan", "HCAN-F5")):
        specs, maps, tokens, sentences, config = model_output(name)
        vi = viz.ViewInput(name, specs, maps, tokens, sentences, title=name, label="positive", config=vars(config))
        assert any("headview" in f.key for f in viz.build_view(vid, vi)), name


def test_live_training_figure_draws_at_most_max_points_and_keeps_every_step_in_the_table():
    steps = [{"step": i + 1, "loss": 1.0 / (i + 1)} for i in range(5000)]
    out = viz.live_training_figure(steps, [], max_points=600)
    raw, mean = out.fig.data[0], out.fig.data[1]
    assert len(raw.x) <= 600 and len(mean.x) <= 600 and "every 9th step" in raw.name
    assert list(raw.x[:3]) == [1, 10, 19] and raw.y[1] == pytest.approx(1 / 10)
    assert (out.table["kind"] == "step").sum() == 5000                      # the export has every step
    short = viz.live_training_figure(steps[:100], [])
    assert len(short.fig.data[0].x) == 100 and short.fig.data[0].name == "step loss"


def test_one_label_colour_rule_across_figures():
    """Issue 27.7: a label has one colour on every page: Compare's probability bars, Explore's projector (also when
    only some labels are present) and Lab's negation heatmap (low p(positive) in negative's colour)."""
    from textcls.viz.dataset import projector_figure
    from textcls.viz.explanations import negation_figure
    from textcls.viz.reports import probabilities_figure
    colors = viz.label_colors(["negative", "positive"])
    assert colors["negative"] != colors["positive"]
    probs = probabilities_figure([("a", {"negative": 0.3, "positive": 0.7})])
    assert {t.name: t.marker.color for t in probs.fig.data} == colors
    assert colors["negative"] in probs.html and colors["positive"] in probs.html
    only_pos = projector_figure(np.zeros((2, 2)), ["x", "y"], ["positive", "positive"], [0, 1], title="t", key="k",
                                labels=["negative", "positive"])
    assert only_pos.fig.data[0].marker.color == colors["positive"]
    neg = negation_figure([{"model": "m", "sentence": "s", "p_positive": 0.1, "label": "negative"}])
    scale = neg.fig.data[0].colorscale
    assert scale[0][1] == colors["negative"] and scale[-1][1] == colors["positive"]   # low p(positive): negative's


def test_slice_bars_keep_their_labels_level_and_whole_and_write_a_zero():
    """Explore's slice chart: long slice names are wrapped (level, never cut by the frame) and a slice where every
    checkpoint scores zero (e.g. "wrong (every checkpoint)") says 0 % instead of looking empty."""
    import pandas as pd
    from textcls.viz.dataset import slice_metrics_figure
    names = ["all", "wrong (every checkpoint)", "a slice with a very long descriptive name indeed"]
    table = pd.DataFrame([{"slice": s, "checkpoint": ck, "count": 10, "macro_f1": 0.5,
                           "accuracy": 0.0 if "wrong" in s or (s == "all" and ck == "b") else 0.8}
                          for s in names for ck in ("a", "b")])
    fig = slice_metrics_figure(table).fig
    assert fig.layout.xaxis.tickangle == 0
    for trace in fig.data:
        lines = [line for label in trace.x for line in label.split("<br>")]
        assert max(map(len, lines)) <= 14 and "wrong (every<br>checkpoint)" in trace.x
    assert [list(t.text) for t in fig.data] == [["", "", ""], ["0%", "", ""]]     # one checkpoint at zero: its bar
    notes = [a for a in fig.layout.annotations if a.text.startswith("0 % for every")]
    assert [a.x for a in notes] == ["wrong (every<br>checkpoint)"]                 # every checkpoint: said once


def assert_grid_tiles(fig, a):
    """The all-heads grid holds every (layer, head) matrix as a tile, in order, and blanks between the tiles."""
    nl, nh, m, _ = a.shape
    (trace,) = fig.data
    z = np.asarray(trace.z, dtype=float)
    gap = (z.shape[1] - nh * m) // (nh - 1) if nh > 1 else (z.shape[0] - nl * m) // (nl - 1) if nl > 1 else 0
    step = m + gap
    assert z.shape == (nl * step - gap, nh * step - gap)
    for l in range(nl):
        for h in range(nh):
            np.testing.assert_allclose(z[l * step:l * step + m, h * step:h * step + m], a[l, h], rtol=1e-6)
    assert np.isnan(z).sum() == z.size - nl * nh * m * m                  # nothing but the tiles is coloured
    assert len(set(trace.x)) == len(trace.x) and len(set(trace.y)) == len(trace.y)   # categories stay apart


def test_all_heads_grid_hover_names_layer_head_and_tokens():
    a = np.random.default_rng(1).dirichlet(np.ones(4), size=(2, 3, 4))
    fig = viz.attention_grid(a, ["the", "film", "was", "<b>good"])
    assert_grid_tiles(fig, a)
    (trace,) = fig.data
    assert trace.y[0] == "L1 · 1·the" and trace.x[-1] == "H3 · 4·&lt;b&gt;good"
    assert "layer" in trace.hovertemplate and "head" in trace.hovertemplate
    assert [x.text for x in fig.layout.annotations] == ["head 1", "head 2", "head 3", "layer 1", "layer 2"]


@pytest.mark.parametrize("layers,heads,max_width", [(6, 12, 470), (6, 12, 900), (2, 4, 470), (12, 12, 470)])
def test_all_heads_grid_titles_fit_their_cells(layers, heads, max_width):
    """Issue 40 item 5: side by side with minilm-sst2 (6 layers x 12 heads in a 470 px column) the grid's column
    titles ran together ("headhead1head2..."). The grid fits its width and every title fits its cell."""
    from textcls.viz.maps import GRID_TITLE_PX
    a = np.random.default_rng(0).dirichlet(np.ones(9), size=(layers, heads, 9))
    fig = viz.attention_grid(a, WORDS[:9], max_width=max_width)
    assert fig.layout.width <= max_width
    cell = (fig.layout.width - 150) / heads                         # at least this many px per column
    titles = [a.text for a in fig.layout.annotations]
    assert len(titles) == layers + heads
    assert all(len(t) * GRID_TITLE_PX <= cell for t in titles), (titles, cell)
    if any(t.isdigit() for t in titles):                             # numbers only: the axes are named once
        assert f"head 1-{heads}" in fig.layout.title.text and f"layer 1-{layers}" in fig.layout.title.text


def test_a_fine_tuned_models_training_curves_show_its_dev_curve():
    """The Evaluate page's training curves read `load_history(...).epoch_rows()`: minilm-sst2's history.json was
    written in the older nested shape ("dev": {"accuracy": ...}) and still gives a dev curve, beside act-sst2's."""
    from pathlib import Path

    from textcls.checkpoint import load_history
    shipped = Path(__file__).resolve().parents[1] / "checkpoints"
    runs = [(n, load_history(shipped / n).epoch_rows()) for n in ("minilm-sst2", "act-sst2")]
    out = viz.training_curves(runs, y="dev_accuracy", x="elapsed")
    assert [t.name for t in out.fig.data] == ["minilm-sst2", "act-sst2"]
    minilm = out.table[out.table["run"] == "minilm-sst2"]
    assert minilm["dev_accuracy"].tolist() == pytest.approx([0.8520642201834863])
    assert set(runs[0][1][0]) == set(runs[1][1][0])                # one epoch shape for both models


def test_an_html_figures_plotly_twin_is_built_only_when_read(monkeypatch):
    """Compare shows its reasons and bars as HTML; their Plotly twins (what PNG/SVG exports render) are built the
    first time `fig` is read, once, and survive pickling (st.cache_data) unbuilt."""
    import pickle

    import plotly.graph_objects as go

    from textcls.viz import paper_views, reports
    specs, maps, tokens, _, _ = model_output("act")
    items = [dict(name=n, model="act", specs=specs, maps=maps, tokens=tokens, label="pos") for n in ("m1", "m2")]
    kept = pickle.loads(pickle.dumps(viz.reasons_figure(items)))       # pickled unbuilt, built when read
    assert "_fig" in vars(kept) and not isinstance(vars(kept)["_fig"], go.Figure) and isinstance(kept.fig, go.Figure)
    built = []
    real_rows, real_bars = paper_views.token_highlight_rows, reports._probabilities_plotly
    monkeypatch.setattr(paper_views, "token_highlight_rows", lambda *a, **k: built.append("rows") or real_rows(*a, **k))
    monkeypatch.setattr(reports, "_probabilities_plotly", lambda *a, **k: built.append("bars") or real_bars(*a, **k))
    reasons = viz.reasons_figure(items)
    bars = viz.probabilities_figure([("m1", {"negative": 0.3, "positive": 0.7})])
    assert reasons.html and bars.html and built == []                 # shown as HTML: no Plotly figure built
    assert isinstance(reasons.fig, go.Figure) and reasons.fig is reasons.fig and built == ["rows"]
    assert [t.x for t in bars.fig.data] == [(0.3,), (0.7,)] and built == ["rows", "bars"]
    assert viz.export_zip([reasons, bars], images=False)                # exports read the twins as before
