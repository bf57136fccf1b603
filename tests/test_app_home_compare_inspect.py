"""AppTest (streamlit.testing.v1) of the Home, Compare and Inspect pages against tiny checkpoints built here.

The checkpoints are small untrained models saved with the library (no network, no shipped checkpoints);
TEXTCLS_CHECKPOINTS points the app at them.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

import textcls
from textcls.checkpoint import save_checkpoint
from textcls.models.registry import get_entry
from textcls.data.text import Tokenizer, TokenizerConfig

from app_pages import REPO, open_page, page_text as all_text, shown_charts, shown_html

MODELS = ("kim_cnn", "act", "transformer", "hcan")
CORPUS = ["the food was great and the staff were friendly .", "the service was slow ! i will not come back .",
          "a gripping , beautifully acted film .", "the plot is thin and the jokes fall flat ."]
SENTENCE = "the food was great but the service was slow ."


def build_checkpoints(root: Path, models=MODELS) -> list[str]:
    """One tiny, untrained checkpoint per model under root (seeded; about a second in all)."""
    root.mkdir(parents=True, exist_ok=True)
    names = []
    for k, name in enumerate(models):
        hier = get_entry(name).input_kind == "sentences"
        tok = Tokenizer.build(CORPUS, TokenizerConfig(hierarchical=hier))
        torch.manual_seed(k)
        model = textcls.create_model(name, vocab_size=len(tok.vocab), num_labels=2, preset="small").eval()
        out = root / f"{name}_tiny"
        save_checkpoint(out, model, tok, ["negative", "positive"],
                        meta={"data": {"name": "tiny"}, "metrics": {"test_accuracy": 0.5 + 0.1 * k}})
        names.append(out.name)
    return names


@pytest.fixture(scope="session")
def ckpt_dir(tmp_path_factory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("ckpts")
    return root, build_checkpoints(root)


@pytest.fixture
def app(ckpt_dir, monkeypatch):
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(ckpt_dir[0]))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    return open_page


def charts(at):
    return at.get("plotly_chart")


# ---------------------------------------------------------------- no checkpoint at all

@pytest.mark.parametrize("page", [None, "pages/compare.py", "pages/inspect.py"])
def test_no_checkpoint_says_how_to_make_one(page, tmp_path, monkeypatch):
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(tmp_path / "empty"))
    at = open_page(page, timeout=60)
    assert any("No trained checkpoint found" in w.value for w in at.warning)
    assert any("python -m textcls train" in c.value for c in at.code)


# ---------------------------------------------------------------- Home

def test_home_lists_checkpoints_with_accuracy_and_classifies_a_sentence(app, ckpt_dir):
    at = app()
    table = at.dataframe[0].value
    assert sorted(table["checkpoint"]) == sorted(ckpt_dir[1])
    assert sorted(table["test accuracy"].round(1)) == [50.0, 60.0, 70.0, 80.0]
    at.text_input(key="home_text").input(SENTENCE)
    at.button[0].click().run()
    assert not at.exception
    result = at.dataframe[-1].value
    assert sorted(result["checkpoint"]) == sorted(ckpt_dir[1])          # one prediction per checkpoint
    assert set(result["prediction"]) <= {"negative", "positive"}
    assert (result["confidence"] >= 50).all()
    assert at.success or at.warning                                     # agreement is stated


# ---------------------------------------------------------------- Compare

def test_compare_one_sentence_one_card_per_checkpoint(app, ckpt_dir):
    at = app("pages/compare.py")
    # its answers end with a hidden one-point chart: the browser loads Plotly's code for Inspect (each answer's
    # link) while they are read, until the session has drawn a Plotly chart
    assert not shown_charts(at) and len(charts(at)) == 1
    at.text_area(key="cmp_text").input(SENTENCE)
    at.button[0].click().run()
    assert not at.exception
    assert at.success or at.warning
    cards, probs, reasons = [h.replace("&#95;", "_") for h in shown_html(at)]  # all escaped HTML
    assert cards.count("confidence ") == len(ckpt_dir[1])               # one card per checkpoint
    assert probs.count(" %</span>") == 2 * len(ckpt_dir[1])             # a bar per checkpoint and label
    for name in ckpt_dir[1]:
        assert f">{name}<" in cards and f">{name}<" in probs, name
        assert f"{name} → " in reasons                                  # what each model looked at
    assert not shown_charts(at) and len(charts(at)) == 1                # no Plotly chart to draw: HTML only
    assert [b.label for b in at.get("download_button")][:4] == ["PNG", "SVG", "CSV", "JSON"] or \
        [b.label for b in at.get("download_button")][:4] == ["PNG (via HTML)", "SVG (via HTML)", "CSV", "JSON"]


def test_compare_never_builds_the_plotly_twins_of_what_it_shows_as_html(app, monkeypatch):
    """The probability bars and the shaded words are HTML; their Plotly twins (what PNG/SVG exports render) and
    their tables (CSV/JSON) are built only when an export is made, never on the page's runs (each twin took 30-50
    ms of the server per submit, the two tables 1.5 ms)."""
    from textcls.viz import paper_views, reports
    built = []
    for mod, name in [(paper_views, "token_highlight_rows"), (reports, "_probabilities_plotly"),
                      (paper_views, "highlight_table"), (reports, "_probabilities_table")]:
        real = getattr(mod, name)
        monkeypatch.setattr(mod, name, lambda *a, _real=real, _name=name, **k: built.append(_name) or _real(*a, **k))
    at = app("pages/compare.py")
    at.text_area(key="cmp_text").input(SENTENCE)
    at.button[0].click().run()
    assert not at.exception and len(shown_html(at)) == 3                # cards, bars, shaded words
    labels = {b.label for b in at.get("download_button")}               # the exports are offered all the same
    assert {"PNG", "SVG"} <= labels or {"PNG (via HTML)", "SVG (via HTML)"} <= labels
    assert built == []


def test_compare_batch_table_with_per_row_disagreement(app, ckpt_dir):
    at = app("pages/compare.py")
    at.radio(key="cmp_mode").set_value("Many sentences (one per line)").run()
    lines = ["the food was great", "the service was slow", "flat jokes", "a gripping film"]
    at.text_area(key="cmp_lines").input("\n".join(lines))
    at.button[0].click().run()
    assert not at.exception
    df = at.dataframe[0].value
    df = df.data if hasattr(df, "data") else df                         # a Styler when rows are painted
    assert list(df["text"]) == lines
    for name in ckpt_dir[1]:
        assert name in df.columns and f"{name} conf." in df.columns
    for _, row in df.iterrows():
        labels = {row[n] for n in ckpt_dir[1]}
        assert row["disagree"] == (len(labels) > 1)
        assert row["agreement"] == pytest.approx(sum(row[n] == row["majority"] for n in ckpt_dir[1]) / 4)
    assert [m.value for m in at.metric][0] == "4"
    assert len(charts(at)) == 1                                         # pairwise agreement


@pytest.mark.parametrize("text", ["<script>alert('x')</script><img src=x onerror=alert(1)>",
                                  "**bold** [link](http://example.com) ![i](http://x/y.png) $x$ :red[hi]",
                                  "😀🎉 " * 20, "word " * 20_000, "   "])
def test_compare_hostile_text_gives_a_message_or_a_result_never_markup(app, text):
    at = app("pages/compare.py")
    at.text_area(key="cmp_text").input(text)
    at.button[0].click().run()
    assert not at.exception
    if not text.strip():
        assert any("Type or paste" in i.value for i in at.info)
        return
    assert at.success or at.warning
    for m in at.markdown:                                               # user text never reaches markdown raw
        assert "<script>" not in m.value and "<img" not in m.value and "](http" not in m.value
    for h in at.get("html"):                                            # shaded words: escaped, entity-encoded
        body = h.proto.body
        assert "<script>" not in body and "<img" not in body and "](http" not in body and "$x$" not in body


# ---------------------------------------------------------------- verdict per task, unknown words, file rows

UNKNOWN = "qwzx vbnmk plokij"


@pytest.fixture(scope="session")
def mixed_dir(ckpt_dir, tmp_path_factory) -> Path:
    """Two tasks: two copies of the 'tiny' (negative/positive) checkpoints and one 3-label 'qa' checkpoint."""
    import shutil

    root = tmp_path_factory.mktemp("mixed_tasks")
    for name in ("kim_cnn_tiny", "act_tiny"):
        shutil.copytree(ckpt_dir[0] / name, root / name)
    tok = Tokenizer.build(CORPUS, TokenizerConfig())
    torch.manual_seed(7)
    model = textcls.create_model("kim_cnn", vocab_size=len(tok.vocab), num_labels=3, preset="small").eval()
    save_checkpoint(root / "kim_cnn_qa", model, tok, ["ABBR", "HUM", "NUM"], meta={"data": {"name": "qa"}})
    return root


def test_inspect_and_evaluate_open_on_the_main_task_as_compare_does(mixed_dir, tmp_path, monkeypatch):
    """The first checkpoint in the listing ('a_qa') is not of the main task ('tiny': the most checkpoints); Compare
    opens on that task, and Inspect and Evaluate open on its checkpoints, not on whatever sorts first."""
    import shutil

    for name in ("kim_cnn_tiny", "act_tiny"):
        shutil.copytree(mixed_dir / name, tmp_path / name)
    shutil.copytree(mixed_dir / "kim_cnn_qa", tmp_path / "a_qa")
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(tmp_path))
    assert open_page("pages/compare.py").get("button_group")[0].value == "tiny"
    assert open_page("pages/inspect.py").selectbox(key="insp_ckpt").value == "act_tiny"
    assert open_page("pages/evaluate.py").multiselect(key="eval_ckpts").value == ["act_tiny", "kim_cnn_tiny"]


def verdicts(at) -> list[str]:
    return [x.value for x in at.success] + [x.value for x in at.warning if x.value.startswith("**")]


def test_home_classifies_with_one_tasks_checkpoints_and_gives_its_verdict(mixed_dir, monkeypatch):
    """Issue 40 item 8: a sentence is classified by the checkpoints of the task the person picks (the main one
    first), never by another task's (a movie review reported as "4 say ENTY; 2 say HUM")."""
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(mixed_dir))
    at = open_page()
    assert at.segmented_control(key="home_task").value == "tiny"
    at.text_input(key="home_text").input(SENTENCE)
    at.button[0].click().run()
    assert not at.exception
    lines = verdicts(at)
    assert [v.split(":")[0] for v in lines] == ["**tiny**"]                     # one verdict, of this task
    assert ("all 2 say" in lines[0]) or ("disagree" in lines[0])
    assert not any(lab in lines[0] for lab in ("ABBR", "HUM", "NUM"))
    table = at.dataframe[-1].value
    assert dict(zip(table["checkpoint"], table["data set"])) == {"kim_cnn_tiny": "tiny", "act_tiny": "tiny"}
    at.segmented_control(key="home_task").set_value("qa").run()               # the other task: its checkpoint only
    assert not at.exception
    assert "kim\\_cnn\\_qa says" in verdicts(at)[0]
    assert at.dataframe[-1].value["checkpoint"].tolist() == ["kim_cnn_qa"]


