"""Migration from the original skill's memory/vectors.json, counted at a real HTTP server."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from langchain_enhanced_memory.core.settings import MemorySettings
from langchain_enhanced_memory.store.index import MemoryIndex
from langchain_enhanced_memory.store.migrate import (
    MigrationError,
    load_vectors_json,
    model_mismatch,
    seed_from_vectors_json,
)
from tests.cli_run import run_cli
from tests.fake_ollama import FakeOllama, embed_text

HEADER = re.compile(r"^#{1,4}\s")
CORE = ("MEMORY.md", "AGENTS.md", "USER.md", "SOUL.md", "research.md")


def original_chunks(ws: Path) -> list[dict]:
    """The original's embed_memories.py chunking, written from the spec, independently."""
    files = sorted(p for p in (ws / "memory").rglob("*.md")) + [
        ws / n for n in CORE if (ws / n).exists()
    ]
    out = []
    for f in files:
        rel = f.relative_to(ws).as_posix()
        sections = [(f.name, 1, [])]  # (header, first line, lines)
        for n, line in enumerate(f.read_text(encoding="utf-8").split("\n"), 1):
            if HEADER.match(line):
                sections.append((line.lstrip("#").strip(), n, []))
            sections[-1][2].append(line)
        for header, start, lines in sections:
            text = "\n".join(lines).strip()
            if len(text) > 20:
                out.append({"file": rel, "header": header, "line": start, "text": text})
    return out


def write_vectors_json(ws: Path, dim: int = 768) -> list[dict]:
    chunks = original_chunks(ws)
    for c in chunks:
        c["embedding"] = embed_text(c["text"][:2000], dim)
    (ws / "memory" / "vectors.json").write_text(json.dumps(chunks), encoding="utf-8")
    return chunks


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_cli(*args, **(env or {}))


@pytest.mark.parametrize("profile", ["default", "original"])
def test_first_index_run_embeds_nothing(
    workspace: Path, fake_ollama: FakeOllama, profile: str
) -> None:
    lines = ["- Maria adopted a puppy.", "- John fixed his car."]
    (workspace / "memory/2026-02-09.md").write_text("# Notes\n\n" + "\n".join(lines) + "\n")
    write_vectors_json(workspace)
    r = cli(
        "index", "--workspace", str(workspace), "--embedder", "ollama",
        "--ollama-url", fake_ollama.url, "--profile", profile, "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["chunks"] >= 6
    # No chunk is embedded again. The default profile also embeds the lines of
    # multi-line chunks (vectors the original never made); the original makes none.
    new = [f"search_document: {t}" for t in lines] if profile == "default" else []
    assert fake_ollama.embedded_texts == new and info["embedded"] == len(new)
    fake_ollama.reset_counters()

    # The reused vectors serve real vector search: one call, for the query only.
    r = cli(
        "search", "Postgres billing database", "--workspace", str(workspace),
        "--embedder", "ollama", "--ollama-url", fake_ollama.url, "--profile", profile, "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["provider"] == "ollama" and out["fallback"] is None
    assert out["results"][0]["path"] == "memory/2026-02-08.md"
    assert fake_ollama.calls == 1


def test_original_profile_reuses_every_vector_exactly(workspace: Path) -> None:
    chunks = write_vectors_json(workspace)
    ix = MemoryIndex(workspace, MemorySettings(profile="original"))
    ix.sync()
    report = seed_from_vectors_json(ix, "ollama/nomic-embed-text")
    assert report is not None and report.skipped_reason is None
    assert report.seeded == report.exact == len(chunks)
    snap = ix.snapshot("ollama/nomic-embed-text")
    assert snap.has_vector is not None and snap.has_vector.all()
    dense = snap.dense_vectors()
    assert dense is not None
    for i, text in enumerate(snap.texts):
        want = np.asarray(embed_text(text[:2000], 768), dtype=np.float32)
        want /= np.linalg.norm(want)
        # Stored as int8 with a scale per row: within half a step of each value.
        step = float(np.abs(want).max()) / 127
        assert np.allclose(dense[i], want, atol=step / 2 + 1e-7)
    # The same file is not read twice.
    assert seed_from_vectors_json(ix, "ollama/nomic-embed-text") is None


def test_new_notes_after_migration_are_the_only_ones_embedded(
    workspace: Path, fake_ollama: FakeOllama
) -> None:
    write_vectors_json(workspace)
    (workspace / "memory" / "2026-02-09.md").write_text(
        "# 2026-02-09\n\n## Offsite\n\nBooked the venue for the team offsite in Lisbon.\n",
        encoding="utf-8",
    )
    r = cli(
        "index", "--workspace", str(workspace), "--embedder", "ollama",
        "--ollama-url", fake_ollama.url, "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["embedded"] == 1
    assert len(fake_ollama.embedded_texts) == 1
    assert "Lisbon" in fake_ollama.embedded_texts[0]


def test_other_model_is_not_seeded(workspace: Path, fake_ollama: FakeOllama) -> None:
    write_vectors_json(workspace)
    fake_ollama.models.append("mxbai-embed-large:latest")
    r = cli(
        "index", "--workspace", str(workspace), "--embedder", "ollama",
        "--ollama-url", fake_ollama.url, "--model", "mxbai-embed-large", "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["embedded"] == info["chunks"] and fake_ollama.calls > 0


def test_embed_model_env_names_the_source_model(workspace: Path, fake_ollama: FakeOllama) -> None:
    write_vectors_json(workspace, dim=1024)
    fake_ollama.models.append("mxbai-embed-large:latest")
    fake_ollama.model_dims["mxbai-embed-large:latest"] = 1024
    r = cli(
        "index", "--workspace", str(workspace), "--embedder", "ollama",
        "--ollama-url", fake_ollama.url, "--json",
        env={"EMBED_MODEL": "mxbai-embed-large"},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["model"] == "mxbai-embed-large"
    assert fake_ollama.calls == 0


def test_wrong_dimension_is_not_seeded(workspace: Path) -> None:
    write_vectors_json(workspace, dim=512)
    ix = MemoryIndex(workspace)
    ix.sync()
    report = seed_from_vectors_json(ix, "ollama/nomic-embed-text")
    assert report is not None and report.seeded == 0
    assert "512-d" in (report.skipped_reason or "")
    assert ix.missing_embeddings("ollama/nomic-embed-text")


def test_model_mismatch_rules() -> None:
    assert model_mismatch("ollama/nomic-embed-text:latest", "nomic-embed-text", 768, None) is None
    assert model_mismatch("local/multilingual-e5-small-q4", "nomic-embed-text", 768, None)
    assert model_mismatch("ollama/my-model", "my-model", 300, None) is None
    assert model_mismatch("ollama/my-model", "my-model", 300, 256)


def test_broken_vectors_json_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "vectors.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(MigrationError, match="not JSON"):
        load_vectors_json(bad)
    rows = [{"text": "abc", "embedding": [1, 2]}, {"text": "d", "embedding": [1]}]
    bad.write_text(json.dumps(rows))
    with pytest.raises(MigrationError, match="unequal"):
        load_vectors_json(bad)


def test_broken_vectors_json_does_not_stop_indexing(
    workspace: Path, fake_ollama: FakeOllama
) -> None:
    (workspace / "memory" / "vectors.json").write_text("[1, 2", encoding="utf-8")
    r = cli(
        "index", "--workspace", str(workspace), "--embedder", "ollama",
        "--ollama-url", fake_ollama.url, "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "not reusing" in r.stderr and "Traceback" not in r.stderr
    assert json.loads(r.stdout)["embedded"] > 0
