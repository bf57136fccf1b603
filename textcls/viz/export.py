"""Figures out of the app: PNG/SVG rendered server-side (kaleido + a Chrome/Chromium found on this machine,
one renderer behind a lock), a self-contained interactive HTML page, and a ZIP of many figures with their numbers."""
from __future__ import annotations

import io
import os
import shutil
import threading
import zipfile
from pathlib import Path
from typing import Sequence

import plotly.graph_objects as go

from textcls.viz.style import FigureOut, safe_filename


# ---------------------------------------------------------------- export (PNG / SVG / HTML / ZIP)

_EXPORT_LOCK = threading.Lock()
_SERVER_STARTED = False
CHROME_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def find_chrome() -> str | None:
    """A Chrome/Chromium for kaleido: env BROWSER_PATH, else the first one on PATH."""
    env = os.environ.get("BROWSER_PATH")
    if env and Path(env).is_file():
        return env
    for name in CHROME_NAMES:
        p = shutil.which(name)
        if p:
            return p
    return None


def image_export_status() -> tuple[bool, str]:
    """(available, why) for server-side PNG/SVG rendering (kaleido + a Chrome/Chromium)."""
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return False, "kaleido is not installed"
    chrome = find_chrome()
    if chrome is None:
        return False, "no Chrome/Chromium found (install chromium, or set BROWSER_PATH)"
    return True, chrome


def _columns(z) -> int:
    """How many columns a heatmap's `z` has, in any form Plotly keeps it: a nested list, a numpy array, or - after
    a JSON or pickle round trip (Streamlit's cache pickles figures) - a typed array `{"dtype", "bdata", "shape"}`."""
    if z is None:
        return 0
    if isinstance(z, dict):                                   # {"dtype": "f8", "bdata": "...", "shape": "3, 5"}
        shape = [int(s) for s in str(z.get("shape", "")).replace(" ", "").split(",") if s.isdigit()]
        return shape[-1] if len(shape) >= 2 else 0
    shape = getattr(z, "shape", None)
    if shape is not None:
        return int(shape[-1]) if len(shape) >= 2 else 0
    try:
        first = z[0]
    except (IndexError, KeyError, TypeError):
        return 0
    try:
        return len(first) if not isinstance(first, str) else 0
    except TypeError:
        return 0


def export_size(fig: go.Figure) -> tuple[int, int]:
    """Pixel size for a static export: the figure's own, else a width that fits its columns."""
    w = fig.layout.width
    if not w:
        n = max((_columns(getattr(t, "z", None)) for t in fig.data), default=0)
        w = int(min(2400, max(800, 160 + 26 * n)))
    return int(w), int(fig.layout.height or 450)


def figure_image(fig: go.Figure, fmt: str = "png", scale: float = 2.0, timeout: float = 120) -> bytes:
    """The figure rendered server-side as PNG or SVG bytes (kaleido + Chrome; one renderer, serialised).

    Raises RuntimeError with the reason when rendering is not available.
    """
    global _SERVER_STARTED
    if fmt not in ("png", "svg"):
        raise ValueError(f"format must be png or svg, got {fmt!r}")
    ok, why = image_export_status()
    if not ok:
        raise RuntimeError(f"static image export unavailable: {why}")
    os.environ.setdefault("BROWSER_PATH", why)
    import warnings

    import kaleido
    import plotly.io as pio
    w, h = export_size(fig)
    with _EXPORT_LOCK:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if not _SERVER_STARTED:
                try:
                    kaleido.start_sync_server(silence_warnings=True)
                except Exception:  # noqa: BLE001 - fall back to one browser per call
                    pass
                _SERVER_STARTED = True
            return pio.to_image(fig, format=fmt, width=w, height=h, scale=scale if fmt == "png" else 1)


def figure_html(fig: go.Figure, image_format: str = "png", filename: str = "figure") -> str:
    """A self-contained interactive HTML page (plotly.js inlined, works offline); its camera button saves
    `image_format` - the fallback way to PNG/SVG when server-side rendering is unavailable."""
    w, h = export_size(fig)
    return fig.to_html(include_plotlyjs=True, full_html=True, config={
        "displaylogo": False,
        "toImageButtonOptions": {"format": image_format, "filename": safe_filename(filename), "width": w,
                                 "height": h, "scale": 2 if image_format == "png" else 1}})


def export_zip(items: Sequence[FigureOut], *, images: bool = True, prefix: str = "") -> bytes:
    """A ZIP with, per figure, its numbers (CSV, JSON) and, when `images` and available, PNG and SVG."""
    buf = io.BytesIO()
    ok = images and image_export_status()[0]
    seen: dict[str, int] = {}
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for it in items:
            base = safe_filename(prefix + it.key)
            seen[base] = seen.get(base, 0) + 1
            if seen[base] > 1:
                base = f"{base}_{seen[base]}"
            z.writestr(f"{base}.csv", it.csv())
            z.writestr(f"{base}.json", it.json())
            if ok:
                z.writestr(f"{base}.png", figure_image(it.fig, "png"))
                z.writestr(f"{base}.svg", figure_image(it.fig, "svg"))
        if not ok:
            z.writestr("README.txt", "PNG/SVG were not rendered here: " + (image_export_status()[1] if images else
                       "images not requested") + ". Use the camera button of each figure in the app.\n")
    return buf.getvalue()
