"""Hugging Face sequence classifiers (encoders and decoders) as textcls models: words in, word-level maps out.

`HFClassifier` wraps a transformers `AutoModelForSequenceClassification` (BERT, RoBERTa, DeBERTa, ModernBERT,
GPT-2, Llama, Qwen2, Mistral, Gemma, Phi, ...) so that it is called like the six
(`model(token_ids, mask, return_maps=False, edits=None) -> ClassifierOutput`) and every page, metric and
explanation sees **words**, never word pieces. What differs between families (special pieces, pooled position,
causal attention, where attention is read) is a `textcls.models.hf.family.Family`.

- Input: one id per word (B, W). An id stands for the word's word-piece sequence in a `WordTable` that the
  tokenizer (`textcls.models.hf.text.HFWordTokenizer`) fills as it meets words (append-only: an id never changes
  meaning; 0 is the pad word [PAD], 1 the unknown word [UNK]). The forward lays the pieces out as the tokenizer's
  template does - prefix specials ([CLS], <s> or none), pieces of word 1, pieces of word 2, ..., suffix specials
  ([SEP], </s> or none), pads after - and runs the model on their embeddings.
- `model.embed` maps word ids to their pieces' embeddings, (B, W, P * E) (a word's P piece slots side by
  side, slots past its last piece hold [PAD]), so Captum's per-token sums are per word with the pieces summed,
  occlusion / Shapley / LIME remove whole words, and erasures (`Instance.remove`) drop all of a word's pieces.
- Maps (kind "attention", values "real", rows summing to 1 over the words):
    attention         (layer, head, query_token, key_token)  word x word
    cls_attention     (layer, head, key_token)   first-position pooling: the [CLS] row (what the classifier reads)
    pooled_attention  (layer, head, key_token)   otherwise: the last real piece's row (decoders) or the mean of
                                                  the real rows (mean pooling)
  Aggregation rule (pieces -> words): a key word's weight is the SUM of the weights on its pieces; a query
  word's row is the MEAN of its pieces' rows; the weights on the special pieces are left out and each row is
  renormalised to sum to 1. What was left out is the map special_share (layer, head, query_token), present
  when the family adds special pieces.
- Attention weights are computed eagerly (softmax materialised) whenever maps or edits are asked for - the
  default sdpa kernel returns none -; a plain prediction uses sdpa. Both through one attention function
  registered with transformers' public `AttentionInterface` under the name "textcls"; grouped-query attention is
  expanded to the query heads. A family that computes attention itself (DeBERTa's disentangled attention) is
  recorded and edited by a forward pre-hook on its attention-probability dropout ("hooks"); failing that, read
  through `output_attentions` (not editable); one without attention weights has no attention maps
  (`attention_note` says so).
- A plain call (no maps, no edits, no hooks, not training) of a BERT-like encoder computes its last layer for the
  pooled first position only and packs texts of mixed length side by side (`textcls.models.hf.pooled`).
- Decoders: the head of a decoder reads position -1 when given embeddings; a forward hook on its `score` (or
  `classifier`) layer puts each row's last real piece there, so right padding never changes a text's logits.
- Edits (interventions): an edit of "attention" acts on the piece attention weights (B, head, L, L) of each
  layer, with the pieces' mask: a head ablation zeroes the head; uniform / permuted rows act over the real
  pieces (specials included). A family read through `output_attentions` refuses edits with one line.
"""
from __future__ import annotations

import inspect
import threading
import types
from dataclasses import dataclass, field, replace

import torch
import torch.nn as nn

from textcls.models.outputs import InterventionSpec, MapSpec
from textcls.models.base import Probe, TextClassifier, param
from textcls.models.hf.pooled import forward_first, hooked, last_layer, pack, packed_inputs, position_table

ATTN_NAME = "textcls"
SMALL_ATTENTION = 48        # keys up to which a plain call's attention runs eager on the CPU (textcls_attention)
MAX_PIECES_PER_WORD = 8           # a longer "word" (a URL, a run of digits) keeps its first 8 pieces (sst2: 1 word of
                                  # 182,884 has more than 6 pieces with the MiniLM vocabulary)


