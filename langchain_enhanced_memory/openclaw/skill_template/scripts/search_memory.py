#!/usr/bin/env python3
"""Readable search results: search_memory.py "query" [top_n]."""

import sys

from _enhanced_memory import run

if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) >= 2 and not args[0].startswith("-") and not args[1].startswith("-"):
        args = [args[0], "--k", args[1], *args[2:]]  # the original's positional top_n
    run(["search", *args])
