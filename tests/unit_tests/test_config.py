"""One configuration: the environment is read in ``config.py`` only, in one table, in one order.

The order is each field's default, then the environment, then the argument
(a flag, or a Python face's keyword). The end-to-end runs of each variable are
in ``tests/integration_tests/test_env.py``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from langchain_enhanced_memory.config import (
    FORWARDED,
    VARIABLES,
    Environment,
    caller_environ,
    engine_config,
    load,
)
from langchain_enhanced_memory.core.errors import RequestError, SettingsError
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.store import process

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "langchain_enhanced_memory"
NAMES = {name for name, _, _ in VARIABLES}


def _environment_uses(path: Path) -> list[str]:
    """Where ``path`` reads or writes the process environment (``os.environ``, ``getenv``...)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in {"environ", "getenv", "putenv"}:
            found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [f"line {node.lineno}: from os import {a.name}" for a in node.names
                      if a.name in {"environ", "getenv", "putenv", "unsetenv"}]  # fmt: skip
    return found


def test_only_the_config_module_reads_the_environment() -> None:
    # The skill's scripts are a standalone program copied into the skill folder.
    modules = [
        p
        for p in PACKAGE.rglob("*.py")
        if "skill_template" not in p.parts and p != PACKAGE / "config.py"
    ]
    assert len(modules) > 100
    found = {str(p.relative_to(ROOT)): uses for p in modules if (uses := _environment_uses(p))}
    assert found == {}
    assert _environment_uses(PACKAGE / "config.py")  # the check sees a read where there is one


def test_every_variable_is_in_the_docs_table_and_the_table_names_no_other() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    table = text.split("## Flags and environment", 1)[1].split("\n## ", 1)[0]
    rows = [re.split(r"(?<!\\)\|", line) for line in table.splitlines() if line.startswith("| ")]
    assert rows[0][3].strip() == "environment"  # the cells: "", what, flag, environment, ...
    named = {n for row in rows[1:] for n in re.findall(r"`\$?([A-Z][A-Z0-9_]{3,})", row[3])}
    libpq = {n for n in named if n.startswith("PG")}  # libpq's own, read by libpq
    assert named - libpq == NAMES


def test_the_environment_is_read_typed() -> None:
    env = Environment(
        {
            "MEMORY_DIR": "/notes/memory",
            "ENHANCED_MEMORY_SESSION_DIRS": "/a:/b:",
            "ENHANCED_MEMORY_LOG": "off",
            "ENHANCED_MEMORY_MALLOC_TUNE": "1",
            "ENHANCED_MEMORY_DATABASE_CACHE": "0",
            "ENHANCED_MEMORY_DAEMON": "no",
            "ENHANCED_MEMORY_POOL_SIZE": "3",
            "XDG_CACHE_HOME": "/c",
            "UNRELATED": "x",
        }
    )
    assert env.workspace == "/notes"  # the original's MEMORY_DIR names memory/ itself
    assert env.session_dirs == ("/a", "/b")
    assert env.process_settings.log is False and env.process_settings.malloc_tune is True
    assert env.process_settings.cache_home == "/c"
    assert env.database_cache is None and env.daemon is False and env.pool_size == 3
    assert set(env.forwarded) == {
        "MEMORY_DIR",
        "ENHANCED_MEMORY_SESSION_DIRS",
        "ENHANCED_MEMORY_LOG",
        "ENHANCED_MEMORY_MALLOC_TUNE",
        "ENHANCED_MEMORY_DATABASE_CACHE",
        "ENHANCED_MEMORY_DAEMON",
        "ENHANCED_MEMORY_POOL_SIZE",
        "XDG_CACHE_HOME",
    }
    unset = Environment({})
    assert (unset.workspace, unset.database_cache, unset.daemon) == (None, "default", True)
    assert unset.process_settings.log is None and unset.pool_size is None


