"""The paper studies (`python -m textcls study`, the Studies page): each a named grid of short trainings behind one
of the papers' figures, at a "quick" scale (bundled data, a slice, few epochs, the small preset: minutes on a CPU)
and a "full" scale (the paper's data set and configuration: hours on a CPU). The paper's numbers come from the
papers themselves (their text and tables; docs/models.md names them); a number that is only in a plot we cannot
read is None and the study's `paper_source` says so. No torch."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textcls.experiments.papers import AGCNN_COLUMNS, ACT_TABLE3_YELPF_DEV


@dataclass(frozen=True)
class StudyPoint:
    """One training run of the grid (times the scale's seeds)."""
    series: str = field(metadata={"help": "the panel / curve the point belongs to, e.g. 'layers'"})
    x: Any = field(metadata={"help": "its position on the x axis (a number or a category label)"})
    model: str = field(metadata={"help": "registered model name"})
    variant: str | None = field(default=None, metadata={"help": "a registered variant (config switch)"})
    overrides: tuple[tuple[str, Any], ...] = field(default=(), metadata={"help": "model config fields set"})
    tokenizer: tuple[tuple[str, Any], ...] = field(default=(), metadata={"help": "TokenizerConfig fields set"})
    paper: float | None = field(default=None, metadata={"help": "the paper's number at this point (%), if any"})

    @property
    def key(self) -> str:
        return f"{self.series}={self.x}"


@dataclass(frozen=True)
class Scale:
    """How big the runs of a study are."""
    data: str = field(metadata={"help": "data set name (bundled for quick scales)"})
    epochs: int = field(metadata={"help": "epochs per run"})
    limit: int | None = field(default=None, metadata={"help": "at most this many examples per split; None: all"})
    seeds: int = field(default=1, metadata={"help": "runs per point (seeds 0..n-1), shown as mean and spread"})
    preset: str | None = field(default=None, metadata={"help": "model preset for every point (small: quick)"})
    embeddings: str = field(default="random", metadata={"help": "glove | random"})
    train: tuple[tuple[str, Any], ...] = field(default=(), metadata={"help": "TrainConfig fields"})
    seconds_per_run: float = field(default=60.0, metadata={
        "help": "rough seconds of one run on a 2-core CPU with 1 thread (the estimate before starting)"})
    overrides: tuple[tuple[str, Any], ...] = field(default=(), metadata={
        "help": "model config fields for every point at this scale, applied after the point's own"})

    def short(self) -> str:
        """For a figure's title: data, slice, epochs, seeds."""
        sl = f"{self.limit} ex./split" if self.limit else "all"
        return f"{self.data}, {sl}, {self.epochs} ep., {self.seeds} seed(s)"

    def describe(self) -> str:
        sl = f"{self.limit} examples per split" if self.limit else "all examples"
        return (f"{self.data}, {sl}, {self.epochs} epoch(s), {self.seeds} seed(s), "
                f"{self.preset or 'paper'} configuration, {self.embeddings} embeddings")


@dataclass(frozen=True)
class Study:
    """A named grid of runs with the paper's figure attached."""
    name: str = field(metadata={"help": "the CLI name, e.g. ACT-F3"})
    title: str = field(metadata={"help": "what the figure shows"})
    figure: str = field(metadata={"help": "the paper's figure or table"})
    points: tuple[StudyPoint, ...] = field(metadata={"help": "the grid"})
    scales: dict[str, Scale] = field(metadata={"help": "quick / full"})
    measure: str = field(default="dev_accuracy", metadata={
        "help": "dev_accuracy (one number per point) | curve (dev accuracy per epoch) | time (dev accuracy "
                "against cumulative training seconds)"})
    paper_source: str = field(default="", metadata={"help": "where the paper's numbers come from, or why absent"})
    paper_best: tuple[tuple[str, Any], ...] = field(default=(), metadata={
        "help": "per series, the x the paper finds best (from its text) - the trend the reading checks"})
    notes: str = field(default="", metadata={"help": "what differs from the paper; variants that do not exist"})


def _p(series, x, model, paper=None, variant=None, tok=(), **over) -> StudyPoint:
    return StudyPoint(series, x, model, variant, tuple(sorted(over.items())), tuple(tok), paper)


ADAM = (("optimizer", "adam"), ("lr", 1e-3), ("batch_size", 50))


def _act_f3() -> Study:
    grid = {"layers": ("n_layers", (1, 2, 3, 4)), "heads": ("n_heads", (1, 2, 4, 6)),
            "kernel size": ("kernel_size", (1, 3, 5, 7)), "filters": ("n_filters", (25, 50, 100, 200))}
    pts = tuple(_p(s, v, "act", **{k: v}) for s, (k, vals) in grid.items() for v in vals)
    return Study("ACT-F3", "ACT: dev accuracy against layers, heads, kernel size and filters", "ACT Fig. 3", pts,
                 {"quick": Scale("trec", 5, 2000, 1, "small", "random", ADAM, 15),
                  "full": Scale("ag_news_mini", 5, None, 3, None, "glove", ADAM + (("patience", 2),), 1500)},
                 paper_source="ACT Fig. 3 (Yelp F. dev) is a plot whose values are not in the paper's text: no "
                              "points drawn. The text (Sec. 4.2) says: 3 layers best on Yelp F., 6 heads best, "
                              "kernel 3 best.",
                 paper_best=(("layers", 3), ("heads", 6), ("kernel size", 3)),
                 notes="One knob moves at a time from the scale's base configuration. Paper: Yelp F.; ours: TREC "
                       "(quick) / ag_news_mini (full).")


def _tr_cmp() -> Study:
    char = (("level", "char"),)
    pts = (_p("pooling", "cls", "transformer", 40.5, pooling="cls"),
           _p("pooling", "max", "transformer", 32.7, pooling="max"),
           _p("pooling", "mean", "transformer", None, pooling="mean"),
           _p("pooling", "decoder", "transformer", 42.7, pooling="decoder"),
           _p("level", "word", "transformer", 42.7, pooling="decoder"),
           _p("level", "char", "transformer", None, tok=char, pooling="decoder"),
           _p("level", "char + convs", "transformer", 35.3, tok=char, pooling="decoder", init_convs=2),
           _p("attention", "char full + convs", "transformer", 35.3, tok=char, pooling="decoder", init_convs=2),
           _p("attention", "char local + convs", "transformer", 38.2, tok=char, pooling="decoder", init_convs=2,
              local_window=30))
    return Study("TR-CMP", "Matton: pooling, word vs character level, local vs full attention (accuracy, speed)",
                 "Matton Fig. 3/4", pts,
                 {"quick": Scale("sst2", 3, 2000, 1, "small", "random", ADAM, 30),
                  "full": Scale("sst5", 10, None, 1, None, "glove",
                                (("optimizer", "noam"), ("lr", 5e-4), ("batch_size", 64)), 18000)},
                 paper_source="Matton Fig. 3/4, SST-5 test accuracy: decoder 42.7, cls 40.5, max 32.7 (GloVe); "
                              "char level: vanilla 'couldn't train' (no number), + convs 35.3, local + convs "
                              "38.2. Mean pooling is not in the paper (no number). Word-level local attention was "
                              "not computed by the paper (N.C.), so the attention panel is at the char level.",
                 paper_best=(("pooling", "decoder"), ("attention", "char local + convs")),
                 notes="Seconds per epoch are recorded per point (speed). Quick: SST-2 (binary), so levels "
                       "differ from the paper's SST-5 numbers; compare orders, not levels.")


def _lama_f3() -> Study:
    pts = tuple(_p("heads", m, "lama", heads=m) for m in (1, 5, 10, 20))
    return Study("LAMA-F3", "LAMA: dev accuracy per epoch for several head counts", "LAMA Fig. 3", pts,
                 {"quick": Scale("sst2", 6, 2000, 1, "small", "random", ADAM, 20),
                  "full": Scale("imdb", 10, None, 1, None, "glove", ADAM, 3600)},
                 measure="curve",
                 paper_source="LAMA Fig. 3 (YelpL and IMDB dev accuracy per epoch) is a plot; its values and "
                              "even the head counts named in the text were lost in the paper's text extraction: "
                              "no points drawn, no claim checked.",
                 notes="Head counts 1, 5, 10, 20 (the paper varies m from 1 to 20).")


def _hcan_f3() -> Study:
    pts = (_p("model", "CNN", "kim_cnn"), _p("model", "HCAN", "hcan"), _p("model", "CAN", "can"))
    return Study("HCAN-F3", "HCAN: dev accuracy against wall-clock training time, CNN vs HCAN vs CAN",
                 "HCAN Fig. 3", pts,
                 {"quick": Scale("sst2", 6, 2000, 1, "small", "random", ADAM, 30),
                  "full": Scale("imdb", 5, None, 1, None, "glove", (("optimizer", "adam"), ("lr", 2e-4),
                                                                     ("batch_size", 32)), 60000)},
                 measure="time",
                 paper_source="HCAN Fig. 3 (Amazon validation accuracy vs time, TITAN X) is a plot whose values "
                              "are not readable from the paper's text: no curve drawn. The text says the HCAN achieves "
                              "the highest test accuracy and that HCANs process documents and converge more than "
                              "twice as fast as the (sentence cut off in the text; HAN, per Fig. 3).",
                 notes="CAN is HCAN's flat (non-hierarchical) variant. Paper: Amazon; ours: SST-2 (quick) / IMDB.")


def _agcnn_t5() -> Study:
    table5 = {"relu": (85.8, 81.4, 93.7, 47.7, 86.5, 94.5), "softplus": (85.7, 81.2, 93.5, 47.4, 86.2, 94.3),
              "sigmoid": (85.5, 81.2, 93.1, 47.4, 85.2, 93.8), "elu": (86.0, 81.7, 93.7, 47.9, 86.6, 94.2),
              "leaky_relu": (85.9, 81.5, 93.5, 47.4, 86.5, 94.1), "nlrelu": (85.8, 81.6, 93.8, 48.0, 87.2, 94.3),
              "selu": (86.4, 81.7, 93.9, 48.3, 87.1, 94.3)}
    col = AGCNN_COLUMNS.index("TREC")
    pts = tuple(_p("activation", a, "agcnn", v[col], activation=a, embedding_mode="static")
                for a, v in table5.items())
    return Study("AGCNN-T5", "AGCNN-static: test accuracy per activation function (TREC)", "AGCNN Table 5", pts,
                 {"quick": Scale("trec", 8, 2000, 2, "small", "random", (("optimizer", "adam"), ("lr", 5e-3),
                                                                      ("batch_size", 50)), 12,
                                 (("embedding_mode", "rand"),)),
                  "full": Scale("trec", 20, None, 3, None, "glove", ADAM + (("patience", 5),), 480)},
                 measure="test_accuracy",
                 paper_source="AGCNN Table 5, TREC column (AGCNN-static): ReLU 94.5, Softplus 94.3, Sigmoid 93.8, "
                              "ELU 94.2, LReLU 94.1, NLReLU 94.3, SELU 94.3. PReLU (94.1) is not run: it has a "
                              "learned slope, the models offer fixed activations only.",
                 paper_best=(("activation", "relu"),),
                 notes="Quick: random embeddings, learned (embedding_mode rand: frozen random vectors, 'static' "
                       "without GloVe, learn almost nothing in a few epochs) - the full scale is the paper's static "
                       "with GloVe.")


def _act_t3() -> Study:
    rows = (("ACT", None), ("- attentive conv.", "no_attentive_conv"), ("- multi-head", "single_head"),
            ("- global rep.", "no_global_rep"), ("- position embed.", "no_position"))
    pts = tuple(_p("ablation", s, "act", ACT_TABLE3_YELPF_DEV[s], variant=v) for s, v in rows)
    return Study("ACT-T3", "ACT ablations: dev accuracy without each part", "ACT Table 3", pts,
                 {"quick": Scale("trec", 5, 2000, 2, "small", "random", ADAM, 15),
                  "full": Scale("ag_news_mini", 5, None, 3, None, "glove", ADAM + (("patience", 2),), 1500)},
                 paper_source="ACT Table 3, Yelp F. dev: ACT 68.3, - attentive conv. 67.1, - multi-head 67.0, "
                              "- global rep. 67.6, - position embed. 67.4.",
                 paper_best=(("ablation", "ACT"),),
                 notes="Paper: Yelp F. dev; ours: TREC (quick) / ag_news_mini (full) dev - compare the drops, "
                       "not the levels.")


def _smoke() -> Study:
    pts = (_p("model", "CNN", "kim_cnn"), _p("model", "AGCNN", "agcnn"))
    tiny = Scale("trec", 1, 60, 1, "small", "random", ADAM, 5)
    return Study("SMOKE", "Pipeline check: two tiny models, 1 epoch on 60 TREC texts - reproduces nothing",
                 "(none)", pts, {"quick": tiny, "full": tiny},
                 paper_source="A pipeline check: no paper figure.")


STUDIES: dict[str, Study] = {s.name: s for s in (_act_f3(), _tr_cmp(), _lama_f3(), _hcan_f3(), _agcnn_t5(),
                                                  _act_t3(), _smoke())}


def get_study(name: str) -> Study:
    try:
        return STUDIES[name.upper()]
    except KeyError:
        raise ValueError(f"unknown study {name!r}; known: {', '.join(STUDIES)}") from None
