"""The one place the package reads its environment: defaults, then the environment, then arguments.

:data:`VARIABLES` lists every variable the package reads (docs/configuration.md
shows the same table; a test keeps them equal, and no module below the entry
points reads one). :class:`Environment` reads them once, typed;
:func:`load` reads them and installs what is one value for the whole process
(:class:`~.store.process.ProcessSettings`: the user's folders, the logs switch,
the allocator, debug); :func:`engine_config` builds an
:class:`~.engine.config.EngineConfig` from the defaults, then the environment,
then the arguments. The entry points (the command line, the retriever and the
tools, the scope functions, the resident engine's client) call them; what they
build is passed down typed.

Standard library only at import: the one-shot client reads the environment
before anything heavy is imported.
"""

from __future__ import annotations

import os

from .store import process

TYPE_CHECKING = False  # not typing's: the one-shot client imports this module
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path
    from typing import Any

    from .core.settings import MemorySettings
    from .engine.config import Embedder, EmbedderErrors, EngineConfig

__all__ = [
    "FORWARDED",
    "VARIABLES",
    "Environment",
    "caller_environ",
    "engine_config",
    "ensure_loaded",
    "load",
    "with_sessions",
    "workspace_folder",
]

#: Every variable the package reads: ``(name, what it sets, sent to the resident engine)``.
#: The resident engine runs a one-shot call's command with the caller's values of those sent.
VARIABLES: tuple[tuple[str, str, bool], ...] = (
    ("OPENCLAW_WORKSPACE_DIR", "the workspace", True),
    ("MEMORY_DIR", "the workspace (its parent when it names `memory/`)", True),
    ("ENHANCED_MEMORY_PROFILE", "the scoring profile", True),
    ("ENHANCED_MEMORY_EMBEDDER", "the embedder", True),
    ("EMBED_MODEL", "the Ollama model (and the model of the original's `vectors.json`)", True),
    ("OLLAMA_URL", "Ollama's URL", True),
    ("ENHANCED_MEMORY_ON_EMBEDDER_ERROR", "when the embedder is down or fails", True),
    ("ENHANCED_MEMORY_INDEX", "the index file", True),
    ("ENHANCED_MEMORY_SESSION_DIRS", "more transcript folders (`:`-separated)", True),
    ("ENHANCED_MEMORY_LOG", "query and access logs forced off (`0`) or on (`1`)", True),
    ("ENHANCED_MEMORY_DATABASE_URL", "the database of shared scopes", True),
    ("ENHANCED_MEMORY_READ_URL", "a streaming replica searches read from", True),
    ("ENHANCED_MEMORY_POOL_SIZE", "connections per process to each database server", True),
    ("ENHANCED_MEMORY_DATABASE_CACHE", "this host's copies of scope segments (`0`: none)", True),
    ("ENHANCED_MEMORY_MALLOC_TUNE", "keep the heap a search frees (`1`; `0`: never)", True),
    ("ENHANCED_MEMORY_DAEMON", "the resident engine (`0`: not used, not started)", True),
    ("ENHANCED_MEMORY_DAEMON_TIMEOUT", "seconds a one-shot call waits for it", True),
    ("ENHANCED_MEMORY_DEBUG", "tracebacks and pool warnings instead of one line", True),
    ("XDG_CACHE_HOME", "the user's cache folder (read-only workspaces' indexes, copies)", True),
    ("XDG_STATE_HOME", "the user's state folder (this host's id)", False),
    ("XDG_RUNTIME_DIR", "the user's folder for the resident engine's socket and lock", False),
)
#: The variables the resident engine takes from each caller.
FORWARDED = frozenset(name for name, _, sent in VARIABLES if sent)
_OFF = {"0", "false", "no", "off"}
_ON = {"1", "true", "yes", "on"}


def _switch(value: str | None) -> bool | None:
    """``1``/``true``/``yes``/``on`` or their opposites; None when unset or neither."""
    word = (value or "").strip().lower()
    return True if word in _ON else False if word in _OFF else None


