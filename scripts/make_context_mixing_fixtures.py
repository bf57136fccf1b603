"""Make tests/fixtures/context_mixing_reference/: a tiny BERT and the GlobEnc and DecompX values its authors' own
code gives on it, so that tests/test_context_mixing_reference.py can hold textcls's globenc / decompx to them.

Not part of textcls and never imported by the tests. Two steps, each run once by hand:

1. `model` (the project's own virtual environment, which has textcls's transformers and tests/hf_toys.py):

       .venv/bin/python scripts/make_context_mixing_fixtures.py model

   builds `tests/hf_toys.tiny_folder(root, "bert", seed=0)` (BertForSequenceClassification, hidden 32, 2 layers,
   4 heads, intermediate 64, a word-piece vocabulary of 104 pieces) and copies its files into
   tests/fixtures/context_mixing_reference/tiny-bert/. A freshly initialised BERT has every bias 0 and every
   layer norm gamma = 1, beta = 0, which would hide exactly what the reference is for (how each method treats the
   biases and the layer norms), so the weights are then redrawn from a fixed generator (`perturb`: linear
   weights N(0, 0.2), every bias and beta N(0, 0.3), gamma 1 + N(0, 0.3), embeddings N(0, 1) / N(0, 0.3)) and
   saved with safetensors. The folder is the fixture from then on: the tests never rebuild it.

2. `reference` (a side environment with the authors' versions, NOT the project's):

       python3 -m venv /tmp/refenv
       /tmp/refenv/bin/pip install torch==2.13.0 "numpy<2"
       /tmp/refenv/bin/pip install --no-deps transformers==4.18.0      # the authors' pin (their READMEs, demos)
       /tmp/refenv/bin/pip install "huggingface-hub==0.16.4" sacremoses regex requests packaging pyyaml tqdm \
           safetensors
       # the authors' repositories, unmodified, side by side (any checkout of these commits):
       #   github.com/mohsenfayyaz/GlobEnc  a26b38bfdc00e01a994a0f07740f059d0431dca5  -> /tmp/ref/GlobEnc
       #   github.com/mohsenfayyaz/DecompX  b6bddf0b185f729c029b08d0f37108a5fcc85a4c  -> /tmp/ref/DecompX
       /tmp/refenv/bin/python scripts/make_context_mixing_fixtures.py reference --repos /tmp/ref

   (`tokenizers` is left out on purpose: transformers 4.18 wants tokenizers < 0.13, which has no wheel for
   Python 3.11, and checks its version only when it is installed; the texts are tokenised with the slow,
   pure-Python BertTokenizer of the folder's vocab.txt, lower-cased, [CLS] ... [SEP].)

   It imports the authors' modified modeling files as they are (GlobEnc `src/modeling/modeling_bert.py`,
   DecompX `src/modeling_bert.py`), loads the tiny BERT's weights into their BertForSequenceClassification and
   runs each text alone (batch 1, no padding), as their demo notebooks do:
   - GlobEnc (GlobEnc_Demo.ipynb): `model(..., output_attentions=True, output_norms=True, return_dict=False)`,
     N-Enc = norms[layer][4] per layer, `AttentionRollout().compute_flows([N], output_hidden_states=True)`, and
     the [CLS] row of the last layer's rolled-out matrix; cross-checked against the model's own
     `output_globenc=True` rollout;
   - DecompX (DecompX_Colab_Demo.ipynb, its config verbatim): `decompx_last_layer_outputs.classifier`, the
     (tokens, classes) part of each class logit per input position, with the pooler and classifier included.
   Writes reference.json beside tiny-bert/: per text the ids, tokens, logits, globenc and decompx, plus the
   commits, the library versions and the configs used.

`minilm` (side environment too, optional): the same two methods of the authors on an exported copy of
checkpoints/minilm-sst2 (`--export DIR`, `--ours FILE`: made in the project's venv, see `compare_minilm`), for
the agreement numbers in docs/context_mixing.md; nothing of it is stored as a fixture.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "context_mixing_reference"
COMMITS = {"GlobEnc": "a26b38bfdc00e01a994a0f07740f059d0431dca5",
           "DecompX": "b6bddf0b185f729c029b08d0f37108a5fcc85a4c"}
TEXTS = ["this movie was unbelievable , really good !",
         "the plot is dull and the acting awful .",
         "a great story , the best film",
         "not funny but not boring",
         "i hate it"]
DECOMPX_CONFIG = dict(include_biases=True, bias_decomp_type="absdot", include_LN1=True, include_FFN=True,
                      FFN_approx_type="GeLU_ZO", include_LN2=True, aggregation="vector",
                      include_classifier_w_pooler=True, tanh_approx_type="ZO", output_all_layers=True,
                      output_attention=None, output_res1=None, output_LN1=None, output_FFN=None, output_res2=None,
                      output_encoder=None, output_aggregated="norm", output_pooler="norm",
                      output_classifier=True)                    # DecompX_Colab_Demo.ipynb's "DecompX" config


# ---------------------------------------------------------------- step 1 (project venv)

def perturb(state: dict, seed: int = 0) -> dict:
    """Redraw a BERT state dict's values from a fixed generator so that biases and layer norms are not trivial."""
    import torch
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name in sorted(state):
        v = state[name]
        if not v.is_floating_point():
            out[name] = v
            continue
        n = torch.randn(v.shape, generator=g, dtype=torch.float32)
        if "LayerNorm.weight" in name:
            new = 1 + 0.3 * n
        elif name.endswith("bias"):
            new = 0.3 * n
        elif "word_embeddings" in name:
            new = n
        elif "embeddings" in name:
            new = 0.3 * n
        else:
            new = 0.2 * n
        out[name] = new.to(v.dtype).contiguous()
    return out


