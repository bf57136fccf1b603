"""The reproduction's cells: each configuration a paper reports (model, variant, embeddings, data set, the
paper's figure, the known reasons for a gap), grouped in suites, and `select_cells`. No torch."""
from __future__ import annotations

import fnmatch
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable

from textcls.experiments.papers import (ACT_TABLE2, ACT_TABLE2_FULL, ACT_TABLE3_YELPF_DEV, AGCNN_COLUMNS,
    AGCNN_TABLE3, AGCNN_TABLE5, HCAN_YELP16, LAMA_IMDB, MATTON_SST5)

GAP_GLOVE = "50-d GloVe 6B (paper: 300-d word2vec)"
GAP_CV = "one fixed 80/10/10 split (paper: 10-fold cross-validation)"
GAP_SENTENCES = "trained on sentences (paper: on all labelled phrases, see the *_phrases column)"
GAP_MINI = "MINI set (6-11k training texts), NOT the benchmark (paper: full AG News / DBpedia training sets)"


@dataclass
class Cell:
    """One configuration a paper reports, with the paper's figure."""
    suite: str
    table: str                       # the paper's table, e.g. "AGCNN Table 3"
    setting: str                     # the paper's row, e.g. "CNN-non-static"
    data: str                        # bundled data set name
    model: str                       # registered model name
    preset: str | None = None
    variant: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    embeddings: str = "glove"        # glove | random
    paper: float | None = None       # the paper's accuracy (%)
    paper_note: str = ""             # what the paper's figure is on, when it is not this data set's test set
    column: str = ""                 # the paper's column label (data set as the paper names it)
    metric_split: str = "test"
    metric: str = "accuracy"         # the score reported: "accuracy", or "macro_f1" (SemEval: without Other)
    runs: int = 1                    # runs the paper averaged
    epochs: int = 10
    train: dict[str, Any] = field(default_factory=dict)       # TrainConfig fields
    tokenizer: dict[str, Any] = field(default_factory=dict)   # TokenizerConfig fields
    extra_vocab: int = 0             # most frequent GloVe words added to the vocabulary (train_from_spec)
    gaps: tuple[str, ...] = ()       # known reasons for a gap to the paper
    source: str = ""                 # where the data comes from when `data` is only its name, e.g. "hf:ID"
    text_column: str = "text"        # the text column of a hub / file source
    needs_gpu: bool = False          # a full benchmark: hours to days on a CPU (see README, "Training on a GPU")
    limit: int | None = None         # at most this many examples per split (a medium cell); the run's --limit wins

    @property
    def key(self) -> str:
        slug = self.setting.lower().replace(" + ", "-").replace(" ", "-").replace(".", "").replace("--", "-")
        return f"{self.suite}/{slug.strip('-')}/{self.data}"

    def signature(self, epochs: int, limit: int | None) -> dict[str, Any]:
        """What a run's result depends on (besides the seed): a stored run with another signature is stale."""
        return {"model": self.model, "preset": self.preset, "variant": self.variant,
                "overrides": _plain(self.overrides), "embeddings": self.embeddings, "data": self.data,
                "train": _plain(self.train), "tokenizer": _plain(self.tokenizer), "epochs": int(epochs),
                "limit": limit, "metric_split": self.metric_split,
                **({"metric": self.metric} if self.metric != "accuracy" else {}),
                **({"extra_vocab": self.extra_vocab} if self.extra_vocab else {}),
                **({"source": self.source, "text_column": self.text_column} if self.source else {})}

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["gaps"] = list(self.gaps)
        d["key"] = self.key
        return _plain(d)


def _plain(obj):
    """JSON-stable form (tuples -> lists, keys sorted on dump)."""
    return json.loads(json.dumps(obj, sort_keys=True, default=list))


# ---------------------------------------------------------------- the suites


# Tuned on dev (docs/tuning.md, scripts/tune.py): the 30k most frequent GloVe words join the vocabulary, so test
# words unseen in training keep their GloVe vectors (Kim 2014 built the vocabulary over all texts for this),
# and up to 20 epochs with patience 5. Kim's Adadelta + max-norm 3 was no better on dev with 50-d vectors.
AGCNN_EXTRA_VOCAB = 30_000


