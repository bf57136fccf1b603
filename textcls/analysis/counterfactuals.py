"""Generated counterfactuals over one text or many, and how often they flip each model's decision.

Generators (`GENERATORS`, a registry: `@register_generator` adds one); each gives at most one edited text per input (None: it found nothing to change):
- `word_replacer`: the user's rules, "good -> bad, great -> awful" (whole words, case-insensitive; every
  matching rule is applied);
- `negation`: removes the negations when there are any ("not good" -> "good", "is n't" / "isn't" -> "is");
  otherwise inserts "not" after the first auxiliary verb ("is good" -> "is not good"; 's only where it reads
  "is": "it 's"), or, without one, before a text that opens with a content word ("good" -> "not good"). Any
  other text gets no edit (an inserted "not" inside a clause without an auxiliary is ungrammatical: "the not
  movie exists"), so every counted edit is a sentence a person could have written;
- `scrambler`: the words in a seeded random order;
- `glove`: the most important word - by the shared per-token importance, the model's own attention / max-pool
  picks (`interpret.attention.attention_importance`) - replaced by its nearest GloVe neighbour (cosine, among
  the 50,000 most frequent GloVe words that the model's vocabulary knows);
- `hotflip` (Ebrahimi et al. 2018): the single token swap that most lowers the predicted class. The gradient of
  log p(predicted class) with respect to the embeddings ranks every (position, vocabulary word) swap by its
  first-order change (e_w - e_x) . grad; the best `HOTFLIP_CHECK` are then run exactly and the one that lowers
  the probability most is kept;
- `ablation_flip`: the smallest set of deleted words that flips the decision, searched greedily: words ranked by
  leave-one-out drop of the predicted class's probability, then the top 1, 2, ... `max_delete` deleted together
  until the label changes (the largest set tried is returned when none flips).
The first three do not depend on the model (the same edits for every checkpoint); the last three do. The
model-dependent generators work on the model's tokens (the edited text is those tokens joined by spaces).

Statistics (`flip_report`): n = texts given an edit, flip rate = share of those whose predicted label changed,
mean probability change = mean over them of p_edit(original label) - p_original(original label) (negative: the
edit lowered the model's confidence in its decision). Predictions are batched; no model is changed.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from textcls.data.relation import OBJ, SUBJ, entity_roles



@dataclass(frozen=True)
class Generator:
    """One counterfactual generator, registered once under its name (the CLI's choices and the Explore page read
    the registry): `run(texts, predictor, *, rules, seed, max_delete)` gives one Edit or None per text."""
    name: str
    label: str
    needs_model: bool
    help: str
    run: Callable[..., list]


GENERATORS: dict[str, Generator] = {}       # in registration order: the order the CLI and the page list them


def register_generator(name: str, label: str, *, needs_model: bool, help: str):
    """Decorator: enrol a generator function under `name` (once)."""
    def deco(fn):
        if name in GENERATORS:
            raise ValueError(f"counterfactual generator {name!r} registered twice")
        GENERATORS[name] = Generator(name, label, needs_model, help, fn)
        return fn
    return deco
HOTFLIP_CANDIDATES = 20000      # vocabulary ids searched by HotFlip (the most frequent words come first)
HOTFLIP_CHECK = 3               # best first-order swaps per text checked exactly
GLOVE_WORDS = 50000             # GloVe rows searched for neighbours (GloVe is ordered by frequency)
MAX_DELETE = 5
NEGATIONS = {"not", "no", "never", "n't", "nt"}
CONTRACTIONS = {"isn't": "is", "aren't": "are", "wasn't": "was", "weren't": "were", "don't": "do",
                "doesn't": "does", "didn't": "did", "can't": "can", "couldn't": "could", "won't": "will",
                "wouldn't": "would", "shouldn't": "should", "hasn't": "has", "haven't": "have", "hadn't": "had",
                "mustn't": "must", "ain't": "is"}
SPLIT_STEMS = {"ca": "can", "wo": "will", "ai": "is"}          # SST's "ca n't", "wo n't", "ai n't"
AUXILIARIES = {"is", "was", "are", "were", "am", "be", "been", "'s", "'re", "'m", "do", "does", "did", "can",
               "could", "will", "would", "should", "has", "have", "had", "must", "might", "may"}
S_IS = {"it", "that", "he", "she", "there", "here", "what", "who", "this", "where", "how", "everything",
        "nothing", "something"}   # "it 's good": 's is "is" after these (after a noun it is the possessive)
FUNCTION_WORDS = {"a", "an", "the", "this", "that", "these", "those", "it", "its", "i", "you", "he", "she", "we",
                  "they", "his", "her", "their", "my", "our", "your", "and", "or", "but", "so", "of", "in", "on",
                  "at", "to", "for", "with", "as", "by", "from", "there", "here", "what", "which", "who"}
_RULE_SPLIT = re.compile(r"\s*(?:->|→|=>)\s*")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


class CounterfactualError(ValueError):
    """A generator cannot run as asked (unknown name, rules that do not parse, no model); one line."""


@dataclass
class Edit:
    index: int             # position of the original among the texts given
    original: str
    edited: str
    detail: str            # what was changed, in words


# ---------------------------------------------------------------- model-free generators

def parse_rules(text: str) -> list[tuple[str, str]]:
    """"good -> bad, great -> awful" (commas, semicolons or new lines between rules) -> [(good, bad), ...]."""
    rules = []
    for part in re.split(r"[,;\n]", text or ""):
        if not part.strip():
            continue
        bits = _RULE_SPLIT.split(part.strip())
        if len(bits) != 2 or not bits[0].strip():
            raise CounterfactualError(f"cannot read the rule {part.strip()!r}: write it as 'word -> replacement'")
        rules.append((bits[0].strip(), bits[1].strip()))
    if not rules:
        raise CounterfactualError("the word replacer needs at least one rule, e.g. 'good -> bad, great -> awful'")
    return rules


def replace_words(text: str, rules: Sequence[tuple[str, str]]) -> tuple[str, str] | None:
    out, done = text, []
    for old, new in rules:
        rx = re.compile(r"(?<!\w)" + re.escape(old) + r"(?!\w)", re.IGNORECASE)
        out, k = rx.subn(new.replace("\\", r"\\"), out)
        if k:
            done.append(f"{old} -> {new}" + (f" ({k}x)" if k > 1 else ""))
    if not done or out == text:
        return None
    return re.sub(r"\s{2,}", " ", out).strip(), ", ".join(done)


def negate(text: str) -> tuple[str, str] | None:
    """Negation removal when the text has a negation, else insertion (see the module docstring)."""
    words = text.split()
    if not words:
        return None
    low = [w.lower() for w in words]
    out, removed = [], []
    for k, (w, lw) in enumerate(zip(words, low)):
        if lw in CONTRACTIONS:
            out.append(CONTRACTIONS[lw] if w.islower() else CONTRACTIONS[lw].capitalize())
            removed.append(w)
        elif lw in NEGATIONS:
            if lw == "n't" and out and out[-1].lower() in SPLIT_STEMS:
                out[-1] = SPLIT_STEMS[out[-1].lower()]
            removed.append(w)
        else:
            out.append(w)
    if removed:
        return (" ".join(out), "removed " + ", ".join(repr(r) for r in removed)) if out else None
    for k, lw in enumerate(low):
        if lw in AUXILIARIES and (lw != "'s" or (k and low[k - 1] in S_IS)):
            return " ".join(words[:k + 1] + ["not"] + words[k + 1:]), f"inserted 'not' after {words[k]!r}"
    # no auxiliary: "not" goes only in front of a text that opens with a content word ("good" -> "not good"); inside
    # a clause it would need the verb's do-support ("the movie exists" -> "the not movie exists" is no sentence a
    # person writes), so such a text gets no edit and is not counted
    if _WORD.fullmatch(low[0]) and low[0] not in FUNCTION_WORDS:
        return " ".join(["not"] + words), f"inserted 'not' before {words[0]!r}"
    return None


def scramble(text: str, seed: int = 0) -> tuple[str, str] | None:
    words = text.split()
    if len(set(words)) < 2:
        return None
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(words))
    out = [words[i] for i in order]
    if out == words:
        out = words[1:] + words[:1]
    return " ".join(out), "words shuffled"


# ---------------------------------------------------------------- model-dependent generators

def _instances(predictor, texts: Sequence[str]):
    from textcls.interpret import as_source
    return as_source(predictor).instances(list(texts))


def _real_word(token: str) -> bool:
    return bool(_WORD.fullmatch(token)) and token not in ("<pad>", "<unk>", SUBJ, OBJ)


def _roles(tokens: Sequence[str]) -> list[str | None]:
    """Per token: "tag" (an entity tag or a masked entity, never edited), "e1" / "e2" (a word of that entity:
    edited, but never its last word), None (any other word). All None for a text without entity tags."""
    roles = entity_roles(tokens) or [None] * len(tokens)
    return ["tag" if t in (SUBJ, OBJ) else r for t, r in zip(tokens, roles)]


def _deletable(order, roles: Sequence[str | None], k: int) -> list[int]:
    """The first k positions of `order` that may be deleted together: no tag, and each entity keeps a word."""
    left = {e: sum(r == e for r in roles) for e in ("e1", "e2")}
    out: list[int] = []
    for i in order:
        r = roles[i]
        if r == "tag" or (r in left and left[r] <= 1):
            continue
        if r in left:
            left[r] -= 1
        out.append(int(i))
        if len(out) == k:
            break
    return out


def _vocab(predictor):
    vocab = getattr(getattr(predictor, "tokenizer", None), "vocab", None)
    if vocab is None or not hasattr(vocab, "itos"):
        raise CounterfactualError("this checkpoint has no word vocabulary to draw replacement words from")
    return vocab


_GLOVE_CACHE: dict[str, object] = {}


def _glove_table():
    """(words, unit vectors) of the GLOVE_WORDS most frequent GloVe words, cached per process."""
    if "t" not in _GLOVE_CACHE:
        from textcls.data.embeddings import glove_vectors
        words, M = glove_vectors()
        words = list(words[:GLOVE_WORDS])
        V = np.asarray(M[:GLOVE_WORDS], dtype=np.float32)
        V = V / np.maximum(np.linalg.norm(V, axis=1, keepdims=True), 1e-8)
        _GLOVE_CACHE["t"] = (words, {w: i for i, w in enumerate(words) if w is not None}, V)
    return _GLOVE_CACHE["t"]


def _glove_nearest(i: int, n: int = 200) -> list[int]:
    """The n GloVe rows nearest row i (cosine), best first; remembered per row (frequent words repeat)."""
    memo = _GLOVE_CACHE.setdefault("nn", {})
    if i not in memo:
        V = _glove_table()[2]
        sims = V @ V[i]
        top = np.argpartition(-sims, n)[:n]
        memo[i] = top[np.argsort(-sims[top], kind="mergesort")].tolist()
    return memo[i]


def glove_neighbours(word: str, k: int = 5, known: Callable[[str], bool] | None = None) -> list[str]:
    """The k nearest GloVe neighbours of `word` (cosine), alphabetic, not the word itself nor a plural/
    possessive of it, and `known` to the model when given. [] when GloVe does not know the word."""
    words, index, V = _glove_table()
    i = index.get(word.lower())
    if i is None:
        return []
    out = []
    for j in _glove_nearest(i):
        w = words[j]
        if w is None or j == i or not _real_word(w) or w in (word + "s", word + "es", word + "'s") or \
                word in (w + "s", w + "es"):
            continue
        if known is not None and not known(w):
            continue
        out.append(w)
        if len(out) == k:
            break
    return out


def _known(vocab) -> Callable[[str], bool]:
    """Whether the model reads a word as itself: in a textcls vocabulary (not <unk>), or, for a Hugging Face
    encoder's word table, one whole piece of its tokenizer's vocabulary."""
    if hasattr(vocab, "stoi"):
        return lambda w: vocab.stoi.get(w, 1) > 1
    hf = getattr(vocab, "hf", None)
    if hf is not None and hasattr(hf, "get_vocab"):
        pieces = hf.get_vocab()
        return lambda w: w in pieces or w.lower() in pieces
    raise CounterfactualError("this checkpoint has no word vocabulary to check replacement words against")


def glove_substitution(predictor, texts: Sequence[str]) -> list[Edit | None]:
    from textcls.interpret.attention import attention_importance_instances
    known = _known(_vocab(predictor))
    insts = _instances(predictor, texts)
    imps = attention_importance_instances(predictor.model, insts) if insts else []
    out: list[Edit | None] = []
    for b, (text, inst, a) in enumerate(zip(texts, insts, imps)):
        toks = list(inst.tokens or [])
        roles = _roles(toks)
        order = [i for i in np.argsort(-np.asarray(a.scores), kind="mergesort")
                 if _real_word(toks[i]) and roles[i] != "tag"]
        edit = None
        for i in order[:3]:                          # the most important word GloVe knows
            nb = glove_neighbours(toks[i], 1, known=known)
            if nb:
                new = toks[:i] + [nb[0]] + toks[i + 1:]
                edit = Edit(b, text, " ".join(new), f"{toks[i]!r} (most important) -> {nb[0]!r}")
                break
        out.append(edit)
    return out


def _hotflip_batch(predictor, texts, insts, offset: int, cand_ids, cand_emb) -> list[Edit | None]:
    import torch

    from textcls.interpret.embedding_forward import EmbeddingForward
    from textcls.interpret.instances import stack
    model = predictor.model
    itos = _vocab(predictor).itos
    f = EmbeddingForward(model, output="prob")
    ids, mask = stack(insts)
    emb = f.embed(ids).clone().requires_grad_(True)
    probs = f(emb, ids, mask)
    target = probs.detach().argmax(-1)
    torch.log(probs[torch.arange(len(insts)), target].clamp(min=1e-12)).sum().backward()
    grad = emb.grad.detach()
    out: list[Edit | None] = []
    cands: list[tuple[int, str, str]] = []
    for b, inst in enumerate(insts):
        g = grad[b][mask[b]]                                            # (n, E) real positions, token order
        e = emb.detach()[b][mask[b]]
        with torch.no_grad():
            delta = g @ cand_emb.T - (g * e).sum(-1, keepdim=True)      # (n, V): first-order change of log p
        toks = list(inst.tokens or [])
        real = inst.real_ids()
        delta[real[:, None] == cand_ids[None, :]] = float("inf")        # a swap must change the word
        tags = [i for i, r in enumerate(_roles(toks)) if r == "tag"]
        if tags:
            delta[tags] = float("inf")                                  # entity tags stay as they are
        flat = torch.topk(-delta.flatten(), min(HOTFLIP_CHECK, delta.numel())).indices
        for k in flat.tolist():
            i, j = divmod(k, delta.shape[1])
            new = itos[int(cand_ids[j])]
            cands.append((b, " ".join(toks[:i] + [new] + toks[i + 1:]), f"{toks[i]!r} -> {new!r}"))
    if not cands:
        return [None] * len(insts)
    p_new = _probs(predictor, [c[1] for c in cands])
    best: dict[int, tuple[float, int]] = {}
    for n, (b, _, _) in enumerate(cands):
        p = p_new[n, int(target[b])]
        if b not in best or p < best[b][0]:
            best[b] = (p, n)
    for b in range(len(insts)):
        if b in best:
            _, n = best[b]
            out.append(Edit(offset + b, texts[b], cands[n][1], cands[n][2]))
        else:
            out.append(None)
    return out


def hotflip(predictor, texts: Sequence[str], batch_size: int = 64) -> list[Edit | None]:
    import torch

    from textcls.runtime.threads import batch
    vocab = _vocab(predictor)
    V = min(len(vocab.itos), HOTFLIP_CANDIDATES)
    keep = [i for i in range(2, V) if _real_word(vocab.itos[i])]
    cand_ids = torch.tensor(keep, dtype=torch.long)
    out: list[Edit | None] = []
    with batch():
        with torch.no_grad():
            cand_emb = predictor.model.embed(cand_ids[None])[0].float()           # (V, E)
        for s in range(0, len(texts), batch_size):
            part = list(texts[s:s + batch_size])
            insts = _instances(predictor, part)
            ok = [k for k, inst in enumerate(insts) if inst.n > 0]
            got = _hotflip_batch(predictor, [part[k] for k in ok], [insts[k] for k in ok], 0, cand_ids, cand_emb) \
                if ok else []
            res: list[Edit | None] = [None] * len(part)
            for k, e in zip(ok, got):
                if e is not None:
                    e.index = s + k
                    e.original = part[k]
                res[k] = e
            out += res
    return out


def ablation_flip(predictor, texts: Sequence[str], max_delete: int = MAX_DELETE) -> list[Edit | None]:
    insts = _instances(predictor, texts)
    toks = [list(i.tokens or []) for i in insts]
    base = _probs(predictor, [" ".join(t) for t in toks]) if texts else np.zeros((0, 0))
    target = base.argmax(-1) if len(base) else np.zeros(0, dtype=int)
    roles = [_roles(t) for t in toks]
    loo_texts, owner = [], []
    for b, t in enumerate(toks):
        free = [i for i in range(len(t)) if _deletable([i], roles[b], 1)][:MAX_LOO_WORDS]  # no tag, no entity's
        #                                                                                  last word
        if len(free) >= 2:
            for i in free:
                loo_texts.append(" ".join(t[:i] + t[i + 1:]))
                owner.append((b, i))
    loo = _probs(predictor, loo_texts) if loo_texts else np.zeros((0, base.shape[1] if len(base) else 0))
    drop: dict[int, np.ndarray] = {}
    for (b, i), p in zip(owner, loo):
        drop.setdefault(b, np.full(len(toks[b]), -np.inf))[i] = base[b, target[b]] - p[target[b]]
    trial_texts, trial = [], []
    for b, d in drop.items():
        order = np.argsort(-d, kind="mergesort")
        n_free = int(np.isfinite(d).sum())
        for k in range(1, min(max_delete, n_free - 1) + 1):
            gone = set(_deletable(order, roles[b], k))
            if len(gone) < k:
                break                                  # nothing more may go (each entity keeps a word)
            trial_texts.append(" ".join(w for i, w in enumerate(toks[b]) if i not in gone))
            trial.append((b, k, [toks[b][i] for i in sorted(gone)]))
    P = _probs(predictor, trial_texts) if trial_texts else np.zeros((0, 0))
    chosen: dict[int, int] = {}               # per text: the first (smallest) set that flips, else the largest
    for n, (b, k, _) in enumerate(trial):
        prev = chosen.get(b)
        if prev is None or int(P[prev].argmax()) == int(target[b]):
            chosen[b] = n
    out: list[Edit | None] = [None] * len(texts)
    for b, n in chosen.items():
        _, k, words = trial[n]
        out[b] = Edit(b, texts[b], trial_texts[n], f"deleted {k} word(s): " + ", ".join(repr(w) for w in words))
    return out


# ---------------------------------------------------------------- running and scoring

def _probs(predictor, texts: Sequence[str]) -> np.ndarray:
    """(N, C) probabilities, predicted in chunks of bounded memory (`_chunks`, at most 128 texts)."""
    if not texts:
        return np.zeros((0, len(predictor.labels)))
    rows = []
    for _, part in _chunks(list(texts)):
        preds = predictor.predict(part, batch_size=max(1, len(part)))
        rows += [[p.probabilities[lab] for lab in predictor.labels] for p in preds]
    return np.array(rows)


# ---------------------------------------------------------------- the registry (one entry per generator)

@register_generator("word_replacer", "Word replacer", needs_model=False,
                    help="the rules' words replaced, e.g. 'good -> bad, great -> awful'")
def _word_replacer(texts, predictor=None, *, rules=None, seed=0, max_delete=MAX_DELETE):
    parsed = parse_rules(rules) if isinstance(rules, str) or rules is None else list(rules)
    return [Edit(i, t, *r) if (r := replace_words(t, parsed)) else None for i, t in enumerate(texts)]


@register_generator("negation", "Negation", needs_model=False,
                    help="negations removed, or 'not' after the first auxiliary")
def _negation(texts, predictor=None, *, rules=None, seed=0, max_delete=MAX_DELETE):
    return [Edit(i, t, *r) if (r := negate(t)) else None for i, t in enumerate(texts)]


@register_generator("scrambler", "Scrambler", needs_model=False, help="the words in a seeded random order")
def _scrambler(texts, predictor=None, *, rules=None, seed=0, max_delete=MAX_DELETE):
    return [Edit(i, t, *r) if (r := scramble(t, seed + i)) else None for i, t in enumerate(texts)]


@register_generator("glove", "GloVe neighbour of the most important word", needs_model=True,
                    help="the model's most important word swapped for its nearest GloVe neighbour")
def _glove(texts, predictor, *, rules=None, seed=0, max_delete=MAX_DELETE):
    return glove_substitution(predictor, texts)


@register_generator("hotflip", "HotFlip", needs_model=True,
                    help="the one word swap that most lowers the predicted class (embedding gradients)")
def _hotflip(texts, predictor, *, rules=None, seed=0, max_delete=MAX_DELETE):
    return hotflip(predictor, texts)


@register_generator("ablation_flip", "Ablation flip", needs_model=True,
                    help=f"the fewest deleted words that flip the decision (at most {MAX_DELETE})")
def _ablation_flip(texts, predictor, *, rules=None, seed=0, max_delete=MAX_DELETE):
    return ablation_flip(predictor, texts, max_delete)


def generate(generator: str, texts: Sequence[str], predictor=None, *, rules: str | Sequence | None = None,
             seed: int = 0, max_delete: int = MAX_DELETE) -> list[Edit | None]:
    """One Edit (or None: nothing to change) per text. Model-dependent generators need `predictor`."""
    gen = GENERATORS.get(generator)
    if gen is None:
        raise CounterfactualError(f"unknown generator {generator!r}; choose one of {', '.join(GENERATORS)}")
    if gen.needs_model and predictor is None:
        raise CounterfactualError(f"the {generator} generator needs a checkpoint")
    texts = list(texts)
    if not gen.needs_model:
        return gen.run(texts, predictor, rules=rules, seed=seed, max_delete=max_delete)
    out: list[Edit | None] = []
    for start, part in _chunks(texts):             # memory bounded per chunk, whatever the texts' lengths
        for e in gen.run(part, predictor, rules=rules, seed=seed, max_delete=max_delete):
            if e is not None:
                e.index += start
            out.append(e)
    return out


# The memory a model-dependent generator may take, bounded per chunk of texts: a chunk holds at most CHUNK_TEXTS
# texts and at most CHUNK_COST of the sum of their squared estimated lengths (attention grows with the square);
# a text counts at most MAX_TOKENS_ESTIMATE tokens (every tokenizer cuts texts at or below that).
CHUNK_TEXTS = 64
CHUNK_COST = 4_000_000
MAX_TOKENS_ESTIMATE = 5_000
MAX_LOO_WORDS = 100             # ablation_flip: the words of a text tried one by one (the first MAX_LOO_WORDS)


def _cost(text: str) -> int:
    return min(len(text) // 4 + 1, MAX_TOKENS_ESTIMATE) ** 2


def _chunks(texts: list[str]) -> list[tuple[int, list[str]]]:
    """(start, consecutive texts) under CHUNK_TEXTS and CHUNK_COST (a single costlier text is a chunk alone)."""
    out, start, cost = [], 0, 0
    for i, t in enumerate(texts):
        c = _cost(t)
        if i > start and (i - start >= CHUNK_TEXTS or cost + c > CHUNK_COST):
            out.append((start, texts[start:i]))
            start, cost = i, 0
        cost += c
    if start < len(texts):
        out.append((start, texts[start:]))
    return out


@dataclass
class FlipReport:
    generator: str
    checkpoint: str
    n_texts: int                 # texts given
    n: int                       # texts the generator changed
    flips: int
    flip_rate: float             # flips / n (NaN when n == 0)
    mean_prob_change: float      # mean p_edit(original label) - p_orig(original label) over the n edits
    seconds: float
    rows: pd.DataFrame           # index, original, edited, detail, label, new_label, p, new_p, flipped

    def summary(self) -> dict:
        return {"generator": self.generator, "checkpoint": self.checkpoint, "n_texts": self.n_texts, "n": self.n,
                "flips": self.flips, "flip_rate": self.flip_rate, "mean_prob_change": self.mean_prob_change,
                "seconds": round(self.seconds, 3)}


ROW_COLUMNS = ["index", "original", "edited", "detail", "label", "new_label", "p", "new_p", "flipped"]


def flip_report(predictor, edits: Sequence[Edit | None], *, generator: str = "", checkpoint: str = "",
                n_texts: int | None = None, seconds: float = 0.0) -> FlipReport:
    """Predict each edit's original and edited text (batched) and count the flips (see the module docstring)."""
    t0 = time.perf_counter()
    done = [e for e in edits if e is not None]
    P0 = _probs(predictor, [e.original for e in done])
    P1 = _probs(predictor, [e.edited for e in done])
    labels = predictor.labels
    rows = []
    for e, p0, p1 in zip(done, P0, P1):
        k0, k1 = int(p0.argmax()), int(p1.argmax())
        rows.append({"index": e.index, "original": e.original, "edited": e.edited, "detail": e.detail,
                     "label": labels[k0], "new_label": labels[k1], "p": float(p0[k0]), "new_p": float(p1[k0]),
                     "flipped": k0 != k1})
    df = pd.DataFrame(rows, columns=ROW_COLUMNS)
    n = len(df)
    flips = int(df["flipped"].sum()) if n else 0
    return FlipReport(generator, checkpoint, len(edits) if n_texts is None else n_texts, n, flips,
                      flips / n if n else float("nan"), float((df["new_p"] - df["p"]).mean()) if n else float("nan"),
                      seconds + time.perf_counter() - t0, df)


