"""The OpenClaw skill folder: installed by ``skill install``, its scripts run as processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from tests.cli_run import CLI, NO_DAEMON
from tests.fake_ollama import FakeOllama

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads(
    resources.files("langchain_enhanced_memory")
    .joinpath("openclaw/schema/memory_search.schema.json")
    .read_text(encoding="utf-8")
)
SCRIPTS = (
    "enhanced_memory_search.py",
    "search_memory.py",
    "embed_memories.py",
    "memory_salience.py",
    "crossref_memories.py",
)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENHANCED_MEMORY_")}
    env.update(NO_DAEMON)
    for name in ("OPENCLAW_WORKSPACE_DIR", "MEMORY_DIR", "EMBED_MODEL", "OLLAMA_URL"):
        env.pop(name, None)
    env.update(extra)
    return env


@pytest.fixture
def skill(workspace: Path) -> Path:
    r = subprocess.run(
        [*CLI, "skill", "install", "--workspace", str(workspace), "--json"],
        capture_output=True, text=True, env=clean_env(), timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert Path(out["skill"]) == workspace / "skills" / "enhanced-memory"
    return Path(out["skill"])


def script(
    skill: Path, name: str, *args: str, cwd: Path, **env: str
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(skill / "scripts" / name), *args],
        capture_output=True, text=True, cwd=cwd, env=clean_env(**env), timeout=120,
    )  # fmt: skip


def test_install_writes_skill_md_and_all_scripts(skill: Path) -> None:
    text = (skill / "SKILL.md").read_text(encoding="utf-8")
    assert text.startswith("---\nname: enhanced-memory\ndescription: ")
    front = text.split("---\n")[1]
    meta = next(line for line in front.splitlines() if line.startswith("metadata: "))
    assert "openclaw" in json.loads(meta.removeprefix("metadata: "))
    for name in SCRIPTS:
        path = skill / "scripts" / name
        assert os.access(path, os.X_OK), name
        assert f"{{baseDir}}/scripts/{name}" in text, name


def test_json_search_script_output_matches_schema(skill: Path, workspace: Path, tmp_path: Path):
    # Run from elsewhere: the script finds its workspace from where it is installed.
    r = script(skill, "enhanced_memory_search.py", "--json", "billing database Postgres",
               cwd=tmp_path, ENHANCED_MEMORY_EMBEDDER="none")  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert doc["results"][0]["path"] == "memory/2026-02-08.md"


def test_search_script_with_ollama_and_top_n(
    skill: Path, workspace: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    r = script(skill, "embed_memories.py", "--json", cwd=tmp_path, OLLAMA_URL=fake_ollama.url)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["provider"] == "ollama" and info["embedded"] == info["chunks"] > 0
    r = script(skill, "search_memory.py", "ramen lunch", "2", cwd=tmp_path,
               OLLAMA_URL=fake_ollama.url)  # fmt: skip
    assert r.returncode == 0, r.stderr
    ranked = [line for line in r.stdout.splitlines() if line[:2] in ("1.", "2.", "3.")]
    assert len(ranked) == 2 and "memory/2026-02-08.md" in ranked[0]
    r = script(skill, "enhanced_memory_search.py", "--json", "ramen", cwd=tmp_path,
               OLLAMA_URL=fake_ollama.url)  # fmt: skip
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert doc["provider"] == "ollama" and doc["fallback"] is None


def test_salience_and_crossref_scripts(
    skill: Path, workspace: Path, tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    r = script(skill, "memory_salience.py", "--top", "2", "--json", cwd=tmp_path,
               ENHANCED_MEMORY_EMBEDDER="none")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "items" in json.loads(r.stdout)
    for args in (("build",), ("graph",), ("show", "memory/2026-02-08.md")):
        r = script(skill, "crossref_memories.py", *args, "--json", cwd=tmp_path,
                   OLLAMA_URL=fake_ollama.url)  # fmt: skip
        assert r.returncode == 0, (args, r.stderr)
        json.loads(r.stdout)


def test_memory_dir_env_points_the_scripts_elsewhere(skill: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    (other / "memory").mkdir(parents=True)
    (other / "memory" / "2026-01-01.md").write_text(
        "# 2026-01-01\n\n## Party\n\nNew year party at the lighthouse.\n", encoding="utf-8"
    )
    r = script(skill, "enhanced_memory_search.py", "--json", "lighthouse party", cwd=tmp_path,
               MEMORY_DIR=str(other / "memory"), ENHANCED_MEMORY_EMBEDDER="none")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["results"][0]["path"] == "memory/2026-01-01.md"


def test_script_failure_is_the_failure_shape(skill: Path, tmp_path: Path) -> None:
    r = script(skill, "enhanced_memory_search.py", "--json", "x", cwd=tmp_path,
               MEMORY_DIR=str(tmp_path / "nowhere" / "memory"))  # fmt: skip
    assert r.returncode == 2
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert doc["unavailable"] is True and "Traceback" not in r.stderr


def test_reinstall_keeps_edited_files_unless_forced(skill: Path, workspace: Path) -> None:
    (skill / "SKILL.md").write_text("edited", encoding="utf-8")
    cmd = [*CLI, "skill", "install", "--workspace", str(workspace)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=clean_env(), timeout=60)
    assert r.returncode == 2 and "--force" in r.stderr and "Traceback" not in r.stderr
    assert (skill / "SKILL.md").read_text(encoding="utf-8") == "edited"
    r = subprocess.run([*cmd, "--force"], capture_output=True, text=True, env=clean_env())
    assert r.returncode == 0, r.stderr
    assert (skill / "SKILL.md").read_text(encoding="utf-8").startswith("---\nname: enhanced-memory")


def test_scripts_run_the_recorded_venv_when_openclaw_calls_a_bare_python3(
    skill: Path, workspace: Path, tmp_path: Path
) -> None:
    # OpenClaw runs `python3 script.py`: a python3 without the package whose binary is the
    # same file as the venv's (a venv's bin/python3 links to it). `skill install` recorded
    # the venv's interpreter; the launcher must tell the two apart by environment.
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True,
                   timeout=120)  # fmt: skip
    python3 = bare / "bin" / "python3"
    assert os.path.realpath(python3) == os.path.realpath(sys.executable)
    probe = subprocess.run([str(python3), "-c", "import langchain_enhanced_memory"],
                           cwd=tmp_path, capture_output=True, timeout=60)  # fmt: skip
    assert probe.returncode != 0  # this python3 really lacks the package
    assert (skill / "scripts" / ".python").read_text().strip() == sys.executable
    r = subprocess.run(
        [str(python3), str(skill / "scripts" / "enhanced_memory_search.py"), "--json", "billing"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
        env=clean_env(ENHANCED_MEMORY_EMBEDDER="none"),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert doc["results"][0]["path"] == "memory/2026-02-08.md"
