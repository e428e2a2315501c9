"""LangChain's standard retriever suite, run offline on a temporary workspace."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_enhanced_memory import EnhancedMemoryRetriever
from tests.fakes import WordEmbeddings
from tests.workspaces import SMALL_WORKSPACE, write_workspace


@pytest.fixture(scope="module")
def standard_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_workspace(tmp_path_factory.mktemp("std"), SMALL_WORKSPACE)


class TestEnhancedMemoryRetrieverStandard(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _workspace(self, standard_workspace: Path) -> None:
        self._ws = standard_workspace

    @property
    def retriever_constructor(self) -> type[EnhancedMemoryRetriever]:
        return EnhancedMemoryRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"workspace": self._ws, "embeddings": WordEmbeddings()}

    @property
    def retriever_query_example(self) -> str:
        return "what did we decide about the billing database?"
