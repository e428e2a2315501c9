"""The ``enhanced-memory`` command.

Only the chosen sub-command's module is imported, so ``search --json`` in a
fresh process pays for numpy and SQLite, not for LangChain. Errors print one
line on stderr (and, with ``--json``, the OpenClaw failure object on stdout)
and exit with status 2; nothing prints a traceback unless
``ENHANCED_MEMORY_DEBUG=1``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn, TextIO

PROG = "enhanced-memory"

# name -> (module holding add_cli_arguments/run_cli, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "index": ("langchain_enhanced_memory.cli", "bring the index up to date (incremental)"),
    "search": ("langchain_enhanced_memory.cli", "search the memory (OpenClaw memory_search JSON)"),
    "eval": ("langchain_enhanced_memory.evaluation", "measure retrieval quality on graded queries"),
    "salience": ("langchain_enhanced_memory.salience", "which memory files need attention"),
    "crossref": ("langchain_enhanced_memory.crossref", "cross-references: build, show, graph"),
    "get": ("langchain_enhanced_memory.memget", "read lines of a memory file"),
    "serve": ("langchain_enhanced_memory.serve", "answer POST /search over HTTP (loopback)"),
    "export": ("langchain_enhanced_memory.export", "write the original's vectors/crossrefs.json"),
    "skill": ("langchain_enhanced_memory.skill", "install the OpenClaw skill into a workspace"),
}


class CliError(Exception):
    """A user-facing failure: one line, exit status 2."""

    def __init__(self, message: str, action: str = "") -> None:
        super().__init__(message)
        self.action = action


def failure_json(error: str, action: str = "") -> dict[str, Any]:
    """OpenClaw's ``memory_search`` failure shape."""
    return {"results": [], "disabled": True, "unavailable": True, "error": error, "action": action}


def dump(obj: Any, out: TextIO | None = None) -> None:
    """Write one JSON line, keeping CJK readable."""
    (out or sys.stdout).write(clean_text(json.dumps(obj, ensure_ascii=False)) + "\n")


def clean_text(text: str) -> str:
    """Replace lone surrogates (undecodable argv bytes, JSON escapes) that UTF-8 cannot write."""
    return text if text.isascii() else text.encode("utf-8", "replace").decode("utf-8")


# --------------------------------------------------------------------- context
def add_common_arguments(p: argparse.ArgumentParser) -> None:
    """Options every sub-command takes."""
    p.add_argument(
        "--workspace",
        help="workspace folder (default: $OPENCLAW_WORKSPACE_DIR, $MEMORY_DIR's parent, else .)",
    )
    p.add_argument(
        "--embedder",
        choices=("auto", "ollama", "local", "none"),
        help="embedding backend (default: $ENHANCED_MEMORY_EMBEDDER or auto)",
    )
    p.add_argument(
        "--model", help="Ollama embedding model (default: $EMBED_MODEL or nomic-embed-text)"
    )
    p.add_argument(
        "--ollama-url", help="Ollama URL (default: $OLLAMA_URL or http://localhost:11434)"
    )
    p.add_argument(
        "--index", dest="index_path", help="index file (default: WORKSPACE/.enhanced-memory/)"
    )
    p.add_argument(
        "--profile",
        choices=("default", "original", "bm25", "vector"),
        help="scoring recipe (default: $ENHANCED_MEMORY_PROFILE or default)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")


def resolve_workspace(arg: str | None) -> Path:
    """Flag, then ``$OPENCLAW_WORKSPACE_DIR``, then the original's ``$MEMORY_DIR``, then ``.``."""
    if arg:
        ws = Path(arg)
    elif os.environ.get("OPENCLAW_WORKSPACE_DIR"):
        ws = Path(os.environ["OPENCLAW_WORKSPACE_DIR"])
    elif os.environ.get("MEMORY_DIR"):
        # The original's MEMORY_DIR names the memory/ folder itself.
        mem = Path(os.environ["MEMORY_DIR"]).expanduser()
        ws = mem.parent if mem.name == "memory" else mem
    else:
        ws = Path.cwd()
    ws = ws.expanduser()
    if "\x00" in str(ws):
        raise CliError("workspace path contains a NUL byte")
    if not ws.is_dir():
        raise CliError(
            f"workspace not found: {ws}", "pass --workspace DIR or set OPENCLAW_WORKSPACE_DIR"
        )
    return ws


