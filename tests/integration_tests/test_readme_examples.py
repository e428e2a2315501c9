"""The README's examples run: a renamed argument or flag breaks a test, not a user.

Every fenced ```python block runs as a script and every ```bash block runs line
by line as ``enhanced-memory`` processes (``tests.cli_run``), or, for a
``python3 SCRIPT`` line, as the system ``python3`` a user would call, both in a
fresh copy of ``examples/workspace`` (the README's paths are relative to the
repository root), offline. A ```json block must parse. A block that cannot
run here (an install, a benchmark on data not in the repository) carries a
``<!-- skip-example: why -->`` line right above it; ```console and other
languages are never run.

Running is not enough: a search or a ``get`` must find something and a Python
block must print a result that is not empty, because the text around each
example promises one. Run in order, as a newcomer pastes them, the blocks
leave nothing in the tree that ``make clean`` does not remove. The shared
memory page (``docs/shared-memory.md``) runs the same way, in order, against a
PostgreSQL database named by ``$ENHANCED_MEMORY_DATABASE_URL``, as after
``make postgres``.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli_run import cli_env, run_cli

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SHARED = ROOT / "docs" / "shared-memory.md"
SKIP = re.compile(r"<!--\s*skip-example:\s*(\S.*?)\s*-->")
FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block of the README."""

    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    skip: str | None  # the reason given by a skip-example marker

    page: str = "README.md"

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}:{self.lang}"


def blocks(text: str, page: str = "README.md") -> list[Block]:
    """The fenced blocks of a markdown text, with the skip marker above each."""
    lines = text.splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        above = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = SKIP.search(above)
        text_of = "\n".join(lines[i + 1 : end])
        out.append(Block(i + 1, opening[1], text_of, marker[1] if marker else None, page))
        i = end + 1
    return out


def commands(script: str) -> list[list[str]]:
    """A bash block's command lines (continuations joined, comments dropped)."""
    joined = re.sub(r"\\\n\s*", " ", script)
    return [argv for line in joined.splitlines() if (argv := shlex.split(line, comments=True))]


def runnable(page: Path) -> list[Block]:
    """The blocks of ``page`` the suite runs, in the page's order."""
    found = blocks(page.read_text(encoding="utf-8"), page.relative_to(ROOT).as_posix())
    return [b for b in found if b.skip is None and b.lang in ("python", "bash", "json")]


README_BLOCKS = blocks(README.read_text(encoding="utf-8"))
RUN = runnable(README)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A folder laid out like a fresh clone's root: the demo workspace's tracked files only."""
    root = tmp_path / "repo"
    tracked = subprocess.run(
        ["git", "ls-files", "-z", "--", "examples/workspace"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, tracked.split("\0")):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, root / name)
    return root


def _env(block_or_page: str, repo: Path, request: pytest.FixtureRequest) -> dict[str, str]:
    """What every example's process gets: a cache outside the tree, and a database when asked."""
    env = {"XDG_CACHE_HOME": str(repo.parent / "cache")}
    if "scope" in block_or_page:  # shared memory: a fresh database, as `make postgres` gives
        env["ENHANCED_MEMORY_DATABASE_URL"] = request.getfixturevalue("database_url")
    return env


def shows_nothing(argv: list[str], stdout: str, stderr: str = "") -> str | None:
    """Why a command's output fails the result its text promises (None: it shows one).

    A search must return a result (``--json``: a non-empty ``results``), a ``get``
    some text, and every other command must print something (``export`` says
    what it wrote on stderr).
    """
    name = Path(argv[1]).name if argv[0] == "python3" else argv[1]
    searches = name in ("search", "enhanced_memory_search.py", "search_memory.py")
    if "--json" in argv and (searches or name == "get"):
        answer = json.loads(stdout)
        if searches and not answer["results"]:
            return f"no results: {answer.get('warning', '')}"
        if name == "get" and not answer["text"]:
            return "no text"
        return None
    if searches and stdout.startswith("no results"):
        return f"printed {stdout.strip()!r}"
    if not stdout.strip() and not (stderr.strip() and not (searches or name == "get")):
        return f"printed {stdout.strip()!r}"
    return None