def test_a_bad_pool_size_is_refused_where_it_is_used_in_one_line() -> None:
    env = Environment({"ENHANCED_MEMORY_POOL_SIZE": "many"})  # reading never fails
    with pytest.raises(SettingsError, match="ENHANCED_MEMORY_POOL_SIZE: must be a whole number"):
        _ = env.pool_size


def test_load_installs_the_process_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", "/state-of-this-run")
    monkeypatch.setenv("ENHANCED_MEMORY_LOG", "1")
    load()
    assert process.current().state_home == "/state-of-this-run"
    assert process.current().log is True
    load({})
    assert process.current().state_home.endswith("/.local/state")
    assert process.current().log is None


# Each engine field the environment can set: (argument, variable, default, env value, argument).
_FIELDS = [
    ("profile", "ENHANCED_MEMORY_PROFILE", "default", "bm25", "original"),
    ("embedder", "ENHANCED_MEMORY_EMBEDDER", "auto", "none", "local"),
    ("model", "EMBED_MODEL", None, "env-model", "arg-model"),
    ("ollama_url", "OLLAMA_URL", None, "http://env:1", "http://arg:2"),
    ("on_embedder_error", "ENHANCED_MEMORY_ON_EMBEDDER_ERROR", "keyword", "fail", "keyword"),
    ("index_path", "ENHANCED_MEMORY_INDEX", None, "/env/index.sqlite", "/arg/index.sqlite"),
]


def _value(config: object, name: str) -> object:
    value = config.settings.profile if name == "profile" else getattr(config, name)  # type: ignore[attr-defined]
    return str(value) if isinstance(value, Path) else value


@pytest.mark.parametrize(("name", "variable", "default", "from_env", "given"), _FIELDS)
def test_an_engine_field_is_its_default_then_the_environment_then_the_argument(
    tmp_path: Path, name: str, variable: str, default: object, from_env: str, given: str
) -> None:
    ws = str(tmp_path)
    assert _value(engine_config(env=Environment({}), workspace_arg=ws), name) == default
    env = Environment({variable: from_env})
    assert _value(engine_config(env=env, workspace_arg=ws), name) == from_env
    assert _value(engine_config(env=env, workspace_arg=ws, **{name: given}), name) == given


def test_the_workspace_and_transcript_folders_in_the_same_order(tmp_path: Path) -> None:
    (tmp_path / "env").mkdir()
    (tmp_path / "arg").mkdir()
    env = Environment(
        {"OPENCLAW_WORKSPACE_DIR": str(tmp_path / "env"), "ENHANCED_MEMORY_SESSION_DIRS": "/e"}
    )
    assert engine_config(env=env).workspace == tmp_path / "env"
    config = engine_config(env=env, workspace_arg=tmp_path / "arg", session_dirs=["/a"])
    assert config.workspace == tmp_path / "arg"
    assert config.settings.discovery.session_dirs == (
        *MemorySettings().discovery.session_dirs,
        "/a",
        "/e",
    )


def test_a_bad_value_from_the_environment_is_one_line(tmp_path: Path) -> None:
    env = Environment({"ENHANCED_MEMORY_PROFILE": "fancy"})
    with pytest.raises(RequestError, match="unknown profile 'fancy'"):
        engine_config(env=env, workspace_arg=tmp_path)


def test_the_resident_engine_runs_a_command_with_its_callers_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ENHANCED_MEMORY_PROFILE", "bm25")  # the engine's own: not the caller's
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/engine")  # the engine's own, kept
    environ = caller_environ({"EMBED_MODEL": "m", "PATH": "/caller/bin"})
    assert environ["EMBED_MODEL"] == "m" and "ENHANCED_MEMORY_PROFILE" not in environ
    assert environ["XDG_RUNTIME_DIR"] == "/run/engine" and environ.get("PATH") != "/caller/bin"
    assert "XDG_RUNTIME_DIR" not in FORWARDED
