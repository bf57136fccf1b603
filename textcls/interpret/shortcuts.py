"""The planted-shortcut test of explanation methods (Bastings, Ebert, Zablotskaia, Sandholm & Filippova, "Will you
find these shortcuts? A protocol for evaluating the faithfulness of input salience methods for text
classification", EMNLP 2022): the one faithfulness check whose answer is known.

The protocol, as the paper's simplest ("single token") shortcut:
1. Plant. A made-up word that occurs nowhere in the data (default the paper's pair: `zeroa` stands for class 0,
   `onea` for class 1) is inserted at a uniformly random word position into a chosen share (default 20 %) of
   the training texts, and each of those texts is *relabelled* to the class its word stands for (the paper's
   variant: the label follows the token, so the token alone decides it; it is not merely inserted into texts of
   one class, where it would be redundant with their content). With several words, each planted text gets one,
   drawn at random. Dev is planted the same way (its own random stream); the test split is kept as it is, and
   beside it a planted copy of the test texts: every text carries one token (drawn the same way), with the same
   text without it as the control. Exactly round(share x rows) texts are planted; everything is deterministic
   given the seed (`make_planted`).
2. Train on the planted training set (textcls.train; the CLI `python -m textcls shortcuts` does it).
3. Verify that the model learned the shortcut: the accuracy on the planted test texts against the token's
   class (the relabelled gold, `accuracy_with_token`) is compared with the accuracy on the same texts without
   the token against their own labels (`accuracy_without_token`) and with the share of those texts the model
   gives the token's class anyway (`base_rate_without_token`: a model that ignores the token, or says one class
   for everything, scores as much with the token). `learned` holds when it is at least LEARNED_MARGIN above
   both; otherwise every rank below says little and the report says so in one line.
4. Ask every explanation method for its ranking of the words of the planted test texts that the model assigns
   to the token's class (it followed the shortcut: there the token is known to be the model's reason), and
   record the rank of the planted token (1 = first). The salience is taken for that class (the predicted one,
   as in the paper, which also scores the shortcut class): a signed method (IG, gradient x input, occlusion,
   Shapley, LIME, DecompX) ranks by its signed weight, the evidence *for* the class, so a token weighted
   strongly against it is not "found"; `shortcut_top1_abs` / `shortcut_mean_rank_abs` rank by magnitude too.
   Unsigned methods (attention, saliency, leave-one-out, the context-mixing norms, random) give the same both ways.
   With one planted token per text the paper's precision@k (k = the number of shortcut tokens) is `shortcut_top1`.
   Ties share the mean of their ranks, so a token tied for first is not counted as first. The random ranking is
   the chance level (its expected top-1 share is the mean of 1 / words, `chance_top1`). `n_flipped` /
   `shortcut_top1_flipped`: the texts whose prediction the token changed (without it the model says otherwise),
   the strictest known answer.

Nothing here imports torch at module level: the pages read `load_results` and `results_table` without it.
"""
from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

DEFAULT_TOKENS = ("zeroa", "onea")       # the paper's made-up words: zeroa -> class 0, onea -> class 1
DEFAULT_SHARE = 0.2
LEARNED_MARGIN = 0.10                    # accuracy with the token at least this far above without it
TOKEN_RE = re.compile(r"^[a-z][a-z0-9]{2,31}$")
PAPER = ("Bastings et al. (EMNLP 2022), \"Will you find these shortcuts? A protocol for evaluating the "
         "faithfulness of input salience methods for text classification\"")


# ---------------------------------------------------------------- planting


@dataclass
class PlantedTest:
    """The planted test texts and their controls (the same texts without the token)."""

    texts: list[str]                     # each with one planted token
    controls: list[str]                  # the same texts without it
    positions: list[int]                 # the token's word index (whitespace words) in texts[i]
    token_labels: list[int]              # the class the planted token stands for
    gold: list[int]                      # the text's own label