def _agcnn_t3() -> list[Cell]:
    rows = []
    for emb in ("rand", "static", "non-static"):
        rows.append((f"CNN-{emb}", "kim_cnn", {}, emb))
    for act in ("SELU", "NLReLU"):
        for emb in ("rand", "static", "non-static"):
            rows.append((f"AGCNN-{act}-{emb}", "agcnn", {"activation": act.lower()}, emb))
    datasets = [("mr", "MR"), ("subj", "Subj"), ("sst5_phrases", "SST-1"), ("sst2_phrases", "SST-2"),
                ("trec", "TREC"), ("sst5", "SST-1"), ("sst2", "SST-2")]
    cells = []
    for data, col in datasets:
        for setting, model, over, emb in rows:
            gaps = []
            if emb != "rand":
                gaps.append(GAP_GLOVE)
            if data in ("mr", "subj"):
                gaps.append(GAP_CV)
            if data in ("sst2", "sst5"):
                gaps.append(GAP_SENTENCES)
            if model == "kim_cnn":
                gaps.append("Adam (Kim 2014: Adadelta with a max-norm 3 constraint; no better on dev here, "
                            "docs/tuning.md)")
            phrases = data.endswith("_phrases")    # 10-20x more training texts: fewer epochs suffice
            cells.append(Cell(
                suite="agcnn_t3", table="AGCNN Table 3", setting=setting, data=data, model=model,
                overrides={**over, "embedding_mode": emb}, embeddings="random" if emb == "rand" else "glove",
                paper=AGCNN_TABLE3[setting][AGCNN_COLUMNS.index(col)], column=col, epochs=10 if phrases else 20,
                train={"optimizer": "adam", "lr": 1e-3, "batch_size": 50, "patience": 3 if phrases else 5},
                extra_vocab=0 if emb == "rand" else AGCNN_EXTRA_VOCAB, gaps=tuple(gaps)))
    return cells


def _agcnn_t5() -> list[Cell]:
    """AGCNN Table 5: AGCNN-static with each activation (PReLU is not offered: it is learned), on TREC - the
    smallest of the paper's sets, so the 7 runs fit in an afternoon on this CPU - with agcnn_t3's settings."""
    col = AGCNN_COLUMNS.index("TREC")
    return [Cell(suite="agcnn_t5", table="AGCNN Table 5 (activations, AGCNN-static)", setting=f"AGCNN-static {act}",
                 data="trec", model="agcnn", overrides={"activation": act, "embedding_mode": "static"},
                 paper=AGCNN_TABLE5[act][col], column="TREC", epochs=20,
                 train={"optimizer": "adam", "lr": 1e-3, "batch_size": 50, "patience": 5},
                 extra_vocab=AGCNN_EXTRA_VOCAB, gaps=(GAP_GLOVE, "one run (paper: a single figure per cell too, "
                                                               "seed not given)"))
            for act in ("relu", "softplus", "sigmoid", "elu", "leaky_relu", "nlrelu", "selu")]


def _matton_sst5() -> list[Cell]:
    names = {"cls": "new token (cls)", "max": "max-pool", "decoder": "decoder (vanilla)"}
    return [Cell(suite="matton_sst5", table="Matton word-level SST-5", setting=f"Transformer, {names[p]}",
                 data="sst5", model="transformer", overrides={"pooling": p}, paper=MATTON_SST5[p], column="SST-5",
                 epochs=10, train={"optimizer": "noam", "lr": 5e-4, "batch_size": 64},
                 gaps=("50-d GloVe projected to d = 512 (paper: GloVe, d = 512)",
                       "Noam warm-up = 10% of the run's steps, batches of 64 texts (paper: 8,000 steps, "
                       "batches of 4,096 words)"))
            for p in ("cls", "max", "decoder")]


def _matton_sst5_medium() -> list[Cell]:
    names = {"cls": "new token (cls)", "max": "max-pool", "decoder": "decoder (vanilla)"}
    return [Cell(suite="matton_sst5_medium", table="Matton word-level SST-5 (medium: small preset)",
                 setting=f"Transformer small, {names[p]}", data="sst5", model="transformer", preset="small",
                 overrides={"pooling": p}, paper=MATTON_SST5[p], column="SST-5", runs=3, epochs=8,
                 train={"optimizer": "adam", "lr": 1e-3, "batch_size": 50, "patience": 3},
                 gaps=("the small preset (d 16, 2 layers, a 1-block decoder; paper: d 512, 6 + 6 layers)",
                       "50-d GloVe projected to d = 16 (paper: GloVe, d = 512)",
                       "Adam 1e-3 with early stopping on dev, up to 8 epochs (paper: Noam, 8,000 warm-up steps)"))
            for p in ("cls", "max", "decoder")]


