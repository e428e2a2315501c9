"""Views of the graph: text summaries, and one HTML page or Graphviz DOT of the whole memory.

The page is self-contained (inline SVG and CSS, no script, no CDN, no fonts to
fetch): files are circles sized by chunk count and coloured by kind (core,
daily, topic), links are lines whose width and opacity follow their strength,
and hovering a file shows its path, kind, chunks, links and salience (SVG
``<title>`` tooltips). The layout is a force-directed one computed here in
numpy with a fixed seed, so the same graph always draws the same picture.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.errors import CrossrefError
from ..core.text import escape_controls
from .queries import graph_connection

if TYPE_CHECKING:
    from .host import GraphHost

__all__ = [
    "COLORS",
    "GraphData",
    "collect",
    "format_show",
    "format_summary",
    "layout",
    "to_dot",
    "to_html",
]

COLORS = {"core": "#d1495b", "daily": "#30638e", "topic": "#edae49", "session": "#66a182"}
#: Most files drawn; the rest (least connected) are left out and counted.
MAX_NODES = 400
_W, _H, _PAD = 1000.0, 720.0, 40.0


@dataclass
class GraphData:
    """Nodes and undirected links of the file graph."""

    nodes: list[dict[str, Any]]  # path, kind, chunks, salience, links
    edges: list[tuple[int, int, float]]  # (node, node, strength)
    omitted: int = 0
    totals: dict[str, Any] = field(default_factory=dict)


def collect(index: GraphHost, salience: dict[str, float] | None = None) -> GraphData:
    """Read the stored graph; ``salience`` (path -> score) is shown in each file's tooltip.

    Raises:
        CrossrefError: No graph has been built.
    """
    with graph_connection(index) as conn:
        files = conn.execute(
            "SELECT path, kind, chunks FROM crossref_files ORDER BY path"
        ).fetchall()
        links = conn.execute("SELECT path, target, strength FROM crossref_graph").fetchall()
    if not files:
        raise CrossrefError("the graph is empty: are there memory files with vectors?")
    merged: dict[tuple[str, str], float] = {}
    for a, b, s in links:
        key = (a, b) if a < b else (b, a)
        merged[key] = max(merged.get(key, 0.0), float(s))
    degree: dict[str, int] = {}
    for a, b in merged:
        degree[a] = degree.get(a, 0) + 1
        degree[b] = degree.get(b, 0) + 1
    ranked = sorted(files, key=lambda f: (-degree.get(f[0], 0), f[0]))
    kept = sorted(ranked[:MAX_NODES], key=lambda f: f[0])
    scores = salience or {}
    pos = {f[0]: n for n, f in enumerate(kept)}
    nodes = [
        {
            "path": p,
            "kind": k if k in COLORS else "topic",
            "chunks": int(c),
            "links": degree.get(p, 0),
            "salience": scores.get(p),
        }
        for p, k, c in kept
    ]
    edges = [(pos[a], pos[b], s) for (a, b), s in sorted(merged.items()) if a in pos and b in pos]
    return GraphData(
        nodes,
        edges,
        omitted=len(files) - len(kept),
        totals={"files": len(files), "links": len(merged)},
    )


def layout(n: int, edges: list[tuple[int, int, float]], iterations: int = 300) -> np.ndarray:
    """Fruchterman-Reingold positions in the unit square (seeded, so repeatable)."""
    rng = np.random.default_rng(7)
    pos = rng.random((n, 2))
    if n <= 1:
        return np.full((n, 2), 0.5)
    k = math.sqrt(1.0 / n)
    a = np.array([e[0] for e in edges], dtype=np.int64)
    b = np.array([e[1] for e in edges], dtype=np.int64)
    w = np.array([e[2] for e in edges], dtype=np.float64)
    w = w / w.max() if w.size else w
    temp = 0.1
    for _ in range(iterations):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.maximum(np.linalg.norm(delta, axis=2), 1e-3)
        disp = ((k * k / dist**2)[:, :, None] * delta).sum(axis=1)
        if a.size:
            d = pos[a] - pos[b]
            dl = np.maximum(np.linalg.norm(d, axis=1), 1e-3)
            f = (dl / k * (0.5 + w))[:, None] * d
            np.add.at(disp, a, -f)
            np.add.at(disp, b, f)
        disp += (0.5 - pos) * 0.05 * n**0.5  # gentle gravity keeps islands on screen
        length = np.maximum(np.linalg.norm(disp, axis=1), 1e-9)
        pos += disp / length[:, None] * np.minimum(length, temp)[:, None]
        temp *= 0.985
    lo, hi = pos.min(axis=0), pos.max(axis=0)
    return (pos - lo) / np.where(hi - lo == 0, 1, hi - lo)


def _radius(chunks: int) -> float:
    return 4.0 + 3.0 * math.sqrt(max(chunks, 1))


def _label(x: float, y: float, node: dict[str, Any]) -> str:
    r = _radius(node["chunks"]) + 2
    # Near the right edge the label goes on the left so it is not clipped.
    left = x > _W - 160
    anchor = ' text-anchor="end"' if left else ""
    return (
        f'<text x="{x - r if left else x + r:.1f}" y="{y + 3:.1f}"{anchor}>'
        f"{html.escape(node['path'].rsplit('/', 1)[-1])}</text>"
    )


def _tooltip(node: dict[str, Any]) -> str:
    sal = node["salience"]
    return (
        f"{node['path']}\nkind: {node['kind']}\nchunks: {node['chunks']}\n"
        f"linked files: {node['links']}\n"
        f"salience: {'n/a' if sal is None else f'{sal:.3f}'}"
    )


def to_html(data: GraphData, title: str = "Memory graph") -> str:
    """The graph as one self-contained HTML page (inline SVG, no script, no network)."""
    xy = layout(len(data.nodes), data.edges)
    px = _PAD + xy[:, 0] * (_W - 2 * _PAD)
    py = _PAD + xy[:, 1] * (_H - 2 * _PAD)
    top = max((s for *_, s in data.edges), default=1.0) or 1.0
    lines = []
    for a, b, s in data.edges:
        t = s / top
        lines.append(
            f'<line class="link" x1="{px[a]:.1f}" y1="{py[a]:.1f}"'
            f' x2="{px[b]:.1f}" y2="{py[b]:.1f}"'
            f' stroke-width="{0.6 + 4.4 * t:.2f}" stroke-opacity="{0.25 + 0.6 * t:.2f}">'
            f"<title>{html.escape(data.nodes[a]['path'])} - {html.escape(data.nodes[b]['path'])}"
            f": strength {s:.2f}</title></line>"
        )
    labelled = {i for i, _ in sorted(enumerate(data.nodes), key=lambda t: -t[1]["links"])[:20]} | {
        i for i, n in enumerate(data.nodes) if n["kind"] == "core"
    }
    circles = []
    for i, node in enumerate(data.nodes):
        circles.append(
            f'<g class="node {node["kind"]}" data-path="{html.escape(node["path"])}">'
            f'<circle cx="{px[i]:.1f}" cy="{py[i]:.1f}" r="{_radius(node["chunks"]):.1f}"'
            f' fill="{COLORS[node["kind"]]}"><title>{html.escape(_tooltip(node))}</title></circle>'
            + (_label(px[i], py[i], node) if i in labelled else "")
            + "</g>"
        )
    legend = "".join(
        f'<span class="key"><svg width="12" height="12"><circle cx="6" cy="6" r="5"'
        f' fill="{c}"/></svg> {k}</span>'
        for k, c in COLORS.items()
    )
    note = f" The {data.omitted} least connected files are not drawn." if data.omitted else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>
body{{font:14px system-ui,sans-serif;margin:16px;color:#222;background:#fafafa}}
svg.graph{{background:#fff;border:1px solid #ddd;max-width:100%;height:auto}}
.link{{stroke:#777}} .node circle{{stroke:#fff;stroke-width:1.5}}
.node:hover circle{{stroke:#000;stroke-width:2.5}} text{{font-size:10px;fill:#333}}
.key{{margin-right:14px}}
</style></head>
<body>
<h1>{html.escape(title)}</h1>
<p>{data.totals.get("files", len(data.nodes))} files, {data.totals.get("links", len(data.edges))}
 links. Circle size: chunks; colour: kind; line width: link strength; hover a file for its
 salience.{note}</p>
<p>{legend}</p>
<svg class="graph" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W:.0f} {_H:.0f}"
 width="{_W:.0f}" height="{_H:.0f}" role="img" aria-label="{html.escape(title)}">
<g class="links">{"".join(lines)}</g>
<g class="nodes">{"".join(circles)}</g>
</svg>
</body></html>
"""