class Environment:
    """The package's variables (:data:`VARIABLES`), read once; None where one is unset.

    Reading never fails: a value that does not parse is refused where it is used
    (:attr:`pool_size`, :attr:`daemon_timeout_s`), in one line.

    Attributes:
        workspace: ``$OPENCLAW_WORKSPACE_DIR``, else the workspace ``$MEMORY_DIR`` names.
        profile, embedder, model, ollama_url, on_embedder_error, index_path: The
            engine's fields the environment may set (:func:`engine_config`).
        session_dirs: ``$ENHANCED_MEMORY_SESSION_DIRS``, split.
        database_url, read_url: The database of the scopes and its replica.
        database_cache: Where copies of segments go: ``"default"``, a folder, or None.
        daemon: Whether the resident engine may be used (``$ENHANCED_MEMORY_DAEMON``).
        process_settings: What :func:`load` installs for the whole process.
        forwarded: The variables a one-shot call sends the resident engine.
        libpq: Whether any of libpq's ``PG*`` variables is set.
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ

        def get(name: str) -> str | None:
            return env.get(name) or None

        self.workspace = get("OPENCLAW_WORKSPACE_DIR") or _memory_dir_workspace(get("MEMORY_DIR"))
        self.profile = get("ENHANCED_MEMORY_PROFILE")
        self.embedder = get("ENHANCED_MEMORY_EMBEDDER")
        self.model = get("EMBED_MODEL")
        self.ollama_url = get("OLLAMA_URL")
        self.on_embedder_error = get("ENHANCED_MEMORY_ON_EMBEDDER_ERROR")
        self.index_path = get("ENHANCED_MEMORY_INDEX")
        self.session_dirs = tuple(
            d for d in (get("ENHANCED_MEMORY_SESSION_DIRS") or "").split(os.pathsep) if d.strip()
        )
        self.database_url = get("ENHANCED_MEMORY_DATABASE_URL")
        self.read_url = get("ENHANCED_MEMORY_READ_URL")
        self._pool_size = get("ENHANCED_MEMORY_POOL_SIZE")
        cache = (get("ENHANCED_MEMORY_DATABASE_CACHE") or "").strip()
        #: The copies' folder: ``"default"`` (the user's cache folder), a folder, None (none).
        self.database_cache: str | None = None if cache == "0" else cache or "default"
        self.daemon = _switch(get("ENHANCED_MEMORY_DAEMON")) is not False
        self._daemon_timeout = get("ENHANCED_MEMORY_DAEMON_TIMEOUT")
        self.process_settings = process.ProcessSettings(
            cache_home=get("XDG_CACHE_HOME"),
            state_home=get("XDG_STATE_HOME"),
            runtime_dir=get("XDG_RUNTIME_DIR"),
            log=_switch(get("ENHANCED_MEMORY_LOG")),
            malloc_tune={"1": True, "0": False}.get(get("ENHANCED_MEMORY_MALLOC_TUNE") or ""),
            debug=bool(get("ENHANCED_MEMORY_DEBUG")),
            original_model=(get("EMBED_MODEL") or "").strip(),
        )
        self.forwarded = {k: v for k, v in env.items() if k in FORWARDED}
        #: Whether libpq's own variables (``PGPASSWORD``, ``PGUSER``...) are set: a search
        #: of database scopes then runs in the caller's process, whose libpq reads them.
        self.libpq = any(k.startswith("PG") for k in env)

    @property
    def pool_size(self) -> int | None:
        """``$ENHANCED_MEMORY_POOL_SIZE`` as a number (None: unset).

        Raises:
            SettingsError: Not a whole number.
        """
        if self._pool_size is None:
            return None
        try:
            return int(self._pool_size)
        except ValueError:
            from .core.errors import SettingsError

            raise SettingsError(
                f"must be a whole number, got {self._pool_size!r}", "ENHANCED_MEMORY_POOL_SIZE"
            ) from None

    @property
    def daemon_timeout_s(self) -> float:
        """``$ENHANCED_MEMORY_DAEMON_TIMEOUT`` (default 600 s).

        Raises:
            ValueError: Not a number.
        """
        return float(self._daemon_timeout or 600)


def _memory_dir_workspace(memory_dir: str | None) -> str | None:
    """The workspace of the original's ``MEMORY_DIR``, which names the ``memory/`` folder."""
    if not memory_dir:
        return None
    mem = os.path.expanduser(memory_dir).rstrip(os.sep) or os.sep
    return (os.path.dirname(mem) or ".") if os.path.basename(mem) == "memory" else mem


