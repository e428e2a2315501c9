"""``enhanced-memory forget`` and ``memory_forget``: erasure means gone.

A token is remembered, indexed with an embedder, searched for (so the query log
holds it), then forgotten; every byte of every file of the workspace (notes,
``.enhanced-memory/`` with SQLite's file and WAL, segment and vector files,
logs), every row of every ``em_*`` table and every file of two hosts' segment
copies is searched for it. Every other byte of the notes stays.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import anyio
import psycopg

from langchain_enhanced_memory import MemorySettings, create_memory_tools
from langchain_enhanced_memory.store.append import rewrite_note
from langchain_enhanced_memory.store.embed_cache import generation_keys
from langchain_enhanced_memory.store.folding import held_keys, vector_models
from langchain_enhanced_memory.store.vector_segments import side_folder
from tests.cli_run import run_cli
from tests.fake_ollama import FakeOllama
from tests.integration_tests.test_mcp import call, error_of, stdio_session

NOW = "2026-03-04T10:00"
TOKEN = "zebra-quartz-7731"


def ok(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    r = run_cli(*args, **env)
    assert r.returncode == 0, r.stderr
    return r


def refused(*args: str) -> str:
    """The one error line of a command that must fail with status 2, and no traceback."""
    r = run_cli(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    # The one error line, after the warning that --database holds a password.
    lines = [ln for ln in r.stderr.strip().splitlines() if "warning: the password in" not in ln]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def files_holding(folder: Path, text: str) -> list[str]:
    """Every file under ``folder`` whose bytes hold ``text`` (any letter case)."""
    needle = text.lower().encode("utf-8")
    return sorted(
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file() and needle in p.read_bytes().lower()
    )


def snapshot_bytes(ws: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in ws.rglob("*.md")}


def dead_vector_keys(index_file: Path) -> tuple[int, int]:
    """How many vector keys the index's side files hold, and how many of those no live text has."""
    with sqlite3.connect(index_file) as conn:
        live = generation_keys(conn, MemorySettings())
        used = set(live.chunks.tolist()) | set(live.lines.tolist())
        held = [k for m in vector_models(conn) for k in held_keys(conn, side_folder(index_file), m)]
    return len(held), len([k for k in held if int(k) not in used])


def make_workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "memory/topics").mkdir(parents=True)
    (ws / "MEMORY.md").write_bytes(b"# Memory\r\n\r\n- Likes pandas.\r\n")
    # Enough other files that an index run or a publish writes a delta, not everything anew.
    for i in range(30):
        (ws / f"memory/topics/row{i}.md").write_text(f"# Row {i}\n\n- Sowed beans, row {i}.\n")
    for i in range(12):
        ok("remember", f"Note {i}: watered the tomatoes, row {i}.", "--workspace", str(ws),
           "--now", NOW)  # fmt: skip
    ok("remember", f"Vault code {TOKEN}\nkept in the blue drawer", "--workspace", str(ws),
       "--file", "memory/topics/vault.md", "--section", "Codes")  # fmt: skip
    ok("remember", "The bike lock is 4411.", "--workspace", str(ws),
       "--file", "memory/topics/vault.md", "--section", "Codes")  # fmt: skip
    ok("remember", f"{TOKEN.upper()} is also the wifi password", "--workspace", str(ws),
       "--file", "MEMORY.md")  # fmt: skip
    return ws


