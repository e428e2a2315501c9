"""Why an embedder call failed: exceptions from urllib, httpx, ollama and pydantic, named.

:func:`classify` maps any exception to a ``(kind, message, retryable)``
triple, where ``kind`` is one of :class:`~..core.errors.EmbeddingError`'s
kinds and the message is one line a user can act on.
"""

from __future__ import annotations

import json
import re

from ..core.errors import one_line

__all__ = ["classify", "is_timeout", "network_reason", "not_pulled_message"]

_NOT_FOUND_MODEL = re.compile(r"model\s+[\"'`]([^\"'`]+)[\"'`]\s+not\s+found", re.IGNORECASE)


def exception_chain(exc: BaseException) -> list[BaseException]:
    """Return ``exc`` and its causes/contexts (``raise ... from None`` keeps the context)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain and len(chain) < 10:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def class_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def is_timeout(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is a timeout."""
    for item in exception_chain(exc):
        if isinstance(item, TimeoutError) or "TimeoutException" in class_names(item):
            return True
        reason = getattr(item, "reason", None)
        if isinstance(reason, TimeoutError):
            return True
    return False


def network_reason(exc: BaseException) -> str:
    """Describe why a connection failed, e.g. ``"connection refused"``."""
    texts: list[str] = []
    for item in exception_chain(exc):
        reason = getattr(item, "reason", None)
        for candidate in (item, reason):
            if isinstance(candidate, ConnectionRefusedError):
                return "connection refused"
            if isinstance(candidate, BaseException) and "gaierror" in class_names(candidate):
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
    return one_line(detail, 120)


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


def classify(
    exc: BaseException, label: str, model: str | None, timeout_s: float | None, is_ollama: bool
) -> tuple[str, str, bool]:
    """Map an exception to ``(kind, message, retryable)``."""
    names = class_names(exc)
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
        detail = one_line(error_text, 160) or "no details"
        return "http", f"{label} returned HTTP {status}: {detail}", retryable
    if "ValidationError" in names and type(exc).__module__.startswith("pydantic"):
        return "malformed", f"{label} sent a malformed response (unexpected JSON shape)", True
    if isinstance(exc, json.JSONDecodeError) or "DecodingError" in names:
        return "malformed", f"{label} sent a malformed response (invalid JSON)", True
    if is_timeout(exc):
        after = f" after {timeout_s:g}s" if timeout_s is not None else ""
        return "timeout", f"{label} timed out{after} ({type(exc).__name__})", True
    if isinstance(exc, ConnectionError) or "ConnectError" in names:
        return "unreachable", f"{label} is unreachable ({network_reason(exc)})", True
    if names & {"RemoteProtocolError", "ReadError", "WriteError", "NetworkError"}:
        detail = one_line(str(exc), 120) or type(exc).__name__
        return "disconnected", f"{label} closed the connection ({detail})", True
    if isinstance(exc, OSError) and is_ollama:
        return "unreachable", f"{label} is unreachable ({network_reason(exc)})", True
    detail = one_line(str(exc), 160)
    text = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    return "error", f"{label} failed ({text})", True