@dataclass
class PlantedData:
    """A data set with a planted shortcut: `bundle` (train and dev planted, test as it was) and `test`."""

    bundle: Any                          # textcls.data.datasets.DataBundle
    test: PlantedTest
    tokens: dict[int, str]               # class index -> its token
    share: float
    seed: int
    planted_train: list[int] = field(default_factory=list)   # indices of the planted training rows
    planted_dev: list[int] = field(default_factory=list)

    @property
    def token(self) -> str:
        """The tokens as one string ("zeroa,onea"), in class order."""
        return ",".join(self.tokens[c] for c in sorted(self.tokens))

    def settings(self) -> dict[str, Any]:
        labels = list(self.bundle.labels)
        return {"data": self.bundle.name, "token": self.token, "share": self.share, "seed": self.seed,
                "token_classes": {t: labels[c] for c, t in sorted(self.tokens.items())},
                "train_rows": len(self.bundle.splits["train"]), "train_planted": len(self.planted_train)}


def check_share(share: float) -> float:
    """`share` when it is a number above 0 and below 1, else ValueError."""
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not math.isfinite(share) \
            or not 0 < share < 1:
        raise ValueError(f"share must be a number above 0 and below 1 (0.2 = 20 % of the training texts), "
                         f"got {share!r}")
    return float(share)


def parse_tokens(tokens: str | Sequence[str] | Mapping[int, str], labels: Sequence[str],
                 label: int | str | None = None) -> dict[int, str]:
    """The planted words by class: "zeroa,onea" or a sequence (one word per class, in class order), one word
    (it stands for `label`: a class index or name, default class 0), or a mapping {class: word}. A word is
    lower case letters and digits, 3-32 characters, starting with a letter, and different from the others.
    ValueError otherwise."""
    labels = [str(x) for x in labels]
    if isinstance(tokens, Mapping):
        out = {int(k): str(v) for k, v in tokens.items()}
    else:
        words = [w.strip() for w in (tokens.split(",") if isinstance(tokens, str) else tokens)]
        words = [w for w in words if w]
        if len(words) == 1:
            out = {_class_index(label if label is not None else 0, labels): words[0]}
        elif len(words) == len(labels):
            if label is not None:
                raise ValueError("a class (label) is for one token; with one token per class the order says which")
            out = dict(enumerate(words))
        else:
            raise ValueError(f"give one token, or one per class ({len(labels)}: {', '.join(labels)}), "
                             f"got {len(words)}")
    for c, w in out.items():
        if not 0 <= c < len(labels):
            raise ValueError(f"class {c} out of range for {len(labels)} classes")
        if not TOKEN_RE.match(w):
            raise ValueError(f"token {w!r}: one made-up word of lower-case letters and digits (3-32 characters, "
                             "starting with a letter), so every tokenizer keeps it whole")
    if len(set(out.values())) != len(out):
        raise ValueError(f"the tokens must differ: {', '.join(out.values())}")
    return out


def _class_index(label: int | str, labels: Sequence[str]) -> int:
    if isinstance(label, int) or str(label).isdigit():
        c = int(label)
        if not 0 <= c < len(labels):
            raise ValueError(f"class {c} out of range for {len(labels)} classes ({', '.join(labels)})")
        return c
    if str(label) not in labels:
        raise ValueError(f"unknown class {label!r}; the classes: {', '.join(labels)}")
    return list(labels).index(str(label))


def insert_token(text: str, token: str, rng: np.random.Generator) -> tuple[str, int]:
    """`text` with `token` inserted before a uniformly random word (or at the end): (new text, its word index)."""
    words = text.split()
    pos = int(rng.integers(0, len(words) + 1))
    return " ".join(words[:pos] + [token] + words[pos:]), pos


def plant_split(split, tokens: Mapping[int, str], share: float, rng: np.random.Generator):
    """(planted Split, planted row indices): round(share x rows) rows, chosen at random, each get one token
    (drawn at random among `tokens`) at a random position and the token's class as their label."""
    from textcls.data.datasets import Split
    n = len(split.texts)
    k = int(round(share * n))
    chosen = np.sort(rng.choice(n, size=k, replace=False)) if k else np.zeros(0, dtype=int)
    classes = sorted(tokens)
    texts, labels = list(split.texts), list(split.labels)
    for i in chosen.tolist():
        c = classes[int(rng.integers(0, len(classes)))]
        texts[i], _ = insert_token(texts[i], tokens[c], rng)
        labels[i] = c
    return Split(texts, labels), chosen.tolist()