def make_engine(args: argparse.Namespace) -> Any:
    """A :class:`~.search.MemorySearch` configured from flags, then env, then defaults."""
    from .search import MemorySearch
    from .settings import MemorySettings

    profile = args.profile or os.environ.get("ENHANCED_MEMORY_PROFILE") or "default"
    if profile not in ("default", "original", "bm25", "vector"):
        raise CliError(f"unknown profile {profile!r}")
    settings = MemorySettings(profile=profile)
    embedder = args.embedder or os.environ.get("ENHANCED_MEMORY_EMBEDDER") or "auto"
    if embedder not in ("auto", "ollama", "local", "none"):
        raise CliError(f"unknown embedder {embedder!r} (auto, ollama, local or none)")
    return MemorySearch(
        resolve_workspace(args.workspace),
        settings=settings,
        embedder=embedder,
        model=args.model or os.environ.get("EMBED_MODEL") or None,
        ollama_url=args.ollama_url or os.environ.get("OLLAMA_URL") or None,
        index_path=args.index_path or os.environ.get("ENHANCED_MEMORY_INDEX") or None,
    )


def parse_now(value: str | None) -> datetime | None:
    """``--now`` as an ISO date or datetime."""
    if value is None:
        return None
    try:
        now = datetime.fromisoformat(value.strip())
    except ValueError:
        raise CliError(
            f"--now {value!r} is not an ISO date or datetime (e.g. 2026-02-09T09:00)"
        ) from None
    return now.replace(tzinfo=None) if now.tzinfo else now


def report_embedder(engine: Any, quiet: bool = False) -> None:
    """One stderr line naming the active embedder (text mode)."""
    if quiet:
        return
    c = engine.choice
    line = f"embedder: {c.provider}" + (f" ({c.model})" if c.model else "")
    if c.fallback:
        line += f", fallback {c.fallback}" + (f": {c.reason}" if c.reason else "")
    print(line, file=sys.stderr)


def progress_bar(total: int) -> Callable[[int], None] | None:
    """A tqdm bar on stderr for long embedding runs, only on a terminal."""
    if total <= 20 or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    bar = tqdm(total=total, desc="embedding", unit="chunk", file=sys.stderr, leave=False)
    return bar.update


# ----------------------------------------------------------------------- index
def _index_arguments(p: argparse.ArgumentParser) -> None:
    add_common_arguments(p)


def _run_index(args: argparse.Namespace) -> int:
    engine = make_engine(args)
    report = engine.index.sync()
    embedded = 0
    if engine.model_id is not None:
        from .embeddings import EmbeddingError

        todo = len(engine.index.missing_embeddings(engine.model_id))
        try:
            embedded = engine.index.embed_missing(
                engine.model_id, engine.embed_documents, progress=progress_bar(todo)
            )
        except EmbeddingError as exc:
            raise CliError(
                f"embedding stopped: {exc}"
                " (text index updated; embedded chunks kept, rerun to resume)",
                "start Ollama or use --embedder local/none",
            ) from None
    stats = engine.index.stats()
    out = {
        "workspace": str(engine.index.workspace),
        "index": str(engine.index.path),
        "files": stats["files"],
        "chunks": stats["chunks"],
        "changed": len(report.changed),
        "deleted": len(report.deleted),
        "skipped": report.skipped,
        "embedded": embedded,
        "provider": engine.choice.provider,
        "model": engine.choice.model,
        "fallback": engine.choice.fallback,
    }
    if args.json:
        dump(out)
    else:
        report_embedder(engine)
        print(
            f"indexed {out['files']} files, {out['chunks']} chunks"
            f" ({out['changed']} changed, {out['deleted']} deleted, {embedded} embedded)"
            f" -> {out['index']}"
        )
    return 0


# ---------------------------------------------------------------------- search
def _search_arguments(p: argparse.ArgumentParser) -> None:
    add_common_arguments(p)
    p.add_argument("query", nargs="?", help="what to look for")
    p.add_argument("--k", type=int, default=5, help="results to return (default 5)")
    p.add_argument("--now", help="when the query is asked, ISO datetime (default: now)")
    p.add_argument(
        "--batch", metavar="FILE.jsonl", help='queries {"id","query","now"?}, one a line'
    )
    p.add_argument("--min-score", type=float, help="drop results scoring below this")


def result_row(hit: Any, snippet_chars: int) -> dict[str, Any]:
    """One ``memory_search`` result row."""
    from .text import snippet

    return {
        "path": hit.path,
        "startLine": hit.start_line,
        "endLine": hit.end_line,
        "score": hit.score,
        "snippet": snippet(hit.text, snippet_chars),
        "header": hit.header,
        "source": "memory",
    }


def response_json(engine: Any, response: Any, min_score: float | None) -> dict[str, Any]:
    """The `memory_search` JSON of one response; `filtered` counts what --min-score removed."""
    hits = response.hits
    out: dict[str, Any] = {}
    if min_score is not None:
        kept = [h for h in hits if h.score >= min_score]
        out["filtered"] = len(hits) - len(kept)
        hits = kept
    chars = engine.settings.snippet_chars
    return {
        "results": [result_row(h, chars) for h in hits],
        "provider": response.provider,
        "model": response.model,
        "fallback": response.fallback,
        **out,
    }


def check_k(k: int) -> int:
    """A valid result count (at least 1, capped at 1000)."""
    if k < 1:
        raise CliError(f"--k must be at least 1, got {k}")
    return min(k, 1000)


