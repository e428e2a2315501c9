"""The ``enhanced-memory`` command run as a real process."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli_run import run_cli


def run(
    *args: str, cwd: Path | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=cwd, **{"ENHANCED_MEMORY_EMBEDDER": "none", **(env or {})})


def test_index_then_search_json(workspace: Path) -> None:
    r = run("index", "--workspace", str(workspace), "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["files"] == 4 and info["chunks"] >= 5
    r = run("search", "billing database Postgres", "--workspace", str(workspace), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["provider"] == "none" and out["fallback"] is None
    top = out["results"][0]
    assert top["path"] == "memory/2026-02-08.md"
    assert set(top) == {"path", "startLine", "endLine", "score", "snippet", "header", "source",
                        "corpus", "citation", "textScore"}  # fmt: skip
    lines = (workspace / top["path"]).read_text().split("\n")
    assert "billing" in "\n".join(lines[top["startLine"] - 1 : top["endLine"]])


def test_date_routing_with_now(workspace: Path) -> None:
    r = run(
        "search",
        "what did we review yesterday?",
        "--now",
        "2026-02-08T10:00",
        "--workspace",
        str(workspace),
        "--json",
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["results"][0]["path"] == "memory/2026-02-07.md"


def test_batch_writes_one_line_per_query(workspace: Path, tmp_path: Path) -> None:
    batch = tmp_path / "q.jsonl"
    batch.write_text(
        json.dumps({"id": "a", "query": "ramen place"})
        + "\n"
        + json.dumps({"id": "b", "query": "what happened yesterday", "now": "2026-02-09T09:00"})
        + "\n"
    )
    r = run("search", "--batch", str(batch), "--workspace", str(workspace), "--json", "--k", "2")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [row["id"] for row in rows] == ["a", "b"]
    assert rows[1]["results"][0]["path"] == "memory/2026-02-08.md"
    assert all(len(row["results"]) <= 2 for row in rows)


def test_text_mode_names_embedder_on_stderr(workspace: Path) -> None:
    r = run("search", "ramen", "--workspace", str(workspace))
    assert r.returncode == 0
    assert "embedder: none" in r.stderr
    assert "memory/2026-02-08.md" in r.stdout


@pytest.mark.parametrize(
    "args, needle",
    [
        (("search", "x", "--workspace", "/no/such/dir"), "workspace not found"),
        (("search", "x", "--now", "yesterday-ish"), "--now"),
        (("search", "x", "--k", "0"), "--k"),
        (("search", "--batch", "/no/such.jsonl"), "batch file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(workspace: Path, args: tuple, needle: str) -> None:
    full = list(args)
    if "--workspace" not in full:
        full += ["--workspace", str(workspace)]
    r = run(*full, "--json")
    assert r.returncode == 2
    assert needle in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    fail = json.loads(r.stdout)
    assert fail["results"] == [] and fail["disabled"] and fail["unavailable"] and fail["error"]


def test_a_folder_without_memory_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    folder = tmp_path / "project"  # the wrong folder: code, no MEMORY.md, memory/ or sessions/
    folder.mkdir()
    (folder / "README.md").write_text("# A project\n\nhello world\n")
    for args, where in (
        (("search", "hello"), {"cwd": folder}),  # the default workspace: "."
        (("search", "hello", "--json"), {"cwd": folder}),
        (("index",), {"cwd": folder}),
        (("search", "hello", "--workspace", str(folder)), {}),
        (("serve", "--port", "0", "--workspace", str(folder)), {}),
        (("mcp", "--workspace", str(folder)), {}),
    ):
        r = run(*args, **where)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
        assert f"no memory in {folder} (no MEMORY.md, memory/ or sessions/)" in r.stderr
        assert "--workspace DIR" in r.stderr
        if "--json" in args:
            assert json.loads(r.stdout)["results"] == []
        assert [p.name for p in folder.iterdir()] == ["README.md"], args  # nothing written


def test_remember_makes_an_empty_folder_a_workspace(tmp_path: Path) -> None:
    folder = tmp_path / "new-agent"
    folder.mkdir()
    r = run("remember", "The first note of a new agent: call it Ada.", cwd=folder)
    assert r.returncode == 0, r.stderr
    r = run("search", "what is the agent called", "--json", cwd=folder)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["results"][0]["path"].startswith("memory/")
    (folder / "memory").rename(folder / "old")  # an empty sessions/ folder is one too
    (folder / "sessions").mkdir()
    assert run("search", "anything", cwd=folder).returncode == 0


def test_ollama_down_falls_back_to_keyword_only(workspace: Path) -> None:
    from tests.fake_ollama import unused_port

    r = run(
        "search",
        "ramen",
        "--workspace",
        str(workspace),
        "--json",
        "--embedder",
        "ollama",
        "--ollama-url",
        f"http://127.0.0.1:{unused_port()}",
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["fallback"] == "keyword-only" and out["provider"] == "ollama"
    assert out["results"][0]["path"] == "memory/2026-02-08.md"


def test_ollama_over_http_end_to_end(workspace: Path, fake_ollama) -> None:
    ollama = (
        "--workspace",
        str(workspace),
        "--embedder",
        "ollama",
        "--ollama-url",
        fake_ollama.url,
    )
    r = run("index", *ollama)
    assert r.returncode == 0, r.stderr
    calls = fake_ollama.calls
    assert calls >= 1
    assert all(t.startswith("search_document: ") for t in fake_ollama.embedded_texts)
    r = run("search", "ramen Fifth street", "--json", *ollama)
    out = json.loads(r.stdout)
    assert (
        out["provider"] == "ollama"
        and out["model"] == "nomic-embed-text"
        and out["fallback"] is None
    )
    assert out["results"][0]["path"] == "memory/2026-02-08.md"
    # Nothing changed: the second index run embeds nothing.
    before = fake_ollama.calls
    r = run("index", *ollama)
    assert r.returncode == 0 and fake_ollama.calls == before


@pytest.mark.parametrize(
    "args",
    [
        ("crossref", "graph"),
        ("crossref", "show", "MEMORY.md"),
        ("crossref", "build"),
        ("daemon", "start"),
        ("daemon", "run"),
        ("serve", "--daemon"),
        ("status",),
        ("salience",),
    ],
    ids=" ".join,
)
def test_every_command_refuses_a_folder_with_no_memory_writing_nothing(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    # The same one line as search, before an index or a resident engine is written there:
    # a command that first wrote .enhanced-memory/ then said "run crossref build" or "no
    # index yet: run index" sent the user to a command that refuses the folder.
    empty = tmp_path / "empty"
    empty.mkdir()
    r = run(*args, "--workspace", str(empty))
    assert r.returncode == 2, (args, r.stdout, r.stderr)
    assert r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert f"no memory in {empty} (no MEMORY.md, memory/ or sessions/)" in r.stderr
    assert list(empty.iterdir()) == []
