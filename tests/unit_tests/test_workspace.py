from __future__ import annotations

import datetime
import logging
import os
import sys
from pathlib import Path

import pytest

from langchain_enhanced_memory.core.globs import Globs, glob_match
from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.store import discovery, reading
from langchain_enhanced_memory.store.discovery import discover
from langchain_enhanced_memory.store.reading import UnreadableFileError, read_lines
from langchain_enhanced_memory.store.workspace import MemoryFile, classify
from tests.growth import assert_grows_linearly

needs_symlinks = pytest.mark.skipif(
    sys.platform == "win32", reason="symlinks need privileges on Windows"
)


def write(root: Path, rel: str, text: str = "# x\nsome text\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def paths(root: Path, settings: MemorySettings | None = None) -> list[str]:
    return [f.path for f in discover(root, settings or MemorySettings())]


# --------------------------------------------------------------------------- classify


@pytest.mark.parametrize(
    ("rel", "kind", "day"),
    [
        ("MEMORY.md", "core", None),
        ("memory.md", "core", None),
        ("AGENTS.md", "core", None),
        ("USER.md", "core", None),
        ("SOUL.md", "core", None),
        ("research.md", "core", None),
        ("memory/MEMORY.md", "topic", None),  # core only at the root
        ("memory/2026-02-08.md", "daily", datetime.date(2026, 2, 8)),
        ("memory/2026-02-08-standup.md", "daily", datetime.date(2026, 2, 8)),
        ("memory/2026/2026-02-08.md", "daily", datetime.date(2026, 2, 8)),
        ("memory/a/b/c/2024-02-29_notes.md", "daily", datetime.date(2024, 2, 29)),
        ("memory/2026-02-30.md", "topic", None),  # not a calendar date
        ("memory/2025-02-29.md", "topic", None),  # not a leap year
        ("memory/2026-13-01.md", "topic", None),
        ("memory/2026-02-081.md", "topic", None),  # more digits: not a date prefix
        ("memory/notes-2026-02-08.md", "topic", None),  # date not at the start
        ("memory/topics/rust.md", "topic", None),
        ("memory\\2026-02-08.md", "daily", datetime.date(2026, 2, 8)),
    ],
)
def test_classify(rel: str, kind: str, day: datetime.date | None) -> None:
    assert classify(rel) == (kind, day)


# --------------------------------------------------------------------------- globs


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        ("memory/a.md", "memory/**/*.md", True),
        ("memory/x/y/a.md", "memory/**/*.md", True),
        ("memoryx/a.md", "memory/**/*.md", False),
        ("a.md", "memory/**/*.md", False),
        ("MEMORY.md", "MEMORY.md", True),
        ("memory/MEMORY.md", "MEMORY.md", False),
        ("memory.md", "MEMORY.md", False),  # case-sensitive
        ("memory/archive/old.md", "**/archive/**", True),
        ("archive/old.md", "**/archive/**", True),
        ("memory/a.md", "*.md", False),  # '*' does not cross '/'
        ("memory/a.md", "**/*.md", True),
        ("memory/a1.md", "memory/a?.md", True),
        ("memory/ab.md", "memory/a[!b].md", False),
        ("memory/a.md", "./memory/*.md", True),
        ("memory/a.md", "/memory/*.md", True),
        ("memory/a.md", "memory[.-0]a.md", False),  # a class never matches '/'
        ("memory/a.md", "memory?a.md", False),
        ("memory/a.md", "memory*a.md", False),
        ("memory/b.md", "memory/[ab].md", True),
        ("memory/^.md", "memory/[^].md", True),
        ("memory/[.md", "memory/[.md", True),  # unclosed class: literal
        ("memory/a+b.md", "memory/a+b.md", True),  # regex characters are literal
        ("memory/x/y.md", "memory/**", True),
        ("memory/x/y.md", "**", True),
        ("memory/a.md", "", False),
    ],
)
def test_glob_match(path: str, pattern: str, expected: bool) -> None:
    assert glob_match(path, pattern) is expected


# --------------------------------------------------------------------------- discover


