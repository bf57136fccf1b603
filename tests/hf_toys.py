"""Tiny Hugging Face encoders for tests: built from a config with random weights and a small word-piece
vocabulary, saved with save_pretrained to a folder (no network). `tiny_folder(tmp, "bert" | "distilbert")`."""
from __future__ import annotations

from pathlib import Path

WORDS = ("the a an and but not no is was it this that film movie story good great bad awful fun dull "
         "funny boring love hate best worst very really plot acting , . ! ? ' s t don").split()
PIECES = ["##s", "##ing", "##ed", "##ly", "##er", "un", "##be", "##liev", "##able", "##a", "##b", "##c"]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def vocab() -> list[str]:
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    return SPECIALS + WORDS + PIECES + letters + ["##" + c for c in letters if "##" + c not in PIECES]


def tiny_folder(root: str | Path, arch: str = "bert", labels=("negative", "positive"), seed: int = 0,
                meta: dict | None = None, *, name: str | None = None, positions: int = 64,
                tokenizer_max: int | None = None) -> Path:
    """A save_pretrained folder ROOT/NAME (default tiny-ARCH); `meta` is written as textcls.json (data set,
    metrics). `positions`: the position table's size; `tokenizer_max`: the tokenizer's model_max_length (None:
    the tokenizer's own default, which caps nothing)."""
    import json

    import torch
    from transformers import (BertConfig, BertForSequenceClassification, BertTokenizerFast, DistilBertConfig,
                              DistilBertForSequenceClassification)
    root = Path(root) / (name or f"tiny-{arch}")
    root.mkdir(parents=True, exist_ok=True)
    (root / "vocab.txt").write_text("\n".join(vocab()) + "\n", encoding="utf-8")
    tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab())}, do_lower_case=True,
                            **({} if tokenizer_max is None else {"model_max_length": tokenizer_max}))
    id2label = dict(enumerate(labels))
    label2id = {v: k for k, v in id2label.items()}
    torch.manual_seed(seed)
    if arch == "bert":
        cfg = BertConfig(vocab_size=len(vocab()), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=64, max_position_embeddings=positions, id2label=id2label,
                         label2id=label2id)
        model = BertForSequenceClassification(cfg)
    else:
        cfg = DistilBertConfig(vocab_size=len(vocab()), dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                               max_position_embeddings=positions, id2label=id2label, label2id=label2id)
        model = DistilBertForSequenceClassification(cfg)
    model.save_pretrained(root, safe_serialization=True)
    tok.save_pretrained(root)
    if meta is not None:
        (root / "textcls.json").write_text(json.dumps(meta), encoding="utf-8")
    return root


# ---------------------------------------------------------------- one tiny model per family

CORPUS = [" ".join(WORDS), "this movie was unbelievable , really good !", "the plot is dull and the acting awful .",
          "I don't love it but it wasn't boring", "a great story , the best film", "un be liev able films acting"]
CORPUS = CORPUS * 3 + [" ".join(chr(c) for c in range(ord("a"), ord("z") + 1))]
_BERT_SPECIALS = {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"}
_ROBERTA_SPECIALS = {"pad": "<pad>", "unk": "<unk>", "cls": "<s>", "sep": "</s>", "mask": "<mask>"}
_DECODER_SPECIALS = {"pad": None, "unk": None, "bos": "<|endoftext|>", "eos": "<|endoftext|>"}
_LLAMA_SPECIALS = {"pad": None, "unk": "<unk>", "bos": "<s>", "eos": "</s>"}
_S = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
          max_position_embeddings=64)
