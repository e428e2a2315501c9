#!/usr/bin/env python3
"""Memory notes that need attention: memory_salience.py [--top N] [--json]."""

import sys

from _enhanced_memory import run

if __name__ == "__main__":
    run(["salience", *sys.argv[1:]])
