"""AppTest of the Attribute and Lab pages against tiny untrained checkpoints built here (and the figure builders
they use)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import textcls
from textcls.checkpoint import save_checkpoint
from textcls.viz import explanations as F
from textcls.interpret import lab
from textcls.models.registry import get_entry
from textcls.data.text import Tokenizer, TokenizerConfig

from app_pages import open_page, page_text

MODELS = ("kim_cnn", "lama", "hcan", "agcnn")
CORPUS = ["the acting is superb , but the plot is not very good .", "a gripping , beautifully acted film .",
          "the jokes fall flat and the story is dull .", "good", "not good", "very bad"]


@pytest.fixture(scope="module")
def ckpt_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("interp_ckpts")
    for k, name in enumerate(MODELS):
        tok = Tokenizer.build(CORPUS, TokenizerConfig(hierarchical=get_entry(name).input_kind == "sentences"))
        torch.manual_seed(k)
        model = textcls.create_model(name, vocab_size=len(tok.vocab), num_labels=2, preset="small").eval()
        save_checkpoint(root / f"{name}_tiny", model, tok, ["negative", "positive"],
                        meta={"data": {"name": "sst2"}})
    return root


@pytest.fixture
def run_page(ckpt_dir, monkeypatch):
    def make(page, root=ckpt_dir):
        monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(root))
        return open_page(page, timeout=180)
    return make


def texts(at) -> str:
    return page_text(at, unescape=True)


# ---------------------------------------------------------------- Attribute

def open_view(at, view: str):
    """Open one tab of the Attribute page (its tabs track state: only the open one is computed)."""
    at.session_state["attr_view"] = view
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def test_attribute_page_one_sentence_every_checkpoint(run_page):
    at = run_page("pages/attribute.py")
    assert not at.error, [e.value for e in at.error]
    # Reasons (open first): the grid, one card per checkpoint, IG convergence
    assert len(at.get("plotly_chart")) == 1                                    # the reasons grid
    assert "Reasons" in [t.label for t in at.tabs]
    frames = [d.value for d in at.dataframe]
    ig = next(f for f in frames if "converged" in f.columns)
    assert len(ig) == len(MODELS)
    body = texts(at)
    for m in MODELS:
        assert f"{m}_tiny" in body
    # Agreement: Kendall tau and top-k overlap
    open_view(at, "Agreement")
    assert len(at.get("plotly_chart")) == 2
    # Faithfulness: per explanation, per model, badges, erasure curves
    open_view(at, "Faithfulness")
    frames = [d.value for d in at.dataframe]
    per_expl = next(f for f in frames if "AOPC comprehensiveness" in f.columns)
    assert sorted(set(per_expl["checkpoint"])) == sorted(f"{m}_tiny" for m in MODELS)
    assert set(per_expl["explanation"]) == {"Own attention", "Integrated gradients", "Gradient x input", "Occlusion"}
    per_model = next(f for f in frames if "IG |delta|" in f.columns)
    row = per_model.set_index("checkpoint")
    assert row.loc["lama_tiny", "perm. median TVD"] != ""                       # a number for an attention model
    assert row.loc["kim_cnn_tiny", "perm. median TVD"] == ""                   # blank, as the caption says
    assert not any("e-" in str(v) or v == "None" for v in per_model.to_numpy().ravel())   # never .00000005
    assert "-badge[" in texts(at)
    assert len(at.get("plotly_chart")) == 1                                    # erasure curves
    # Interventions: probabilities before and after
    open_view(at, "Interventions")
    assert len(at.get("plotly_chart")) == 1
    # Counterfactual: one row per checkpoint
    open_view(at, "Counterfactual")
    next(b for b in at.selectbox if b.key and b.key.startswith("attr_cf_idx_")).set_value(0).run()
    cf = next(d.value for d in at.dataframe if "flips" in d.value.columns and "p before" in d.value.columns)
    assert len(cf) == len(MODELS)


def test_attribute_page_computes_only_the_open_view(run_page, monkeypatch):
    """A tab that is not open costs nothing: its library functions are not called until it is opened. (Counted
    in this process: the model work here (TEXTCLS_WORKER=0); the worker runs the same textcls.serve.work jobs.)"""
    monkeypatch.setenv("TEXTCLS_WORKER", "0")
    from textcls import interpret
    from textcls.interpret import attributions, faithfulness, interventions

    calls: dict[str, int] = {}

    def counted(module, name):
        fn = getattr(module, name)

        def wrapper(*a, **kw):
            calls[name] = calls.get(name, 0) + 1
            return fn(*a, **kw)
        monkeypatch.setattr(module, name, wrapper)

    for module, name in ((attributions, "attribute_instances"), (faithfulness, "erasure_curves"),
                         (faithfulness, "erasure_flip"), (faithfulness, "permutation_test"),
                         (interventions, "compare_edit"), (interpret, "intervene")):
        counted(module, name)
    at = run_page("pages/attribute.py")
    sentence = "the plot is dull , but the acting is not bad ."         # not asked before: no cached result
    at.text_input(key="attr_text").input(sentence)
    calls.clear()
    at.button(key="FormSubmitter:attr_form-Explain").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert calls.get("attribute_instances", 0) >= len(MODELS)                 # Reasons: computed, shown
    for name in ("erasure_curves", "erasure_flip", "permutation_test", "compare_edit", "intervene"):
        assert name not in calls, (name, calls)                                 # the closed tabs: not run
    calls.clear()
    at.run()                                                                    # a rerun: everything cached
    assert not calls, calls
    open_view(at, "Faithfulness")
    assert calls.get("erasure_curves") and calls.get("erasure_flip") and calls.get("permutation_test")
    assert "compare_edit" not in calls and "intervene" not in calls and "attribute_instances" not in calls
    open_view(at, "Counterfactual")
    assert "compare_edit" not in calls                                          # nothing until a word is picked
    next(b for b in at.selectbox if b.key and b.key.startswith("attr_cf_idx_")).set_value(0).run()
    assert calls.get("compare_edit") == 1 and "intervene" not in calls
    open_view(at, "Interventions")
    assert calls.get("intervene") == 1
    calls.clear()
    open_view(at, "Faithfulness")                                               # a revisit is instant
    assert not calls, calls


def test_attribute_page_interventions(run_page):
    at = run_page("pages/attribute.py")
    open_view(at, "Interventions")
    at.selectbox(key="attr_int_ckpt").set_value("agcnn_tiny").run()
    kinds = at.radio(key="attr_int_kind").options
    assert {"Force gates to 1", "Force gates to 0", "Zero a filter", "Swap the activation"} <= set(kinds)
    at.radio(key="attr_int_kind").set_value("Force gates to 0").run()
    assert not at.exception
    assert "every gate forced to 0" in texts(at)
    open_view(at, "Reasons")                                                    # the choice survives a tab switch
    open_view(at, "Interventions")
    assert at.selectbox(key="attr_int_ckpt").value == "agcnn_tiny"
    assert at.radio(key="attr_int_kind").value == "Force gates to 0"
    at.selectbox(key="attr_int_ckpt").set_value("lama_tiny").run()
    at.radio(key="attr_int_kind").set_value("Ablate a head").run()
    assert not at.exception and "head 1 (every layer) ablated" in texts(at)


COMP = "AOPC comprehensiveness (higher = faithful)"


def test_attribute_page_counterfactual_and_slice(run_page):
    at = run_page("pages/attribute.py")
    open_view(at, "Counterfactual")
    toks = CORPUS[0].split()

    def cf_box(a):
        return next(b for b in a.selectbox if b.key and b.key.startswith("attr_cf_idx_"))
    first = cf_box(at)
    assert first.value is None and not any("After:" in t.value for t in at.text)   # nothing applied before a pick
    first.set_value(toks.index("good"))
    next(b for b in at.text_input if b.key.startswith("attr_cf_repl_")).input("awful").run()
    assert not at.exception
    assert any(t.value.endswith("After:  " + CORPUS[0].replace("good", "awful")) for t in at.text)
    # a new sentence: the control follows it (no word picked, its options the new tokens), nothing applied
    at.text_input(key="attr_text").input("a dull and tedious film")
    at.button(key="FormSubmitter:attr_form-Explain").click().run()
    open_view(at, "Counterfactual")
    box = cf_box(at)
    assert box.key != first.key and box.value is None
    assert list(box.options)[:2] == ["1: a", "2: dull"]
    assert not any("After:" in t.value for t in at.text)
    open_view(at, "Faithfulness")
    assert not [n for n in at.get("number_input") if n.key.startswith("attr_slice")]   # its panel closed: not built
    assert at.number_input(key="attr_opt_occlusion_window").value == 1        # occlusion's own option, in the form
    at.session_state["attr_slice_open"] = True
    at.run()
    at.number_input(key="attr_slice_n").set_value(5)
    at.selectbox(key="attr_slice_ckpt").set_value("kim_cnn_tiny")
    at.button(key="FormSubmitter:attr_slice-Run").click().run()
    assert not at.exception
    frame = next(d.value for d in at.dataframe if COMP in d.value.columns)
    assert {"Random ranking", "Leave-one-out"} <= set(frame["method"]) and (frame["texts"] == "5").all()


def test_attribute_page_data_set_panel_runs_a_whole_split_and_stops(run_page, tmp_path, monkeypatch):
    """The "over a data set" panel: the whole split (Texts = 0), a progress bar, chunk by chunk; a Stop between
    chunks (simulated: AppTest cannot click while the script runs) leaves the texts done in the table and a
    Continue button that finishes the run. (The run here, TEXTCLS_WORKER=0, where the Stop is simulated; through
    the worker: test_worker.)"""
    from textcls.interpret import batched
    monkeypatch.setenv("TEXTCLS_WORKER", "0")
    data = tmp_path / "data" / "tinyset"
    data.mkdir(parents=True)
    (data / "dataset.json").write_text('{"name": "tinyset", "task": "sentiment", "labels": ["negative", "positive"]}')
    words = ["good film", "bad plot", "the acting is superb", "very bad", "not good", "a gripping film", "dull",
             "good good"] * 3
    rows = [f"{t},{['negative', 'positive'][i % 2]}" for i, t in enumerate(words)]
    (data / "test.csv").write_text("text,label\n" + "\n".join(rows) + "\n")
    monkeypatch.setenv("TEXTCLS_DATA", str(tmp_path / "data"))
    monkeypatch.setattr(batched, "CHUNK_TEXTS", 10)
    from pages.common import work
    run = work.SliceJob.run

    stopped = []

    def run_then_stop(self, progress=None):          # as if Stop was clicked while the first chunk ran
        def progress_then_stop(done, total):
            progress(done, total)
            if done == 10 and not stopped:
                stopped.append(self.stop())
        return run(self, progress_then_stop)
    monkeypatch.setattr(work.SliceJob, "run", run_then_stop)
    at = run_page("pages/attribute.py")
    open_view(at, "Faithfulness")
    at.session_state["attr_slice_open"] = True
    at.run()
    at.selectbox(key="attr_slice_data").set_value("tinyset")
    at.selectbox(key="attr_slice_ckpt").set_value("lama_tiny")
    at.button(key="FormSubmitter:attr_slice-Run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Stopped after 10 of 24 texts" in texts(at)
    frame = next(d.value for d in at.dataframe if COMP in d.value.columns)
    assert (frame["texts"] == "10").all() and "comprehensiveness 95% CI" in frame.columns
    at.button(key="attr_slice_continue").click().run()
    assert not at.exception and "Stopped" not in texts(at)
    frame = next(d.value for d in at.dataframe if COMP in d.value.columns)
    assert (frame["texts"] == "24").all() and "24 texts of tinyset/test" in texts(at)
    assert any("permuted attention" in c for d in at.dataframe for c in d.value.columns)
    # issue 27.9: each interval beside its mean (not off-screen at the end), no "None" cell, no snake_case header
    cols = list(frame.columns)
    assert cols[2:6] == ["NAOPC comprehensiveness (0 worst - 1 best order; compares models)",
                         "NAOPC comprehensiveness 95% CI", "NAOPC sufficiency (0 worst - 1 best order)",
                         "NAOPC sufficiency 95% CI"], cols           # NAOPC first: the column that compares models
    assert cols[6:10] == [COMP, "comprehensiveness 95% CI", "AOPC sufficiency (lower = faithful)",
                          "sufficiency 95% CI"], cols
    for d in at.dataframe:
        t = d.value
        assert not any("_" in c for c in t.columns), list(t.columns)
        assert not t.isna().any().any() and not t.astype(str).isin(["None", "nan"]).any().any()


def test_attribute_page_hostile_and_long_input(run_page):
    """Markup stays text, unknown words are named, and a long text is windowed (the grid stays readable)."""
    at = run_page("pages/attribute.py")
    at.multiselect(key="attr_ckpts").set_value(["kim_cnn_tiny", "lama_tiny"])
    at.multiselect(key="attr_methods").set_value(["attention", "grad_x_input"])
    at.text_input(key="attr_text").input("<script>alert(1)</script><b>bold</b> qwzx good")
    at.button(key="FormSubmitter:attr_form-Explain").click().run()
    assert not at.exception, [e.value for e in at.exception]
    shown = "".join(h.proto.body for h in at.get("html"))
    assert "<b>" not in shown and "<script>" not in shown and "&#60;b&#62;" in shown
    assert "tokens are not in this model's vocabulary" in texts(at)
    long = " ".join(CORPUS * 12)                                     # 108 known tokens
    at.text_input(key="attr_text").input(long)
    at.button(key="FormSubmitter:attr_form-Explain").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.slider(key="attr_win").max > 1
    grid = next(c for c in at.get("plotly_chart") if "tokens 1-60 of" in c.proto.spec)
    assert grid is not None


def test_attribute_page_without_checkpoints(run_page, tmp_path):
    at = run_page("pages/attribute.py", root=tmp_path / "none")
    assert any("No trained checkpoint found" in x.value for x in at.warning)


# ---------------------------------------------------------------- Lab

def test_lab_page(run_page):
    at = run_page("pages/lab.py")
    assert not at.error, [e.value for e in at.error]
    body = texts(at)
    for key in lab.DEMO_TEXT:
        assert lab.DEMO_TEXT[key] in body                        # every demo's read-aloud text is shown
    charts = at.get("plotly_chart")
    assert len(charts) >= 4 + 1 + 2 + 2          # AG-F2 x4, negation, HCAN x2, gates x2
    gate_table = next(d.value for d in at.dataframe if "share < 1" in d.value.columns)
    c = textcls.make_config("agcnn", preset="small")
    assert len(gate_table) == len(c.windows) * len(c.gate_windows) * c.n_gates   # one row per gate map
    at.multiselect(key="lab_acts").set_value(["relu", "nlrelu"]).run()
    assert not at.exception


def test_lab_page_without_checkpoints_uses_untrained_models(run_page, tmp_path):
    at = run_page("pages/lab.py", root=tmp_path / "none")
    assert not at.exception
    assert any("untrained" in x.value for x in at.info)
    assert any("share < 1" in d.value.columns for d in at.dataframe)


# ---------------------------------------------------------------- figure builders

def test_figures_carry_their_numbers():
    g = F.reasons_grid([("m · IG", [0.5, -1.0, 0.25]), ("m · attention", [0.2, 0.2, 0.6])], ["a", "a", "<b>"])
    assert list(g.table["normalised"][:3]) == [0.5, -1.0, 0.25]                 # signed: v / max|v|
    # unsigned: shares; 0.2 of 1.0 over 3 tokens is below uniform (white), 0.6 = 1.8x uniform of a 4x scale
    np.testing.assert_allclose(g.table["normalised"][3:], [0, 0, np.log(1.8) / np.log(4)])
    np.testing.assert_allclose(F.normalise_row([1, 1, 1, 1]), 0)                 # flat attention stays white
    assert g.fig.layout.xaxis.ticktext == ("a", "a", "&lt;b&gt;")      # repeated words stay apart; escaped
    rows = lab.activation_statistics(("relu", "selu"), n_layers=3)
    f = F.activation_figure(rows, "N(0, 1)", "variance")
    assert f.fig.layout.yaxis.type == "log" and len(f.table) == 6
    agr = {"names": ["a", "b"], "kendall_tau": np.array([[1.0, 0.5], [0.5, 1.0]]),
           "topk_overlap": np.array([[1.0, np.nan], [np.nan, 1.0]])}
    assert F.agreement_heatmap(agr, "topk_overlap").table["topk_overlap"].isna().sum() == 2
    with pytest.raises(ValueError, match="no rows"):
        F.activation_figure(rows, "N(0, 9)")
    win = F.reasons_grid([("m · IG", [0.5, -1.0, 0.25, 2.0])], ["a", "b", "c", "d"], window=(1, 2))
    assert list(win.table["token"]) == ["b", "c"] and list(win.fig.data[0].x) == [1, 2]
    assert "tokens 2-3 of 4" in win.title
    np.testing.assert_allclose(win.table["normalised"], [-0.5, 0.125])     # normalised over the whole text
    long = [{"model": "m", "sentence": "good " * 500 + end, "p_positive": p, "label": "x"}
            for end, p in (("a", 0.2), ("b", 0.7))]
    neg = F.negation_figure(long)
    assert len(neg.fig.data[0].x) == 2 and max(len(t) for t in neg.fig.layout.xaxis.ticktext) <= 28
    assert list(neg.table["sentence"]) == [r["sentence"] for r in long]          # the table keeps every word


def test_erasure_curves_of_many_methods_all_look_different():
    """Issue 27.9: with eight or more methods no two erasure curves share colour and line style."""
    from textcls.viz.explanations import erasure_figure
    c = {"bins": [0, 10, 20], "k_tokens": [0, 1, 2], "comprehensiveness": [0, .1, .2], "sufficiency": [.2, .1, 0]}
    fig = erasure_figure({f"method {k}": c for k in range(12)}).fig
    looks = {(t.line.color, t.line.dash, t.marker.symbol) for t in fig.data if t.showlegend}
    assert len(looks) == 12
