"""Embedder faults against a real HTTP server: index stops cleanly and resumes, search degrades.

The fault starts inside the server after two ``/api/embed`` calls of an
``index`` run (batches go a few at a time, so those before the failing one are
committed), the run must retry with backoff, then exit 2 with one line on
stderr and keep those batches; the next run embeds only the rest (counted at
the server). ``search`` in the same conditions answers
keyword-only in the same call with ``fallback`` set.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.embeddings import EmbeddingError
from langchain_enhanced_memory.engine import MemorySearch
from langchain_enhanced_memory.store.index import MemoryIndex
from tests.cli_run import run_cli
from tests.fake_ollama import FakeOllama
from tests.workspaces import write_workspace

MODEL_ID = "ollama/nomic-embed-text"
RETRIES = MemorySettings().embedding.embed_retries


def _files(n_files: int, sections: int, tag: str) -> dict[str, str]:
    return {
        f"memory/2026-03-{i + 1:02d}{tag}.md": "\n".join(
            f"## Item {j}\n\nwombat {tag} entry {i}-{j} about invoices and latency budgets.\n"
            for j in range(sections)
        )
        for i in range(n_files)
    }


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout=180)


def _fault_after(fake: FakeOllama, calls: int, start: Callable[[FakeOllama], None]) -> None:
    """Apply ``start(fake)`` inside the server, right before it answers request ``calls + 1``."""
    answer = fake._embed_fault
    injected = threading.Event()

    def gated(inputs: list[str]) -> str | None:
        if fake.calls >= calls and not injected.is_set():
            injected.set()
            if start is FakeOllama.stop:
                # Stop from another thread; this request gets no answer, later ones are refused.
                threading.Thread(target=fake.stop, daemon=True).start()
                answer(inputs)
                return "drop"
            start(fake)
        return answer(inputs)

    fake._embed_fault = gated  # type: ignore[method-assign]


def _stop_model(fake: FakeOllama) -> None:
    fake.models = []


FAULTS: dict[str, tuple[Callable[[FakeOllama], None], Callable[[FakeOllama], None], int]] = {
    # name: (inject, heal, embed requests the failing batch gets)
    "connection refused": (FakeOllama.stop, FakeOllama.start, 0),
    "http 500": (lambda f: f.set_fault("http500"), FakeOllama.clear_fault, RETRIES + 1),
    "malformed json": (
        lambda f: f.set_fault("malformed_json"),
        FakeOllama.clear_fault,
        RETRIES + 1,
    ),
    "wrong dimension": (
        lambda f: f.set_fault("wrong_dim", dim=384),
        FakeOllama.clear_fault,
        RETRIES + 1,
    ),
    "fewer vectors": (lambda f: f.set_fault("fewer_vectors"), FakeOllama.clear_fault, RETRIES + 1),
    "nan in vector": (lambda f: f.set_fault("nan"), FakeOllama.clear_fault, RETRIES + 1),
    "dropped connection": (lambda f: f.set_fault("drop"), FakeOllama.clear_fault, RETRIES + 1),
    "model not pulled": (
        _stop_model,
        lambda f: setattr(f, "models", ["nomic-embed-text:latest"]),
        1,  # waiting cannot pull a model: no retries
    ),
}


def _params(fast: tuple[str, ...]) -> list:
    """Every fault; those not in ``fast`` only in the slow run (each costs ~15 s of backoff)."""
    return [pytest.param(n, marks=() if n in fast else pytest.mark.slow) for n in FAULTS]


@pytest.mark.parametrize("name", _params(("wrong dimension", "model not pulled")))
def test_index_stops_cleanly_keeps_batches_and_resumes(tmp_path: Path, name: str) -> None:
    inject, heal, attempts = FAULTS[name]
    ws = write_workspace(tmp_path / "ws", _files(5, 40, "a"))
    fake = FakeOllama().start()
    try:
        base = ("--workspace", str(ws), "--embedder", "ollama", "--ollama-url", fake.url)
        _fault_after(fake, 2, inject)
        r = _cli("index", *base)
        assert r.returncode == 2, r.stdout + r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
        assert lines[0].startswith("enhanced-memory: error: embedding stopped:"), lines[0]
        if attempts:
            assert fake.calls >= 2 + attempts, "retries at the server"
        # Batches are embedded a few at a time; every one before the failure is kept.
        idx = MemoryIndex(ws)
        chunks = idx.stats()["chunks"]
        kept = chunks - len(idx.missing_embeddings(MODEL_ID))
        assert 0 <= kept < chunks and kept % MemorySettings().embedding.embed_batch_size == 0
        heal(fake)
        fake.reset_counters()
        del fake._embed_fault  # the class's own method again
        r = _cli("index", *base, "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["embedded"] == chunks - kept
        assert len(fake.embedded_texts) == chunks - kept, "only the rest is embedded"
        assert MemoryIndex(ws).snapshot(MODEL_ID).has_vector.all()
    finally:
        fake.stop()


@pytest.mark.parametrize("name", _params(("connection refused", "http 500")))
def test_search_falls_back_to_keyword_only_in_the_same_call(tmp_path: Path, name: str) -> None:
    inject, heal, _ = FAULTS[name]
    ws = write_workspace(tmp_path / "ws", _files(2, 5, "b"))
    fake = FakeOllama().start()
    try:
        base = ("--workspace", str(ws), "--embedder", "ollama", "--ollama-url", fake.url)
        assert _cli("index", *base).returncode == 0
        # A new file needs embedding too, so the search's own upkeep meets the fault.
        write_workspace(ws, _files(1, 3, "c"))
        if name != "connection refused":  # refused from the start is the probe's path
            inject(fake)
        else:
            fake.stop()
        r = _cli("search", "wombat invoices", *base, "--json")
        assert r.returncode == 0, r.stderr
        assert "Traceback" not in r.stderr
        out = json.loads(r.stdout)
        assert out["fallback"] == "keyword-only"
        assert out["results"] and "wombat" in out["results"][0]["snippet"]
        heal(fake)
        r = _cli("search", "wombat invoices", *base, "--json")
        assert r.returncode == 0 and json.loads(r.stdout)["fallback"] is None, r.stdout
    finally:
        fake.stop()


def test_timeout_is_retried_then_reported_and_search_degrades(tmp_path: Path) -> None:
    ws = write_workspace(tmp_path / "ws", _files(1, 5, "d"))
    fake = FakeOllama().start()
    try:
        settings = MemorySettings(embed_timeout_s=0.3, embed_retries=1)
        engine = MemorySearch(ws, settings=settings, embedder="ollama", ollama_url=fake.url)
        fake.set_fault("slow", seconds=2.0, paths=("/api/embed",))
        with pytest.raises(EmbeddingError) as info:
            engine.update_index()
        assert info.value.kind == "timeout" and "timed out" in str(info.value)
        assert "\n" not in str(info.value)
        assert fake.requests.count(("POST", "/api/embed")) == 2  # one retry
        response = engine.search("wombat invoices")
        assert response.fallback == "keyword-only" and response.hits
        fake.clear_fault()
        fresh = MemorySearch(ws, settings=settings, embedder="ollama", ollama_url=fake.url)
        assert fresh.search("wombat invoices").fallback is None
    finally:
        fake.stop()
