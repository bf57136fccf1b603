"""Hugging Face hub data sets (`load_hub`, online only) and the check that the hub answers (`check_hub`).

Splits "train", "validation" (-> "dev") and "test"; without a validation split 10% of train becomes dev
(seeded); rows labelled -1 (unlabelled test sets) are dropped. If the text / label column is not there under the
given name, the only string / class-label column is used (`pick_column`). Before any download a metadata
request with a short timeout runs in a daemon thread, so without network the call fails within
`HUB_TIMEOUT` seconds with a DataError instead of hanging; `HF_HUB_OFFLINE` / `HF_DATASETS_OFFLINE` make it
fail at once (`hub_offline_reason`).
"""
from __future__ import annotations

import os
import threading
from typing import Sequence

import numpy as np

from textcls.data.rows import SPLITS, DataBundle, DataError, Split, label_names, to_split

HUB_TIMEOUT = 5.0            # seconds for the hub reachability check
HUB_DEV_SPLITS = ("validation", "dev", "valid", "val")
_TRUE = ("1", "true", "yes", "on")


def hub_offline_reason() -> str | None:
    """Why the hub must not be tried (an offline environment variable), or None."""
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in _TRUE:
            return f"{var} is set"
    return None


def _probe_hub(repo_id: str, timeout: float) -> None:
    """One metadata request (raises when the data set is missing or the hub unreachable)."""
    from huggingface_hub import HfApi

    HfApi().dataset_info(repo_id, timeout=timeout)


def check_hub(repo_id: str, timeout: float | None = None) -> None:
    """DataError unless the hub answers for `repo_id` within `timeout` seconds (never hangs longer)."""
    timeout = HUB_TIMEOUT if timeout is None else timeout
    reason = hub_offline_reason()
    if reason:
        raise DataError(f"hub data set {repo_id!r} needs network access, but {reason} (offline); "
                        f"use a bundled data set or a local file")
    result: dict[str, BaseException] = {}

    def work():
        try:
            _probe_hub(repo_id, timeout)
        except BaseException as e:  # noqa: BLE001 - reported below
            result["error"] = e

    t = threading.Thread(target=work, name="textcls-hub-probe", daemon=True)
    t.start()
    t.join(timeout + 0.5)
    if t.is_alive():
        raise DataError(f"hub data set {repo_id!r}: huggingface.co did not answer within {timeout:g} s "
                        f"(offline?); use a bundled data set or a local file")
    err = result.get("error")
    if err is None:
        return
    kind = type(err).__name__
    if kind in ("RepositoryNotFoundError", "HFValidationError"):
        raise DataError(f"no data set {repo_id!r} on the Hugging Face hub") from None
    if kind == "GatedRepoError":
        raise DataError(f"hub data set {repo_id!r} is gated: log in with `hf auth login` and accept its "
                        f"terms") from None
    first = str(err).strip().splitlines()[0] if str(err).strip() else ""
    raise DataError(f"hub data set {repo_id!r}: cannot reach the hub ({kind}: {first}); offline? "
                    f"use a bundled data set or a local file") from None


def pick_column(features: dict, wanted: str, default: str, want_label: bool, repo_id: str) -> str:
    if wanted in features:
        return wanted
    if wanted == default:
        from datasets import ClassLabel, Value
        if want_label:
            cands = [k for k, f in features.items() if isinstance(f, ClassLabel)]
        else:
            cands = [k for k, f in features.items() if isinstance(f, Value) and f.dtype in ("string", "large_string")]
        if len(cands) == 1:
            return cands[0]
    raise DataError(f"hub data set {repo_id!r}: no column {wanted!r}; columns found: {list(features)}")


def load_hub(spec: str, *, text_column: str = "text", label_column: str = "label", seed: int = 0,
             labels: Sequence[str] | None = None) -> DataBundle:
    """A hub data set "ID" or "ID:CONFIG" through `datasets.load_dataset` (online only)."""
    repo_id, _, config = spec.partition(":")
    repo_id = repo_id.strip()
    if not repo_id:
        raise DataError("empty hub data set id (use hf:OWNER/NAME)")
    check_hub(repo_id)
    import datasets

    try:
        dd = datasets.load_dataset(repo_id, config or None)
    except Exception as e:  # noqa: BLE001
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DataError(f"hub data set {spec!r}: {first}") from None
    if not isinstance(dd, datasets.DatasetDict) or not dd:
        raise DataError(f"hub data set {spec!r}: no splits")
    any_split = next(iter(dd.values()))
    tcol = pick_column(any_split.features, text_column, "text", False, repo_id)
    lcol = pick_column(any_split.features, label_column, "label", True, repo_id)
    feat = any_split.features[lcol]
    class_names = list(feat.names) if isinstance(feat, datasets.ClassLabel) else None
    raw: dict[str, tuple[list, list]] = {}
    for name, ds in dd.items():
        mapped = "dev" if name in HUB_DEV_SPLITS else name
        if mapped not in SPLITS:
            continue
        cols = ds.select_columns([tcol, lcol]).to_dict()
        keep = [i for i, lab in enumerate(cols[lcol]) if lab is not None and lab != -1]
        if keep:
            raw[mapped] = ([cols[tcol][i] for i in keep], [cols[lcol][i] for i in keep])
    if not raw:
        raise DataError(f"hub data set {spec!r}: no labelled train/validation/test rows")
    if class_names is not None:
        names = list(labels) if labels is not None else class_names
        raw = {k: (t, [class_names[i] for i in lab]) for k, (t, lab) in raw.items()}
    else:
        names = label_names([x for _, lab in raw.values() for x in lab], labels)
    splits = {k: to_split(f"hf:{spec}[{k}]", t, lab, list(range(1, len(t) + 1)), "row", names, tcol, lcol)
              for k, (t, lab) in raw.items()}
    if "dev" not in splits and "train" in splits:
        tr = splits["train"]
        perm = np.random.default_rng(seed).permutation(len(tr))
        n_dev = max(1, len(tr) // 10)
        dev_idx, train_idx = np.sort(perm[:n_dev]), np.sort(perm[n_dev:])
        splits["dev"] = Split([tr.texts[i] for i in dev_idx], [tr.labels[i] for i in dev_idx])
        splits["train"] = Split([tr.texts[i] for i in train_idx], [tr.labels[i] for i in train_idx])
    splits = {k: splits[k] for k in SPLITS if k in splits}
    return DataBundle(repo_id.split("/")[-1] + (f"_{config}" if config else ""), names, splits, "",
                      f"hf:{spec}", {"hub_id": repo_id, "config": config or None})


__all__ = ["HUB_TIMEOUT", "HUB_DEV_SPLITS", "hub_offline_reason", "check_hub", "pick_column", "load_hub"]
