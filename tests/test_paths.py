"""Where things live (textcls.runtime.paths): the user's folder, the checkpoint roots, the data roots, new run folders."""
from pathlib import Path

from textcls.runtime import paths


def test_user_folder_and_checkpoint_roots_follow_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TEXTCLS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(tmp_path / "shipped"))
    assert paths.user_checkpoints() == tmp_path / "home" / "checkpoints"
    assert paths.checkpoint_roots() == [tmp_path / "shipped", tmp_path / "home" / "checkpoints"]
    monkeypatch.setenv("TEXTCLS_CHECKPOINTS", str(tmp_path / "home" / "checkpoints"))     # the same folder twice
    assert paths.checkpoint_roots() == [tmp_path / "home" / "checkpoints"]
    monkeypatch.delenv("TEXTCLS_CHECKPOINTS")
    assert paths.shipped_checkpoints() == Path(paths.REPO) / "checkpoints"


def test_default_user_folder_is_outside_the_repository(monkeypatch):
    monkeypatch.delenv("TEXTCLS_HOME", raising=False)
    monkeypatch.delenv("TEXTCLS_CACHE", raising=False)
    for folder in (paths.user_home(), paths.cache_dir()):
        assert folder.is_absolute() and paths.REPO not in folder.parents and folder != paths.REPO


def test_new_run_folders_never_collide(tmp_path, monkeypatch):
    monkeypatch.setenv("TEXTCLS_HOME", str(tmp_path))
    first = paths.new_run_dir("kim_cnn", "../some dir/reviews.csv")
    assert first.parent == tmp_path / "checkpoints" and first.name == "kim_cnn-reviews"
    first.mkdir(parents=True)
    second = paths.new_run_dir("kim_cnn", "../some dir/reviews.csv")
    assert second != first and not second.exists() and second.name == "kim_cnn-reviews-2"


def test_one_naming_rule_for_the_cli_and_the_train_page():
    """Issue 42 item 4: the CLI and the Train page name a new checkpoint the same way (they named it
    MODEL-DATA-timestamp and MODEL_DATA_N)."""
    import re
    assert paths.run_name("act", "sst2", taken=lambda n: False) == "act-sst2"
    assert paths.run_name("act", "sst2", taken=lambda n: n in {"act-sst2", "act-sst2-2"}) == "act-sst2-3"
    assert paths.run_name("hf:sentence-transformers/all-MiniLM", "my data.csv", taken=lambda n: False) == \
        "all-MiniLM-my_data"
    assert paths.run_name("act", "sst2") == "act-sst2-2"                 # the shipped act-sst2 is taken
    train_page = (paths.REPO / "pages" / "train.py").read_text()
    assert "run_name" in train_page and not re.search(r"f\"\{model\}_\{data", train_page)