_GQA = dict(_S, num_key_value_heads=2)                  # grouped-query attention: 2 key/value heads for 4 query heads
# family -> (config class, its tiny config, tokenizer kind, specials, template: "cls" [CLS] $A [SEP], "bos" <s> $A,
#            "none": the text's pieces only)
FAMILIES: dict[str, tuple[str, dict, str, dict, str]] = {
    "bert": ("BertConfig", _S, "wordpiece", _BERT_SPECIALS, "cls"),
    "distilbert": ("DistilBertConfig", dict(dim=32, n_layers=2, n_heads=4, hidden_dim=64, max_position_embeddings=64),
                   "wordpiece", _BERT_SPECIALS, "cls"),
    "electra": ("ElectraConfig", dict(_S, embedding_size=16), "wordpiece", _BERT_SPECIALS, "cls"),
    "roberta": ("RobertaConfig", dict(_S, max_position_embeddings=66, pad_token_id=1), "bytelevel",
                _ROBERTA_SPECIALS, "cls"),
    "xlm-roberta": ("XLMRobertaConfig", dict(_S, max_position_embeddings=66, pad_token_id=1), "unigram",
                    _ROBERTA_SPECIALS, "cls"),
    "albert": ("AlbertConfig", dict(_S, embedding_size=16), "unigram", _BERT_SPECIALS, "cls"),
    "deberta-v2": ("DebertaV2Config", dict(_S, relative_attention=True, pos_att_type=["c2p", "p2c"],
                                           position_buckets=16, max_relative_positions=32, position_biased_input=False,
                                           pooler_hidden_size=32),
                   "unigram", _BERT_SPECIALS, "cls"),
    "modernbert": ("ModernBertConfig", dict(_S, global_attn_every_n_layers=2, local_attention=4,
                                            classifier_pooling="mean"), "bytelevel", _BERT_SPECIALS, "cls"),
    "gpt2": ("GPT2Config", dict(n_embd=32, n_layer=2, n_head=4, n_positions=64), "bytelevel", _DECODER_SPECIALS,
             "none"),
    "qwen2": ("Qwen2Config", _GQA, "bytelevel", _DECODER_SPECIALS, "none"),
    "llama": ("LlamaConfig", dict(_GQA, head_dim=8), "bytelevel", _LLAMA_SPECIALS, "bos"),
    "mistral": ("MistralConfig", dict(_GQA, head_dim=8, sliding_window=3), "bytelevel", _LLAMA_SPECIALS, "bos"),
    "gemma": ("GemmaConfig", dict(_GQA, head_dim=8), "unigram", _LLAMA_SPECIALS, "bos"),
    "gemma2": ("Gemma2Config", dict(_GQA, head_dim=8, attn_logit_softcapping=2.0, sliding_window=4), "unigram",
               _LLAMA_SPECIALS, "bos"),                                        # soft-capped attention logits
    "modernbert-decoder": ("ModernBertDecoderConfig", dict(_S, local_attention=4), "bytelevel", _DECODER_SPECIALS,
                           "none"),                                   # its head is 'classifier', not 'score'
    "phi": ("PhiConfig", dict(_S, partial_rotary_factor=0.5), "bytelevel", _DECODER_SPECIALS, "none"),
    "convbert": ("ConvBertConfig", dict(_S, embedding_size=32), "wordpiece", _BERT_SPECIALS, "cls"),  # pads read
    "fnet": ("FNetConfig", dict(hidden_size=32, num_hidden_layers=2, intermediate_size=64, max_position_embeddings=64,
                                pad_token_id=0), "unigram", _BERT_SPECIALS, "cls"),   # no attention: Fourier mixing
}


def _train_tokenizer(kind: str, specials: dict):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    names = [v for v in dict.fromkeys(specials.values()) if v]
    if kind == "wordpiece":
        tok = Tokenizer(models.WordPiece(unk_token=specials["unk"]))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(vocab_size=300, special_tokens=names)
    elif kind == "bytelevel":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=names,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    else:                                                           # sentencepiece-like: ▁ marks a word's start
        tok = Tokenizer(models.Unigram())
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        trainer = trainers.UnigramTrainer(vocab_size=200, special_tokens=names, unk_token=specials.get("unk"))
    tok.train_from_iterator(CORPUS, trainer)
    return tok


def family_folder(root: str | Path, family: str, labels=("negative", "positive"), seed: int = 0) -> Path:
    """A save_pretrained folder ROOT/tiny-FAMILY: a tiny random `...ForSequenceClassification` of the family (2
    layers, hidden 32) and a fast tokenizer trained here on a few sentences (WordPiece, byte-level BPE or Unigram
    with ▁, as the family's own), with the family's special-token template. Nothing is downloaded."""
    import torch
    import transformers
    from tokenizers import processors
    cls_name, kwargs, kind, specials, template = FAMILIES[family]
    root = Path(root) / f"tiny-{family}"
    root.mkdir(parents=True, exist_ok=True)
    tok = _train_tokenizer(kind, specials)
    tid = tok.token_to_id
    if template == "cls":
        tok.post_processor = processors.TemplateProcessing(
            single=f"{specials['cls']} $A {specials['sep']}",
            special_tokens=[(specials["cls"], tid(specials["cls"])), (specials["sep"], tid(specials["sep"]))])
    elif template == "bos":
        tok.post_processor = processors.TemplateProcessing(
            single=f"{specials['bos']} $A", special_tokens=[(specials["bos"], tid(specials["bos"]))])
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, **{f"{k}_token": v for k, v in specials.items() if v},
        do_lower_case=kind == "wordpiece")
    id2label = dict(enumerate(labels))
    cfg_kwargs = dict(kwargs, vocab_size=tok.get_vocab_size(), id2label=id2label, initializer_range=0.2,
                      label2id={v: k for k, v in id2label.items()})
    for k in ("pad", "bos", "eos"):
        if specials.get(k):
            cfg_kwargs[f"{k}_token_id"] = tid(specials[k])
    if specials.get("cls"):
        for k, v in (("cls", "cls"), ("sep", "sep"), ("bos", "cls"), ("eos", "sep")):
            cfg_kwargs.setdefault(f"{k}_token_id", tid(specials[v]))
    config = getattr(transformers, cls_name)(**cfg_kwargs)
    for k in ("pad", "bos", "eos"):              # a default id of the real vocabulary (ModernBERT-decoder's 50283)
        if (getattr(config, f"{k}_token_id", None) or 0) >= tok.get_vocab_size():
            setattr(config, f"{k}_token_id", tid(specials.get("eos") or specials.get("sep")))
    torch.manual_seed(seed)
    model = transformers.AutoModelForSequenceClassification.from_config(config)
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()
    model.save_pretrained(root, safe_serialization=True)
    fast.save_pretrained(root)
    return root
