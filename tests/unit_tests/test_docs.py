"""The command-line reference (docs/cli.md) is generated, current, and names every flag."""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path
from types import ModuleType

from langchain_enhanced_memory.commands import COMMANDS, PROG, build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "cli.md"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_cli", ROOT / "docs" / "gen_cli.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _children(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _every_command() -> dict[str, argparse.ArgumentParser]:
    """Each sub-command (and sub-sub-command) the parser accepts, by its full name."""
    found: dict[str, argparse.ArgumentParser] = {}
    todo = [(name, _children(build_parser(name)[0])[name]) for name in COMMANDS]
    while todo:
        name, parser = todo.pop()
        found[name] = parser
        todo += [(f"{name} {child}", p) for child, p in _children(parser).items()]
    return found


def _sections(text: str) -> dict[str, str]:
    parts = re.split(rf"^## {PROG} (.+)$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_committed_reference_is_what_the_generator_writes() -> None:
    assert PAGE.read_text(encoding="utf-8") == _generator().render(), (
        "docs/cli.md is out of date: run `make docs` (or python docs/gen_cli.py)"
    )


def test_every_command_and_flag_is_in_the_reference() -> None:
    sections = _sections(PAGE.read_text(encoding="utf-8"))
    commands = _every_command()
    assert {"search", "crossref build", "crossref show", "daemon"} <= set(commands)
    assert set(sections) == set(commands)
    for name, parser in commands.items():
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            for flag in action.option_strings:
                assert f"`{flag}`" in sections[name], f"{name}: {flag} is not documented"
            if not action.option_strings:
                assert f"`{action.metavar or action.dest.upper()}`" in sections[name], name


def test_the_check_mode_reports_a_stale_page(tmp_path: Path, monkeypatch) -> None:
    gen = _generator()
    page = tmp_path / "cli.md"
    monkeypatch.setattr(gen, "PAGE", page)
    assert gen.main([]) == 0 and gen.main(["--check"]) == 0
    page.write_text(page.read_text(encoding="utf-8").replace("`--json`", "`--jsn`"), "utf-8")
    assert gen.main(["--check"]) == 1
