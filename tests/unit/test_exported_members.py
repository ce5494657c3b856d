import hippocampus


def test_public_names_are_pinned() -> None:
    assert sorted(hippocampus.__all__) == [
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
    for name in hippocampus.__all__:
        assert getattr(hippocampus, name) is not None


def test_every_error_descends_from_hippo_error() -> None:
    for name in hippocampus.__all__:
        obj = getattr(hippocampus, name)
        if isinstance(obj, type) and name.endswith("Error"):
            assert issubclass(obj, hippocampus.HippoError)


def test_each_public_name_loads_from_where_it_is_defined() -> None:
    for name in hippocampus.__all__:
        value = getattr(hippocampus, name)
        assert getattr(value, "__name__", name) == name
    try:
        _ = hippocampus.NoSuchName  # type: ignore[attr-defined]
    except AttributeError as e:
        assert "NoSuchName" in str(e)
    else:
        raise AssertionError("an unknown name must raise AttributeError")
