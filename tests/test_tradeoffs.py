"""Issue 27.12: which checkpoint to pick - the Pareto front of accuracy against latency and the one-line reading
derived from the numbers, and the Benchmarks page that shows them per task apart from the papers' configurations."""
from __future__ import annotations

import pytest

from textcls.experiments.tradeoffs import pareto_front, reading

ROWS = [{"name": "big", "accuracy": 84.0, "ms": 10.0, "parameters": 3_000_000},
        {"name": "quick", "accuracy": 83.5, "ms": 2.0, "parameters": 1_500_000},
        {"name": "tiny", "accuracy": 83.2, "ms": 3.0, "parameters": 400_000},
        {"name": "bad", "accuracy": 70.0, "ms": 5.0, "parameters": 1_000_000},
        {"name": "fastest", "accuracy": 60.0, "ms": 1.0, "parameters": 900_000}]


def test_pareto_front_keeps_only_undominated_points():
    assert pareto_front(ROWS) == ["fastest", "quick", "big"]            # tiny and bad are beaten by quick


def test_reading_names_the_fastest_within_a_point_of_the_best():
    line = reading(ROWS)
    assert line.startswith("Fastest within 1 point of the best: quick (83.5 %, 2.0 ms")
    assert "5.0x faster than big at 0.5 points less" in line
    assert "smallest within 1 point: tiny (0.40 M parameters)" in line
    assert reading(ROWS[:1]).startswith("Most accurate: big") and "nothing within 1 point" in reading(ROWS[:1])
    assert "No checkpoint" in reading([])


def test_benchmarks_page_answers_which_checkpoint_per_task(monkeypatch):
    import json
    from app_pages import REPO, open_page, page_text
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(REPO / "checkpoints"))
    at = open_page("pages/benchmarks.py")
    text = page_text(at, unescape=True)
    heads = [h.value for h in at.subheader]
    assert "Which checkpoint to pick" in heads and "The papers' configurations" in heads
    assert "Fastest within 1 point of the best" in text or "Most accurate:" in text
    figs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    trade = [f for f in figs if "test accuracy against latency" in str(f["layout"].get("title", {}).get("text"))]
    assert trade and any(t.get("name") == "Pareto front" for t in trade[0]["data"])
    shipped = {n for t in trade[0]["data"] if t.get("name") == "shipped" for n in t["text"]}
    assert shipped and all(n.endswith("sst2") for n in shipped)       # one task per chart (the main one)


def test_reading_and_rows_carry_own_attention_faithfulness(tmp_path):
    """Issue 27.12: own-attention faithfulness beside accuracy and speed - read from the whole-split JSON of
    scripts/faithfulness_table.py, only for the checkpoint version it was measured on."""
    import json
    from types import SimpleNamespace as NS
    from textcls.experiments.tradeoffs import attention_faithfulness
    row = lambda name, created, aopc: {"checkpoint": name, "created": created, "n": 10, "methods": {  # noqa: E731
        "attention": {"aopc_comprehensiveness": aopc, "aopc_comprehensiveness_ci": [aopc - 0.01, aopc + 0.01],
                      "naopc_comprehensiveness": aopc + 0.4},
        "random": {"aopc_comprehensiveness": 0.04, "naopc_comprehensiveness": 0.3}}}
    f = tmp_path / "faithfulness.json"
    f.write_text(json.dumps([row("quick", "t1", 0.2), row("tiny", "old", 0.3), row("gone", "t1", 0.5)]))
    (tmp_path / "broken.json").write_text("{not json")
    infos = [NS(name="quick", created="t1"), NS(name="tiny", created="t2"), NS(name="big", created="t1")]
    faith = attention_faithfulness([f, tmp_path / "broken.json", tmp_path / "missing.json"], infos)
    assert set(faith) == {"quick"}                       # tiny was retrained since; gone is not listed
    assert faith["quick"]["aopc"] == 0.2 and faith["quick"]["random"] == 0.04
    rows = [dict(r, faith=faith.get(r["name"])) for r in ROWS]
    assert "most faithful own attention within 1 point: quick (NAOPC 0.600 against 0.300" in reading(rows)
    # raw AOPC alone never ranks models: its range depends on the model (Edin et al. 2025)
    raw = [dict(r, faith={k: v for k, v in faith["quick"].items() if k not in ("naopc", "random_naopc")})
           if r["name"] == "quick" else r for r in rows]
    assert "most faithful" not in reading(raw)
    from textcls.viz import tradeoff_figure
    fig = tradeoff_figure(rows, pareto_front(rows), "t")
    colours = [t for t in fig.fig.data if t.marker is not None and t.marker.showscale]
    assert len(colours) == 1 and list(colours[0].text) == ["quick"]
    assert fig.table.set_index("name").loc["quick", "own attention AOPC"] == 0.2
    assert fig.table.set_index("name").loc["quick", "own attention NAOPC"] == pytest.approx(0.6)