def test_forget_match_leaves_no_byte_of_the_text_in_the_workspace(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    ws = make_workspace(tmp_path)
    emb = ("--workspace", str(ws), "--embedder", "ollama", "--ollama-url", fake_ollama.url)
    ok("index", *emb)
    ok("index", *emb, "--profile", "original")  # the original profile keeps its own file
    found = json.loads(ok("search", TOKEN, *emb, "--json").stdout)["results"]
    assert any(TOKEN in r["snippet"].lower() for r in found)
    ok("search", "blue drawer", *emb)
    held = files_holding(ws, TOKEN)
    # The test can fail: the text is in the notes, the index, its segments and the log.
    assert ".enhanced-memory/query_log.json" in held and "MEMORY.md" in held
    assert any(p.startswith(".enhanced-memory/index.sqlite") for p in held), held
    assert any(p.startswith(".enhanced-memory/index-original.sqlite") for p in held), held
    assert any(p.endswith(".seg") for p in held), held
    before = snapshot_bytes(ws)

    dry = json.loads(ok("forget", "--match", "Zebra-Quartz", *emb, "--dry-run", "--json").stdout)
    assert dry["dry_run"] is True
    assert [(g["path"], g["line"]) for g in dry["forgotten"]] == [
        ("MEMORY.md", 4),
        ("memory/topics/vault.md", 3),
    ]
    assert dry["forgotten"][1]["text"] == f"- Vault code {TOKEN}\n  kept in the blue drawer"
    assert snapshot_bytes(ws) == before
    line = refused("forget", "--match", TOKEN, *emb)
    assert "2 blocks hold the text; nothing was removed" in line
    assert snapshot_bytes(ws) == before

    done = json.loads(ok("forget", "--match", TOKEN, "--yes", *emb, "--json").stdout)
    assert len(done["forgotten"]) == 2 and done["dry_run"] is False
    assert files_holding(ws, TOKEN) == []
    assert files_holding(ws, "blue drawer") == []
    # Exactly those lines went; every other byte stayed (CRLF too).
    after = snapshot_bytes(ws)
    assert after["MEMORY.md"] == b"# Memory\r\n\r\n- Likes pandas.\r\n"
    assert after["memory/topics/vault.md"] == b"## Codes\n\n- The bike lock is 4411.\n"
    assert after["memory/2026-03-04.md"] == before["memory/2026-03-04.md"]
    # No vector of a forgotten text is kept (an embedding can be read back into its words).
    for name in ("index.sqlite", "index-original.sqlite"):
        held, dead = dead_vector_keys(ws / ".enhanced-memory" / name)
        assert held and dead == 0, (name, held, dead)
    # The rest is still found, with vectors.
    doc = json.loads(ok("search", "bike lock", *emb, "--json").stdout)
    assert doc["results"][0]["path"] == "memory/topics/vault.md" and doc["provider"] == "ollama"
    again = ok("forget", "--match", TOKEN, *emb)
    assert again.stdout.startswith("nothing to forget")


def test_forget_a_line_removes_its_whole_bullet_and_nothing_else(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    w = ("--workspace", str(ws), "--embedder", "none")
    ok("index", *w)
    vault = ws / "memory/topics/vault.md"
    old = vault.read_bytes()
    assert old.splitlines()[3] == b"  kept in the blue drawer"
    # A continuation line names its whole bullet.
    r = ok("forget", "memory/topics/vault.md", "--line", "4", *w)
    assert r.stdout == (
        "forgot memory/topics/vault.md:3\n"
        f"    - Vault code {TOKEN}\n      kept in the blue drawer\n"
    )
    assert vault.read_bytes() == b"## Codes\n\n- The bike lock is 4411.\n"
    assert files_holding(ws / ".enhanced-memory", "blue drawer") == []
    doc = json.loads(ok("search", "bike lock", *w, "--json").stdout)
    assert doc["results"][0]["path"] == "memory/topics/vault.md"
    assert doc["results"][0]["startLine"] == 1


def test_bad_input_is_one_line_and_changes_nothing(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    w = ("--workspace", str(ws), "--embedder", "none")
    before = snapshot_bytes(ws)
    cases = {
        ("forget", *w): "give --line N (with a path) or --match TEXT",
        ("forget", "--line", "2", *w): "--line needs the note's path",
        ("forget", "MEMORY.md", "--line", "2", "--match", "x y z", *w): "give --line N",
        ("forget", "MEMORY.md", "--line", "99", *w): "line 99 is past the end",
        ("forget", "MEMORY.md", "--line", "2", *w): "line 2 is blank",
        ("forget", "memory/nope.md", "--line", "1", *w): "no such memory file: memory/nope.md",
        ("forget", "../x.md", "--line", "1", *w): "refused",
        ("forget", "--match", "ab", *w): "at least 3 characters",
        ("forget", "--line", "x", "MEMORY.md", *w): "invalid int value",
        ("forget", "MEMORY.md", "--file", "memory/a.md", "--match", "abc", *w): "PATH or --file",
    }
    for args, expected in cases.items():
        assert expected in refused(*args), args
    assert snapshot_bytes(ws) == before
    r = run_cli("forget", "--match", "tomatoes", *w, "--json")
    assert r.returncode == 2 and "12 blocks" in json.loads(r.stdout)["error"]
    assert snapshot_bytes(ws) == before


def test_a_note_changed_after_the_read_is_read_and_matched_again(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    vault = ws / "memory/topics/vault.md"
    calls: list[str] = []

    def edit(old: str) -> str:
        calls.append(old)
        if len(calls) == 1:  # another writer appends between our read and our rename
            with open(vault, "a", encoding="utf-8") as fh:
                fh.write("- Written meanwhile.\n")
        return old.replace("- The bike lock is 4411.\n", "")

    assert rewrite_note(ws, "memory/topics/vault.md", edit) is True
    assert len(calls) == 2 and "Written meanwhile" in calls[1]
    assert vault.read_text(encoding="utf-8").endswith("blue drawer\n- Written meanwhile.\n")
    assert "bike lock" not in vault.read_text(encoding="utf-8")


def test_the_langchain_tool_forgets_only_when_writing_is_allowed(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    assert "memory_forget" not in [t.name for t in create_memory_tools(ws, embedder="none")]
    tools = {t.name: t for t in create_memory_tools(ws, embedder="none", allow_write=True)}
    forget = tools["memory_forget"]
    assert "Vault code" in tools["memory_search"].invoke({"query": TOKEN})  # a warm engine
    assert "2 blocks" in forget.invoke({"match": TOKEN})
    shown = forget.invoke({"match": TOKEN, "dryRun": True})
    assert shown.startswith("Would forget MEMORY.md:4: ")
    assert forget.invoke({"path": "MEMORY.md", "line": 99}).startswith("Error: line 99")
    msg = forget.invoke(
        {
            "type": "tool_call",
            "id": "1",
            "name": "memory_forget",
            "args": {"match": TOKEN, "all": True},
        }  # fmt: skip
    )
    assert msg.artifact["dry_run"] is False and len(msg.artifact["forgotten"]) == 2
    assert files_holding(ws, TOKEN) == []
    assert tools["memory_search"].invoke({"query": TOKEN}).startswith("No memory matches")


def test_the_mcp_tool_forgets(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    args = ["mcp", "--workspace", str(ws), "--embedder", "none", "--now", NOW, "--allow-write"]

    async def main() -> None:
        async with stdio_session(args) as session:
            doc = await call(session, "memory_search", query=TOKEN)
            assert doc["results"]
            line = await error_of(session, "memory_forget", match=TOKEN)
            assert line.startswith("memory_forget: 2 blocks hold the text")
            line = await error_of(session, "memory_forget", path="MEMORY.md", line=0)
            assert line.startswith("memory_forget: line:")
            done = await call(session, "memory_forget", path="MEMORY.md", line=4)
            assert done["forgotten"] == [
                {
                    "path": "MEMORY.md",
                    "line": 4,
                    "text": f"- {TOKEN.upper()} is also the wifi password",
                }
            ]
            done = await call(session, "memory_forget", match="blue drawer")
            assert [g["path"] for g in done["forgotten"]] == ["memory/topics/vault.md"]
            doc = await call(session, "memory_search", query="vault code wifi password")
            assert all(TOKEN not in r["snippet"].lower() for r in doc["results"])

    anyio.run(main)
    assert files_holding(ws, TOKEN) == []


# ---------------------------------------------------------------- a database scope
def rows_holding(url: str, text: str) -> list[str]:
    """``table: column`` of every row of every em_* table holding ``text`` (bytes or text)."""
    needle = text.lower()
    out = []
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [
            t
            for (t,) in conn.execute(
                "SELECT tablename FROM pg_tables WHERE tablename LIKE 'em\\_%' ORDER BY 1"
            )
        ]
        for table in tables:
            cur = conn.execute(f"SELECT * FROM {table}", binary=True)  # noqa: S608 (catalog names)
            names = [d.name for d in cur.description or []]
            for row in cur.fetchall():
                for name, value in zip(names, row, strict=True):
                    raw: Any = bytes(value) if isinstance(value, bytes | memoryview) else value
                    blob = raw if isinstance(raw, bytes) else str(raw).encode("utf-8")
                    if needle.encode("utf-8") in blob.lower():
                        out.append(f"{table}: {name}")
    return out


def test_forget_in_a_database_scope_leaves_no_row_nor_copy(
    database_url: str, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    host_a, host_b = tmp_path / "copies-a", tmp_path / "copies-b"
    db = ("--database", database_url, "--scope", "team", "--embedder", "ollama",
          "--ollama-url", fake_ollama.url)  # fmt: skip
    a = {"ENHANCED_MEMORY_DATABASE_CACHE": str(host_a)}
    b = {"ENHANCED_MEMORY_DATABASE_CACHE": str(host_b)}
    ok("remember", f"Vault code {TOKEN}\nkept in the blue drawer", *db, "--file",
       "memory/topics/vault.md", "--now", NOW, **a)  # fmt: skip
    ok("remember", "The bike lock is 4411.", *db, "--file", "memory/topics/vault.md", **a)
    # Enough appends to other notes that small segments are merged: the token's rows then
    # share a segment with other notes' rows, which stays named after a plain rewrite.
    for i in range(9):
        ok("remember", f"Note {i}: watered the tomatoes, row {i}.", *db, "--now", NOW,
           "--file", f"memory/topics/row{i}.md", **a)  # fmt: skip
    with psycopg.connect(database_url) as conn:
        shared = conn.execute(
            "SELECT count(DISTINCT path) FROM em_files WHERE scope = 'team' AND segment ="
            " (SELECT segment FROM em_files WHERE scope = 'team' AND path = %s)",
            ("memory/topics/vault.md",),
        ).fetchone()
    assert shared is not None and shared[0] > 1
    for env in (a, b):  # both hosts search: each keeps copies of the segments
        doc = json.loads(ok("search", TOKEN, *db, "--json", **env).stdout)
        assert any(TOKEN in r["snippet"].lower() for r in doc["results"])
    assert files_holding(host_a, TOKEN) and files_holding(host_b, TOKEN)
    assert "em_segments: data" in rows_holding(database_url, TOKEN)
    assert "em_notes: body" in rows_holding(database_url, TOKEN)

    dry = json.loads(ok("forget", "--match", TOKEN, *db, "--dry-run", "--json", **a).stdout)
    assert dry["forgotten"] == [
        {"path": "memory/topics/vault.md", "line": 1,
         "text": f"- Vault code {TOKEN}\n  kept in the blue drawer"}
    ]  # fmt: skip
    assert rows_holding(database_url, TOKEN)
    r = ok("forget", "memory/topics/vault.md", "--line", "2", *db, **a)
    assert r.stdout.startswith("forgot scope team: memory/topics/vault.md:1\n")
    assert rows_holding(database_url, TOKEN) == []
    assert files_holding(host_a, TOKEN) == []
    # Host B removes its copies when it next loads the scope (its next search).
    assert files_holding(host_b, TOKEN)
    doc = json.loads(ok("search", "bike lock", *db, "--json", **b).stdout)
    assert doc["results"][0]["path"] == "memory/topics/vault.md"
    assert files_holding(host_b, TOKEN) == []
    got = json.loads(ok("get", "memory/topics/vault.md", *db, "--json").stdout)
    assert got["text"] == "- The bike lock is 4411."
    line = refused("forget", "--match", "watered the tomatoes", *db)
    assert "9 blocks hold the text" in line
    line = refused("forget", "--match", "abc", "--database", database_url, "--scope", "nope")
    assert "no scope nope" in line


def test_forget_in_a_published_folder_then_index_compact_drops_the_old_segments(
    database_url: str, tmp_path: Path
) -> None:
    ws = make_workspace(tmp_path)
    host_b = {"ENHANCED_MEMORY_DATABASE_CACHE": str(tmp_path / "copies-b")}
    db = ("--database", database_url, "--scope", "alpha")
    w = ("--workspace", str(ws), "--embedder", "none")
    ok("index", *w, *db)  # a first publish: every file in one segment
    ok("search", TOKEN, *db, "--embedder", "none", **host_b)
    assert files_holding(tmp_path / "copies-b", TOKEN)
    line = refused("forget", "--match", TOKEN, *db, "--yes")
    assert "scope alpha is published from" in line and "forget in that folder there" in line
    ok("forget", "--match", TOKEN, "--yes", *w)
    ok("index", *w, *db)  # a plain publish: the old segment still holds the other files
    assert "em_segments: data" in rows_holding(database_url, TOKEN)
    r = ok("index", "--compact", *w, *db, "--json")
    assert json.loads(r.stdout)["published"]["changed"] == 0
    assert rows_holding(database_url, TOKEN) == []
    doc = json.loads(
        ok("search", "bike lock", *db, "--embedder", "none", "--json", **host_b).stdout
    )
    assert doc["results"][0]["path"] == "memory/topics/vault.md"
    assert files_holding(tmp_path / "copies-b", TOKEN) == []
    assert files_holding(ws, TOKEN) == []


def test_the_tool_over_database_scopes_forgets_in_the_one_named(database_url: str) -> None:
    tools = {
        t.name: t
        for t in create_memory_tools(
            scopes=["alice", "team"], database_url=database_url, embedder="none", allow_write=True
        )
    }
    tools["memory_append"].invoke({"text": f"Alice's locker is {TOKEN}.", "scope": "alice"})
    tools["memory_append"].invoke({"text": f"The team's code is not {TOKEN}.", "scope": "team"})
    assert "name one of alice, team" in tools["memory_forget"].invoke({"match": TOKEN})
    msg = tools["memory_forget"].invoke(
        {
            "type": "tool_call",
            "id": "1",
            "name": "memory_forget",
            "args": {"match": TOKEN, "scope": "alice"},
        }  # fmt: skip
    )
    assert msg.content.startswith("Forgot alice: memory/") and len(msg.artifact["forgotten"]) == 1
    assert rows_holding(database_url, "Alice's locker") == []
    assert "em_notes: body" in rows_holding(database_url, TOKEN)  # the team's line stays
    found = tools["memory_search"].invoke({"query": TOKEN, "scope": "alice"})
    assert found.startswith("No memory matches")