def _dot_id(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(data: GraphData) -> str:
    """The graph as Graphviz DOT (undirected; render with ``neato -Tsvg``)."""
    out = [
        "graph memory {",
        "  overlap=false; splines=true;",
        '  node [shape=circle, style=filled, fontsize=9, fontname="Helvetica"];',
    ]
    for node in data.nodes:
        sal = node["salience"]
        out.append(
            f"  {_dot_id(node['path'])} [label={_dot_id(node['path'].rsplit('/', 1)[-1])},"
            f' fillcolor="{COLORS[node["kind"]]}", width={_radius(node["chunks"]) / 18:.2f},'
            f" tooltip={_dot_id(_tooltip(node))}, kind={node['kind']},"
            f" chunks={node['chunks']}, salience={'0' if sal is None else f'{sal:.3f}'}];"
        )
    top = max((s for *_, s in data.edges), default=1.0) or 1.0
    for a, b, s in data.edges:
        out.append(
            f"  {_dot_id(data.nodes[a]['path'])} -- {_dot_id(data.nodes[b]['path'])}"
            f" [weight={s:.3f}, penwidth={0.5 + 3.5 * s / top:.2f}];"
        )
    out.append("}")
    return "\n".join(out) + "\n"


def format_summary(s: dict[str, Any]) -> str:
    """The graph overview as text: totals, then the most connected files (names escaped)."""
    lines = [
        f"{s['files']} files, {s['total_chunks']} chunks, {s['total_crossrefs']} cross-references"
        f" from {s['chunks_with_refs']} chunks, {s['file_links']} file links"
        f" (threshold {s['threshold']:.3f}, {s['model']})",
        "Most connected:",
    ]
    lines += [
        f"  {escape_controls(f['file'])}: {f['linked_files']} linked files,"
        f" strength {f['strength']:.2f}"
        for f in s["most_connected"]
    ]
    return "\n".join(lines)


def format_show(s: dict[str, Any]) -> str:
    """One file's links as text (names and headers escaped: they are the notes' own)."""
    lines = [f"{escape_controls(s['path'])} is linked to:"]
    lines += [
        f"  {escape_controls(f['file'])} (strength {f['strength']:.2f})" for f in s["linked_files"]
    ] or ["  nothing above the threshold"]
    for out in s["outgoing"]:
        lines.append(f"{out['chunk']}-{out['endLine']} {escape_controls(out['header'])}:")
        lines += [
            f"  -> {escape_controls(r['target'])} {escape_controls(r['header'])} ({r['sim']:.2f})"
            for r in out["refs"]
        ]
    if s["incoming"]:
        lines.append("Referenced by:")
        lines += [
            f"  <- {escape_controls(r['source'])} {escape_controls(r['header'])} ({r['sim']:.2f})"
            for r in s["incoming"]
        ]
    return "\n".join(lines)
