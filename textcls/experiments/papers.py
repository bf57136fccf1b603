"""The papers' reported numbers that textcls compares itself with (transcribed from docs/figures.md):
plain constants, no torch - used by the benchmarks, the reproduction cells and the Benchmarks page."""
from __future__ import annotations

# ACT paper, Table 5 (Yelp F., batch of 100, NVIDIA Tesla P40 GPU)
ACT_T5_PAPER = {"act": {"parameters": 1.49e6, "seconds_per_batch": 0.07},
                "transformer": {"parameters": 3.38e6, "seconds_per_batch": 0.19}}
ACT_T5_PAPER_RATIO = 0.19 / 0.07          # 2.7x "faster inference speed"
ACT_T5_PAPER_PARAMETER_RATIO = 3.38 / 1.49

# AGCNN paper, Table 3: accuracy (%) per row, in the order of AGCNN_COLUMNS
AGCNN_COLUMNS = ("CR", "MR", "Subj", "SST-1", "SST-2", "TREC")
AGCNN_TABLE3: dict[str, tuple[float, ...]] = {
    "CNN-rand": (79.8, 76.1, 89.6, 45.0, 82.7, 91.2),
    "CNN-static": (84.7, 81.0, 93.0, 45.5, 86.8, 92.8),
    "CNN-non-static": (84.3, 81.5, 93.4, 48.0, 87.2, 93.6),
    "AGCNN-SELU-rand": (82.3, 78.3, 91.8, 44.7, 83.7, 92.9),
    "AGCNN-SELU-static": (86.4, 81.7, 93.9, 48.3, 87.1, 94.3),
    "AGCNN-SELU-non-static": (85.8, 81.6, 94.1, 49.2, 87.2, 94.5),
    "AGCNN-NLReLU-rand": (82.1, 78.3, 91.6, 44.4, 83.5, 92.5),
    "AGCNN-NLReLU-static": (86.2, 81.6, 93.8, 48.0, 87.2, 94.3),
    "AGCNN-NLReLU-non-static": (85.0, 81.3, 93.9, 49.6, 87.3, 94.9),
}
# AGCNN paper, Table 5: AGCNN-static per activation function, accuracy (%) in the order of AGCNN_COLUMNS
# (PReLU, learned, is not offered by the models: base.ACTIVATIONS holds fixed functions only)
AGCNN_TABLE5: dict[str, tuple[float, ...]] = {
    "relu": (85.8, 81.4, 93.7, 47.7, 86.5, 94.5), "softplus": (85.7, 81.2, 93.5, 47.4, 86.2, 94.3),
    "sigmoid": (85.5, 81.2, 93.1, 47.4, 85.2, 93.8), "elu": (86.0, 81.7, 93.7, 47.9, 86.6, 94.2),
    "prelu": (85.7, 81.5, 93.4, 47.5, 86.6, 94.1), "leaky_relu": (85.9, 81.5, 93.5, 47.4, 86.5, 94.1),
    "nlrelu": (85.8, 81.6, 93.8, 48.0, 87.2, 94.3), "selu": (86.4, 81.7, 93.9, 48.3, 87.1, 94.3),
}
# Matton: word-level Transformer on SST-5, per pooling
MATTON_SST5 = {"decoder": 42.7, "cls": 40.5, "max": 32.7}
# LAMA paper, Table 3 (IMDB)
LAMA_IMDB = {"LAMA": 89.5, "LAMA + Ctx": 90.0, "CNN": 87.4, "BiGRU": 87.6, "Transformer encoder": 81.7}
# ACT paper, Table 2 (the full AG News / DBpedia benchmarks; the mini sets stand in for them)
ACT_TABLE2 = {("act", "ag_news_mini"): 94.25, ("act", "dbpedia_mini"): 99.19,
              ("transformer", "ag_news_mini"): 93.89, ("transformer", "dbpedia_mini"): 98.98}
# ACT paper, Table 3: the ablations, Yelp F. dev accuracy
ACT_TABLE3_YELPF_DEV = {"ACT": 68.3, "- attentive conv.": 67.1, "- multi-head": 67.0, "- global rep.": 67.6,
                        "- position embed.": 67.4}

# The full benchmarks (the ACT paper's Table 2 / docs/models.md "Reported"): ACT and its Transformer baseline, test %
ACT_TABLE2_FULL = {("act", "ag_news"): 94.25, ("act", "dbpedia"): 99.19, ("act", "yelp_f"): 68.16,
                   ("transformer", "ag_news"): 93.89, ("transformer", "dbpedia"): 98.98,
                   ("transformer", "yelp_f"): 65.34}
# HCAN paper: Yelp'16 test accuracy (%), HCAN and its CNN baseline
HCAN_YELP16 = {"HCAN": 76.51, "CNN": 74.44}
