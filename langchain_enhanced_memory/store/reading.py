"""Read a memory file as the lines an editor shows, safely.

:func:`read_lines` turns a file into the exact lines an editor shows, so that
1-based line numbers reported by search point at the right place;
:func:`read_blocks` yields the same lines a block at a time, so a long note
is never held whole. A file that is too large, looks binary or cannot be read
raises :class:`UnreadableFileError`.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from ..core.text import escape_controls

__all__ = [
    "BINARY_SNIFF_BYTES",
    "BLOCK_BYTES",
    "MAX_FILE_BYTES",
    "MAX_TRANSCRIPT_BYTES",
    "Digest",
    "UnreadableFileError",
    "read_blocks",
    "read_lines",
    "split_lines",
]

#: Files larger than this are refused by :func:`read_lines` (notes are never this big;
#: a file that is is almost surely a dump that would swamp the index).
MAX_FILE_BYTES = 64 * 1024 * 1024

#: How many leading bytes are checked for NUL bytes to spot binary files.
BINARY_SNIFF_BYTES = 8192

#: A transcript may be larger: it is read a block at a time and, as it grows, only its tail.
MAX_TRANSCRIPT_BYTES = 1 << 30

#: Bytes :func:`read_blocks` reads at a time (a block is then cut after its last newline).
BLOCK_BYTES = 1 << 20

_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = {b"\xff\xfe": "utf-16-le", b"\xfe\xff": "utf-16-be"}


class UnreadableFileError(Exception):
    """A memory file that cannot be turned into text lines.

    Attributes:
        path: The file that could not be read.
        reason: A short human-readable reason ("looks binary", "too large", ...).
    """

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"cannot read {escape_controls(str(path))}: {escape_controls(reason)}")

    def named(self, rel: str) -> str:
        """``rel: reason``, for a message that names the file as the user knows it."""
        return f"{escape_controls(rel)}: {escape_controls(self.reason)}"


class Digest(Protocol):
    """A running hash (``hashlib``'s objects)."""

    def update(self, data: bytes, /) -> None:
        """Add bytes."""
        ...

    def hexdigest(self) -> str:
        """The hash of the bytes so far."""
        ...


def read_lines(path: Path | str) -> list[str]:
    r"""Read a text file as the lines an editor shows.

    Line ``N`` (1-based) of the result is line ``N`` in an editor: only ``\n`` and
    ``\r\n`` end lines (a lone ``\r``, ``\x0b``, ``\x1c`` or ``\u2028`` stays inside
    its line), a final newline does not add an empty line, a UTF-8 BOM is dropped
    and invalid UTF-8 becomes U+FFFD. Files starting with a UTF-16 BOM are decoded
    as UTF-16.

    Args:
        path: The file.

    Returns:
        The lines without their line endings; ``[]`` for an empty file.

    Raises:
        UnreadableFileError: The file cannot be read, is larger than
            :data:`MAX_FILE_BYTES`, or looks binary (NUL bytes in its first
            :data:`BINARY_SNIFF_BYTES` bytes).
    """
    return [line for _, _, block in read_blocks(path) for line in block]


def read_blocks(
    path: Path | str,
    offset: int = 0,
    line: int = 0,
    digest: Digest | None = None,
    hashed: int = 0,
    max_bytes: int | None = None,
    sniff: bool = True,
) -> Iterator[tuple[int, int, list[str]]]:
    r"""Read a file from ``offset`` as :func:`read_lines` does, a block of whole lines at a time.

    Each block is about :data:`BLOCK_BYTES` and ends after a newline (the
    last one where the file ends), so UTF-8 decodes the same as the whole
    file's. A UTF-16 file is read whole, as one block at offset -1 (its
    newlines are not the byte ``\n``).

    Args:
        path: The file.
        offset: Where to start: 0, or the byte offset of a block's first line.
        line: That line's index (0-based).
        digest: Fed the bytes read from ``hashed`` on (the caller fed it the ones before).
        hashed: Bytes ``digest`` has already seen.
        max_bytes: The largest file read (:data:`MAX_FILE_BYTES` when None;
            :data:`MAX_TRANSCRIPT_BYTES` for a transcript).
        sniff: Refuse a file with NUL bytes near the start as binary (False for a
            transcript, whose lines are judged one by one: a NUL costs its line).

    Yields:
        ``(first line index, byte offset of the block, lines)``.

    Raises:
        UnreadableFileError: As :func:`read_lines`.
    """
    try:
        fh = open(path, "rb")  # noqa: SIM115 (a generator: closed in finally)
    except OSError as exc:
        raise UnreadableFileError(path, exc.strerror or type(exc).__name__) from exc
    try:
        size = os.fstat(fh.fileno()).st_size
        if max_bytes is None:
            max_bytes = MAX_FILE_BYTES
        if size > max_bytes:
            raise UnreadableFileError(path, _too_large(size, max_bytes))
        head = os.pread(fh.fileno(), BINARY_SNIFF_BYTES, 0)
        if any(head.startswith(bom) for bom in _UTF16_BOMS):
            yield line, -1, split_lines(_decode(_read_all(path, fh, digest, hashed)))
            return
        if sniff and b"\x00" in head:
            raise UnreadableFileError(path, "looks binary (NUL bytes near the start)")
        fh.seek(offset)
        at, rest = offset, b""
        while raw := fh.read(BLOCK_BYTES):
            if digest is not None and at + len(raw) > hashed:
                digest.update(raw[max(hashed - at, 0) :])
            at += len(raw)
            if at > max_bytes:
                raise UnreadableFileError(path, _too_large(at, max_bytes))
            data = rest + raw
            cut = data.rfind(b"\n") + 1
            if cut:
                lines = split_lines(_decode(data[:cut], offset == 0))
                yield line, offset, lines
                line, offset, rest = line + len(lines), offset + cut, data[cut:]
            else:
                rest = data
        if rest:
            yield line, offset, split_lines(_decode(rest, offset == 0))
    except OSError as exc:
        raise UnreadableFileError(path, exc.strerror or type(exc).__name__) from exc
    finally:
        fh.close()


def _read_all(path: Path | str, fh: io.BufferedReader, digest: Digest | None, hashed: int) -> bytes:
    # Read one byte past the cap in case the file grew since fstat.
    data = fh.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise UnreadableFileError(path, _too_large(len(data)))
    if digest is not None:
        digest.update(data[hashed:])
    return data


def split_lines(text: str) -> list[str]:
    r"""Lines of decoded text: ``\r\n`` and ``\n`` end a line, a final one adds none."""
    if not text:
        return []
    lines = text.replace("\r\n", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start one
    return lines


def _decode(data: bytes, at_start: bool = True) -> str:
    """Text of the file's bytes (``at_start``: from its first byte, where a BOM may be)."""
    if at_start:
        for bom, codec in _UTF16_BOMS.items():
            if data.startswith(bom):
                return data[len(bom) :].decode(codec, errors="replace")
        if data.startswith(_UTF8_BOM):
            data = data[len(_UTF8_BOM) :]
    return data.decode("utf-8", errors="replace")


def _too_large(size: int, limit: int = MAX_FILE_BYTES) -> str:
    return f"too large ({size / 1048576:.1f} MB, limit {limit // 1048576} MB)"