def test_home_all_unknown_words_make_the_prediction_meaningless(app, ckpt_dir):
    at = app()
    at.text_input(key="home_text").input(UNKNOWN)
    at.button[0].click().run()
    assert not at.exception
    assert not at.success                                                       # no green "all agree"
    assert any("meaningless" in x.value and "bias" in x.value for x in at.warning)
    table = at.dataframe[-1].value
    assert (table["unknown words"].astype(int) == table["tokens"]).all() and (table["tokens"] == 3).all()
    # a known sentence with one unknown word: counted, but not called meaningless
    at.text_input(key="home_text").input("the food was great qwzx")
    at.button[0].click().run()
    table = at.dataframe[-1].value
    assert (table["unknown words"].astype(int) == 1).all()
    assert not any("meaningless" in x.value for x in at.warning)
    assert any("1 of 5" in x.value for x in at.warning)


def test_compare_all_unknown_words_warn_on_every_card(app, ckpt_dir):
    at = app("pages/compare.py")
    at.text_area(key="cmp_text").input(UNKNOWN)
    at.button[0].click().run()
    assert not at.exception
    assert not at.success
    assert any("meaningless" in x.value for x in at.warning)
    assert at.get("html")[0].proto.body.count("3 of 3 unknown") == len(ckpt_dir[1])     # on every card
    at.text_area(key="cmp_text").input("the food was great")                    # every word known: no warning
    at.button[0].click().run()
    assert not any("unknown" in x.value for x in at.warning)
    assert "unknown" not in at.get("html")[0].proto.body


