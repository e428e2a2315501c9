"""Task prefixes: the words an embedding model was trained to see before queries and documents."""

from __future__ import annotations

import re

from langchain_core.embeddings import Embeddings

__all__ = ["PrefixedEmbeddings", "model_prefixes"]

_E5_NAME = re.compile(r"(?:^|[^a-z0-9])e5(?:[^a-z0-9]|$)")


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
