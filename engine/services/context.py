"""What every service of the engine shares: the store, the embedder, the
extractor and the settings more than one of them reads.

One :class:`Context` is built by :class:`hippocampus.service.Hippocampus` and
handed to each service it composes. The facade's attributes of the same names
read and set it, so a change made there (another embedder, other limits) is
seen by every service at once, as it was by the one object they once formed.
"""

from __future__ import annotations

from typing import Generic, TypeVar, overload

from hippocampus.config import HippoSettings, Limits
from hippocampus.embed import Embedder, GuardedEmbedder, make_embedder, model_name
from hippocampus.embed.lazy import LazyEmbedder
from hippocampus.extract import ConceptExtractor, make_extractor
from hippocampus.extract.lazy import LazyExtractor
from hippocampus.extract.quality import QualityConfig
from hippocampus.learn import LearningConfig
from hippocampus.store import GraphStore
from hippocampus.stores import open_store


class Context:
    """The parts and settings the services share.

    Args:
        store: where memories live.
        embedder: turns text into vectors (guarded: see :attr:`embedder`).
        extractor: finds domains, triggers and concepts.
        limits: input size limits.
        learning: how retrieval and use reinforce edges, and how they decay.
        quality_config: the quality gate (threshold, source trust, retraining).
    """

    def __init__(
        self,
        store: GraphStore,
        embedder: Embedder,
        extractor: ConceptExtractor,
        *,
        limits: Limits,
        learning: LearningConfig,
        quality_config: QualityConfig,
    ) -> None:
        self.store = store
        self.embedder = embedder  # guarded: see the property
        self.extractor = extractor
        self.limits = limits
        self.learning = learning
        self.quality_config = quality_config

    @property
    def embedder(self) -> GuardedEmbedder:
        """The embedder, guarded: whatever goes wrong in it is an EmbeddingError,
        which costs vectors (memories wait for re-embedding, recall falls back to
        text and graph), never a write or a recall."""
        return self._embedder

    @embedder.setter
    def embedder(self, embedder: Embedder) -> None:
        self._embedder = (
            embedder if isinstance(embedder, GuardedEmbedder) else GuardedEmbedder(embedder)
        )


T = TypeVar("T")


class Kept(Generic[T]):
    """A setting of the engine kept by the part that uses it (``part``, an
    attribute of the engine), read and set there: set on the engine, it is
    what that part uses from then on."""

    def __init__(self, part: str) -> None:
        self._part = part
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, engine: None, owner: type) -> Kept[T]: ...

    @overload
    def __get__(self, engine: object, owner: type) -> T: ...

    def __get__(self, engine: object, owner: type) -> T | Kept[T]:
        if engine is None:
            return self
        value: T = getattr(getattr(engine, self._part), self._name)
        return value

    def __set__(self, engine: object, value: T) -> None:
        setattr(getattr(engine, self._part), self._name, value)


def open_parts(
    settings: HippoSettings, *, lazy_model: bool = False
) -> tuple[GraphStore, Embedder, ConceptExtractor]:
    """The store, embedder and extractor the settings describe.

    With ``lazy_model`` (the embedded store only) the embedding model loads
    when first used, and so does spaCy's pipeline: work that never embeds
    never waits for the one, work that reads no text for its concepts never
    waits for the other.

    The embedded store is opened first, so that a data directory in use is
    reported before a model loads; the Neo4j store is configured after the
    embedder, whose dimension its vector index takes. Configuring it contacts
    nothing: a Neo4j that is down makes the engine unready, not unbuildable.
    """

    def build_embedder() -> Embedder:
        return make_embedder(
            settings.embedder,
            model_path=settings.model_path,
            batch_size=settings.embed_batch_size,
            precision=settings.embed_precision,
        )

    store: GraphStore | None = None
    try:
        if settings.store == "embedded":
            store = open_store(settings)
            embedder = (
                LazyEmbedder(model_name(settings.embedder, settings.model_path), build_embedder)
                if lazy_model
                else build_embedder()
            )
        else:
            embedder = build_embedder()
            store = open_store(settings, dimensions=embedder.dim)
        extractor = LazyExtractor(make_extractor) if lazy_model else make_extractor()
    except Exception:
        if store is not None:
            store.close()
        raise
    return store, embedder, extractor
