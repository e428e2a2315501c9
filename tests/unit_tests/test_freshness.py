"""An edit is in the very next search: with the watcher, with its fallback, after it fails."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.engine import MemorySearch
from langchain_enhanced_memory.store import discovery, freshness
from langchain_enhanced_memory.store.freshness import ChangeWatcher

NOW = "2026-02-09T09:00:00"


def _paths(engine: MemorySearch, query: str) -> list[str]:
    return [h.path for h in engine.search(query, k=5, now=NOW).hits]


def _edits(engine: MemorySearch, ws: Path) -> None:
    assert "memory/2026-02-08.md" in _paths(engine, "billing")
    # A line appended to a daily note is in the next search.
    with open(ws / "memory/2026-02-08.md", "a", encoding="utf-8") as fh:
        fh.write("\nThe zanzibar rollout is frozen until March.\n")
    assert _paths(engine, "zanzibar")[:1] == ["memory/2026-02-08.md"]
    # A new file is in the next search.
    (ws / "memory/topics").mkdir(exist_ok=True)
    (ws / "memory/topics/quokka.md").write_text("# Quokka\n\nThe quokka project ships in May.\n")
    assert _paths(engine, "quokka")[:1] == ["memory/topics/quokka.md"]
    # A deleted file is gone from the next search.
    (ws / "memory/topics/quokka.md").unlink()
    assert "memory/topics/quokka.md" not in _paths(engine, "quokka")
    # Replaced by rename, as editors save.
    tmp = ws / "memory/.2026-02-08.md.swp"
    tmp.write_text((ws / "memory/2026-02-08.md").read_text() + "\nOcelot budget approved.\n")
    os.replace(tmp, ws / "memory/2026-02-08.md")
    assert _paths(engine, "ocelot")[:1] == ["memory/2026-02-08.md"]


def test_edits_are_in_the_next_search_with_the_watcher(workspace: Path) -> None:
    with MemorySearch(workspace, embedder="none", watch=True) as engine:
        assert engine.freshness.mode == "watch"
        _edits(engine, workspace)


def test_with_the_watcher_an_unchanged_workspace_is_not_walked(workspace, monkeypatch) -> None:
    with MemorySearch(workspace, embedder="none", watch=True) as engine:
        engine.search("billing", now=NOW)  # the first search checks once
        walks: list[tuple] = []

        def counted_scan(*args, **kwargs):
            walks.append(args)
            return discovery.scan(*args, **kwargs)

        monkeypatch.setattr("langchain_enhanced_memory.store.sync.scan", counted_scan)
        for _ in range(5):
            engine.search("billing", now=NOW)
        assert walks == []
        (workspace / "memory/2026-02-08.md").touch()  # an event: the next search checks once
        engine.search("billing", now=NOW)
        assert len(walks) == 2  # the staleness check, then the sync it calls


def test_edits_are_in_the_next_search_with_the_scan(workspace: Path) -> None:
    with MemorySearch(workspace, embedder="none", watch=False) as engine:
        assert engine.freshness.mode == "scan"
        _edits(engine, workspace)


def test_a_watcher_that_cannot_start_falls_back_and_says_so(workspace, monkeypatch, caplog):
    monkeypatch.setattr(ChangeWatcher, "start", lambda self: "inotify watch limit reached")
    with MemorySearch(workspace, embedder="none", watch=True) as engine:
        assert engine.freshness.mode == "scan"
        assert "inotify watch limit reached" in caplog.text
        _edits(engine, workspace)


def test_a_watcher_that_stops_answering_falls_back(workspace, monkeypatch, caplog) -> None:
    monkeypatch.setattr(freshness, "BARRIER_TIMEOUT_S", 0.2)
    with MemorySearch(workspace, embedder="none", watch=True) as engine:
        engine.search("billing", now=NOW)
        engine.freshness.watcher._observer.stop()  # the thread dies under us
        engine.freshness.watcher._observer.join()
        _edits(engine, workspace)
        assert engine.freshness.mode == "scan"
        assert "stopped answering" in caplog.text


def test_closing_stops_the_watcher_thread(workspace: Path) -> None:
    before = threading.active_count()
    engine = MemorySearch(workspace, embedder="none", watch=True)
    engine.search("billing", now=NOW)
    assert threading.active_count() > before
    engine.close()
    assert threading.active_count() == before


def test_scan_lists_what_discover_lists(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory/sub").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Core\n\ncore facts here\n")
    (ws / "memory/2026-02-08.md").write_text("# Day\n\nsome notes of the day\n")
    (ws / "memory/sub/topic.md").write_text("# Topic\n\na topic file with notes\n")
    (ws / "memory/.hidden.md").write_text("# hidden\n")
    (ws / "memory/notes.txt").write_text("not markdown\n")
    os.link(ws / "memory/sub/topic.md", ws / "memory/sub/hardlink.md")
    (ws / "memory/link.md").symlink_to(ws / "memory/2026-02-08.md")
    (ws / "memory/outside.md").symlink_to(tmp_path / "nowhere.md")
    found = discovery.scan(ws)
    listed = discovery.discover(ws)
    assert sorted(found) == [f.path for f in listed]
    for f in listed:
        st = f.abs_path.stat()
        assert found[f.path] == (st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@pytest.mark.parametrize("watch", [True, False])
def test_an_index_run_elsewhere_does_not_hide_an_edit(workspace: Path, watch: bool) -> None:
    # A second engine (another process's index run) syncs first; ours must still see the edit.
    with MemorySearch(workspace, embedder="none", watch=watch) as engine:
        engine.search("billing", now=NOW)
        with open(workspace / "MEMORY.md", "a", encoding="utf-8") as fh:
            fh.write("\nThe wombat account is closed.\n")
        MemorySearch(workspace, embedder="none").index.sync()
        assert _paths(engine, "wombat")[:1] == ["MEMORY.md"]


@pytest.mark.parametrize("watch", [True, False])
def test_a_same_size_edit_with_its_mtime_set_back_is_in_the_next_search(
    workspace: Path, watch: bool
) -> None:
    note = workspace / "memory/2026-02-08.md"
    with MemorySearch(workspace, embedder="none", watch=watch) as engine:
        assert _paths(engine, "ramen")[:1] == ["memory/2026-02-08.md"]
        # sed -i 's/ramen/sushi/' then touch -r: the size and the mtime are as they were.
        st = note.stat()
        with open(note, "r+", encoding="utf-8") as fh:
            text = fh.read()
            fh.seek(0)
            fh.write(text.replace("ramen", "sushi"))
        os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert (note.stat().st_size, note.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
        assert _paths(engine, "sushi")[:1] == ["memory/2026-02-08.md"]
        assert "memory/2026-02-08.md" not in _paths(engine, "ramen")


@pytest.mark.parametrize("watch", [True, False])
def test_edits_through_a_symlinked_memory_folder_are_in_the_next_search(
    tmp_path: Path, watch: bool
) -> None:
    vault, other, ws = tmp_path / "vault", tmp_path / "other", tmp_path / "ws"
    for folder in (vault, other, ws):
        folder.mkdir()
    (vault / "2026-02-08.md").write_text("# Day\n\nThe billing move is planned.\n")
    (other / "topic.md").write_text("# Topic\n\nThe capybara project.\n")
    (tmp_path / "core.md").write_text("# Core\n\nPlain facts.\n")
    (ws / "memory").symlink_to(vault, target_is_directory=True)
    (ws / "MEMORY.md").symlink_to(tmp_path / "core.md")
    with MemorySearch(ws, embedder="none", watch=watch) as engine:
        assert _paths(engine, "billing") == ["memory/2026-02-08.md"]
        with open(vault / "2026-02-08.md", "a", encoding="utf-8") as fh:
            fh.write("\nThe zanzibar rollout is frozen.\n")
        assert _paths(engine, "zanzibar") == ["memory/2026-02-08.md"]
        with open(tmp_path / "core.md", "a", encoding="utf-8") as fh:
            fh.write("\nThe user owns a kayak.\n")
        assert _paths(engine, "kayak") == ["MEMORY.md"]
        # Links out of the workspace are checked by the scan: a watch of their folders would
        # deliver events on threads of their own, in no order with the barrier's.
        assert engine.freshness.mode == "scan"
        # The link re-pointed to another folder.
        (ws / "memory").unlink()
        (ws / "memory").symlink_to(other, target_is_directory=True)
        assert _paths(engine, "capybara") == ["memory/topic.md"]
        assert _paths(engine, "zanzibar") == []
        (other / "new.md").write_text("# New\n\nA wallaby note.\n")
        assert _paths(engine, "wallaby") == ["memory/new.md"]


def test_edits_are_in_the_next_retriever_and_tool_call(workspace: Path) -> None:
    from langchain_enhanced_memory import EnhancedMemoryRetriever, create_memory_tools

    retriever = EnhancedMemoryRetriever(workspace=workspace, embedder="none")
    search_tool = create_memory_tools(workspace, embedder="none")[0]
    assert retriever.engine.config.watch and search_tool.engine.config.watch
    try:
        retriever.invoke("billing")
        search_tool.invoke({"query": "billing"})
        with open(workspace / "memory/2026-02-07.md", "a", encoding="utf-8") as fh:
            fh.write("\nThe narwhal dashboard went live.\n")
        docs = retriever.invoke("narwhal")
        assert docs[0].metadata["path"] == "memory/2026-02-07.md"
        assert "memory/2026-02-07.md" in search_tool.invoke({"query": "narwhal"})
        (workspace / "memory/2026-02-07.md").unlink()
        assert all(
            d.metadata["path"] != "memory/2026-02-07.md" for d in retriever.invoke("narwhal")
        )
        assert "memory/2026-02-07.md" not in search_tool.invoke({"query": "narwhal"})
    finally:
        retriever.engine.close()
        search_tool.engine.close()


def test_a_transcript_folder_made_later_is_watched_and_an_outside_one_scanned(
    workspace: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    turn = {"role": "user", "content": "the heron nests", "timestamp": "2026-02-09T10:00Z"}
    with MemorySearch(workspace, embedder="none", watch=True) as engine:
        assert engine.search("heron").hits == []
        (workspace / "sessions").mkdir()
        (workspace / "sessions" / "s1.jsonl").write_text(json.dumps(turn) + "\n")
        assert [h.path for h in engine.search("heron").hits] == ["sessions/s1.jsonl"]
        assert engine.freshness.mode == "watch"  # inside the workspace: its events come
    outside = tmp_path_factory.mktemp("agent")
    settings = MemorySettings(session_dirs=(*MemorySettings().discovery.session_dirs, str(outside)))
    with MemorySearch(workspace, settings=settings, embedder="none", watch=True) as engine:
        assert engine.freshness.mode == "scan"
        (outside / "s2.jsonl").write_text(json.dumps({**turn, "content": "the egret"}) + "\n")
        assert [h.path for h in engine.search("egret").hits] == [
            f"sessions/{outside.name}/s2.jsonl"
        ]


def test_each_engine_waits_for_its_own_barrier(workspace: Path) -> None:
    # Another engine's barrier, touched a moment earlier, must not end this one's wait.
    with (
        MemorySearch(workspace, embedder="none", watch=True) as one,
        MemorySearch(workspace, embedder="none", watch=True) as two,
    ):
        a, b = one.freshness.watcher, two.freshness.watcher
        assert a is not None and b is not None and a.barrier != b.barrier
        seen = b._barriers
        assert a.settle()
        time.sleep(0.2)  # long enough for b's thread to see a's touch, were it b's barrier
        assert b._barriers == seen
        barriers = [a.barrier, b.barrier]
    assert not any(os.path.exists(p) for p in barriers)  # closing removes them
