"""A published transcript is dated as the embedded store dates it: each chunk by its messages.

Issue 38's drift: locally a transcript chunk carries the day of its first
message, while a published segment kept one date per file, so "yesterday"
routed to another day's lines in a scope than in the folder it came from.
Both stores now answer the same hits, as processes against a real PostgreSQL.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_run import run_cli
from tests.workspaces import write_workspace

NOW = "2026-12-04T09:00"


def _turn(role: str, text: str, when: str) -> str:
    return json.dumps({"role": role, "content": text, "timestamp": when})


# Line 1 is the transcript's first message (undated file name); lines 2-3 are on
# 2026-12-01, lines 4-5 on 2026-12-03: two chunks of one file, two days apart.
TRANSCRIPT = (
    "\n".join(
        [
            _turn("user", "Hello, starting the planning thread.", "2026-11-30T08:00:00Z"),
            _turn("user", "What about the Lisbon offsite venue?", "2026-12-01T10:00:00Z"),
            _turn(
                "assistant",
                "We discussed the Lisbon offsite: a hotel near Alfama.",
                "2026-12-01T10:01:00Z",
            ),  # fmt: skip
            _turn("user", "Back to the Lisbon offsite: the dates?", "2026-12-03T15:00:00Z"),
            _turn(
                "assistant",
                "We discussed the Lisbon offsite dates: the second week of March.",
                "2026-12-03T15:01:00Z",
            ),  # fmt: skip
        ]
    )
    + "\n"
)

WORKSPACE = {
    "MEMORY.md": "# Memory\n\nThe team meets in Lisbon once a year.\n",
    "memory/2026-12-02.md": "# 2026-12-02\n\n- Booked flights for the Lisbon offsite.\n",
    "sessions/planning.jsonl": TRANSCRIPT,
}

# Each query, and the transcript lines its date routes to first (None: no date).
QUERIES = {
    "what did we discuss about the Lisbon offsite yesterday": (4, 5),
    "what did we discuss about the Lisbon offsite on December 1": (2, 3),
    "Lisbon offsite": None,
    "offsite dates": None,
}


def _hits(*args: str) -> list[tuple[str, int, int]]:
    r = run_cli("search", *args, "--json", "--k", "10", "--now", NOW, "--embedder", "none")
    assert r.returncode == 0, r.stderr
    return [(h["path"], h["startLine"], h["endLine"]) for h in json.loads(r.stdout)["results"]]


@pytest.mark.parametrize(("query", "routed"), QUERIES.items())
def test_a_published_transcript_answers_as_the_folder_does(
    database_url: str, tmp_path: Path, query: str, routed: tuple[int, int] | None
) -> None:
    w = write_workspace(tmp_path / "w", WORKSPACE)
    for target in ([], ["--database", database_url, "--scope", "trip"]):
        r = run_cli("index", "--workspace", str(w), *target, "--embedder", "none")
        assert r.returncode == 0, r.stderr
    local = _hits(query, "--workspace", str(w))
    scope = _hits(query, "--database", database_url, "--scope", "trip")
    assert local and any(path == "sessions/planning.jsonl" for path, _, _ in local)
    assert scope == local
    if routed is not None:
        assert local[0] == ("sessions/planning.jsonl", *routed)
