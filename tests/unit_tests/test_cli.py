"""The command line's argument handling, in-process: one line and exit 2 for every bad input."""

from __future__ import annotations

import gc
import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from langchain_enhanced_memory import cli
from langchain_enhanced_memory.cli import main
from langchain_enhanced_memory.commands import COMMANDS, build_parser
from langchain_enhanced_memory.commands.common import CliError, flag_error, parse_now
from langchain_enhanced_memory.core.errors import RequestError
from tests.workspaces import SMALL_WORKSPACE, write_workspace


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ENHANCED_MEMORY_LOG", "0")
    for name in ("OPENCLAW_WORKSPACE_DIR", "MEMORY_DIR", "ENHANCED_MEMORY_EMBEDDER"):
        monkeypatch.delenv(name, raising=False)
    return write_workspace(tmp_path / "ws", SMALL_WORKSPACE)


REQUIRED = {"get": ["x"], "skill": ["install"], "crossref": ["build"], "daemon": ["status"],
            "remember": ["a note"], "scopes": ["list"],
            "eval": ["--root", ".", "--queries", "q"]}  # fmt: skip


def test_the_console_entry_exits_with_mains_status_and_skips_the_last_collection(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frozen = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(gc.get_freeze_count()))
    for argv, status in ((["search", "--workspace", str(ws), "--embedder", "none", "x"], 0),
                         (["search", "--k", "0", "x"], 2)):  # fmt: skip
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            with pytest.raises(SystemExit) as exited:
                cli.run(argv)
        assert exited.value.code == status
    assert len(frozen) == 2


def test_a_one_shot_search_loads_neither_pydantic_nor_langchain(ws: Path) -> None:
    # Their imports and model builds cost a one-shot process more than its search.
    code = (
        "import sys; from langchain_enhanced_memory.cli import main; "
        f"rc = main(['search', '--workspace', {str(ws)!r}, '--embedder', 'none', '--json', "
        "'decisions']); "
        "print(rc, sorted(m for m in ('pydantic', 'langchain_core') if m in sys.modules), "
        "file=sys.stderr)"
    )
    env = {**os.environ, "ENHANCED_MEMORY_DAEMON": "0", "ENHANCED_MEMORY_LOG": "0"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert json.loads(done.stdout)["results"]
    assert done.stderr.strip().splitlines()[-1] == "0 []"


def test_every_command_has_a_module_with_arguments_and_run() -> None:
    for name in COMMANDS:
        parser, runner = build_parser(name)
        assert callable(runner)
        assert parser.parse_args([name, *REQUIRED.get(name, [])]).command == name


def test_no_command_prints_help_and_exits_2() -> None:
    rc, out, _ = run()
    assert rc == 2 and "COMMAND" in out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (("search", "x", "--k", "abc"), "--k"),
        (("search", "x", "--k", "0"), "--k must be at least 1, got 0"),
        (("search", "x", "--now", "soon"), "--now must be an ISO date"),
        (("search", "x", "--min-score", "nan"), "--min-score must be a finite number"),
        (("search",), "give a QUERY or --batch"),
        (("search", "  "), "QUERY must be a non-empty string"),
        (("search", "x", "--embedder", "gpu"), "invalid choice"),
        (("salience", "--top", "0"), "--top must be at least 1"),
        (("serve", "--port", "70000"), "--port must be 0..65535"),
        (("export",), "give --vectors-json and/or --crossrefs-json"),
        (("search", "x", "--bogus"), "unrecognized arguments"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(
    ws: Path, argv: tuple[str, ...], needle: str
) -> None:
    rc, out, err = run(*argv, "--workspace", str(ws), "--embedder", "none", "--json")
    assert rc == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and lines[0].startswith("enhanced-memory: error")
    failure = json.loads(out)
    assert failure["disabled"] is True and failure["results"] == [] and needle in failure["error"]


def test_missing_workspace_says_what_to_do(tmp_path: Path) -> None:
    rc, out, err = run("search", "x", "--workspace", str(tmp_path / "nope"), "--json")
    assert rc == 2 and "workspace not found" in err
    assert "OPENCLAW_WORKSPACE_DIR" in json.loads(out)["action"]


def test_a_bad_batch_line_is_answered_with_its_error(ws: Path, tmp_path: Path) -> None:
    batch = tmp_path / "q.jsonl"
    batch.write_text('{"id": 1, "query": "billing"}\n{"id": 2, "query": ""}\n')
    rc, out, err = run("search", "--batch", str(batch), "--workspace", str(ws), "--embedder",
                       "none", "--json")  # fmt: skip
    assert rc == 1 and f"{batch}:2: query: must be a non-empty string" in err
    answered, failed = (json.loads(line) for line in out.strip().splitlines())
    assert answered["id"] == 1 and answered["results"]
    assert failed["id"] == 2 and failed["line"] == 2 and failed["disabled"] is True


def test_search_json_answers(ws: Path) -> None:
    rc, out, err = run("search", "Postgres migration", "--workspace", str(ws), "--embedder",
                       "none", "--json", "--k", "2")  # fmt: skip
    assert rc == 0, err
    doc = json.loads(out)
    assert len(doc["results"]) == 2 and doc["provider"] == "none" and doc["fallback"] is None


def test_flag_error_speaks_the_command_line() -> None:
    assert str(flag_error(RequestError("must be at least 1, got 0", "k"))) == (
        "--k must be at least 1, got 0"
    )
    assert str(flag_error(RequestError("is bad", "max_results"))) == "--max-results is bad"


def test_parse_now() -> None:
    assert parse_now(None) is None
    assert parse_now("2026-02-09").isoformat() == "2026-02-09T00:00:00"
    with pytest.raises(CliError, match="--now"):
        parse_now("yesterday-ish")