@dataclass
class HFConfig:
    """What textcls knows of a wrapped Hugging Face model (the HF config itself is `model.hf.config`)."""

    architecture: str = param("", "the transformers class, e.g. BertForSequenceClassification")
    model_type: str = param("", "the transformers model type, e.g. bert")
    num_labels: int = 2
    num_layers: int = 0
    num_heads: int = 0
    max_len: int = param(512, "the most word pieces one text gives the model, its special pieces included")
    pad_id: int = 0                   # the pad WORD id (WordTable)
    vocab_size: int = 0               # the word-piece vocabulary
    extra: dict = field(default_factory=dict)

    @property
    def position_limit(self) -> int | None:
        return self.max_len


# ---------------------------------------------------------------- word table

class WordTable:
    """Word id <-> the word's word-piece ids. Append-only and thread-safe; 0 = [PAD], 1 = [UNK]."""

    def __init__(self, pad_piece: int, unk_piece: int):
        self.pad_piece = int(pad_piece)
        self._lock = threading.Lock()
        self._ids: dict[tuple[int, ...], int] = {}
        self._pieces: list[tuple[int, ...]] = []
        self._grid: torch.Tensor | None = None      # (capacity, K) pieces, [PAD]-filled
        self._count: torch.Tensor | None = None     # (capacity,)
        self._filled = 0                            # rows of _grid written
        self.id((int(pad_piece),))
        self.id((int(unk_piece),))

    def __len__(self) -> int:
        return len(self._pieces)

    def __deepcopy__(self, memo) -> "WordTable":
        """Itself: a copy of the model (`weights_copy`) shares the table, so a word met after the copy is made has
        the same id in both (a copied table would map it to [UNK]); the table is append-only, so sharing is safe."""
        return self

    def id(self, pieces: tuple[int, ...]) -> int:
        pieces = tuple(int(p) for p in pieces[:MAX_PIECES_PER_WORD]) or (self.pad_piece,)
        got = self._ids.get(pieces)
        if got is not None:
            return got
        with self._lock:
            got = self._ids.get(pieces)
            if got is None:
                got = len(self._pieces)
                self._pieces.append(pieces)
                self._ids[pieces] = got
            return got

    def pieces(self, word_id: int) -> tuple[int, ...]:
        return self._pieces[int(word_id)]

    def _tables(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(N, K) piece ids and (N,) counts; new words are appended to a buffer with spare rows (no rebuild)."""
        n = len(self._pieces)
        if self._grid is None or self._filled < n:
            with self._lock:
                rows = self._pieces[self._filled if self._grid is not None else 0:]
                start = self._filled if self._grid is not None else 0
                need = start + len(rows)
                if self._grid is None or self._grid.shape[0] < need:
                    cap = max(1024, 2 * need)
                    grid = torch.full((cap, MAX_PIECES_PER_WORD), self.pad_piece, dtype=torch.long)   # (cap, K)
                    count = torch.zeros(cap, dtype=torch.long)                                         # (cap,)
                    if self._grid is not None:
                        grid[:start], count[:start] = self._grid[:start], self._count[:start]
                else:
                    grid, count = self._grid, self._count
                for i, r in enumerate(rows, start):
                    grid[i, :len(r)] = torch.tensor(r, dtype=torch.long)
                    count[i] = len(r)
                self._grid, self._count, self._filled = grid, count, need
        return self._grid[:n], self._count[:n]

    def lookup(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """ids (B, W) -> piece ids (B, W, K) ([PAD] past each word's end; K = MAX_PIECES_PER_WORD whatever the
        words, so a baseline's embedding has the shape of the text's) and piece counts (B, W)."""
        grid, count = self._tables()
        flat = ids.detach().to("cpu").long().clamp(0, grid.shape[0] - 1)
        return grid[flat].to(ids.device), count[flat].to(ids.device)                  # (B, W, K), (B, W)


class WordPieceEmbedding(nn.Module):
    """model.embed: word ids (B, W) -> their pieces' embeddings side by side (B, W, K * E), K fixed."""

    def __init__(self, embedding: nn.Embedding, table: WordTable):
        super().__init__()
        object.__setattr__(self, "piece_embedding", embedding)   # shared with the HF model, not a second copy
        object.__setattr__(self, "table", table)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        pieces, _ = self.table.lookup(ids)                       # (B, W, K)
        e = self.piece_embedding(pieces)                         # (B, W, K, E)
        return e.flatten(-2)                                     # (B, W, K * E)


# ---------------------------------------------------------------- the attention function

_CALL = threading.local()


@dataclass
class _CallState:
    record: bool = False
    edit: object = None
    piece_mask: torch.Tensor | None = None
    last: torch.Tensor | None = None            # (B,) each row's last real piece (decoders' pooled position)
    layer: int = 0
    weights: list = field(default_factory=list)
    pooled_only: bool = False                   # only the pooled position's logits are read (textcls.models.hf.pooled)
    rows: tuple | None = None                   # texts packed side by side: each one's (row, first position)


def textcls_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Eager attention (weights kept, edits applied) when the call asks for maps or edits; otherwise sdpa, or on
    the CPU over at most SMALL_ATTENTION keys the same eager products (about half sdpa's time there, forward and
    backward; sdpa is faster from about 64 keys). Grouped-query attention (fewer key/value heads than query heads)
    is expanded to the query heads, so a map has one row per query head; causal and sliding-window masks come in
    `attention_mask` (transformers builds them); a soft cap (`softcap`, Gemma 2) and attention sinks (`s_aux`,
    gpt-oss) are applied as the family's own eager attention applies them."""
    state = getattr(_CALL, "state", None)
    plain = state is None or not (state.record or state.edit is not None)
    small = key.shape[-2] <= SMALL_ATTENTION and key.device.type == "cpu" and (
        attention_mask is not None or not getattr(module, "is_causal", False))
    if plain and not small and not kwargs.get("softcap") and kwargs.get("s_aux") is None:   # sdpa has neither
        from transformers.integrations.sdpa_attention import sdpa_attention_forward
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    groups = query.shape[1] // key.shape[1]
    if groups > 1:                                                        # one key/value head per `groups` queries
        key = key.repeat_interleave(groups, dim=1)                       # (B, H, L, d)
        value = value.repeat_interleave(groups, dim=1)                   # (B, H, L, d)
    w = torch.matmul(query, key.transpose(2, 3)) * scaling              # (B, H, L, L)
    softcap = kwargs.get("softcap")
    if softcap:
        w = torch.tanh(w / softcap) * softcap
    if attention_mask is not None:
        w = w + attention_mask[..., :key.shape[-2]]
    sinks = kwargs.get("s_aux")
    if sinks is not None:                                                # a learnt sink column, dropped after softmax
        sink = sinks.reshape(1, -1, 1, 1).expand(w.shape[0], -1, w.shape[2], 1).to(w.dtype)   # (B, H, L, 1)
        w = torch.softmax(torch.cat([w, sink], -1), dim=-1)[..., :-1]    # (B, H, L, L)
    else:
        w = torch.softmax(w, dim=-1)                                     # (B, H, L, L)
    if not plain:
        w = _edit_and_record(state, w)
    w = nn.functional.dropout(w.to(value.dtype), p=dropout, training=module.training)
    out = torch.matmul(w, value).transpose(1, 2).contiguous()           # (B, L, H, d)
    return out, w


def _edit_and_record(state: _CallState, w: torch.Tensor) -> torch.Tensor:
    """One layer's attention weights (B, H, L, L): the call's edit applied, then kept when the call records."""
    layer = state.layer
    state.layer += 1
    if state.edit is not None:
        w = state.edit(w, layer=layer, mask=state.piece_mask)
    if state.record:
        state.weights.append(w)
    return w


def _probs_hook(module, inputs):
    """Forward pre-hook on the dropout a family applies to its attention probabilities when it computes attention
    itself (DeBERTa's disentangled attention): the same edit and record as `textcls_attention`. Only a square
    (B, H, L, L) input over the call's pieces is touched (not a hidden-state dropout)."""
    state = getattr(_CALL, "state", None)
    if state is None or not (state.record or state.edit is not None) or not inputs:
        return None
    w = inputs[0]
    L = state.piece_mask.shape[1]
    if w.dim() != 4 or w.shape[-1] != L or w.shape[-2] != L:
        return None
    return (_edit_and_record(state, w),) + tuple(inputs[1:])


def hook_attention_probs(hf_model: nn.Module) -> int:
    """Put `_probs_hook` on every attention module's probability dropout; returns how many (0: none found)."""
    found = 0
    for module in hf_model.modules():
        drop = getattr(module, "dropout", None)
        if "attention" in type(module).__name__.lower() and isinstance(drop, nn.Dropout):
            drop.register_forward_pre_hook(_probs_hook)
            found += 1
    return found


def _pooled_forward(layer, hidden_states, attention_mask=None, *args, **kwargs):
    """The forward of a BERT-like classifier's last layer (`textcls.models.hf.pooled`): the first position only when
    the call reads nothing else (`_CallState.pooled_only`), else the layer's own forward."""
    state = getattr(_CALL, "state", None)
    if state is None or not state.pooled_only or (state.rows is None and (
            layer.training or any(a is not None for a in args) or kwargs.get("encoder_hidden_states") is not None
            or kwargs.get("cache") is not None)):                   # (packed texts must take the short path)
        return type(layer).forward(layer, hidden_states, attention_mask, *args, **kwargs)
    return forward_first(layer, hidden_states, attention_mask, textcls_attention, state.rows)


def _takes_output_attentions(hf_model: nn.Module) -> bool:
    return "output_attentions" in inspect.signature(hf_model.forward).parameters or \
        "attentions" in (getattr(hf_model, "_can_record_outputs", None) or {})


def _pool_last(module, inputs, output):
    """Forward hook on a decoder's `score` (or `classifier`) layer: the head reads position -1 when it is given
    embeddings (it cannot see pad ids), so each row's last REAL piece's logits are put there (right padding stays
    right)."""
    state = getattr(_CALL, "state", None)
    last = getattr(state, "last", None)
    if last is None or output.dim() != 3 or output.shape[1] != state.piece_mask.shape[1]:
        return output
    rows = torch.arange(output.shape[0], device=output.device)
    picked = output[rows, last.to(output.device)]                        # (B, C)
    return torch.cat([output[:, :-1], picked[:, None]], dim=1)           # (B, L, C)


_registered = False
PAD_WARNING = "will not detect padding tokens in `inputs_embeds`"     # the wrapper pools the last real piece itself


def _quiet(record) -> bool:
    return PAD_WARNING not in record.getMessage()


def register_attention() -> None:
    """Enrol `textcls_attention` (and the eager mask format) with transformers under ATTN_NAME, and silence
    transformers' warning that a decoder given embeddings reads position -1 (`_pool_last` handles it); idempotent."""
    global _registered
    if _registered:
        return
    import logging

    from transformers.utils import logging as hf_logging
    hf_logging.get_logger("transformers")            # transformers' own handler exists from here on
    for handler in logging.getLogger("transformers").handlers:
        handler.addFilter(_quiet)
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask
    AttentionInterface.register(ATTN_NAME, textcls_attention)
    AttentionMaskInterface.register(ATTN_NAME, eager_mask)
    _registered = True


# ---------------------------------------------------------------- the model

@dataclass
class _Layout:
    """Where a batch's pieces go: prefix specials, each word's pieces, suffix specials, pads after."""

    pos: torch.Tensor                 # (B, W, P) each word piece's position
    valid: torch.Tensor               # (B, W, P) the slot holds a piece
    n: torch.Tensor                   # (B,) the text's pieces
    real: torch.Tensor                # (B, L) real positions (specials included)
    last: torch.Tensor                # (B,) the last real position
    W: int
    L: int


class HFClassifier(TextClassifier):
    """A transformers sequence classifier called on word ids (see the module docstring)."""

    registry_name = "hf"
    context_mixing = "hf"

    def __init__(self, hf_model: nn.Module, table: WordTable, config: HFConfig, family=None):
        from textcls.models.hf.family import Family, decoder_head, takes_mask
        super().__init__(config)
        self.hf = hf_model
        self.table = table
        self.family = family if family is not None else Family()
        self.prefix, self.suffix = list(self.family.prefix), list(self.family.suffix)
        self.filler = int(table.pad_piece)          # the one piece of an empty text when the family adds none
        self.embed = WordPieceEmbedding(hf_model.get_input_embeddings(), table)
        self.takes_mask = takes_mask(hf_model)      # FNet's forward takes none
        self.masked = self.takes_mask               # False: rows of different lengths run apart (never padded)
        self.pooled_last = False                    # whether a plain call computes the last layer for [CLS] only
        if self.family.pooling == "last":
            decoder_head(hf_model).register_forward_hook(_pool_last)
        if self.family.attention == "output" and hook_attention_probs(hf_model):
            self.family = replace(self.family, attention="hooks")
        was = self.hf.training
        self.hf.eval()
        try:
            self.attention_layers = self._settle_attention()
            self.masked = self.masked and self._padding_is_masked()
        finally:
            self.hf.train(was)
        layer = last_layer(self.hf) if self.family.pooling == "first" and self.masked else None
        if layer is not None:
            layer.forward = types.MethodType(_pooled_forward, layer)      # a deep copy binds it to the copy
            self.pooled_last = True
        self._positions = position_table(self.hf) if self.pooled_last and self.prefix and {"position_ids",
            "token_type_ids"} <= set(inspect.signature(self.hf.forward).parameters) else None   # for packing

    def _padding_is_masked(self) -> bool:
        """Whether right padding leaves a text's logits alone (ConvBERT's convolutions read the pad positions:
        such a family runs its rows unpadded, as one that takes no mask does)."""
        device = next(self.hf.parameters()).device
        ids = torch.tensor([[1, 0, 0], [1, 1, 1]], device=device)                  # (2, 3) [UNK] words
        with torch.no_grad():
            both = self._run(ids, ids > 0, False, None)[0][0]                       # (C,)
            alone = self._run(ids[:1, :1], ids[:1, :1] > 0, False, None)[0][0]      # (C,)
        return bool(torch.allclose(both, alone, atol=1e-5, rtol=1e-4))

    def _settle_attention(self) -> int:
        """Check on a one-word text where the weights come from: a source that records more weights than the
        model has layers (differential attention: two softmaxes a layer), none, or weights that are not one
        (B, H, L, L) square per layer (YOSO's hashed attention) falls back to output_attentions, then to no
        attention. Fewer is kept (a hybrid's attention layers among its others). Returns how many
        layers of weights the maps have (0: none)."""
        expected = int(getattr(self.hf.config, "num_hidden_layers", 0) or 0)
        self.attention_heads = 0
        ids, mask = torch.ones(1, 1, dtype=torch.long), torch.ones(1, 1, dtype=torch.bool)      # the [UNK] word
        device = next(self.hf.parameters()).device
        for source in dict.fromkeys((self.family.attention, "output")):
            if source == "none" or (source == "output" and not _takes_output_attentions(self.hf)):
                continue
            self.family = replace(self.family, attention=source)
            with torch.no_grad():
                _, state, _ = self._run(ids.to(device), mask.to(device), True, None)
            L = state.piece_mask.shape[1]
            square = all(w.dim() == 4 and w.shape[-2:] == (L, L) for w in state.weights)   # (1, H, L, L) each
            if square and 0 < len(state.weights) <= max(expected, 1):
                self.attention_heads = int(state.weights[0].shape[1])    # ConvBERT: half its heads are convolutions
                return len(state.weights)
        self.family = replace(self.family, attention="none")
        return 0

    @property
    def attention_note(self) -> str | None:
        """One line when the family's attention cannot be shown (or edited), else None."""
        name = type(self.hf).__name__
        if self.family.attention == "none":
            return f"{name} exposes no attention weights that textcls can read: no attention map; attributions, " \
                   "faithfulness and every other view work"
        if self.family.attention == "output":
            return f"{name} computes its attention outside transformers' attention interface: its weights are " \
                   "read (output_attentions) but cannot be edited (no head ablation, no uniform or permuted attention)"
        return None

    def interventions(self) -> InterventionSpec:
        if self.family.attention not in ("interface", "hooks"):
            return InterventionSpec()
        return InterventionSpec(heads=int(self.attention_heads), layers=int(self.attention_layers))

    def _special_names(self) -> str:
        return "/".join(dict.fromkeys(self.family.names))

    def map_specs(self) -> list[MapSpec]:
        f = self.family
        if f.attention == "none":
            return []
        specials = self._special_names()
        left_out = f", the {specials} columns left out and each row renormalised to 1" if specials else ""
        causal = ("; causal: a word attends only to itself and the words before it (the empty upper triangle is "
                  "the architecture, not a finding)") if f.causal else ""
        out = [
            MapSpec("attention", ("layer", "head", "query_token", "key_token"), "attention",
                    "self-attention between words: a key word sums its pieces' weights, a query word averages its "
                    f"pieces' rows{left_out}{causal}"),
            MapSpec(f.pooled_map, ("layer", "head", "key_token"), "attention",
                    f"what the classifier reads: the attention row of {f.pooled} over the words"
                    + (f", {specials} left out, renormalised" if specials else "")
                    + ("; causal: the last piece sees every word" if f.pooling == "last" else "")),
        ]
        if specials:
            out.append(MapSpec("special_share", ("layer", "head", "query_token"), "activation",
                               f"share of each word's attention that went to {specials} before renormalising"))
        return out

    def num_parameters(self, include_embeddings: bool = False) -> int:
        emb = {id(p) for p in self.embed.piece_embedding.parameters()}
        return sum(p.numel() for p in self.hf.parameters() if include_embeddings or id(p) not in emb)

    def sequence_lengths(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B,) positions the model runs for each text: its words' pieces plus the special pieces. A batch costs
        its longest row's length, so data-set work groups texts by this, not by their word count."""
        _, counts = self.table.lookup(ids)                              # (B, W)
        return ((counts * mask.long()).sum(-1) + self.family.specials).clamp(min=1)   # (B,)

    def _layout(self, ids: torch.Tensor, mask: torch.Tensor) -> _Layout:
        """Where each word's pieces go in the sequence prefix pieces... suffix (pads after)."""
        _, counts = self.table.lookup(ids)
        counts = counts * mask.long()                                    # (B, W) 0 for pad words
        B, W = counts.shape
        P = max(1, int(counts.max())) if counts.numel() else 1
        k = len(self.prefix)
        n = counts.sum(1)                                                # (B,) pieces per text
        start = k + counts.cumsum(1) - counts                            # (B, W) first piece's position
        slot = torch.arange(P, device=ids.device)                        # (P,)
        pos = start[..., None] + slot                                    # (B, W, P)
        valid = slot < counts[..., None]                                 # (B, W, P)
        used = (n + self.family.specials).clamp(min=1)                   # (B,) an empty text keeps one position
        L = int(used.max()) if B else 1
        real = torch.arange(L, device=ids.device)[None] < used[:, None]  # (B, L)
        return _Layout(pos, valid, n, real, used - 1, W, L)

    def _run(self, token_ids: torch.Tensor, mask: torch.Tensor, record: bool, edit):
        """(logits (B, C), the call's state with the piece-level weights when recorded, the layout)."""
        if edit is not None and self.family.attention not in ("interface", "hooks"):
            raise ValueError(self.attention_note)
        lay = self._layout(token_ids, mask)
        pos, valid, n, W, L = lay.pos, lay.valid, lay.n, lay.W, lay.L
        B = pos.shape[0]
        emb = self.embed(token_ids)                                      # (B, W, P' * E)
        E = self.embed.piece_embedding.embedding_dim
        emb = emb.view(B, W, -1, E)[:, :, :pos.shape[-1]]                # (B, W, P, E)
        rows = torch.arange(B, device=emb.device)
        bidx = rows[:, None, None].expand_as(pos)                        # (B, W, P)
        k = len(self.prefix)
        special_ids = self.prefix + self.suffix
        if not special_ids:                                              # an empty text reads one filler piece
            special_ids, places = [self.filler], [torch.where(n == 0, 0, L)]
        else:
            places = [torch.full_like(n, j) for j in range(k)] + [n + k + j for j in range(len(self.suffix))]
        special = self.embed.piece_embedding(torch.tensor(special_ids, device=emb.device))    # (S, E)
        index_b = torch.cat([bidx[valid]] + [rows] * len(places))                           # (N + S * B,)
        index_l = torch.cat([pos[valid]] + places)                                          # (N + S * B,)
        values = torch.cat([emb[valid]] + [special[j].expand(B, E) for j in range(len(places))])  # (N + S * B, E)
        state = _CallState(record=record, edit=edit, piece_mask=lay.real,
                           last=lay.last if self.family.pooling == "last" else None,
                           pooled_only=self.pooled_last and not self.hf.training and not record and edit is None
                           and not hooked(self.hf))
        packing = None
        if state.pooled_only and self._positions is not None and L <= self._positions.numel():
            packing = pack(lay.last + 1, int(getattr(self.hf.config, "hidden_size", 0) or 384))
        if packing is None:
            seq = emb.new_zeros(B, L + 1, E).index_put((index_b, index_l), values)[:, :L]    # (B, L, E)
        else:                                                            # texts side by side, no padding between
            P, T = packing[:2]
            prow, pstart = (x.to(emb.device) for x in packing[2:])              # (B,) each text's row and start
            seq = emb.new_zeros(P, T + 1, E).index_put((prow[index_b], pstart[index_b] + index_l), values)[:, :T]
        previous = getattr(_CALL, "state", None)
        _CALL.state = state
        output = {"output_attentions": True} if record and self.family.attention == "output" else {}
        try:
            if packing is not None:
                state.rows = (prow, pstart)
                logits = self.hf(inputs_embeds=seq, **packed_inputs((lay.last + 1).cpu(), packing, self._positions,
                                                                     seq.dtype, seq.device)).logits      # (B, C)
            elif self.masked:
                out = self.hf(inputs_embeds=seq, attention_mask=lay.real.long(), **output)
                logits = out.logits                                      # (B, C)
                if output:
                    state.weights = [a for a in (out.attentions or ()) if a is not None]
            else:
                logits = self._unpadded(seq, lay, state, output)
        finally:
            _CALL.state = previous
        return logits, state, lay                                        # logits (B, C)

    def _unpadded(self, seq: torch.Tensor, lay: _Layout, state: _CallState, output: dict) -> torch.Tensor:
        """Logits (B, C) of a model whose padding is not masked (no attention mask, or convolutions that read
        pads): the rows of each length run together, unpadded; recorded weights are zero-padded back to (B, H, L,
        L) in the batch's order."""
        used, L = lay.last + 1, lay.L
        parts, order, groups = [], [], []
        full_mask, full_last = state.piece_mask, state.last
        for length in sorted(set(used.tolist())):
            idx = torch.nonzero(used == length).flatten()                # (b,)
            state.piece_mask, state.layer = full_mask[idx, :length], 0
            state.last = None if full_last is None else full_last[idx]
            start = len(state.weights)
            mask = {"attention_mask": state.piece_mask.long()} if self.takes_mask else {}
            out = self.hf(inputs_embeds=seq[idx, :length], **output, **mask)
            got = [a for a in (out.attentions or ()) if a is not None] if output else state.weights[start:]
            del state.weights[start:]
            groups.append([nn.functional.pad(a, (0, L - length, 0, L - length)) for a in got])  # (b, H, L, L) each
            parts.append(out.logits)                                     # (b, C)
            order.append(idx)
        state.piece_mask, state.last = full_mask, full_last
        back = torch.argsort(torch.cat(order))                           # (B,)
        if state.record and groups and groups[0]:
            state.weights = [torch.cat([g[i] for g in groups])[back] for i in range(len(groups[0]))]
        return torch.cat(parts)[back]                                    # (B, C)

    def _forward(self, token_ids: torch.Tensor, mask: torch.Tensor, probe: Probe):
        record = probe.record and self.family.attention != "none"
        logits, state, lay = self._run(token_ids, mask, record, probe.edits.get("attention"))
        if record:
            self._record(probe, state.weights, lay)
        return logits, None

    def piece_attention(self, token_ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The piece attention weights (B, layer, head, L, L) over prefix pieces... suffix (pads after), for the
        Inspect page's word-piece view and for checking the word rule. No gradient. ValueError (the one line of
        `attention_note`) for a family without attention weights."""
        if self.family.attention == "none":
            raise ValueError(self.attention_note)
        mask = (token_ids != self.config.pad_id) if mask is None else mask.bool()
        with torch.no_grad():
            _, state, _ = self._run(token_ids, mask, True, None)
        return torch.stack(state.weights, dim=1)                         # (B, layer, head, L, L)

    def _record(self, probe: Probe, weights: list, lay: _Layout) -> None:
        if not weights:
            raise RuntimeError(f"{type(self.hf).__name__} recorded no attention weights")
        pos, valid, W, L = lay.pos, lay.valid, lay.W, lay.L
        B = pos.shape[0]
        dtype, device = weights[0].dtype, weights[0].device
        owner = torch.zeros(B, L, W, dtype=dtype, device=device)                          # (B, L, W) piece -> word
        bidx = torch.arange(B, device=pos.device)[:, None, None].expand_as(pos)
        widx = torch.arange(W, device=pos.device)[None, :, None].expand_as(pos)
        owner[bidx[valid], pos[valid], widx[valid]] = 1.0
        size = owner.sum(1)                                                               # (B, W) pieces per word
        query = owner / size.clamp(min=1)[:, None, :]                                     # (B, L, W) mean over pieces
        real = lay.real.to(dtype)                                                         # (B, L)
        pooling, rows = self.family.pooling, torch.arange(B, device=device)
        pooled_name = self.family.pooled_map
        for i, a in enumerate(weights):                                                   # a: (B, H, L, L)
            a = a.detach().to(dtype)
            keys = a @ owner[:, None]                                                     # (B, H, L, W)
            word = query.transpose(1, 2)[:, None] @ keys                                  # (B, H, W, W)
            total = word.sum(-1, keepdim=True)                                            # (B, H, W, 1)
            probe("attention", word / total.clamp(min=1e-12), layer=i)
            if pooling == "first":
                pooled = keys[:, :, 0]                                                    # (B, H, W)
            elif pooling == "last":
                pooled = keys[rows, :, lay.last.to(device)]                               # (B, H, W)
            else:
                pooled = (keys * real[:, None, :, None]).sum(2) / real.sum(1).clamp(min=1)[:, None, None]  # (B, H, W)
            probe(pooled_name, pooled / pooled.sum(-1, keepdim=True).clamp(min=1e-12), layer=i)
            if self.family.specials:
                real_word = (size > 0).to(dtype)[:, None]                                 # (B, 1, W)
                probe("special_share", (1.0 - total[..., 0]) * real_word, layer=i)


__all__ = ["ATTN_NAME", "SMALL_ATTENTION", "HFClassifier", "HFConfig", "MAX_PIECES_PER_WORD", "WordPieceEmbedding",
           "WordTable", "register_attention", "textcls_attention"]
