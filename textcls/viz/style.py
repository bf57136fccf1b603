"""How every dashboard figure looks: fonts, the one colour palette, HTML escaping, short labels, file names,
the shared layout styling, and `FigureOut` (a figure with the numbers it draws)."""
from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import plotly.graph_objects as go

FONT = "Inter, Helvetica, Arial, sans-serif"
MONO = "DejaVu Sans Mono, Menlo, Consolas, Courier New, monospace"
# the one categorical palette: one colour per run, label, model or series (cycle with k % len(RUN_COLORS))
RUN_COLORS = ["#c0392b", "#2c7fb8", "#27ae60", "#8e44ad", "#e67e22", "#16a085", "#7f8c8d", "#d35400", "#2c3e50",
              "#b8860b"]


def label_colors(labels) -> dict[str, str]:
    """The app's one label -> colour rule: a label takes the colour of its position in its task's label list
    (sentiment: negative red, positive blue), on every page and figure."""
    return {str(lab): RUN_COLORS[k % len(RUN_COLORS)] for k, lab in enumerate(labels)}


def two_label_scale(labels=("negative", "positive")) -> list[list]:
    """A diverging colour scale for the probability of the second of two labels: 0 in the first label's colour,
    0.5 white, 1 in the second's (the same colours as `label_colors`)."""
    first, second = list(label_colors(labels).values())[:2]
    return [[0.0, first], [0.5, "#ffffff"], [1.0, second]]


def esc(text: Any) -> str:
    """HTML-escape anything shown in a figure (Plotly renders labels as HTML; entities are decoded back). Quotes
    become numeric entities: Plotly decodes `&#34;` but shows `&quot;` literally."""
    return html.escape(str(text), quote=False).replace('"', "&#34;").replace("'", "&#39;")


def short(text: str, n: int = 24) -> str:
    text = str(text)
    return text if len(text) <= n else text[: n - 1] + "…"


def short_words(text: str, n: int = 24) -> str:
    """`text` in at most `n` characters, cut between words ("the actors were…", never "the actors were wonde…");
    a first word longer than `n` is cut as `short` cuts it."""
    text = " ".join(str(text).split())
    if len(text) <= n:
        return text
    head = text[: n - 1]
    cut = head.rfind(" ")
    return (head[:cut] if cut > 0 else head).rstrip(" ,.;:") + "…"


def wrapped(text: str, width: int = 14, lines: int = 3) -> str:
    """Escaped text broken into lines of about `width` characters at spaces (Plotly's <br>), at most `lines`
    lines (the last shortened): an axis label that stays level and whole instead of tilting out of the frame."""
    out: list[str] = []
    for word in str(text).split():
        if out and len(out[-1]) + 1 + len(word) <= width:
            out[-1] += " " + word
        else:
            out.append(word)
    if len(out) > lines:
        out = out[:lines - 1] + [short(" ".join(out[lines - 1:]), width)]
    return "<br>".join(esc(line) for line in out)


FAMILY_TITLES = {"kim_cnn": "Kim CNN", "transformer": "Transformer", "act": "ACT", "hcan": "HCAN", "can": "CAN",
                 "agcnn": "AGCNN", "lama": "LAMA"}


def model_title(model: str) -> str:
    """A model family as a class reads it: "ACT", "Kim CNN"; a Hugging Face architecture
    ("hf:BertForSequenceClassification") as "BERT (Hugging Face)", never "hf:Bert"."""
    model = str(model or "")
    if model.startswith("hf:"):
        arch = model[3:].removesuffix("ForSequenceClassification") or "a model"
        upper = {"bert": "BERT", "roberta": "RoBERTa", "xlmroberta": "XLM-RoBERTa", "distilbert": "DistilBERT",
                 "albert": "ALBERT", "electra": "ELECTRA", "debertav2": "DeBERTa-v2", "deberta": "DeBERTa",
                 "modernbert": "ModernBERT", "gpt2": "GPT-2"}.get(arch.lower(), arch)
        return f"{upper} (Hugging Face)"
    return FAMILY_TITLES.get(model, model)


def safe_filename(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:80] or "figure"


