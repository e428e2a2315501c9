#!/usr/bin/env python3
"""OpenClaw memory_search JSON: enhanced_memory_search.py --json "query" [--k N]."""

import sys

from _enhanced_memory import run

if __name__ == "__main__":
    run(["search", *sys.argv[1:]])
