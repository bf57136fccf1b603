"""Try every family transformers offers with a `...ForSequenceClassification` as a new user would: a tiny random model
built from its config (2 layers, hidden 32, 4 heads, 2 key/value heads where the family has them), a byte-level BPE
tokenizer trained on the spot (`tests/hf_toys.py`), saved with save_pretrained, opened with
`textcls.load_checkpoint(folder).predict([text], return_maps=True)`. Offline.

    .venv/bin/python scripts/hf_family_table.py [--families gpt2,llama] [--json out.json] > table.md
    .venv/bin/python scripts/hf_family_table.py --from-json out.json        # the table again, nothing rerun

Per family, one row: whether it opens; where its attention is read (interface / hooks / output / none); the pooled
position; causal or not; and the checks: the probabilities equal transformers' own on the tokenizer's pieces, a
batch (right-padded) gives each text its own probabilities, the recorded piece attention equals transformers'
eager attention (`output_attentions`), word attention rows sum to 1, clean words. A family that cannot be built
from a generic tiny config (it needs sizes of its own) is listed with transformers' one-line reason.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

TEXTS = ["This movie wasn't acting unbelievable, really good!", "bad", "the plot is dull and the acting awful ."]
SIZES = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=64,
             max_position_embeddings=64, head_dim=8, embedding_size=32)


def build(root: Path, model_type: str, init: float = 0.2) -> Path:
    """A save_pretrained folder of a tiny random `model_type` classifier with a tokenizer trained here."""
    import torch
    import transformers
    from tokenizers import processors

    from hf_toys import _BERT_SPECIALS, _DECODER_SPECIALS, _train_tokenizer
    from textcls.models.hf.family import _causal_types
    causal = model_type in _causal_types()
    specials = _DECODER_SPECIALS if causal else _BERT_SPECIALS
    tok = _train_tokenizer("bytelevel", specials)
    tid = tok.token_to_id
    if not causal:
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", tid("[CLS]")), ("[SEP]", tid("[SEP]"))])
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok,
                                                **{f"{k}_token": v for k, v in specials.items() if v})
    ids = {"pad_token_id": tid("[PAD]") if not causal else tid(specials["eos"])}
    ids.update({"bos_token_id": tid(specials.get("bos") or "[CLS]"),
                "eos_token_id": tid(specials.get("eos") or "[SEP]")})
    config = transformers.AutoConfig.for_model(model_type, vocab_size=tok.get_vocab_size(), initializer_range=init,
                                               num_labels=2, **SIZES, **ids)
    torch.manual_seed(0)
    model = transformers.AutoModelForSequenceClassification.from_config(config).eval()
    with torch.no_grad():                     # transformers itself runs it (else: the sizes need the family's own)
        model(**fast(TEXTS[0], return_tensors="pt"))
    folder = root / model_type
    model.save_pretrained(folder, safe_serialization=True)
    fast.save_pretrained(folder)
    return folder


def check(folder: Path) -> dict:
    """What textcls shows for the folder and whether it is sound (see the module docstring)."""
    import numpy as np
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    import textcls
    p = textcls.load_checkpoint(folder)
    f = p.model.family
    row = {"class": type(p.model.hf).__name__, "attention": f.attention, "pooled": f.pooling, "causal": f.causal,
           "specials": " ".join(f.names) or "-"}
    hf = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    tok = AutoTokenizer.from_pretrained(folder)
    with torch.no_grad():
        ref = [torch.softmax(hf(**tok(t, return_tensors="pt")).logits, -1)[0].numpy() for t in TEXTS]
    alone = [np.array(list(p.predict(t)[0].probabilities.values())) for t in TEXTS]
    batch = p.predict(TEXTS, return_maps=True)
    row["same_as_hf"] = max(float(np.abs(a - r).max()) for a, r in zip(alone, ref)) < 1e-4
    row["padding"] = max(float(np.abs(a - np.array(list(b.probabilities.values()))).max())
                         for a, b in zip(alone, batch)) < 1e-4
    row["clean_words"] = all(w == w.strip() and w and not any(c in w for c in ("##", "Ġ", "▁"))
                             for b in batch for w in b.tokens)
    if f.attention == "none":
        row["rows_sum_to_1"] = row["eager_match"] = None
        return row
    row["rows_sum_to_1"] = all(np.allclose(b.maps["attention"].sum(-1), 1, atol=1e-4) and
                               np.allclose(b.maps[f.pooled_map].sum(-1), 1, atol=1e-4) for b in batch)
    try:
        eager = AutoModelForSequenceClassification.from_pretrained(folder, attn_implementation="eager").eval()
        with torch.no_grad():
            out = eager(**tok(TEXTS[2], return_tensors="pt"), output_attentions=True)
        want = torch.stack(out.attentions, 1)[0].numpy()
        enc = p.encode([TEXTS[2]])
        got = p.model.piece_attention(enc.token_ids, enc.mask)[0].numpy()
        row["eager_match"] = got.shape == want.shape and bool(np.allclose(got, want, atol=1e-4))
    except Exception as e:  # noqa: BLE001 - a family whose eager path returns no weights
        row["eager_match"] = f"n/a ({type(e).__name__})"
    return row


CHECKS = ("same_as_hf", "padding", "eager_match", "rows_sum_to_1", "clean_words")


def markdown(rows: list[dict]) -> str:
    """The table of the families that open, then one line per family refused or not built (docs/your_model.md)."""
    out = ["| family | class | attention read | pooled position | causal | special pieces | checks |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        if not r["status"].startswith("opens"):
            continue
        failed = [c for c in CHECKS if r.get(c) not in (True, None)]
        checks = "all pass" if not failed else "failed: " + ", ".join(
            f"{c} ({r[c]})" if isinstance(r[c], str) else c for c in failed)
        out.append(f"| {r['family']} | {r['class']} | {r['attention']} | {r['pooled']} | "
                   f"{'yes' if r['causal'] else 'no'} | {r['specials']} | {checks} |")
    for kind in ("refused or failed", "not built from a generic tiny config"):
        names = [r for r in rows if r["status"].startswith(kind)]
        if names:
            out += ["", f"{kind[0].upper() + kind[1:]} ({len(names)}):", ""]
            out += [f"- {r['family']}: {r['status'][len(kind) + 2:]}" for r in names]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", default="", help="comma-separated model types (default: every one)")
    ap.add_argument("--json", default="", help="also write the rows as JSON here")
    ap.add_argument("--init", type=float, default=0.2, help="initializer_range of the random weights")
    ap.add_argument("--from-json", default="", help="only print the table of rows written before with --json")
    ap.add_argument("--timeout", type=int, default=60, help="seconds one family may take (then: timed out)")
    args = ap.parse_args(argv)
    if args.from_json:
        print(markdown(json.loads(Path(args.from_json).read_text(encoding="utf-8"))))
        return 0
    warnings.filterwarnings("ignore")
    from transformers.models.auto.modeling_auto import MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES as S
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    types = [t for t in args.families.split(",") if t] or list(S)
    rows = []

    def alarm(*_):
        raise TimeoutError(f"over {args.timeout} s")
    signal.signal(signal.SIGALRM, alarm)
    with tempfile.TemporaryDirectory() as tmp:
        for t in types:
            t0 = time.time()
            row = {"family": t}
            signal.alarm(args.timeout)
            try:
                folder = build(Path(tmp), t, args.init)
            except Exception as e:  # noqa: BLE001
                row["status"] = f"not built from a generic tiny config: {type(e).__name__}: " + \
                    (str(e).splitlines() or [""])[0][:120]
                signal.alarm(0)
                rows.append(row)
                print(f"{t}: {row['status']}", file=sys.stderr)
                continue
            try:
                row.update(check(folder))
                sound = all(row.get(k) in (True, None) for k in ("same_as_hf", "padding", "clean_words",
                                                                 "rows_sum_to_1", "eager_match"))
                row["status"] = "opens, sound" if sound else "opens, CHECK FAILED"
            except Exception as e:  # noqa: BLE001
                row["status"] = f"refused or failed: {type(e).__name__}: " + (str(e).splitlines() or [""])[0][:160]
            signal.alarm(0)
            row["seconds"] = round(time.time() - t0, 1)
            rows.append(row)
            print(f"{t}: {row['status']}", file=sys.stderr)
    print(markdown(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
