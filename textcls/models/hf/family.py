"""What a Hugging Face family does that the word view must know: its special pieces, the position its head pools,
whether its attention is causal and where its attention weights can be read (`family_of`).

- **Special pieces**: the tokenizer's own template, read by encoding one word with and without special tokens:
  BERT [CLS] ... [SEP], RoBERTa <s> ... </s>, Llama <s> ..., GPT-2 / Qwen2 nothing. A tokenizer saved without a
  template falls back to [CLS]/[SEP] (or <s>/</s>) for an encoder here; loading then refuses such a folder, since
  transformers' own encoding adds none (textcls.checkpoint.hf.check_encoding compares the two on a probe text).
- **Pooled position** (what the classification head reads): "first" (BERT-likes: [CLS]), "last" (decoders: the
  last real piece, as transformers' `...ForSequenceClassification` of a decoder reads it) or "mean" (the mean over
  the real positions: ModernBERT with `classifier_pooling="mean"`).
- **Causal**: a decoder family (transformers has a causal language model for it and no masked one); its attention
  is a lower triangle by construction.
- **Where attention is read**: "interface" (the family calls transformers' attention interface: textcls' own
  attention function records and edits it), "output" (the family computes attention itself, e.g. DeBERTa's
  disentangled attention: the wrapper hooks its attention-probability dropout and then says "hooks", recorded and
  edited as through the interface; without such a dropout it is read through `output_attentions`, not editable),
  "none" (no attention weights at all, e.g. FNet's Fourier mixing).
- `prepare(hf_model, hf_tokenizer)` sets what a decoder lacks for batches: a pad token (its end-of-text token,
  else its unknown token) and right padding (the wrapper reads the last real piece wherever padding is).
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass

POOLINGS = ("first", "last", "mean")
# families whose embedding layer does something only from input ids, which the word-level wrapper never passes
EMBEDDING_FROM_IDS = {"esm": "ESM rescales its embeddings by the share of masked tokens, computed from the input ids"}
POOLED_TEXT = {"first": "the first position ({piece}), which the classification head reads",
               "last": "the last real piece, which a decoder's classification head reads",
               "mean": "the mean of every real position's row (the head pools the mean)"}


@dataclass(frozen=True)
class Family:
    """One wrapped model's family facts (see the module docstring)."""

    prefix: tuple[int, ...] = ()          # special piece ids laid out before the text's pieces
    suffix: tuple[int, ...] = ()          # ... and after them
    pooling: str = "first"                # one of POOLINGS
    causal: bool = False
    attention: str = "interface"          # "interface" | "output" | "hooks" | "none"
    names: tuple[str, ...] = ()           # the special pieces as written, prefix then suffix (for the descriptions)

    @property
    def specials(self) -> int:
        return len(self.prefix) + len(self.suffix)

    @property
    def pooled(self) -> str:
        """One phrase naming the position whose row is the map of what the classifier reads."""
        return POOLED_TEXT[self.pooling].format(piece=self.names[0] if self.names else "[CLS]")

    @property
    def pooled_map(self) -> str:
        """The name of that map: cls_attention for first-position pooling (as the Transformer's), else
        pooled_attention."""
        return "cls_attention" if self.pooling == "first" else "pooled_attention"


def _causal_types() -> set[str]:
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_MASKED_LM_MAPPING_NAMES)
    return set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) - set(MODEL_FOR_MASKED_LM_MAPPING_NAMES)


def _template(hf_tokenizer) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(prefix, suffix) the tokenizer adds around a text's pieces."""
    bare = list(hf_tokenizer("film", add_special_tokens=False)["input_ids"])
    full = list(hf_tokenizer("film", add_special_tokens=True)["input_ids"])
    for i in range(len(full) - len(bare) + 1):
        if bare and full[i:i + len(bare)] == bare:
            return tuple(full[:i]), tuple(full[i + len(bare):])
    return (), ()


