"""The LangGraph stores benchmark and the fleet run end to end, tiny, on a real PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
STORES = ["ours-pg", "ours-ws", "postgres", "sqlite", "memory"]
LABELS = [
    "EnhancedMemoryStore (PostgreSQL)",
    "EnhancedMemoryStore (workspace)",
    "PostgresStore (pgvector HNSW)",
    "SqliteStore (sqlite-vec, exact scan)",
    "InMemoryStore (numpy, exact scan)",
]
NOTE = """# 2023-05-0{day} (Monday)

## Chat with {a} and {b}

### Notes

- {a} adopted a {pet} named {name} and walks it every morning.
- {b} is training for a marathon in the autumn.

### Transcript, part 1

{a}: I finally brought {name} home, the {pet} from the shelter!
{b}: Congratulations! I ran twenty miles on Sunday.
"""


def _workspaces(root: Path) -> Path:
    """Two tiny conversations and a query on each: the layout of locomo-dev."""
    queries = []
    for n, (a, b, pet, name) in enumerate(
        [("Ada", "Ben", "greyhound", "Pixel"), ("Cleo", "Dan", "parrot", "Mango")]
    ):
        note = root / f"conv-{n}" / "memory" / f"2023-05-0{n + 1}.md"
        note.parent.mkdir(parents=True)
        note.write_text(NOTE.format(day=n + 1, a=a, b=b, pet=pet, name=name), encoding="utf-8")
        gold = [{"path": f"memory/{note.name}", "line": 7}]
        queries.append(
            {
                "id": f"conv-{n}/q0",
                "workspace": f"conv-{n}",
                "query": f"What is the name of the {pet} {a} adopted?",
                "category": "single-hop",
                "now": "2023-06-01T09:00:00",
                "gold": gold,
            }
        )
    path = root / "queries.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    return path


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={"ENHANCED_MEMORY_DAEMON": "0", "PATH": "/usr/bin:/bin"},
    )


def test_one_table_a_row_per_store(tmp_path: Path, database_url: str) -> None:
    queries = _workspaces(tmp_path)
    out = tmp_path / "out.json"
    done = _run(
        "langgraph_stores.py",
        *("--database", database_url, "--root", str(tmp_path), "--queries", str(queries)),
        *("--embedder", "projection", "--sizes", "40", "--ops", "5", "--budget", "1"),
        *("--json", str(out)),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[0].lstrip("| ") for row in rows[1:]] == LABELS
    assert "40 single" in rows[0] and "40 many" in rows[0]
    assert database_url.split("@")[0] not in done.stdout + done.stderr  # the password
    figures = json.loads(out.read_text())
    assert [r["store"] for r in figures] == STORES
    for row in figures:
        # Each store finds each tiny conversation's fact (the hits map back to lines).
        assert row["quality"]["categories"]["ALL"]["hit@10"] == 1.0, row
        assert [(r["items"], r["layout"]) for r in row["latency"]] == [
            (40, "single"),
            (40, "many"),
        ]
        assert all(r[op]["n"] >= 5 for r in row["latency"] for op in ("put", "get", "search"))


def test_fleet_a_row_per_store(tmp_path: Path, database_url: str) -> None:
    out = tmp_path / "fleet.json"
    done = _run(
        "langgraph_fleet.py",
        *("--database", database_url, "--namespaces", "3", "--serve", "3", "--warm", "2"),
        *("--fresh", "2", "--json", str(out)),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[0].lstrip("| ") for row in rows[1:]] == [LABELS[2], LABELS[0]]
    figures = json.loads(out.read_text())
    for row in figures:
        assert row["served"] == 3 and row["namespaces"] == 3
        assert set(row["rss_mb"]) == {"3"}
