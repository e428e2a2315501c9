"""A reader that leaves early (``enhanced-memory search ... | head``) gets no traceback."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli_run import CLI, cli_env


def test_search_batch_json_into_closed_pipe(workspace: Path, tmp_path: Path) -> None:
    batch = tmp_path / "queries.jsonl"
    # Far more output than a pipe buffer holds, so writes go on after the reader left.
    batch.write_text(
        "".join(json.dumps({"id": i, "query": "billing database"}) + "\n" for i in range(3000))
    )
    env = cli_env(ENHANCED_MEMORY_EMBEDDER="none", ENHANCED_MEMORY_LOG="0")
    proc = subprocess.Popen(
        [*CLI, "search", "--batch", str(batch), "--workspace", str(workspace), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    assert json.loads(first)["id"] == 0
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
