"""`scripts/bench_app.py --floor`: the bare two-page Streamlit app it measures is what its help says - Home a title
and an 18-row table, Compare a title and one Plotly chart - and runs with this repository's config."""
import sys
from pathlib import Path

from streamlit.testing.v1 import AppTest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from bench_app import FLOOR_PAGES, REPO, write_floor_app  # noqa: E402  (the benchmark's own helper)


def test_the_floor_app_is_a_table_then_one_plotly_chart(tmp_path):
    app = write_floor_app(tmp_path)
    assert (tmp_path / ".streamlit" / "config.toml").read_text() == (REPO / ".streamlit" / "config.toml").read_text()
    assert all((tmp_path / f).is_file() for f, _ in FLOOR_PAGES)
    at = AppTest.from_file(str(app)).run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Home"]
    (table,) = at.dataframe
    assert len(table.value) == 18 and not at.get("plotly_chart")
    at.switch_page("pages/compare.py").run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Compare"] and len(at.get("plotly_chart")) == 1
