"""``enhanced-memory crossref build|show PATH|graph``: the cross-reference graph."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..analysis.salience import compute as salience
from ..core.errors import ExportError
from ..graph import views
from ..store.notes import normalize_path
from .common import add_common_arguments, dump, engine_from_args, report_embedder


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``enhanced-memory crossref build|show PATH|graph``."""
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    b = sub.add_parser("build", help="build or update the graph from the index's vectors")
    add_common_arguments(b)
    b.add_argument("--full", action="store_true", help="rebuild everything")
    s = sub.add_parser("show", help="a file's linked files, outgoing and incoming refs")
    add_common_arguments(s)
    s.add_argument("path", help="memory file, relative to the workspace")
    g = sub.add_parser("graph", help="totals and the 15 most connected files")
    add_common_arguments(g)
    g.add_argument("--top", type=int, default=15, help="files to list (default 15)")
    g.add_argument("--html", metavar="FILE", help="write a self-contained picture of the graph")
    g.add_argument("--dot", metavar="FILE", help="write the graph as Graphviz DOT")


def run(args: argparse.Namespace) -> int:
    """Run one crossref action."""
    engine = engine_from_args(args)
    engine.require_memory()  # before show or graph opens (so creates) the index
    if args.action == "build":
        report = engine.build_crossrefs(full=args.full)
        if args.json:
            dump(report.as_dict())
        else:
            report_embedder(engine)
            print(
                f"crossref {report.mode}: {report.files} files, {report.representatives}"
                f" representatives, {report.refs} refs from {report.chunks_with_refs} chunks"
                f" (threshold {report.threshold:.3f}, {report.model},"
                f" {report.recomputed} rows computed) in {report.seconds:.2f} s"
            )
        return 0
    if args.action == "show":
        shown = engine.crossref(normalize_path(args.path), build=False)
        if args.json:
            dump(shown)
        else:
            print(views.format_show(shown))
        return 0
    summary = engine.crossref(build=False, top=max(1, args.top))
    if args.html or args.dot:
        items = salience(engine.workspace, engine.settings, top=None)["items"]
        data = engine.crossref_picture({i["path"]: i["salience"] for i in items})
        try:
            if args.html:
                Path(args.html).write_text(views.to_html(data), encoding="utf-8")
            if args.dot:
                Path(args.dot).write_text(views.to_dot(data), encoding="utf-8")
        except OSError as exc:
            raise ExportError(f"cannot write the picture: {exc.strerror or exc}") from None
    if args.json:
        dump(summary)
    else:
        print(views.format_summary(summary))
    return 0
