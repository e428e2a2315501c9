"""Tests copy a workspace's notes, never its index: `make demo` then `make test` must pass.

`make demo` leaves examples/workspace with an index and a resident engine whose
socket lives in `.enhanced-memory/` for 15 idle minutes; a test that copied the
folder whole failed on that socket (and would search a copy of a live index).
"""

from __future__ import annotations

import re
import socket
from pathlib import Path

from tests.workspaces import SMALL_WORKSPACE, copy_workspace, write_workspace

TESTS = Path(__file__).resolve().parents[1]


def test_a_used_workspace_is_copied_without_its_index_socket_or_logs(tmp_path: Path) -> None:
    used = write_workspace(tmp_path / "used", SMALL_WORKSPACE)
    index = used / ".enhanced-memory"
    index.mkdir()
    (index / "index.sqlite").write_bytes(b"SQLite format 3\0")
    (used / "memory" / "query_log.json").write_text("[]")
    with socket.socket(socket.AF_UNIX) as live:  # what a running resident engine leaves
        live.bind(str(index / "resident.sock"))
        live.listen()
        copy = copy_workspace(used, tmp_path / "copy")
    notes = sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file())
    assert notes == sorted(SMALL_WORKSPACE)


def test_every_test_copies_workspaces_through_copy_workspace() -> None:
    copiers = {
        str(path.relative_to(TESTS))
        for path in TESTS.rglob("*.py")
        if re.search(r"\bcopytree\(", path.read_text(encoding="utf-8"))
    }
    assert copiers == {"workspaces.py"}