def test_compare_file_skips_empty_texts_and_unknown_gold_labels(app, ckpt_dir):
    at = app("pages/compare.py")
    at.radio(key="cmp_mode").set_value("Upload a CSV or TXT file").run()
    csv = "text,label\n,negative\nthe food was great,positive\nthe service was slow,<b>neg</b>\n"
    at.file_uploader(key="cmp_file").set_value(("hostile.csv", csv.encode(), "text/csv")).run()
    assert not at.exception
    df = at.dataframe[0].value
    df = df.data if hasattr(df, "data") else df
    assert list(df["text"]) == ["the food was great", "the service was slow"]   # the empty row is not classified
    assert list(df["#"]) == [2, 3]                                              # rows keep their file numbers
    assert [m.value for m in at.metric][0] == "2"
    assert any("1 empty text skipped" in c.value for c in at.caption)
    assert any("do not know" in x.value and "neg" in x.value for x in at.warning)
    acc = next(m.value for m in at.markdown if "Accuracy on this file" in m.value)
    for name in ckpt_dir[1]:                                                    # only the known gold row counts
        right = df[name].iloc[0] == "positive"
        assert f"{100.0 * right:.1f} % of 1" in acc.replace("\\", ""), (name, acc)


# ---------------------------------------------------------------- Inspect

