"""The app's caches are keyed on every file a checkpoint reads (issue 55, item 4): `pages.common.cache.stamp` (and
the model worker's models, and the data-set views' disk cache) covered config.json and model.safetensors only, so
a Hugging Face folder whose tokenizer.json was replaced kept answering with the old tokenizer."""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from hf_toys import tiny_folder  # noqa: E402

from pages.common import cache  # noqa: E402
from textcls.analysis.corpus_cache import checkpoint_stamp as corpus_stamp  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _replace(path: Path, change) -> None:
    """Rewrite a JSON file as an editor or a copy would: a new file renamed over the old one."""
    d = json.loads(path.read_text(encoding="utf-8"))
    change(d)
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(json.dumps(d), encoding="utf-8")
    os.replace(tmp, path)


def _swap_good_and_bad(d: dict) -> None:
    v = d["model"]["vocab"]
    v["good"], v["bad"] = v["bad"], v["good"]


@pytest.fixture()
def folder(tmp_path):
    return tiny_folder(tmp_path)


def test_replacing_tokenizer_json_changes_the_stamp(folder):
    before, corpus_before = cache.stamp(folder), corpus_stamp(folder)
    assert cache.stamp(folder) == before                                      # stable while nothing changes
    _replace(folder / "tokenizer.json", _swap_good_and_bad)
    assert cache.stamp(folder) != before
    assert corpus_stamp(folder) != corpus_before


@pytest.mark.parametrize("name", ["vocab.txt", "tokenizer_config.json", "special_tokens_map.json", "textcls.json",
                                  "added_tokens.json"])
def test_every_file_the_checkpoint_reads_is_in_the_stamp(folder, name):
    before = cache.stamp(folder)
    path = folder / name
    if path.exists():
        tmp = path.with_name(name + ".new")
        tmp.write_bytes(path.read_bytes() + (b"\n" if name.endswith(".txt") else b" "))
        os.replace(tmp, path)
    else:
        path.write_text("{}", encoding="utf-8")                               # a file added to the folder
    assert cache.stamp(folder) != before, name


def test_a_native_checkpoints_vocabulary_is_in_the_stamp(tmp_path):
    path = tmp_path / "kim"
    shutil.copytree(REPO / "checkpoints" / "kim_cnn-sst2", path)
    before = cache.stamp(path)
    st = os.stat(path / "vocab.json")
    os.utime(path / "vocab.json", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert cache.stamp(path) != before


def test_a_deltas_base_files_are_in_the_stamp(tmp_path, monkeypatch):
    """A delta reads its tokenizer and base weights from the installed base folder: a change there is a change."""
    sys.path.insert(0, str(REPO / "scripts"))
    import hostile_hf
    good = tiny_folder(tmp_path / "good")
    delta = hostile_hf._delta(good, tmp_path, "toy_delta")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    before = cache.stamp(delta)
    base = tmp_path / "site" / "base_toy_delta" / "model"
    _replace(base / "tokenizer.json", _swap_good_and_bad)
    assert cache.stamp(delta) != before


def test_the_app_answers_with_the_new_tokenizer(folder, monkeypatch):
    """Inspect's predictions (cache.predict, here without the model worker) after tokenizer.json is replaced are
    the new folder's, equal to a fresh load's, not the cached answers of the old tokenizer."""
    import textcls
    monkeypatch.setattr(cache, "remote", lambda: None)
    texts = ["good", "a good film", "bad"]
    old = [p.probabilities for p in cache.predict(folder, texts)]
    _replace(folder / "tokenizer.json", _swap_good_and_bad)
    new = [p.probabilities for p in cache.predict(folder, texts)]
    fresh = [p.probabilities for p in textcls.load_checkpoint(folder).predict(texts)]
    assert all(n == pytest.approx(f) for n, f in zip(new, fresh))
    assert new[0] == pytest.approx(old[2]) and new[0] != pytest.approx(old[0])      # "good" now reads as "bad"


def test_one_page_run_reads_each_stamp_once_and_the_next_run_sees_the_change(folder):
    """A page run (app.py's page_run) reads each folder's stamp once: what it asks and shows is of one state of the
    files. The next run, or a refreshed listing within the run (a save), reads them again."""
    import threading
    before = cache.stamp(folder)
    with cache.one_reading():
        assert cache.stamp(folder) == before
        _replace(folder / "tokenizer.json", _swap_good_and_bad)
        assert cache.stamp(folder) == before                         # the same run: one state of the files
        seen = []
        t = threading.Thread(target=lambda: seen.append(cache.stamp(folder)))
        t.start(), t.join()
        assert seen[0] != before                                     # another session's run reads its own
        cache.refresh_checkpoints()                                  # a save in this run: read again
        changed = cache.stamp(folder)
        assert changed != before
    assert cache.stamp(folder) == changed                            # outside a run: read every time
    _replace(folder / "tokenizer.json", _swap_good_and_bad)
    assert cache.stamp(folder) != changed


def test_the_listing_is_kept_for_its_time_and_every_caller_gets_its_own_copy(tmp_path, monkeypatch):
    """`checkpoints()` keeps its listing LISTING_TTL seconds (no longer in st.cache_data): a caller that changes
    the lists it got changes nothing for the next one; past its time, or after `refresh_checkpoints`, a folder
    added on disk is listed."""
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(tmp_path / "ckpts"))
    monkeypatch.setenv("TEXTCLS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TEXTCLS_WORKER", "0")
    (tmp_path / "ckpts").mkdir()
    tiny_folder(tmp_path / "ckpts")
    cache.refresh_checkpoints()
    valid, _ = cache.checkpoints(deep=False)
    names = [i.name for i in valid]
    assert names
    valid.clear()
    assert [i.name for i in cache.checkpoints(deep=False)[0]] == names      # a copy each time
    shutil.copytree(tmp_path / "ckpts" / names[0], tmp_path / "ckpts" / "second")
    assert len(cache.checkpoints(deep=False)[0]) == len(names)              # kept: not re-listed yet
    monkeypatch.setattr(cache, "LISTING_TTL", 0.0)
    assert len(cache.checkpoints(deep=False)[0]) == len(names) + 1          # past its time: listed again
    monkeypatch.setattr(cache, "LISTING_TTL", 3600.0)
    shutil.rmtree(tmp_path / "ckpts" / "second")
    assert len(cache.checkpoints(deep=False)[0]) == len(names) + 1
    cache.refresh_checkpoints()
    assert len(cache.checkpoints(deep=False)[0]) == len(names)
