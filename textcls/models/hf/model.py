"""Hugging Face encoders as textcls models: words in, word-level maps out.

`HFClassifier` wraps a transformers `AutoModelForSequenceClassification` (BERT, DistilBERT, RoBERTa, MiniLM, ...)
so that it is called like the six (`model(token_ids, mask, return_maps=False, edits=None) -> ClassifierOutput`)
and every page, metric and explanation sees **words**, never word pieces:

- Input: one id per word (B, W). An id stands for the word's word-piece sequence in a `WordTable` that the
  tokenizer (`textcls.models.hf.text.HFWordTokenizer`) fills as it meets words (append-only: an id never changes
  meaning; 0 is the pad word [PAD], 1 the unknown word [UNK]). The forward lays the pieces out as
  [CLS] pieces of word 1, pieces of word 2, ... [SEP] and runs the encoder on their embeddings.
- `model.embed` maps word ids to their pieces' embeddings, (B, W, P * E) (a word's P piece slots side by
  side, slots past its last piece hold [PAD]), so Captum's per-token sums are per word with the pieces summed,
  occlusion / Shapley / LIME remove whole words, and erasures (`Instance.remove`) drop all of a word's pieces.
- Maps (kind "attention", values "real", rows summing to 1 over the words):
    attention      (layer, head, query_token, key_token)  word x word
    cls_attention  (layer, head, key_token)                the [CLS] position's row (what the classifier reads)
  Aggregation rule (pieces -> words): a key word's weight is the SUM of the weights on its pieces; a query
  word's row is the MEAN of its pieces' rows; the weights on [CLS] and [SEP] are left out and each row is
  renormalised to sum to 1. What was left out is the map special_share (layer, head, query_token): the share of
  each word's attention (before renormalising) that went to [CLS]/[SEP].
- Attention weights are computed eagerly (softmax materialised) whenever maps or edits are asked for - the
  default sdpa kernel returns none -; a plain prediction uses sdpa. Both through one attention function
  registered with transformers' public `AttentionInterface` under the name "textcls".
- Edits (interventions): an edit of "attention" acts on the word-piece attention weights (B, head, L, L) of each
  layer, with the pieces' mask: a head ablation zeroes the head; uniform / permuted rows act over the real
  pieces (incl. [CLS]/[SEP]).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

import torch
import torch.nn as nn

from textcls.models.outputs import InterventionSpec, MapSpec
from textcls.models.base import Probe, TextClassifier, param

ATTN_NAME = "textcls"
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
    max_len: int = param(512, "the most word pieces one text gives the encoder, [CLS] and [SEP] included")
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
    layer: int = 0
    weights: list = field(default_factory=list)


def textcls_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Eager attention (weights kept, edits applied) when the call asks for maps or edits; sdpa otherwise."""
    state = getattr(_CALL, "state", None)
    if state is None or not (state.record or state.edit is not None):
        from transformers.integrations.sdpa_attention import sdpa_attention_forward
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    w = torch.matmul(query, key.transpose(2, 3)) * scaling              # (B, H, L, L)
    if attention_mask is not None:
        w = w + attention_mask[..., :key.shape[-2]]
    w = torch.softmax(w, dim=-1)                                         # (B, H, L, L)
    layer = state.layer
    state.layer += 1
    if state.edit is not None:
        w = state.edit(w, layer=layer, mask=state.piece_mask)
    if state.record:
        state.weights.append(w)
    w = nn.functional.dropout(w, p=dropout, training=module.training)
    out = torch.matmul(w, value).transpose(1, 2).contiguous()           # (B, L, H, d)
    return out, w


_registered = False


def register_attention() -> None:
    """Enrol `textcls_attention` (and the eager mask format) with transformers under ATTN_NAME; idempotent."""
    global _registered
    if _registered:
        return
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask
    AttentionInterface.register(ATTN_NAME, textcls_attention)
    AttentionMaskInterface.register(ATTN_NAME, eager_mask)
    _registered = True


# ---------------------------------------------------------------- the model

