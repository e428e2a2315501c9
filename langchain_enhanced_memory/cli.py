"""The ``enhanced-memory`` command: the entry point, nothing else.

A ``search`` or ``eval`` goes first to the workspace's resident engine when one
runs (:mod:`.servers.client`, standard library only, so such a call loads no
numpy, pydantic or LangChain), and otherwise runs here through
:func:`.commands.execute`; each sub-command lives in ``commands/<name>.py``.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence

# Not `from typing import ...`: typing costs a call through the resident engine milliseconds.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

__all__ = ["main", "run"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``enhanced-memory`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    from .servers.client import call_resident

    answer = call_resident(argv)
    if answer is not None:
        rc, out, err = answer
        sys.stderr.write(err)
        sys.stdout.write(out)
        return rc
    from .commands import execute

    return execute(argv)


def run(argv: Sequence[str] | None = None) -> NoReturn:
    """Entry point of the ``enhanced-memory`` console script: :func:`main`, then exit."""
    rc = main(argv)
    # The interpreter exits next, and its last collection would walk every object the
    # command left (a search's snapshot: a share of a one-shot call worth saving). Frozen,
    # they are skipped; exit handlers and flushes still run.
    gc.freeze()
    sys.exit(rc)


if __name__ == "__main__":
    # Run the imported module's entry: under ``python -m`` this file is ``__main__``, and
    # the error classes must be the ones the commands raise.
    from langchain_enhanced_memory.cli import run as _run

    _run()