def _lama_imdb() -> list[Cell]:
    gap = "50-d GloVe (paper: 100-d word2vec trained on the corpus)"
    common = dict(suite="lama_imdb", table="LAMA Table 3 (IMDB)", data="imdb", column="IMDB", epochs=5,
                  train={"optimizer": "adam", "lr": 1e-3, "batch_size": 32, "patience": 2})
    return [
        Cell(setting="LAMA", model="lama", paper=LAMA_IMDB["LAMA"], gaps=(gap, "texts cut at 400 tokens"), **common),
        Cell(setting="LAMA + Ctx", model="lama", variant="ctx", paper=LAMA_IMDB["LAMA + Ctx"],
             gaps=(gap, "the mean embedding (50-d) is projected to 2d = 100 by a Linear (paper: e = 2d)",
                   "texts cut at 400 tokens"), **common),
        Cell(setting="CNN", model="kim_cnn", paper=LAMA_IMDB["CNN"],
             gaps=(gap, "Kim CNN windows 3/4/5 (the LAMA paper's CNN configuration is not given)",
                   "texts cut at 400 tokens"), **common),
    ]


# The ACT paper trains with SGD (lr 0.01, momentum 0.9, x0.9 after 10 epochs without improvement) for many GPU
# epochs; on this CPU budget (5 epochs) Adam converges where SGD at 0.01 has barely started. Both models of a
# comparison get the same optimiser, so ACT vs Transformer stays like for like.
ACT_TRAIN = {"optimizer": "adam", "lr": 1e-3, "batch_size": 100, "patience": 2, "clip_norm": 5.0}
GAP_ACT_OPT = "Adam 1e-3 for 5 CPU epochs (paper: SGD 0.01, momentum 0.9, many GPU epochs)"


def _act_mini() -> list[Cell]:
    cells = []
    for data, col in (("ag_news_mini", "AG News"), ("dbpedia_mini", "DBpedia")):
        for setting, model, preset in (("ACT", "act", None), ("Transformer", "transformer", "act_baseline")):
            cells.append(Cell(
                suite="act_mini", table="ACT Table 2 (mini sets)", setting=setting, data=data, model=model,
                preset=preset, paper=ACT_TABLE2[(model, data)], column=col,
                paper_note=f"full {col} benchmark - not comparable", runs=5, epochs=5, train=dict(ACT_TRAIN),
                gaps=(GAP_MINI, "50-d GloVe projected to d_w = 300 (paper: 300-d GloVe)", GAP_ACT_OPT)))
    return cells


def _act_ablation() -> list[Cell]:
    rows = [("ACT", None), ("- attentive conv.", "no_attentive_conv"), ("- multi-head", "single_head"),
            ("- global rep.", "no_global_rep"), ("- position embed.", "no_position")]
    return [Cell(suite="act_ablation", table="ACT Table 3 (ablation, dev accuracy)", setting=s,
                 data="ag_news_mini", model="act", variant=v, paper=ACT_TABLE3_YELPF_DEV[s], column="dev",
                 paper_note="Yelp F. dev", metric_split="dev", epochs=5, train=dict(ACT_TRAIN),
                 gaps=("paper: Yelp F. dev (5-way reviews), ours: ag_news_mini dev - compare the drops from "
                       "the ACT row, not the levels",
                       "50-d GloVe projected to d_w = 300", GAP_ACT_OPT))
            for s, v in rows]


# SemEval-2010 Task 8 (relation classification), the ACT paper's relation-extraction settings (preset
# "relation": 1 layer, 6 heads, 40 filters, kernel 3, two 30-d relative-position embeddings). Metric: macro-F1
# over the 18 directed relations without Other. The paper's SemEval column (its relation-extraction table) is
# unreadable in our copy of the paper, so there is no figure to put beside ours: `paper` stays None.
SEMEVAL_TRAIN = {"optimizer": "adam", "lr": 1e-3, "batch_size": 50, "patience": 3, "clip_norm": 5.0}
GAP_SEMEVAL_PAPER = "the ACT paper's SemEval-2010 column is unreadable in our copy of the paper: no figure to compare"


