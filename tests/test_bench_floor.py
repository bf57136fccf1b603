"""`scripts/bench_app.py --floor`: the bare Streamlit app it measures is what its help says - Home a title and an
18-row table; Compare the kinds of widget and HTML Compare's first render draws, and no chart; Chart one Plotly
chart - and it runs with this repository's config."""
import sys
from pathlib import Path

from streamlit.testing.v1 import AppTest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from bench_app import FLOOR_PAGES, REPO, write_floor_app  # noqa: E402  (the benchmark's own helper)


def test_the_floor_app_is_a_table_then_compares_widgets_then_one_plotly_chart(tmp_path):
    app = write_floor_app(tmp_path)
    assert (tmp_path / ".streamlit" / "config.toml").read_text() == (REPO / ".streamlit" / "config.toml").read_text()
    assert [f for f, _ in FLOOR_PAGES] == ["pages/home.py", "pages/compare.py", "pages/chart.py"]
    assert all((tmp_path / f).is_file() for f, _ in FLOOR_PAGES)
    at = AppTest.from_file(str(app)).run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Home"]
    (table,) = at.dataframe
    assert len(table.value) == 18 and not at.get("plotly_chart")

    at.switch_page("pages/compare.py").run()
    assert not at.exception and [t.value for t in at.title] == ["Compare"]
    assert len(at.multiselect) == 1 and len(at.radio) == 1 and len(at.text_area) == 1 and at.get("html")
    assert at.get("button_group") and not at.get("plotly_chart")      # like Compare: its figures are HTML

    at.switch_page("pages/chart.py").run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Chart"] and len(at.get("plotly_chart")) == 1