def plant_test(split, tokens: Mapping[int, str], rng: np.random.Generator) -> PlantedTest:
    """Every text of `split` with one token (drawn at random among `tokens`) at a random position; the
    controls are the texts as they were."""
    classes = sorted(tokens)
    texts, positions, token_labels = [], [], []
    for text in split.texts:
        c = classes[int(rng.integers(0, len(classes)))]
        t, pos = insert_token(text, tokens[c], rng)
        texts.append(t)
        positions.append(pos)
        token_labels.append(c)
    return PlantedTest(texts, list(split.texts), positions, token_labels, [int(x) for x in split.labels])


def make_planted(data: Any = "sst2", *, tokens: str | Sequence[str] | Mapping[int, str] = DEFAULT_TOKENS,
                 label: int | str | None = None, share: float = DEFAULT_SHARE, seed: int = 0,
                 train_limit: int | None = None, test_limit: int | None = None, root=None) -> PlantedData:
    """The planted data set of a bundled data set (a name, a path, or a loaded DataBundle): train (at most
    `train_limit` rows, a seeded sample) and dev planted at `share`, test kept, and the planted test texts
    (at most `test_limit`, a seeded sample) with their controls. ValueError for a bad share or token, or a
    token that occurs in the data."""
    import dataclasses

    from textcls.data.datasets import DataBundle, load_data
    share = check_share(share)
    bundle = data if isinstance(data, DataBundle) else load_data(data, root=root, seed=seed)
    labels = list(bundle.labels)
    toks = parse_tokens(tokens, labels, label)
    if "train" not in bundle.splits or not len(bundle.splits["train"].texts):
        raise ValueError(f"{bundle.name}: no training rows to plant a shortcut in")
    used = {w for s in bundle.splits.values() for t in s.texts for w in t.lower().split()}
    present = [w for w in toks.values() if w in used]
    if present:
        raise ValueError(f"{', '.join(present)} occurs in {bundle.name}'s texts; a planted token must be a word "
                         "the data does not have")
    splits = dict(bundle.splits)
    train = splits["train"]
    if train_limit is not None and train_limit < len(train.texts):
        train = train.sample(int(train_limit), seed)
    splits["train"], planted_train = plant_split(train, toks, share, np.random.default_rng([seed, 1]))
    planted_dev: list[int] = []
    if splits.get("dev") is not None and len(splits["dev"].texts):
        splits["dev"], planted_dev = plant_split(splits["dev"], toks, share, np.random.default_rng([seed, 2]))
    test = bundle.splits.get("test") or bundle.splits.get("dev")
    if test is None or not len(test.texts):
        raise ValueError(f"{bundle.name}: no test (or dev) split to plant test texts in")
    if test_limit is not None and test_limit < len(test.texts):
        test = test.sample(int(test_limit), seed)
    planted_test = plant_test(test, toks, np.random.default_rng([seed, 3]))
    return PlantedData(dataclasses.replace(bundle, splits=splits), planted_test, toks, share, seed, planted_train,
                       planted_dev)


# ---------------------------------------------------------------- ranks


def token_rank(scores: Sequence[float], index: int) -> float:
    """The rank (1 = first) of position `index` when `scores` are sorted high to low; ties share the mean of
    their ranks (so a token tied for first has a rank above 1); NaN counts as lowest."""
    s = np.nan_to_num(np.asarray(scores, dtype=np.float64), nan=-np.inf)
    x = s[index]
    greater = int(np.sum(s > x))
    ties = int(np.sum(s == x)) - 1
    return 1.0 + greater + ties / 2.0


