"""An index file that cannot be opened is one clear line and exit 2, not a class name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def test_unopenable_index_is_a_clear_error(workspace: Path, tmp_path: Path) -> None:
    env = {**os.environ, "ENHANCED_MEMORY_EMBEDDER": "none"}
    bad = tmp_path / "not-a-folder"
    bad.write_text("a file where the index folder should be")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "langchain_enhanced_memory.cli",
            "search",
            "ramen",
            "--workspace",
            str(workspace),
            "--index",
            str(bad / "index.sqlite"),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert json.loads(r.stdout)["unavailable"] is True
