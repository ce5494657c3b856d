"""Hippocampus: a graph-based associative memory engine.

The library has no web framework in it; ``hippocampus.api`` serves it over
REST and ``hippo`` drives it from a shell.

The public names load on first use: ``import hippocampus.api.cli`` (every
``hippo`` command) does not pay for the whole engine before it needs it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hippocampus.config import HippoSettings
    from hippocampus.embed import (
        Embedder,
        HashingEmbedder,
        SentenceTransformerEmbedder,
    )
    from hippocampus.errors import (
        ConfigError,
        ConflictError,
        DataDirLockedError,
        EmbeddingError,
        HippoError,
        InvalidInputError,
        LimitExceededError,
        NotFoundError,
        StoreError,
        StoreFullError,
        StoreReadOnlyError,
        StoreUnavailableError,
    )
    from hippocampus.extract import (
        ConceptExtractor,
        KeywordConceptExtractor,
        SpacyConceptExtractor,
    )
    from hippocampus.extract.quality import QualityConfig
    from hippocampus.learn.tiers import TierPolicy
    from hippocampus.model import (
        Edge,
        EdgeType,
        HubKind,
        Memory,
        MemoryPatch,
        NewMemory,
        RecallFilters,
        RecallHit,
        RecallResult,
        Resource,
        Tier,
    )
    from hippocampus.service import (
        CollectionStats,
        EditOutcome,
        Hippocampus,
        ImportReport,
        RememberOutcome,
        ResourceOutcome,
    )
    from hippocampus.store import GraphStore

# Each public name and the module that defines it.
_HOMES: dict[str, str] = {
    "CollectionStats": "hippocampus.service",
    "ConceptExtractor": "hippocampus.extract",
    "ConfigError": "hippocampus.errors",
    "ConflictError": "hippocampus.errors",
    "DataDirLockedError": "hippocampus.errors",
    "Edge": "hippocampus.model",
    "EdgeType": "hippocampus.model",
    "EditOutcome": "hippocampus.service",
    "Embedder": "hippocampus.embed",
    "EmbeddingError": "hippocampus.errors",
    "GraphStore": "hippocampus.store",
    "HashingEmbedder": "hippocampus.embed",
    "HippoError": "hippocampus.errors",
    "HippoSettings": "hippocampus.config",
    "Hippocampus": "hippocampus.service",
    "HubKind": "hippocampus.model",
    "ImportReport": "hippocampus.service",
    "InvalidInputError": "hippocampus.errors",
    "KeywordConceptExtractor": "hippocampus.extract",
    "LimitExceededError": "hippocampus.errors",
    "Memory": "hippocampus.model",
    "MemoryPatch": "hippocampus.model",
    "NewMemory": "hippocampus.model",
    "NotFoundError": "hippocampus.errors",
    "QualityConfig": "hippocampus.extract.quality",
    "RecallFilters": "hippocampus.model",
    "RecallHit": "hippocampus.model",
    "RecallResult": "hippocampus.model",
    "RememberOutcome": "hippocampus.service",
    "Resource": "hippocampus.model",
    "ResourceOutcome": "hippocampus.service",
    "SentenceTransformerEmbedder": "hippocampus.embed",
    "SpacyConceptExtractor": "hippocampus.extract",
    "StoreError": "hippocampus.errors",
    "StoreFullError": "hippocampus.errors",
    "StoreReadOnlyError": "hippocampus.errors",
    "StoreUnavailableError": "hippocampus.errors",
    "Tier": "hippocampus.model",
    "TierPolicy": "hippocampus.learn.tiers",
}

__all__ = [
    "CollectionStats",
    "ConceptExtractor",
    "ConfigError",
    "ConflictError",
    "DataDirLockedError",
    "Edge",
    "EdgeType",
    "EditOutcome",
    "Embedder",
    "EmbeddingError",
    "GraphStore",
    "HashingEmbedder",
    "HippoError",
    "HippoSettings",
    "Hippocampus",
    "HubKind",
    "ImportReport",
    "InvalidInputError",
    "KeywordConceptExtractor",
    "LimitExceededError",
    "Memory",
    "MemoryPatch",
    "NewMemory",
    "NotFoundError",
    "QualityConfig",
    "RecallFilters",
    "RecallHit",
    "RecallResult",
    "RememberOutcome",
    "Resource",
    "ResourceOutcome",
    "SentenceTransformerEmbedder",
    "SpacyConceptExtractor",
    "StoreError",
    "StoreFullError",
    "StoreReadOnlyError",
    "StoreUnavailableError",
    "Tier",
    "TierPolicy",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
