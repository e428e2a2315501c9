"""``index --watch``: a long-lived publisher keeps a folder-backed scope following its folder."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

from tests.cli_run import CLI, cli_env, run_cli
from tests.workspaces import SMALL_WORKSPACE, write_workspace


def _found(database_url: str, words: str) -> bool:
    r = run_cli("search", words, "--database", database_url, "--scope", "alpha", "--json",
                "--embedder", "none")  # fmt: skip
    assert r.returncode == 0, r.stderr
    return any(words in hit["snippet"] for hit in json.loads(r.stdout)["results"])


def test_an_edit_is_published_while_watching_and_ctrl_c_stops(
    database_url: str, tmp_path: Path
) -> None:
    ws = write_workspace(tmp_path / "ws", SMALL_WORKSPACE)
    proc = subprocess.Popen(
        [*CLI, "index", "--workspace", str(ws), "--database", database_url, "--scope", "alpha",
         "--embedder", "none", "--watch", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
        assert first["published"]["scope"] == "alpha"
        note = ws / "memory" / "2026-12-01.md"
        with note.open("a", encoding="utf-8") as f:
            f.write("\n- Zanzibar ferry schedule agreed with the harbour office\n")
        passed = json.loads(proc.stdout.readline())  # the pass that saw the edit
        assert passed["published"]["changed"] == 1
        assert _found(database_url, "Zanzibar ferry schedule")
        note.unlink()
        passed = json.loads(proc.stdout.readline())
        assert passed["published"]["deleted"] == 1
        assert not _found(database_url, "Zanzibar ferry schedule")
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "stopped" in err and "Traceback" not in err


def test_watch_and_compact_are_refused_in_one_line(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws", SMALL_WORKSPACE)
    r = run_cli("index", "--workspace", str(ws), "--watch", "--compact", "--embedder", "none")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
