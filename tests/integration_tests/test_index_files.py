"""The index's files and the workspace scan, through the command line as a process.

The index folder is private to its owner wherever it lives; a symlinked
``memory/`` folder is followed; an edit that keeps the size and mtime is still
seen; a skipped file is named once, in one plain line.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

from tests.cli_run import run_cli


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    env.setdefault("ENHANCED_MEMORY_EMBEDDER", "none")
    return run_cli(*args, **env)


@contextlib.contextmanager
def _umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)  # the child processes inherit it
    try:
        yield
    finally:
        os.umask(old)


def _modes(folder: Path) -> dict[str, str]:
    """``{path: mode}`` of the folder and of everything under it that is not private."""
    out = {}
    for p in [folder, *folder.rglob("*")]:
        st = p.lstat()
        want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
        if stat.S_IMODE(st.st_mode) != want:
            out[str(p.relative_to(folder.parent))] = oct(stat.S_IMODE(st.st_mode))
    return out


def _ollama(fake_ollama) -> tuple[str, ...]:
    return ("--embedder", "ollama", "--ollama-url", fake_ollama.url)


# ------------------------------------------------------------------ 3: private index


def test_index_folder_is_private_under_umask_022(workspace: Path, fake_ollama) -> None:
    for note in workspace.rglob("*.md"):
        note.chmod(0o600)
    ws = ("--workspace", str(workspace))
    with _umask(0o022):
        for args in (("index",), ("search", "ramen"), ("index", "--compact")):
            r = _cli(*args, *ws, *_ollama(fake_ollama))
            assert r.returncode == 0, r.stderr
    folder = workspace / ".enhanced-memory"
    names = {p.suffix for p in folder.rglob("*")}
    assert {".sqlite", ".seg", ".vec"} <= names  # the text index and the vector side files
    assert _modes(folder) == {}


def test_a_search_writes_nothing_among_the_notes_and_nothing_readable(workspace: Path) -> None:
    for note in workspace.rglob("*.md"):
        note.chmod(0o600)
    notes = _listing(workspace)
    with _umask(0o022):
        r = _cli("search", "vault code", "--workspace", str(workspace))
        assert r.returncode == 0, r.stderr
        r = _cli("get", "memory/2026-02-08.md", "--workspace", str(workspace))
        assert r.returncode == 0, r.stderr
    folder = workspace / ".enhanced-memory"
    assert {p.name for p in folder.iterdir()} >= {"query_log.json", "access_log.json"}
    assert _modes(folder) == {}  # the logs with the index: 0600 in a 0700 folder
    new = {p for p in _listing(workspace) if not p.startswith(".enhanced-memory/")}
    assert new == set(notes)  # nothing written among the notes (no log, no lock file)


def test_an_existing_index_is_made_private_on_its_next_open(workspace: Path) -> None:
    ws = ("--workspace", str(workspace))
    assert _cli("index", *ws).returncode == 0
    folder = workspace / ".enhanced-memory"
    # As an earlier version left it under umask 022.
    for p in [folder, *folder.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    r = _cli("search", "ramen", *ws)
    assert r.returncode == 0, r.stderr
    assert _modes(folder) == {}


def test_cache_index_of_a_read_only_workspace_is_private(workspace: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    folders = [workspace, *(p for p in workspace.rglob("*") if p.is_dir())]
    for d in folders:
        d.chmod(0o555)
    try:
        with _umask(0o022):
            r = _cli("index", "--workspace", str(workspace), XDG_CACHE_HOME=str(cache))
        assert r.returncode == 0, r.stderr
    finally:
        for d in folders:
            d.chmod(0o755)
    assert not (workspace / ".enhanced-memory").exists()
    ours = cache / "enhanced-memory"
    assert any(p.suffix == ".sqlite" for p in ours.rglob("*"))
    assert _modes(ours) == {}


def test_the_resident_engine_keeps_the_index_folder_private(workspace: Path) -> None:
    on = {"ENHANCED_MEMORY_DAEMON": "1"}
    w = ("--workspace", str(workspace))
    with _umask(0o022):
        r = run_cli("daemon", "start", *w, "--json", **on)
    assert r.returncode == 0, r.stderr
    pid = json.loads(r.stdout)["pid"]
    try:
        r = _cli("search", "ramen", *w, **on)
        assert r.returncode == 0, r.stderr
        assert (workspace / ".enhanced-memory" / "resident.sock").exists()
        assert _modes(workspace / ".enhanced-memory") == {}
    finally:
        run_cli("daemon", "stop", *w, **on)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


# ------------------------------------------------------------ 8: a symlinked memory/


def test_symlinked_memory_folder_is_followed(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "deeper").mkdir(parents=True)
    (vault / "2026-03-01.md").write_text("# 2026-03-01\n\nWe adopted an axolotl named Rex.\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.md").write_text("# X\n\nthe elsewhere folder holds a narwhal\n")
    (vault / "deeper" / "linked").symlink_to(elsewhere, target_is_directory=True)
    (tmp_path / "core.md").write_text("# Core\n\nThe user likes quinces.\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "memory").symlink_to(vault, target_is_directory=True)
    (ws / "MEMORY.md").symlink_to(tmp_path / "core.md")
    w = ("--workspace", str(ws))

    r = _cli("index", *w, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["files"] == 2
    # The deeper folder link is not followed, and that is said once.
    assert r.stderr.count("memory/deeper/linked") == 1, r.stderr
    for word, path in (("axolotl", "memory/2026-03-01.md"), ("quinces", "MEMORY.md")):
        r = _cli("search", word, *w, "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["results"][0]["path"] == path
    r = _cli("search", "narwhal", *w, "--json")
    assert json.loads(r.stdout)["results"] == []

    r = _cli("get", "memory/2026-03-01.md", *w)
    assert r.returncode == 0 and "axolotl" in r.stdout, r.stderr
    r = _cli("remember", *w, "--now", "2026-03-01T10:00", "Rex ate a worm")
    assert r.returncode == 0, r.stderr
    assert "- Rex ate a worm" in (vault / "2026-03-01.md").read_text()
    assert (ws / "memory").is_symlink()
    # The linked MEMORY.md is in the confinement too (how the write goes through
    # a file link is remember's own business).
    r = _cli("remember", *w, "--file", "MEMORY.md", "quinces are in season")
    assert r.returncode == 0, r.stderr
    # Still confined: a link in the vault that leads out is refused.
    (vault / "out.md").symlink_to(elsewhere / "x.md")
    r = _cli("get", "memory/out.md", *w)
    assert r.returncode != 0 and "narwhal" not in r.stdout


def test_memory_link_to_a_folder_holding_the_workspace_is_not_followed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_text("# Memory\n\nplain\n")
    (tmp_path / "stray.md").write_text("# Stray\n\nan unrelated pelican\n")
    (ws / "memory").symlink_to(tmp_path, target_is_directory=True)
    r = _cli("index", "--workspace", str(ws), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["files"] == 1
    assert r.stderr.count("skipping memory:") == 1 and "holds the workspace" in r.stderr, r.stderr


# ------------------------------------------------------- 10: same size, mtime restored


def _edit_in_place(path: Path, old: str, new: str) -> None:
    """What ``sed -i`` then ``touch -r`` do: same size, the old mtime."""
    assert len(old) == len(new)
    st = path.stat()
    path.write_text(path.read_text().replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size


def test_same_size_edit_with_the_mtime_restored_is_reindexed(workspace: Path) -> None:
    w = ("--workspace", str(workspace))
    note = workspace / "memory" / "2026-02-08.md"
    assert _cli("index", *w).returncode == 0
    _edit_in_place(note, "ramen", "sushi")
    r = _cli("index", *w, "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["changed"] == 1, r.stdout
    _edit_in_place(note, "sushi", "tacos")
    r = _cli("index", "--compact", *w, "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["changed"] == 1, r.stdout
    _edit_in_place(note, "tacos", "pizza")
    r = _cli("search", "pizza", *w, "--json")
    assert json.loads(r.stdout)["results"][0]["path"] == "memory/2026-02-08.md"
    r = _cli("search", "tacos", *w, "--json")
    assert json.loads(r.stdout)["results"] == []


# ------------------------------------------------------------ 14: warnings, once


def test_skip_warnings_once_per_search_and_not_on_get(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\nbasilisk\n")
    (workspace / "memory" / "leak.md").symlink_to(outside)
    (workspace / "memory" / "blob.md").write_bytes(b"\x89PNG\x00\x00" * 10)
    w = ("--workspace", str(workspace))
    r = _cli("search", "ramen", *w)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("memory/leak.md") == 1, r.stderr
    assert "skipping memory/blob.md: looks binary" in r.stderr, r.stderr
    assert "cannot read" not in r.stderr and str(workspace) not in r.stderr
    r = _cli("get", "memory/2026-02-08.md", *w)
    assert r.returncode == 0 and "skipping" not in r.stderr, r.stderr
    r = _cli("get", "memory/blob.md", *w)
    assert r.returncode != 0 and "cannot read memory/blob.md: looks binary" in r.stderr
    assert str(workspace) not in r.stderr


def _listing(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    """``{name: (inode, mode, bytes)}`` of every file under ``folder``."""
    return {
        p.relative_to(folder).as_posix(): (p.stat().st_ino, p.stat().st_mode, p.read_bytes())
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_index_naming_a_file_that_is_not_an_index_is_refused_untouched(
    workspace: Path, tmp_path: Path
) -> None:
    import sqlite3

    conf = tmp_path / "important.conf"
    conf.write_text("password_file = /etc/secret\n")
    other_db = tmp_path / "app.sqlite"  # another program's SQLite database
    with contextlib.closing(sqlite3.connect(other_db)) as conn:
        conn.execute("CREATE TABLE users (name TEXT)")
        conn.execute("INSERT INTO users VALUES ('alice')")
        conn.commit()
    for target, how in (
        (workspace / "MEMORY.md", "flag"),
        (conf, "flag"),
        (other_db, "env"),
    ):
        before_ws, before_tmp = _listing(workspace), _listing(tmp_path)
        if how == "flag":
            r = _cli("search", "ramen", "--workspace", str(workspace), "--index", str(target))
        else:
            r = _cli("index", "--workspace", str(workspace), ENHANCED_MEMORY_INDEX=str(target))
        assert r.returncode == 2, (target, r.stdout, r.stderr)
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
        assert f"{target} is not an enhanced-memory index" in r.stderr
        # Nothing renamed, rewritten or added beside it (no .corrupt-*, no lock file).
        assert _listing(workspace) == before_ws
        assert _listing(tmp_path) == before_tmp
    assert not (workspace / ".enhanced-memory").exists()


def test_an_index_of_ours_at_a_named_path_is_still_set_aside(
    workspace: Path, tmp_path: Path
) -> None:
    import sqlite3

    path = tmp_path / "mine.sqlite"
    assert _cli("index", "--workspace", str(workspace), "--index", str(path)).returncode == 0
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA user_version=99")  # as a later release would leave it
    r = _cli("search", "ramen", "--workspace", str(workspace), "--index", str(path))
    assert r.returncode == 0 and "ramen" in r.stdout.lower(), r.stderr
    aside = [p.name.split("-")[0] for p in tmp_path.glob("mine.sqlite.*")]
    assert aside == ["mine.sqlite.schema99"]
