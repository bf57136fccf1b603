"""Issue 27.12: which checkpoint to pick - the Pareto front of accuracy against latency and the one-line reading
derived from the numbers, and the Benchmarks page that shows them per task apart from the papers' configurations."""
from __future__ import annotations

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
