"""Ollama over HTTP: URL spellings, a cheap probe, and the ``langchain_ollama`` client.

The probe (``GET /api/tags`` with ``urllib`` and a short timeout) imports
nothing heavy, so ``auto`` can decide quickly whether Ollama is usable;
``langchain_ollama`` (about a second to import) is imported only to embed.
"""

from __future__ import annotations

import ipaddress
import json
import re
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..core.errors import one_line
from .failures import is_timeout, network_reason, not_pulled_message

TYPE_CHECKING = False  # not typing's: the probe runs before anything heavy is imported
if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

__all__ = [
    "DEFAULT_OLLAMA_MODEL",
    "DEFAULT_OLLAMA_URL",
    "normalize_ollama_url",
    "ollama_embeddings",
    "probe_ollama",
]

DEFAULT_OLLAMA_URL = "http://localhost:11434"
"""Where Ollama listens when nothing else is configured."""

DEFAULT_OLLAMA_MODEL = "nomic-embed-text"
"""The original skill's embedding model."""

_MAX_TAGS_BYTES = 8 * 1024 * 1024
_API_SUFFIX = re.compile(r"/api(?:/.*)?$")


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


def is_loopback(url: str) -> bool:
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

    from .prefixes import PrefixedEmbeddings, model_prefixes

    url = normalize_ollama_url(base_url)
    client_kwargs: dict[str, Any] = {"timeout": timeout_s}
    if is_loopback(url):
        client_kwargs["trust_env"] = False
    inner = OllamaEmbeddings(
        model=model,
        base_url=url,
        client_kwargs=client_kwargs,
        validate_model_on_init=False,
    )
    query_prefix, document_prefix = model_prefixes(model)
    return PrefixedEmbeddings(inner, query_prefix, document_prefix)


def with_latest(name: str) -> str:
    """Add Ollama's implicit ``:latest`` tag to a model name without a tag."""
    name = name.strip().lower()
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


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
    if is_loopback(url):
        handlers.append(urllib.request.ProxyHandler({}))
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(
        url + "/api/tags", headers={"Accept": "application/json"}, method="GET"
    )
    try:
        with opener.open(request, timeout=timeout_s) as response:
            body = response.read(_MAX_TAGS_BYTES + 1)
    except urllib.error.HTTPError as exc:
        return one_line(f"{target} answered HTTP {exc.code} to GET /api/tags")
    except Exception as exc:
        if is_timeout(exc):
            return f"{target} did not answer within {timeout_s:g}s (timeout)"
        return one_line(f"{target} is unreachable ({network_reason(exc)})")
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
                    names.add(with_latest(value))
    except Exception as exc:
        return one_line(
            f"{target} gave a bad response to GET /api/tags ({type(exc).__name__}: {exc})"
        )
    if with_latest(model) not in names:
        return not_pulled_message(model, url)
    return None
