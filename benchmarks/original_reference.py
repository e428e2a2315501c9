"""The original skill's search, reimplemented in pure Python for the speed comparison only.

Written from the behaviour in ``SPEC.md`` section 2, not from its code: it
loads a ``vectors.json``-style list of ``{"file", "header", "line", "text",
"embedding"}`` dicts (as the original did on every call) and scores every chunk
in Python loops: cosine over lists, substring overlap per query word against
the lowercased text, header and path, adaptive weights, the x3 date boost on
file paths and the pseudo-relevance feedback pass. Date extraction reuses the
package's replay of the original's date rules (``core.original.parse_dates_original``),
which costs microseconds either way.

Nothing in the package imports this module.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_enhanced_memory.core.text import STOPWORDS_EN

WEIGHTS = (0.4, 0.25, 0.1, 0.25)
ADAPTIVE_WEIGHTS = (0.85, 0.05, 0.05, 0.05)
ADAPTIVE_THRESHOLD = 0.1
DATE_BOOST = 3.0
PRF_THRESHOLD = 0.45
_WORD = re.compile(r"\w+")


def load(path: str | Path) -> list[dict[str, Any]]:
    """Parse ``vectors.json`` (the original did this on every search)."""
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def query_words(query: str) -> list[str]:
    """``\\w+`` words of the lowercased query, longer than 2 characters, no stopwords."""
    return [w for w in _WORD.findall(query.lower()) if len(w) > 2 and w not in STOPWORDS_EN]


def cosine(a: list[float], b: list[float]) -> float:
    """Cosine similarity in a Python loop."""
    dot = na = nb = 0.0
    for x, y in zip(a, b, strict=False):
        dot += x * y
        na += x * x
        nb += y * y
    return dot / (math.sqrt(na) * math.sqrt(nb)) if na and nb else 0.0


def overlap(words: list[str], text: str) -> float:
    """Share of ``words`` found as substrings of ``text`` ("art" matches "start")."""
    if not words:
        return 0.0
    low = text.lower()
    return sum(1 for w in words if w in low) / len(words)


def _score_all(
    chunks: list[dict[str, Any]], query: str, qvec: list[float] | None, dates: list[str]
) -> list[float]:
    words = query_words(query)
    rows = []
    best_keyword = 0.0
    for c in chunks:
        vec = cosine(qvec, c["embedding"]) if qvec is not None else 0.0
        kw = overlap(words, c["text"])
        hd = overlap(words, c["header"])
        fp = overlap(words, c["file"].replace("-", " ").replace("_", " ").replace("/", " "))
        best_keyword = max(best_keyword, kw)
        rows.append((vec, kw, hd, fp))
    w = ADAPTIVE_WEIGHTS if qvec is not None and best_keyword < ADAPTIVE_THRESHOLD else WEIGHTS
    scores = []
    for c, (vec, kw, hd, fp) in zip(chunks, rows, strict=False):
        s = w[0] * vec + w[1] * kw + w[2] * hd + w[3] * fp
        if any(d in c["file"] for d in dates):
            s *= DATE_BOOST
        scores.append(s)
    return scores


def _expansion(chunks: list[dict[str, Any]], top: list[int], query: str) -> list[str]:
    skip = set(query_words(query)) | STOPWORDS_EN
    counts = Counter(
        w for i in top for w in _WORD.findall((chunks[i]["text"] + " " + chunks[i]["file"]).lower())
    )
    picked = [
        w
        for w, n in counts.most_common()
        if n >= 2 and len(w) > 3 and w not in skip and not w.isdigit()
    ]
    return picked[:5]


def search(
    chunks: list[dict[str, Any]],
    query: str,
    qvec: list[float] | None,
    now: datetime,
    top_n: int = 5,
    embed: Callable[[str], list[float]] | None = None,
) -> list[tuple[float, str, int]]:
    """Rank ``chunks`` for ``query`` the way the original skill did.

    Args:
        chunks: The parsed ``vectors.json``.
        query: The query.
        qvec: The query's embedding (None: keyword signals only).
        now: "Today" for relative dates.
        top_n: Results to return.
        embed: Embeds the expanded query for the feedback pass (default: reuse ``qvec``).

    Returns:
        ``(score, file, line)`` of the best ``top_n`` chunks, best first.
    """
    from langchain_enhanced_memory.core.original import parse_dates_original

    dates = [d.isoformat() for d in parse_dates_original(query, now).days]
    scores = _score_all(chunks, query, qvec, dates)
    if chunks and not dates and max(scores) < PRF_THRESHOLD:
        top = sorted(range(len(chunks)), key=lambda i: scores[i], reverse=True)[:3]
        extra = _expansion(chunks, top, query)
        if extra:
            wide = query + " " + " ".join(extra)
            wide_vec = embed(wide) if (embed and qvec is not None) else qvec
            rescored = _score_all(chunks, wide, wide_vec, dates)
            scores = [max(a, b) for a, b in zip(scores, rescored, strict=False)]
    order = sorted(range(len(chunks)), key=lambda i: scores[i], reverse=True)[:top_n]
    return [(scores[i], chunks[i]["file"], chunks[i]["line"]) for i in order]


def main(argv: list[str] | None = None) -> int:
    """One query as the original skill's process ran it: load ``vectors.json``, score, print.

    ``python original_reference.py VECTORS_JSON QVECS_JSON QUERY --now ISO``: the query's
    vector comes from ``QVECS_JSON`` (``{query: vector}``), standing in for the
    original's call to Ollama at no cost, so the comparison favours the original.
    It prints ``import_s``, the time spent importing this package's replay of
    the original's date rules (numpy and pydantic come with it), which the
    original's own process did not pay; the latency benchmark subtracts it.
    """
    import argparse
    import time

    t0 = time.perf_counter()
    import langchain_enhanced_memory.core.original  # noqa: F401

    import_s = time.perf_counter() - t0

    p = argparse.ArgumentParser(description="the original skill's per-query process")
    p.add_argument("vectors_json")
    p.add_argument("qvecs_json")
    p.add_argument("query")
    p.add_argument("--now", required=True)
    p.add_argument("--top", type=int, default=5)
    a = p.parse_args(argv)
    chunks = load(a.vectors_json)
    with open(a.qvecs_json, encoding="utf-8") as fh:
        qvec = json.load(fh).get(a.query)
    hits = search(chunks, a.query, qvec, datetime.fromisoformat(a.now), a.top)
    rows = [{"score": s, "file": f, "line": n} for s, f, n in hits]
    print(json.dumps({"results": rows, "import_s": import_s}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