def find_token(model_tokens: Sequence[str], word: str, occurrence: int = 0) -> int | None:
    """Index of the `occurrence`-th (0-based) model token equal to `word` (lower-cased), or None when the
    model did not see it (the text was cut, or the tokenizer split the word)."""
    hits = [i for i, t in enumerate(model_tokens) if str(t).lower() == word.lower()]
    return hits[occurrence] if occurrence < len(hits) else None


# ---------------------------------------------------------------- the evaluation


@dataclass
class ShortcutReport:
    """What `evaluate_shortcut` found: one row per method and the summary (accuracies, counts, the verdict)."""

    rows: list[dict[str, Any]]
    summary: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def _accuracy(pred: np.ndarray, gold: Sequence[int] | None) -> float | None:
    if gold is None or not len(pred):
        return None
    return float(np.mean(pred == np.asarray(gold)))


def evaluate_shortcut(predictor, texts_with_token: Sequence[str], token_positions: Sequence[int],
                      methods: Sequence[str] | None = None, *, token_labels: Sequence[int] | None = None,
                      controls: Sequence[str] | None = None, gold: Sequence[int] | None = None,
                      baseline: str = "pad", n_steps: int = 50, removal: str = "delete", seed: int = 0,
                      progress: Callable[[str, int, int], None] | None = None) -> ShortcutReport:
    """Rank of the planted token under every explanation method (module docstring, step 4).

    predictor: a Predictor (or a model with its tokenizer: `interpret.sources.as_source`).
    texts_with_token / token_positions: each text and the word index (whitespace words) of its planted token.
    methods: registered names (default: every method that applies to the model, random included as the
      chance level); one that does not apply is skipped with a note.
    token_labels: the class each token stands for (default: the predicted class, and no accuracies).
    controls / gold: the same texts without the token and their own labels (for the accuracy without the token
      and `n_flipped`).
    progress(method, done, total) is called after each method."""
    from textcls.interpret.batched import importances
    from textcls.interpret.methods import REGISTRY, canonical, methods_for
    from textcls.interpret.probabilities import prob_fn, score
    from textcls.interpret.sources import as_source

    texts = list(texts_with_token)
    if len(token_positions) != len(texts):
        raise ValueError(f"{len(token_positions)} token positions for {len(texts)} texts")
    for name, seq in (("token_labels", token_labels), ("controls", controls), ("gold", gold)):
        if seq is not None and len(seq) != len(texts):
            raise ValueError(f"{len(seq)} {name} for {len(texts)} texts")
    src = as_source(predictor)
    model, labels = src.model, src.labels
    notes: list[str] = []
    wanted = methods_for(model, reference=True) if methods is None else [canonical(m) for m in methods]
    run = []
    for m in dict.fromkeys(wanted):
        why = REGISTRY[m].applies(model)
        if why is None:
            run.append(m)
        else:
            notes.append(f"{m} skipped: it does not apply to this model ({why})")

    insts = src.instances(texts) if texts else []
    fn = prob_fn(model)
    pred_with = score(fn, insts).argmax(1) if insts else np.zeros(0, dtype=int)
    pred_without = None
    if controls is not None and texts:
        pred_without = score(fn, src.instances(list(controls))).argmax(1)
    target = np.asarray(token_labels if token_labels is not None else pred_with, dtype=int)

    where: list[int | None] = []
    for text, pos, inst in zip(texts, token_positions, insts):
        words = text.split()
        if not 0 <= int(pos) < len(words):
            raise ValueError(f"token position {pos} outside the {len(words)} words of {text[:60]!r}")
        word = words[int(pos)]
        before = sum(1 for w in words[:int(pos)] if w.lower() == word.lower())
        where.append(find_token(inst.tokens or [], word, before))
    located = np.array([w is not None for w in where], dtype=bool)
    if (~located).any():
        notes.append(f"{int((~located).sum())} of {len(texts)} texts left out: the model did not see the token "
                     "as one word (text cut at the model's length, or the word split)")
    followed = located & (pred_with == target)
    flipped = followed & (pred_without != target) if pred_without is not None else np.zeros(len(texts), bool)
    idx = np.flatnonzero(followed)

    acc_with = _accuracy(pred_with, token_labels)
    acc_without = _accuracy(pred_without, gold) if pred_without is not None else None
    base_rate = (float(np.mean(pred_without[located] == target[located]))
                 if pred_without is not None and token_labels is not None and located.any() else None)
    learned = (None if acc_with is None or acc_without is None or base_rate is None
               else bool(acc_with >= max(acc_without, base_rate) + LEARNED_MARGIN))
    lengths = np.array([insts[i].n for i in idx], dtype=np.float64)
    summary: dict[str, Any] = {
        "n_planted": len(texts), "n": int(idx.size), "n_flipped": int(flipped.sum()),
        "accuracy_with_token": acc_with, "accuracy_without_token": acc_without,
        "base_rate_without_token": base_rate,
        "learned": learned,
        "chance_top1": float(np.mean(1.0 / lengths)) if lengths.size else None,
        "chance_mean_rank": float(np.mean((lengths + 1) / 2)) if lengths.size else None,
        "mean_words": float(lengths.mean()) if lengths.size else None,
    }
    if learned is False:
        notes.insert(0, f"the model did not learn the shortcut: accuracy {acc_with:.3f} with the token against "
                        f"{acc_without:.3f} without it, and {base_rate:.3f} of the texts get the token's class even "
                        f"without it (needs +{LEARNED_MARGIN:.2f} over both), so its ranks say little")

    rows = []
    for k, m in enumerate(run):
        t0 = time.perf_counter()
        ranks = np.zeros(idx.size)
        ranks_abs = np.zeros(idx.size)
        for c in np.unique(target[idx]) if idx.size else []:
            group = idx[target[idx] == c]
            got = importances(model, [insts[i] for i in group], m, baseline=baseline, n_steps=n_steps,
                              seed=seed, labels=labels, removal=removal, target=int(c))
            for g, a in zip(group, got):
                s = np.asarray(getattr(a, "scores", a), dtype=np.float64)
                j = int(np.flatnonzero(idx == g)[0])
                ranks[j] = token_rank(s, where[g])
                ranks_abs[j] = token_rank(np.abs(s), where[g])
        fl = flipped[idx]
        meth = REGISTRY[m]
        rows.append({
            "method": m, "method_label": meth.label, "method_kind": meth.kind, "signed": meth.signed,
            "n": int(idx.size),
            "shortcut_top1": float(np.mean(ranks == 1.0)) if idx.size else None,
            "shortcut_mean_rank": float(ranks.mean()) if idx.size else None,
            "shortcut_top1_abs": float(np.mean(ranks_abs == 1.0)) if idx.size else None,
            "shortcut_mean_rank_abs": float(ranks_abs.mean()) if idx.size else None,
            "n_flipped": int(fl.sum()),
            "shortcut_top1_flipped": float(np.mean(ranks[fl] == 1.0)) if fl.any() else None,
            "seconds": round(time.perf_counter() - t0, 3)})
        if progress is not None:
            progress(m, k + 1, len(run))
    return ShortcutReport(rows, summary, notes)


