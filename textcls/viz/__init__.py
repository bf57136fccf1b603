"""Pure Plotly figure builders for the dashboard (no Streamlit here; every function is testable headless).

One job per module; imports point down (style <- axes <- maps <- tokens <- views <- paper_views; reports and
export use style only):
- `style`: fonts, the one palette (RUN_COLORS) and the one label -> colour rule (`label_colors`), `esc`, `short`, `safe_filename`, `style_figure`, `FigureOut`;
- `axes`: axis kinds, titles and labels, the token-axis limits and the window that pages long axes;
- `maps`: generic builders that label themselves from a MapSpec: `heatmap` (+ `heatmap_table` for the same
  numbers as a table), `attention_grid` (all layers x heads, the bertviz "model view"), `find_spec`;
- `tokens`: `token_highlight` (words shaded by weight, ACT Table 4 style) and its HTML twin
  `token_highlight_html`; `token_weights(specs, maps, tokens, ...)` (re-exported from `textcls.interpret.importance`, the
  one per-token importance rule of every page): one weight per token for any model, so several models'
  *reasons* can be shown one above the other (ACT-T4: Transformer above ACT);
- `views`: a registry of paper views (`register_view`, `views_for`): each view declares the maps it needs and
  the controls it takes (layer, head, word, ...) and returns `FigureOut`s (figure + its numbers as a table);
- `paper_views`: the views themselves; a model without a dedicated view still gets `generic` (one heatmap per
  map in map_specs()); `reasons_figure`;
- `pieces`: the self-attention view drawn over a Hugging Face encoder's word pieces instead of its words;
- `reports`: Compare / Train / Evaluate figures (probabilities, confusion matrix, training curves, top words,
  filter n-grams);
- `explanations`: Attribute / Lab figures (attributions side by side, agreement, erasure curves, demos);
- `dataset`: Explore page figures (metrics per slice, the embedding projector, counterfactual flip rates, ROC / PR
  curves, reliability diagrams);
- `benchmarks`: Benchmarks page figures (ACT Table 5, LAMA Fig. 4, models, accuracy against the papers);
- `export`: PNG/SVG (kaleido + Chromium, serialised), interactive HTML, ZIP;
- `notebook`: the door for a notebook - `paper_figures(predictor, text)` (a paper view, as Inspect draws it) and
  `explanation_figure(predictor, text, methods)` (explanations on one word grid, as Attribute draws them).

Safety: every string that comes from user text (tokens, sentences) is HTML-escaped before it reaches a
figure - Plotly renders tick labels, annotations and hover labels as a subset of HTML.
Long inputs: token axes are paged (a window of at most `MAX_TOKENS` tokens, the caller passes `window`) or
binned (`aggregate=True`); no figure is ever built with thousands of cells per axis.
"""
from __future__ import annotations

from textcls.viz.axes import (AXIS_TITLES, MAX_GRID_TOKENS, MAX_HIGHLIGHT_TOKENS, MAX_TOKENS, PAD_LABEL, axis_labels,
    is_sentence_axis, is_sequence_axis, is_token_axis, is_word_axis)
from textcls.viz.benchmarks import (accuracy_figure, act_t5_figure, explanation_tradeoff_figure, lama_f4_figure,
    shortcut_facts, shortcut_figure,
    models_figure, tradeoff_figure)
from textcls.viz.studies import study_figure
from textcls.viz.dataset import (flip_rates_figure, projector_figure, reliability_figure, roc_pr_figure,
    slice_metrics_figure)
from textcls.viz.export import (CHROME_NAMES, export_size, export_zip, figure_html, figure_image, find_chrome,
    image_export_status)
from textcls.viz.headview import HEAD_COLORS, head_view
from textcls.viz.maps import (REAL, Slice2D, attention_grid, find_spec, find_specs, grid_table, heatmap,
    heatmap_from_slice, heatmap_item, heatmap_table, slice_map, slice_table)
from textcls.viz.paper_views import reasons_figure  # importing paper_views registers the views in VIEWS
from textcls.viz.pieces import piece_controls, piece_figures
from textcls.viz.reports import (CURVE_TITLES, confusion_figure, filter_ngrams_figure, label_cards_html,
    live_training_figure, probabilities_figure, top_words_figure, training_curves, word_weight_figure)
from textcls.viz.style import (FONT, MONO, RUN_COLORS, FigureOut, esc, fit_title, label_colors, model_title,
    safe_filename, short,
    two_label_scale)
from textcls.viz.tokens import (SHADE_NOTE, UNIFORM_DARKEST, esc_html, highlight_table, shade_weights,
    token_highlight, token_highlight_html, token_highlight_rows, token_rows_html)
from textcls.interpret.importance import token_weights
from textcls.viz.notebook import explanation_figure, paper_figures, view_input
from textcls.viz.views import (MODEL_VIEWS, VIEWS, Control, View, ViewInput, build_view, register_view,
    view_controls, views_for)

__all__ = [
    # style
    "FONT", "MONO", "RUN_COLORS", "FigureOut", "esc", "fit_title", "label_colors", "model_title", "safe_filename", "short", "two_label_scale",
    # axes
    "AXIS_TITLES", "MAX_GRID_TOKENS", "MAX_HIGHLIGHT_TOKENS", "MAX_TOKENS", "PAD_LABEL", "axis_labels",
    "is_sentence_axis", "is_sequence_axis", "is_token_axis", "is_word_axis",
    # maps
    "REAL", "Slice2D", "attention_grid", "find_spec", "find_specs", "grid_table", "heatmap", "heatmap_from_slice",
    "heatmap_item", "heatmap_table", "slice_map", "slice_table",
    # head view
    "HEAD_COLORS", "head_view",
    # tokens
    "SHADE_NOTE", "UNIFORM_DARKEST", "esc_html", "highlight_table", "shade_weights", "token_highlight",
    "token_highlight_html", "token_highlight_rows", "token_rows_html", "token_weights",
    # views + paper views
    "MODEL_VIEWS", "VIEWS", "Control", "View", "ViewInput", "build_view", "register_view", "view_controls",
    "views_for", "reasons_figure",
    # word pieces (Hugging Face encoders)
    "piece_controls", "piece_figures",
    # reports
    "CURVE_TITLES", "confusion_figure", "filter_ngrams_figure", "label_cards_html", "live_training_figure",
    "probabilities_figure",
    "top_words_figure",
    "training_curves", "word_weight_figure",
    # dataset (Explore)
    "flip_rates_figure", "projector_figure", "reliability_figure", "roc_pr_figure", "slice_metrics_figure",
    # benchmarks
    "accuracy_figure", "act_t5_figure", "explanation_tradeoff_figure", "lama_f4_figure", "models_figure",
    "shortcut_facts", "shortcut_figure",
    "study_figure", "tradeoff_figure",
    # export
    "CHROME_NAMES", "export_size", "export_zip", "figure_html", "figure_image", "find_chrome",
    "image_export_status",
    # notebook: a checkpoint and a text in, the app's figures out
    "explanation_figure", "paper_figures", "view_input",
]


def __getattr__(name: str):
    if name == "MapSpec":  # `viz.MapSpec` still works, importing torch only when it is used (PEP 562)
        from textcls.models.outputs import MapSpec
        return MapSpec
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
