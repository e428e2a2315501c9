"""The package's public names, as LangChain partner packages pin theirs."""

from __future__ import annotations

import ast
import builtins
import inspect
import re
import subprocess
import sys
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import langchain_enhanced_memory
from langchain_enhanced_memory import __all__
from langchain_enhanced_memory.core import errors

EXPECTED_ALL = [
    "DatabaseError",
    "EmbeddingError",
    "EngineConfig",
    "EnhancedMemoryError",
    "EnhancedMemoryRetriever",
    "EnhancedMemoryStore",
    "FusionWeights",
    "Hit",
    "IndexUnavailableError",
    "ItemError",
    "MemoryDirectoryLoader",
    "MemorySearch",
    "MemorySettings",
    "NoMemoryError",
    "RequestError",
    "ScopeError",
    "SearchFilter",
    "SearchRequest",
    "SearchResponse",
    "SettingsError",
    "WriteError",
    "__version__",
    "create_memory_tools",
    "save_thread",
]

#: Package types a public signature names that are not for users to build or catch: the
#: engines' own machinery, which the servers and commands reach through them.
NOT_EXPORTED = {
    "AppendResult": "MemorySearch.remember: where the bullet landed (the tools' JSON)",
    "Forgotten": "MemorySearch.forget: the lines removed (the tools' JSON)",
    "MemoryLines": "MemorySearch.read: a note's lines (the tools' JSON)",
    "MissingNoteError": "MemorySearch.read: an EnhancedMemoryError (memory_get answers it)",
    "NoteError": "MemorySearch.read: an EnhancedMemoryError (memory_get answers it)",
    "StorageFacts": "MemorySearch.facts: the resident engine's status line",
    # MemorySettings' groups: read through it (settings.ranking.bm25_b), made from its keywords
    **{
        name: "MemorySettings: one group of its fields"
        for name in (
            "ChunkerSettings",
            "CrossrefSettings",
            "DiscoverySettings",
            "EmbeddingSettings",
            "LogSettings",
            "OutputSettings",
            "RankingSettings",
            "TranscriptSettings",
            "VectorSettings",
        )
    },
    "CrossrefError": "MemorySearch.crossref: the crossref tools answer it as their error",
    "EmbedJob": "MemorySearch.embedding_job: the background embedding thread",
    "EmbedderChoice": "MemorySearch.choice: the embedder resolved once",
    "Freshness": "MemorySearch.freshness: the watcher of the notes",
    "ScopedSearch": "EnhancedMemoryRetriever.engine with scopes=: built by the faces",
    "Snapshot": "MemorySearch.snapshot: the arrays status and the exports read",
    "SyncReport": "MemorySearch.update_index: what the index command prints",
    "BuildReport": "MemorySearch.build_crossrefs: what crossref build prints",
    "GraphData": "MemorySearch.crossref_picture: what crossref graph --html/--dot draws",
    "Database": "MemorySearch.publish: the database index --scope publishes to",
    "PublishReport": "MemorySearch.publish: what index --scope prints",
}

_PACKAGE = "langchain_enhanced_memory"
_RAISES = re.compile(r"^\s*Raises:\n((?:[ \t]+.*\n?)+)", re.M)


def test_all_imports() -> None:
    assert sorted(EXPECTED_ALL) == sorted(__all__)
    for name in __all__:
        assert getattr(langchain_enhanced_memory, name) is not None


def _type_checking_names(module: Any) -> dict[str, Any]:
    """The names a module imports only for type checkers (``if TYPE_CHECKING:``), imported."""
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    # A quoted part of an alias (upkeep.ProgressFactory's) is read where the alias is used.
    names: dict[str, Any] = {"Callable": Callable}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            code = compile(ast.Module(body=node.body, type_ignores=[]), module.__file__, "exec")
            exec(code, {"__name__": module.__name__, "__package__": module.__package__}, names)  # noqa: S102
    return names


def _members() -> Iterator[tuple[str, Callable[..., Any] | type]]:
    """Each exported function and class, and each exported class's public members.

    Its own and those it inherits from the package's classes (``MemorySearch.search``
    is :class:`~langchain_enhanced_memory.engine.run.SearchEngine`'s).
    """
    for name in __all__:
        obj = getattr(langchain_enhanced_memory, name)
        if not callable(obj):
            continue
        yield name, obj
        if inspect.isclass(obj):
            members: dict[str, Any] = {}
            for klass in reversed(obj.__mro__):
                if klass.__module__.startswith(_PACKAGE):
                    members.update(vars(klass))
            for attr, value in members.items():
                if attr.startswith("_") or attr.startswith("model_"):
                    continue
                if isinstance(value, (classmethod, staticmethod)):
                    value = value.__func__
                if isinstance(value, property):
                    value = value.fget
                if inspect.isfunction(value):
                    yield f"{name}.{attr}", value


def _package_types(hint: Any) -> Iterator[type]:
    if isinstance(hint, type) and hint.__module__.startswith(_PACKAGE):
        yield hint
    for arg in typing.get_args(hint):
        yield from _package_types(arg)


def _named_types(label: str, obj: Callable[..., Any] | type) -> set[str]:
    """The package's types ``obj`` takes, returns (or holds, a class) and says it raises."""
    module = sys.modules[obj.__module__]
    local = _type_checking_names(module)
    if inspect.isclass(obj):  # its fields (each base's in its own module) and __init__
        hints = typing.get_type_hints(obj, None, local)
        hints = {k: v for k, v in hints.items() if not k.startswith("_")}
        hints |= typing.get_type_hints(obj.__init__, vars(module), local)
    else:
        hints = typing.get_type_hints(obj, vars(module), local)
    found = {t.__name__ for hint in hints.values() for t in _package_types(hint)}
    found.discard(label.split(".")[0])
    section = _RAISES.search(inspect.getdoc(obj) or "")
    for raised in re.findall(r"^\s+(\w+):", section[1], re.M) if section else []:
        if not hasattr(builtins, raised):
            assert hasattr(errors, raised), f"{label} raises {raised}, not an error of the package"
            found.add(raised)
    return found


def test_what_public_signatures_name_is_exported() -> None:
    # What a public function or method takes, returns or raises, a user can import
    # from the package root: e.g. MemorySearch.search's SearchResponse and its Hit.
    named: dict[str, set[str]] = {}
    for label, obj in _members():
        for type_name in _named_types(label, obj):
            named.setdefault(type_name, set()).add(label)
    missing = {
        n: sorted(at) for n, at in named.items() if n not in __all__ and n not in NOT_EXPORTED
    }
    assert missing == {}
    assert set(NOT_EXPORTED) <= set(named)  # the list names only what a signature names
    assert {"Hit", "SearchResponse", "RequestError", "SettingsError"} <= set(named)
    # What a user catches: every error raised on purpose is an EnhancedMemoryError.
    assert "EnhancedMemoryError" in __all__


def test_no_store_internals_are_exported() -> None:
    for name in __all__:
        module = getattr(getattr(langchain_enhanced_memory, name), "__module__", _PACKAGE)
        assert not module.startswith(f"{_PACKAGE}.store"), name


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        langchain_enhanced_memory.NotAThing  # noqa: B018
    except AttributeError as exc:
        assert "NotAThing" in str(exc)
    else:
        raise AssertionError("no AttributeError")


def test_import_loads_nothing_heavy() -> None:
    # A one-shot process pays only for what it uses: the names load on first use.
    code = (
        "import sys, langchain_enhanced_memory; "
        "print(sorted(m for m in ('numpy', 'pydantic', 'langchain_core', 'sqlite3') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
