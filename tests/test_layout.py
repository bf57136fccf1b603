"""The library's shape, read with `ast` from every file of textcls/: imports only point down (no cycle, counting
imports inside functions too; and between packages, only from a higher layer to a lower one - see LAYERS), a
model file never imports another model family, and no file imports Streamlit; the top level holds the public
contract only.
Also: every module says what it is for, and no file of textcls/ or pages/ grows past MAX_LINES lines (a longer one is
split along its own sections into modules of their own), and docs/architecture.md's tree and layer table name
every package and top-level module that exists, and nothing that does not."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LIB = REPO / "textcls"
PAGES = REPO / "pages"
# shared by several model families (not a family): relation = the entity-position input of ACT and the Transformer
MODEL_SHARED = {"textcls.models", "textcls.models.base", "textcls.models.layers", "textcls.models.registration",
                "textcls.models.relation", "textcls.models.outputs", "textcls.models.registry",
                "textcls.models.configs", "textcls.models.configs.base", "textcls.models.configs.relation"}


def family_of(module: str) -> str:
    """A model module's family: one file, one folder (textcls/models/hf/), and its config (textcls/models/configs/)."""
    parts = module.split(".")
    return parts[3] if parts[2] == "configs" else parts[2]
MAX_LINES = 600


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(LIB.rglob("*.py"))}


def imports_of(path: Path) -> set[str]:
    """Every module of textcls that `path` imports anywhere (module level or inside a function), resolved.
    `from pkg import name` counts as importing pkg.name when that is a module, else pkg."""
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
            out.update(subs or [target])
            if subs and len(subs) < len(node.names):
                out.add(target)
    return out


GRAPH = {m: {t for t in imports_of(p) if t in MODULES and t != m} for m, p in MODULES.items()}


def test_the_walk_sees_the_library():
    assert {"textcls.models.act", "textcls.models.registry", "textcls.checkpoint", "textcls.runtime.paths"} <= set(MODULES)
    assert "textcls.models.layers" in GRAPH["textcls.models.act"]              # a relative import resolved
    assert "textcls.models" in GRAPH["textcls.models.registry"]


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    WHITE, GREY, BLACK = 0, 1, 2
    colour = dict.fromkeys(graph, WHITE)
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        colour[n] = GREY
        stack.append(n)
        for m in sorted(graph[n]):
            if colour[m] == GREY:
                return stack[stack.index(m):] + [m]
            if colour[m] == WHITE and (found := visit(m)):
                return found
        stack.pop()
        colour[n] = BLACK
        return None

    for n in sorted(graph):
        if colour[n] == WHITE and (found := visit(n)):
            return found
    return None


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle():
    """Package __init__ files that re-export their submodules are leaves' parents, not their children: a
    submodule importing its own package would be a cycle and is reported like any other."""
    assert find_cycle(GRAPH) is None, " -> ".join(find_cycle(GRAPH))


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("textcls.models.")
                                          and m not in MODEL_SHARED))
def test_a_model_file_imports_no_other_model_family(module):
    others = {t for t in GRAPH[module] if t.startswith("textcls.models.") and t not in MODEL_SHARED
              and family_of(t) != family_of(module)}
    assert not others, f"{module} imports {sorted(others)}: move shared blocks to textcls/models/layers.py"


def test_the_library_never_imports_streamlit():
    bad = {m for m, p in MODULES.items() if any(t.split(".")[0] == "streamlit" for t in imports_of(p))}
    assert not bad, bad


def test_every_module_says_what_it_is_for():
    missing = [m for m, p in MODULES.items()
               if p.stat().st_size and not ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))]
    assert not missing, missing


def test_no_file_is_longer_than_max_lines():
    """No excuses: a file that outgrows MAX_LINES is split along its own sections into modules of their own."""
    files = sorted(LIB.rglob("*.py")) + sorted(PAGES.rglob("*.py"))
    lines = {str(p.relative_to(REPO)): len(p.read_text(encoding="utf-8").splitlines()) for p in files}
    long = {name: n for name, n in lines.items() if n > MAX_LINES}
    assert not long, f"over {MAX_LINES} lines - split them along their sections: {long}"


# The packages in the order they may import each other: a module imports only from its own layer or lower ones.
# docs/architecture.md draws the same picture.
LAYERS = {
    "runtime": 0,                                     # paths, files, devices, threads, memory, limits, sizing
    "data": 1,                                        # data sets, tokenisation, vectors, batching
    "models": 2,                                      # the model families, their outputs, the registry
    "interpret": 3,                                   # a model's own importance, attributions, faithfulness
    "analysis": 4, "records": 4, "inference": 4, "checkpoint": 4,   # the contract (checkpoint: both kinds); analysis
    "train": 5, "viz": 5,                             # training; figures
    "experiments": 6, "teach": 6,                     # benchmarks, studies, reproductions; the lessons
    "serve": 6,                                       # the app's model worker process
    "cli": 7, "__main__": 8,                          # the command line
}
TOP_LEVEL_FILES = 8


def layer_of(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.get(parts[1]) if len(parts) > 1 else None


def test_every_package_has_a_layer():
    missing = sorted({m.split(".")[1] for m in MODULES if "." in m and layer_of(m) is None})
    assert not missing, f"add these to LAYERS (and docs/architecture.md): {missing}"


def test_imports_point_down_the_layers():
    up = [f"{m} -> {t}" for m, targets in GRAPH.items() for t in targets
          if layer_of(m) is not None and layer_of(t) is not None and layer_of(t) > layer_of(m)]
    assert not up, up


def test_the_top_level_holds_few_files():
    top = sorted(p.name for p in LIB.glob("*.py"))
    assert len(top) <= TOP_LEVEL_FILES, top


# docs/architecture.md draws the tree and the layers: it names what exists, and only that.
ARCHITECTURE = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")


def architecture_tree() -> str:
    """The code block under '## The tree'."""
    after = ARCHITECTURE.split("## The tree", 1)[1]
    return after.split("```", 2)[1]


def test_the_architecture_tree_names_every_package_and_top_level_module():
    tree = architecture_tree()
    wanted = [p.name for p in LIB.glob("*.py")] + [
        p.parent.name + "/" for p in LIB.rglob("__init__.py") if p.parent != LIB]
    missing = sorted({w for w in wanted if not re.search(rf"(?<![\w/.]){re.escape(w)}", tree)})
    assert not missing, f"docs/architecture.md's tree does not name {missing}"


def test_the_architecture_tree_names_only_what_exists():
    tree = architecture_tree()
    files = {p.name for p in REPO.glob("*.py")} | {p.name for d in (LIB, PAGES) for p in d.rglob("*.py")}
    folders = {p.name for p in REPO.iterdir() if p.is_dir()} | {
        p.name for d in (LIB, PAGES) for p in d.rglob("*") if p.is_dir() and p.name != "__pycache__"}
    gone = sorted({f for f in re.findall(r"[\w]+\.py\b", tree) if f not in files} |
                  {f"{d}/" for d in re.findall(r"(?<![\w/-])(\w+)/(?=[\s(]|$)", tree, flags=re.M) if d not in folders})
    assert not gone, f"docs/architecture.md's tree names what does not exist: {gone}"


def test_the_architecture_layer_table_is_layers():
    table = {}
    for row in re.findall(r"^\| (\d+) \| ([^|]+) \|", ARCHITECTURE, flags=re.M):
        for name in re.findall(r"`(\w+)`", row[1]):
            table[name] = int(row[0])
    packages = {k: v for k, v in LAYERS.items() if k != "__main__"}
    assert table == packages, f"docs/architecture.md's layer table: {table}; LAYERS: {packages}"