def test_benchmarks_page_colours_the_shipped_sst2_points_by_faithfulness(monkeypatch):
    import json
    from app_pages import REPO, open_page
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(REPO / "checkpoints"))
    at = open_page("pages/benchmarks.py")
    figs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    trade = next(f for f in figs if "test accuracy against latency" in str(f["layout"].get("title", {}).get("text")))
    coloured = {n for t in trade["data"] if (t.get("marker") or {}).get("showscale") is not None
                and t.get("name") == "shipped" for n in t["text"]}
    assert {"act-sst2", "lama-sst2", "transformer-sst2"} <= coloured


def test_explanation_rows_keep_the_run_over_more_texts_and_skip_bad_lines(tmp_path):
    import json
    from textcls.experiments.tradeoffs import explanation_rows
    line = {"checkpoint": "checkpoints/m", "kind": "method", "method": "alti", "n": 30,
            "aopc_comprehensiveness": 0.2, "aopc_comprehensiveness_ci": [0.1, 0.3], "seconds_per_text": 0.01,
            "plausibility_auprc": 0.5, "sanity_rho": 0.1}
    (tmp_path / "a.jsonl").write_text("\n".join([json.dumps(line), "{not json", json.dumps({**line, "kind": "summary"}),
                                                 json.dumps({**line, "method": "random", "n": 30})]))
    (tmp_path / "b.jsonl").write_text(json.dumps({**line, "n": 300, "aopc_comprehensiveness": 0.25}))
    rows = {r["method"]: r for r in explanation_rows([tmp_path / "a.jsonl", tmp_path / "b.jsonl",
                                                      tmp_path / "missing.jsonl"])}
    assert set(rows) == {"alti", "random"}
    assert rows["alti"]["n"] == 300 and rows["alti"]["aopc"] == 0.25 and rows["alti"]["checkpoint"] == "m"


def test_benchmarks_page_shows_which_explanation_to_trust(monkeypatch):
    """Each method of a measured checkpoint: faithfulness against cost, coloured by plausibility, the random floor."""
    import json
    from app_pages import REPO, open_page
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(REPO / "checkpoints"))
    at = open_page("pages/benchmarks.py")
    at.session_state["bench_explain_ckpt"] = "transformer-sst2"
    at.run()
    figs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    fig = next(f for f in figs if "transformer-sst2: faithfulness against cost" in
               str(f["layout"].get("title", {}).get("text")))
    shown = {n for t in fig["data"] for n in (t.get("text") or [])}
    assert {"ALTI", "Integrated gradients", "Own attention"} <= shown
    measured = [t for t in fig["data"] if t.get("name") == "plausibility measured"]
    assert measured and all(0 <= c <= 1 for c in measured[0]["marker"]["color"])
    assert any("random ranking" in (a.get("text") or "") for a in fig["layout"].get("annotations", []))


def test_naopc_from_a_second_file_joins_the_same_split_only(tmp_path):
    """scripts/naopc_table.py writes NAOPC beside faithfulness.json: it joins a checkpoint's row only when it was
    measured over the same number of texts (the same split), else the row keeps no NAOPC."""
    import json
    from types import SimpleNamespace as NS
    from textcls.experiments.tradeoffs import attention_faithfulness
    base = lambda name, n: {"checkpoint": name, "created": "t", "n": n, "methods": {  # noqa: E731
        "attention": {"aopc_comprehensiveness": 0.2}, "random": {"aopc_comprehensiveness": 0.04}}}
    norm = lambda name, n: {"checkpoint": name, "created": "t", "n": n, "methods": {  # noqa: E731
        "attention": {"aopc_comprehensiveness": 0.2, "naopc_comprehensiveness": 0.7},
        "random": {"aopc_comprehensiveness": 0.04, "naopc_comprehensiveness": 0.25}}}
    (tmp_path / "faithfulness.json").write_text(json.dumps([base("a", 100), base("b", 100)]))
    (tmp_path / "faithfulness_naopc.json").write_text(json.dumps([norm("a", 100), norm("b", 50)]))
    faith = attention_faithfulness(sorted(tmp_path.glob("faithfulness*.json")),
                                   [NS(name="a", created="t"), NS(name="b", created="t")])
    assert faith["a"]["naopc"] == 0.7 and faith["a"]["random_naopc"] == 0.25 and faith["a"]["n"] == 100
    assert faith["b"]["naopc"] is None and faith["b"]["n"] == 100
