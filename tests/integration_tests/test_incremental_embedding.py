"""Incremental embedding, counted at the fake Ollama server over HTTP, via the CLI as a process."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_enhanced_memory.store.index import MemoryIndex
from tests.cli_run import run_cli
from tests.workspaces import SMALL_WORKSPACE, write_workspace


def index(ws: Path, url: str) -> dict:
    r = run_cli(
        "index", "--workspace", str(ws), "--embedder", "ollama", "--ollama-url", url, "--json"
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_only_changed_chunks_are_re_embedded(tmp_path: Path, fake_ollama) -> None:
    files = dict(SMALL_WORKSPACE)
    for day in range(10, 16):  # enough chunks for several batches
        files[f"memory/2026-02-{day}.md"] = (
            f"# 2026-02-{day}\n\n## Standup\n\nDay {day}: paired on the billing export job.\n\n"
            f"## Errands\n\nPicked up parcel number {day * 7} at the post office.\n"
        )
    ws = write_workspace(tmp_path / "ws", files)

    first = index(ws, fake_ollama.url)
    n_chunks = len(MemoryIndex(ws).snapshot())
    assert first["embedded"] == n_chunks == len(fake_ollama.embedded_texts) > 10

    fake_ollama.reset_counters()
    again = index(ws, fake_ollama.url)
    assert again["embedded"] == 0 and again["changed"] == 0
    assert fake_ollama.calls == 0 and fake_ollama.embedded_texts == []

    # Edit one section of one file: only that chunk is new text; its neighbour is cached.
    note = ws / "memory" / "2026-02-08.md"
    note.write_text(
        note.read_text().replace("Tried the new ramen place", "Tried the new udon place")
    )
    fake_ollama.reset_counters()
    changed = index(ws, fake_ollama.url)
    assert changed["changed"] == 1 and changed["embedded"] == 1
    assert fake_ollama.calls == 1
    [text] = fake_ollama.embedded_texts
    assert "udon place" in text and "billing database" not in text

    # Appending a section to another file embeds exactly the new chunk.
    other = ws / "memory" / "2026-02-12.md"
    other.write_text(other.read_text() + "\n## Reading\n\nFinished the chapter on B-trees.\n")
    fake_ollama.reset_counters()
    appended = index(ws, fake_ollama.url)
    assert appended["embedded"] == 1
    assert [t for t in fake_ollama.embedded_texts if "B-trees" in t] == fake_ollama.embedded_texts

    # Deleting a file embeds nothing.
    (ws / "memory" / "2026-02-13.md").unlink()
    fake_ollama.reset_counters()
    deleted = index(ws, fake_ollama.url)
    assert deleted["deleted"] == 1 and deleted["embedded"] == 0 and fake_ollama.calls == 0