def _attention_source(hf_model) -> str:
    if getattr(type(hf_model), "_supports_attention_backend", False):
        return "interface"
    if "output_attentions" in inspect.signature(hf_model.forward).parameters or \
            "attentions" in (getattr(hf_model, "_can_record_outputs", None) or {}):
        return "output"
    return "none"


def takes_mask(hf_model) -> bool:
    """Whether the model's forward takes an attention mask (FNet's Fourier mixing has none: every position mixes
    with every other, pads included)."""
    params = inspect.signature(hf_model.forward).parameters
    return "attention_mask" in params


def decoder_head(hf_model):
    """The per-position linear layer whose output a decoder's head pools at the last token: `score` (GPT-2,
    Llama, ...) or `classifier` (CTRL, ModernBERT-decoder); None if there is neither."""
    import torch.nn as nn
    for name in ("score", "classifier"):
        head = getattr(hf_model, name, None)
        if isinstance(head, nn.Linear):
            return head
    return None


def family_of(hf_model, hf_tokenizer) -> Family:
    """The Family of a loaded `...ForSequenceClassification` and its tokenizer (call `prepare` first).
    ValueError with one line for a family textcls cannot lay out (an encoder without [CLS]/[SEP] pieces, a
    decoder head that is not a per-position `score` layer)."""
    c = hf_model.config
    model_type = str(getattr(c, "model_type", ""))
    if model_type in EMBEDDING_FROM_IDS:
        raise ValueError(f"{type(hf_model).__name__}: {EMBEDDING_FROM_IDS[model_type]}; textcls runs a model on its "
                         "word pieces' embeddings, so its probabilities would differ from the model's own - refused")
    if getattr(c, "is_encoder_decoder", False):
        raise ValueError(f"{type(hf_model).__name__} is an encoder-decoder; textcls wraps encoders and decoders "
                         "with a sequence-classification head")
    causal = model_type in _causal_types()
    prefix, suffix = _template(hf_tokenizer)
    if not causal and not prefix:
        cls = hf_tokenizer.cls_token_id if hf_tokenizer.cls_token_id is not None else hf_tokenizer.bos_token_id
        sep = hf_tokenizer.sep_token_id if hf_tokenizer.sep_token_id is not None else hf_tokenizer.eos_token_id
        if cls is None or sep is None:
            raise ValueError("the tokenizer has no [CLS]/[SEP] (or <s>/</s>) token and adds none; textcls needs "
                             "the position the encoder's head reads")
        prefix, suffix = (int(cls),), (int(sep),)
    if causal:
        pooling = "last"
        if decoder_head(hf_model) is None:
            raise ValueError(f"{type(hf_model).__name__}: a decoder whose head is not a per-position linear layer "
                             "('score' or 'classifier'); textcls cannot find the last real piece it pools")
    elif str(getattr(c, "classifier_pooling", "cls")) == "mean":
        pooling = "mean"
    else:
        pooling = "first"
    names = tuple(str(t) for t in hf_tokenizer.convert_ids_to_tokens(list(prefix) + list(suffix)))
    return Family(tuple(int(i) for i in prefix), tuple(int(i) for i in suffix), pooling, causal,
                  _attention_source(hf_model), names)


def prepare(hf_model, hf_tokenizer) -> None:
    """A pad token for a tokenizer that has none (its end-of-text, else unknown token; the config's pad_token_id
    set to it, as transformers needs one for batches) and right padding. In place."""
    if hf_tokenizer.pad_token is None:
        for name in ("eos_token", "unk_token", "bos_token"):
            if getattr(hf_tokenizer, name, None) is not None:
                hf_tokenizer.pad_token = getattr(hf_tokenizer, name)
                break
    hf_tokenizer.padding_side = "right"
    config = hf_model.config
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    for cfg in {id(config): config, id(text): text}.values():
        if getattr(cfg, "pad_token_id", None) is None:
            cfg.pad_token_id = hf_tokenizer.pad_token_id if hf_tokenizer.pad_token_id is not None else 0


__all__ = ["Family", "POOLINGS", "decoder_head", "family_of", "prepare", "takes_mask"]