def style_figure(fig: go.Figure, title: str, height: int, top: int = 50, **kw) -> None:
    """The dashboard's common look: escaped title at the left, white plot, light grid, margins that fit labels
    (`top`: room above the plot for the title and a legend)."""
    fig.update_layout(title=dict(text=esc(title), x=0.01, font=dict(size=14)), height=height,
                      margin=dict(l=10, r=10, t=top, b=10), font=dict(family=FONT), plot_bgcolor="white", **kw)
    fig.update_xaxes(automargin=True, showgrid=True, gridcolor="#eee", zeroline=False)
    fig.update_yaxes(automargin=True, showgrid=True, gridcolor="#eee", zeroline=False)


LEGEND_ENTRY_PX = 90          # one "head 12" entry of a horizontal legend, its line sample included


def legend_rows(fig: go.Figure, chars: int) -> int:
    """How many rows a horizontal legend takes in a column `chars` title characters wide (about 8.5 px each) or
    the figure's own width, whichever is narrower: 12 heads are 2 rows at 620 px, 3 in a side-by-side column."""
    entries = {t.legendgroup or t.name for t in fig.data if t.name and t.showlegend is not False}
    width = min(fig.layout.width or 10 ** 6, 8.5 * chars)
    per_row = max(1, int((width - 60) // LEGEND_ENTRY_PX))
    return max(1, -(-len(entries) // per_row))


def fit_title(fig: go.Figure, chars: int) -> go.Figure:
    """A copy of `fig` whose title fits a column `chars` characters wide: wrapped at spaces into lines, anchored
    at the top of the figure, and a legend laid out above the plot kept below the title (room made for both)."""
    text = str(fig.layout.title.text or "")
    if not text:
        return fig
    head, _, sub = text.partition("<br>")                  # a "<br><sup>note</sup>" line stays as it is
    lines, line = [], ""
    for word in head.split(" "):
        if line and len(html.unescape(line + " " + word)) > chars:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    n = len(lines) + (1 if sub else 0)
    out = go.Figure(fig)
    legend_on_top = bool(out.layout.legend.orientation == "h" and (out.layout.legend.y or 0) >= 1)
    top = 10 + 19 * n + (8 + 22 * legend_rows(out, chars) if legend_on_top else 0) + 8
    out.update_layout(title=dict(text="<br>".join(lines) + (("<br>" + sub) if sub else ""), yref="container",
                                 y=1, yanchor="top", pad=dict(t=10)),
                      margin=dict(t=max(top, out.layout.margin.t or 0)))
    if out.layout.height:
        out.update_layout(height=int(out.layout.height + max(0, top - (fig.layout.margin.t or 0))))
    return out


# ---------------------------------------------------------------- figure + numbers

class _BuiltWhenRead:
    """A FigureOut's `fig` or `table`: the value, or a function without arguments that builds it, called the first
    time it is read (then kept). A figure shown as HTML (shaded words, Compare's bars) needs its Plotly twin only for
    a PNG/SVG export, and its table only for a CSV/JSON one: built on every run, Compare's two twins took 80 ms of
    the server's 1 ms for their HTML, and its two tables (pandas) 1.5 ms more. Give a picklable function
    (functools.partial of a module's function): cached figures are pickled."""

    def __set_name__(self, owner, name: str) -> None:
        self.slot = f"_{name}"

    def __get__(self, obj, objtype=None):
        if obj is None:
            raise AttributeError(self.slot)        # dataclasses: the field has no default
        value = obj.__dict__[self.slot]
        if callable(value):                        # (a go.Figure or a DataFrame is not)
            value = obj.__dict__[self.slot] = value()
        return value

    def __set__(self, obj, value) -> None:
        obj.__dict__[self.slot] = value


@dataclass
class FigureOut:
    """One figure a view produced, with the numbers it draws (for CSV/JSON export). `fig` may be given as a
    function that builds it, called when `fig` is first read (an HTML figure's Plotly twin, for exports)."""

    key: str                      # stable id, used in file names: "tr-att_layer1_head2"
    title: str
    fig: go.Figure = _BuiltWhenRead()     # or a function that builds it when first read (an HTML figure's twin)
    table: pd.DataFrame = _BuiltWhenRead()   # long form: one column per axis label (+ its index) and "value";
                                             # or a function that builds it when first read (an export)
    caption: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    html: str | None = None       # escaped HTML to show on screen instead of `fig` (shaded words wrap to any
                                  # width); `fig` is still what PNG/SVG exports render

    def csv(self) -> str:
        return self.table.to_csv(index=False)

    def json(self) -> str:
        return json.dumps({"title": self.title, "caption": self.caption, "meta": self.meta,
                           "rows": json.loads(self.table.to_json(orient="records"))}, ensure_ascii=False,
                          indent=1)
