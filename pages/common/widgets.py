"""Widgets the pages share: checkpoint pickers, the no-checkpoint message, text input guards, figures with
their export buttons. No caching here (that is cache.py's job) and no model code (that is the library's).

Every piece of user text shown here goes through `st.text`, a dataframe, or `viz.esc_html` / `md_escape`
before markdown; unsafe_allow_html is used only on HTML built from escaped text.
"""
from __future__ import annotations

import functools
import re
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Sequence

import streamlit as st

from textcls.data import datasets as tdata
from textcls.data.files import file_columns
from textcls import viz
from textcls.checkpoint import CheckpointError, CheckpointInfo
from textcls.data.relation import MARKER_SYNTAX, EntitySpanError, has_markers

from . import cache
from .defaults import is_pretrained, main_task_checkpoints, tasks  # noqa: F401  (the pages' w.*)

MAX_CHARS = 200_000          # longer inputs are cut (with a message) before they reach a model
MAX_BATCH = 2_000            # texts per batch on the Compare page
TRAIN_CMD = "python -m textcls train --model kim_cnn --data sst2 --epochs 5"
EXAMPLE = ("The food was great and the staff were friendly. But the service was painfully slow! "
           "I would not come back.")

RELATION_EXAMPLE = "The <e1>burst</e1> has been caused by water hammer <e2>pressure</e2>."

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>$:~=])")


def md_escape(text: object) -> str:
    """Text safe inside st.markdown/st.caption: markdown, HTML, LaTeX ($) and :directives: neutralised."""
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\n", " ")


def fmt_acc(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f} %"


def ckpt_label(info: CheckpointInfo) -> str:
    data = f", {info.data}" if info.data else ""
    return f"{info.name} ({viz.model_title(info.model)}{data})"


TASK_PLACEHOLDERS = {"sst2": "e.g. a gripping, beautifully acted film", "imdb": "e.g. a whole movie review",
                     "trec": "e.g. Who wrote Hamlet?", "semeval2010": f"e.g. {RELATION_EXAMPLE}"}


def task_title(data: str) -> str:
    """A data set with its task in a few words: "trec: 6-way question type"."""
    from textcls.data.datasets import describe_dataset
    what = describe_dataset(data).split(" (")[0].split(",")[0].split(" between")[0]
    return f"{data}: {viz.short(what, 30)}" if what else str(data)


def task_description(valid: Sequence[CheckpointInfo], data: str) -> str:
    """One line for the Home page: the task of `data`, its labels and which checkpoints read it."""
    from textcls.data.datasets import describe_dataset
    mine = [i for i in valid if i.data == data]
    labels = mine[0].labels if mine else []
    what = describe_dataset(data) or "the task these checkpoints were trained on"
    shown = ", ".join(labels[:8]) + (f" and {len(labels) - 8} more" if len(labels) > 8 else "")
    return f"{data}: {what}. Labels: {shown}. {len(mine)} checkpoint(s) read it."


def inspect_link(checkpoint: str, text: str) -> dict[str, str]:
    """The query parameters that open Inspect on `checkpoint` with `text` (urlstate's names; a text longer than
    urlstate.MAX_VALUE is left out, and Inspect then starts from the text shared in the session)."""
    from .urlstate import MAX_VALUE
    return {"ckpt": checkpoint, **({"text": text} if len(text) <= MAX_VALUE else {})}


def task_placeholder(data: str) -> str:
    return TASK_PLACEHOLDERS.get(str(data), "a text of this task")


def trained_on_note(valid: Sequence[CheckpointInfo]) -> str | None:
    """What "trained on X" in a data-set cell means, when a checkpoint was trained on another set than the one
    it is tested on (sst2 checkpoints trained on sst2_phrases); None when none is."""
    from textcls.data.datasets import describe_dataset
    pairs = sorted({(i.data, trained_on(i)) for i in valid if i.data and trained_on(i) != i.data})
    if not pairs:
        return None
    return " ".join(f"{t} ({describe_dataset(t) or 'another data set'}) is what {d}'s checkpoints were trained "
                    f"on; their accuracy is on {d}'s test split." for d, t in pairs)


# ---------------------------------------------------------------- checkpoints