def run_generator(predictor, texts: Sequence[str], generator: str, *, checkpoint: str = "",
                  rules: str | Sequence | None = None, seed: int = 0, max_delete: int = MAX_DELETE,
                  edits: Sequence[Edit | None] | None = None) -> FlipReport:
    """generate + flip_report for one checkpoint; `edits` reuses a model-free generator's edits."""
    t0 = time.perf_counter()
    if edits is None:
        edits = generate(generator, texts, predictor, rules=rules, seed=seed, max_delete=max_delete)
    return flip_report(predictor, edits, generator=generator, checkpoint=checkpoint, n_texts=len(texts),
                       seconds=time.perf_counter() - t0)


def compare_generators(predictors: dict, texts: Sequence[str], generators: Sequence[str], *,
                       rules: str | None = None, seed: int = 0,
                       progress: Callable[[int, int, str], None] | None = None) -> list[FlipReport]:
    """Every generator on every checkpoint ({name: Predictor}); model-free edits are made once and shared. A
    generator that cannot run (e.g. the word replacer without rules) raises CounterfactualError."""
    out, total, done = [], len(predictors) * len(generators), 0
    for g in generators:
        shared = None if GENERATORS[g].needs_model else generate(g, texts, rules=rules, seed=seed)
        for name, pred in predictors.items():
            if progress is not None:
                progress(done, total, f"{GENERATORS[g].label} · {name}")
            out.append(run_generator(pred, texts, g, checkpoint=name, rules=rules, seed=seed, edits=shared))
            done += 1
    if progress is not None:
        progress(total, total, "done")
    return out


def summary_table(reports: Sequence[FlipReport]) -> pd.DataFrame:
    return pd.DataFrame([r.summary() for r in reports],
                        columns=["generator", "checkpoint", "n_texts", "n", "flips", "flip_rate", "mean_prob_change",
                                 "seconds"])


__all__ = ["CounterfactualError", "Edit", "FlipReport", "GENERATORS", "Generator", "register_generator",
           "ablation_flip", "compare_generators", "flip_report", "generate", "glove_neighbours", "glove_substitution",
           "hotflip", "negate", "parse_rules", "replace_words", "run_generator", "scramble", "summary_table"]
