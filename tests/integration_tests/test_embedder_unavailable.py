"""An embedder that is down: keyword-only with the cause said once, or a failure when asked for.

``--on-embedder-error keyword`` (the default, as OpenClaw's ``fallback``) answers
keyword-only; ``fail`` (or ``$ENHANCED_MEMORY_ON_EMBEDDER_ERROR=fail``, or the
retriever's ``on_embedder_error``) is one line and a non-zero exit. ``eval``
fails by default: a figure measured keyword-only must not pass for a hybrid one.
Ollama is a closed port ("unreachable") or :mod:`tests.fake_ollama` answering 500.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langchain_enhanced_memory import EnhancedMemoryRetriever
from langchain_enhanced_memory.core.errors import EmbeddingError
from langchain_enhanced_memory.core.settings import MemorySettings
from tests.cli_run import run_cli
from tests.fake_ollama import FakeOllama, unused_port
from tests.workspaces import SMALL_WORKSPACE, write_workspace


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "ws", SMALL_WORKSPACE)


def _refused(url: str) -> str:
    return f"enhanced-memory: error: Ollama at {url} is unreachable (connection refused)\n"


def _down(ws: Path) -> tuple[str, tuple[str, ...]]:
    url = f"http://127.0.0.1:{unused_port()}"
    return url, ("--workspace", str(ws), "--embedder", "ollama", "--ollama-url", url)


def test_keyword_only_says_the_cause_once(ws: Path) -> None:
    url, down = _down(ws)
    cause = f"Ollama at {url} is unreachable (connection refused)"
    for fmt in ((), ("--json",)):
        r = run_cli("search", "Postgres migration", *down, *fmt)
        assert r.returncode == 0, r.stderr
        assert r.stderr.count(cause) == 1, r.stderr
        assert "Postgres" in r.stdout
    r = run_cli("search", "Postgres migration", *down)
    assert "embedder: ollama (nomic-embed-text), fallback keyword-only\n" in r.stderr


def test_fail_is_one_line_and_a_non_zero_exit(ws: Path) -> None:
    url, down = _down(ws)
    line = _refused(url)
    r = run_cli("search", "Postgres migration", *down, "--on-embedder-error", "fail")
    assert (r.returncode, r.stdout, r.stderr) == (2, "", line)
    r = run_cli("search", "Postgres", *down, "--json", ENHANCED_MEMORY_ON_EMBEDDER_ERROR="fail")
    assert (r.returncode, r.stderr) == (2, line)
    out = json.loads(r.stdout)
    assert out["results"] == [] and out["unavailable"] and "unreachable" in out["error"]
    r = run_cli("index", *down, "--on-embedder-error", "fail")  # the text is indexed all the same
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"Ollama at {url} is unreachable (connection refused)" in r.stderr
    # The flag beats the environment.
    r = run_cli(
        "search", "Postgres", *down, "--on-embedder-error", "keyword",
        ENHANCED_MEMORY_ON_EMBEDDER_ERROR="fail",
    )  # fmt: skip
    assert r.returncode == 0 and "Postgres" in r.stdout, r.stderr


def test_a_bad_setting_in_the_environment_is_one_line(ws: Path) -> None:
    r = run_cli("search", "Postgres", "--workspace", str(ws), ENHANCED_MEMORY_ON_EMBEDDER_ERROR="x")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.splitlines()) == 1 and "keyword or fail" in r.stderr, r.stderr


def test_eval_fails_by_default_and_measures_keyword_only_when_asked(
    ws: Path, tmp_path: Path
) -> None:
    queries = tmp_path / "q.jsonl"
    gold = [{"path": "memory/2026-02-08.md", "line": 5}]
    queries.write_text(json.dumps({"id": 1, "workspace": "ws", "query": "Postgres", "gold": gold}))
    url, down = _down(ws)
    base = ("eval", "--root", str(ws.parent), "--queries", str(queries), *down[2:])
    r = run_cli(*base)
    assert (r.returncode, r.stdout) == (2, "") and r.stderr.count("\n") == 1, r.stderr
    assert f"Ollama at {url} is unreachable (connection refused)" in r.stderr
    r = run_cli(*base, "--on-embedder-error", "keyword", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["fallback"] == "keyword-only"


def test_a_query_embedding_that_fails_raises_in_the_retriever_when_told(
    ws: Path, fake_ollama: FakeOllama
) -> None:
    """Ollama answers the probe, then 500 to the query: keyword-only, or EmbeddingError."""
    fields = {"workspace": ws, "embedder": "ollama", "ollama_url": fake_ollama.url}
    settings = MemorySettings(embed_retries=0)
    assert EnhancedMemoryRetriever(**fields).invoke("Postgres migration")  # indexed, embedded
    fake_ollama.set_fault("http500")
    keep = EnhancedMemoryRetriever(**fields, settings=settings)
    docs = keep.invoke("Postgres migration")
    assert docs and docs[0].metadata["fallback"] == "keyword-only"
    strict = EnhancedMemoryRetriever(**fields, settings=settings, on_embedder_error="fail")
    with pytest.raises(EmbeddingError) as info:
        strict.invoke("Postgres migration")
    assert "500" in str(info.value) and "\n" not in str(info.value)