def _act_semeval() -> list[Cell]:
    # the tags are tokens ACT reads (markers_as_words, default), so they also tell it where the entities are;
    # the "tags masked out" rows leave the relative positions as the only entity information
    hidden = {"markers_as_words": False}
    rows = [("ACT", "act", "relation", None, {}),
            ("ACT - position embed.", "act", "relation", "no_position", {}),
            ("Transformer", "transformer", "relation", None, {}),
            ("ACT, tags masked out", "act", "relation", None, hidden),
            ("ACT - position embed., tags masked out", "act", "relation", "no_position", hidden)]
    return [Cell(suite="act_semeval", table="ACT relation extraction (SemEval-2010 Task 8, macro-F1)", setting=s,
                 data="semeval2010", model=m, preset=p, variant=v, overrides=dict(o), paper=None,
                 column="SemEval-2010",
                 paper_note=GAP_SEMEVAL_PAPER, metric="macro_f1", runs=3, epochs=15, train=dict(SEMEVAL_TRAIN),
                 gaps=(GAP_SEMEVAL_PAPER, "50-d GloVe projected to d_w = 300 (paper: 300-d GloVe)",
                       "Adam 1e-3, early stopping on dev accuracy (paper: SGD 0.01, momentum 0.9)"))
            for s, m, p, v, o in rows]


def _hcan_imdb() -> list[Cell]:
    note = "the HCAN paper reports Yelp'16 / Amazon / PubMed, not IMDB: no figure to compare"
    common = dict(suite="hcan_imdb", table="HCAN vs CAN (IMDB)", data="imdb", column="IMDB", epochs=5,
                  train={"optimizer": "adam", "lr": 2e-4, "batch_size": 32, "patience": 2})
    return [Cell(setting="HCAN", model="hcan", gaps=(note, "lr 2e-4 (paper 2e-5) for few CPU epochs",
                                                     "50-d GloVe (paper: 512-d word2vec)"), **common),
            Cell(setting="CAN (flat)", model="can", gaps=(note, "lr 2e-4 (paper 2e-5) for few CPU epochs",
                                                         "50-d GloVe (paper: 512-d word2vec)"), **common)]


def _hcan_imdb_medium() -> list[Cell]:
    note = "the HCAN paper reports Yelp'16 / Amazon / PubMed, not IMDB: no figure to compare"
    cut = ("8,000 training reviews (of 22,500), 8,000 of the 25,000 test reviews; HCAN: 20 sentences x 40 words, "
           "CAN and CNN: 400 tokens")
    common = dict(suite="hcan_imdb_medium", table="HCAN vs CAN vs CNN (IMDB, medium: 8,000 reviews)", data="imdb",
                  column="IMDB", epochs=4, limit=8000,
                  train={"optimizer": "adam", "lr": 1e-3, "batch_size": 32, "patience": 2})
    conv = {"d_model": 96, "n_heads": 4, "dropout": 0.2,       # = the shipped hcan-imdb / can-imdb
            "target_scale": "fixed", "target_scale_value": 2.0}
    return [Cell(setting="HCAN", model="hcan", overrides={**conv, "target_scale_value": 1.75},
                 tokenizer={"max_sentences": 20, "max_words": 40},
                 gaps=(note, cut, "d 96, 4 heads (paper: 512, 8)", "50-d GloVe (paper: 512-d word2vec)"), **common),
            Cell(setting="CAN (flat)", model="can", overrides=dict(conv), tokenizer={"max_len": 400},
                 gaps=(note, cut, "d 96, 4 heads (paper: 512, 8)", "50-d GloVe (paper: 512-d word2vec)"), **common),
            Cell(setting="CNN", model="kim_cnn", tokenizer={"max_len": 400},
                 gaps=(note, cut, "Kim CNN windows 3/4/5, 100 filters each", "50-d GloVe"), **common)]


