"""What the entry point was told about this process and host, handed down once.

The store reads no environment: the entry point (:mod:`..config`) reads it and
installs a :class:`ProcessSettings` with :func:`use`. What lives here is what is
one value for the whole process: the user's folders (cache, state, sockets),
whether the query logs are forced on or off, whether the allocator may be
tuned, whether the database pools' reconnect warnings are shown. Until an entry
point installs one, the defaults hold (the folders under the home folder, the
rest unset). Standard library only: a one-shot search reads it before anything heavy.
"""

from __future__ import annotations

import os

__all__ = ["ProcessSettings", "current", "installed", "use"]


class ProcessSettings:
    """One process's settings that are not an engine's (see the module doc).

    Attributes:
        cache_home: The user's cache folder (``$XDG_CACHE_HOME``, else ``~/.cache``).
        state_home: The user's state folder (``$XDG_STATE_HOME``, else ``~/.local/state``).
        runtime_dir: The user's runtime folder for sockets (``$XDG_RUNTIME_DIR``), or None.
        log: Query and access logs forced on (True) or off (False); None: the setting decides.
        malloc_tune: The allocator tuned in any process (True), never (False), or only
            in a server that opted in (None).
        debug: Tracebacks and the database pools' warnings shown.
        original_model: The model the original skill was told to embed with
            (``$EMBED_MODEL``): which model made its ``vectors.json``.
    """

    __slots__ = (
        "cache_home",
        "debug",
        "log",
        "malloc_tune",
        "original_model",
        "runtime_dir",
        "state_home",
    )

    def __init__(
        self,
        *,
        cache_home: str | None = None,
        state_home: str | None = None,
        runtime_dir: str | None = None,
        log: bool | None = None,
        malloc_tune: bool | None = None,
        debug: bool = False,
        original_model: str | None = None,
    ) -> None:
        home = os.path.expanduser("~")
        self.cache_home = cache_home or os.path.join(home, ".cache")
        self.state_home = state_home or os.path.join(home, ".local", "state")
        self.runtime_dir = runtime_dir or None
        self.log = log
        self.malloc_tune = malloc_tune
        self.debug = debug
        self.original_model = original_model or None


_current = ProcessSettings()
_installed = False


def current() -> ProcessSettings:
    """The settings the entry point installed (the defaults until one did)."""
    return _current


def use(settings: ProcessSettings) -> None:
    """Install ``settings`` for this process (the entry point does, once per command)."""
    global _current, _installed
    _current, _installed = settings, True


def installed() -> bool:
    """Whether an entry point has installed this process's settings yet."""
    return _installed
