#!/usr/bin/env python3
"""Cross-references between notes: crossref_memories.py build | show FILE | graph."""

import sys

from _enhanced_memory import run

if __name__ == "__main__":
    run(["crossref", *sys.argv[1:]])
