"""Where things live: the shipped checkpoints and data (read-only), the user's folder (what a user makes), and
the data roots searched by name. No torch, no Streamlit: every page and command asks here.

    shipped checkpoints   env TEXTCLS_CHECKPOINTS, else the repository's checkpoints/ (never written by the app)
    user folder           env TEXTCLS_HOME, else the platform's user data folder (platformdirs), e.g.
                          ~/.local/share/textcls on Linux; checkpoints trained in the app or by default from the
                          CLI go to its checkpoints/ and are listed beside the shipped ones
    cache                 env TEXTCLS_CACHE, else the platform's user cache folder (~/.cache/textcls)
    data roots            `--data-root` / env TEXTCLS_DATA (several folders joined by os.pathsep), then the
                          data embedded in the package (textcls/data/bundled: sst2, sst2_phrases, trec, semeval2010), so a bare
                          clone finds the data its checkpoints were trained on; a name is looked up in that order
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[2]
BUNDLED_DATA = Path(__file__).resolve().parents[1] / "data" / "bundled"
APP = "textcls"


def _env_path(name: str) -> Path | None:
    raw = os.environ.get(name, "").strip()
    return Path(raw).expanduser() if raw else None


def user_home() -> Path:
    """The user's folder: env TEXTCLS_HOME, else the platform's user data folder (not created here)."""
    env = _env_path("TEXTCLS_HOME")
    if env is not None:
        return env
    import platformdirs
    return Path(platformdirs.user_data_dir(APP, appauthor=False))


def user_checkpoints() -> Path:
    """Where checkpoints trained in the app, or by default from the CLI, are written."""
    return user_home() / "checkpoints"


def shipped_checkpoints() -> Path:
    """The read-only checkpoint folder: env TEXTCLS_CHECKPOINTS, else the repository's checkpoints/."""
    return _env_path("TEXTCLS_CHECKPOINTS") or REPO / "checkpoints"


def checkpoint_roots() -> list[Path]:
    """Folders whose checkpoint folders are listed, shipped first, then the user's (duplicates removed)."""
    out: list[Path] = []
    for p in (shipped_checkpoints(), user_checkpoints()):
        if all(_same(p, q) is False for q in out):
            out.append(p)
    return out


def cache_dir() -> Path:
    """Derived data that can be rebuilt (e.g. corpus views): env TEXTCLS_CACHE, else the user cache folder."""
    env = _env_path("TEXTCLS_CACHE")
    if env is not None:
        return env
    import platformdirs
    return Path(platformdirs.user_cache_dir(APP, appauthor=False))


def data_roots(root: str | Path | None = None) -> list[Path]:
    """Folders searched for a data set by name: `root` (or env TEXTCLS_DATA), then the embedded data.

    `root` and TEXTCLS_DATA may hold several folders joined by os.pathsep; an explicit `root` replaces the
    environment variable. The embedded folder always comes last, so sst2/trec resolve on a bare clone.
    """
    given = str(root) if root else os.environ.get("TEXTCLS_DATA", "")
    out = [Path(p).expanduser() for p in given.split(os.pathsep) if p.strip()]
    if all(_same(BUNDLED_DATA, q) is False for q in out):
        out.append(BUNDLED_DATA)
    return out


def _name_part(text: str, limit: int) -> str:
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in str(text))[:limit].strip("._-")


def run_name(model: str, data: str, taken: Callable[[str], bool] | None = None) -> str:
    """The one name a new checkpoint gets when the person gives none, in the CLI and on the Train page alike:
    MODEL-DATA ("act-sst2"; a file's data set by its stem, a hub model by its last part, unsafe characters as
    _), then MODEL-DATA-2, -3, ... while `taken(name)` (default: a folder of that name in the shipped or the
    user's checkpoints)."""
    if taken is None:
        roots = (user_checkpoints(), shipped_checkpoints())
        taken = lambda n: any((r / n).exists() for r in roots)      # noqa: E731
    m = _name_part(str(model).split("/")[-1].replace(":", "-"), 40) or "model"
    d = _name_part(Path(str(data)).stem if str(data) else "data", 40) or "data"
    base = f"{m}-{d}"
    name, k = base, 1
    while taken(name):
        k += 1
        name = f"{base}-{k}"
    return name


def new_run_dir(model: str, data: str) -> Path:
    """A fresh folder in the user's checkpoints for a run with no --out, named by `run_name`."""
    return user_checkpoints() / run_name(model, data)


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b
