"""Data sets (textcls.data.datasets) and word vectors (textcls.data.embeddings). No network: the hub is always faked."""
import csv
import gzip
import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from textcls.data import embeddings as E
from textcls.data import hub as H
from textcls.data.datasets import DataBundle, DataError, Split, data_root, data_roots, list_datasets, load_data
from textcls.runtime.paths import BUNDLED_DATA
from textcls.data.text import Tokenizer, Vocab

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    """Any hub probe in these tests is a bug; `datasets` runs offline for local files."""
    def refuse(*a, **k):
        raise AssertionError("a test tried to reach the hub")
    monkeypatch.setattr(H, "_probe_hub", refuse)
    import datasets.config
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True, raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)


@pytest.fixture(scope="module")
def sst2_rows(bundled_data):
    with gzip.open(bundled_data / "sst2" / "dev.csv.gz", "rt", newline="", encoding="utf-8") as f:
        return list(csv.reader(f))[1:41]       # 40 (text, label-name) rows


def write_csv(path, header, rows, delimiter=",", opener=open):
    with opener(path, "wt", newline="", encoding="utf-8") as f:
        w = (csv.writer(f, delimiter="\t", quoting=csv.QUOTE_NONE, quotechar=None) if delimiter == "\t"
             else csv.writer(f))
        w.writerow(header)
        w.writerows(rows)
    return path


def make_bundle(folder, labels=("neg", "pos"), splits=None, gz=False):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dataset.json").write_text(json.dumps({"name": folder.name, "task": "toy", "labels": list(labels)}))
    splits = splits or {"train": [["good", "pos"], ["bad", "neg"]], "test": [["fine", "pos"]]}
    for name, rows in splits.items():
        p = folder / (f"{name}.csv.gz" if gz else f"{name}.csv")
        write_csv(p, ["text", "label"], rows, opener=gzip.open if gz else open)
    return folder


# ------------------------------------------------------------------------------------------------ root and names

