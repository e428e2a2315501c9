"""Hostile queries and arguments: sane results or one clear line, never a traceback or a leak."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest

import langchain_enhanced_memory
from tests.cli_run import run_cli
from tests.workspaces import SMALL_WORKSPACE, write_workspace

SCHEMA = json.loads(
    (
        Path(langchain_enhanced_memory.__file__).parent
        / "openclaw"
        / "schema"
        / "memory_search.schema.json"
    ).read_text()
)
SECRET = "zanzibar-credential-4471"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, ENHANCED_MEMORY_EMBEDDER="none")


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = write_workspace(tmp_path_factory.mktemp("q") / "ws", SMALL_WORKSPACE)
    # Files a hostile path could reach: outside the workspace, hidden, not markdown.
    (root.parent / "outside.md").write_text(f"# Outside\n\n{SECRET}\n")
    (root / "notes.txt").write_text(f"{SECRET}\n")
    (root / "memory" / ".hidden.md").write_text(f"# Hidden\n\n{SECRET}\n")
    assert _cli("index", "--workspace", str(root)).returncode == 0
    return root


QUERIES = {
    "100 KB": "billing " * 12_800,
    "stopwords only": "the and of to a is it was",
    "emoji only": "🙂🚀🔥👍🏽",
    "control characters": "\x01\x02\x1b[31mred\x7f\x08",
    "sql metacharacters": "'; DROP TABLE chunks; -- \" OR 1=1 /*",
    "fts syntax": 'NEAR(billing AND "postgres*") OR -x:y ^',
    "regex metacharacters": r".*(a+)+$[^\]\\d{9999}|(?<x>",
    "percent and underscore": "%_% 100%_ \\%",
    "unpaired surrogate-like text": "\udcff billing",
    "right-to-left and zero-width": "\u202ebilling\u200b\ufeff",
    "combining marks": "b\u0301i\u0302l\u0303ling",
    "only digits": "2026 02 08 12 30",
    "cjk and latin": "数据库 migration 迁移",
}


@pytest.mark.parametrize("name", list(QUERIES))
def test_hostile_query_gives_valid_json(ws: Path, name: str) -> None:
    query = QUERIES[name]
    if "\udcff" in query:
        # argv cannot carry a lone surrogate; the batch file (JSON escapes) can.
        batch = ws.parent / f"{abs(hash(name))}.jsonl"
        batch.write_text(json.dumps({"id": name, "query": query}) + "\n")
        r = _cli("search", "--batch", str(batch), "--workspace", str(ws), "--json")
    else:
        r = _cli("search", query, "--workspace", str(ws), "--json")
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    jsonschema.validate(out, SCHEMA)
    for row in out["results"]:
        assert SECRET not in row["snippet"]
        assert not row["path"].startswith(("/", "..")) and "/." not in row["path"]


@pytest.mark.parametrize("query", ["", "   \t  "], ids=["empty", "whitespace"])
def test_blank_query_is_one_clear_line(ws: Path, query: str) -> None:
    # The same rule as serve, the tools and the retriever (one request model).
    r = _cli("search", query, "--workspace", str(ws), "--json")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == "enhanced-memory: error: QUERY must be a non-empty string"
    out = json.loads(r.stdout)
    jsonschema.validate(out, SCHEMA)
    assert out["disabled"] is True and out["results"] == []


def test_nul_byte_query_via_batch(ws: Path) -> None:
    batch = ws.parent / "nul.jsonl"
    batch.write_text(json.dumps({"id": 1, "query": "billing\u0000database"}) + "\n")
    r = _cli("search", "--batch", str(batch), "--workspace", str(ws), "--json")
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)
    jsonschema.validate(row, SCHEMA)
    assert row["results"]


@pytest.mark.parametrize(
    "args, needle",
    [
        (("--now", "not-a-date"), "--now"),
        (("--now", ""), "--now"),
        (("--now", "2026-13-45"), "--now"),
        (("--now", "9999999-01-01"), "--now"),
        (("--k", "0"), "--k"),
        (("--k", "-3"), "--k"),
        (("--k", "abc"), "--k"),
        (("--k", "1e9"), "--k"),
        (("--min-score", "nan-ish"), "--min-score"),
    ],
)
def test_bad_argument_is_one_clear_line(ws: Path, args: tuple[str, ...], needle: str) -> None:
    r = _cli("search", "billing", *args, "--workspace", str(ws), "--json")
    assert r.returncode == 2, r.stdout
    assert "Traceback" not in r.stderr
    assert needle in r.stderr
    assert len([line for line in r.stderr.splitlines() if "error" in line]) == 1


def test_huge_k_is_capped_and_valid(ws: Path) -> None:
    r = _cli("search", "billing", "--k", str(10**12), "--workspace", str(ws), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    jsonschema.validate(out, SCHEMA)
    assert 1 <= len(out["results"]) <= 1000


def test_workspace_with_nul_is_refused(ws: Path) -> None:
    batch = ws.parent / "ws-nul.jsonl"
    batch.write_text("{}")
    r = _cli("search", "x", "--workspace", f"{ws}/../x\x7f", "--json")
    assert r.returncode == 2 and "workspace not found" in r.stderr


HOSTILE_PATHS = [
    "../outside.md",
    "memory/../../outside.md",
    "memory/%2e%2e/%2e%2e/outside.md",
    "..\\outside.md",
    "/etc/passwd",
    "notes.txt",
    "memory/.hidden.md",
    ".enhanced-memory/index.sqlite",
    "memory/2026-02-08.md\nmemory/../../outside.md",
    "C:\\Windows\\win.ini",
    "//server/share/x.md",
    "",
]


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_get_refuses_paths_outside_the_memory_files(ws: Path, path: str) -> None:
    hostile = [path, str(ws.parent / "outside.md")] if path == "" else [path]
    for p in hostile:
        r = _cli("get", p, "--workspace", str(ws), "--json")
        assert "Traceback" not in r.stderr and SECRET not in r.stdout + r.stderr
        if r.returncode == 0:
            # A legal path naming no file (the %2e are literal): OpenClaw's missing-file answer.
            assert json.loads(r.stdout) == {"text": "", "path": p} and "%" in p
            continue
        assert r.returncode == 2, r.stdout
        assert len(r.stderr.strip().splitlines()) == 1
        assert json.loads(r.stdout)["disabled"] is True


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_crossref_show_refuses_paths_outside(ws: Path, path: str) -> None:
    r = _cli("crossref", "show", path, "--workspace", str(ws), "--json")
    assert "Traceback" not in r.stderr and SECRET not in r.stdout + r.stderr
    assert r.returncode == 2, r.stdout


def test_get_reads_a_real_file_and_bad_ranges_are_clear(ws: Path) -> None:
    r = _cli("get", "memory/2026-02-08.md", "--workspace", str(ws), "--json")
    assert r.returncode == 0, r.stderr
    assert "billing" in json.loads(r.stdout)["text"]
    for args in (("--from", "-5"), ("--lines", "-1"), ("--from", "abc")):
        r = _cli("get", "memory/2026-02-08.md", *args, "--workspace", str(ws), "--json")
        assert "Traceback" not in r.stderr
        assert r.returncode in (0, 2)