def by_label_set(infos: Sequence[CheckpointInfo]) -> list[tuple[str, list[CheckpointInfo]]]:
    """The checkpoints grouped by their label set (agreement means something only within one), the main task's
    group first (`tasks` order), each with a title: its data set(s)."""
    order = {d: k for k, d in enumerate(tasks(infos))}
    groups: dict[tuple, list[CheckpointInfo]] = {}
    for i in infos:
        groups.setdefault(tuple(sorted(i.labels)), []).append(i)
    out = []
    for part in groups.values():
        data = sorted({str(i.data or "unknown data") for i in part}, key=lambda d: order.get(d, len(order)))
        out.append((", ".join(data), part))
    return sorted(out, key=lambda g: min(order.get(i.data, len(order)) for i in g[1]))


def trained_on(info: CheckpointInfo) -> str:
    """The data set a checkpoint was trained on (sst2_phrases for a model evaluated on sst2), else its data set."""
    data = info.info.get("data") if isinstance(info.info, dict) else None
    return str((data.get("trained_on") if isinstance(data, dict) else None) or info.data or "unknown data")


def no_checkpoints_message(invalid: Sequence[CheckpointInfo] = ()) -> None:
    where = " or ".join(f"`{md_escape(r)}`" for r in cache.checkpoint_roots())
    st.warning(f"No trained checkpoint found in {where}. The app shows models you have trained; "
               "make one with the command below (about a minute on a laptop) or on the Train page, then reload "
               "this page. The shipped checkpoints are read from `TEXTCLS_CHECKPOINTS` when it is set, yours "
               "from `TEXTCLS_HOME`.", icon=":material/info:")
    st.code(TRAIN_CMD, language="bash")
    show_invalid(invalid)


def show_invalid(invalid: Sequence[CheckpointInfo]) -> None:
    if invalid:
        with st.expander(f"{len(invalid)} folder(s) in the checkpoint folder could not be read"):
            for i in invalid:
                st.text(f"{i.name}: {i.error}")


def session_id() -> str:
    """A random id for this browser session (kept in st.session_state): who started a training job."""
    return st.session_state.setdefault("_textcls_session_id", uuid.uuid4().hex)


def require_checkpoints() -> list[CheckpointInfo]:
    """The valid checkpoints (validated in full: the page runs models); if there are none, explain how to make
    one and stop the page."""
    valid, invalid = cache.checkpoints(deep=True)
    if not valid:
        no_checkpoints_message(invalid)
        st.stop()
    return valid


def facts(info: CheckpointInfo):
    """The checkpoint's `ModelFacts` (map specs, what Inspect may show; cache.facts: from the model worker), or None with
    the error shown (a broken checkpoint never crashes the page)."""
    try:
        return cache.facts(info.path)
    except Exception as e:  # noqa: BLE001 - any load failure is shown, not raised
        _failed(info, e, loading=True)
        return None


def reading(info: CheckpointInfo, text: str):
    """How the checkpoint reads `text` (`work.reading`, a TextReading: tokens, unknown words, what applies; from
    the model worker), or None with the reason shown: a refused folder, broken entity tags, an input it cannot
    read."""
    from . import work
    try:
        return work.reading(info.path, text)
    except Exception as e:  # noqa: BLE001 - shown to the user
        _failed(info, e)
        return None


@contextmanager
def or_one_line(what: str, stop: bool = True):
    """Model work: what it raises (the model worker restarted or timed out, a model that fails) is one error line
    naming `what`, never a traceback. With `stop` (work the page cannot go on without) the page stops there;
    without (one of several independent parts, e.g. a tab), the rest of the `with` block is skipped and the page
    goes on after it."""
    try:
        yield
    except Exception as e:  # noqa: BLE001 - shown to the user (Streamlit's own stop and rerun are BaseException)
        if worker_said(e):
            st.caption(f"{md_escape(what)}: no answer (the model worker was restarted; see above).")
        else:
            st.error(f"{md_escape(what)} failed: {type(e).__name__}: {md_escape(e)}", icon=":material/error:")
        if stop:
            st.stop()


def worker_said(e: BaseException) -> bool:
    """Whether `e` is a model-worker error whose restart this page run has shown already: one message per restart
    (six checkpoints waiting on one stuck worker), the others a quiet line (textcls.serve.client.first_report)."""
    from textcls.serve import client
    return not client.first_report(e)


def needs_entities(info: CheckpointInfo) -> bool:
    """Whether a checkpoint reads relation sentences (its tokenizer checks <e1>..</e2> entity tags)."""
    tok = info.info.get("tokenizer") if isinstance(info.info, dict) else None
    cfg = tok.get("config", tok) if isinstance(tok, dict) else {}
    return isinstance(cfg, dict) and cfg.get("entities", "none") not in (None, "none")


