"""Study readings and shipped results, with hand-made per-seed numbers (no training): the Welch interval and the
rank correlation against known values, verdicts that are known by construction (holds / does not hold / cannot
be resolved), the shipped file shown on a bare user folder and replaced by the user's own runs there only, a
stale or unfinished study never shipped, and `study --list --json`."""
import json

import pytest

from textcls.cli import main
from textcls.experiments import study_shipped
from textcls.experiments.study_defs import STUDIES, Scale, Study, StudyPoint
from textcls.experiments.study_results import (HOLDS, NO_CLAIM, NOT_HOLDS, UNRESOLVED, reading, rows, rows_from,
    series_readings)
from textcls.experiments.study_run import StudyError, _save, run_key, signature
from textcls.experiments.study_stats import spearman, spearman_interval, t975, welch


def test_t_quantiles_and_welch_interval_match_known_values():
    assert t975(4) == pytest.approx(2.7764, abs=1e-4) and t975(1.5) == pytest.approx(6.0167, abs=1e-3)
    assert t975(30) == pytest.approx(2.0423, abs=1e-4) and t975(10 ** 6) == pytest.approx(1.96, abs=1e-3)
    w = welch([90, 91, 89.5], [88, 87.2, 88.9, 86])       # scipy: ttest_ind(equal_var=False).confidence_interval()
    assert w["diff"] == pytest.approx(2.6417, abs=1e-4)
    assert (w["lo"], w["hi"]) == (pytest.approx(0.6861, abs=2e-3), pytest.approx(4.5973, abs=2e-3))
    assert w["df"] == pytest.approx(4.924, abs=1e-3)
    assert welch([1, 1], [0, 0]) == {"diff": 1, "lo": 1, "hi": 1, "df": float("inf")}
    with pytest.raises(ValueError):
        welch([1], [1, 2])


def test_spearman_with_ties_and_degenerate_cases():
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert spearman([1, 1, 2, 3], [3, 2, 2, 1]) == pytest.approx(-0.83333, abs=1e-4)
    assert spearman([1, 2, 3], [5, 5, 5]) is None and spearman([1, 2], [1, 2]) is None
    lo, hi = spearman_interval(0.8, 12)
    assert -1 < lo < 0.8 < hi < 1


def _study(paper=None) -> Study:
    sc = Scale("trec", 1, None, 3, None, "glove", (), 5, help="hand-made")
    paper = paper or {}
    pts = tuple(StudyPoint("layers", n, "act", overrides=(("n_layers", n),), paper=paper.get(n)) for n in (1, 2, 3))
    pts += (StudyPoint("pooling", "a", "transformer"), StudyPoint("pooling", "b", "transformer"))
    return Study("FAKE", "a hand-made study", "(test)", pts, {"medium": sc},
                 paper_best=(("layers", 3), ("pooling", "b")))


def _cache(st: Study, values: dict) -> dict:
    """A cache whose runs carry the given per-seed accuracies (in %) per point key."""
    sc = st.scales["medium"]
    runs = {}
    for pt in st.points:
        for seed, v in enumerate(values.get(pt.key, ())):
            runs[run_key(pt, seed)] = {"seed": seed, "dev_accuracy": v / 100, "test_accuracy": None,
                                       "curve": [{"epoch": 1, "dev_accuracy": v / 100, "elapsed": 1.0}],
                                       "seconds": 2.0, "seconds_per_epoch": 2.0, "parameters": 10,
                                       "signature": signature(pt, sc), "point": pt.key}
    return {"study": st.name, "scale": "medium", "runs": runs}


def _verdicts(st, values):
    return {it["series"]: it for it in series_readings(st, rows_from(st, "medium", _cache(st, values)))}


def test_verdicts_known_by_construction():
    st = _study()
    # layers: 3 clearly best -> holds; pooling: b clearly worse than a -> does not hold
    v = _verdicts(st, {"layers=1": [80, 81, 80.5], "layers=2": [84, 85, 84.5], "layers=3": [88, 89, 88.5],
                       "pooling=a": [70, 71, 70.5], "pooling=b": [60, 61, 60.5]})
    assert v["layers"]["verdict"] == HOLDS and v["layers"]["against"] == 2
    assert v["layers"]["diff"] == pytest.approx(4.0) and v["layers"]["lo"] > 0
    assert v["layers"]["spearman"]["rho"] == pytest.approx(0.949, abs=1e-3)      # rises with the knob
    assert v["pooling"]["verdict"] == NOT_HOLDS and v["pooling"]["hi"] < 0 and "spearman" not in v["pooling"]
    # overlapping seeds -> cannot be resolved, even though 3 has the highest mean
    v = _verdicts(st, {"layers=1": [80, 90, 85], "layers=2": [84, 86, 79], "layers=3": [86, 83, 88],
                       "pooling=a": [70, 71, 70.5], "pooling=b": [70.2, 71.1, 70.0]})
    assert v["layers"]["verdict"] == UNRESOLVED and v["layers"]["lo"] < 0 < v["layers"]["hi"]
    assert v["pooling"]["verdict"] == UNRESOLVED
    # a missing point or a single seed: cannot be resolved, said why
    v = _verdicts(st, {"layers=1": [80], "layers=2": [84], "layers=3": [88], "pooling=a": [70, 71]})
    assert v["layers"]["verdict"] == UNRESOLVED and "fewer than 2 seeds" in v["layers"]["why"]
    assert v["pooling"]["verdict"] == UNRESOLVED and "1 of 2 points" in v["pooling"]["why"]


