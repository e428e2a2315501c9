"""Hostile workspace files: each is indexed with exact line numbers or skipped with a warning.

One workspace holds every small hostile file and is indexed once by the real
command; each case then checks its own file. The large cases (a 50 MB file,
10,000 files in one folder) build their own workspace.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

from langchain_enhanced_memory.store.index import MemoryIndex
from tests.cli_run import run_cli


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout=timeout, ENHANCED_MEMORY_EMBEDDER="none")


def editor_lines(data: bytes) -> list[str]:
    """Lines as an editor shows them, computed independently of the package."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n")
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


LONG_LINE = "ocelot " + "x" * 300_000 + " tail"
SECTION_20K = "# Giant section\n\n" + "".join(
    f"line {i} of the giant section about narwhal logistics\n" for i in range(20_000)
)

# name -> (relative path, bytes, a word the file holds that search must find; None: skipped)
CASES: dict[str, tuple[str, bytes, str | None]] = {
    "invalid utf-8": (
        "memory/2026-01-01.md",
        b"# Bad bytes\n\nbroken \xff\xfe\xc3( text about axolotl care\nmore \x80 lines here\n",
        "axolotl",
    ),
    "binary named .md": ("memory/blob.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 50, None),
    "empty file": ("memory/empty.md", b"", None),
    "whitespace only": ("memory/blank.md", b"\n\n   \n\t\n", None),
    "headers only": (
        "memory/headers.md",
        b"# One\n## Two\n### Three pangolin\n#### Four\n",
        "pangolin",
    ),
    "crlf line endings": (
        "memory/2026-01-02.md",
        b"# Windows\r\n\r\nfirst line\r\nthe quokka line\r\n\r\n"
        b"## Next\r\n\r\nbody text here ok\r\n",
        "quokka",
    ),
    "utf-8 bom": (
        "memory/2026-01-03.md",
        b"\xef\xbb\xbf# Bom header\n\nline after the bom about a tapir\n",
        "tapir",
    ),
    "lone carriage returns": (
        "memory/cr.md",
        b"# Old Mac\r\rnot a new line\rstill line one of the body with a gecko\n",
        "gecko",
    ),
    "very long line": ("memory/long.md", f"# Long\n\n{LONG_LINE}\n".encode(), "ocelot"),
    "20,000-line section": ("memory/giant.md", SECTION_20K.encode(), "narwhal"),
    "utf-16 with bom": (
        "memory/utf16.md",
        "# UTF16\n\nwritten by notepad about a wombat\n".encode("utf-16"),
        "wombat",
    ),
    "nul after 8 KB": (
        "memory/late-nul.md",
        b"# Late\n\n" + b"plain text about an okapi\n" * 400 + b"\x00tail\n",
        "okapi",
    ),
}


@pytest.fixture(scope="module")
def hostile(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict, subprocess.CompletedProcess]:
    ws = tmp_path_factory.mktemp("hostile")
    (ws / "MEMORY.md").write_text("# Memory\n\nThe user keeps a calm workspace.\n")
    for rel, data, _ in CASES.values():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_bytes(data)
    # A symlink loop, a folder symlink into itself, a file symlink pointing outside.
    (ws / "memory" / "loop-a.md").symlink_to(ws / "memory" / "loop-b.md")
    (ws / "memory" / "loop-b.md").symlink_to(ws / "memory" / "loop-a.md")
    (ws / "memory" / "again").symlink_to(ws / "memory", target_is_directory=True)
    outside = tmp_path_factory.mktemp("outside") / "secret.md"
    outside.write_text("# Secret\n\nthe outside file mentions a basilisk password\n")
    (ws / "memory" / "leak.md").symlink_to(outside)
    (ws / "memory" / "leakdir").symlink_to(outside.parent, target_is_directory=True)
    r = _cli("index", "--workspace", str(ws), "--json")
    info = json.loads(r.stdout) if r.returncode == 0 else {}
    return ws, info, r


def _check_file(ws: Path, rel: str, data: bytes) -> list:
    snap = MemoryIndex(ws).snapshot(None)
    lines = (
        editor_lines(data)
        if not data.startswith((b"\xff\xfe", b"\xfe\xff"))
        else (data.decode("utf-16").split("\n")[:-1])
    )
    rows = [
        (s, e, t)
        for p, s, e, t in zip(snap.paths, snap.start, snap.end, snap.texts, strict=True)
        if p == rel
    ]
    for s, e, t in rows:
        assert 1 <= s <= e <= len(lines), (rel, s, e, len(lines))
        assert t == "\n".join(lines[s - 1 : e]), (rel, s, e)
    return rows


def test_index_run_succeeds_and_names_skips(hostile) -> None:
    ws, info, r = hostile
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "memory/blob.md" in info["skipped"]
    assert "blob.md" in r.stderr and "binary" in r.stderr  # a one-line warning names it


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_file(hostile, name: str) -> None:
    ws, _, r = hostile
    rel, data, word = CASES[name]
    rows = _check_file(ws, rel, data)
    if word is None:
        assert rows == []
        return
    # Every non-blank line is covered by exactly one chunk.
    covered = sorted(n for s, e, _ in rows for n in range(s, e + 1))
    assert len(covered) == len(set(covered))
    r = _cli("search", word, "--workspace", str(ws), "--json", "--k", "3")
    assert r.returncode == 0, r.stderr
    top = json.loads(r.stdout)["results"][0]
    assert top["path"] == rel
    lines = editor_lines(data) if not data.startswith(b"\xff\xfe") else None
    if lines is not None:
        assert word in "\n".join(lines[top["startLine"] - 1 : top["endLine"]])


def test_symlinks_loop_and_outside_are_not_followed(hostile) -> None:
    ws, info, _ = hostile
    paths = set(MemoryIndex(ws).snapshot(None).paths)
    assert not any(p.startswith(("memory/again/", "memory/leakdir/")) for p in paths)
    assert "memory/leak.md" not in paths and "memory/loop-a.md" not in paths
    r = _cli("search", "basilisk password", "--workspace", str(ws), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["results"] == []


def test_file_changing_while_read_stays_exact(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    target = ws / "memory" / "2026-02-01.md"
    target.parent.mkdir(parents=True)
    versions = [
        "".join(f"## Part {j}\n\nversion {v} entry {j} about a capybara\n\n" for j in range(30 + v))
        for v in range(4)
    ]
    target.write_text(versions[0])
    stop = threading.Event()

    def churn() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            target.write_text(versions[n % len(versions)])

    writer = threading.Thread(target=churn, daemon=True)
    writer.start()
    try:
        idx = MemoryIndex(ws)
        for _ in range(15):
            idx.sync()
            snap = idx.snapshot(None)
            # Whatever was read, the chunks are exact lines of one version.
            ok = [
                all(
                    t == "\n".join(v.split("\n")[s - 1 : e])
                    for s, e, t in zip(snap.start, snap.end, snap.texts, strict=True)
                )
                for v in versions
            ]
            assert any(ok)
    finally:
        stop.set()
        writer.join()
    idx.sync()
    final = target.read_text().split("\n")
    snap = idx.snapshot(None)
    assert all(
        t == "\n".join(final[s - 1 : e])
        for s, e, t in zip(snap.start, snap.end, snap.texts, strict=True)
    )


@pytest.mark.slow
def test_fifty_megabyte_file(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    block = "".join(f"## Log {i}\n\nroutine entry {i} nothing to see\n\n" for i in range(1000))
    data = (block * (50 * 2**20 // len(block) + 1)).encode()[: 50 * 2**20]
    data = data[: data.rindex(b"\n") + 1] + b"## Last\n\nthe final entry names a serval\n"
    (ws / "memory" / "huge.md").write_bytes(data)
    r = _cli("index", "--workspace", str(ws), "--json", timeout=900)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["skipped"] == [] and info["chunks"] > 1000
    r = _cli("search", "serval", "--workspace", str(ws), "--json", "--k", "1")
    top = json.loads(r.stdout)["results"][0]
    lines = data.decode().split("\n")[:-1]
    assert top["endLine"] == len(lines) and "serval" in top["snippet"]
    assert "\n".join(lines[top["startLine"] - 1 : top["endLine"]]) == top["snippet"]


@pytest.mark.slow
def test_ten_thousand_files_in_one_folder(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    folder = ws / "memory" / "inbox"
    folder.mkdir(parents=True)
    for i in range(10_000):
        (folder / f"n{i:05d}.md").write_text(f"# Note {i}\n\nitem number {i} filed as token{i}\n")
    r = _cli("index", "--workspace", str(ws), "--json", timeout=900)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["files"] == 10_000
    r = _cli("search", "token7777", "--workspace", str(ws), "--json", "--k", "1")
    top = json.loads(r.stdout)["results"][0]
    assert top["path"] == "memory/inbox/n07777.md" and (top["startLine"], top["endLine"]) == (1, 3)


def test_undecodable_and_odd_file_names(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory").joinpath("keep.md").write_text("# Keep\n\nthe healthy file about lemurs\n")
    open(os.fsencode(ws / "memory") + b"/bad\xffname.md", "wb").write(
        b"# Bad\n\nundecodable lemurs\n"
    )
    (ws / "memory" / "new\nline.md").write_text("# NL\n\na newline in the name about an ibis\n")
    r = _cli("index", "--workspace", str(ws), "--json")
    assert r.returncode == 0, r.stderr
    assert "not valid UTF-8" in r.stderr and json.loads(r.stdout)["files"] == 2
    r = _cli("search", "lemurs", "--workspace", str(ws), "--json")
    assert r.returncode == 0 and [x["path"] for x in json.loads(r.stdout)["results"]] == [
        "memory/keep.md"
    ]
    r = _cli("search", "ibis", "--workspace", str(ws), "--json")
    assert json.loads(r.stdout)["results"][0]["path"] == "memory/new\nline.md"


def _truncate(p: Path) -> None:
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 3])


def _garbage(p: Path) -> None:
    p.write_bytes(os.urandom(50_000))


def _empty(p: Path) -> None:
    p.write_bytes(b"")


@pytest.mark.parametrize("damage", [_truncate, _garbage, _empty], ids=lambda f: f.__name__[1:])
def test_damaged_index_is_rebuilt_from_the_markdown(tmp_path: Path, damage) -> None:
    from tests.workspaces import SMALL_WORKSPACE, write_workspace

    ws = write_workspace(tmp_path / "ws", SMALL_WORKSPACE)
    for i in range(40):  # enough pages that a truncation cuts the b-tree
        (ws / "memory" / f"2025-01-{1 + i % 28:02d}-n{i}.md").write_text(
            f"# N{i}\n\n{'word ' * 400}\n"
        )
    assert _cli("index", "--workspace", str(ws)).returncode == 0
    db = ws / ".enhanced-memory" / "index.sqlite"
    for side in ("-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)
    damage(db)
    r = _cli("search", "ramen Fifth street", "--workspace", str(ws), "--json")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert json.loads(r.stdout)["results"][0]["path"] == "memory/2026-02-08.md"
    if damage is not _empty:  # an empty file is a valid empty database: nothing to warn about
        assert "rebuilding" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = _cli("index", "--workspace", str(ws), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["chunks"] >= 45


def _local(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout=300, ENHANCED_MEMORY_EMBEDDER="local")


def _held(db: Path) -> int:
    """Vectors the index's side files hold, of every model."""
    import sqlite3

    from langchain_enhanced_memory.store.folding import held_keys, vector_models
    from langchain_enhanced_memory.store.vector_segments import side_folder

    with sqlite3.connect(db) as conn:
        return sum(held_keys(conn, side_folder(db), m).size for m in vector_models(conn))


def test_a_released_index_is_upgraded_in_place_keeping_its_vectors(tmp_path: Path) -> None:
    import sqlite3

    from tests.workspaces import SMALL_WORKSPACE, write_workspace

    ws = write_workspace(tmp_path / "ws", SMALL_WORKSPACE)
    assert _local("index", "--workspace", str(ws)).returncode == 0
    db = ws / ".enhanced-memory" / "index.sqlite"
    cached = _held(db)
    assert cached > 0
    with sqlite3.connect(db) as conn:  # as 0.1.0 wrote it (schema 4)
        conn.execute("ALTER TABLE catalog RENAME TO derived")
        conn.execute(
            "CREATE TABLE embed_cache (model TEXT NOT NULL, text_hash TEXT NOT NULL,"
            " dim INTEGER NOT NULL, vector BLOB, PRIMARY KEY (model, text_hash)) WITHOUT ROWID"
        )
        conn.execute("INSERT INTO embed_cache SELECT DISTINCT 'm', embed_hash, 3, NULL FROM chunks")
        conn.execute("PRAGMA user_version=4")
    r = _local("search", "ramen Fifth street", "--workspace", str(ws), "--json")
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr
    assert json.loads(r.stdout)["results"][0]["path"] == "memory/2026-02-08.md"
    assert not list(db.parent.glob("index.sqlite.schema4-*"))
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 7
        tables = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "embed_cache" not in tables and _held(db) == cached
    r = _local("index", "--workspace", str(ws), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["embedded"] == 0  # nothing embedded again


@pytest.mark.parametrize("version", [3, 99])
def test_an_index_of_another_schema_is_set_aside_and_rebuilt(tmp_path: Path, version: int) -> None:
    import sqlite3

    from tests.workspaces import SMALL_WORKSPACE, write_workspace

    ws = write_workspace(tmp_path / "ws", SMALL_WORKSPACE)
    assert _cli("index", "--workspace", str(ws)).returncode == 0
    db = ws / ".enhanced-memory" / "index.sqlite"
    with sqlite3.connect(db) as conn:
        if version == 3:  # as a development version left it (no ctime, no tail)
            conn.execute("ALTER TABLE files DROP COLUMN ctime_ns")
            conn.execute("ALTER TABLE files DROP COLUMN tail")
        conn.execute(f"PRAGMA user_version={version}")
    r = _cli("search", "ramen Fifth street", "--workspace", str(ws), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["results"][0]["path"] == "memory/2026-02-08.md"
    (line,) = r.stderr.strip().splitlines()
    kind = {3: "an unreleased", 99: "a newer"}[version]
    assert f"{kind} format (schema {version}, not 7)" in line and "rebuilding" in line, line
    assert len(list(db.parent.glob(f"index.sqlite.schema{version}-*"))) == 1
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 7
    r = _cli("search", "ramen Fifth street", "--workspace", str(ws), "--json")
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr
