"""A data set's text as a person writes it (`readable`), without torch: the app's server shows example texts
(Inspect's example picker) without importing the models' text pipeline (textcls.data.text re-exports it)."""
from __future__ import annotations

import re

_HTML_BREAK = re.compile(r"<\s*br\s*/?\s*>", re.IGNORECASE)
_PTB_READABLE = re.compile(r"-[lr][rsc]b-|``|''|\\/|\\\*", re.IGNORECASE)
_PTB_MAP = {"-lrb-": "(", "-rrb-": ")", "-lsb-": "[", "-rsb-": "]", "-lcb-": "{", "-rcb-": "}", "``": '"', "''": '"',
            "\\/": "/", "\\*": "*"}


def readable(text: str) -> str:
    """A data set's text as a person writes it, for showing (and for a box the user edits): HTML line breaks
    (`<br />`, IMDB) become line breaks, and the Penn Treebank escapes of the SST files become the characters they
    stand for (`-lrb-` -> `(`, ``` `` ``` and `''` -> `"`, `\\/` -> `/`). Every model's tokenizer reads the result
    as it reads typed text."""
    text = _HTML_BREAK.sub("\n", text)
    text = re.sub(r"[ \t]*\n[ \t]*", "\n", text)
    return _PTB_READABLE.sub(lambda m: _PTB_MAP.get(m.group().lower(), m.group()), text)


__all__ = ["readable"]