def test_discover_default_selection(tmp_path: Path) -> None:
    for rel in [
        "MEMORY.md",
        "AGENTS.md",
        "USER.md",
        "SOUL.md",
        "research.md",
        "README.md",  # not a core file
        "notes/other.md",  # outside memory/
        "memory/2026-02-08.md",
        "memory/2026-02-08-standup.md",
        "memory/2026/02/2026-02-09.md",
        "memory/topics/rust.md",
        "memory/2026-02-30.md",
        "memory/vectors.json",  # not markdown
        "memory/notes.txt",
        "memory/notes.MD.bak",
        "memory/.hidden.md",
        "memory/.obsidian/workspace.md",
        ".enhanced-memory/chunks.md",
        ".git/memory/x.md",
    ]:
        write(tmp_path, rel)
    files = discover(tmp_path, MemorySettings())
    assert [f.path for f in files] == [
        "AGENTS.md",
        "MEMORY.md",
        "SOUL.md",
        "USER.md",
        "memory/2026-02-08-standup.md",
        "memory/2026-02-08.md",
        "memory/2026-02-30.md",
        "memory/2026/02/2026-02-09.md",
        "memory/topics/rust.md",
        "research.md",
    ]
    by_path = {f.path: f for f in files}
    assert by_path["MEMORY.md"].kind == "core"
    assert by_path["memory/2026/02/2026-02-09.md"] == MemoryFile(
        path="memory/2026/02/2026-02-09.md",
        abs_path=tmp_path.resolve() / "memory" / "2026" / "02" / "2026-02-09.md",
        kind="daily",
        date=datetime.date(2026, 2, 9),
    )
    assert by_path["memory/2026-02-30.md"].kind == "topic"
    assert by_path["memory/2026-02-30.md"].date is None
    assert all(f.abs_path.is_absolute() and f.abs_path.is_file() for f in files)


def test_discover_memory_md_lowercase_and_dedup(tmp_path: Path) -> None:
    write(tmp_path, "memory.md")
    write(tmp_path, "memory/a.md")
    assert paths(tmp_path) == ["memory.md", "memory/a.md"]


def test_discover_hard_link_listed_once(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md")
    try:
        os.link(tmp_path / "MEMORY.md", tmp_path / "memory.md")
    except OSError:
        pytest.skip("no hard links here")
    assert len(paths(tmp_path)) == 1


def test_discover_include_exclude(tmp_path: Path) -> None:
    for rel in [
        "MEMORY.md",
        "memory/a.md",
        "memory/archive/old.md",
        "memory/archive/deep/older.md",
        "memory/topics/x.md",
        "journal/2026-01-01.md",
    ]:
        write(tmp_path, rel)
    settings = MemorySettings(exclude=("memory/archive/**",))
    assert paths(tmp_path, settings) == ["MEMORY.md", "memory/a.md", "memory/topics/x.md"]
    settings = MemorySettings(exclude=("**/archive",))  # a directory: everything below
    assert paths(tmp_path, settings) == ["MEMORY.md", "memory/a.md", "memory/topics/x.md"]
    settings = MemorySettings(include=("journal/*.md", "memory/*.md"), exclude=("**/a.md",))
    assert paths(tmp_path, settings) == ["journal/2026-01-01.md"]
    settings = MemorySettings(include=("**/*.md",), exclude=("memory/**",))
    assert paths(tmp_path, settings) == ["MEMORY.md", "journal/2026-01-01.md"]


def test_discover_never_hidden_even_if_included(tmp_path: Path) -> None:
    write(tmp_path, ".enhanced-memory/x.md")
    write(tmp_path, "memory/.drafts/y.md")
    settings = MemorySettings(include=("**/*.md", ".enhanced-memory/*.md"))
    assert paths(tmp_path, settings) == []


def test_discover_workspace_inside_hidden_folder(tmp_path: Path) -> None:
    # The default workspace is ~/.openclaw/workspace: only components below it count.
    root = tmp_path / ".openclaw" / "workspace"
    write(root, "MEMORY.md")
    write(root, "memory/2026-02-08.md")
    assert paths(root) == ["MEMORY.md", "memory/2026-02-08.md"]


def test_discover_missing_workspace(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="workspace not found"):
        discover(tmp_path / "nope", MemorySettings())
    write(tmp_path, "file.md")
    with pytest.raises(NotADirectoryError):
        discover(tmp_path / "file.md", MemorySettings())


def test_discover_empty_workspace(tmp_path: Path) -> None:
    assert discover(tmp_path, MemorySettings()) == []


@needs_symlinks
def test_discover_symlink_loop(tmp_path: Path) -> None:
    write(tmp_path, "memory/a.md")
    os.symlink(tmp_path / "memory", tmp_path / "memory" / "loop")
    os.symlink(tmp_path, tmp_path / "memory" / "root")
    assert paths(tmp_path) == ["memory/a.md"]


@needs_symlinks
def test_discover_file_symlink_loop(tmp_path: Path) -> None:
    (tmp_path / "memory").mkdir()
    os.symlink(tmp_path / "memory" / "b.md", tmp_path / "memory" / "a.md")
    os.symlink(tmp_path / "memory" / "a.md", tmp_path / "memory" / "b.md")
    os.symlink(tmp_path / "memory" / "missing", tmp_path / "memory" / "broken.md")
    assert paths(tmp_path) == []


@needs_symlinks
def test_discover_symlink_outside_not_followed(tmp_path: Path) -> None:
    inside = tmp_path / "ws"
    outside = tmp_path / "outside"
    write(outside, "secret.md", "# secret\ntop secret text\n")
    write(outside, "dir/also-secret.md")
    write(inside, "memory/a.md")
    write(outside, "core.md", "# core\n")
    os.symlink(outside / "secret.md", inside / "memory" / "secret.md")
    os.symlink(outside / "dir", inside / "memory" / "dir")
    os.symlink(outside / "secret.md", inside / "memory" / "relative.md")
    # Only the links at the top (MEMORY.md, memory/) are followed wherever they lead.
    os.symlink(outside / "core.md", inside / "MEMORY.md")
    assert paths(inside) == ["MEMORY.md", "memory/a.md"]


@needs_symlinks
def test_a_memory_link_to_the_home_folder_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "home"
    write(home, "diary.md")
    write(tmp_path, "ws/MEMORY.md")
    monkeypatch.setenv("HOME", str(home))
    (tmp_path / "ws" / "memory").symlink_to(home, target_is_directory=True)
    assert paths(tmp_path / "ws") == ["MEMORY.md"]
    assert "the home folder" in caplog.text
    (tmp_path / "ws" / "memory").unlink()
    (tmp_path / "ws" / "memory").symlink_to(home / "vault", target_is_directory=True)
    write(home, "vault/2026-01-01.md")  # a folder under home is fine
    assert paths(tmp_path / "ws") == ["MEMORY.md", "memory/2026-01-01.md"]


@needs_symlinks
def test_discover_symlink_inside_followed(tmp_path: Path) -> None:
    write(tmp_path, "notes/real.md", "# real\n")
    write(tmp_path, "memory/a.md")
    os.symlink(tmp_path / "notes" / "real.md", tmp_path / "memory" / "linked.md")
    # A link to a file that is itself discovered is listed once, under its real path.
    os.symlink(Path("a.md"), tmp_path / "memory" / "alias.md")
    files = discover(tmp_path, MemorySettings())
    assert [f.path for f in files] == ["memory/a.md", "memory/linked.md"]
    assert read_lines(files[1].abs_path) == ["# real"]


@needs_symlinks
def test_discover_directory_symlink_inside_not_followed(tmp_path: Path) -> None:
    write(tmp_path, "notes/n.md")
    write(tmp_path, "memory/a.md")
    os.symlink(tmp_path / "notes", tmp_path / "memory" / "notes")
    assert paths(tmp_path) == ["memory/a.md"]


@needs_symlinks
def test_discover_through_symlinked_workspace(tmp_path: Path) -> None:
    write(tmp_path, "real/memory/a.md")
    os.symlink(tmp_path / "real", tmp_path / "link")
    files = discover(tmp_path / "link", MemorySettings())
    assert [f.path for f in files] == ["memory/a.md"]


def test_discover_unlistable_folder_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path, "memory/ok.md")
    write(tmp_path, "memory/locked/secret.md")
    real_scandir = os.scandir

    def scandir(path: str):  # type: ignore[no-untyped-def]
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(discovery.os, "scandir", scandir)
    with caplog.at_level(logging.WARNING, logger="langchain_enhanced_memory"):
        assert paths(tmp_path) == ["memory/ok.md"]
    assert "memory/locked" in caplog.text