def make_model(out: Path) -> None:
    import tempfile

    from safetensors.torch import load_file, save_file
    sys.path.insert(0, str(ROOT / "tests"))
    from hf_toys import tiny_folder
    with tempfile.TemporaryDirectory() as tmp:
        src = tiny_folder(tmp, "bert", seed=0)
        out.mkdir(parents=True, exist_ok=True)
        for f in ("config.json", "vocab.txt", "tokenizer.json", "tokenizer_config.json"):
            shutil.copy(src / f, out / f)
        state = load_file(str(src / "model.safetensors"))
    save_file(perturb(state), str(out / "model.safetensors"), metadata={"format": "pt"})


# ---------------------------------------------------------------- step 2 (side environment)

def _authors(repos: Path):
    sys.path.insert(0, str(repos))
    from DecompX.src.decompx_utils import DecompXConfig
    from DecompX.src.modeling_bert import BertForSequenceClassification as DecompXBert
    from GlobEnc.src.attention_rollout import AttentionRollout
    from GlobEnc.src.modeling.modeling_bert import BertForSequenceClassification as GlobEncBert
    return GlobEncBert, DecompXBert, DecompXConfig, AttentionRollout


def _load(cls, folder: Path, state_file: Path | None = None):
    import torch
    from safetensors.torch import load_file
    from transformers import BertConfig
    cfg = BertConfig.from_json_file(str(folder / "config.json"))
    model = cls(cfg)
    state = load_file(str(state_file or folder / "model.safetensors"))
    state = {k: v.float() for k, v in state.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) <= {"bert.embeddings.position_ids"}, (missing, unexpected)
    return model.eval().to(torch.float32)


def authors_values(folder: Path, repos: Path, texts: list[str], state_file: Path | None = None) -> list[dict]:
    import numpy as np
    import torch
    from transformers import BertTokenizer
    GlobEncBert, DecompXBert, DecompXConfig, AttentionRollout = _authors(repos)
    tok = BertTokenizer(str(folder / "vocab.txt"), do_lower_case=True)
    g_model, d_model = _load(GlobEncBert, folder, state_file), _load(DecompXBert, folder, state_file)
    rows = []
    for text in texts:
        enc = tok.encode_plus(text, return_tensors="pt")
        with torch.no_grad():
            logits, attentions, norms = g_model(**enc, output_attentions=True, output_norms=True, return_dict=False)
            n_enc = torch.stack([norms[i][4] for i in range(len(attentions))]).squeeze(1).numpy()   # (L, T, T)
            flows = np.array(AttentionRollout().compute_flows([n_enc], output_hidden_states=True,
                                                              disable_tqdm=True)[0])
            globenc = flows[-1][0]                                                # [CLS] row, all layers
            in_model = g_model(**enc, output_globenc=True, return_dict=False)[-1][0, 0].numpy()
            assert np.allclose(in_model, globenc, rtol=1e-4), (in_model, globenc)
            d_logits, _, last, _ = d_model(**enc, output_attentions=False, return_dict=False,
                                           output_hidden_states=True, decompx_config=DecompXConfig(**DECOMPX_CONFIG))
            decompx = last.classifier[0].numpy()                                  # (T, C)
        assert torch.allclose(d_logits, logits, atol=1e-5)
        rows.append({"text": text, "input_ids": enc["input_ids"][0].tolist(),
                     "tokens": tok.convert_ids_to_tokens(enc["input_ids"][0].tolist()),
                     "logits": logits[0].double().tolist(), "globenc": globenc.astype(float).tolist(),
                     "decompx": decompx.astype(float).tolist(),
                     "decompx_sum_minus_logits": (decompx.sum(0) - logits[0].numpy()).astype(float).tolist()})
    return rows


