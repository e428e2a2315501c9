"""Reading the stored graph: a file's links, the overview, the original's ``crossrefs.json``."""

from __future__ import annotations

import contextlib
import sqlite3
from collections import defaultdict
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..core.errors import CrossrefError
from .storage import has_tables

if TYPE_CHECKING:
    from .host import GraphHost

__all__ = ["export_crossrefs_json", "file_graph", "graph_connection", "graph_summary", "show"]


def _meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM crossref_meta").fetchall())


@contextlib.contextmanager
def graph_connection(index: GraphHost) -> Iterator[sqlite3.Connection]:
    """A connection to the index whose graph tables exist (raises ``CrossrefError`` if not)."""
    with index.connect() as conn:
        if not has_tables(conn):
            raise CrossrefError(
                "no cross-reference graph yet: run `enhanced-memory crossref build`"
            )
        yield conn


def _target(path: str, line: int) -> str:
    return f"{path}:{line}"


def file_graph(index: GraphHost) -> dict[str, list[dict[str, Any]]]:
    """``{path: [{file, strength}]}``, strongest first (the original's ``file_graph``)."""
    with graph_connection(index) as conn:
        out: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for path, target, strength in conn.execute(
            "SELECT path, target, strength FROM crossref_graph ORDER BY path, strength DESC"
        ):
            out[path].append({"file": target, "strength": strength})
        return dict(out)


def export_crossrefs_json(index: GraphHost) -> dict[str, Any]:
    """The graph in the original's ``memory/crossrefs.json`` shape."""
    with graph_connection(index) as conn:
        meta = _meta(conn)
        chunk_refs: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for sp, sl, dp, dl, dh, s in conn.execute(
            "SELECT src_path, src_line, dst_path, dst_line, dst_header, sim FROM crossref_refs"
            " ORDER BY src_path, src_line, sim DESC"
        ):
            chunk_refs[_target(sp, sl)].append(
                {"target": _target(dp, dl), "sim": s, "header": dh, "file": dp}
            )
    return {
        "total_chunks": int(meta.get("total_chunks", "0")),
        "total_crossrefs": sum(len(v) for v in chunk_refs.values()),
        "chunks_with_refs": len(chunk_refs),
        "chunk_refs": dict(chunk_refs),
        "file_graph": file_graph(index),
    }


def show(index: GraphHost, path: str) -> dict[str, Any]:
    """One file's linked files, outgoing chunk refs and up to 20 incoming refs."""
    with graph_connection(index) as conn:
        if conn.execute("SELECT 1 FROM crossref_files WHERE path=?", (path,)).fetchone() is None:
            raise CrossrefError(f"{path} is not in the graph (is it a memory file? rebuild?)")
        linked = [
            {"file": t, "strength": s, "refs": n}
            for t, s, n in conn.execute(
                "SELECT target, strength, refs FROM crossref_graph WHERE path=?"
                " ORDER BY strength DESC",
                (path,),
            )
        ]
        outgoing: dict[str, dict[str, Any]] = {}
        for sl, se, sh, dp, dl, dh, s in conn.execute(
            "SELECT src_line, src_end, src_header, dst_path, dst_line, dst_header, sim"
            " FROM crossref_refs WHERE src_path=? ORDER BY src_line, sim DESC",
            (path,),
        ):
            entry = outgoing.setdefault(
                _target(path, sl),
                {"chunk": _target(path, sl), "endLine": se, "header": sh, "refs": []},
            )
            entry["refs"].append({"target": _target(dp, dl), "sim": s, "header": dh, "file": dp})
        incoming = [
            {"source": _target(sp, sl), "header": sh, "target": _target(path, dl), "sim": s}
            for sp, sl, sh, dl, s in conn.execute(
                "SELECT src_path, src_line, src_header, dst_line, sim FROM crossref_refs"
                " WHERE dst_path=? ORDER BY sim DESC LIMIT 20",
                (path,),
            )
        ]
    return {
        "path": path,
        "linked_files": linked,
        "outgoing": list(outgoing.values()),
        "incoming": incoming,
    }


def graph_summary(index: GraphHost, top: int = 15) -> dict[str, Any]:
    """Totals and the ``top`` most connected files (links in either direction)."""
    with graph_connection(index) as conn:
        meta = _meta(conn)
        refs, with_refs = conn.execute(
            "SELECT count(*), count(DISTINCT src_path || ':' || src_line) FROM crossref_refs"
        ).fetchone()
        files = conn.execute("SELECT count(*) FROM crossref_files").fetchone()[0]
        links = conn.execute("SELECT count(*) FROM crossref_graph").fetchone()[0]
        ranked = conn.execute(
            "SELECT f, count(DISTINCT o), round(sum(s), 4) FROM ("
            " SELECT path f, target o, strength s FROM crossref_graph"
            " UNION ALL SELECT target, path, strength FROM crossref_graph)"
            " GROUP BY f ORDER BY 2 DESC, 3 DESC, f LIMIT ?",
            (top,),
        ).fetchall()
    return {
        "total_chunks": int(meta.get("total_chunks", "0")),
        "total_crossrefs": int(refs),
        "chunks_with_refs": int(with_refs),
        "files": int(files),
        "file_links": int(links),
        "threshold": float(meta.get("threshold", "nan")),
        "model": meta.get("model"),
        "built_at": meta.get("built_at"),
        "most_connected": [{"file": f, "linked_files": n, "strength": s} for f, n, s in ranked],
    }
