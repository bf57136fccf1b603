"""Salience clustering (textcls.interpret.salience_clusters and the "clusters" interpreter): LIT's vectors, vocabulary
and clusters (PAIR-code/lit lit_nlp/components/salience_clustering_test.py), then a shipped checkpoint through the
interpreter and the command, and bad input in one line."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import REPO
from textcls.interpret import salience_clusters as S
from textcls.interpret.interpreters import InterpreterError
from textcls.interpret.interpreters import run as run_interpreter


def test_vocabulary_in_order_of_first_appearance_as_lit():
    lookup, vocab = S.build_vocab([["a", "b", "c"], ["d", "e", "f"]])
    assert lookup == {"a": 0, "b": 1, "c": 2, "d": 3, "e": 4, "f": 5} and vocab == ["a", "b", "c", "d", "e", "f"]


def test_top_k_vectors_as_lit():
    """LIT's test_convert_to_bow_vector: top 2 by |salience|; a repeated token keeps its largest |value|."""
    lookup = {"a": 0, "b": 1, "c": 2, "d": 3, "e": 4, "f": 5}
    X = S.representations([["a", "b", "c"], ["d", "e", "d"]], [[0.1, 0.2, 0.3], [0.4, 0.5, -0.6]], lookup, 2)
    np.testing.assert_allclose(X[0], np.array([0.0, 0.2, 0.3, 0.0, 0.0, 0.0]) / np.sqrt(0.13))
    np.testing.assert_allclose(X[1], np.array([0.0, 0.0, 0.0, -0.6, 0.5, 0.0]) / np.sqrt(0.61))


def test_ties_with_the_kth_token_are_kept_and_zero_rows_stay_zero():
    v = S.bow_vector({"a": 0.5, "b": -0.5, "c": 0.5, "d": 0.1}, {"a": 0, "b": 1, "c": 2, "d": 3}, 1)
    assert v.tolist() == [0.5, -0.5, 0.5, 0.0]
    X = S.representations([["a"], ["b"]], [[0.0], [2.0]], {"a": 0, "b": 1}, 5)
    assert X.tolist() == [[0.0, 0.0], [0.0, 1.0]]


def _lit_examples():
    """LIT's standard input: per example its tokens and gradient matrix (token x embedding); the "Grad L2 Norm"
    salience of a token is its gradient row's norm (LIT normalises it to sum 1; the L2-normalised vectors are the
    same)."""
    g1 = np.array([[0, 0, 1, 1], [0, 1, 0, 0], [1, 1, 1, 1], [1, 0, 1, 1]])
    g2 = np.array([[1, 1, 1, 1], [1, 0, 1, 1], [1, 1, 1, 1], [0, 0, 1, 1]])
    tokens = [["a", "b", "c", "d"]] * 2 + [["e", "f", "e", "g"]] * 3
    sal = [np.linalg.norm(g, axis=1) / np.linalg.norm(g, axis=1).sum() for g in [g1] * 2 + [g2] * 3]
    return tokens, sal


def test_lits_clusters_and_top_tokens():
    """LIT's test_clustering / test_top_tokens: 2 clusters of the top 2 tokens - {0, 1} on c, d and {2, 3, 4} on
    e, f; identical inputs give identical vectors."""
    tokens, sal = _lit_examples()
    X, ids, vocab, tops = S.cluster_vectors(tokens, sal, k=2, top_k=2, n_tokens=2, seed=0)
    assert vocab == ["a", "b", "c", "d", "e", "f", "g"]
    assert ids.tolist() == [1, 1, 0, 0, 0]                                   # numbered by size: 3 texts, then 2
    np.testing.assert_allclose(X[0], X[1])
    np.testing.assert_allclose(X[2], X[4])
    np.testing.assert_allclose(X[0], np.array([0, 0, 2, np.sqrt(3), 0, 0, 0]) / np.sqrt(7))
    assert [t for t, _ in tops[0]] == ["e", "f"] and [t for t, _ in tops[1]] == ["c", "d"]
    for n in (1, 2, 10):                                                      # LIT's test_n_tokens_to_display
        _, _, _, tops = S.cluster_vectors(tokens, sal, k=2, top_k=2, n_tokens=n, seed=0)
        assert all(0 < len(t) <= n for t in tops)


