"""Run ``enhanced-memory`` as a child process, as a user would, for the process tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, "-m", "langchain_enhanced_memory.cli"]
# What would point the child at the developer's own workspace, embedder or settings.
_INHERITED = ("MEMORY_DIR", "OLLAMA_URL", "EMBED_MODEL")


#: No child may start a resident engine that outlives the test (the daemon tests opt in).
NO_DAEMON = {"ENHANCED_MEMORY_DAEMON": "0"}


def cli_env(**extra: str) -> dict[str, str]:
    """This process's environment without the workspace, embedder and settings it may hold."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENCLAW_", "ENHANCED_")) and k not in _INHERITED
    }
    env.update(NO_DAEMON)
    env.update(extra)
    return env


def run_cli(
    *args: str, timeout: float = 120, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run ``enhanced-memory ARGS`` to completion (``env`` adds variables to :func:`cli_env`)."""
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env=cli_env(**env),
        timeout=timeout,
    )


def stop(proc: subprocess.Popen[str], timeout: float = 20) -> None:
    """Ask a child to stop (SIGTERM), kill it if it has not within ``timeout``."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
