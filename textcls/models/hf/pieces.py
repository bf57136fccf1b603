"""The word-piece view of a Hugging Face checkpoint: the pieces the encoder read for one text and its attention
over them, next to the word view every page shows (`textcls.models.hf.model` aggregates pieces into words).

`piece_attention_of(predictor, text)` encodes the text with the checkpoint's own word tokenizer (truncation
included), takes each word's pieces from the model's word table - exactly the ids the forward lays out as
the template's special pieces around them ([CLS] pieces... [SEP], <s> pieces..., or the pieces alone) - and
returns them as strings ("un", "##believ", "##able") with the (layer, head, L, L)
piece attention. `piece_window` maps the page's word window onto the pieces of the same words, and
`WORD_RULE` states, in words, what the word view makes of these weights.
"""
from __future__ import annotations

# The text's pieces as plain data, and what the pages say of them, live without torch (the app's server draws them
# from what its model worker computed); re-exported here, where they are computed.
from textcls.data.pieces import WORD_RULE, PieceAttention, piece_window, shown_note


def has_word_pieces(predictor) -> bool:
    """Whether the checkpoint's model reads word pieces whose attention `piece_attention_of` can show (a Hugging
    Face model whose family computes attention weights)."""
    family = getattr(predictor.model, "family", None)
    return callable(getattr(predictor.model, "piece_attention", None)) and hasattr(predictor.model, "table") \
        and hasattr(getattr(predictor.tokenizer, "hf", None), "convert_ids_to_tokens") \
        and getattr(family, "attention", "none") != "none"


def piece_attention_of(predictor, text: str) -> PieceAttention:
    """The pieces the encoder read for `text` (truncated as the prediction is) and its attention over them.
    Raises ValueError for a checkpoint without word pieces."""
    if not has_word_pieces(predictor):
        raise ValueError(f"{getattr(predictor, 'name', 'this checkpoint')} does not read word pieces")
    model, hf = predictor.model, predictor.tokenizer.hf
    enc = predictor.encode([text])
    n = int(enc.mask[0].sum())
    word_ids = enc.token_ids[0, :n].tolist()
    pieces = list(hf.convert_ids_to_tokens(model.prefix)) if model.prefix else []
    owner = [-1] * len(pieces)
    for w, wid in enumerate(word_ids):
        ids = list(model.table.pieces(wid))
        pieces += hf.convert_ids_to_tokens(ids)
        owner += [w] * len(ids)
    if model.suffix:
        pieces += hf.convert_ids_to_tokens(model.suffix)
        owner += [-1] * len(model.suffix)
    if not pieces:                                                       # an empty text: the one filler piece
        pieces, owner = hf.convert_ids_to_tokens([model.filler]), [-1]
    device = next(model.parameters()).device
    a = model.piece_attention(enc.token_ids.to(device), enc.mask.to(device))[0]     # (layer, head, L', L')
    L = len(pieces)
    att = a[:, :, :L, :L].float().cpu().numpy()                          # (layer, head, L, L)
    truncated = bool(enc.truncated[0]) if getattr(enc, "truncated", None) else False
    family = model.family
    rows = {"first": (0,), "last": (L - 1,), "mean": tuple(range(L))}[family.pooling]
    return PieceAttention(list(enc.tokens[0]), pieces, owner, att, truncated, int(model.config.max_len), rows,
                          family.pooled, family.causal)


__all__ = ["PieceAttention", "WORD_RULE", "has_word_pieces", "piece_attention_of", "piece_window", "shown_note"]