def marker_help() -> None:
    """How to mark the two entities of a relation sentence."""
    st.caption("Relation checkpoints classify the relation between two marked entities. "
               + md_escape(MARKER_SYNTAX))


def missing_markers(infos: Sequence[CheckpointInfo], text: str, quiet: bool = False) -> list[CheckpointInfo]:
    """The relation checkpoints among `infos` that cannot read `text` because it has no entity tags, with a
    message saying so (a warning; a caption when `quiet`): they are skipped, not run."""
    skip = [i for i in infos if needs_entities(i)] if not has_markers(text) else []
    if skip:
        msg = (f"{md_escape(', '.join(i.name for i in skip))}: relation checkpoint(s) need the two entities "
               "marked in the sentence; skipped. " + md_escape(MARKER_SYNTAX))
        st.caption(msg) if quiet else st.warning(msg, icon=":material/info:")
    return skip


def _failed(info: CheckpointInfo, e: Exception, loading: bool = False) -> None:
    if isinstance(e, EntitySpanError):
        st.warning(f"{md_escape(info.name)} reads relation sentences, and this one's entity tags are not "
                   f"usable: {md_escape(e)}", icon=":material/info:")
        return
    from textcls.serve.client import WorkerError
    if isinstance(e, WorkerError):               # the worker, not the checkpoint: one message per restart
        if worker_said(e):
            st.caption(f"{md_escape(info.name)}: no answer (the model worker was restarted; see above).")
        else:
            st.error(f"{md_escape(info.name)}: no answer: {type(e).__name__}: {md_escape(e)}",
                     icon=":material/error:")
    elif loading or isinstance(e, CheckpointError):
        # one line for the folder: a Hugging Face folder's full check runs when it is first selected (cache.py)
        st.error(f"Could not load {md_escape(info.name)}: {md_escape(e)}", icon=":material/error:")
        if not _is_hf(info):
            st.caption("The checkpoint may come from an older version of the library; retrain it with the CLI.")
    else:
        st.error(f"{md_escape(info.name)} failed on this input: {type(e).__name__}: {md_escape(e)}",
                 icon=":material/error:")


def _is_hf(info: CheckpointInfo) -> bool:
    return isinstance(info.info, dict) and info.info.get("format") == "hf"


def safe_predict(info: CheckpointInfo, texts: list[str]):
    """Predictions, or None with the reason shown (a broken checkpoint or input never crashes the page)."""
    try:
        return cache.predict(info.path, texts)
    except Exception as e:  # noqa: BLE001 - shown to the user
        _failed(info, e)
        return None


def safe_predict_maps(info: CheckpointInfo, text: str):
    try:
        return cache.predict_maps(info.path, text)
    except Exception as e:  # noqa: BLE001 - shown to the user
        _failed(info, e)
        return None


# ---------------------------------------------------------------- a user's labelled file (Train, Evaluate)

UPLOAD_TYPES = ["csv", "tsv", "jsonl", "ndjson", "json", "parquet", "gz"]
TEXT_GUESS = ("text", "sentence", "review", "content", "document", "body", "question")
LABEL_GUESS = ("label", "labels", "class", "category", "target", "sentiment", "y")


def _guess(columns: list[str], wanted: tuple[str, ...], avoid: str | None = None) -> int:
    low = [c.lower() for c in columns]
    for want in wanted:
        if want in low and columns[low.index(want)] != avoid:
            return low.index(want)
    return next((i for i, c in enumerate(columns) if c != avoid), 0)


def _save_upload(up, key: str) -> Path:
    """The uploaded file on disk under its own (sanitised) name, in this session's temporary folder."""
    folder = st.session_state.get(f"_{key}_upload_dir")
    if not folder or not Path(folder).is_dir():
        folder = tempfile.mkdtemp(prefix="textcls-upload-")
        st.session_state[f"_{key}_upload_dir"] = folder
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(up.name).name).strip("._") or "upload.csv"
    path = Path(folder) / name
    data = up.getvalue()
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)
    return path


def _short(message: object, path: Path, limit: int = 600) -> str:
    return md_escape(viz.short(str(message).replace(str(path), path.name), limit))


