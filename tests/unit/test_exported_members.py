import engine


def test_public_names_are_pinned() -> None:
    assert sorted(engine.__all__) == [
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


def test_every_public_name_resolves() -> None:
    for name in engine.__all__:
        assert getattr(engine, name) is not None


def test_every_error_descends_from_hippo_error() -> None:
    for name in engine.__all__:
        obj = getattr(engine, name)
        if isinstance(obj, type) and name.endswith("Error"):
            assert issubclass(obj, engine.HippoError)