def test_paper_numbers_choose_the_comparison():
    # the paper has numbers for 2 and 3 only: 3 is compared with 2, not with 1 (which is better here)
    st = _study(paper={2: 40.0, 3: 42.0})
    v = _verdicts(st, {"layers=1": [95, 96, 95.5], "layers=2": [84, 85, 84.5], "layers=3": [88, 89, 88.5]})
    assert v["layers"]["against"] == 2 and v["layers"]["verdict"] == HOLDS


def test_no_claim_series_reports_only_the_rank_correlation():
    sc = Scale("trec", 1, None, 3, None, "glove", (), 5)
    st = Study("FAKE2", "t", "(test)", tuple(StudyPoint("heads", m, "lama", overrides=(("n_heads", m),))
                                            for m in (1, 5, 10)), {"medium": sc})
    v = _verdicts(st, {"heads=1": [80, 81, 82], "heads=5": [79, 80, 81], "heads=10": [78, 79, 80]})
    assert v["heads"]["verdict"] == NO_CLAIM and v["heads"]["spearman"]["rho"] < 0


def test_shipped_results_show_on_a_bare_user_folder_and_the_users_runs_replace_them_there(tmp_path, monkeypatch):
    st = _study()
    good = {"layers=1": [80, 81, 80.5], "layers=2": [84, 85, 84.5], "layers=3": [88, 89, 88.5],
            "pooling=a": [70, 71, 70.5], "pooling=b": [60, 61, 60.5]}
    monkeypatch.setattr(study_shipped, "SHIPPED_DIR", tmp_path / "shipped")
    assert rows(st, "medium") == [] and study_shipped.results(st, "medium")[1] == "none"
    _save(st, "medium", _cache(st, good))                  # as if the study had run in the user folder
    path = study_shipped.ship(st, "medium")
    data = json.loads(path.read_text())
    assert data["scale"] == "medium" and data["torch"] and data["machine"] and data["date"]
    assert [r["dev_accuracy"] for r in data["runs"]["layers=3"]] == [0.88, 0.89, 0.885]   # per-seed numbers
    study_shipped.cache_path(st, "medium").unlink()          # a bare clone: nothing in the user folder
    cache, source = study_shipped.results(st, "medium")
    assert source == "shipped" and [r["mean"] for r in rows(st, "medium")][2] == pytest.approx(88.5)
    assert "layers: paper: 3 is best" in reading(st, "medium") and HOLDS in reading(st, "medium")
    # the user runs it again: their runs replace the shipped ones in the user folder only
    _save(st, "medium", _cache(st, {"layers=1": [50, 51, 52]}))
    assert study_shipped.results(st, "medium")[1] == "user" and [r["key"] for r in rows(st, "medium")] == ["layers=1"]
    assert json.loads(path.read_text()) == data
    # a shipped file measured under another definition is stale: not shown
    changed = Study(st.name, st.title, st.figure, st.points, {"medium": Scale("trec", 2, None, 3, None, "glove",
                                                                              (), 5)}, paper_best=st.paper_best)
    study_shipped.cache_path(st, "medium").unlink()
    assert study_shipped.load_shipped(changed, "medium") is None


def test_an_unfinished_study_is_never_shipped(tmp_path, monkeypatch):
    st = _study()
    monkeypatch.setattr(study_shipped, "SHIPPED_DIR", tmp_path / "shipped")
    _save(st, "medium", _cache(st, {"layers=1": [80, 81, 80.5], "layers=2": [84, 85], "layers=3": [88, 89, 88.5],
                                    "pooling=a": [70, 71, 70.5], "pooling=b": [60, 61, 60.5]}))
    with pytest.raises(StudyError, match="fewest seeds of a point is 2"):
        study_shipped.ship(st, "medium")
    assert not (tmp_path / "shipped").exists()