def labelled_file(key: str, what_happens: str, as_split: str | None = None):
    """A file uploader for a labelled CSV/TSV/JSONL/JSON/Parquet file (optionally .gz) with text and label column
    pickers. Returns the `DataBundle` (split 80/10/10, or everything in `as_split`), or None after showing why
    (nothing uploaded, an unreadable file naming the line, the same column twice). Widget keys: KEY_upload,
    KEY_text_col, KEY_label_col."""
    up = st.file_uploader("A CSV, TSV, JSON lines / JSON or Parquet file with a text column and a label column "
                          f"(optionally .gz); {what_happens}.", type=UPLOAD_TYPES, key=f"{key}_upload")
    if up is None:
        return None
    path = _save_upload(up, key)
    try:
        cols = file_columns(path)
    except (tdata.DataError, ValueError) as e:
        st.error(f"This file cannot be read: {_short(e, path)}", icon=":material/error:")
        return None
    c1, c2 = st.columns(2)
    text_col = c1.selectbox("Text column", cols, index=_guess(cols, TEXT_GUESS), key=f"{key}_text_col")
    label_col = c2.selectbox("Label column", cols, index=_guess(cols, LABEL_GUESS, avoid=text_col),
                             key=f"{key}_label_col")
    if text_col == label_col:
        st.error("The text column and the label column must differ.")
        return None
    try:
        return cache.dataset(str(path), text_column=text_col, label_column=label_col, as_split=as_split)
    except (tdata.DataError, ValueError) as e:
        st.error(f"This file cannot be used: {_short(e, path)}", icon=":material/error:")
        return None


# ---------------------------------------------------------------- text input

def clean_text(text: str | None, *, what: str = "text") -> str | None:
    """The text to classify, or None after telling the user why there is nothing to do."""
    if text is None or not text.strip():
        st.info(f"Type or paste a {what} above.", icon=":material/edit:")
        return None
    text = text.replace("\x00", " ")
    if len(text) > MAX_CHARS:
        st.warning(f"The text has {len(text):,} characters; only the first {MAX_CHARS:,} are used "
                   "(each model reads at most its own maximum number of tokens anyway).")
        text = text[:MAX_CHARS]
    return text


def split_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


# ---------------------------------------------------------------- figures and export

def chart_config(key: str) -> dict:
    """Plotly modebar: the camera saves an SVG (vector, for papers) named after the figure."""
    return {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"],
            "toImageButtonOptions": {"format": "svg", "filename": viz.safe_filename(key)}}


def _export_status() -> tuple[bool, str]:
    if "_img_export" not in st.session_state:
        st.session_state["_img_export"] = viz.image_export_status()
    return st.session_state["_img_export"]


def export_buttons(item: viz.FigureOut, key: str, filename: str | None = None) -> None:
    """PNG and SVG (rendered server-side when clicked), CSV and JSON of one figure, under an "Export" button."""
    name = viz.safe_filename(filename or item.key)
    ok, why = _export_status()
    # In a popover: its buttons are drawn by the browser only when it is opened (a page of figures reruns faster).
    # Each file is made when its button is clicked; `item.fig` is read only then (an HTML figure's Plotly twin is
    # built on that first read: 30-50 ms a figure, a fifth of the server's work per Compare submit when it was read
    # here on every run).
    row = st.popover("Export", icon=":material/download:", help="PNG, SVG, CSV or JSON of this figure")
    if ok:
        row.download_button("PNG", data=lambda: viz.figure_image(item.fig, "png"), file_name=f"{name}.png",
                            mime="image/png", key=f"png_{key}", on_click="ignore", icon=":material/image:")
        row.download_button("SVG", data=lambda: viz.figure_image(item.fig, "svg"), file_name=f"{name}.svg",
                            mime="image/svg+xml", key=f"svg_{key}", on_click="ignore", icon=":material/draw:")
    else:
        for fmt in ("png", "svg"):
            row.download_button(f"{fmt.upper()} (via HTML)", data=lambda x=fmt: viz.figure_html(item.fig, x, name),
                                file_name=f"{name}_{fmt}.html", mime="text/html", key=f"html{fmt}_{key}",
                                on_click="ignore", icon=":material/image:",
                                help=f"Server-side PNG/SVG rendering is unavailable ({why}). Open this page in a "
                                     f"browser and click its camera button to save the figure as {fmt.upper()}.")
    row.download_button("CSV", data=lambda: item.csv(), file_name=f"{name}.csv", mime="text/csv",
                        key=f"csv_{key}", on_click="ignore", icon=":material/table:")
    row.download_button("JSON", data=lambda: item.json(), file_name=f"{name}.json", mime="application/json",
                        key=f"json_{key}", on_click="ignore", icon=":material/data_object:")