def run_block(block: Block, repo: Path, env: dict[str, str]) -> str:
    """Run one block as a user would paste it in ``repo``; fail on an error or an empty answer.

    Returns:
        What the block printed on stdout.
    """
    printed: list[str] = []
    if block.lang == "json":
        json.loads(block.text)
    elif block.lang == "python":
        # `auto` finds no Ollama here (its URL points at a closed port) and uses what is installed.
        r = subprocess.run(
            [sys.executable, "-c", block.text],
            capture_output=True,
            text=True,
            encoding="utf-8",
            cwd=repo,
            env=cli_env(OLLAMA_URL="http://127.0.0.1:9", **env),
            timeout=240,
        )
        assert r.returncode == 0, f"{block.id}: {r.stderr[-2000:]}"
        shown = r.stdout.strip().splitlines()
        assert shown, f"{block.id}: a README example should show its result"
        for line in shown:  # an empty list or the tool's "no match" is not the promised result
            assert line != "[]" and not line.startswith("No memory matches"), f"{block.id}: {line}"
        printed.append(r.stdout)
    else:
        for argv in commands(block.text):
            if argv[0] == "python3":  # an installed skill script, run as OpenClaw runs it
                python3 = shutil.which("python3") or sys.executable
                r = subprocess.run(
                    [python3, *argv[1:]],
                    capture_output=True,
                    text=True,
                    encoding="utf-8",
                    cwd=repo,
                    env=cli_env(ENHANCED_MEMORY_EMBEDDER="none", **env),
                    timeout=120,
                )
            else:
                assert argv[0] == "enhanced-memory", f"{block.id}: mark {argv[0]!r} skip-example"
                r = run_cli(*argv[1:], cwd=repo, ENHANCED_MEMORY_EMBEDDER="none", **env)
            assert r.returncode == 0, f"{shlex.join(argv)}: {r.stderr[-2000:]}"
            empty = shows_nothing(argv, r.stdout, r.stderr)
            assert empty is None, f"{block.id}: {shlex.join(argv)}: {empty}"
            printed.append(r.stdout)
    return "".join(printed)


def test_the_readme_has_examples_that_run() -> None:
    langs = [b.lang for b in RUN]
    assert langs.count("python") >= 3 and langs.count("bash") >= 2 and "json" in langs
    for b in README_BLOCKS:  # a block the suite does not run says why, or is not code to run
        assert b.skip is not None or b.lang in ("python", "bash", "json", "console", "text"), b.id


def test_blocks_and_markers_are_read() -> None:
    text = "a\n\n<!-- skip-example: needs a model -->\n```bash\nx \\\n  --y 1  # note\n```\n"
    text += "```python\nprint(1)\n```\n"
    found = blocks(text)
    assert [(b.line, b.lang, b.skip) for b in found] == [
        (4, "bash", "needs a model"),
        (8, "python", None),
    ]
    assert commands(found[0].text) == [["x", "--y", "1"]]


def test_an_empty_answer_is_told_apart() -> None:
    search = ["enhanced-memory", "search", "q", "--json"]
    assert shows_nothing(search, '{"results": [], "warning": "none"}') == "no results: none"
    assert shows_nothing(search, '{"results": [{"path": "MEMORY.md"}]}') is None
    assert shows_nothing(["enhanced-memory", "search", "q"], "no results\n")
    assert shows_nothing(["enhanced-memory", "get", "x", "--json"], '{"text": "", "path": "x"}')
    assert shows_nothing(
        ["python3", "s/enhanced_memory_search.py", "--json", "q"], '{"results": []}'
    )
    assert shows_nothing(["enhanced-memory", "index"], "") == "printed ''"
    assert shows_nothing(["enhanced-memory", "index"], "indexed 1 file") is None
    assert shows_nothing(["enhanced-memory", "export"], "", "wrote 1 notes") is None
    assert shows_nothing(["enhanced-memory", "search", "q"], "", "embedder: none")


@pytest.mark.parametrize("block", RUN, ids=[b.id for b in RUN])
def test_readme_example_runs(block: Block, repo: Path, request: pytest.FixtureRequest) -> None:
    env = {"ENHANCED_MEMORY_LOG": "0", **_env(block.text, repo, request)}
    run_block(block, repo, env)


def test_readme_in_order_then_make_clean_leaves_the_tree_as_it_was(
    repo: Path, request: pytest.FixtureRequest
) -> None:
    """Every README example, in order, logs on; then `make clean`: `git status` shows nothing."""
    shutil.copy(ROOT / "Makefile", repo / "Makefile")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for step in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "tree"]):
        subprocess.run([*git, *step], cwd=repo, check=True, capture_output=True)
    env = _env("scope", repo, request)
    for block in RUN:
        run_block(block, repo, env)
    status = ["git", "status", "--porcelain", "--ignored", "--untracked-files=all"]
    left = subprocess.run(status, cwd=repo, capture_output=True, text=True, check=True).stdout
    assert "skills/" in left and ".enhanced-memory/" in left  # what the examples leave
    make = subprocess.run(["make", "clean"], cwd=repo, capture_output=True, text=True)
    assert make.returncode == 0, make.stderr
    left = subprocess.run(status, cwd=repo, capture_output=True, text=True, check=True).stdout
    assert left == "", f"make clean left:\n{left}"


def test_the_shared_memory_page_runs_as_pasted(repo: Path, request: pytest.FixtureRequest) -> None:
    """docs/shared-memory.md's blocks, in order, from the repository root, after `make postgres`."""
    page = runnable(SHARED)
    assert [b.lang for b in page].count("bash") >= 1 and "python" in [b.lang for b in page]
    env = _env("scope", repo, request)
    printed = [run_block(block, repo, env) for block in page]
    # The folder's scope and the database's in one ranking, each hit naming its scope.
    python = printed[[b.lang for b in page].index("python")].splitlines()
    assert {line.split()[0] for line in python[:3]} == {"mine", "team"}, python
    assert (
        (repo / "team-notes" / "MEMORY.md")
        .read_text(encoding="utf-8")
        .endswith("- Chose pgvector for team search\n")
    )