# The full benchmarks, for a machine with GPUs (`python -m textcls reproduce --suite act_full --device cuda`, or
# under torchrun): the hub data sets through the memory-mapped Arrow path, the ACT paper's own optimiser (SGD
# 0.01, momentum 0.9, x0.9 after 10 epochs without dev gain, batches of 100) and its 5-run averages.
ACT_FULL_TRAIN = {"optimizer": "sgd", "lr": 0.01, "momentum": 0.9, "lr_decay": 0.9, "lr_decay_patience": 10,
                  "batch_size": 100, "patience": 20, "clip_norm": 5.0, "amp": "auto"}
ACT_FULL_DATA = (("ag_news", "AG News", "hf:fancyzhx/ag_news", "text"),
                 ("dbpedia", "DBpedia", "hf:fancyzhx/dbpedia_14", "content"),
                 ("yelp_f", "Yelp F.", "hf:Yelp/yelp_review_full", "text"))


def _act_full() -> list[Cell]:
    cells = []
    for data, col, source, tcol in ACT_FULL_DATA:
        for setting, model, preset in (("ACT", "act", None), ("Transformer", "transformer", "act_baseline")):
            cells.append(Cell(
                suite="act_full", table="ACT Table 2 (full benchmarks)", setting=setting, data=data, model=model,
                preset=preset, paper=ACT_TABLE2_FULL[(model, data)], column=col, runs=5, epochs=60,
                train=dict(ACT_FULL_TRAIN), source=source, text_column=tcol, needs_gpu=True,
                tokenizer={"max_len": 400},
                gaps=("50-d GloVe projected to d_w = 300 (paper: 300-d GloVe)",
                      "dev = 10% of the training set (the benchmark has none)",
                      "mixed precision (--amp auto) on CUDA")))
    return cells


def _hcan_yelp() -> list[Cell]:
    gap = ("paper: Yelp'16 (Yelp Dataset Challenge 2016); ours: Yelp F. (Yelp/yelp_review_full, 650k reviews, "
           "5 classes) - the nearest public hub set, not the same data")
    train = {"optimizer": "adam", "lr": 2e-5, "batch_size": 64, "patience": 3, "amp": "auto"}
    common = dict(suite="hcan_yelp", table="HCAN on Yelp (full)", data="yelp_f", column="Yelp'16",
                  source="hf:Yelp/yelp_review_full", needs_gpu=True, epochs=30, train=train)
    return [Cell(setting="HCAN", model="hcan", paper=HCAN_YELP16["HCAN"],
                 gaps=(gap, "50-d GloVe (paper: 512-d word2vec)"), **common),
            Cell(setting="CNN", model="kim_cnn", paper=HCAN_YELP16["CNN"],
                 gaps=(gap, "Kim CNN windows 3/4/5 (the HCAN paper's CNN baseline)"), **common)]


def _smoke() -> list[Cell]:
    gaps = ("SMOKE TEST: the small preset, random embeddings - checks the pipeline, reproduces nothing",)
    return [Cell(suite="smoke", table="Smoke test (not a reproduction)", setting=s, data="trec", model=m,
                 preset="small", overrides={"embedding_mode": "rand"}, embeddings="random", paper=p, column="TREC",
                 epochs=1, train={"batch_size": 50}, gaps=gaps)
            for s, m, p in (("CNN-rand", "kim_cnn", AGCNN_TABLE3["CNN-rand"][5]),
                            ("AGCNN-NLReLU-rand", "agcnn", AGCNN_TABLE3["AGCNN-NLReLU-rand"][5]))]


