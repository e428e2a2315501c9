"""A process holding a large index keeps the heap memory its searches free (``store.heap``)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from langchain_enhanced_memory.config import load
from langchain_enhanced_memory.store import heap
from langchain_enhanced_memory.store.index import MemoryIndex

ENV = "ENHANCED_MEMORY_MALLOC_TUNE"

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"

# A search at 1M chunks in small: a dozen 4 MB arrays made, written and freed, many times.
CHURN = """
import resource, sys, numpy as np
from langchain_enhanced_memory.store import heap
kept = heap.keep_freed_memory() if sys.argv[1] == "keep" else False
def query():
    arrays = [np.zeros(1_000_000, np.float32) for _ in range(12)]
    for a in arrays:
        a += 1.0
query()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    query()
print(kept, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _churn(mode: str, **env: str) -> tuple[bool, int]:
    out = subprocess.run(
        [sys.executable, "-c", CHURN, mode],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
        check=True,
    ).stdout.split()
    return out[0] == "True", int(out[1])


def test_kept_heap_memory_is_not_faulted_in_again_by_each_query() -> None:
    kept, faults = _churn("keep")
    plain, plain_faults = _churn("plain")
    assert kept is GLIBC and plain is False
    if GLIBC:  # glibc hands the freed arrays back, and each query faults them in again
        assert faults * 4 < plain_faults, (faults, plain_faults)


def test_a_large_snapshot_tunes_the_allocator_only_when_asked(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[bool] = []
    monkeypatch.setattr(heap, "keep_freed_memory", lambda: asked.append(True) or True)
    monkeypatch.setattr(heap, "_opted_in", False)
    monkeypatch.delenv(ENV, raising=False)
    load()
    idx = MemoryIndex(workspace)
    idx.sync()
    idx.snapshot()
    assert not asked  # a few chunks: the process's allocator is left as it is
    monkeypatch.setattr(heap, "LARGE_ROWS", 1)
    (workspace / "memory" / "2026-02-10.md").write_text("# Tuesday\n\nA new note.\n")
    idx.sync()  # a new generation: loaded again, and now counted as large
    idx.snapshot()
    assert not asked  # the library is used, not asked to change its caller's process
    for opt_in, setting, tuned in [
        (False, "1", True),
        (True, None, True),  # a server command asked, for its own process
        (True, "0", False),
    ]:
        asked.clear()
        monkeypatch.setattr(heap, "_opted_in", opt_in)
        if setting is None:
            monkeypatch.delenv(ENV, raising=False)
        else:
            monkeypatch.setenv(ENV, setting)
        load()  # the entry point reads it; the store obeys what it was handed
        MemoryIndex(workspace).snapshot()  # a new process's first load
        assert asked == ([True] if tuned else []), (opt_in, setting)
