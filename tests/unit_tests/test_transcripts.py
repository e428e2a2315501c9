"""Session transcripts as a corpus: formats, chunks of turns, growth, and ``corpus``.

A transcript hit points at the JSONL lines of its first and last message, is
dated by its messages, and a transcript that grows is read again only from its
last chunk (a last line still being written is left for the next run).
"""

from __future__ import annotations

import json
import logging
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from langchain_enhanced_memory.config import engine_config
from langchain_enhanced_memory.core.request import SearchRequest
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.core.transcripts import TranscriptChunker, parse_turn
from langchain_enhanced_memory.engine import EngineConfig, MemorySearch
from langchain_enhanced_memory.store.index import MemoryIndex
from langchain_enhanced_memory.store.notes import get_lines
from tests.cli_run import run_cli

SCHEMA = json.loads(
    resources.files("langchain_enhanced_memory")
    .joinpath("openclaw/schema/memory_search.schema.json")
    .read_text(encoding="utf-8")
)
HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-02-02T09:00:00Z"}


def message(role: str, text: str, when: str, name: str | None = None, **extra: object) -> dict:
    """One OpenClaw message line."""
    msg: dict = {"role": role, "content": [{"type": "text", "text": text}], **extra}
    if name:
        msg["name"] = name
    return {"type": "message", "timestamp": when, "message": msg}


def write_jsonl(path: Path, rows: list, *, end: str = "\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + end)


def append_jsonl(path: Path, rows: list) -> None:
    with path.open("a") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in rows))


def chat(day: str, n: int, topic: str) -> list[dict]:
    """``n`` alternating turns on ``day`` about ``topic``."""
    return [
        message(
            "user" if i % 2 == 0 else "assistant",
            f"turn {i} about {topic}",
            f"{day}T10:{i:02d}:00Z",
        )
        for i in range(n)
    ]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "2026-02-01.md").write_text(
        "# 2026-02-01\n\n- We chose the Postgres database for the billing service.\n"
    )
    return tmp_path


def engine(ws: Path, **settings: object) -> MemorySearch:
    return MemorySearch.from_config(
        EngineConfig(workspace=ws, settings=MemorySettings(**settings), embedder="none")
    )


def search(ws: Path, query: str, **body: object) -> list:
    return engine(ws).run(SearchRequest.from_body({"query": query, "k": 10, **body})).hits


# --------------------------------------------------------------------------- formats


def test_openclaw_lines_keep_what_was_said_and_leave_thinking_and_tools_out() -> None:
    line = {
        "type": "message",
        "timestamp": "2026-02-02T09:05:00.000Z",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "secret plan"},
                {"type": "text", "text": "Use  the\nred one."},
                {"type": "toolCall", "name": "read", "arguments": {"path": "a.md"}},
            ],
        },
    }
    turn = parse_turn(json.dumps(line), 3)
    assert turn is not None
    assert (turn.line, turn.speaker, turn.text, turn.time) == (
        3,
        "assistant",
        "Use the red one.",
        "2026-02-02 09:05",
    )
    both = parse_turn(json.dumps(line), 3, extras=True)
    assert both is not None and "secret plan" in both.text and 'read({"path": "a.md"})' in both.text
    result = {"type": "message", "message": {"role": "toolResult", "content": "42 rows"}}
    assert parse_turn(json.dumps(result), 4) is None
    assert parse_turn(json.dumps(result), 4, extras=True) is not None
    assert parse_turn(json.dumps(HEADER), 1) is None
    assert parse_turn(json.dumps({"type": "model_change", "model": "x"}), 2) is None


def test_plain_chat_lines_and_epoch_times() -> None:
    turn = parse_turn(json.dumps({"role": "user", "content": "hi there", "timestamp": 0}), 1)
    assert turn is not None and (turn.text, turn.time) == ("hi there", "1970-01-01 00:00")
    named = parse_turn(json.dumps({"role": "user", "name": "Ana", "content": "x"}), 2)
    assert named is not None and named.render() == "Ana: x" and named.time == ""


