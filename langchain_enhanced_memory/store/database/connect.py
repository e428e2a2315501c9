"""Connections to PostgreSQL: one pool per URL and size per process, errors as one redacted line.

psycopg 3 and psycopg_pool are imported here and in this package only, and
only when a database is used (the ``postgres`` extra). Every failure becomes a
:class:`..core.errors.DatabaseError` whose message shows the URL with its
password replaced by ``***``, and never the password anywhere else in it. A URL
whose password libpq could read as another part (a raw ``/`` or ``@``), or that
libpq cannot parse, is refused before libpq reads it, and shown nowhere
(:func:`check_url`): libpq's own messages would quote pieces of it.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ...core.errors import DatabaseError, one_line
from .. import process

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["Pool", "carries_password", "check_url", "redact", "shared_pool", "shown_url"]

# user:password@ in any text (also a mistyped URL), and password=... in a key=value string:
# a quoted value (backslash escapes, maybe unterminated) or an unquoted one (escapes too).
_URL_SECRET = re.compile(r"([^\s:/@\"']+:)([^\s/@\"']*)@")
_KEY_SECRET = re.compile(
    r"(password\s*=\s*)('(?:[^'\\]|\\.)*(?:'|\\?$)|(?:\\.|\\$|[^\s\\])+)", re.IGNORECASE
)
_UNESCAPE = re.compile(r"\\(.)")
#: What messages show instead of a URL that cannot be read (its text may hold a password).
UNREADABLE = "(a URL that cannot be read, not shown)"
CONNECT_TIMEOUT_S = 10
POOL_TIMEOUT_S = 5.0
#: Connections a process keeps at most to one server (``$ENHANCED_MEMORY_POOL_SIZE``).
POOL_SIZE = 8
#: The name of this package's pools (in psycopg_pool's log records and thread names).
POOL_NAME = "enhanced-memory"
#: SQLSTATE of a statement the role has no privilege for (or a row-level policy refuses).
_NOT_ALLOWED = "42501"
#: A failed connect the server answered has its severity in libpq's message (no SQLSTATE) ...
_ANSWERED = re.compile(r"\b(?:FATAL|ERROR|PANIC):")
#: ... but a server starting, stopping or recovering (57P03) is not up: as one that is down.
_NOT_UP = re.compile(r"the database system is (?:starting|shutting|in recovery|not yet accepting)")


def _userinfo(url: str) -> str | None:
    """The ``user[:password]`` of a ``scheme://`` URL: all before its last ``@`` (None: none).

    The last ``@``, not the first as libpq reads it: a raw ``@`` or ``/`` in a password
    is then inside what is masked, never shown as a host or a database name.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme.isidentifier() or "@" not in rest:
        return None
    return rest.rpartition("@")[0]


def _parsed_password(url: str) -> tuple[bool, str | None]:
    """Whether libpq reads ``url`` (psycopg absent: assumed so), and the password it uses."""
    try:
        from psycopg import conninfo
    except ImportError:
        return True, None
    try:
        password = conninfo.conninfo_to_dict(url).get("password")
    except Exception:  # noqa: BLE001 (libpq's parse errors come in several kinds)
        return False, None
    return True, None if password is None else str(password)


def _secrets(url: str) -> list[str]:
    """Each form of each password in ``url`` (as written, decoded, unescaped), longest first."""
    found: set[str] = set()
    info = _userinfo(url)
    if info and ":" in info:
        raw = info.split(":", 1)[1]
        found |= {raw, unquote(raw)}
    for match in _URL_SECRET.finditer(url):  # a mistyped URL's (no "://")
        found |= {match.group(2), unquote(match.group(2))}
    for match in _KEY_SECRET.finditer(url):
        raw = match.group(2)
        inner = raw[1:].removesuffix("'") if raw.startswith("'") else raw
        found |= {raw, inner, _UNESCAPE.sub(r"\1", inner), unquote(inner)}
    password = _parsed_password(url)[1]
    if password:
        found.add(password)
    return sorted((s for s in found if s), key=len, reverse=True)


def carries_password(url: str) -> bool:
    """Whether ``url`` holds a password (in its ``user:password@`` or a ``password=``)."""
    return bool(_secrets(url))