def test_inspect_every_view_of_every_checkpoint_draws(app, ckpt_dir):
    at = app("pages/inspect.py")
    for name in ckpt_dir[1]:
        at.selectbox(key="insp_ckpt").set_value(name).run()
        assert not at.exception, name
        view_box = at.selectbox(key=f"insp_view_0_{name}")
        n_views = len(view_box.options)
        assert n_views >= 2, name                                       # a paper view + the generic one
        for i in range(n_views):
            at.selectbox(key=f"insp_view_0_{name}").select_index(i).run()
            assert not at.exception, (name, i)
            assert not at.error, (name, i, [e.value for e in at.error])
            assert len(charts(at)) + len(at.get("html")) >= 1, (name, i)


def test_inspect_paper_view_is_the_default_and_has_token_axes(app, ckpt_dir):
    at = app("pages/inspect.py")
    at.selectbox(key="insp_ckpt").set_value("transformer_tiny").run()
    assert at.selectbox(key="insp_view_0_transformer_tiny").value == "TR-ATT"
    figs = charts(at)
    assert len(figs) == 1                                               # the open tab's: layer x head matrix
    spec = figs[0].proto.spec
    for word in ("food", "service", "slow"):
        assert word in spec


def fig_tabs(at, slot: int = 0):
    """Inspect's tabs over one checkpoint's figures: their labels, and a function that opens the k-th."""
    labels = [t.label for t in at.tabs if t.label not in ("Words", "Word pieces")]
    key = next(k for k in at.session_state._state._state.filtered_state
               if k.startswith(f"insp_fig_{slot}_") and not k.endswith("_open"))

    def open_tab(k: int):
        at.session_state[key] = labels[k]
        return at.run()
    return labels, open_tab


