"""The import graph keeps to docs/architecture.md: no cycles, no upward imports, a pure core.

The graph is read from the source with ``ast`` (imports inside functions
count too), so the test needs no import of the package. The layers are the
ones ``pyproject.toml`` gives import-linter (``make lint`` runs it as well).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "langchain_enhanced_memory"
NAME = PACKAGE.name


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Package modules ``path`` imports (``from . import x`` counts as module ``x``)."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith(NAME))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith(NAME):
                out.add(target)
                out.update(f"{target}.{a.name}" for a in node.names)
    return out


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py") if "skill_template" not in p.parts}
    return {m: {t for t in _imports(p) if t in files and t != m} for m, p in files.items()}


GRAPH = _graph()


def test_the_graph_is_read() -> None:
    assert f"{NAME}.engine" in GRAPH[f"{NAME}.commands.common"]
    assert f"{NAME}.core.settings" in GRAPH[f"{NAME}.engine.config"]


def test_no_import_cycles() -> None:
    # Tarjan's strongly connected components; a component of two or more is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert cycles == []


def _layers() -> list[list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = config["tool"]["importlinter"]["contracts"]
    return [[m.strip() for m in layer.split("|")] for layer in contract["layers"]]


def _home(module: str, layers: list[list[str]]) -> tuple[int, str] | None:
    for depth, layer in enumerate(layers):
        for member in layer:
            if module == member or module.startswith(member + "."):
                return depth, member
    return None


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_point_down(module: str) -> None:
    layers = _layers()
    home = _home(module, layers)
    if home is None:
        assert module == NAME  # only the package's lazy __init__ stands outside the layers
        return
    for target in GRAPH[module]:
        there = _home(target, layers)
        assert there is not None, target
        same_member = there[1] == home[1]
        assert same_member or there[0] > home[0], f"{module} imports {target}"


def test_core_does_no_io() -> None:
    io = {"sqlite3", "socket", "subprocess", "urllib", "http", "threading", "os", "shutil"}
    for path in (PACKAGE / "core").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                 for a in n.names}  # fmt: skip
        names |= {(n.module or "").split(".")[0] for n in ast.walk(tree)
                  if isinstance(n, ast.ImportFrom) and not n.level}  # fmt: skip
        assert not names & io, f"{path.name} imports {sorted(names & io)}"


_ENGINE_TYPES = {"MemorySearch", "DatabaseSearch", "ScopedSearch", "MemoryIndex", "Database"}


def _named(node: ast.AST) -> str | None:
    """The name an expression ends in (``engine`` of ``self.engine``), else None."""
    return getattr(node, "id", None) or getattr(node, "attr", None)


def _switch(node: ast.AST) -> set[str | None]:
    """The types an ``isinstance`` call switches on (empty for any other node)."""
    if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance"):
        return set()
    kinds = node.args[1]
    return {_named(n) for n in (kinds.elts if isinstance(kinds, ast.Tuple) else [kinds])}


def _reach_throughs(path: Path) -> list[str]:
    """Where ``path`` switches on an engine or store type, or holds or reads an engine's index.

    Holding the index: naming ``MemoryIndex`` (an import, an annotation), or reading
    ``.index`` of an engine (``engine.index``, ``self.engine.index``) to hand on whole.
    """
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        where = f"{path.name}:{getattr(node, 'lineno', 0)}"
        hit = _switch(node) & _ENGINE_TYPES
        if hit:
            found.append(f"{where} isinstance {sorted(hit)}")
        if isinstance(node, ast.Attribute) and _named(node.value) == "index":
            if isinstance(node.value, ast.Attribute):
                found.append(f"{where} .index.{node.attr}")
        if isinstance(node, ast.Attribute) and node.attr == "index" and id(node) not in called:
            owner = (_named(node.value) or "").lower()
            if "engine" in owner or "search" in owner:
                found.append(f"{where} {owner}.index")
        named = (
            [a.name for a in node.names]
            if isinstance(node, (ast.Import, ast.ImportFrom))
            else [_named(node)]
            if isinstance(node, (ast.Name, ast.Attribute))
            else [node.value]
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            else []
        )
        if any(isinstance(n, str) and "MemoryIndex" in n.split(".")[-1] for n in named):
            found.append(f"{where} MemoryIndex")
    return found


def test_the_faces_ask_the_engine_not_its_store() -> None:
    # Outside engine/ and store/, code calls the engine's methods (search, read, remember,
    # forget, facts, crossref, publish, ...): no switch on which engine or store it is, no
    # index held (the graph takes its narrow GraphHost), no reach into the index.
    inner = (PACKAGE / "engine", PACKAGE / "store")
    found = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if not any(path.is_relative_to(d) for d in inner)
        for hit in _reach_throughs(path)
    ]
    assert found == []


def test_not_even_the_engine_switches_on_a_store() -> None:
    # engine/ holds the stores, yet asks them through their protocol: no switch on which
    # store (or which store's engine) it has. ScopedSearch is not a store: narrowed() and
    # one_scope() ask whether a search has scopes.
    stores = {"DatabaseSearch", "MemorySearch", "MemoryIndex", "Database"}
    found = [
        f"{path.name}:{node.lineno} isinstance {sorted(_switch(node) & stores)}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if not path.is_relative_to(PACKAGE / "store")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and _switch(node) & stores
    ]
    assert found == []


def test_the_reach_through_check_sees_each_way_of_holding_the_index(tmp_path: Path) -> None:
    # The check above can fail: each way a face could hold or switch on the index is seen.
    source = (
        "from ..store.index import MemoryIndex\n"
        "def f(engine, args, index: 'MemoryIndex'):\n"
        "    build(engine.index)\n"
        "    args.engine.index.sync()\n"
        "    return isinstance(engine, MemorySearch), [1].index(1), args.item.index\n"
    )
    probe = tmp_path / "probe.py"
    probe.write_text(source, encoding="utf-8")
    found = [hit.split(" ", 1)[1] for hit in _reach_throughs(probe)]
    assert sorted(found) == sorted(
        ["MemoryIndex", "MemoryIndex", "engine.index", "engine.index", ".index.sync",
         "isinstance ['MemorySearch']"]
    )  # fmt: skip
