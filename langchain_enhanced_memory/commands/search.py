"""``enhanced-memory search``: one query, or a batch, in OpenClaw's ``memory_search`` JSON.

A batch answers every line, in order: a line that cannot be answered gets an
error object (the failure shape, with its ``id`` and ``line``) and the batch
exits 1; all answered, 0. A batch file that cannot be read fails whole (exit 2).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any

from ..core.errors import EnhancedMemoryError, RequestError
from ..core.request import SearchRequest
from ..core.text import escape_controls
from ..engine.scoped import narrowed
from ..openclaw.response import failure_json, response_json
from ..servers import client
from . import common, print_error
from .common import (
    CliError,
    add_common_arguments,
    add_filter_arguments,
    add_no_daemon_argument,
    add_scope_arguments,
    dump,
    embed_first,
    filter_of,
    flag_error,
    parse_now,
    report_embedder,
    say_keyword_only,
    searcher_from_args,
)

#: What a batch line may set (other keys, such as a benchmark's gold, are ignored).
BATCH_FIELDS = ("query", "now", "since", "until", "path", "kind", "corpus")
#: How a batch line is spelled, for a line that is not.
BATCH_LINE = '{"id", "query", "now"?, "since"?, "scope"?, ...} a line'


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory search``."""
    add_common_arguments(p)
    p.add_argument("query", nargs="?", help="what to look for")
    p.add_argument(
        "--k", "--max-results", "--maxResults", dest="k", type=int, default=5,
        help="results to return (default 5)",
    )  # fmt: skip
    p.add_argument("--now", help="when the query is asked, ISO datetime (default: now)")
    p.add_argument(
        "--batch",
        metavar="FILE.jsonl",
        help='queries {"id","query","now"?}, one a line; a bad line gets an error object, exit 1',
    )
    p.add_argument(
        "--min-score",
        "--minScore",
        dest="min_score",
        type=float,
        help="drop results whose calibrated score (0..1) is below this",
    )
    add_filter_arguments(p)
    add_scope_arguments(p, many=True)
    p.add_argument(
        "--embed-first",
        action="store_true",
        help="embed what lacks a vector before answering (else keyword-only meanwhile)",
    )
    add_no_daemon_argument(p)


def run(args: argparse.Namespace) -> int:
    """Answer the query (or every line of ``--batch``) and print the results."""
    if args.batch is None and args.query is None:
        raise CliError("give a QUERY or --batch FILE.jsonl")
    now = parse_now(args.now)
    if args.batch is not None:
        return _run_batch(args, now)
    try:
        request = SearchRequest.parse(
            query=args.query, k=args.k, now=now, min_score=args.min_score, filter=filter_of(args)
        )
    except RequestError as exc:
        raise flag_error(exc) from None
    engine = searcher_from_args(args)
    if args.embed_first:
        embed_first(engine)
    response = engine.run(request)
    say_keyword_only(response.embedded)
    if args.json:
        dump(response_json(response, engine.settings.output.snippet_chars))
    else:
        _print_text(engine, response, args.min_score)
    sys.stdout.flush()  # the answer first; starting the resident engine comes after
    if engine.workspace is not None:  # one workspace's engine: scopes answer here
        _start_resident_if_it_pays(args, engine, response)
    return 0


def _run_batch(args: argparse.Namespace, now: Any) -> int:
    """Answer each line of ``--batch``; 1 when any line got an error object, else 0."""
    lines = _read_batch(args.batch, args.k, now, args.min_score, filter_of(args))
    engine = searcher_from_args(args, watch=True)
    if args.embed_first:
        embed_first(engine)
    if not args.json:
        report_embedder(engine)
    chars = engine.settings.output.snippet_chars
    failed = said = False  # keyword-only answers are said once a batch
    for n, item_id, request, scope in lines:
        try:
            if isinstance(request, EnhancedMemoryError):
                raise request
            response = narrowed(engine, scope).run(request)
            said = said or say_keyword_only(None if said else response.embedded)
            dump({"id": item_id, **response_json(response, chars)})
        except EnhancedMemoryError as exc:
            failed = True
            message = escape_controls(f"{args.batch}:{n}: {exc}")
            print_error(message)
            dump({"id": item_id, "line": n, **failure_json(message, exc.action)})
    return 1 if failed else 0