def test_inspect_draws_a_views_figures_one_tab_at_a_time_and_keeps_the_open_tab(app):
    """A view of three figures or more shows them in tabs; only the open tab's figure is sent to the browser (its
    drawing is what a first render waits for). Another layer retitles the figures: the same tab stays open."""
    import json

    at = app("pages/inspect.py")
    at.selectbox(key="insp_ckpt").set_value("transformer_tiny").run()
    labels, open_tab = fig_tabs(at)
    assert len(labels) == 4 and "all layers x heads" in labels and "cls row" in labels
    assert not any(x.startswith("transformer_tiny · ") for x in labels)          # the checkpoint's name is above
    titles = []
    for k in range(len(labels)):
        open_tab(k)
        assert not at.exception and len(charts(at)) == 1, k
        titles.append(json.loads(charts(at)[0].proto.spec)["layout"]["title"]["text"])
    assert len(set(titles)) == 4                                          # a different figure in each tab
    open_tab(1)                                                            # the head view, layer 2
    assert "head view, layer 2" in titles[1]
    radio = next(r for r in at.radio if r.label == "layer")
    radio.set_value(0).run()                                               # layer 1: new titles, same tab
    assert not at.exception
    (fig,) = charts(at)
    assert "head view, layer 1" in json.loads(fig.proto.spec)["layout"]["title"]["text"]
    assert any("Faithful on this text?" in c.value for c in at.caption)    # under the tabs, whichever is open


def test_inspect_attention_view_says_how_faithful_it_is_on_this_text(app):
    from textcls.interpret import as_source
    from textcls.interpret.faithfulness import erasure_curves
    from textcls.interpret.methods import explanation
    from textcls.checkpoint import load_checkpoint
    from pages.common import widgets as w

    at = app("pages/inspect.py")
    at.selectbox(key="insp_ckpt").set_value("act_tiny").run()
    lines = [c.value for c in at.caption if "Faithful on this text?" in c.value]
    assert len(lines) == 1 and "orders" in lines[0] and w.md_escape("p = ") in lines[0]
    from textcls.interpret.rankings import NO_VERDICT, UNSETTLED, VERDICTS, WORSE
    assert any(v in lines[0] for v in (*VERDICTS, UNSETTLED, NO_VERDICT, WORSE))
    path = next(i.path for i in w.cache.checkpoints(deep=True)[0] if i.name == "act_tiny")
    pred = load_checkpoint(path)                                         # the number shown is the library's
    inst = as_source(pred).instances([w.EXAMPLE])[0]
    aopc = erasure_curves(pred.model, inst, explanation(pred.model, inst, "attention"))["aopc_comprehensiveness"]
    assert w.md_escape(f"by {aopc:.3f}") in lines[0]
    at.selectbox(key="insp_view_0_act_tiny").set_value("generic").run()    # not an attention view: no line
    assert not [c for c in at.caption if "Faithful on this text?" in c.value]


def test_inspect_loads_plotly_code_ahead_only_when_it_drew_no_plotly_chart(app):
    """ACT's default view is shaded words (HTML): the page adds one hidden one-point Plotly chart so the browser
    loads Plotly's code before a Plotly view is picked. A view that draws Plotly charts gets no extra one."""
    import json

    from pages.common import widgets as w
    at = app("pages/inspect.py", params={"ckpt": "act_tiny"})
    assert at.selectbox(key="insp_view_0_act_tiny").value == "ACT-T4" and at.get("html")
    (pre,) = charts(at)
    assert w.PLOTLY_PREFETCH in pre.proto.id and json.loads(pre.proto.spec)["data"][0]["x"] == [0]
    at.selectbox(key="insp_ckpt").set_value("transformer_tiny").run()
    assert len(charts(at)) == 1 and not any(w.PLOTLY_PREFETCH in c.proto.id for c in charts(at))
    at.selectbox(key="insp_ckpt").set_value("act_tiny").run()        # this tab has drawn a Plotly chart: no more
    assert not charts(at) and at.get("html")


