"""A fuzzed transcript costs only itself: every other file is indexed and found as without it.

One transcript of a workspace is filled with what a crashing or careless agent
writes (random bytes, lone surrogates, NULs, huge lines, truncated and deeply
nested JSON, values of the wrong type); the notes and the other transcripts
must be chunked exactly as in the same workspace without it, found by the same
searches, and every command (``index``, ``search`` of each corpus, ``get`` of
the bad file) must answer with exit 0 and no traceback. The fast case holds each
fault once; the slow ones (``make reliability``) draw random mixes from seeds.
"""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli_run import run_cli
from tests.workspaces import SMALL_WORKSPACE, copy_workspace, write_workspace

BAD = "sessions/m-fuzzed.jsonl"


def _chat(role: str, text: str, minute: int) -> str:
    return json.dumps(
        {"role": role, "content": text, "timestamp": f"2026-03-01T10:{minute:02d}:00Z"},
        ensure_ascii=False,
    )


# The good transcripts, read before and after the bad one (file names sort around it).
GOOD = {
    **SMALL_WORKSPACE,
    "sessions/a-openclaw.jsonl": "\n".join(
        json.dumps(row, ensure_ascii=False)
        for row in (
            {"type": "session", "version": 3, "id": "a", "timestamp": "2026-03-01T09:00:00Z"},
            {
                "type": "message",
                "timestamp": "2026-03-01T09:01:00Z",
                "message": {"role": "user", "content": [{"type": "text", "text": "kestrel 🐦?"}]},
            },
            {
                "type": "message",
                "timestamp": "2026-03-01T09:02:00Z",
                "message": {"role": "assistant", "content": "The kestrel nests in the 塔."},
            },
        )
    )
    + "\n",
    "sessions/z-chat.jsonl": "\n".join(
        _chat(role, text, i)
        for i, (role, text) in enumerate(
            [("user", "where did the osprey land?"), ("assistant", "On the osprey mast 👍")]
        )
    )
    + "\n",
}
# Each good file, a word only it holds, and the corpus a search for it reads.
QUERIES = [
    ("roast", "memory"),
    ("rollback", "all"),
    ("ramen", "memory"),
    ("warmup", "all"),
    ("kestrel", "sessions"),
    ("osprey", "all"),
]


def _faults(rng: random.Random, huge: int) -> dict[str, Callable[[], bytes]]:
    """One way each of writing a bad transcript line (bytes, without its newline)."""

    def line(**fields: object) -> bytes:
        return json.dumps({"role": "user", "timestamp": "2026-03-01T11:00:00Z", **fields}).encode()

    good = line(content="fuzzword spoken here")
    return {
        "random bytes": lambda: rng.randbytes(rng.randint(1, 300)),
        "invalid utf-8": lambda: b'{"role":"user","content":"bad \xff\xfe\xc3( fuzzword"}',
        "lone high surrogate": lambda: line(content="cut \ud83d"),
        "lone low surrogate": lambda: line(content="\udcff fuzzword", name="\udfff"),
        "reversed pair": lambda: line(content="\ude00\ud83d"),
        "surrogate key and role": lambda: json.dumps({"\ud800": 1, "role": "\udc00"}).encode(),
        "surrogate in a tool call": lambda: json.dumps(
            {
                "type": "message",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "toolCall", "name": "\ud83d", "arguments": "\udcff"}],
                },
            }
        ).encode(),
        "nul escape": lambda: line(content="nul \u0000 inside"),
        "raw nul": lambda: good[:20] + b"\x00" + good[20:],
        "huge line": lambda: line(content="fuzzword " + "x" * huge),
        "truncated json": lambda: good[: rng.randint(1, len(good) - 1)],
        "deeply nested": lambda: b"[" * rng.randint(1_000, 200_000),
        "nested content": lambda: line(content=[[[{"type": "text", "text": "deep"}]]] * 3),
        "wrong types": lambda: line(content=rng.choice([1, None, {"a": 1}, [1, 2], True])),
        "odd timestamps": lambda: line(
            content="fuzzword when",
            timestamp=rng.choice([1e300, -1e300, "9999-99-99", True, [], 10**40]),
        ),
        "nan timestamp": lambda: good.replace(b'"2026-03-01T11:00:00Z"', b"NaN"),
        "huge number": lambda: b'{"role":"user","content":"n","timestamp":' + b"9" * 5000 + b"}",
        "line separators": lambda: line(content="a\u2028b\u2029c\x85d\rfuzzword"),
        "not an object": lambda: rng.choice([b"[1, 2]", b'"text"', b"null", b"42"]),
        "bom": lambda: b"\xef\xbb\xbf" + good,
        "utf-16 bom": lambda: b"\xff\xfe" + good,
        "a good line": lambda: good,
    }


