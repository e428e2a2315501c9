"""The retriever and the tools are safe to call from many threads and asyncio, notes changing."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from langchain_enhanced_memory import EnhancedMemoryRetriever
from langchain_enhanced_memory.engine import search
from langchain_enhanced_memory.tools import MemorySearchTool
from tests.fakes import WordEmbeddings

# Moved from the unit tests: keep their setting, so the stress runs the read path (pread of
# the side files) that large indexes take, not the small files' maps only.
pytestmark = pytest.mark.usefixtures("read_side_files_as_large_ones")

QUERIES = [
    "Postgres migration",
    "what did we decide about billing?",
    "ramen lunch",
    "kestrel notes",
    "p99 latency of the search API",
    "who leads payments",
    "rollback script",
    "new note number",
]


def _retriever(workspace: Path) -> EnhancedMemoryRetriever:
    # A scan before every query (no watcher), so each edit is synced by some search.
    return EnhancedMemoryRetriever(
        workspace=workspace, embeddings=WordEmbeddings(), k=3, watch=False
    )


class _Editor:
    """Appends to a note, creates notes and deletes them until stopped; every path it made."""

    def __init__(self, workspace: Path) -> None:
        self.root = workspace
        self.paths = {str(p.relative_to(workspace)) for p in workspace.rglob("*.md")}
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        try:
            daily = self.root / "memory" / "2026-02-08.md"
            first = daily.read_text()
            created: list[Path] = []
            for i in itertools.count():
                if self.stop.is_set():
                    return
                note = self.root / "memory" / f"2026-03-{i % 28 + 1:02d}-n{i}.md"
                self.paths.add(str(note.relative_to(self.root)))
                note.write_text(f"# New note number {i}\n\nKestrel notes, Postgres {i}.\n")
                created.append(note)
                if i % 10 == 0:  # the note does not grow without end
                    daily.write_text(first)
                with daily.open("a") as fh:
                    fh.write(f"\n## Later {i}\n\nMore on the billing migration, step {i}.\n")
                if len(created) > 3:
                    created.pop(0).unlink()
                self.stop.wait(0.05)
        except BaseException as exc:  # reported by the test
            self.error = exc


@pytest.fixture
def editor(workspace: Path) -> Iterator[_Editor]:
    ed = _Editor(workspace)
    ed.thread.start()
    try:
        yield ed
    finally:
        ed.stop.set()
        ed.thread.join()
    assert ed.error is None


def _check(results: list, editor: _Editor) -> None:
    assert all(not isinstance(r, BaseException) for r in results), results
    paths = {d.metadata["path"] for docs in results for d in docs}
    assert paths and paths <= editor.paths, paths - editor.paths


def test_batch_on_eight_threads_under_concurrent_edits(workspace: Path, editor: _Editor) -> None:
    retriever = _retriever(workspace)
    queries = [QUERIES[i % len(QUERIES)] for i in range(800)]
    results = retriever.batch(queries, config={"max_concurrency": 8}, return_exceptions=True)
    _check(results, editor)
    retriever.engine.close()


def test_the_async_path_under_concurrent_edits(workspace: Path, editor: _Editor) -> None:
    retriever = _retriever(workspace)

    async def run() -> list:
        batched = await retriever.abatch(
            QUERIES * 25, config={"max_concurrency": 8}, return_exceptions=True
        )
        invoked = await asyncio.gather(
            *(retriever.ainvoke(q) for q in QUERIES * 25), return_exceptions=True
        )
        return [*batched, *invoked]

    _check(asyncio.run(run()), editor)
    retriever.engine.close()


@pytest.mark.parametrize("face", ["retriever", "tool"])
def test_concurrent_first_calls_build_one_engine(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, face: str
) -> None:
    built: list[object] = []
    init = search.MemorySearch.__init__

    def counted(self: search.MemorySearch, *args: object, **kwargs: object) -> None:
        built.append(self)
        time.sleep(0.05)  # the other threads' first calls come meanwhile
        init(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(search.MemorySearch, "__init__", counted)
    if face == "retriever":
        retriever = _retriever(workspace)
        retriever.batch(QUERIES, config={"max_concurrency": 8})
        engine = retriever.engine
    else:
        tool = MemorySearchTool(workspace=workspace, embeddings=WordEmbeddings(), watch=False)
        out = tool.batch([{"query": q} for q in QUERIES], config={"max_concurrency": 8})
        assert all(not text.startswith("Error") for text in out), out
        engine = tool.get_engine()
    assert len(built) == 1
    engine.close()


def test_the_stress_reads_side_files_as_a_large_index_does() -> None:
    from langchain_enhanced_memory.store import postings, vector_segments

    assert vector_segments.READ_ABOVE == 0 and postings.READ_ABOVE == 0