def test_chunks_are_windows_of_turns_with_their_jsonl_lines() -> None:
    lines = [json.dumps(HEADER), *(json.dumps(m) for m in chat("2026-02-02", 6, "kites"))]
    chunks = TranscriptChunker(MemorySettings(session_window=2))(lines, "s1.jsonl")
    assert [(c.start_line, c.end_line) for c in chunks] == [(2, 3), (4, 5), (6, 7)]
    assert chunks[0].text == "user: turn 0 about kites\nassistant: turn 1 about kites"
    assert chunks[0].header.startswith("2026-02-02 10:00")


# --------------------------------------------------------------------------- search


def test_a_transcript_hit_points_at_its_lines_and_is_dated_by_its_messages(ws: Path) -> None:
    rows = [HEADER, *chat("2026-02-02", 2, "kites"), *chat("2026-02-05", 2, "the lighthouse")]
    write_jsonl(ws / "sessions" / "s1.jsonl", rows)
    hits = search(ws, "lighthouse")
    assert (hits[0].path, hits[0].start_line, hits[0].end_line) == ("sessions/s1.jsonl", 4, 5)
    assert hits[0].kind == "session" and hits[0].date == "2026-02-05"
    # Date routing and the filters read the message's day, not the file's.
    dated = search(ws, "what did we say yesterday about turn", now="2026-02-06T12:00")
    assert (dated[0].start_line, dated[0].date) == (4, "2026-02-05")
    assert [h.start_line for h in search(ws, "turn", until="2026-02-03")] == [2]


def test_corpus_keeps_notes_or_transcripts(ws: Path) -> None:
    write_jsonl(ws / "sessions" / "s1.jsonl", [HEADER, *chat("2026-02-02", 2, "database")])
    assert {h.kind for h in search(ws, "database")} == {"daily", "session"}
    assert {h.kind for h in search(ws, "database", corpus="memory")} == {"daily"}
    assert {h.kind for h in search(ws, "database", corpus="sessions")} == {"session"}
    assert {h.kind for h in search(ws, "database", corpus="all")} == {"daily", "session"}


def test_the_session_prior_weighs_transcripts_against_notes(ws: Path) -> None:
    said = "We chose the Postgres database for the billing service."
    write_jsonl(ws / "sessions" / "s1.jsonl", [HEADER, message("user", said, "2026-02-01T10:00Z")])
    request = SearchRequest("Postgres database billing service")
    assert [h.kind for h in engine(ws).run(request).hits] == ["daily", "session"]
    assert [h.kind for h in engine(ws, session_prior=2).run(request).hits] == ["session", "daily"]