SUITES: dict[str, tuple[str, Callable[[], list[Cell]]]] = {
    "agcnn_t3": ("AGCNN Table 3: Kim CNN and AGCNN, rand/static/non-static, on MR, Subj, SST-1, SST-2, TREC",
                 _agcnn_t3),
    "agcnn_t5": ("AGCNN Table 5: AGCNN-static per activation function, on TREC", _agcnn_t5),
    "matton_sst5": ("Matton: word-level Transformer on SST-5, cls / max / decoder pooling", _matton_sst5),
    "lama_imdb": ("LAMA Table 3: LAMA, LAMA + Ctx and CNN on IMDB", _lama_imdb),
    "act_mini": ("ACT vs Transformer on the MINI AG News / DBpedia sets (not the benchmarks)", _act_mini),
    "act_ablation": ("ACT Table 3: ablations, dev accuracy on ag_news_mini", _act_ablation),
    "hcan_imdb": ("HCAN vs CAN on IMDB", _hcan_imdb),
    "matton_sst5_medium": ("Matton's pooling comparison at medium scale: the small preset on all of SST-5's "
                           "training sentences, 3 runs each", _matton_sst5_medium),
    "hcan_imdb_medium": ("HCAN vs CAN vs a CNN at medium scale: 8,000 IMDB reviews cut to 20 x 40", _hcan_imdb_medium),
    "act_semeval": ("ACT and the Transformer on SemEval-2010 Task 8 (relation settings, macro-F1 without Other), "
                    "and ACT without position embeddings", _act_semeval),
    "act_full": ("ACT vs Transformer on the full AG News / DBpedia / Yelp F. benchmarks (GPU: hours per run)",
                 _act_full),
    "hcan_yelp": ("HCAN and CNN on full Yelp F. (GPU: hours per run)", _hcan_yelp),
    "smoke": ("two tiny models on TREC, 1 epoch: a pipeline check, not a reproduction", _smoke),
}
# Why a default suite has cells without runs, and what running them would take here (results.md prints it)
# (measured 2026-11-23: one epoch on a 200-text slice, 1 torch thread, load average ~5 on the 2 cores, scaled
# to the full training set; a quiet machine would be perhaps 2-3x faster)
NOT_RUN_NOTES: dict[str, str] = {
    "matton_sst5": "the full scale: estimated ~17 h here (one epoch on 200 texts: cls 43 s, decoder 61 s -> ~30 "
                   "min (cls, max) and ~45 min (decoder, 41 M parameters) per epoch on SST-5's 8,544, 10 epochs "
                   "each) - does not fit; the decoder cell also needs --max-parameters 50000000 (default limit "
                   "20 M); a GPU runs it (`--device cuda`). Here: `matton_sst5_medium`",
    "hcan_imdb": "the full scale: estimated ~50 h here (HCAN 191 s, CAN 123 s per epoch on 200 reviews -> ~6 h "
                 "and ~4 h per epoch on IMDB's 22,500, 5 epochs each) - does not fit; a GPU run (--device cuda) "
                 "is the way. Here: `hcan_imdb_medium`",
    "matton_sst5_medium": "estimated ~1 h on a quiet 2-core CPU (9 runs of the small preset on SST-5's 8,544 "
                          "sentences)",
    "hcan_imdb_medium": "estimated ~1 h on a quiet 2-core CPU (the shipped hcan-imdb took 19 min, can-imdb 28 min "
                        "with this recipe; the CNN a few minutes); the shipped checkpoints hcan-imdb (87.7 %) and "
                        "can-imdb (87.2 %) were trained with these settings, one run each, and tested on all 25,000 "
                        "test reviews (docs/checkpoints.md)",
}
GPU_SUITES = ("act_full", "hcan_yelp")       # defined, run only when asked for (--suite): they need GPUs
DEFAULT_SUITES = tuple(s for s in SUITES if s != "smoke" and s not in GPU_SUITES)


def all_cells(suites: Iterable[str] | None = None) -> list[Cell]:
    """Every cell of the suites (default: all but smoke), in suite order; an unknown suite is a ValueError."""
    names = list(DEFAULT_SUITES if suites is None else suites)
    unknown = [s for s in names if s not in SUITES]
    if unknown:
        raise ValueError(f"unknown suite(s) {unknown}; known: {', '.join(SUITES)}")
    cells: list[Cell] = []
    for s in names:
        cells += SUITES[s][1]()
    return cells


def select_cells(suites: Iterable[str] | None = None, *, data: Iterable[str] | None = None,
                 models: Iterable[str] | None = None, only: Iterable[str] | None = None) -> list[Cell]:
    """Cells of the suites, kept when their data set is in `data`, their model in `models`, and their key
    matches one of the `only` glob patterns (e.g. "agcnn_t3/cnn-non-static/*")."""
    cells = all_cells(suites)
    if data:
        data = set(data)
        cells = [c for c in cells if c.data in data]
    if models:
        models = set(models)
        cells = [c for c in cells if c.model in models]
    if only:
        pats = list(only)
        cells = [c for c in cells if any(fnmatch.fnmatchcase(c.key, p) for p in pats)]
    return cells