def show_figure(item: viz.FigureOut, key: str, *, export: bool = True, filename: str | None = None,
                title_chars: int | None = None) -> None:
    """One figure with its caption and export buttons. A figure with an HTML rendering (shaded words that wrap to
    the column's width, Compare's probability bars) shows that (escaped) HTML; its PNG/SVG export renders the
    Plotly twin. `title_chars`: the column's width in title characters (the title wraps to it, above any legend)."""
    if item.html is not None:
        st.html(item.html)
    else:
        fig = viz.fit_title(item.fig, title_chars) if title_chars else item.fig
        width = "content" if fig.layout.width else "stretch"
        st.plotly_chart(fig, theme=None, config=chart_config(filename or item.key), key=f"fig_{key}",
                        width=width)
        st.session_state[PLOTLY_LOADED] = True
    if item.caption:
        st.caption(md_escape(item.caption))
    if export:
        export_buttons(item, key, filename)


PLOTLY_PREFETCH = "textcls_plotly_prefetch"
PLOTLY_LOADED = "_textcls_plotly_loaded"      # this session's tab has drawn a Plotly chart (it has the code)


def prefetch_plotly() -> None:
    """Have the browser load its Plotly code now, while the person reads the page, instead of on the page's first
    Plotly figure. Streamlit fetches its Plotly chunk (4.7 MB of JavaScript) the first time a tab shows a Plotly
    chart; parsing it and drawing that first chart took 1.1 s of the browser's main thread on an idle machine and
    4.6 s with six tabs on two cores - the whole of Inspect's first switch to a Plotly view. A one-point chart in
    a hidden container makes the tab do that work once, after the page is drawn. Pages call it last, and only
    when they drew no Plotly chart themselves, until the session has drawn one (`show_figure`): the tab keeps
    that code then. The hidden chart stays on every run until then (it costs a Compare submit about 45 ms of
    the browser's main thread); drawn once and then left out, Inspect's first render after Compare was as slow
    as without it (3.70 s against 4.21 s and 1.78 s, medians of three runs)."""
    if st.session_state.get(PLOTLY_LOADED):
        return
    st.html(f"<style>.st-key-{PLOTLY_PREFETCH} {{display: none;}}</style>")
    with st.container(key=PLOTLY_PREFETCH):
        st.plotly_chart(_prefetch_figure(), config={"staticPlot": True}, key=f"{PLOTLY_PREFETCH}_chart")


@functools.lru_cache(maxsize=1)
def _prefetch_figure():
    """The hidden one-point chart, built once (Streamlit reads it, never changes it); no template: the point is
    never seen, and Plotly's default template is 6 kB of JSON a run (0.6 ms of the server's time)."""
    import plotly.graph_objects as go
    return go.Figure(go.Scatter(x=[0], y=[0]), layout={"template": "none"})


def zip_button(items: Sequence[viz.FigureOut], key: str, label: str = "All figures (ZIP)") -> None:
    if not items:
        return
    ok, _ = _export_status()
    st.download_button(label, data=lambda: viz.export_zip(items, images=ok), file_name=f"{viz.safe_filename(key)}.zip",
                       mime="application/zip", key=f"zip_{key}", on_click="ignore", icon=":material/folder_zip:",
                       help="PNG, SVG, CSV and JSON of every figure shown here" if ok else
                       "CSV and JSON of every figure (PNG/SVG rendering is unavailable on this server)")


class Progress:
    """Progress over a loop of steps. The bar appears only once the loop has taken a moment (a rerun whose
    results are all cached shows none); before that, a step that is slow by itself (a model loading) shows a
    spinner naming it. What a step draws goes to the page as usual, below the bar."""

    def __init__(self, total: int, delay: float = 0.25):
        self.box = st.container()
        self.bar, self.total, self.delay = self.box.empty(), max(1, total), delay
        self.done, self.t0 = 0, time.perf_counter()

    @contextmanager
    def step(self, label: str, ready: bool = False):
        """One step; `ready`: its answer is at hand (asked ahead), so no spinner is started for it (each starts a
        timer thread and sends the browser a message even when it is never shown)."""
        if ready:
            yield
        elif time.perf_counter() - self.t0 > self.delay:
            self.bar.progress(min(1.0, self.done / self.total), text=label)
            yield
        else:
            with self.box.spinner(label):
                yield
        self.done += 1

    def close(self) -> None:
        self.bar.empty()


