"""Keep the heap memory a large search frees, instead of handing it back each query (glibc).

A hybrid search over a million chunks makes a dozen or two arrays of 4 MB and
frees them. glibc's malloc gives free memory at the top of its heap back to the
kernel once more of it is free than a threshold (twice the largest block
recently freed), so the next search takes fresh pages and faults each one in
again: at 1M chunks, many times the page faults and a slower hybrid p50
(docs/design.md, "The allocator setting", has the figures). Raising the trim
threshold (and fixing the mmap threshold, which else stays at 128 KB once the
other is set) keeps those pages in the process; its peak RSS is about the same,
since a search holds them at its peak anyway.

It is a setting of the whole process, so a library never makes it on its own:
only a process that asked (:func:`opt_in`: ``serve``, ``mcp`` and the resident
engine do, for their own process; or ``ENHANCED_MEMORY_MALLOC_TUNE=1``, which the
entry point hands down as :attr:`.process.ProcessSettings.malloc_tune`), and
then once it holds a large index (:data:`LARGE_ROWS`).
``ENHANCED_MEMORY_MALLOC_TUNE=0`` leaves the allocator alone even there. Other
C libraries (musl, macOS) are left as they are.
"""

from __future__ import annotations

import sys

from . import process

__all__ = ["LARGE_ROWS", "keep_freed_memory", "opt_in", "wanted"]


LARGE_ROWS = 100_000  # a snapshot this large makes arrays of 400 KB and more per query
_M_TRIM_THRESHOLD = -1  # mallopt parameters, from glibc's malloc.h
_M_MMAP_THRESHOLD = -3
TRIM_BYTES = 256 << 20  # free memory kept at the heap's top before any goes back
MMAP_BYTES = 32 << 20  # blocks below this come from the heap (glibc's own ceiling)

_asked: bool | None = None  # the answer of the first call: one try per process
_opted_in = False


def opt_in() -> None:
    """Let this process tune the allocator once it loads a large index (a server command's)."""
    global _opted_in
    _opted_in = True


def wanted() -> bool:
    """Whether this process asked for the tuning (:func:`opt_in`, or the process setting)."""
    setting = process.current().malloc_tune
    return setting is True or (_opted_in and setting is not False)


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed memory (once per process); whether it now does."""
    global _asked
    if _asked is None:
        _asked = _ask()
    return _asked


def _ask() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # only here: a one-shot search of a small workspace never needs it

    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018  (glibc only: musl's mallopt does nothing)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_BYTES)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_BYTES)
    )