def _folder_of(root: Path, n: int) -> Path:
    folder = root / f"w{n}" / "memory"
    if folder.is_dir():
        return folder.parent
    folder.mkdir(parents=True)
    for i in range(n):
        os.close(os.open(folder / f"n{i:05d}.md", os.O_CREAT | os.O_WRONLY, 0o644))
    return folder.parent


def test_discover_many_files(tmp_path: Path) -> None:
    files = discover(_folder_of(tmp_path, 10_000), MemorySettings(exclude=("memory/n0000*.md",)))
    assert len(files) == 10_000 - 10
    assert files[0].path == "memory/n00010.md"
    settings = MemorySettings(exclude=("memory/n0000*.md",))
    assert_grows_linearly(
        lambda n: _folder_of(tmp_path, n), lambda ws: discover(ws, settings), 1_250
    )


def test_discover_prunes_unrelated_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "memory/a.md")
    write(tmp_path, "node_modules/pkg/readme.md")
    listed: list[str] = []
    real_scandir = os.scandir

    def scandir(path: str):  # type: ignore[no-untyped-def]
        listed.append(str(path))
        return real_scandir(path)

    monkeypatch.setattr(discovery.os, "scandir", scandir)
    assert paths(tmp_path) == ["memory/a.md"]
    assert not any("node_modules" in p for p in listed)


# --------------------------------------------------------------------------- read_lines