def evaluate_planted(predictor, planted: PlantedData | PlantedTest, methods: Sequence[str] | None = None,
                     **kw) -> ShortcutReport:
    """`evaluate_shortcut` on a planted test set (with its controls and gold labels)."""
    t = planted.test if isinstance(planted, PlantedData) else planted
    return evaluate_shortcut(predictor, t.texts, t.positions, methods, token_labels=t.token_labels,
                             controls=t.controls, gold=t.gold, **kw)


# ---------------------------------------------------------------- results files (no torch)

ROW_KEYS = ("checkpoint", "model", "method", "shortcut_top1", "shortcut_mean_rank", "n", "share", "token",
            "accuracy_with_token", "accuracy_without_token")


def append_results(path: str | Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    """Append rows to a JSON-lines file (one object a line, NaN written as null), creating its folder."""
    path = Path(path).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(_plain(dict(r)), allow_nan=False) + "\n" for r in rows)
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)
    return path


def _plain(v):
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def load_results(path: str | Path) -> list[dict]:
    """The rows of a shortcuts results file (JSON lines; blank lines skipped). ValueError naming the line of a
    row that is not a JSON object."""
    rows = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}, line {n}: not JSON ({e.msg})") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}, line {n}: a JSON object expected")
        rows.append(row)
    return rows


