"""Human output of the real command: text from notes and file names cannot drive the terminal.

A note may hold escape sequences (``ESC]0;...BEL`` retitles a terminal, ``ESC[2J``
clears it) and a file name may hold a newline; printed for people, each is
written as its escape (``\\x1b``, ``\\n``), and ``--json`` stays exact. A
``search --batch`` file with bad lines answers every line: an error object for
each bad one, exit status 1.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.cli_run import run_cli
from tests.fake_ollama import FakeOllama
from tests.integration_tests.test_openclaw_json import validate
from tests.workspaces import write_workspace

# What a terminal acts on: controls other than newline and tab, line separators, bidi overrides.
ACTIVE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

SHARED = (
    "the wombat ledger migration moved the billing database to Postgres with Bob on Saturday"
    " night while finance checked the invoice export, the rollback plan lives in the ops"
    " runbook and the cutover window closes before the Monday standup"
)
GARDEN = "Tomatoes need water in July; basil is fine and the roses want pruning in March."
DAY = "memory/2026-03-01.md"
DAY_TEXT = (
    "# Day\x1b]0;pwned\x07 title\n\n"
    f"the screen \x1b[2J cleared\tand \x1b[31mred\r overwritten \u202eevil\n{SHARED}\n"
)
NEWLINE_NAME = "memory/topics/new\nline.md"
ESC_NAME = "memory/topics/esc\x1b[2J.md"
FILES = {
    DAY: DAY_TEXT,
    NEWLINE_NAME: f"# Billing\x1b[2J copy\n\n{SHARED} again\n",
    ESC_NAME: f"# Wombat\n\n{SHARED} once more\n",
    "memory/topics/ledger.md": f"# Ledger\n\n{SHARED} in the ledger\n",
    "memory/topics/garden.md": f"# Garden\n\n{GARDEN}\n",
    "memory/topics/roses.md": f"# Roses\n\n{GARDEN} Roses again.\n",
    "MEMORY.md": "# People\n\nAlice Chen leads the payments team; Bob owns the data pipeline.\n",
}


def run(ws: Path, *args: str, url: str | None = None) -> subprocess.CompletedProcess[str]:
    extra = ["--embedder", "ollama", "--ollama-url", url] if url else []
    return run_cli(*args, "--workspace", str(ws), *extra, ENHANCED_MEMORY_EMBEDDER="none")


def inert(r: subprocess.CompletedProcess[str]) -> None:
    for stream in (r.stdout, r.stderr):
        assert not ACTIVE.search(stream), stream


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    # The workspace's own folder name holds a retitle sequence too (index prints its path).
    return write_workspace(tmp_path / "ws\x1b]0;t\x07", FILES)


def test_search_shows_escapes_and_one_line_per_file_name(ws: Path) -> None:
    r = run(ws, "search", "wombat ledger", "--k", "10")
    assert r.returncode == 0, r.stderr
    inert(r)
    lines = r.stdout.splitlines()
    assert len(lines) == 8  # four hits, two lines each: a name's newline splits nothing
    assert all(re.match(r"\d+\. |   ", line) for line in lines), lines
    assert "memory/topics/new\\nline.md:1-3" in r.stdout
    assert "memory/topics/esc\\x1b[2J.md:1-3" in r.stdout
    assert "Day\\x1b]0;pwned\\x07 title" in r.stdout
    # The snippet's whitespace (the tab, the CR) is one space; the rest is escaped.
    assert "\\x1b[2J cleared and \\x1b[31mred overwritten \\u202eevil" in r.stdout


def test_search_json_keeps_the_exact_text(ws: Path) -> None:
    r = run(ws, "search", "wombat ledger", "--k", "10", "--json")
    assert r.returncode == 0, r.stderr
    rows = {row["path"]: row for row in json.loads(r.stdout)["results"]}
    assert set(rows) == {DAY, NEWLINE_NAME, ESC_NAME, "memory/topics/ledger.md"}
    assert rows[DAY]["snippet"] == DAY_TEXT.rstrip("\n")


def test_get_keeps_lines_and_tabs_and_escapes_the_rest(ws: Path) -> None:
    r = run(ws, "get", DAY)
    assert r.returncode == 0, r.stderr
    inert(r)
    assert r.stdout.splitlines() == [
        "# Day\\x1b]0;pwned\\x07 title",
        "",
        "the screen \\x1b[2J cleared\tand \\x1b[31mred\\r overwritten \\u202eevil",
        SHARED,
    ]
    exact = run(ws, "get", DAY, "--json")
    assert json.loads(exact.stdout)["text"] == DAY_TEXT.rstrip("\n")


def test_errors_naming_a_path_stay_one_inert_line(ws: Path) -> None:
    r = run(ws, "get", "memory/missing\u2028\u202e.md")
    assert r.returncode == 2
    inert(r)
    assert len(r.stderr.splitlines()) == 1 and "\\u2028\\u202e" in r.stderr


def test_index_and_salience_name_files_inertly(ws: Path) -> None:
    r = run(ws, "index")
    assert r.returncode == 0, r.stderr
    inert(r)
    assert "ws\\x1b]0;t\\x07" in r.stdout
    r = run(ws, "salience", "--top", "10", "--now", "2026-06-01T12:00")
    assert r.returncode == 0, r.stderr
    inert(r)
    rows = [line for line in r.stdout.splitlines() if line.endswith(".md")]
    assert len(rows) == len(FILES) and rows[0].startswith(" ")
    assert any(row.endswith("  memory/topics/new\\nline.md") for row in rows)
    assert any(row.endswith("  memory/topics/esc\\x1b[2J.md") for row in rows)


def test_crossref_names_files_and_headers_inertly(ws: Path, fake_ollama: FakeOllama) -> None:
    r = run(ws, "crossref", "build", url=fake_ollama.url)
    assert r.returncode == 0, r.stderr
    for args in (("graph",), ("show", "memory/topics/ledger.md")):
        r = run(ws, "crossref", *args)
        assert r.returncode == 0, r.stderr
        inert(r)
        assert "memory/topics/new\\nline.md" in r.stdout
        assert "memory/topics/esc\\x1b[2J.md" in r.stdout


def test_eval_table_is_inert(ws: Path, tmp_path: Path) -> None:
    queries = tmp_path / "q.jsonl"
    gold = [{"path": DAY, "line": 3}]
    query = {"id": 1, "workspace": ws.name, "query": "wombat", "gold": gold, "category": "c\x1b[2J"}
    queries.write_text(json.dumps(query) + "\n")
    r = run_cli("eval", "--root", str(ws.parent), "--queries", str(queries), "--embedder", "none")
    assert r.returncode == 0, r.stderr
    inert(r)
    assert "c\\x1b[2J" in r.stdout


def test_a_bad_batch_line_gets_its_error_and_the_rest_are_answered(
    workspace: Path, tmp_path: Path
) -> None:
    batch = tmp_path / "q.jsonl"
    batch.write_text(
        "\n".join(
            [
                json.dumps({"id": "a", "query": "Postgres"}),
                "{not json",
                json.dumps({"id": "c", "query": ""}),
                json.dumps({"id": "d", "query": "Postgres", "now": "not a date"}),
                "",
                json.dumps({"id": "f", "query": "Postgres", "k": 1}),
                json.dumps(["a list"]),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    for mode in ((), ("--json",)):
        r = run(workspace, "search", "--batch", str(batch), *mode)
        assert r.returncode == 1, r.stderr
        out = [json.loads(line) for line in r.stdout.splitlines()]
        assert [d["id"] for d in out] == ["a", None, "c", "d", "f", None]
        failed = [d for d in out if "line" in d]
        assert [d["line"] for d in failed] == [2, 3, 4, 7]
        for doc in out:
            validate(doc, "batchFailure" if "line" in doc else "batchLine")
        assert out[0]["results"] and out[4]["results"]
        errors = [line for line in r.stderr.splitlines() if "error" in line]
        assert len(errors) == 4
        for doc, line in zip(failed, errors, strict=True):
            assert doc["error"].startswith(f"{batch}:{doc['line']}: ")
            assert line == f"enhanced-memory: error: {doc['error']}"
        assert "query: must be a non-empty string" in out[2]["error"]


def test_a_batch_with_every_line_good_exits_0(workspace: Path, tmp_path: Path) -> None:
    batch = tmp_path / "q.jsonl"
    batch.write_text(json.dumps({"id": 1, "query": "Postgres"}) + "\n")
    r = run(workspace, "search", "--batch", str(batch), "--json")
    assert r.returncode == 0, r.stderr
    validate(json.loads(r.stdout), "batchLine")