def test_read_lines_basic(tmp_path: Path) -> None:
    p = tmp_path / "a.md"
    p.write_bytes(b"one\ntwo\n")
    assert read_lines(p) == ["one", "two"]
    p.write_bytes(b"one\ntwo")
    assert read_lines(p) == ["one", "two"]
    p.write_bytes(b"one\n\n")
    assert read_lines(p) == ["one", ""]
    p.write_bytes(b"\n")
    assert read_lines(p) == [""]
    p.write_bytes(b"\n\nx")
    assert read_lines(p) == ["", "", "x"]


def test_read_lines_empty(tmp_path: Path) -> None:
    p = tmp_path / "a.md"
    p.write_bytes(b"")
    assert read_lines(p) == []
    p.write_bytes(b"\xef\xbb\xbf")  # only a BOM
    assert read_lines(p) == []


def test_read_lines_bom_and_crlf(tmp_path: Path) -> None:
    p = tmp_path / "a.md"
    p.write_bytes(b"\xef\xbb\xbf# Title\r\nline\r\n\r\nlast\r\n")
    assert read_lines(p) == ["# Title", "line", "", "last"]


def test_read_lines_lone_cr_stays(tmp_path: Path) -> None:
    p = tmp_path / "a.md"
    p.write_bytes(b"a\rb\nc\r\n")
    assert read_lines(p) == ["a\rb", "c"]


def test_read_lines_odd_separators_do_not_split(tmp_path: Path) -> None:
    p = tmp_path / "a.md"
    text = "a\x0bb\x0cc\x1cd\x1de\x1ef\x85g\u2028h\u2029i\nnext\n"
    p.write_bytes(text.encode("utf-8"))
    assert read_lines(p) == ["a\x0bb\x0cc\x1cd\x1de\x1ef\x85g\u2028h\u2029i", "next"]


def test_read_lines_invalid_utf8_replaced(tmp_path: Path) -> None:
    p = tmp_path / "a.md"
    p.write_bytes(b"ok \xff\xfe bad\n\xe4\xb8\xad\xe6\x96\x87\n\xe4\xb8\n")
    assert read_lines(p) == ["ok \ufffd\ufffd bad", "中文", "\ufffd"]


def test_read_lines_binary(tmp_path: Path) -> None:
    p = tmp_path / "weird\nname.md"
    p.write_bytes(b"PK\x03\x04\x00\x00binary")
    with pytest.raises(UnreadableFileError, match="looks binary") as info:
        read_lines(p)
    assert "\n" not in str(info.value)
    assert info.value.path == p
    # NUL bytes only after the sniffed prefix are tolerated (and kept).
    p2 = tmp_path / "late.md"
    p2.write_bytes(b"a" * reading.BINARY_SNIFF_BYTES + b"\x00\n")
    assert read_lines(p2) == ["a" * reading.BINARY_SNIFF_BYTES + "\x00"]


def test_read_lines_utf16(tmp_path: Path) -> None:
    p = tmp_path / "a.md"
    p.write_bytes(b"\xff\xfe" + "# 标题\r\nline\r\n".encode("utf-16-le"))
    assert read_lines(p) == ["# 标题", "line"]


def test_read_lines_too_large(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reading, "MAX_FILE_BYTES", 10)
    p = tmp_path / "a.md"
    p.write_bytes(b"0123456789")
    assert read_lines(p) == ["0123456789"]
    p.write_bytes(b"0123456789\n")
    with pytest.raises(UnreadableFileError, match="too large"):
        read_lines(p)


def test_read_lines_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFileError, match="cannot read"):
        read_lines(tmp_path / "missing.md")
    with pytest.raises(UnreadableFileError):
        read_lines(tmp_path)  # a directory


def test_read_lines_line_numbers_match_editor(tmp_path: Path) -> None:
    lines = ["# Title", "", "body with \u2028 inside", "\ttabbed", "last"]
    p = tmp_path / "a.md"
    p.write_bytes(("\r\n".join(lines) + "\r\n").encode("utf-8"))
    assert read_lines(p) == lines


def test_globs_select_what_one_glob_at_a_time_selects() -> None:
    paths = ["MEMORY.md", "memory/a.md", "memory/x/y.md", "notes/a.md", "memory/archive/old.md"]
    paths += ["memory/a+b.md", "USER.md", "memory/[.md", "a.md"]
    sets = [(), ("memory/**/*.md",), ("memory/**/*.md", "MEMORY.md", "*.md"), ("**",)]
    for include in sets:
        for exclude in [(), ("**/archive/**",), ("memory/a?.md", "**/y.md")]:
            globs = Globs(include, exclude)
            for p in paths:
                want = any(glob_match(p, g) for g in include) and not any(
                    glob_match(p, g) for g in exclude
                )
                assert globs.selects(p) is want, (p, include, exclude)
