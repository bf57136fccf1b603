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
    assert first.parent == tmp_path / "checkpoints" and first.name.startswith("kim_cnn-reviews-")
    first.mkdir(parents=True)
    second = paths.new_run_dir("kim_cnn", "../some dir/reviews.csv")
    assert second != first and not second.exists()