def test_a_shipped_checkpoint_clusters_its_split(shipped_predictors):
    """act-sst2, 60 test texts, gradient x input, 4 clusters: every text in one cluster, clusters numbered by size,
    each cluster's top tokens among its texts' own top tokens, the result plain JSON; the same seed, the same
    clusters."""
    p = shipped_predictors["act-sst2"]
    inputs, options = {"data": "sst2", "limit": 60}, {"k": 4, "method": "grad_x_input"}
    r = run_interpreter(p, "clusters", inputs, options)
    assert len(r.texts) == len(r.assignment) == 60 and sorted(i for c in r.clusters for i in c.examples) == \
        list(range(60))
    sizes = [c.size for c in r.clusters]
    assert sizes == sorted(sizes, reverse=True) and sum(sizes) == 60
    for c in r.clusters:
        own = {t for i in c.examples for t, _ in r.example_tokens[i]}
        assert c.top_tokens and {t for t, _ in c.top_tokens} <= own
        assert sum(c.labels.values()) == c.size
    assert all(0 < len(toks) <= 10 for toks in r.example_tokens)               # top 5, ties kept
    assert [x.label for x in p.predict(list(r.texts[:5]))] == list(r.predicted[:5])
    d = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    assert d["examples"][0]["cluster"] == r.assignment[0] and len(d["clusters"]) == 4
    assert run_interpreter(p, "clusters", inputs, options).assignment == r.assignment


def test_the_command_and_bad_input(capsys, shipped_predictors):
    from textcls.cli import main
    ck = str(REPO / "checkpoints" / "kim_cnn-sst2")
    assert main(["clusters", ck, "--data", "sst2", "--limit", "30", "--k", "3", "--method", "saliency",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "saliency" and len(out["clusters"]) == 3 and len(out["examples"]) == 30
    for args, says in ((["--k", "1"], "between 2 and 100"), (["--method", "nope"], "choose one of"),
                       (["--limit", "5", "--k", "10"], "10 clusters need at least 10 texts"),
                       (["--data", "no_such_data"], "no_such_data")):
        with pytest.raises(SystemExit) as e:
            code = main(["clusters", ck, *args])
            raise SystemExit(code)
        err = capsys.readouterr().err.strip()
        assert e.value.code == 2 and says in err and "\n" not in err, err
    with pytest.raises(InterpreterError, match="alti does not apply.*no self-attention"):
        run_interpreter(shipped_predictors["kim_cnn-sst2"], "clusters", {"limit": 20}, {"method": "alti"})


def _clusters_page():
    from pages.common import clusters_view
    from textcls.runtime.paths import REPO
    clusters_view.show(REPO / "checkpoints" / "act-sst2", data="sst2", split="test")


def test_the_view_lists_clusters_with_their_top_tokens_and_texts(monkeypatch):
    """The Clusters view (pages.common.clusters_view), in this process (TEXTCLS_WORKER=0): Cluster, then one row
    and one expander (top tokens, texts) per cluster."""
    from streamlit.testing.v1 import AppTest
    monkeypatch.setenv("TEXTCLS_WORKER", "0")
    at = AppTest.from_function(_clusters_page, default_timeout=120).run()
    assert not at.exception
    at.number_input(key="clusters_limit").set_value(60)
    at.number_input(key="clusters_k").set_value(3)
    at.button(key="clusters_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value
    assert list(table["cluster"]) == [0, 1, 2] and table["texts"].sum() == 60
    assert [e.label.split(":")[0] for e in at.expander] == ["Cluster 0", "Cluster 1", "Cluster 2"]
    assert len(at.dataframe) == 4                                     # the summary and each cluster's texts
