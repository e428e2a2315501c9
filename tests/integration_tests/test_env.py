"""The original's env (MEMORY_DIR, OLLAMA_URL, EMBED_MODEL) and ours: flag > env > default."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_run import CLI, cli_env, run_cli
from tests.fake_ollama import FakeOllama, unused_port
from tests.workspaces import write_workspace

ENV_NAMES = (
    "OPENCLAW_WORKSPACE_DIR",
    "MEMORY_DIR",
    "EMBED_MODEL",
    "OLLAMA_URL",
    "OLLAMA_HOST",
    "ENHANCED_MEMORY_EMBEDDER",
    "ENHANCED_MEMORY_PROFILE",
    "ENHANCED_MEMORY_INDEX",
)


def search(*args: str, cwd: Path | None = None, **env: str) -> dict:
    full = {k: v for k, v in os.environ.items() if k not in ENV_NAMES}
    full.update(env)
    r = subprocess.run(
        [*CLI, "search", "--json", *args], capture_output=True, text=True, env=full,
        cwd=cwd, timeout=120,
    )  # fmt: skip
    doc = json.loads(r.stdout)
    doc["_rc"], doc["_stderr"] = r.returncode, r.stderr
    return doc


@pytest.fixture
def other(tmp_path: Path) -> Path:
    """A second workspace whose only note mentions a lighthouse."""
    return write_workspace(
        tmp_path / "other",
        {"memory/2026-01-01.md": "# 2026-01-01\n\n## Party\n\nNew year party at the lighthouse.\n"},
    )


def top_path(doc: dict) -> str | None:
    return doc["results"][0]["path"] if doc["results"] else None


def test_memory_dir_names_the_memory_folder(other: Path, tmp_path: Path) -> None:
    doc = search("lighthouse", cwd=tmp_path, MEMORY_DIR=str(other / "memory"),
                 ENHANCED_MEMORY_EMBEDDER="none")  # fmt: skip
    assert doc["_rc"] == 0, doc["_stderr"]
    assert top_path(doc) == "memory/2026-01-01.md"


def test_workspace_precedence(workspace: Path, other: Path, tmp_path: Path) -> None:
    # --workspace beats OPENCLAW_WORKSPACE_DIR, which beats MEMORY_DIR.
    env = {"ENHANCED_MEMORY_EMBEDDER": "none", "MEMORY_DIR": str(other / "memory")}
    doc = search("ramen", cwd=tmp_path, OPENCLAW_WORKSPACE_DIR=str(workspace), **env)
    assert top_path(doc) == "memory/2026-02-08.md"
    doc = search("lighthouse", "--workspace", str(other), cwd=tmp_path,
                 OPENCLAW_WORKSPACE_DIR=str(workspace), **env)  # fmt: skip
    assert top_path(doc) == "memory/2026-01-01.md"
    # Without any: the current folder.
    doc = search("ramen", cwd=workspace, ENHANCED_MEMORY_EMBEDDER="none")
    assert top_path(doc) == "memory/2026-02-08.md"


def test_ollama_url_in_the_originals_full_form(workspace: Path, fake_ollama: FakeOllama) -> None:
    doc = search("ramen", "--workspace", str(workspace), "--embedder", "ollama",
                 OLLAMA_URL=f"{fake_ollama.url}/api/embed")  # fmt: skip
    assert doc["_rc"] == 0, doc["_stderr"]
    assert (doc["provider"], doc["fallback"]) == ("ollama", None)
    assert fake_ollama.calls > 0


def test_ollama_url_flag_beats_env(workspace: Path, fake_ollama: FakeOllama) -> None:
    dead = f"http://127.0.0.1:{unused_port()}"
    doc = search("ramen", "--workspace", str(workspace), "--embedder", "ollama",
                 "--ollama-url", fake_ollama.url, OLLAMA_URL=dead)  # fmt: skip
    assert doc["fallback"] is None
    doc = search("ramen", "--workspace", str(workspace), "--embedder", "ollama",
                 "--ollama-url", dead, OLLAMA_URL=fake_ollama.url)  # fmt: skip
    assert doc["fallback"] == "keyword-only"


def test_embed_model_env_and_flag(workspace: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.models += ["mxbai-embed-large:latest", "all-minilm:latest"]
    base = ("ramen", "--workspace", str(workspace), "--embedder", "ollama",
            "--ollama-url", fake_ollama.url)  # fmt: skip
    assert search(*base)["model"] == "nomic-embed-text"
    assert search(*base, EMBED_MODEL="mxbai-embed-large")["model"] == "mxbai-embed-large"
    doc = search(*base, "--model", "all-minilm", EMBED_MODEL="mxbai-embed-large")
    assert (doc["model"], doc["fallback"]) == ("all-minilm", None)


def test_embedder_env_and_flag(workspace: Path, fake_ollama: FakeOllama) -> None:
    doc = search("ramen", "--workspace", str(workspace), ENHANCED_MEMORY_EMBEDDER="none",
                 OLLAMA_URL=fake_ollama.url)  # fmt: skip
    assert doc["provider"] == "none" and fake_ollama.calls == 0
    doc = search("ramen", "--workspace", str(workspace), "--embedder", "ollama",
                 ENHANCED_MEMORY_EMBEDDER="none", OLLAMA_URL=fake_ollama.url)  # fmt: skip
    assert doc["provider"] == "ollama" and fake_ollama.calls > 0


def test_bad_embedder_env_is_one_line(workspace: Path) -> None:
    doc = search("ramen", "--workspace", str(workspace), ENHANCED_MEMORY_EMBEDDER="bert")
    assert doc["_rc"] == 2 and doc["unavailable"] is True
    assert "unknown embedder" in doc["error"] and "Traceback" not in doc["_stderr"]


def test_a_childs_host_id_is_kept_in_the_runs_temp_folder(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # A publish makes this host's id; a test run must not write it into ~/.local/state.
    state = Path(os.environ["XDG_STATE_HOME"])
    assert state.is_relative_to(tmp_path_factory.getbasetemp())
    code = (  # as an entry point does: the store reads no environment
        "from langchain_enhanced_memory.config import load; load()\n"
        "from langchain_enhanced_memory.store.locations import host_id; print(host_id())"
    )
    child = subprocess.run(
        [sys.executable, "-c", code], env=cli_env(), capture_output=True, text=True, check=True
    )
    kept = state / "enhanced-memory" / "host-id"
    assert kept.read_text(encoding="ascii").strip() == child.stdout.strip()


def status(workspace: Path, *args: str, **env: str) -> dict:
    r = subprocess.run(
        [*CLI, "status", "--workspace", str(workspace), "--json", *args],
        capture_output=True, text=True, env=cli_env(ENHANCED_MEMORY_EMBEDDER="none", **env),
        timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_profile_env_and_flag(workspace: Path) -> None:
    assert status(workspace)["profile"] == "default"
    assert status(workspace, ENHANCED_MEMORY_PROFILE="bm25")["profile"] == "bm25"
    doc = status(workspace, "--profile", "original", ENHANCED_MEMORY_PROFILE="bm25")
    assert doc["profile"] == "original"


def test_session_dirs_env_adds_transcript_folders_to_the_flags(
    workspace: Path, tmp_path: Path
) -> None:
    turn = {"role": "user", "content": "the zeppelin hangar", "timestamp": "2026-02-09T10:00Z"}
    for name in ("agent", "other"):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"{name}.jsonl").write_text(json.dumps(turn) + "\n")
    base = ("zeppelin", "--workspace", str(workspace), "--embedder", "none")
    assert search(*base)["results"] == []
    doc = search(*base, ENHANCED_MEMORY_SESSION_DIRS=str(tmp_path / "agent"))
    assert [r["path"] for r in doc["results"]] == ["sessions/agent/agent.jsonl"]
    doc = search(*base, "--sessions", str(tmp_path / "other"),
                 ENHANCED_MEMORY_SESSION_DIRS=str(tmp_path / "agent"))  # fmt: skip
    assert sorted(r["path"] for r in doc["results"]) == [
        "sessions/agent/agent.jsonl",
        "sessions/other/other.jsonl",
    ]


def test_log_env_switches_the_query_log(workspace: Path) -> None:
    log = workspace / ".enhanced-memory" / "query_log.json"
    base = ("ramen", "--workspace", str(workspace), "--embedder", "none")
    assert search(*base, ENHANCED_MEMORY_LOG="0")["_rc"] == 0
    assert not log.exists()
    assert search(*base)["_rc"] == 0
    assert [e["query"] for e in json.loads(log.read_text())] == ["ramen"]


def test_xdg_cache_home_holds_a_read_only_workspaces_index(workspace: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    for folder in (workspace / "memory", workspace):
        folder.chmod(0o555)
    try:
        doc = search("ramen", "--workspace", str(workspace), "--embedder", "none",
                     XDG_CACHE_HOME=str(cache))  # fmt: skip
    finally:
        for folder in (workspace, workspace / "memory"):
            folder.chmod(0o755)
    assert doc["_rc"] == 0 and doc["results"], doc["_stderr"]
    assert not (workspace / ".enhanced-memory").exists()
    assert list((cache / "enhanced-memory").glob("*/index.sqlite"))


def test_runtime_dir_and_daemon_timeout_reach_the_resident_engine_and_its_callers(
    workspace: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    env = {"ENHANCED_MEMORY_DAEMON": "1", "XDG_RUNTIME_DIR": str(run)}
    started = run_cli("daemon", "start", "--workspace", str(workspace), "--json", **env)
    assert started.returncode == 0, started.stderr
    pid = json.loads(started.stdout)["pid"]
    try:
        # The engine's lock is in $XDG_RUNTIME_DIR/enhanced-memory/, and callers find it.
        assert len(list((run / "enhanced-memory").glob("resident-*.lock"))) == 1
        base = ("search", "ramen", "--workspace", str(workspace), "--embedder", "none", "--json")
        assert run_cli(*base, **env).returncode == 0
        assert _requests(workspace, env) == 1
        # A timeout that is not a number: the caller answers itself, as when none runs.
        answered = run_cli(*base, ENHANCED_MEMORY_DAEMON_TIMEOUT="soon", **env)
        assert answered.returncode == 0 and json.loads(answered.stdout)["results"]
        assert _requests(workspace, env) == 1
    finally:
        run_cli("daemon", "stop", "--workspace", str(workspace), **env)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _requests(workspace: Path, env: dict[str, str]) -> int:
    r = run_cli("daemon", "status", "--workspace", str(workspace), "--json", **env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["requests"]


def test_log_env_holds_for_a_library_user_of_memory_search(workspace: Path) -> None:
    # No command ran: the package's first public name reads the process-wide variables.
    log = workspace / ".enhanced-memory" / "query_log.json"
    script = (
        "import sys\n"
        "from langchain_enhanced_memory import MemorySearch\n"
        "with MemorySearch(sys.argv[1], embedder='none') as s:\n"
        "    print(len(s.search('ramen').hits))\n"
        "from langchain_enhanced_memory.store import logs\n"
        "logs.flush()\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ENV_NAMES}
    for value, logged in (("0", False), ("1", True)):
        r = subprocess.run(
            [sys.executable, "-c", script, str(workspace)], capture_output=True, text=True,
            env={**env, "ENHANCED_MEMORY_LOG": value}, timeout=120,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert log.exists() is logged
