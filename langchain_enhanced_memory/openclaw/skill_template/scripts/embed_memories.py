#!/usr/bin/env python3
"""Bring the memory index up to date (embeds only new or changed chunks)."""

import sys

from _enhanced_memory import run

if __name__ == "__main__":
    run(["index", *sys.argv[1:]])