def test_inspect_example_review_fills_the_text_and_is_drawn(app):
    from textcls.data.datasets import load_data
    at = app("pages/inspect.py")
    box = at.selectbox(key="insp_text_example")
    reviews = [o for o in box.options if o.startswith("IMDB review")]
    assert len(reviews) == 6                                            # 3 negative, 3 positive, shipped sample
    box.set_value(reviews[-1]).run()
    text = at.text_area(key="insp_text").value
    from textcls.data.text import readable
    assert text in map(readable, load_data("imdb_sample").splits["test"].texts) and len(text.split()) > 100
    assert "<br" not in text                        # issue 27.8: the review as a person reads it, no raw HTML
    assert any("<br" in t for t in load_data("imdb_sample").splits["test"].texts)
    assert not at.exception and (charts(at) or at.get("html"))
    n_tokens = int(next(c.value for c in at.caption if c.value.split()[0].isdigit()).split()[0])
    assert n_tokens > 60                                                # the review was read, not the example


def test_inspect_builds_only_the_selected_view_and_caches_it(app, monkeypatch):
    """Only the selected view is drawn (the others cost nothing), and switching back to a view is a cache hit."""
    from textcls import viz

    built = []
    real = viz.build_view

    def spy(view_id, vi):
        built.append(view_id)
        return real(view_id, vi)
    monkeypatch.setattr(viz, "build_view", spy)
    at = app("pages/inspect.py")
    at.selectbox(key="insp_ckpt").set_value("transformer_tiny").run()
    at.text_area(key="insp_text").input("the staff were friendly but the food was slow .")   # not drawn before
    built.clear()
    at.button[0].click().run()
    assert not at.exception
    assert built == ["TR-ATT"]                                          # the selected view only
    at.selectbox(key="insp_view_0_transformer_tiny").select_index(1).run()
    other = at.selectbox(key="insp_view_0_transformer_tiny").value
    assert other != "TR-ATT" and built == ["TR-ATT", other]
    at.selectbox(key="insp_view_0_transformer_tiny").select_index(0).run()
    assert not at.exception and len(charts(at)) == 1 and len(fig_tabs(at)[0]) == 4
    assert built == ["TR-ATT", other]                                   # back to a view: cached, not rebuilt


def test_inspect_two_checkpoints_side_by_side_with_shared_reasons_figure(app, ckpt_dir):
    at = app("pages/inspect.py")
    at.selectbox(key="insp_ckpt").set_value("act_tiny").run()
    at.toggle(key="insp_two").set_value(True).run()
    at.selectbox(key="insp_ckpt2").set_value("transformer_tiny").run()
    assert not at.exception
    # TR-ATT's first tab (of four) draws one chart; the reasons figure and ACT-T4 are shaded words (HTML)
    assert len(charts(at)) == 1
    html = [h.proto.body.replace("&#95;", "_") for h in at.get("html")]
    assert len(html) == 2
    # the reasons figure in the paper's order: Transformer above ACT
    assert html[0].index("transformer_tiny → ") < html[0].index("act_tiny → ")


def test_inspect_long_text_gets_a_token_window(app):
    at = app("pages/inspect.py")
    at.selectbox(key="insp_ckpt").set_value("transformer_tiny").run()
    at.text_area(key="insp_text").input(" ".join(["the food was great"] * 120))   # 480 words -> 400 tokens
    at.button[0].click().run()
    assert not at.exception
    slider = at.slider(key="insp_wstart")
    assert slider.value == 1
    slider.set_value(101).run()
    assert not at.exception
    spec = charts(at)[0].proto.spec
    assert "101-300 of 400" in spec                                     # the window is in the title


def test_inspect_empty_tokens_message(app):
    at = app("pages/inspect.py")
    at.text_area(key="insp_text").input("   ")
    at.button[0].click().run()
    assert not at.exception
    assert any("Type or paste" in i.value for i in at.info)


def test_home_links_only_to_pages_that_exist(app):
    at = app()
    linked = {p.proto.page for p in at.get("page_link")}
    existing = {f.stem for f in (REPO / "pages").glob("*.py")} - {"home"}
    assert {"compare", "inspect"} <= linked
    assert linked <= existing                                           # a listed page that is missing is skipped