def test_more_transcript_folders_by_setting_and_environment(
    ws: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path_factory.mktemp("agent") / "sessions"
    write_jsonl(elsewhere / "a.jsonl", [HEADER, *chat("2026-02-02", 2, "zeppelin")])
    write_jsonl(ws / "logs" / "b.jsonl", [HEADER, *chat("2026-02-02", 2, "zeppelin")])
    assert search(ws, "zeppelin") == []
    monkeypatch.setenv("ENHANCED_MEMORY_SESSION_DIRS", str(elsewhere))
    config = engine_config(
        workspace_arg=ws,
        embedder="none",
        settings=MemorySettings(session_dirs=["sessions", "logs"]),
    )  # the entry point's: the settings' folders, then the environment's
    hits = MemorySearch.from_config(config).run(SearchRequest("zeppelin")).hits
    # A folder outside the workspace is named under sessions/ (its parent's name here).
    outside = f"sessions/{elsewhere.parent.name}/a.jsonl"
    assert sorted(h.path for h in hits) == ["logs/b.jsonl", outside]
    got = get_lines(ws, outside, settings=config.settings)
    assert got.text == "user: turn 0 about zeppelin\nassistant: turn 1 about zeppelin"


@pytest.mark.parametrize(("folder", "agent"), [("workspace", "main"), ("workspace-work", "work")])
def test_an_openclaw_workspace_searches_its_agents_transcripts(
    tmp_path: Path, folder: str, agent: str
) -> None:
    state = tmp_path / ".openclaw"
    ws = state / folder
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-02-01.md").write_text("# 2026-02-01\n\n- Standup.\n")
    write_jsonl(
        state / "agents" / agent / "sessions" / "s1.jsonl",
        [HEADER, *chat("2026-02-02", 2, "zeppelin")],
    )
    write_jsonl(
        state / "agents" / "other" / "sessions" / "s2.jsonl",
        [HEADER, *chat("2026-02-02", 2, "zeppelin")],
    )
    assert [h.path for h in search(ws, "zeppelin")] == [f"sessions/{agent}/s1.jsonl"]
    assert engine(ws, openclaw_sessions=False).run(SearchRequest("zeppelin")).hits == []
    assert get_lines(ws, f"sessions/{agent}/s1.jsonl", settings=MemorySettings()).text.startswith(
        "user: turn 0 about zeppelin"
    )


# --------------------------------------------------------------------------- growth


def index_of(ws: Path) -> MemoryIndex:
    return MemoryIndex(ws, MemorySettings(session_window=2))


def chunk_rows(index: MemoryIndex) -> list[tuple[int, int, int]]:
    with index.reader() as conn:
        return conn.execute("SELECT id, start_line, end_line FROM chunks ORDER BY id").fetchall()


def test_a_growing_transcript_is_read_again_from_its_last_chunk(ws: Path) -> None:
    path = ws / "sessions" / "s1.jsonl"
    write_jsonl(path, [HEADER, *chat("2026-02-02", 5, "kites")])
    index = index_of(ws)
    index.sync()
    before = [r for r in chunk_rows(index) if r[1] > 1]
    assert [(a, b) for _, a, b in before] == [(2, 3), (4, 5), (6, 6)]
    append_jsonl(path, chat("2026-02-02", 3, "boats"))
    with index.reader() as conn:
        tail = conn.execute("SELECT tail FROM files WHERE path='sessions/s1.jsonl'").fetchone()[0]
    assert json.loads(tail)[1] == 0  # one block: resumed at its start, from the stored point
    index.sync()
    after = [r for r in chunk_rows(index) if r[1] > 1]
    # The two closed chunks keep their ids; the open one is chunked again with the new turns.
    assert after[:2] == before[:2] and after[2][0] > before[2][0]
    assert [(a, b) for _, a, b in after] == [(2, 3), (4, 5), (6, 8), (9, 9)]
    whole = MemoryIndex(ws, MemorySettings(session_window=2), path=ws / "other.sqlite")
    whole.sync()
    assert [r[1:] for r in chunk_rows(whole) if r[1] > 1] == [r[1:] for r in after]


def test_a_partial_last_line_waits_for_the_next_run(
    ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = ws / "sessions" / "s1.jsonl"
    done = json.dumps(message("user", "the finished question", "2026-02-02T10:00:00Z"))
    half = json.dumps(message("assistant", "the half written answer", "2026-02-02T10:01:00Z"))
    write_jsonl(path, [json.dumps(HEADER), done, half[:30]], end="")
    index = index_of(ws)
    with caplog.at_level(logging.WARNING, logger="langchain_enhanced_memory"):
        index.sync()
    assert "s1.jsonl" not in caplog.text
    assert [r[1:] for r in chunk_rows(index) if r[1] > 1] == [(2, 2)]
    with path.open("a") as fh:
        fh.write(half[30:] + "\n")
    index.sync()
    assert [r[1:] for r in chunk_rows(index) if r[1] > 1] == [(2, 3)]
    assert search(ws, "half written")[0].end_line == 3


@pytest.mark.parametrize("how", ["truncated", "rewritten"])
def test_a_truncated_or_rewritten_transcript_is_read_again_whole(ws: Path, how: str) -> None:
    path = ws / "sessions" / "s1.jsonl"
    write_jsonl(path, [HEADER, *chat("2026-02-02", 6, "kites")])
    index = index_of(ws)
    index.sync()
    if how == "truncated":
        write_jsonl(path, [HEADER, *chat("2026-02-02", 2, "kites")])
        want = [(2, 3)]
    else:  # longer, but the old bytes changed
        write_jsonl(path, [HEADER, *chat("2026-02-02", 8, "gliders")])
        want = [(2, 3), (4, 5), (6, 7), (8, 9)]
    index.sync()
    assert [r[1:] for r in chunk_rows(index) if r[1] > 1] == want
    hits = search(ws, "gliders" if how == "rewritten" else "kites")
    assert hits and all("kites" not in h.text for h in hits if how == "rewritten")


def test_malformed_lines_are_skipped_with_one_warning(
    ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rows = [HEADER, *chat("2026-02-02", 2, "kites"), "{not json", "[1, 2]"]
    write_jsonl(ws / "sessions" / "bad.jsonl", [*rows, *chat("2026-02-03", 2, "harbour")])
    with caplog.at_level(logging.WARNING, logger="langchain_enhanced_memory"):
        hits = search(ws, "harbour")
    assert (hits[0].start_line, hits[0].end_line) == (6, 7)
    warned = [r.getMessage() for r in caplog.records if "bad.jsonl" in r.getMessage()]
    assert warned == [
        "sessions/bad.jsonl: line 4: not JSON (Expecting property name enclosed"
        " in double quotes); skipped (1 more such lines)"
    ]


def test_a_nul_or_a_deeply_nested_line_costs_only_that_line(
    ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good = [json.dumps(r).encode() for r in chat("2026-02-02", 2, "harbour")]
    bad = [b'{"role": "user", "content": "a\x00b"}', b"[" * 100_000]
    (ws / "sessions").mkdir()
    (ws / "sessions" / "z.jsonl").write_bytes(b"\n".join([*bad, *good]) + b"\n")
    with caplog.at_level(logging.WARNING, logger="langchain_enhanced_memory"):
        hits = search(ws, "harbour")
    assert (hits[0].path, hits[0].start_line, hits[0].end_line) == ("sessions/z.jsonl", 3, 4)
    warned = [r.getMessage() for r in caplog.records if "z.jsonl" in r.getMessage()]
    assert warned == [
        "sessions/z.jsonl: line 1: not JSON (Invalid control character at); skipped"
        " (1 more such lines)"
    ]


def test_a_lone_surrogate_costs_that_character_with_one_warning(
    ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cut = message("user", "cut \ud83d kites", "2026-02-02T10:00:00Z", name="An\udcffa")
    call = {"type": "toolCall", "name": "fly", "arguments": {"to": "\udfff"}}
    tool = message("assistant", "", "2026-02-02T10:01:00Z", content=[call])
    turn = parse_turn(json.dumps(tool), 3, extras=True)
    assert turn is not None and (turn.text, turn.mended) == ('fly({"to": "\ufffd"})', True)
    write_jsonl(
        ws / "sessions" / "cut.jsonl", [HEADER, cut, tool, *chat("2026-02-03", 2, "harbour")]
    )
    with caplog.at_level(logging.WARNING, logger="langchain_enhanced_memory"):
        hits = {h.start_line: h.text for h in search(ws, "kites harbour")}
    assert hits[2] == "An\ufffda: cut \ufffd kites" and hits[4].startswith("user: turn 0 about")
    warned = [r.getMessage() for r in caplog.records if "cut.jsonl" in r.getMessage()]
    assert warned == [
        "sessions/cut.jsonl: line 2: a lone surrogate (half an emoji); kept as U+FFFD"
    ]


# --------------------------------------------------------------------------- get


def test_get_shows_a_transcripts_turns_and_stays_confined(ws: Path) -> None:
    rows = [HEADER, message("user", "where is the key?", "2026-02-02T10:00:00Z", name="Ana")]
    write_jsonl(ws / "sessions" / "s1.jsonl", [*rows, *chat("2026-02-02", 2, "keys")])
    got = get_lines(ws, "sessions/s1.jsonl", 1, 3)
    assert (got.from_line, got.to_line, got.total_lines) == (1, 3, 4)
    assert got.text == "Ana: where is the key?\nuser: turn 0 about keys"
    write_jsonl(ws / "other" / "x.jsonl", rows)
    with pytest.raises(Exception, match="not one of the workspace's memory files"):
        get_lines(ws, "other/x.jsonl")


# --------------------------------------------------------------------------- the CLI


def test_corpus_through_the_command_line(ws: Path) -> None:
    write_jsonl(ws / "sessions" / "s1.jsonl", [HEADER, *chat("2026-02-02", 2, "database")])
    common = ("--workspace", str(ws), "--embedder", "none", "--json")
    for corpus, sources in (("all", {"memory", "sessions"}), ("sessions", {"sessions"})):
        out = run_cli("search", "database", "--corpus", corpus, *common)
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
        results = doc["results"]
        assert {r["source"] for r in results} == {r["corpus"] for r in results} == sources
        row = next(r for r in results if r["source"] == "sessions")
        assert (row["sessionId"], row["timestamp"]) == ("s1", "2026-02-02T10:00")
    batch = ws / "q.jsonl"
    batch.write_text(
        json.dumps({"id": 1, "query": "database", "corpus": "memory"})
        + "\n"
        + json.dumps({"id": 2, "query": "database", "corpus": "nope"})
        + "\n"
    )
    out = run_cli("search", "--batch", str(batch), *common)
    first, second = (json.loads(line) for line in out.stdout.splitlines())
    assert [r["path"] for r in first["results"]] == ["memory/2026-02-01.md"]
    assert "corpus: must be memory, sessions or all" in second["error"]
    got = run_cli("get", "sessions/s1.jsonl", "--workspace", str(ws), "--json")
    assert json.loads(got.stdout)["text"].startswith("user: turn 0 about database")


def test_more_transcript_folders_by_flag(
    ws: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    agent = tmp_path_factory.mktemp("agent")
    write_jsonl(agent / "logs" / "a.jsonl", [HEADER, *chat("2026-02-02", 2, "zeppelin")])
    common = ("--workspace", str(ws), "--embedder", "none", "--json")
    assert json.loads(run_cli("search", "zeppelin", *common).stdout)["results"] == []
    # A relative folder is read from where the command runs (here: the agent folder).
    out = run_cli("search", "zeppelin", "--sessions", "logs", *common, cwd=agent)
    assert [r["path"] for r in json.loads(out.stdout)["results"]] == ["sessions/logs/a.jsonl"]
    got = run_cli("get", "sessions/logs/a.jsonl", "--sessions", str(agent / "logs"), *common)
    assert json.loads(got.stdout)["text"].startswith("user: turn 0 about zeppelin")
    refused = run_cli("get", "sessions/logs/a.jsonl", *common)
    assert json.loads(refused.stdout)["text"] == "", refused.stdout


@pytest.mark.slow
def test_a_100_mb_transcript_is_indexed_and_grows_by_its_tail(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "big.jsonl"
    path.parent.mkdir()
    size, i = 0, 0
    with path.open("w") as fh:
        fh.write(json.dumps(HEADER) + "\n")
        while size < 100 << 20:  # past the 64 MB a note may have
            words = " ".join(f"w{(i * 7 + j) % 5000}" for j in range(40))
            line = json.dumps(message("user" if i % 2 else "assistant", words, HEADER["timestamp"]))
            fh.write(line + "\n")
            size, i = size + len(line) + 1, i + 1
    index = MemoryIndex(tmp_path)
    first = index.sync()
    assert first.changed == ["sessions/big.jsonl"] and first.chunks >= i // 16
    with index.reader() as conn:
        kept = conn.execute("SELECT max(id) FROM chunks").fetchone()[0]
    append_jsonl(path, [message("user", "the zanzibar handover", "2026-02-03T10:00:00Z")])
    index.sync()
    with index.reader() as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM chunks ORDER BY id")]
    assert len([x for x in ids if x > kept]) == 2  # the last chunk again, and the new day's
    assert search(tmp_path, "zanzibar handover")[0].start_line == i + 2
