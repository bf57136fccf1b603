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
                meta: dict | None = None) -> Path:
    """A save_pretrained folder ROOT/tiny-ARCH; `meta` is written as textcls.json (data set, metrics)."""
    import json

    import torch
    from transformers import (BertConfig, BertForSequenceClassification, BertTokenizerFast, DistilBertConfig,
                              DistilBertForSequenceClassification)
    root = Path(root) / f"tiny-{arch}"
    root.mkdir(parents=True, exist_ok=True)
    (root / "vocab.txt").write_text("\n".join(vocab()) + "\n", encoding="utf-8")
    tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab())}, do_lower_case=True)
    id2label = dict(enumerate(labels))
    label2id = {v: k for k, v in id2label.items()}
    torch.manual_seed(seed)
    if arch == "bert":
        cfg = BertConfig(vocab_size=len(vocab()), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=64, max_position_embeddings=64, id2label=id2label, label2id=label2id)
        model = BertForSequenceClassification(cfg)
    else:
        cfg = DistilBertConfig(vocab_size=len(vocab()), dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                               max_position_embeddings=64, id2label=id2label, label2id=label2id)
        model = DistilBertForSequenceClassification(cfg)
    model.save_pretrained(root, safe_serialization=True)
    tok.save_pretrained(root)
    if meta is not None:
        (root / "textcls.json").write_text(json.dumps(meta), encoding="utf-8")
    return root
