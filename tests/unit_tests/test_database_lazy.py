"""The database store loads psycopg only when a database is connected (the ``postgres`` extra)."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_package_and_the_store_loads_no_psycopg() -> None:
    code = (
        "import sys, langchain_enhanced_memory\n"
        "import langchain_enhanced_memory.store.database\n"
        "import langchain_enhanced_memory.engine.database\n"
        "print(sorted(m for m in sys.modules if m.startswith('psycopg')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
