"""The lazily loaded embedder, and the CLI's engine that uses it."""

from __future__ import annotations

from pathlib import Path

from hippocampus.config import HippoSettings
from hippocampus.embed import HashingEmbedder, model_name
from hippocampus.embed.lazy import LazyEmbedder
from hippocampus.embed.sentence_transformer import DEFAULT_MODEL_NAME
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
