"""`textcls explain` and the new measures of `textcls faithfulness` (plausibility, sanity, cost) on the shipped
checkpoints, in process."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from textcls.cli import main

CKPT = Path(__file__).resolve().parents[1] / "checkpoints"


def test_explain_json_one_text_has_one_weight_per_word_per_method(capsys):
    assert main(["explain", str(CKPT / "transformer-sst2"), "a dull film", "--methods", "norm,alti,decompx,ig",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["words"] == ["a", "dull", "film"] and out["label"] in ("negative", "positive")
    assert list(out["methods"]) == ["norm", "alti", "decompx", "integrated_gradients"]
    for m, e in out["methods"].items():
        assert len(e["weights"]) == 3
        assert np.abs(e["weights"]).sum() == pytest.approx(1.0) or m == "integrated_gradients"
    assert out["methods"]["integrated_gradients"]["converged"] is True
    assert abs(out["methods"]["integrated_gradients"]["delta"]) < 0.05


def test_explain_several_texts_give_a_list_and_the_default_methods(capsys):
    assert main(["explain", str(CKPT / "act-sst2"), "a dull film", "great fun", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert isinstance(out, list) and len(out) == 2
    assert list(out[0]["methods"]) == ["norm", "integrated_gradients"]      # ACT: norm is the one that applies


@pytest.mark.parametrize("args, words", [
    (["--methods", "alti"], "does not apply"),
    (["--methods", "nonsense"], "unknown method"),
])
def test_explain_bad_input_is_one_line_exit_2(args, words, capsys):
    assert main(["explain", str(CKPT / "act-sst2"), "a film", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err


def test_faithfulness_scores_plausibility_sanity_and_cost(capsys, shipped_predictors):
    from textcls.interpret.sanity import cascade_units
    units = cascade_units(shipped_predictors["transformer-sst2"].model)
    assert [n for n, _ in units][:2] == ["out", "fc"]
    assert main(["faithfulness", str(CKPT / "transformer-sst2"), "--split", "test", "--limit", "5", "--methods",
                 "norm,value_zeroing,random", "--fast", "--sanity", "2", "--quiet", "--json"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    by = {r["method"]: r for r in rows if r["kind"] == "method"}
    assert set(by) == {"norm", "value_zeroing", "random"}
    for m in ("norm", "value_zeroing"):
        r = by[m]
        assert 0 <= r["plausibility_auprc"] <= 1 and 0 <= r["plausibility_token_f1"] <= 1
        assert r["plausibility_n"] >= 1 and r["seconds_per_text"] > 0
        assert -1 <= r["sanity_rho"] <= 1 and len(r["sanity_rho_stages"]) == len(units)
    # norm reads the attention and the values only: randomising the classifier head (out, fc) leaves it as it was
    assert by["norm"]["sanity_rho_stages"][:2] == [1.0, 1.0]
    assert "sanity_rho" not in by["random"]