def load(environ: Mapping[str, str] | None = None) -> Environment:
    """Read the environment and install its process-wide values (each entry point, each command).

    Args:
        environ: The variables (default ``os.environ``).
    """
    env = Environment(environ)
    process.use(env.process_settings)
    return env


def ensure_loaded() -> None:
    """:func:`load`, unless an entry point already did in this process.

    For a library user's first public name (``MemorySearch(...)``, the LangGraph
    store): ``ENHANCED_MEMORY_LOG=0`` and the ``XDG_*`` folders hold for them too.
    """
    if not process.installed():
        load()


def caller_environ(sent: Mapping[str, Any]) -> dict[str, str]:
    """The environment a resident engine runs a caller's command with.

    This process's variables, but those a caller sends (:data:`FORWARDED`): the
    caller's, or unset where the caller has none.
    """
    environ = {k: v for k, v in os.environ.items() if k not in FORWARDED}
    environ.update({k: str(v) for k, v in sent.items() if k in FORWARDED})
    return environ


def workspace_folder(arg: str | Path | None = None, env: Environment | None = None) -> Path:
    """The workspace: ``arg``, then ``$OPENCLAW_WORKSPACE_DIR``/``$MEMORY_DIR``, then ``.``.

    Raises:
        EnhancedMemoryError: The folder does not exist.
    """
    from .store.locations import resolve_workspace

    return resolve_workspace(arg or (env or load()).workspace)


def engine_config(
    *,
    env: Environment | None = None,
    workspace_arg: str | Path | None = None,
    profile: str | None = None,
    embedder: str | None = None,
    model: str | None = None,
    ollama_url: str | None = None,
    index_path: str | Path | None = None,
    on_embedder_error: str | None = None,
    session_dirs: Sequence[str] = (),
    **fields: Any,
) -> EngineConfig:
    """An engine's config: each field's default, then the environment, then the argument.

    ``session_dirs`` (and ``$ENHANCED_MEMORY_SESSION_DIRS``) are searched beside the
    settings' transcript folders.

    Raises:
        RequestError: An unknown profile, embedder or ``on_embedder_error``.
        EnhancedMemoryError: The workspace does not exist.
    """
    from pathlib import Path
    from typing import cast

    from .core.errors import RequestError
    from .core.settings import PROFILE_NAMES, MemorySettings
    from .engine.config import EMBEDDER_ERRORS, EMBEDDERS, EngineConfig

    env = env or load()
    profile = profile or env.profile or "default"
    if profile not in PROFILE_NAMES:
        raise RequestError(f"unknown profile {profile!r}", "profile")
    embedder = embedder or env.embedder or "auto"
    if embedder not in EMBEDDERS:
        raise RequestError(
            f"unknown embedder {embedder!r} (auto, ollama, local or none)", "embedder"
        )
    on_error = on_embedder_error or env.on_embedder_error or "keyword"
    if on_error not in EMBEDDER_ERRORS:
        raise RequestError(f"must be keyword or fail, got {on_error!r}", "on_embedder_error")
    settings = fields.pop("settings", None) or MemorySettings(profile=profile)
    index_path = index_path or env.index_path
    return EngineConfig(
        workspace=workspace_folder(workspace_arg, env),
        settings=with_sessions(settings, (*session_dirs, *env.session_dirs)),
        embedder=cast("Embedder", embedder),
        model=model or env.model,
        ollama_url=ollama_url or env.ollama_url,
        on_embedder_error=cast("EmbedderErrors", on_error),
        index_path=Path(index_path) if index_path else None,
        **fields,
    )


def with_sessions(settings: MemorySettings, more: Sequence[str]) -> MemorySettings:
    """``settings`` with ``more`` transcript folders beside its own (none: ``settings`` itself)."""
    if not more:
        return settings

    return settings.replace(session_dirs=(*settings.discovery.session_dirs, *more))