def check_url(url: str) -> None:
    """Refuse a URL whose password could be read as another part of it, or that libpq cannot read.

    Such a URL is never shown: libpq would name a piece of its password as a host, a
    port or a database (``user:pa/ss@host`` reads as host ``user``, port ``pa``).

    Raises:
        DatabaseError: The URL is refused (its text is in no part of the message).
    """
    info = _userinfo(url)
    if info and ":" in info and ("/" in info or "@" in info):
        raise DatabaseError(
            "the database URL's user name or password holds a raw '/' or '@' (URL not shown):"
            " percent-encode them (/ as %2F, @ as %40)",
            "or pass the password another way (PGPASSWORD, ~/.pgpass)",
        )
    if not _parsed_password(url)[0]:
        raise DatabaseError(
            "the database URL cannot be read (so it is not shown)",
            "write it as postgresql://USER@HOST:PORT/DATABASE, percent-encoding special"
            " characters, or as key=value pairs",
        )


def redact(text: str, url: str) -> str:
    """``text`` with the password of ``url`` (and any other URL's or ``password=``'s) as ``***``."""
    for secret in _secrets(url):
        text = text.replace(secret, "***")
    text = _URL_SECRET.sub(r"\1***@", text)
    return _KEY_SECRET.sub(r"\1***", text)


def shown_url(url: str) -> str:
    """The URL as messages show it (password as ``***``; :data:`UNREADABLE` for a refused one)."""
    try:
        check_url(url)
    except DatabaseError:
        return UNREADABLE
    info = _userinfo(url)
    if info and ":" in info:  # masked before any parsing: the user, then all up to the last @
        scheme, _, rest = url.partition("://")
        url = f"{scheme}://{info.split(':', 1)[0]}:***@{rest.rpartition('@')[2]}"
    return one_line(redact(url, url), 120)


def unanswered(exc: BaseException) -> bool:
    """Whether a failed connect (or a lost connection) had no answer from a server that is up."""
    text = str(exc)
    return getattr(exc, "sqlstate", None) is None and (
        not _ANSWERED.search(text) or bool(_NOT_UP.search(text))
    )


def failure(
    url: str, exc: BaseException, doing: str = "", *, unreachable: bool = False
) -> DatabaseError:
    """The one-line error of ``exc`` on database ``url`` (a refused URL's: no text of ``exc``).

    ``unreachable``: no server answered (:attr:`..core.errors.DatabaseError.unreachable`).
    """
    try:
        check_url(url)
    except DatabaseError as refused:
        return refused
    what = one_line(redact(str(exc) or type(exc).__name__, url), 200)
    where = f"database {shown_url(url)}"
    message = f"{where}: {doing + ': ' if doing else ''}{what}"
    if getattr(exc, "sqlstate", None) == _NOT_ALLOWED:  # reachable, but this role may not
        return DatabaseError(
            message,
            "this database role may not do this: use a role that may write (or is granted"
            " it), or only search with this one",
        )
    return DatabaseError(message, unreachable=unreachable)


