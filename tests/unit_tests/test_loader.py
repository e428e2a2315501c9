from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pytest
from langchain_core.documents import Document

from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.loader import MemoryDirectoryLoader, chunk_id


def write(root: Path, rel: str, data: str | bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    write(
        tmp_path,
        "MEMORY.md",
        "# Project Alpha\nAlpha is our search product.\n\n"
        "## Decisions\nWe chose sqlite for the index.\n",
    )
    write(
        tmp_path,
        "memory/2026-02-08.md",
        "Standup notes before any header here.\n\n# Standup\nShipped the loader today, yay.\n",
    )
    write(tmp_path, "memory/topics/rust.md", "# Rust\nOwnership and borrowing notes here.\n")
    write(tmp_path, "memory/blob.md", b"\x00\x01\x02binary")
    write(tmp_path, ".enhanced-memory/index.md", "# Hidden\nnever loaded by the loader\n")
    return tmp_path


def test_lazy_load_documents(workspace: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="langchain_enhanced_memory"):
        docs = list(MemoryDirectoryLoader(workspace).lazy_load())
    assert all(isinstance(d, Document) for d in docs)
    got = [
        (
            d.metadata["path"],
            d.metadata["startLine"],
            d.metadata["endLine"],
            d.metadata["header"],
            d.metadata["headers"],
            d.metadata["kind"],
            d.metadata["date"],
        )
        for d in docs
    ]
    assert got == [
        ("MEMORY.md", 1, 2, "Project Alpha", "Project Alpha", "core", None),
        ("MEMORY.md", 4, 5, "Decisions", "Project Alpha > Decisions", "core", None),
        ("memory/2026-02-08.md", 1, 1, "2026-02-08.md", "2026-02-08.md", "daily", "2026-02-08"),
        ("memory/2026-02-08.md", 3, 4, "Standup", "Standup", "daily", "2026-02-08"),
        ("memory/topics/rust.md", 1, 2, "Rust", "Rust", "topic", None),
    ]
    assert docs[1].page_content == "## Decisions\nWe chose sqlite for the index."
    assert "memory/blob.md" in caplog.text and "binary" in caplog.text


def test_page_content_matches_file_lines(workspace: Path) -> None:
    for doc in MemoryDirectoryLoader(workspace).load():
        lines = (workspace / doc.metadata["path"]).read_text(encoding="utf-8").split("\n")
        start, end = doc.metadata["startLine"], doc.metadata["endLine"]
        assert doc.page_content == "\n".join(lines[start - 1 : end])


def test_chunk_ids(workspace: Path) -> None:
    docs = MemoryDirectoryLoader(workspace).load()
    ids = [d.metadata["chunk_id"] for d in docs]
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 16 and int(i, 16) >= 0 for i in ids)
    doc = docs[0]
    expected = hashlib.sha256(
        doc.metadata["path"].encode() + b"\x00" + doc.page_content.encode()
    ).hexdigest()[:16]
    assert doc.metadata["chunk_id"] == expected
    # Stable across runs.
    assert [d.metadata["chunk_id"] for d in MemoryDirectoryLoader(workspace).load()] == ids


def test_chunk_id_of_repeated_text_is_unique(tmp_path: Path) -> None:
    section = "## Notes\nNothing new to report today.\n"
    write(tmp_path, "memory/log.md", section + section + section)
    docs = MemoryDirectoryLoader(tmp_path).load()
    assert [d.metadata["startLine"] for d in docs] == [1, 3, 5]
    ids = [d.metadata["chunk_id"] for d in docs]
    assert len(set(ids)) == 3
    assert ids[0] == chunk_id("memory/log.md", docs[0].page_content)
    assert ids[2] == chunk_id("memory/log.md", docs[0].page_content, 3)


def test_settings_are_used(workspace: Path) -> None:
    settings = MemorySettings(include=("memory/**/*.md",), exclude=("memory/topics/**",))
    docs = MemoryDirectoryLoader(str(workspace), settings).load()
    assert {d.metadata["path"] for d in docs} == {"memory/2026-02-08.md"}


def test_original_chunking_option(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", "# A\nshort\n# Longer header line\nwith some body text\n")
    default = MemoryDirectoryLoader(tmp_path).load()
    original = MemoryDirectoryLoader(tmp_path, MemorySettings(chunking="original")).load()
    assert [(d.metadata["startLine"], d.metadata["endLine"]) for d in default] == [(1, 4)]
    assert [(d.metadata["startLine"], d.metadata["endLine"]) for d in original] == [(3, 4)]
    # The loader follows the settings' recipe.
    replay = MemoryDirectoryLoader(tmp_path, MemorySettings(profile="original")).load()
    assert [(d.metadata["startLine"], d.metadata["endLine"]) for d in replay] == [(3, 4)]


def test_empty_and_missing_workspace(tmp_path: Path) -> None:
    assert MemoryDirectoryLoader(tmp_path).load() == []
    write(tmp_path, "memory/empty.md", b"")
    write(tmp_path, "memory/blank.md", "\n\n  \n")
    assert MemoryDirectoryLoader(tmp_path).load() == []
    with pytest.raises(FileNotFoundError):
        MemoryDirectoryLoader(tmp_path / "missing").load()


def test_bom_crlf_file(tmp_path: Path) -> None:
    write(tmp_path, "memory/win.md", b"\xef\xbb\xbf# Title\r\nWindows line endings here.\r\n")
    (doc,) = MemoryDirectoryLoader(tmp_path).load()
    assert doc.page_content == "# Title\nWindows line endings here."
    assert (doc.metadata["startLine"], doc.metadata["endLine"]) == (1, 2)
