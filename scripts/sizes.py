"""Print what breaks the package's size limits: modules, functions, and the store's total.

Usage: ``make sizes`` or ``python scripts/sizes.py [--package DIR]``.

The limits (issue 38): no module over 500 lines but ``core/dates.py`` (the date
grammar, one table per language), no function or method over 80 lines (from its
``def`` to its last line, nested functions counted in their own right too), and
``store/`` at most 5,500 lines in all. Lines are physical lines, comments and
docstrings included. Each line printed names a module or a function over its
limit; the last line is the store's total against its target. Exits 0 either way:
it reports, it does not judge.
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Iterator
from pathlib import Path

MODULE_LINES = 500
FUNCTION_LINES = 80
STORE_LINES = 5500
EXEMPT = frozenset({"core/dates.py"})
PACKAGE = Path(__file__).resolve().parent.parent / "langchain_enhanced_memory"


def long_functions(tree: ast.Module) -> Iterator[tuple[int, str, int]]:
    """``(first line, qualified name, lines)`` of each function over :data:`FUNCTION_LINES`."""

    def visit(node: ast.AST, prefix: str) -> Iterator[tuple[int, str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    lines = (child.end_lineno or child.lineno) - child.lineno + 1
                    if lines > FUNCTION_LINES:
                        yield child.lineno, name, lines
                yield from visit(child, name + ".")
            else:
                yield from visit(child, prefix)

    yield from visit(tree, "")


def report(package: Path) -> list[str]:
    """The lines :func:`main` prints for the package at ``package``."""
    out: list[str] = []
    store = 0
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        text = path.read_text(encoding="utf-8")
        n = len(text.splitlines())
        if rel.startswith("store/"):
            store += n
        if n > MODULE_LINES and rel not in EXEMPT:
            out.append(f"module   {rel}: {n} lines (limit {MODULE_LINES})")
        for line, name, lines in long_functions(ast.parse(text, filename=str(path))):
            out.append(f"function {rel}:{line} {name}: {lines} lines (limit {FUNCTION_LINES})")
    out.append(f"store/   {store} lines (target {STORE_LINES})")
    return out


def main() -> None:
    """Print the report."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", type=Path, default=PACKAGE, help="the package folder")
    args = ap.parse_args()
    print("\n".join(report(args.package)))


if __name__ == "__main__":
    main()
