"""``enhanced-memory remember`` as a process: new and existing days, two writers at once,
a read-only workspace, a path outside the memory, and the next search finding the line."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from tests.cli_run import CLI, cli_env, run_cli
from tests.reliability.writers import concurrent_writers

NOW = "2026-02-09T09:00"


def remember(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("remember", "--workspace", str(ws), "--now", NOW, *args)


def test_new_day_then_search_finds_it(workspace: Path) -> None:
    r = remember(workspace, "--json", "The boiler was serviced by Hannah.", "--section", "House")
    assert r.returncode == 0, r.stderr
    done = json.loads(r.stdout)
    assert (done["path"], done["created"], done["line"]) == ("memory/2026-02-09.md", True, 5)
    found = run_cli("search", "--json", "--embedder", "none", "--workspace", str(workspace),
                    "who serviced the boiler")  # fmt: skip
    top = json.loads(found.stdout)["results"][0]
    assert top["path"] == "memory/2026-02-09.md" and top["startLine"] <= 5 <= top["endLine"]


def test_existing_day_is_only_appended_to(workspace: Path) -> None:
    note = workspace / "memory/2026-02-08.md"
    before = note.read_text(encoding="utf-8")
    r = run_cli("remember", "--workspace", str(workspace), "--now", "2026-02-08T18:00",
                "Ramen place: cash only.")  # fmt: skip
    assert r.returncode == 0 and r.stdout.startswith("remembered in memory/2026-02-08.md:")
    after = note.read_text(encoding="utf-8")
    assert after.startswith(before) and after.endswith("- Ramen place: cash only.\n")


def test_two_writers_at_once_both_land(workspace: Path) -> None:
    procs = [
        subprocess.Popen(
            [
                *CLI,
                "remember",
                "--workspace",
                str(workspace),
                "--now",
                NOW,
                "--section",
                "Log",
                f"writer {n} was here",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(),
        )  # fmt: skip
        for n in range(4)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    text = (workspace / "memory/2026-02-09.md").read_text(encoding="utf-8")
    assert text.count("## Log") == 1
    assert sorted(line for line in text.splitlines() if line.startswith("- ")) == [
        f"- writer {n} was here" for n in range(4)
    ]


def test_read_only_workspace_is_one_line_exit_2(workspace: Path) -> None:
    mem = workspace / "memory"
    mem.chmod(0o555)
    try:
        r = remember(workspace, "x")
    finally:
        mem.chmod(0o755)
    assert r.returncode == 2 and "read-only" in r.stderr and r.stderr.count("\n") == 1
    assert not (mem / "2026-02-09.md").exists()


def test_outside_the_memory_is_refused(workspace: Path) -> None:
    for target in ("../escape.md", "notes.md", "memory/../../escape.md"):
        r = remember(workspace, "x", "--file", target, "--json")
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "refused" in r.stderr
        assert json.loads(r.stdout)["path"] == target
    assert not (workspace.parent / "escape.md").exists() and not (workspace / "notes.md").exists()


def test_remember_loses_no_line_of_a_plain_appender(tmp_path: Path) -> None:
    # An editor or the agent's own file tool appends without a lock: no line may vanish.
    report = concurrent_writers(tmp_path, rounds=1, rememberers=10, min_lines=100)
    assert report.problems == [], report.problems[:5]
    assert report.remembered == 10 and report.appended >= 100


def test_a_killed_writers_temporary_file_is_cleaned_and_none_is_left(workspace: Path) -> None:
    # A kill between creating a new daily note and writing it: the next call adds the header.
    (workspace / "memory/2026-02-09.md").write_bytes(b"")
    assert remember(workspace, "after a kill").returncode == 0
    assert (workspace / "memory/2026-02-09.md").read_text(encoding="utf-8") == (
        "# 2026-02-09\n\n- after a kill\n"
    )
    # What a kill between creating the temporary file and the rename leaves behind.
    stale = workspace / "memory/.2026-02-08.md.k1ll3d_x.tmp"
    stale.write_bytes(b"")
    for args in (["Plain append."], ["Into an earlier section.", "--section", "Decisions"]):
        r = run_cli("remember", "--workspace", str(workspace), "--now", "2026-02-08T18:00", *args)
        assert r.returncode == 0, r.stderr
    assert not [p.name for p in (workspace / "memory").iterdir() if p.name.endswith(".tmp")]


def test_a_new_note_honours_the_umask(workspace: Path) -> None:
    r = subprocess.run(
        ["sh", "-c", 'umask 077 && exec "$@"', "sh", *CLI, "remember", "--workspace",
         str(workspace), "--now", NOW, "--file", "memory/topics/private.md", "secret"],
        capture_output=True, text=True, env=cli_env(), timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert (workspace / "memory/topics/private.md").stat().st_mode & 0o777 == 0o600
    r = run_cli("remember", "--workspace", str(workspace), "--now", NOW, "open")
    assert (workspace / "memory/2026-02-09.md").stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_remember_writes_through_a_symlink_and_keeps_hard_links(workspace: Path) -> None:
    topics = workspace / "memory/topics"
    real = topics / "real.md"
    real.write_text("# Real\n\n## Facts\n- one\n\n## Later\n- two\n", encoding="utf-8")
    (topics / "alias.md").symlink_to("real.md")
    r = remember(workspace, "through the link", "--file", "memory/topics/alias.md")
    assert r.returncode == 0, r.stderr
    r = remember(workspace, "in Facts", "--file", "memory/topics/alias.md", "--section", "Facts")
    assert r.returncode == 0, r.stderr
    assert (topics / "alias.md").is_symlink()
    assert real.read_text(encoding="utf-8") == (
        "# Real\n\n## Facts\n- one\n- in Facts\n\n## Later\n- two\n- through the link\n"
    )
    hard = topics / "hard.md"
    os.link(real, hard)
    r = remember(workspace, "via the hard link", "--file", "memory/topics/hard.md")
    assert r.returncode == 0, r.stderr
    assert real.read_text(encoding="utf-8").endswith("- via the hard link\n")
    assert os.path.samefile(real, hard)
    # Into an earlier section would replace the file and split the links: refused.
    before = real.read_bytes()
    r = remember(workspace, "split?", "--file", "memory/topics/hard.md", "--section", "Facts")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "hard link" in r.stderr
    assert os.path.samefile(real, hard) and real.read_bytes() == before


def test_a_link_to_a_hidden_or_non_markdown_file_is_refused(workspace: Path) -> None:
    (workspace / ".private").mkdir()
    for name, target in (("hidden.md", ".private/keys.md"), ("text.md", "notes.txt")):
        (workspace / target).write_text("as it was\n", encoding="utf-8")
        (workspace / "memory/topics" / name).symlink_to(f"../../{target}")
        r = remember(workspace, "x", "--file", f"memory/topics/{name}")
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "refused" in r.stderr
        assert (workspace / target).read_text(encoding="utf-8") == "as it was\n"


def test_owner_and_mode_of_a_note_are_kept(workspace: Path) -> None:
    note = workspace / "memory/2026-02-08.md"
    note.chmod(0o640)
    if os.geteuid() == 0:  # root writing another user's note must leave it theirs
        os.chown(note, 65534, 65534)
    before = note.stat()
    for args in (["at the end"], ["inside Decisions", "--section", "Decisions"]):
        r = run_cli("remember", "--workspace", str(workspace), "--now", "2026-02-08T18:00", *args)
        assert r.returncode == 0, r.stderr
    after = note.stat()
    assert (after.st_uid, after.st_gid, after.st_mode) == (
        before.st_uid, before.st_gid, before.st_mode
    )  # fmt: skip


def test_a_fifo_is_refused_at_once(workspace: Path) -> None:
    os.mkfifo(workspace / "memory/fifo.md")
    r = run_cli("remember", "--workspace", str(workspace), "--file", "memory/fifo.md", "x",
                timeout=60)  # fmt: skip
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not a regular file" in r.stderr
    # The lock is free again: the next remember goes through.
    assert remember(workspace, "after the fifo").returncode == 0


def test_multi_line_text_never_makes_a_header_or_a_fence(workspace: Path) -> None:
    r = remember(workspace, "Met Ann\n# 1999-01-01\n```\n  ## Plans\n---\n#todo", "--json")
    assert r.returncode == 0, r.stderr
    text = (workspace / "memory/2026-02-09.md").read_text(encoding="utf-8")
    assert text.endswith("- Met Ann\n  \\# 1999-01-01\n  \\```\n  \\## Plans\n  \\---\n  #todo\n")
    headers = [line for line in text.splitlines() if re.match(r" {0,3}#{1,6}(\s|$)", line)]
    assert headers == ["# 2026-02-09"]


def test_a_crlf_note_gets_crlf_lines(workspace: Path) -> None:
    note = workspace / "memory/topics/windows.md"
    note.write_bytes(b"# Windows\r\n\r\n## Plans\r\n- a\r\n\r\n## Later\r\n- b\r\n")
    assert remember(workspace, "two\nlines", "--file", "memory/topics/windows.md").returncode == 0
    r = remember(workspace, "in plans", "--file", "memory/topics/windows.md", "--section", "plans")
    assert r.returncode == 0, r.stderr
    assert note.read_bytes() == (
        b"# Windows\r\n\r\n## Plans\r\n- a\r\n- in plans\r\n\r\n## Later\r\n- b\r\n"
        b"- two\r\n  lines\r\n"
    )


def test_sections_ignore_fences_and_case(workspace: Path) -> None:
    note = workspace / "memory/topics/code.md"
    note.write_text("# Code\n\n## Plans\n- a\n\n```md\n## Log\n```\n\n## Later\n- b\n",
                    encoding="utf-8")  # fmt: skip
    for text, section in (("p", "PLANS"), ("l", "log")):
        r = remember(workspace, text, "--file", "memory/topics/code.md", "--section", section)
        assert r.returncode == 0, r.stderr
    assert note.read_text(encoding="utf-8") == (
        "# Code\n\n## Plans\n- a\n\n```md\n## Log\n```\n- p\n\n## Later\n- b\n\n## log\n\n- l\n"
    )


def test_a_note_ending_inside_a_fence_is_closed_before_the_bullet(workspace: Path) -> None:
    note = workspace / "memory/topics/open.md"
    note.write_text("# Open\n\n~~~~python\nprint(1)\n", encoding="utf-8")
    r = remember(workspace, "after code", "--file", "memory/topics/open.md", "--section", "Plans")
    assert r.returncode == 0, r.stderr
    assert note.read_text(encoding="utf-8") == (
        "# Open\n\n~~~~python\nprint(1)\n~~~~\n\n## Plans\n\n- after code\n"
    )
    assert json.loads(remember(workspace, "more", "--file", "memory/topics/open.md",
                               "--section", "plans", "--json").stdout)["line"] == 10  # fmt: skip


def test_a_read_only_note_is_named_as_such(workspace: Path) -> None:
    note = workspace / "memory/2026-02-09.md"
    note.write_text("# 2026-02-09\n", encoding="utf-8")
    note.chmod(0o444)
    r = remember(workspace, "x", "--json")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "memory/2026-02-09.md is read-only" in r.stderr and "workspace" not in r.stderr
    failure = json.loads(r.stdout)
    assert failure["path"] == "memory/2026-02-09.md" and failure["action"]
    assert "results" not in failure  # not the search failure shape


def test_json_failures_have_remembers_own_shape(workspace: Path) -> None:
    r = remember(workspace, "x", "--file", "memory/" + "deep/" * 50 + "x.md", "--json")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    failure = json.loads(r.stdout)
    assert set(failure) == {"path", "error", "action"} and failure["action"]
    assert not (workspace / "memory/deep").exists()


def _notes(ws: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (ws / "memory").iterdir() if p.is_file()}


def test_a_write_cut_short_leaves_the_note_as_it_was_and_no_note_it_created(
    workspace: Path,
) -> None:
    import resource

    def limited() -> None:  # the kernel cuts writes past 2,000 bytes short, then refuses them
        resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))

    text = "a long bullet " * 200  # 2,800 bytes: a short write, then EFBIG
    before = _notes(workspace)
    for extra in ((), ("--file", "memory/2026-02-08.md"), ("--file", "memory/topics/new.md")):
        r = subprocess.run(
            [*CLI, "remember", "--workspace", str(workspace), "--now", NOW, text, *extra],
            capture_output=True, text=True, env=cli_env(), preexec_fn=limited, timeout=120,
        )  # fmt: skip
        assert r.returncode == 2 and "File too large" in r.stderr, r.stderr
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
        after = _notes(workspace)
        assert {k: v for k, v in after.items() if not k.startswith(".")} == {
            k: v for k, v in before.items() if not k.startswith(".")
        }  # no byte of the bullet, no new daily note
        assert not (workspace / "memory/topics/new.md").exists()