class _QuietPool(logging.Filter):
    """Drops the warnings of this package's pools unless ``ENHANCED_MEMORY_DEBUG=1``.

    While the server is down they say each reconnect, in two lines, about every
    second; each failed call says its own one line instead.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR or process.current().debug:
            return True
        ours = (record.threadName or "").startswith(f"{POOL_NAME}-") or POOL_NAME in map(
            str, record.args if isinstance(record.args, tuple) else ()
        )
        return not ours


_QUIET = _QuietPool()


def _modules() -> tuple[Any, Any]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError:
        raise DatabaseError(
            "PostgreSQL support is not installed",
            "pip install 'langchain-enhanced-memory[postgres]'",
        ) from None
    return psycopg, psycopg_pool


class Pool:
    """A pool of connections to one URL; :meth:`connection` raises one-line errors.

    Args:
        url: A ``postgresql://`` URL or a ``key=value`` connection string.
        size: The most connections it opens (one is kept open).
        doing: What the caller does, for the error message of a first connection that fails.
    """

    def __init__(self, url: str, size: int = POOL_SIZE, doing: str = "") -> None:
        self.url = url
        self.size = size
        psycopg, psycopg_pool = _modules()
        self._psycopg = psycopg
        self._errors: tuple[type[BaseException], ...] = (psycopg.Error,)
        self._lost: type[BaseException] = psycopg.OperationalError
        self._pool_timeout: type[BaseException] = psycopg_pool.PoolTimeout
        check_url(url)  # before libpq reads it: its errors could quote a piece of the password
        self.down = False  # the last try found the server unreachable: probe before waiting
        logging.getLogger("psycopg.pool").addFilter(_QUIET)  # a no-op after the first pool
        # One plain connection first: a bad URL or a server that is down is said
        # at once and in words, not as a pool timeout.
        self.probe(doing)
        self._pool: ConnectionPool = psycopg_pool.ConnectionPool(
            url,
            min_size=1,
            max_size=size,
            open=True,
            timeout=POOL_TIMEOUT_S,
            check=psycopg_pool.ConnectionPool.check_connection,
            # Autocommit: a lone read (a search's generation check) is one round trip;
            # writes and multi-statement reads open their transaction (``connection``).
            kwargs={"connect_timeout": CONNECT_TIMEOUT_S, "autocommit": True},
            name=POOL_NAME,
        )
        self.users = 0

    @contextlib.contextmanager
    def connection(
        self, doing: str = "", transaction: bool = True, wait_s: float | None = None
    ) -> Iterator[psycopg.Connection]:
        """A connection, in a transaction (committed when the block ends, else rolled back).

        Args:
            doing: What the caller does, for the error message.
            transaction: False: each statement commits alone (a single read).
            wait_s: How long to wait for a free connection (default :data:`POOL_TIMEOUT_S`).
        """
        try:
            with self._lease(doing, wait_s) as conn:
                if not transaction:
                    yield conn
                    return
                with conn.transaction():
                    yield conn
        except self._pool_timeout:
            self.probe(doing)  # says why no connection came (refused, down, a bad password) ...
            raise failure(self.url, TimeoutError("no connection came in time"), doing) from None
        except self._errors as exc:
            lost = isinstance(exc, self._lost) and unanswered(exc)
            if isinstance(exc, self._lost):  # the connection died under the call
                self.down = True
            raise failure(self.url, exc, doing, unreachable=lost) from None

    @contextlib.contextmanager
    def _lease(self, doing: str, wait_s: float | None) -> Iterator[psycopg.Connection]:
        """A connection of the pool; one of its own while the server is down or just back.

        While the server is down, opening one says so at once, instead of a
        pool wait. Once it is back the pool may still be waiting out its
        reconnect backoff (after a minute down, about a minute more), so until
        the pool holds a connection again each call opens its own.
        """
        if self.down and not self._pool.get_stats().get("pool_available"):
            with self._open(doing) as conn:
                yield conn
            return
        with self._pool.connection(timeout=wait_s) as conn:
            self.down = False
            yield conn

    def _open(self, doing: str = "") -> psycopg.Connection:
        """One connection outside the pool, set as the pool's are (a failure: one line)."""
        try:
            return self._psycopg.connect(
                self.url, connect_timeout=CONNECT_TIMEOUT_S, autocommit=True
            )
        except Exception as exc:  # noqa: BLE001 (psycopg raises several kinds for a bad URL)
            self.down = True
            what = f"{doing}: cannot connect" if doing else "cannot connect"
            raise failure(self.url, exc, what, unreachable=unanswered(exc)) from None

    def probe(self, doing: str = "") -> None:
        """Open and close one connection (raises the one-line error of a failure)."""
        self._open(doing).close()

    def close(self) -> None:
        """Close every connection."""
        self._pool.close()


_POOLS: dict[tuple[str, int], Pool] = {}
_LOCK = threading.Lock()


def shared_pool(url: str, size: int = POOL_SIZE, doing: str = "") -> Pool:
    """This process's pool of ``url`` and ``size`` (made on first use; :func:`release` it).

    ``doing`` is what the caller does, for the error message when the first connection fails.
    """
    with _LOCK:
        pool = _POOLS.get((url, size))
        if pool is None:
            pool = _POOLS[url, size] = Pool(url, size, doing)
        pool.users += 1
        return pool


def release(pool: Pool) -> None:
    """One user less of ``pool``; the last one closes it."""
    with _LOCK:
        pool.users -= 1
        if pool.users <= 0 and _POOLS.get((pool.url, pool.size)) is pool:
            del _POOLS[pool.url, pool.size]
            pool.close()
