"""The resident engine as real processes: one-shot searches answered by it, edits seen, and a
stale, dead, foreign or second engine detected instead of trusted."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from langchain_enhanced_memory.servers import client
from langchain_enhanced_memory.store.locations import resident_files
from tests.cli_run import CLI, cli_env, run_cli
from tests.integration_tests.test_skill_scripts import SCHEMA

ON = {"ENHANCED_MEMORY_DAEMON": "1"}


def _status(ws: Path) -> dict | None:
    r = run_cli("daemon", "status", "--workspace", str(ws), "--json", **ON)
    return json.loads(r.stdout) if r.returncode == 0 else None


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _wait_gone(pid: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        # A child of ours (a direct `daemon run`) is a zombie until reaped.
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} still running")


@pytest.fixture
def resident(workspace: Path) -> Iterator[dict]:
    r = run_cli("daemon", "start", "--workspace", str(workspace), "--json", **ON)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    try:
        yield info
    finally:
        run_cli("daemon", "stop", "--workspace", str(workspace), **ON)
        _kill(info["pid"])


def _search(ws: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "search", "--workspace", str(ws), "--embedder", "none", "--now", "2026-02-09T09:00",
        *args, **{**ON, **env},
    )  # fmt: skip


def _untimed(stdout: str) -> dict:
    doc = json.loads(stdout)
    doc["debug"] = {k: v for k, v in doc["debug"].items() if k not in ("searchMs", "timings")}
    return doc


def test_one_shot_searches_are_answered_by_the_resident_engine(workspace, resident) -> None:
    sock = Path(resident["socket"])
    assert sock == workspace.resolve() / ".enhanced-memory" / "resident.sock"
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    local = _search(workspace, "billing database", "--json", "--no-daemon")
    routed = _search(workspace, "billing database", "--json")
    assert routed.returncode == 0, routed.stderr
    # The same answer as in-process (debug's timings are each run's own).
    assert _untimed(routed.stdout) == _untimed(local.stdout)
    jsonschema.validate(json.loads(routed.stdout), SCHEMA, cls=jsonschema.Draft202012Validator)
    text = _search(workspace, "billing database")
    assert text.returncode == 0 and "memory/2026-02-08.md" in text.stdout
    assert "embedder: none" in text.stderr
    bad = _search(workspace, "billing", "--k", "0", "--json")
    assert bad.returncode == 2 and json.loads(bad.stdout)["disabled"] is True
    assert _status(workspace)["requests"] == 3  # --no-daemon did not go there


def test_an_edit_is_in_the_next_routed_search(workspace, resident) -> None:
    assert _search(workspace, "billing").returncode == 0
    with open(workspace / "memory/2026-02-08.md", "a", encoding="utf-8") as fh:
        fh.write("\nThe capybara launch moved to Friday.\n")
    r = _search(workspace, "capybara", "--json")
    assert json.loads(r.stdout)["results"][0]["path"] == "memory/2026-02-08.md"
    (workspace / "memory/2026-02-08.md").unlink()
    r = _search(workspace, "capybara", "--json")
    assert all(x["path"] != "memory/2026-02-08.md" for x in json.loads(r.stdout)["results"])
    assert _status(workspace)["requests"] == 3


def test_skill_script_goes_through_the_resident_engine(workspace, resident) -> None:
    from tests.integration_tests.test_skill_scripts import script

    r = run_cli("skill", "install", "--workspace", str(workspace))
    assert r.returncode == 0, r.stderr
    skill = workspace / "skills" / "enhanced-memory"
    r = script(skill, "enhanced_memory_search.py", "--json", "billing database",
               cwd=workspace, ENHANCED_MEMORY_EMBEDDER="none", **ON)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["results"][0]["path"] == "memory/2026-02-08.md"
    assert _status(workspace)["requests"] == 1


def test_a_dead_engine_is_replaced_not_trusted(workspace, resident) -> None:
    _kill(resident["pid"])
    _wait_gone(resident["pid"])
    assert Path(resident["socket"]).exists()  # left behind by the kill
    r = _search(workspace, "billing", "--json")  # answered in-process
    assert r.returncode == 0 and json.loads(r.stdout)["results"]
    r = run_cli("daemon", "start", "--workspace", str(workspace), "--json", **ON)
    assert r.returncode == 0, r.stderr
    fresh = json.loads(r.stdout)
    try:
        assert fresh["pid"] != resident["pid"]
        assert _search(workspace, "billing").returncode == 0
        assert _status(workspace)["requests"] == 1
    finally:
        run_cli("daemon", "stop", "--workspace", str(workspace), **ON)
        _kill(fresh["pid"])


def test_an_engine_of_another_version_steps_aside(workspace, resident) -> None:
    files = resident_files(workspace)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect(str(files.socket))
        old = {"op": "status", "version": "0.0.1", "location": "/old"}
        s.sendall(json.dumps(old).encode() + b"\n")
        reply = json.loads(s.recv(1 << 16))
    assert "another version" in reply["refused"]
    _wait_gone(resident["pid"])
    assert not files.socket.exists()
    assert _search(workspace, "billing").returncode == 0  # in-process meanwhile


def test_a_foreign_socket_is_not_trusted(workspace: Path) -> None:
    files = resident_files(workspace, create=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(str(files.socket))
        os.chmod(files.socket, 0o666)  # anyone could have put this here
        s.listen(1)
        with pytest.raises(OSError):
            client.request(files, {"op": "status"}, timeout_s=5)
        r = _search(workspace, "billing", "--json", timeout=60)
        assert r.returncode == 0 and json.loads(r.stdout)["results"]


def test_two_engines_started_at_once_end_as_one(workspace: Path) -> None:
    cmd = [*CLI, "daemon", "run", "--workspace", str(workspace)]
    procs = [
        subprocess.Popen(
            cmd, env=cli_env(**ON), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )  # fmt: skip
        for _ in range(2)
    ]
    try:
        deadline = time.monotonic() + 60
        while all(p.poll() is None for p in procs) and time.monotonic() < deadline:
            time.sleep(0.05)
        loser = next(p for p in procs if p.poll() is not None)
        winner = next(p for p in procs if p is not loser)
        assert loser.returncode == 2
        assert "already serves" in loser.stderr.read()
        assert winner.poll() is None
        assert _status(workspace)["pid"] == winner.pid
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(30)
            if p.stderr:
                p.stderr.close()
    assert not resident_files(workspace).socket.exists()  # SIGTERM removes it


def test_an_idle_engine_exits_on_its_own(workspace: Path) -> None:
    proc = subprocess.Popen(
        [*CLI, "daemon", "run", "--workspace", str(workspace), "--idle-timeout", "1"],
        env=cli_env(**ON), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_an_engine_whose_workspace_is_deleted_exits(tmp_path: Path) -> None:
    ws = tmp_path / "doomed"
    ws.mkdir()
    (ws / "MEMORY.md").write_text("# Notes\n\nA workspace about to be deleted.\n")
    proc = subprocess.Popen(
        [*CLI, "daemon", "run", "--workspace", str(ws)],
        env=cli_env(**ON), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        client.wait_until(lambda: _status(ws) is not None, "it did not answer")
        shutil.rmtree(ws)
        assert proc.wait(timeout=60) == 0  # no idle timeout: it left because the folder went
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_local_model_starts_one_automatically(workspace: Path) -> None:
    # A query that loaded the local model starts the engine for the next ones.
    r = run_cli("search", "--workspace", str(workspace), "--embedder", "local", "billing",
                "--json", **ON)  # fmt: skip
    assert r.returncode == 0, r.stderr
    deadline = time.monotonic() + 60
    status = None
    while status is None and time.monotonic() < deadline:
        status = _status(workspace)
        time.sleep(0.1)
    assert status is not None, "no resident engine started"
    try:
        assert status["idle_timeout_s"] == client.AUTO_IDLE_S
        # Said once, on stderr: what started, how to stop it, how not to start one.
        notice = [line for line in r.stderr.splitlines() if "resident engine" in line]
        assert len(notice) == 1, r.stderr
        assert f"daemon stop --workspace {workspace.resolve()}" in notice[0]
        assert "ENHANCED_MEMORY_DAEMON=0" in notice[0] and "15 min" in notice[0]
        r = run_cli("search", "--workspace", str(workspace), "--embedder", "local", "billing",
                    "--json", **ON)  # fmt: skip
        assert json.loads(r.stdout)["provider"] == "local"
        assert "resident engine" not in r.stderr
        assert _status(workspace)["requests"] == 1
    finally:
        run_cli("daemon", "stop", "--workspace", str(workspace), **ON)
        _kill(status["pid"])


def test_opting_out_starts_nothing(workspace: Path) -> None:
    r = run_cli("search", "--workspace", str(workspace), "--embedder", "local", "billing",
                "--no-daemon", **ON)  # fmt: skip
    assert r.returncode == 0
    time.sleep(1.0)
    assert _status(workspace) is None


def test_serve_daemon_starts_it_and_daemon_stop_ends_it(workspace: Path) -> None:
    r = run_cli("serve", "--daemon", "--workspace", str(workspace), "--json", **ON)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    try:
        assert info["idle_timeout_s"] is None  # an explicit start stays until stopped
        assert _status(workspace)["pid"] == info["pid"]
        again = run_cli("serve", "--daemon", "--workspace", str(workspace), "--json", **ON)
        assert json.loads(again.stdout)["pid"] == info["pid"]  # one per workspace
        r = run_cli("daemon", "stop", "--workspace", str(workspace), **ON)
        assert r.returncode == 0 and f"pid {info['pid']}" in r.stdout
        _wait_gone(info["pid"])
        assert _status(workspace) is None
    finally:
        _kill(info["pid"])


def test_relative_workspaces_from_different_folders_are_different_workspaces(
    tmp_path: Path, resident, workspace: Path
) -> None:
    # Two callers name "ws" from different folders: each must get its own workspace.
    other = tmp_path / "elsewhere"
    (other / "ws" / "memory").mkdir(parents=True)
    (other / "ws" / "MEMORY.md").write_text("# Pets\n\nThe axolotl is called Pablo.\n")
    here = run_cli("search", "--workspace", "ws", "--embedder", "none", "--json", "billing",
                   cwd=workspace.parent, **ON)  # fmt: skip
    assert json.loads(here.stdout)["results"][0]["path"] == "memory/2026-02-08.md"
    assert _status(workspace)["requests"] == 1
    # "ws" from elsewhere is another workspace: answered in-process (no engine serves it).
    there = run_cli("search", "--workspace", "ws", "--embedder", "none", "--json", "axolotl",
                    cwd=other, **ON)  # fmt: skip
    assert json.loads(there.stdout)["results"][0]["path"] == "MEMORY.md"
    assert _status(workspace)["requests"] == 1
    engines = _status(workspace)["engines"]
    assert [e["index"] for e in engines] == [str(workspace / ".enhanced-memory/index.sqlite")]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_an_engine_whose_index_folder_goes_exits_and_one_engine_serves(
    workspace: Path, resident: dict, how: str
) -> None:
    # `make clean` deletes the index folder: the old engine kept its files open and a
    # second engine started beside it, which `daemon stop` stopped alone.
    shutil.rmtree(workspace / ".enhanced-memory")
    if how == "replaced":
        assert run_cli("index", "--workspace", str(workspace), "--embedder", "none").returncode == 0
    _wait_gone(resident["pid"])
    r = run_cli("daemon", "start", "--workspace", str(workspace), "--json", **ON)
    assert r.returncode == 0, r.stderr
    fresh = json.loads(r.stdout)
    try:
        assert fresh["pid"] != resident["pid"]
        assert _search(workspace, "billing").returncode == 0
        assert _status(workspace)["requests"] == 1
        r = run_cli("daemon", "stop", "--workspace", str(workspace), **ON)
        assert f"pid {fresh['pid']}" in r.stdout
        _wait_gone(fresh["pid"])
    finally:
        _kill(fresh["pid"])


def test_no_second_engine_starts_beside_a_live_one(workspace: Path, resident: dict) -> None:
    # Frozen, the first engine cannot notice that its index folder went: a second one
    # must still not start beside it (its lock is not in that folder).
    os.kill(resident["pid"], signal.SIGSTOP)
    try:
        shutil.rmtree(workspace / ".enhanced-memory")
        second = subprocess.run(
            [*CLI, "daemon", "run", "--workspace", str(workspace)],
            env=cli_env(**ON), capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert second.returncode == 2 and "already serves" in second.stderr
    finally:
        os.kill(resident["pid"], signal.SIGCONT)
    _wait_gone(resident["pid"])  # awake, it sees its folder gone and leaves
    assert not (workspace / ".enhanced-memory" / "resident.sock").exists()


def test_an_engine_whose_other_index_folder_goes_exits(
    tmp_path: Path, workspace: Path, resident: dict
) -> None:
    # An index kept elsewhere (--index): the socket stays, only the index folder's
    # identity tells the engine that the files it holds open were deleted.
    index = tmp_path / "elsewhere" / "index.sqlite"
    assert _search(workspace, "billing", "--index", str(index)).returncode == 0
    assert _status(workspace)["requests"] == 1
    shutil.rmtree(index.parent)
    _wait_gone(resident["pid"])