def _fmt(v, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


RANKINGS = {"signed": ("shortcut_top1", "shortcut_mean_rank"),
            "abs": ("shortcut_top1_abs", "shortcut_mean_rank_abs"),
            "flipped": ("shortcut_top1_flipped", None)}


def results_table(rows: Sequence[Mapping[str, Any]], *, ranking: str = "signed",
                  methods: Sequence[str] | None = None, facts: bool = True) -> str:
    """A Markdown table from results rows: one line per method (the registry's order; `methods` picks some), one
    column per model, each cell "top-1 share (mean rank)"; then (`facts`) per model n, words per text, the
    chance level, the accuracies with / without the token and whether it learned the shortcut. The last row of
    a (model, method) pair wins. `ranking`: "signed" (the default), "abs" (by magnitude: differs for signed
    methods only) or "flipped" (the top-1 share on the texts the token flipped; facts: their number)."""
    from textcls.interpret.methods import names
    if ranking not in RANKINGS:
        raise ValueError(f"ranking {ranking!r}: choose one of {', '.join(RANKINGS)}")
    cell: dict[tuple[str, str], Mapping[str, Any]] = {}
    models: list[str] = []
    seen: list[str] = []
    for r in rows:
        name = str(r.get("model") or r.get("checkpoint"))
        if name not in models:
            models.append(name)
        if r["method"] not in seen:
            seen.append(r["method"])
        cell[(name, r["method"])] = r
    order = [m for m in names() if m in seen] + [m for m in seen if m not in names()]
    methods = [m for m in order if methods is None or m in methods]
    top, rank = RANKINGS[ranking]
    out = ["| method | " + " | ".join(models) + " |", "|---|" + "---:|" * len(models)]
    for m in methods:
        cells = []
        for name in models:
            r = cell.get((name, m))
            text = "" if r is None else _fmt(r.get(top), 3)
            cells.append(text if r is None or rank is None else f"{text} ({_fmt(r.get(rank), 2)})")
        out.append(f"| {m} | " + " | ".join(cells) + " |")
    if not facts:
        return "\n".join(out)
    first = {name: next(r for (nm, _), r in cell.items() if nm == name) for name in models}
    facts_rows = ((("n_flipped", "n (texts flipped by the token)", None),) if ranking == "flipped" else (
        ("n", "n (texts scored)", None), ("mean_words", "words per text", 1), ("chance_top1", "chance top-1", 3),
        ("accuracy_with_token", "accuracy with the token (its class)", 3),
        ("accuracy_without_token", "accuracy without it (own labels)", 3),
        ("base_rate_without_token", "token's class without it", 3)))
    for key, what, digits in facts_rows:
        vals = [first[n].get(key) for n in models]
        out.append(f"| *{what}* | " + " | ".join("-" if v is None else (str(v) if digits is None else
                                                                         _fmt(v, digits)) for v in vals) + " |")
    if ranking != "flipped":
        out.append("| *learned* | " + " | ".join({True: "yes", False: "**no**"}.get(first[n].get("learned"), "-")
                                                 for n in models) + " |")
    return "\n".join(out)


__all__ = ["DEFAULT_SHARE", "DEFAULT_TOKENS", "LEARNED_MARGIN", "PAPER", "PlantedData", "PlantedTest", "RANKINGS",
           "ROW_KEYS", "ShortcutReport", "append_results", "check_share", "evaluate_planted", "evaluate_shortcut",
           "find_token", "insert_token", "load_results", "make_planted", "parse_tokens", "plant_split", "plant_test",
           "results_table", "token_rank"]
