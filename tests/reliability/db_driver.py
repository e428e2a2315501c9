"""A child process that writes a database scope, for the kill campaigns of db_faults.py.

    python -m tests.reliability.db_driver publish URL SCOPE WORKSPACE
    python -m tests.reliability.db_driver append URL SCOPE TEXT

It goes through :class:`langchain_enhanced_memory.store.database.Database` as the
CLI's ``index --database`` and ``remember --database`` do, with a fake embedder
(vectors from a hash of each text), so segments carry vectors as a real publish's.
Prints ``done GENERATION`` (publish) or ``done LINE`` (append) when its write is
committed; a :class:`DatabaseError` is one line on stderr and exit status 1.
"""

from __future__ import annotations

import hashlib
import socket
import sys
from datetime import datetime

import numpy as np

from langchain_enhanced_memory.core.errors import EnhancedMemoryError
from langchain_enhanced_memory.store.database import Database, Embedding
from langchain_enhanced_memory.store.index import MemoryIndex
from langchain_enhanced_memory.store.upkeep import embed_missing

MODEL = "test/hash-16"
#: The day appends are dated (their daily note), whatever the clock says.
DAY = datetime(2026, 12, 9, 10, 0)


def hash_vectors(texts: list[str]) -> np.ndarray:
    """One unit vector per text, a function of its bytes only."""
    out = np.empty((len(texts), 16), dtype=np.float32)
    for i, text in enumerate(texts):
        digest = hashlib.sha256(text.encode("utf-8")).digest()
        out[i] = np.frombuffer(digest[:16], dtype=np.int8).astype(np.float32) + 0.5
    return out / np.linalg.norm(out, axis=1, keepdims=True)


FAKE = Embedding(MODEL, hash_vectors)


def main(argv: list[str]) -> int:
    action, url, scope, arg = argv
    try:
        with Database.connect(url) as db:
            if action == "publish":
                index = MemoryIndex(arg)
                index.sync()
                embed_missing(index, MODEL, hash_vectors)
                owner = f"{socket.gethostname()}:{index.workspace.resolve()}"
                report = db.publish(scope, index, MODEL, owner=owner)
                print(f"done {report.generation}", flush=True)
            else:
                result = db.append(scope, arg, embed=FAKE, now=DAY)
                print(f"done {result.line}", flush=True)
    except EnhancedMemoryError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
