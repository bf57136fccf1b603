"""Write docs/interfaces.md from the code: per module of the library, the first paragraph of its docstring and each
name of its `__all__` with its signature and the first line of its docstring. Nothing in it is copied by hand, so
it cannot drift: `tests/test_docs_generated.py` fails when the checked-in page differs from what this writes.

    python scripts/make_interfaces.py            # rewrite docs/interfaces.md
    python scripts/make_interfaces.py --check    # exit 1 when it is out of date
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "interfaces.md"
SKIP = ("textcls.__main__",)
MAX_SIGNATURE = 160


def modules() -> list[str]:
    import textcls
    names = ["textcls"]
    for info in pkgutil.walk_packages(textcls.__path__, "textcls."):
        if info.name not in SKIP and not info.name.rsplit(".", 1)[-1].startswith("_"):
            names.append(info.name)
    return sorted(names)


def first_paragraph(doc: str | None) -> str:
    text = inspect.cleandoc(doc or "").split("\n\n")[0]
    return " ".join(text.split())


def signature(obj) -> str:
    try:
        sig = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""
    sig = sig.replace(str(REPO), "")
    return sig if len(sig) <= MAX_SIGNATURE else sig[: MAX_SIGNATURE - 5] + " ...)"


def describe(module) -> list[str]:
    out = [f"## {module.__name__}", ""]
    head = first_paragraph(module.__doc__)
    if head:
        out += [head, ""]
    public = getattr(module, "__all__", None)
    if not public:
        return out
    for name in public:
        try:
            obj = getattr(module, name)
        except AttributeError:
            continue
        if inspect.isclass(obj) or inspect.isfunction(obj):
            kind = "class " if inspect.isclass(obj) else ""
            line = f"- `{kind}{name}{signature(obj)}`"
            doc = first_paragraph(obj.__doc__).split(". ")[0].rstrip(".")
            out.append(line + (f": {doc}." if doc and not doc.startswith(name + "(") else ""))
        else:
            out.append(f"- `{name}`")
    return out + [""]


def render() -> str:
    lines = ["# Internal interfaces (generated)", "",
             "Written by `python scripts/make_interfaces.py` from the code itself: each module's docstring and the "
             "names of its `__all__`, with their signatures. The public contract, the layout and the layers are in "
             "[architecture.md](architecture.md).", ""]
    for name in modules():
        try:
            module = importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - an optional dependency missing: say so, do not stop
            lines += [f"## {name}", "", f"(not importable here: {type(e).__name__})", ""]
            continue
        lines += describe(module)
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/interfaces.md is out of date")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print("docs/interfaces.md is current" if same else "docs/interfaces.md is out of date: "
              "python scripts/make_interfaces.py")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main())
