"""What several interpreters read from their `inputs` (textcls.interpret.interpreters.registry.INPUTS): a split of a
data set with its gold labels mapped onto the checkpoint's labels by name, and concept texts."""
from __future__ import annotations

from pathlib import Path

from textcls.interpret.interpreters.registry import InterpreterError


def data_name(predictor, inputs: dict) -> str:
    """`inputs["data"]`, or the data set the checkpoint records."""
    data = inputs.get("data")
    if data:
        return str(data)
    recorded = predictor.info.get("data") if isinstance(predictor.info.get("data"), dict) else {}
    data = recorded.get("spec") or recorded.get("name")
    if not data:
        raise InterpreterError("the checkpoint does not record its data set; name one (--data)")
    return str(data)


def split_rows(predictor, inputs: dict, split: str | None = None) -> tuple[list[str], list[int | None]]:
    """(texts, gold label indices into predictor.labels; None where the gold label is not one of the model's) of
    `split` (default inputs["split"], else test), at most inputs["limit"] texts (a seeded sample, in order)."""
    from textcls.data.datasets import DataError, load_data
    name = data_name(predictor, inputs)
    split = split or inputs.get("split") or "test"
    limit = inputs.get("limit")
    try:
        bundle = load_data(name, root=inputs.get("data_root"), limit=int(limit) if limit else None)
    except (DataError, KeyError, ValueError, FileNotFoundError, RecursionError) as e:
        raise InterpreterError(" ".join(str(e).split()) or type(e).__name__) from None
    if split not in bundle.splits:
        raise InterpreterError(f"data set {bundle.name!r} has no split {split!r} (has: {', '.join(bundle.splits)})")
    rows = bundle.splits[split]
    index = {str(l): i for i, l in enumerate(predictor.labels)}
    gold = [index.get(str(bundle.labels[y])) if 0 <= int(y) < len(bundle.labels) else None for y in rows.labels]
    return list(rows.texts), gold


def concept_texts(raw, *, least: int = 3) -> list[str]:
    """Concept texts from a list, a file of one text per line, or one string with texts separated by '|'; blank
    lines dropped, duplicates kept once. InterpreterError under `least` texts."""
    if isinstance(raw, (list, tuple)):
        texts = [str(t) for t in raw]
    else:
        raw = str(raw or "")
        p = Path(raw).expanduser() if raw and "\n" not in raw and len(raw) < 4096 else None
        if p is not None and p.is_file():
            if p.stat().st_size > 5_000_000:
                raise InterpreterError(f"concept file {p.name} is over 5 MB")
            texts = p.read_text(encoding="utf-8", errors="replace").splitlines()
        else:
            texts = raw.replace("\n", "|").split("|")
    texts = list(dict.fromkeys(t.strip() for t in texts if t.strip()))
    if len(texts) < least:
        raise InterpreterError(f"a concept needs at least {least} texts, got {len(texts)}")
    return texts
