"""scripts/attention_report.py: before columns and carried-over rows (no model is run)."""
import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("attention_report", REPO / "scripts" / "attention_report.py")
report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(report)


def row(name, entropy, peak, view="LAMA-HT", what="lama-ht", texts=200):
    return {"checkpoint": name, "view": view, "map": what, "texts": texts, "entropy": entropy, "peak": peak,
            "uniform": 0.5}


def test_before_columns_and_carried_rows_round_trip(tmp_path):
    rows = [row("lama-sst2", 0.877, 3.3)]
    report.add_before(rows, [row("lama-sst2", 0.988, 1.6), row("lama-trec", 0.991, 1.4)])
    assert (rows[0]["before_entropy"], rows[0]["before_peak"]) == (0.988, 1.6)
    out = tmp_path / "attention.md"
    out.write_text(report.markdown(rows + [row("act-sst2", 0.604, 6.7, "ACT-T4", "act-t4", 300)], 200, 1.0, "OLD",
                                   "lama"))
    kept = report.carried_rows(out, {"lama-sst2"})              # lama-sst2 is measured again: not carried
    assert [(r["checkpoint"], r["texts"], r["entropy"], r["peak"]) for r in kept] == [("act-sst2", 300, 0.604, 6.7)]
    assert "before_entropy" not in kept[0]
    again = report.carried_rows(out, set())
    assert again[-1]["checkpoint"] == "lama-sst2" and again[-1]["before_entropy"] == 0.988
    assert report.carried_rows(tmp_path / "missing.md", set()) == []
