"""Checkpoints: the one package that decides whether a folder is a checkpoint, reads it and writes it.

Two kinds of folder, one set of rules:

- `native`: textcls's own folders (config.json with the textcls format marker, vocab.json, model.safetensors,
  history.json): save, load, validate, list.
- `hf`: Hugging Face folders (`save_pretrained`, a fine-tuning delta over an installed base, `hf:ID`), checked by
  `guard` (sizes on the meta device, weights, tokenizer, labels) before anything of them is allocated or run.
- `files`: what both share - every file read as a regular file inside its folder under a size cap, the one strict
  safetensors header reader, sha256, the one atomic folder writer (fsynced), and the one error type,
  `CheckpointError` (`HFError` is the same class).
- `legacy`: a model config from any older config.json (`config_from_dict`; old field names: `FIELD_ALIASES`).

The names other modules use are re-exported here; import them from `textcls.checkpoint`. Listing imports no torch.
"""
from __future__ import annotations

from textcls.checkpoint.files import (FLOAT_DTYPES, CheckpointError, HFError, file_identity, file_sha256,
                                      read_capped, read_json_file, recover_folder, safe, safetensors_header,
                                      write_folder)
from textcls.checkpoint.guard import (base_files, check_base_files, check_files, check_tokenizer, check_weights,
                                      config_object, install_command, meta_skeleton, probe_tokenizer, read_json)
from textcls.checkpoint.hf import (DELTA_FORMAT, base_folder, check_hf_target, check_tokenizer_files, hf_summary,
                                   is_hf_folder, load_hf, refuse_remote_code, save_delta, save_hf, wrap_model)
from textcls.checkpoint.legacy import FIELD_ALIASES, aliases_for, config_from_dict, current_names
from textcls.checkpoint.native import (FORMAT, FORMAT_VERSION, MAX_JSON_BYTES, CheckpointInfo, Validated, check_target,
                                       checkpoint_info, list_all_checkpoints, list_checkpoints, load_checkpoint,
                                       load_history, read_config, save_checkpoint, validate_checkpoint)

__all__ = [
    # the one error type, and the files of both kinds
    "CheckpointError", "HFError", "FLOAT_DTYPES", "file_identity", "file_sha256", "read_capped", "read_json_file",
    "recover_folder", "safe", "safetensors_header", "write_folder",
    # native textcls folders
    "FORMAT", "FORMAT_VERSION", "MAX_JSON_BYTES", "CheckpointInfo", "Validated", "check_target", "checkpoint_info",
    "FIELD_ALIASES", "aliases_for", "config_from_dict", "current_names", "list_all_checkpoints", "list_checkpoints", "load_checkpoint", "load_history", "read_config",
    "save_checkpoint", "validate_checkpoint",
    # Hugging Face folders and what they must pass
    "DELTA_FORMAT", "base_files", "base_folder", "check_base_files", "check_files", "check_hf_target",
    "check_tokenizer", "check_tokenizer_files", "check_weights", "config_object", "hf_summary", "install_command",
    "is_hf_folder", "load_hf", "meta_skeleton", "probe_tokenizer", "read_json", "refuse_remote_code", "save_delta",
    "save_hf", "wrap_model",
]