def test_list_json_has_every_study_with_its_scales_and_what_ships(capsys):
    assert main(["study", "--list", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in out] == list(STUDIES)
    for s in out:
        for name, sc in s["scales"].items():
            assert sc["points"] == len(STUDIES[s["name"]].points)
            if "shipped" in sc:
                assert sc["shipped"]["points"] == sc["points"] and sc["shipped"]["min_seeds"] >= 3
                assert all(it["verdict"] in (HOLDS, NOT_HOLDS, UNRESOLVED, NO_CLAIM) for it in sc["shipped"]["reading"])
    papers = [s for s in out if s["name"] != "SMOKE"]
    assert all("medium" in s["scales"] and s["scales"]["medium"]["how_chosen"] for s in papers)


def test_every_shipped_file_is_complete_and_current():
    for st in STUDIES.values():
        for scale in st.scales:
            path = study_shipped.shipped_path(st, scale)
            if not path.exists():
                continue
            cache = study_shipped.load_shipped(st, scale)
            assert cache is not None, f"{path} is stale against the study's definition"
            assert study_shipped.completeness(st, scale, cache) == (len(st.points), st.scales[scale].seeds)
            data = json.loads(path.read_text())
            assert {"machine", "torch", "date", "scale"} <= set(data)


def test_cli_shows_shipped_points_without_training(tmp_path, monkeypatch, capsys):
    from textcls.experiments import study_run
    from textcls.experiments.study_defs import get_study
    st = get_study("ACT-T3")
    sc = st.scales["medium"]
    monkeypatch.setattr(study_shipped, "SHIPPED_DIR", tmp_path / "shipped")
    runs = {}
    for i, pt in enumerate(st.points):
        for seed in range(sc.seeds):
            runs[run_key(pt, seed)] = {"seed": seed, "dev_accuracy": 0.80 + 0.01 * i + 0.001 * seed,
                                       "curve": [], "seconds": 1.0, "signature": signature(pt, sc), "point": pt.key}
    _save(st, "medium", {"study": st.name, "scale": "medium", "runs": runs})
    assert main(["study", "ACT-T3", "--scale", "medium", "--ship"]) == 0
    capsys.readouterr()
    study_shipped.cache_path(st, "medium").unlink()
    monkeypatch.setattr(study_run, "run_point", lambda *a, **k: pytest.fail("trained"))
    assert main(["study", "ACT-T3", "--json"]) == 0                 # medium is the default where results ship
    res = json.loads(capsys.readouterr().out)
    assert res["scale"] == "medium" and res["source"] == "shipped" and "measured here at medium scale" in res["label"]
    assert [p["n"] for p in res["points"]] == [3] * 5
    v = res["verdicts"][0]
    assert v["series"] == "ablation" and v["verdict"] == NOT_HOLDS      # ACT is the worst here by construction
    assert main(["study", "ACT-T3", "--scale", "quick", "--show", "--json"]) == 0   # --show never trains
    assert json.loads(capsys.readouterr().out)["source"] == "none"
    assert main(["study", "ACT-T3", "--scale", "quick", "--ship"]) == 2    # nothing finished: refused
    assert "not finished" in capsys.readouterr().err


def test_identical_scores_are_flagged_only_across_different_runs():
    """Three configurations with one score to the last digit mean one constant prediction and are said so; the
    base configuration that every series of a one-knob grid shares has the same runs by construction and is not."""
    from textcls.experiments.study_results import reading_from
    st = _study()
    shared = {"layers=1": [80, 81, 82], "layers=2": [85.5, 85.0, 86.0], "layers=3": [88, 89, 87],
              "pooling=a": [85.5, 85.0, 86.0], "pooling=b": [85.5, 85.0, 86.0]}    # one base configuration's runs
    assert "constant prediction" not in reading_from(st, "medium", rows_from(st, "medium", _cache(st, shared)))
    stuck = {"layers=1": [20, 20, 20], "layers=2": [20, 20, 20], "layers=3": [88, 89, 87],
             "pooling=a": [19.5, 20, 20.5], "pooling=b": [70, 71, 72]}            # different runs, one score
    text = reading_from(st, "medium", rows_from(st, "medium", _cache(st, stuck)))
    assert "constant prediction" in text and "layers=1" in text and "pooling=a" in text
    seeds = {**shared, "pooling=b": [26.2, 26.2, 26.2]}                              # three seeds, one score
    text = reading_from(st, "medium", rows_from(st, "medium", _cache(st, seeds)))
    assert "every seed gives the same score for pooling=b (26.2 %)" in text
