"""No silent keyword-only evaluation: a batch says once that vectors are still coming.

A workspace never indexed has more texts to embed than a search embeds before
answering, so a batch answers keyword-only; stderr says so once, with the
share embedded and how to wait, and ``--embed-first`` embeds before answering.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_run import run_cli


def many_notes(ws: Path) -> Path:
    (ws / "memory").mkdir(parents=True)
    for day in range(1, 29):
        lines = [
            f"- Day {day}: item {i} of the billing export, parcel {day * i}." for i in range(4)
        ]
        (ws / "memory" / f"2026-02-{day:02d}.md").write_text(
            f"# 2026-02-{day:02d}\n\n## Work\n\n" + "\n".join(lines) + "\n"
        )
    return ws


def test_a_batch_says_once_that_it_answers_keyword_only(tmp_path: Path, fake_ollama) -> None:
    ws = many_notes(tmp_path / "ws")
    batch = tmp_path / "q.jsonl"
    batch.write_text(
        "".join(json.dumps({"id": i, "query": "billing parcel"}) + "\n" for i in range(3))
    )
    common = ("--workspace", str(ws), "--embedder", "ollama", "--ollama-url", fake_ollama.url)
    out = run_cli("search", "--batch", str(batch), "--json", *common)
    assert out.returncode == 0, out.stderr
    assert {json.loads(line)["mode"] for line in out.stdout.splitlines()} == {"keyword"}
    said = [line for line in out.stderr.splitlines() if "answering keyword-only" in line]
    assert len(said) == 1 and "enhanced-memory index" in said[0] and "%" in said[0]

    first = run_cli("search", "--batch", str(batch), "--json", "--embed-first", *common)
    assert first.returncode == 0, first.stderr
    assert {json.loads(line)["mode"] for line in first.stdout.splitlines()} == {"hybrid"}
    assert "answering keyword-only" not in first.stderr