def fuzzed_transcript(seed: int, extra: int, huge: int) -> bytes:
    """Each fault once in a shuffled order, then ``extra`` random ones (seeded)."""
    rng = random.Random(seed)
    faults = _faults(rng, huge)
    kinds = list(faults)
    rng.shuffle(kinds)
    kinds += rng.choices(list(faults), k=extra)
    end = b"" if rng.random() < 0.5 else b"\n"  # a last line without its newline, or not
    return b"\n".join(faults[k]() for k in kinds) + end


def _cli(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    out = run_cli(*args, "--workspace", str(ws), timeout=300, ENHANCED_MEMORY_EMBEDDER="none")
    assert out.returncode == 0 and "Traceback" not in out.stderr, (args, out.stderr[-2000:])
    return out


def _chunks(ws: Path) -> list[tuple]:
    """The index's chunks of every file but the bad one, read by SQLite itself."""
    db = sqlite3.connect(f"file:{ws / '.enhanced-memory' / 'index.sqlite'}?mode=ro", uri=True)
    try:
        return db.execute(
            "SELECT path, start_line, end_line, header, headers, text FROM chunks"
            " WHERE path != ? ORDER BY path, start_line",
            (BAD,),
        ).fetchall()
    finally:
        db.close()


def _found(ws: Path) -> list[list[tuple]]:
    """Each query's hits outside the bad file, by one ``search --batch`` process."""
    batch = ws.parent / f"{ws.name}-queries.jsonl"
    batch.write_text(
        "".join(json.dumps({"query": q, "corpus": c, "k": 10}) + "\n" for q, c in QUERIES)
    )
    out = _cli(ws, "search", "--batch", str(batch), "--json")
    answers = [json.loads(line) for line in out.stdout.splitlines()]
    return [
        [(r["path"], r["startLine"], r["endLine"], r["snippet"]) for r in a["results"]]
        for a in answers
    ]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple], list]:
    """The good workspace, indexed, its chunks and what each query finds."""
    ws = write_workspace(tmp_path_factory.mktemp("baseline") / "ws", GOOD)
    _cli(ws, "index")
    found = _found(ws)
    assert all(found), found  # every query finds its file
    return ws, _chunks(ws), found


def _check(baseline: tuple[Path, list[tuple], list], tmp: Path, data: bytes) -> list[dict]:
    """Index ``data`` as the bad transcript beside the good files; the bad file's own hits."""
    good, chunks, found = baseline
    ws = tmp / "ws"
    copy_workspace(good, ws)
    (ws / BAD).write_bytes(data)
    _cli(ws, "index")
    assert _chunks(ws) == chunks
    assert [[h for h in hits if h[0] != BAD] for hits in _found(ws)] == found
    got = json.loads(_cli(ws, "get", BAD, "--json").stdout)
    assert got["path"] == BAD
    out = _cli(ws, "search", "fuzzword", "--corpus", "sessions", "--json")
    return json.loads(out.stdout)["results"]


def test_a_fuzzed_transcript_costs_only_itself(baseline, tmp_path: Path) -> None:
    data = fuzzed_transcript(3, extra=10, huge=1 << 20)
    # This seed puts a raw NUL where a binary file is sniffed, and no UTF-16 BOM first.
    assert b"\x00" in data[:8192] and data.startswith(b'{"')
    hits = _check(baseline, tmp_path, data)
    assert {h["path"] for h in hits} == {BAD}  # and the bad file keeps its good lines


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1, 21))
def test_random_fuzzed_transcripts_cost_only_themselves(
    baseline, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(-seed)
    data = fuzzed_transcript(seed, extra=rng.randint(20, 200), huge=rng.randint(1, 4 << 20))
    _check(baseline, tmp_path, data)
