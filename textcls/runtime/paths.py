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

import datetime as _dt
import os
from pathlib import Path

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


def new_run_dir(model: str, data: str) -> Path:
    """A fresh folder name in the user's checkpoints for a run with no --out: MODEL-DATA-YYYYmmdd-HHMMSS."""
    safe = "".join(c if c.isalnum() or c in "_.-" else "_" for c in Path(str(data)).stem)[:40] or "data"
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = user_checkpoints() / f"{model}-{safe}-{stamp}"
    out, n = base, 1
    while out.exists():
        n += 1
        out = base.with_name(f"{base.name}-{n}")
    return out


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b
