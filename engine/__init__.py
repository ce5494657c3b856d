"""Hippocampus: a graph-based associative memory engine.

The library has no web framework in it; ``api/`` serves it over REST and
``hippo`` drives it from a shell.
"""

from engine.config import HippoSettings
from engine.embed import Embedder, HashingEmbedder, SentenceTransformerEmbedder
from engine.errors import (
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
from engine.extract import ConceptExtractor, KeywordConceptExtractor, SpacyConceptExtractor
from engine.extract.quality import QualityConfig
from engine.learn.tiers import TierPolicy
from engine.model import (
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
from engine.service import (
    CollectionStats,
    EditOutcome,
    Hippocampus,
    ImportReport,
    RememberOutcome,
    ResourceOutcome,
)
from engine.store import GraphStore

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