def test_data_root_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("TEXTCLS_DATA", str(tmp_path / "env"))
    assert data_root(tmp_path / "explicit") == tmp_path / "explicit"
    assert data_root() == tmp_path / "env"
    assert data_roots() == [tmp_path / "env", BUNDLED_DATA]            # the embedded data is always searched last
    monkeypatch.setenv("TEXTCLS_DATA", os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")]))
    assert data_roots() == [tmp_path / "a", tmp_path / "b", BUNDLED_DATA]
    monkeypatch.delenv("TEXTCLS_DATA")
    assert data_root() == BUNDLED_DATA and data_roots() == [BUNDLED_DATA]


def test_embedded_data_is_what_the_shipped_checkpoints_used(bundled_data):
    """semeval2010, sst2, sst2_phrases and trec ship compressed inside the package (a few MB), so a bare clone
    works; of the larger data sets a checkpoint was trained on (imdb), a test sample ships as NAME_sample."""
    assert {"semeval2010", "sst2", "sst2_phrases", "trec"} <= set(list_datasets())
    size = sum(f.stat().st_size for f in bundled_data.rglob("*") if f.is_file())
    assert size < 4_000_000 and all(f.suffix in (".gz", ".json", ".md") for f in bundled_data.rglob("*.*"))
    for ck in (REPO / "checkpoints").glob("*/config.json"):
        data = json.loads(ck.read_text()).get("data", {})
        name = data.get("trained_on") or data.get("name")
        assert name in list_datasets() or f"{data.get('name')}_sample" in list_datasets(), (ck.parent.name, name)
        if name not in list_datasets():
            assert "test" in load_data(f"{data['name']}_sample").splits


def test_a_name_is_found_in_the_first_root_that_has_it(monkeypatch, tmp_path):
    make_bundle(tmp_path / "trec")                                  # shadows the embedded trec
    monkeypatch.setenv("TEXTCLS_DATA", str(tmp_path))
    assert load_data("trec").labels == ["neg", "pos"]
    assert load_data("sst2").labels == ["negative", "positive"]      # still found in the embedded data
    monkeypatch.delenv("TEXTCLS_DATA")
    assert len(load_data("trec").labels) == 6


def test_list_datasets(bundled_data, tmp_path, monkeypatch):
    names = list_datasets(bundled_data)
    assert {"sst2", "trec"} <= set(names) and names == sorted(names)
    assert list_datasets(tmp_path) == names                          # an empty root adds nothing
    assert list_datasets(tmp_path / "missing") == names
    make_bundle(tmp_path / "toy")
    (tmp_path / "not_a_set").mkdir()
    monkeypatch.setenv("TEXTCLS_DATA", str(tmp_path))
    assert list_datasets() == sorted(names + ["toy"])


def test_list_datasets_of_the_large_collection(shared_data):
    assert {"sst2", "trec", "imdb", "semeval2010"} <= set(list_datasets(shared_data))


# ------------------------------------------------------------------------------------------------ bundled

@pytest.mark.parametrize("name", ["sst2", "trec"])
def test_bundled_matches_its_dataset_json(bundled_data, name):
    b = load_data(name, root=bundled_data)
    meta = json.loads((bundled_data / name / "dataset.json").read_text())
    assert isinstance(b, DataBundle) and b.name == name and b.labels == meta["labels"]
    assert b.task == meta["task"] and list(b.splits) == ["train", "dev", "test"]
    assert b.summary()["splits"] == meta["splits"]            # rows and per-label counts, every split


def test_bundled_rows_are_the_file_rows(bundled_data, sst2_rows):
    dev = load_data("sst2", root=bundled_data).splits["dev"]
    assert dev.texts[:40] == [r[0] for r in sst2_rows]
    names = ["negative", "positive"]
    assert [names[i] for i in dev.labels[:40]] == [r[1] for r in sst2_rows]


def test_limit_is_a_seeded_sample(bundled_data):
    full = load_data("sst2", root=bundled_data).splits["train"]
    a = load_data("sst2", root=bundled_data, limit=50, seed=1)
    b = load_data("sst2", root=bundled_data, limit=50, seed=1)
    c = load_data("sst2", root=bundled_data, limit=50, seed=2)
    assert all(len(s) == 50 for s in a.splits.values())
    assert a.splits["train"].texts == b.splits["train"].texts != c.splits["train"].texts
    pos = [full.texts.index(t) for t in a.splits["train"].texts]
    assert pos == sorted(pos)                                   # file order kept
    assert [full.labels[p] for p in pos] == a.splits["train"].labels
    with pytest.raises(ValueError, match="limit"):
        load_data("sst2", root=bundled_data, limit=0)


def test_bundled_by_path_and_gz(tmp_path):
    folder = make_bundle(tmp_path / "toy", gz=True)
    for spec in (folder, str(folder)):
        b = load_data(spec)
        assert b.labels == ["neg", "pos"] and list(b.splits) == ["train", "test"]
        assert b.splits["train"].texts == ["good", "bad"] and b.splits["train"].labels == [1, 0]
    assert load_data("toy", root=tmp_path).splits["test"].texts == ["fine"]


def test_bundled_errors(tmp_path):
    bad = make_bundle(tmp_path / "unk", splits={"train": [["good", "pos"], ["meh", "neutral"]]})
    with pytest.raises(DataError, match=r"train\.csv, line 3: unknown label 'neutral'; known labels: \['neg', 'pos'\]"):
        load_data(bad)
    (tmp_path / "nometa").mkdir()
    with pytest.raises(DataError, match="no dataset.json"):
        load_data(tmp_path / "nometa")
    meta = make_bundle(tmp_path / "badmeta")
    (meta / "dataset.json").write_text('{"labels": ["a",}')
    with pytest.raises(DataError, match=r"dataset.json, line 1: invalid JSON"):
        load_data(meta)
    (meta / "dataset.json").write_text('{"labels": []}')
    with pytest.raises(DataError, match="'labels' must be a non-empty list"):
        load_data(meta)
    nosplit = tmp_path / "nosplit"
    nosplit.mkdir()
    (nosplit / "dataset.json").write_text('{"labels": ["a"]}')
    with pytest.raises(DataError, match="no split files"):
        load_data(nosplit)
    empty = make_bundle(tmp_path / "empty")
    (empty / "train.csv").write_text("")
    with pytest.raises(DataError, match=r"train\.csv: empty file"):
        load_data(empty)


# ------------------------------------------------------------------------------------------------ malformed CSV

CSV_ERRORS = [
    ("text,label\nok,pos\n\"a,b\",pos,extra\n", r"line 3: expected 2 fields \(text, label\), found 3"),
    ("text,label\nok,pos\nshort\n", r"line 3: expected 2 fields \(text, label\), found 1"),
    ("text,label\nok,pos\n\"abc\"def,pos\n", r"line 3: malformed CSV \(',' expected after '\"'"),
    ("text,label\nok,pos\n\"never closed,pos\nmore,neg\n", r"line 3: malformed CSV \(unexpected end of data"),
    ("sentence,y\nok,pos\n", r"line 1: no column 'text'; columns found: \['sentence', 'y'\]"),
    ("text,label\n\"multi\nline\",pos\n  ,neg\n", r"line 4: the text \('text'\) is empty"),
    ("text,label\nok,\n", r"line 2: the label \('label'\) is empty"),
    ("", r": empty file"),
    ("text,label\n", r": the file has a header but no rows"),
]


@pytest.mark.parametrize("content,message", CSV_ERRORS, ids=[m[:30] for _, m in CSV_ERRORS])
@pytest.mark.parametrize("where", ["bundled", "file"])
def test_malformed_csv_names_file_line_and_problem(tmp_path, content, message, where):
    if where == "bundled":
        folder = make_bundle(tmp_path / "set")
        path = folder / "train.csv"
        path.write_text(content, encoding="utf-8")
        spec = folder
    else:
        path = tmp_path / "data.csv"
        path.write_text(content, encoding="utf-8")
        spec = path
    with pytest.raises(DataError, match=message) as err:
        load_data(spec)
    assert str(path) in str(err.value)


def test_non_utf8_file(tmp_path):
    p = tmp_path / "latin.csv"
    p.write_bytes("text,label\ncaf\xe9,pos\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"line 2: not UTF-8"):
        load_data(p)


# ------------------------------------------------------------------------------------------------ other files

def _rows_to_records(rows):
    return [{"text": t, "label": lab} for t, lab in rows]


@pytest.mark.parametrize("fmt", ["csv", "csv.gz", "tsv", "jsonl", "json", "parquet"])
def test_round_trip_every_loader(tmp_path, sst2_rows, fmt):
    rows = [list(r) for r in sst2_rows]
    rows[0][0] = 'he said "NA" , then 007'         # quotes, NA and a number stay text
    path = tmp_path / f"tiny.{fmt}"
    if fmt in ("csv", "csv.gz"):
        write_csv(path, ["id", "text", "label"], [[i, t, lab] for i, (t, lab) in enumerate(rows)],
                  opener=gzip.open if fmt.endswith("gz") else open)
    elif fmt == "tsv":
        write_csv(path, ["text", "label"], rows, delimiter="\t")
    elif fmt == "jsonl":
        path.write_text("\n".join(json.dumps(r) for r in _rows_to_records(rows)) + "\n", encoding="utf-8")
    elif fmt == "json":
        path.write_text(json.dumps(_rows_to_records(rows)), encoding="utf-8")
    else:
        import pandas as pd
        pd.DataFrame(_rows_to_records(rows)).to_parquet(path)
    whole = load_data(path, as_split="test")
    assert whole.labels == ["negative", "positive"] and list(whole.splits) == ["test"]
    assert whole.splits["test"].texts == [t for t, _ in rows]
    assert [whole.labels[i] for i in whole.splits["test"].labels] == [lab for _, lab in rows]
    split = load_data(path, seed=3)
    assert {k: len(s) for k, s in split.splits.items()} == {"train": 32, "dev": 4, "test": 4}
    got = sorted((t, split.labels[y]) for s in split.splits.values() for t, y in zip(s.texts, s.labels))
    assert got == sorted(map(tuple, rows))
    assert load_data(path, seed=3).splits["dev"].texts == split.splits["dev"].texts
    assert load_data(path, seed=4).splits["dev"].texts != split.splits["dev"].texts


def test_file_columns_labels_and_errors(tmp_path):
    p = write_csv(tmp_path / "q.csv", ["sentence", "y"], [["a", "2"], ["b", "10"], ["c", "1"], ["d", "2"]])
    b = load_data(p, text_column="sentence", label_column="y")
    assert b.labels == ["1", "2", "10"]                               # numeric order
    assert sum(len(s) for s in b.splits.values()) == 4
    with pytest.raises(DataError, match=r"line 3: unknown label '10'; known labels: \['1', '2'\]"):
        load_data(p, text_column="sentence", label_column="y", labels=["1", "2"])
    with pytest.raises(DataError, match="too few to split"):
        load_data(write_csv(tmp_path / "two.csv", ["text", "label"], [["a", "x"], ["b", "y"]]))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a", "label": 1}\n\n{"text": "b" "label": 0}\n')
    with pytest.raises(DataError, match=r"bad\.jsonl, line 3: invalid JSON"):
        load_data(bad)
    bad.write_text('{"text": "a", "label": 1}\n{"txt": "b", "label": 0}\n')
    with pytest.raises(DataError, match=r"line 2: no field 'text'; fields found: \['label', 'txt'\]"):
        load_data(bad)
    bad.write_text('{"text": "a", "label": 1}\n{"text": "", "label": 0}\n{"text": "c", "label": 0}\n')
    with pytest.raises(DataError, match=r"line 2: the text \('text'\) is empty"):
        load_data(bad)
    import pandas as pd
    pq = tmp_path / "cols.parquet"
    pd.DataFrame({"body": ["x"], "label": ["a"]}).to_parquet(pq)
    with pytest.raises(DataError, match=r"no column 'text'; columns found: \['body', 'label'\]"):
        load_data(pq)
    (tmp_path / "junk.parquet").write_text("not parquet")
    with pytest.raises(DataError, match="not a Parquet file"):
        load_data(tmp_path / "junk.parquet")
    (tmp_path / "x.xml").write_text("<a/>")
    with pytest.raises(DataError, match="unknown file type"):
        load_data(tmp_path / "x.xml")
    with pytest.raises(DataError, match="no such file"):
        load_data(tmp_path / "missing.csv")


# ------------------------------------------------------------------------------------------------ the hub, offline

def test_hub_offline_env_fails_at_once(monkeypatch, bundled_data):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    with pytest.raises(DataError, match=r"'ag_news'.*HF_HUB_OFFLINE is set \(offline\)"):
        load_data("hf:ag_news")
    with pytest.raises(DataError, match=r"not a bundled data set in .*available: .*semeval2010, sst2, sst2_phrases, trec.*offline"):
        load_data("ag_news", root=bundled_data)
    assert time.perf_counter() - t0 < 1.0


def test_hub_unreachable_fails_within_the_timeout(monkeypatch):
    monkeypatch.setattr(H, "_probe_hub", lambda repo_id, timeout: time.sleep(30))
    monkeypatch.setattr(H, "HUB_TIMEOUT", 0.3)
    t0 = time.perf_counter()
    with pytest.raises(DataError, match="did not answer within 0.3 s"):
        load_data("hf:someone/some_set")
    assert time.perf_counter() - t0 < 3.0

    def no_dns(repo_id, timeout):
        raise ConnectionError("Name or service not known")
    monkeypatch.setattr(H, "_probe_hub", no_dns)
    with pytest.raises(DataError, match=r"cannot reach the hub \(ConnectionError: Name or service"):
        load_data("someone/some_set")

    class RepositoryNotFoundError(Exception):
        pass

    def missing(repo_id, timeout):
        raise RepositoryNotFoundError("404")
    monkeypatch.setattr(H, "_probe_hub", missing)
    with pytest.raises(DataError, match="no data set 'nope/nope' on the Hugging Face hub"):
        load_data("hf:nope/nope")


def test_split_dataclass():
    s = Split(["a", "b", "c"], [0, 1, 0])
    assert len(s) == 3 and s.sample(None) is s and len(s.sample(2, seed=0)) == 2
    with pytest.raises(ValueError):
        Split(["a"], [0, 1])


# ------------------------------------------------------------------------------------------------ embeddings

def test_glove_vectors_are_cached():
    words, m = E.glove_vectors()
    assert m.shape == (400000, 50) and len(words) == 400000 and words[0] == "the"
    assert E.glove_vectors()[1] is m
    assert E.glove_index()["the"] == 0


def test_glove_matrix_rows_and_coverage():
    vocab = Vocab(["<pad>", "<unk>", "the", "Movie", "-lrb-", "qqzzxxw"])
    words, glove = E.glove_vectors()
    idx = E.glove_index()
    m, cov = E.build_embedding_matrix(vocab, "glove", seed=0)
    assert m.shape == (6, 50) and m.dtype == np.float32
    assert cov == pytest.approx(3 / 4)                          # the, Movie (as movie), -lrb- (as "(")
    assert not m[0].any()
    np.testing.assert_array_equal(m[2], glove[idx["the"]])
    np.testing.assert_array_equal(m[3], glove[idx["movie"]])
    np.testing.assert_array_equal(m[4], glove[idx["("]])
    for row in (m[1], m[5]):
        assert np.abs(row).max() <= 0.25 and np.abs(row).max() > 0
    again, _ = E.build_embedding_matrix(vocab, "glove", seed=0)
    other, _ = E.build_embedding_matrix(vocab, "glove", seed=1)
    np.testing.assert_array_equal(m, again)
    assert not np.array_equal(m[5], other[5]) and np.array_equal(m[2], other[2])
    with pytest.raises(ValueError, match="50 dimensions, not 300"):
        E.build_embedding_matrix(vocab, "glove", dim=300)
    cov2, missing = E.embedding_coverage(vocab, "glove")
    assert cov2 == cov and missing == ["qqzzxxw"]


def test_glove_coverage_on_sst2(bundled_data):
    tok = Tokenizer.build(load_data("sst2", root=bundled_data, limit=1000).splits["train"].texts)
    _, cov = E.build_embedding_matrix(tok.vocab, "glove")
    assert 0.9 < cov < 1.0


def test_random_embeddings():
    vocab = Vocab.build([["a", "b"]])
    m, cov = E.build_embedding_matrix(vocab, "random", dim=8, seed=0)
    assert m.shape == (4, 8) and cov == 0.0 and not m[0].any() and np.abs(m[1:]).max() <= 0.25
    assert E.build_embedding_matrix(vocab, "random")[0].shape == (4, 300)


@pytest.mark.parametrize("header", [False, True])
def test_text_vector_files(tmp_path, header):
    lines = ["the 0.1 0.2 0.3", "film 1 2 3", "New York 4 5 6", "unused 7 8 9"]
    if header:
        lines = ["4 3"] + lines
    p = tmp_path / "vec.txt"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    vocab = Vocab(["<pad>", "<unk>", "the", "Film", "new york", "zz"])
    m, cov = E.build_embedding_matrix(vocab, p)
    assert m.shape == (6, 3) and cov == pytest.approx(2 / 4)    # the, Film (as film); not "new york"
    np.testing.assert_allclose(m[2], [0.1, 0.2, 0.3])
    np.testing.assert_allclose(m[3], [1, 2, 3])
    words, mat = E.load_word_vectors(p)
    assert words == ["the", "film", "New York", "unused"] and mat.shape == (4, 3)
    assert E.load_word_vectors(p, ["the"])[0] == ["the"]


def test_text_vector_file_errors(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_text("the 0.1 0.2\nfilm 1\n")
    with pytest.raises(DataError, match=r"bad\.txt, line 2: expected a word and 2 numbers, found 2 fields"):
        E.load_word_vectors(p)
    p.write_text("the 0.1 0.2\nfilm 1 x\n")
    with pytest.raises(DataError, match=r"line 2: a vector value is not a number"):
        E.load_word_vectors(p)
    p.write_text("")
    with pytest.raises(DataError, match="empty word-vector file"):
        E.load_word_vectors(p)
    with pytest.raises(DataError, match="not found"):
        E.build_embedding_matrix(Vocab(), tmp_path / "missing.txt")