def _run_search(args: argparse.Namespace) -> int:
    k = check_k(args.k)
    now = parse_now(args.now)
    if args.batch is None and args.query is None:
        raise CliError("give a QUERY or --batch FILE.jsonl")
    engine = make_engine(args)
    if args.batch is not None:
        return _run_batch(engine, args, k)
    response = engine.search(clean_text(args.query), k=k, now=now)
    if args.json:
        dump(response_json(engine, response, args.min_score))
        return 0
    report_embedder(engine)
    hits = [h for h in response.hits if args.min_score is None or h.score >= args.min_score]
    if response.temporal_dates:
        print(f"dates: {', '.join(response.temporal_dates)}", file=sys.stderr)
    if not hits:
        print("no results")
    for n, h in enumerate(hits, 1):
        print(
            f"{n}. {h.path}:{h.start_line}-{h.end_line}  [{h.score:.3f}]  {h.headers or h.header}"
        )
        body = " ".join(h.text.split())
        print(f"   {body[:240]}{'...' if len(body) > 240 else ''}")
    return 0


def _read_batch(path: str) -> list[dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.readlines()
    except OSError as exc:
        raise CliError(f"cannot read batch file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CliError(f"batch file {path} is not UTF-8") from None
    items = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CliError(f"{path}:{n}: not JSON ({exc.msg})") from None
        if not isinstance(item, dict) or not isinstance(item.get("query"), str):
            raise CliError(f'{path}:{n}: expected {{"id", "query", "now"?}}')
        item["_now"] = parse_now(item["now"]) if item.get("now") else None
        items.append(item)
    return items


def _run_batch(engine: Any, args: argparse.Namespace, k: int) -> int:
    items = _read_batch(args.batch)
    default_now = parse_now(args.now)
    if not args.json:
        report_embedder(engine)
    for item in items:
        query = clean_text(item["query"])
        response = engine.search(query, k=k, now=item["_now"] or default_now)
        row = response_json(engine, response, args.min_score)
        dump({"id": item.get("id"), **row})
    return 0


_BUILTIN: dict[
    str, tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]
] = {
    "index": (_index_arguments, _run_index),
    "search": (_search_arguments, _run_search),
}


# ------------------------------------------------------------------------ main
def _command_of(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if a in COMMANDS), None)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one-line :class:`CliError`, not usage dumps."""

    def error(self, message: str) -> NoReturn:
        raise CliError(message)


def build_parser(
    command: str | None,
) -> tuple[argparse.ArgumentParser, Callable[[argparse.Namespace], int] | None]:
    """The top-level parser, with only ``command``'s arguments configured."""
    parser = _Parser(
        prog=PROG, description="Hybrid, date-aware search over an agent's markdown memory."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    runner = None
    for name, (module, helptext) in COMMANDS.items():
        p = sub.add_parser(name, help=helptext, description=helptext)
        if name != command:
            continue
        if name in _BUILTIN:
            configure, runner = _BUILTIN[name]
        else:
            mod = importlib.import_module(module)
            configure, runner = mod.add_cli_arguments, mod.run_cli
        configure(p)
    return parser, runner


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``enhanced-memory`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _command_of(argv)
    parser, runner = build_parser(command)
    try:
        args = parser.parse_args(argv)
    except CliError as exc:  # a bad flag or value: one line, and the failure JSON with --json
        message = f"{command}: {exc}" if command else str(exc)
        action = f"see {PROG} {command} --help" if command else f"see {PROG} --help"
        return _fail(message, action, "--json" in argv)
    if runner is None:
        parser.print_help()
        return 2
    want_json = bool(getattr(args, "json", False))
    try:
        return runner(args)
    except CliError as exc:
        return _fail(str(exc), exc.action, want_json)
    except KeyboardInterrupt:
        return _fail("interrupted", "", want_json, status=130)
    except BrokenPipeError:
        # The reader left (`| head`): writing the failure JSON to the same pipe would
        # raise again, and so would the flush at exit, so point stdout at /dev/null.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # the last line of defence: never a traceback for users
        if os.environ.get("ENHANCED_MEMORY_DEBUG"):
            raise
        from .index import IndexUnavailableError

        if isinstance(exc, IndexUnavailableError):
            return _fail(str(exc), "check --index and the folder's permissions", want_json)
        return _fail(f"{type(exc).__name__}: {exc}".splitlines()[0], "", want_json, status=1)


def _fail(message: str, action: str, want_json: bool, status: int = 2) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    if want_json:
        dump(failure_json(message, action))
    return status


if __name__ == "__main__":
    # Run the imported module's main: under ``python -m`` this file is ``__main__``, and
    # sub-command modules raise the imported module's CliError, which must be caught.
    from langchain_enhanced_memory.cli import main as _main

    sys.exit(_main())