def test_broken_checkpoints_are_reported_not_raised(ckpt_dir, tmp_path, monkeypatch):
    import json
    import shutil

    root = tmp_path / "mixed"
    shutil.copytree(ckpt_dir[0] / "kim_cnn_tiny", root / "good")
    shutil.copytree(ckpt_dir[0] / "act_tiny", root / "stale")       # its config no longer fits its weights
    cfg = json.loads((root / "stale" / "config.json").read_text())
    cfg["model_config"]["no_such_field"] = 1
    (root / "stale" / "config.json").write_text(json.dumps(cfg))
    (root / "half").mkdir()                                          # not a checkpoint at all
    (root / "half" / "config.json").write_text("{")
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(root))
    at = open_page()
    # validated in full before it is listed as usable (torch is loaded here): "stale" is reported, never offered
    assert sorted(at.dataframe[0].value["checkpoint"]) == ["good"]
    assert any("could not be read" in e.label for e in at.expander)
    assert any("no_such_field" in str(m.value) for m in [*at.markdown, *at.caption, *at.text, *at.code])
    at.switch_page("pages/compare.py").run()
    at.button[0].click().run()
    assert not at.exception and not at.error
    assert at.get("html")[0].proto.body.count("confidence ") == 1                  # one card: "good"


def test_compare_all_tasks_compares_within_each_label_set(mixed_dir, monkeypatch):
    """Issue 27.3: with task "all", checkpoints of different label sets are compared per task: no verdict or card
    sets one task's label against another's, and each checkpoint's probability rows are its own labels only."""
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(mixed_dir))
    at = open_page("pages/compare.py")
    at.get("button_group")[0].set_value("all").run()
    at.text_area(key="cmp_text").input(SENTENCE)
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    for v in [x.value for x in at.success] + [x.value for x in at.warning]:       # verdicts of one task each
        assert not ({"ABBR", "HUM", "NUM"} & set(v.replace("*", " ").split())
                    and {"negative", "positive"} & set(v.replace("*", " ").split())), v
    bodies = [h.proto.body for h in at.get("html")]
    cards = [b for b in bodies if "confidence " in b]
    assert len(cards) == 2                                             # one set of cards per task
    qa = next(b for b in cards if "kim&#95;cnn&#95;qa" in b or "kim_cnn_qa" in b)
    assert "negative" not in qa and "positive" not in qa and "disagrees" not in qa   # alone in its task
    tiny = next(b for b in cards if b is not qa)
    assert "ABBR" not in tiny
    probs = [b for b in bodies if " %</span>" in b and "confidence " not in b]
    assert sorted(b.count(" %</span>") for b in probs) == [3, 4]       # 3 labels x 1, 2 labels x 2: no 0 % rows


def test_inspect_can_is_not_drawn_under_hcans_title(tmp_path, monkeypatch):
    """Issue 27.4: CAN (HCAN's flat model, no sentences) shares HCAN's views but is not titled "HCAN Fig. 4", and
    nothing on its page speaks of the sentence weight gamma, which CAN does not have."""
    tok = Tokenizer.build(CORPUS, TokenizerConfig())
    model = textcls.create_model("can", vocab_size=len(tok.vocab), num_labels=2, preset="small").eval()
    save_checkpoint(tmp_path / "can_tiny", model, tok, ["negative", "positive"], meta={"data": {"name": "tiny"}})
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(tmp_path))
    at = open_page("pages/inspect.py")
    box = at.selectbox(key="insp_view_0_can_tiny")
    titles = list(box.options)                                      # as the user reads them
    assert len(titles) >= 3 and all(t.startswith("CAN") for t in titles[:-1]), titles
    for i in range(len(titles)):
        at.selectbox(key="insp_view_0_can_tiny").select_index(i).run()
        assert not at.exception
        text = all_text(at) + " ".join(titles)
        for wrong in ("HCAN Fig", "gamma", "sentence weight", "each sentence"):
            assert wrong not in text, (titles[i], wrong)


def test_home_where_next_links_every_page(app):
    """Issue 27.10: "Where next" offers every page of the app's navigation (Explore and Studies were missing)."""
    import ast
    pages = ast.literal_eval(next(n.value for n in ast.walk(ast.parse((REPO / "app.py").read_text()))
                                  if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "PAGES"))
    linked = {p.proto.page for p in app().get("page_link")}
    assert linked == {Path(f).stem for f, _, _ in pages} - {"home"}