class HFClassifier(TextClassifier):
    """A transformers sequence classifier called on word ids (see the module docstring)."""

    registry_name = "hf"

    def __init__(self, hf_model: nn.Module, table: WordTable, config: HFConfig, cls_id: int, sep_id: int):
        super().__init__(config)
        self.hf = hf_model
        self.table = table
        self.cls_id, self.sep_id = int(cls_id), int(sep_id)
        self.embed = WordPieceEmbedding(hf_model.get_input_embeddings(), table)

    def interventions(self) -> InterventionSpec:
        c = self.hf.config
        return InterventionSpec(heads=int(c.num_attention_heads), layers=int(c.num_hidden_layers))

    def map_specs(self) -> list[MapSpec]:
        return [
            MapSpec("attention", ("layer", "head", "query_token", "key_token"), "attention",
                    "self-attention between words: a key word sums its pieces' weights, a query word averages its "
                    "pieces' rows, then the [CLS]/[SEP] columns are left out and each row renormalised to 1"),
            MapSpec("cls_attention", ("layer", "head", "key_token"), "attention",
                    "the [CLS] position's attention over the words (what the classifier reads), [CLS]/[SEP] left "
                    "out, renormalised"),
            MapSpec("special_share", ("layer", "head", "query_token"), "activation",
                    "share of each word's attention that went to [CLS]/[SEP] before renormalising"),
        ]

    def num_parameters(self, include_embeddings: bool = False) -> int:
        emb = {id(p) for p in self.embed.piece_embedding.parameters()}
        return sum(p.numel() for p in self.hf.parameters() if include_embeddings or id(p) not in emb)

    def sequence_lengths(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B,) positions the encoder runs for each text: its words' pieces plus [CLS] and [SEP]. A batch costs
        its longest row's length, so data-set work groups texts by this, not by their word count."""
        _, counts = self.table.lookup(ids)                              # (B, W)
        return (counts * mask.long()).sum(-1) + 2                        # (B,)

    def _layout(self, ids: torch.Tensor, mask: torch.Tensor):
        """Where each word's pieces go in the encoder's sequence [CLS] pieces... [SEP] (pads after)."""
        _, counts = self.table.lookup(ids)
        counts = counts * mask.long()                                    # (B, W) 0 for pad words
        B, W = counts.shape
        P = max(1, int(counts.max())) if counts.numel() else 1
        n = counts.sum(1)                                                # (B,) pieces per text
        start = 1 + counts.cumsum(1) - counts                            # (B, W) first piece's position
        slot = torch.arange(P, device=ids.device)                        # (P,)
        pos = start[..., None] + slot                                    # (B, W, P)
        valid = slot < counts[..., None]                                 # (B, W, P)
        L = int(n.max()) + 2 if B else 2
        return counts, n, pos, valid, L

    def _run(self, token_ids: torch.Tensor, mask: torch.Tensor, record: bool, edit):
        """(logits (B, C), the call's state with the piece-level weights when recorded, the layout)."""
        counts, n, pos, valid, L = self._layout(token_ids, mask)
        B, W = counts.shape
        emb = self.embed(token_ids)                                      # (B, W, P' * E)
        E = self.embed.piece_embedding.embedding_dim
        emb = emb.view(B, W, -1, E)[:, :, :pos.shape[-1]]                # (B, W, P, E)
        rows = torch.arange(B, device=emb.device)
        bidx = rows[:, None, None].expand_as(pos)                        # (B, W, P)
        special = self.embed.piece_embedding(torch.tensor([self.cls_id, self.sep_id], device=emb.device))  # (2, E)
        index_b = torch.cat([bidx[valid], rows, rows])                   # (N + 2B,)
        index_l = torch.cat([pos[valid], torch.zeros_like(rows), n + 1])  # (N + 2B,)
        values = torch.cat([emb[valid], special[0].expand(B, E), special[1].expand(B, E)])  # (N + 2B, E)
        seq = emb.new_zeros(B, L, E).index_put((index_b, index_l), values)   # (B, L, E)
        real = torch.arange(L, device=emb.device)[None] < (n + 2)[:, None]   # (B, L)
        state = _CallState(record=record, edit=edit, piece_mask=real)
        previous = getattr(_CALL, "state", None)
        _CALL.state = state
        try:
            out = self.hf(inputs_embeds=seq, attention_mask=real.long())
        finally:
            _CALL.state = previous
        return out.logits, state, (pos, valid, W, L)                      # logits (B, C)

    def _forward(self, token_ids: torch.Tensor, mask: torch.Tensor, probe: Probe):
        logits, state, (pos, valid, W, L) = self._run(token_ids, mask, probe.record, probe.edits.get("attention"))
        if probe.record:
            self._record(probe, state.weights, pos, valid, W, L)
        return logits, None

    def piece_attention(self, token_ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The word-piece attention weights (B, layer, head, L, L) over [CLS] pieces... [SEP] (pads after), for
        the Inspect page's word-piece view and for checking the word rule. No gradient."""
        mask = (token_ids != self.config.pad_id) if mask is None else mask.bool()
        with torch.no_grad():
            _, state, _ = self._run(token_ids, mask, True, None)
        return torch.stack(state.weights, dim=1)                         # (B, layer, head, L, L)

    @staticmethod
    def _record(probe: Probe, weights: list, pos, valid, W: int, L: int) -> None:
        B = pos.shape[0]
        owner = torch.zeros(B, L, W, dtype=weights[0].dtype, device=weights[0].device)   # (B, L, W) piece -> word
        bidx = torch.arange(B, device=pos.device)[:, None, None].expand_as(pos)
        widx = torch.arange(W, device=pos.device)[None, :, None].expand_as(pos)
        owner[bidx[valid], pos[valid], widx[valid]] = 1.0
        size = owner.sum(1)                                                               # (B, W) pieces per word
        query = owner / size.clamp(min=1)[:, None, :]                                     # (B, L, W) mean over pieces
        for i, a in enumerate(weights):                                                   # a: (B, H, L, L)
            a = a.detach()
            keys = a @ owner[:, None]                                                     # (B, H, L, W)
            word = query.transpose(1, 2)[:, None] @ keys                                  # (B, H, W, W)
            total = word.sum(-1, keepdim=True)                                            # (B, H, W, 1)
            probe("attention", word / total.clamp(min=1e-12), layer=i)
            cls = keys[:, :, 0]                                                           # (B, H, W)
            probe("cls_attention", cls / cls.sum(-1, keepdim=True).clamp(min=1e-12), layer=i)
            real_word = (size > 0).to(a.dtype)[:, None]                                   # (B, 1, W)
            probe("special_share", (1.0 - total[..., 0]) * real_word, layer=i)


__all__ = ["ATTN_NAME", "HFClassifier", "HFConfig", "MAX_PIECES_PER_WORD", "WordPieceEmbedding", "WordTable",
           "register_attention", "textcls_attention"]