# ---------------------------------------------------------------- example texts

EXAMPLE_DATA = "imdb_sample"   # a sample of IMDB test reviews shipped in textcls/data/bundled (document models)


def example_texts(n_per_label: int = 3) -> dict[str, str]:
    """{name: text}: the short restaurant review, then a few full movie reviews from the shipped IMDB sample
    (several sentences each: what HCAN's and CAN's views are made for), the longest first."""
    from textcls.data.readable import readable  # not textcls.data.text: it imports torch
    out = {"A short review (3 sentences)": EXAMPLE}
    try:
        bundle = cache.dataset(EXAMPLE_DATA)
        test = bundle.splits["test"]
    except Exception:  # noqa: BLE001 - no sample shipped: the short example alone
        return out
    for lab, name in enumerate(bundle.labels):
        rows = sorted((readable(t) for t, y in zip(test.texts, test.labels) if y == lab), key=len, reverse=True)
        for k, t in enumerate(rows[:n_per_label]):
            out[f"IMDB review {k + 1} ({name}, {len(t.split()):,} words)"] = t
    return out


def example_picker(target_key: str) -> None:
    """A select box of example texts; picking one puts it into the text box with key `target_key`."""
    examples = example_texts()

    def put() -> None:
        pick = st.session_state.get(f"{target_key}_example")
        if pick in examples:
            st.session_state[target_key] = examples[pick]

    st.selectbox("Example text", list(examples), index=None, key=f"{target_key}_example", on_change=put,
                 placeholder="Start from an example text (a short review, or a full IMDB review)…",
                 help="Full movie reviews from the IMDB sample shipped with textcls: several sentences each, "
                      "where HCAN's sentence attention has something to choose between.")


def csv_button(df, label: str, file: str, key: str) -> None:
    """A download button for a table as CSV (the file name made safe)."""
    st.download_button(label, data=df.to_csv(index=False).encode("utf-8"), file_name=f"{viz.safe_filename(file)}.csv",
                       mime="text/csv", key=key, icon=":material/download:", on_click="ignore")


# ---------------------------------------------------------------- unknown words

def count_unknown(prediction) -> int | None:
    """How many of a Prediction's tokens its model's vocabulary does not know (the model reads them as `<unk>`; the
    worker counted them: textcls.data.unknown), or None when the model has no word vocabulary to check against."""
    return None if prediction.unknown is None else len(prediction.unknown)


def unknown_words(prediction) -> list[str] | None:
    """The distinct tokens of a Prediction its model's vocabulary does not know, in order (None: no word
    vocabulary)."""
    return None if prediction.unknown is None else list(dict.fromkeys(prediction.unknown))


MAX_UNKNOWN_NAMED = 12     # unknown words named in the warning (then "and N more")


def unknown_warning(counts: dict[str, tuple[int | None, int]], words: dict[str, Sequence[str]] | None = None) -> bool:
    """Warn about words the models do not know, naming them. counts: {checkpoint: (unknown tokens or None,
    tokens)}; words: {checkpoint: its unknown words}. Returns True when every token is unknown to every model that
    read any (the predictions are then only the models' bias); nothing is shown when every model knows every
    token."""
    known = {n: (u, t) for n, (u, t) in counts.items() if u is not None and t > 0}
    if not known or not any(u for u, _ in known.values()):
        return False
    detail = "; ".join(f"{md_escape(n)}: {u} of {t}" for n, (u, t) in known.items() if u)
    named = list(dict.fromkeys(x for n in known for x in (words or {}).get(n) or ()))
    if named:
        more = len(named) - MAX_UNKNOWN_NAMED
        detail = ("“" + "”, “".join(md_escape(viz.short(x, 30)) for x in named[:MAX_UNKNOWN_NAMED]) + "”"
                  + (f" and {more} more" if more > 0 else "") + " - " + detail)
    if all(u == t for u, t in known.values()):
        st.warning("**Every word of this text is unknown to every model** (not in its vocabulary), so the "
                   "predictions are meaningless: they reflect only each model's bias, not the text. "
                   f"Unknown tokens - {detail}.", icon=":material/report:")
        return True
    st.warning(f"Some words are not in the models' vocabularies and are read as unknown - {detail}. "
               "Predictions on mostly unknown words say little about the text.", icon=":material/warning:")
    return False
