"""`scripts/bench_crowd.py --clients socket`: sessions without a browser (`scripts/st_client.py`, Streamlit's
protocol over the app's websocket) submit Compare's form on the bare app and are timed until the run that shows
their own sentence is over; a run that does not show it is an error, not a time."""
import asyncio
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import bench_crowd  # noqa: E402  (the benchmark itself)
from bench_app import fresh_env, free_port, start_server, stop, wait_healthy, write_floor_app  # noqa: E402
from st_client import SocketUser, text_of  # noqa: E402


def test_text_of_reads_html_as_a_browser_reads_its_text():
    assert text_of("<p><span>take</span> <span>7</span>\n .</p>") == "take 7 ."
    assert text_of("<b>a &amp; b</b>") == "a & b"


def test_the_crowd_without_browsers_times_every_submit_on_the_floor_app(capsys):
    assert bench_crowd.main(["--clients", "socket", "--floor", "--sessions", "2", "--rounds", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    crowd = out["scenarios"]["crowd"]
    assert out["clients"] == "socket" and not out["errors"]
    assert crowd["users"] == 2 and crowd["compare"]["n"] == 4
    assert 0 < crowd["compare"]["p50"] <= crowd["compare"]["max"] < 60
    assert sorted(r for r, _ in crowd["compare"]["by_round"]) == [0, 0, 1, 1]


def test_settle_waits_for_a_quiet_server_before_timing(capsys):
    """--settle: the bare app has no work ahead, so it is quiet within a few seconds and says after how long."""
    assert bench_crowd.main(["--clients", "socket", "--floor", "--sessions", "2", "--rounds", "1", "--settle", "30",
                             "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["settled_s"] is not None and 2 <= out["settled_s"] < 30
    assert out["scenarios"]["crowd"]["compare"]["n"] == 2 and not out["errors"]


def test_a_run_that_does_not_show_the_sentence_is_an_error(tmp_path):
    app = write_floor_app(tmp_path / "floor", bench_crowd.FLOOR_CROWD_FILES)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_server(fresh_env(str(tmp_path)), port, tmp_path / "st.log", app)

    async def session() -> None:
        u = SocketUser(url, 60)
        await u.open("compare")
        assert set(u.widgets) == {"Sentence", "submit Compare"} and u.page_hash
        assert await u.compare("a quiet film , take 3 .") > 0           # its own 'take 3' is shown
        with pytest.raises(RuntimeError, match="take 4"):
            await u.run(u.submit("Sentence", "a quiet film , take 5 .", "Compare"), mark="take 4")
        await u.close()

    try:
        wait_healthy(server, url, tmp_path / "st.log", 120)
        asyncio.run(session())
    finally:
        stop([server])