def _start_resident_if_it_pays(args: argparse.Namespace, engine: Any, response: Any) -> None:
    """Start the resident engine after a query that loaded the local model or left vectors to embed.

    Each later query then skips seconds of model loading, and the missing
    vectors are embedded in the background. Not inside the resident engine
    itself, nor with ``--no-daemon`` or ``ENHANCED_MEMORY_DAEMON=0``.
    """
    if common.POOL is not None or args.no_daemon or client.opted_out(args.env):
        return
    if engine.choice.provider != "local" and response.embedded is None:
        return
    ws = engine.workspace
    try:
        child = client.start_resident(ws, client.AUTO_IDLE_S)
    except (OSError, EnhancedMemoryError) as exc:  # the answer is out; say why, once
        print(f"enhanced-memory: warning: resident engine not started: {exc}", file=sys.stderr)
        return
    if child is None:  # one is starting already (a search just before this one)
        return
    # A process that outlives the command: say so, and how to be rid of it.
    print(
        f"enhanced-memory: started a resident engine (pid {child.pid}) that keeps {ws}'s index"
        f" and model warm for the next searches; it exits after {client.AUTO_IDLE_S / 60:.0f} min"
        f" without one. Stop it: enhanced-memory daemon stop --workspace {shlex.quote(str(ws))};"
        " never start one: ENHANCED_MEMORY_DAEMON=0 or --no-daemon",
        file=sys.stderr,
    )


def _print_text(engine: Any, response: Any, min_score: float | None) -> None:
    report_embedder(engine, response)
    if response.temporal_dates:
        print(f"dates: {', '.join(response.temporal_dates)}", file=sys.stderr)
    # What --min-score dropped is said, so "no results" never hides matches.
    dropped = response.filtered or 0  # set only with a min_score
    if not response.hits:
        above = f" above --min-score {min_score:g} ({dropped} below)" if dropped else ""
        print(escape_controls(response.filter_note or f"no results{above}"))
    for n, h in enumerate(response.hits, 1):
        # A note's text or a file's name must not drive the terminal, nor split the line.
        title = f"{h.path}:{h.start_line}-{h.end_line}  [{h.score:.3f}]  {h.headers or h.header}"
        if h.scope is not None:
            title = f"{h.scope}: {title}"
        print(f"{n}. {escape_controls(title)}")
        body = " ".join(h.text.split())
        print(f"   {escape_controls(body[:240])}{'...' if len(body) > 240 else ''}")
    if dropped and response.hits:
        print(f"({dropped} more below --min-score {min_score:g})")


def _read_batch(
    path: str, k: int, now: Any, min_score: float | None, flt: dict[str, Any]
) -> list[tuple[int, Any, SearchRequest | EnhancedMemoryError, Any]]:
    """``(line, id, request, scope)`` of every line; a bad line's error stands for its request.

    A line's ``scope`` (a name or a list) picks among the command's ``--scope``s.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.readlines()
    except OSError as exc:
        raise CliError(f"cannot read batch file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CliError(f"batch file {path} is not UTF-8") from None
    out: list[tuple[int, Any, SearchRequest | EnhancedMemoryError, Any]] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            out.append((n, None, CliError(f"not JSON ({exc.msg})", BATCH_LINE), None))
            continue
        if not isinstance(item, dict) or not isinstance(item.get("query"), str):
            item_id = item.get("id") if isinstance(item, dict) else None
            problem = CliError('expected an object with a "query" string', BATCH_LINE)
            out.append((n, item_id, problem, None))
            continue
        body = {key: value for key, value in item.items() if key in BATCH_FIELDS}
        try:
            request: SearchRequest | EnhancedMemoryError = SearchRequest.from_body(
                body, k=k, now=now, min_score=min_score, **({"filter": flt} if flt else {})
            )
        except RequestError as exc:
            request = exc
        out.append((n, item.get("id"), request, item.get("scope")))
    return out