def make_reference(folder: Path, repos: Path, out: Path) -> None:
    import numpy
    import torch
    import transformers
    rows = authors_values(folder, repos, TEXTS)
    doc = {
        "about": "GlobEnc and DecompX of tiny-bert/ as computed by their authors' code, unmodified; made by "
                 "scripts/make_context_mixing_fixtures.py (see its docstring). Per text: input_ids ([CLS] ... "
                 "[SEP], the folder's vocab.txt, lower-cased); logits (2 classes); globenc: the [CLS] row of the "
                 "rollout N_L ... N_1 of GlobEnc's N-Enc matrices (no normalisation), one value per position; "
                 "decompx: (positions, classes), each position's part of each class logit with pooler and "
                 "classifier (their 'classifier' output).",
        "repos": {"github.com/mohsenfayyaz/GlobEnc": COMMITS["GlobEnc"],
                  "github.com/mohsenfayyaz/DecompX": COMMITS["DecompX"]},
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__,
                     "numpy": numpy.__version__, "python": sys.version.split()[0]},
        "globenc_call": "GlobEnc src/modeling/modeling_bert.py BertForSequenceClassification(..., "
                        "output_attentions=True, output_norms=True, return_dict=False): norms[layer][4] (N-Enc); "
                        "src/attention_rollout.py AttentionRollout().compute_flows([N], output_hidden_states=True)"
                        "[0][-1][0]",
        "decompx_config": DECOMPX_CONFIG,
        "decompx_call": "DecompX src/modeling_bert.py BertForSequenceClassification(..., return_dict=False, "
                        "output_hidden_states=True, decompx_config=DecompXConfig(**decompx_config)) -> "
                        "(logits, hidden_states, last_layer, all_layers); last_layer.classifier[0]",
        "texts": rows,
    }
    out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def compare_minilm(export: Path, repos: Path, ours: Path) -> None:
    """Agreement of the authors' code with textcls's on checkpoints/minilm-sst2. `export` holds config.json,
    vocab.txt and model.safetensors written from textcls's loaded model (the project's venv:
    `p = textcls.load_checkpoint("checkpoints/minilm-sst2"); save_file(p.model.hf.state_dict(), ...)`);
    `ours` a JSON list of {"text", "input_ids", "globenc", "decompx"} from textcls on the same texts."""
    import numpy as np
    from scipy.stats import spearmanr
    mine = json.loads(ours.read_text())
    theirs = authors_values(export, repos, [r["text"] for r in mine])
    for a, b in zip(mine, theirs):
        assert a["input_ids"] == b["input_ids"], (a["input_ids"], b["input_ids"])
        for key in ("globenc", "decompx"):
            x, y = np.asarray(a[key]), np.asarray(b[key])
            rel = np.abs(x - y).max() / np.abs(y).max()
            rho = spearmanr(x.ravel(), y.ravel()).correlation
            print(f"{key:8s} max |diff| / max |ref| = {rel:.2e}  spearman = {rho:.6f}  {a['text'][:40]}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("model")
    r = sub.add_parser("reference")
    r.add_argument("--repos", type=Path, default=Path("/tmp/ref"))
    m = sub.add_parser("minilm")
    m.add_argument("--repos", type=Path, default=Path("/tmp/ref"))
    m.add_argument("--export", type=Path, required=True)
    m.add_argument("--ours", type=Path, required=True)
    a = ap.parse_args(argv)
    if a.cmd == "model":
        make_model(FIXTURE / "tiny-bert")
    elif a.cmd == "reference":
        make_reference(FIXTURE / "tiny-bert", a.repos, FIXTURE / "reference.json")
    else:
        compare_minilm(a.export, a.repos, a.ours)


if __name__ == "__main__":
    main()