def test_home_checkpoint_table_shows_names_and_labels_whole(mixed_dir, tmp_path, monkeypatch):
    """Issue 27.10: the checkpoint table fits a laptop window (about 940 px of table at 1,400 px) and each text
    column is wide enough for its longest cell (about 6.3 px a character of the table's font); a long label list
    (semeval2010's 19) is listed under the table instead of cut in its cell."""
    import json
    import shutil

    shutil.copytree(mixed_dir, tmp_path / "ck")
    labels = [f"Relation-{k}(e1,e2)" for k in range(18)] + ["Other"]
    tok = Tokenizer.build(CORPUS, TokenizerConfig())
    model = textcls.create_model("kim_cnn", vocab_size=len(tok.vocab), num_labels=19, preset="small").eval()
    save_checkpoint(tmp_path / "ck" / "transformer-semeval2010", model, tok, labels,
                    meta={"data": {"name": "semeval2010"}})
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(tmp_path / "ck"))
    at = open_page()
    table = at.dataframe[0]
    widths = {k: v.get("width") for k, v in json.loads(table.proto.columns).items() if k != "_index"}
    assert all(isinstance(x, int) for x in widths.values()), widths
    assert sum(widths.values()) <= 940, widths
    df = table.value
    for col in df.columns:
        if df[col].dtype == object:
            longest = max(df[col].astype(str), key=len)
            assert 6.3 * len(longest) + 8 <= widths[col], (col, longest, widths[col])
    assert "transformer-semeval2010" in df["checkpoint"].tolist()
    assert "Relation-17(e1,e2)" in all_text(at, unescape=True)       # the whole list, under the table


def test_unknown_word_warning_names_the_words_and_entity_tags_are_no_words(app, ckpt_dir):
    """Issue 27.8: the unknown-word warning names the words; a model not made for relations does not read
    <e1>..</e2> as four unknown tokens."""
    at = app()
    at.text_input(key="home_text").input("the food was great qwzx")
    at.button[0].click().run()
    warn = " ".join(x.value for x in at.warning)
    assert "“qwzx”" in warn and "1 of 5" in warn
    at.text_input(key="home_text").input("the <e1>food</e1> was <e2>great</e2>")
    at.button[0].click().run()
    table = at.dataframe[-1].value
    assert (table["tokens"] == 4).all() and (table["unknown words"].astype(int) == 0).all()
    assert not any("unknown" in x.value for x in at.warning)


def test_inspect_side_by_side_figures_fit_their_column(app):
    """Issue 27.5: side by side (a ~470 px column), the all-heads grid is no wider than its column (its token labels
    were cut), every title wraps to the column (no "- layer 2," cut at the edge), and a legend above the plot sits
    below the title's lines."""
    import json
    at = app("pages/inspect.py")
    at.selectbox(key="insp_ckpt").set_value("transformer_tiny").run()
    at.toggle(key="insp_two").set_value(True).run()
    at.selectbox(key="insp_ckpt2").set_value("act_tiny").run()
    assert not at.exception
    labels, open_tab = fig_tabs(at)
    figs = []
    for k in range(len(labels)):                              # matrix, head view, grid, cls row of the Transformer
        figs += [json.loads(c.proto.spec) for c in open_tab(k).get("plotly_chart")]
    assert len(figs) == 4
    for f in figs:
        lay = f["layout"]
        title = lay.get("title", {})
        if "all layers x heads" in str(title.get("text", "")):
            assert lay["width"] <= 470, lay["width"]
        lines = [x for x in str(title.get("text", "")).split("<br>") if not x.startswith("<sup>")]
        assert all(len(x) <= 52 for x in lines), lines
        legend = lay.get("legend", {})
        if legend.get("orientation") == "h" and legend.get("y", 0) >= 1:          # legend above the plot
            assert title.get("yref") == "container" and title.get("yanchor") == "top"
            assert lay["margin"]["t"] >= 10 + 19 * len(lines) + 30
