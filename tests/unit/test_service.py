"""The Hippocampus facade over the real embedded store (temp dir) and spaCy."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from hippocampus.embed import HashingEmbedder
from hippocampus.errors import (
    ConflictError,
    EmbeddingError,
    InvalidInputError,
    LimitExceededError,
    NotFoundError,
)
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.extract.quality import QualityConfig
from hippocampus.model import EdgeType, MemoryPatch, NewMemory, RecallFilters, Tier
from hippocampus.retrieve.config import ASSOCIATIVE
from hippocampus.service import CONCEPT_WEIGHT, MEMBERSHIP_WEIGHT, NAME_WEIGHT, Hippocampus
from hippocampus.store.embedded import EmbeddedStore

C = "org:acme"
T0 = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)
OPERATOR = "operator"  # trusted by the fixture: stores placeholder texts


class CountingEmbedder(HashingEmbedder):
    """A real hashing embedder that counts the texts it embeds and can be made to fail."""

    def __init__(self, name: str | None = None) -> None:
        super().__init__()
        if name is not None:
            self.name = name
        self.texts = 0
        self.seen: list[str] = []
        self.failing = False

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.failing:
            raise EmbeddingError("model crashed")
        self.texts += len(texts)
        self.seen.extend(texts)
        return super().encode(texts)


@pytest.fixture
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture
def svc(
    tmp_path: Path, embedder: CountingEmbedder, spacy_extractor: SpacyConceptExtractor
) -> Iterator[Hippocampus]:
    service = Hippocampus(
        EmbeddedStore(tmp_path / "data"),
        embedder,
        spacy_extractor,
        quality=QualityConfig(source_trust={OPERATOR: 1.0}),
    )
    yield service
    service.close()


def test_remember_stores_memory_with_extracted_hub_edges(svc: Hippocampus) -> None:
    out = svc.remember(C, NewMemory(content="Payment gateway timeouts during checkout"), now=T0)
    assert out.created and out.embedded and out.duplicate_of is None
    stored = svc.get(C, out.memory.id)
    assert stored == out.memory
    assert stored.created_at == T0 and stored.embedding_model == svc.embedder.name
    assert "payments" in stored.retrieval.domains
    edges = svc.store.edges_of(C, stored.id)
    about = {e.target for e in edges if e.type == EdgeType.ABOUT}
    assert about == set(stored.retrieval.concepts)
    assert {e.weight for e in edges if e.type != EdgeType.ABOUT} == {MEMBERSHIP_WEIGHT}
    assert {e.weight for e in edges if e.type == EdgeType.ABOUT} == {CONCEPT_WEIGHT}


def test_caller_given_concepts_win_over_extraction(svc: Hippocampus) -> None:
    out = svc.remember(
        C, NewMemory(content="Payment gateway timeouts during checkout", concepts=["Retries"])
    )
    assert out.memory.retrieval.concepts == ["retries"]
    assert out.memory.retrieval.domains  # not given: still extracted


def test_same_content_twice_is_stored_once_and_reported(svc: Hippocampus) -> None:
    first = svc.remember(C, NewMemory(content="Pin the driver to 5.1"))
    again = svc.remember(C, NewMemory(content="  pin the DRIVER to 5.1 "))
    assert not again.created and again.duplicate_of == first.memory.id
    assert svc.stats(C).memories == 1


def test_repeats_inside_one_batch_point_at_the_first(svc: Hippocampus) -> None:
    outs = svc.remember_many(C, [NewMemory(content="a fact"), NewMemory(content="A fact")])
    assert outs[0].created and not outs[1].created
    assert outs[1].duplicate_of == outs[0].memory.id
    assert svc.stats(C).memories == 1


def test_invalid_item_in_a_batch_writes_nothing_and_names_the_field(svc: Hippocampus) -> None:
    items = [NewMemory(content="fine one"), NewMemory(content="   "), NewMemory(content="fine 2")]
    with pytest.raises(InvalidInputError) as e:
        svc.remember_many(C, items)
    assert e.value.field == "memories[1].content"
    assert svc.stats(C).memories == 0


def test_existing_id_in_a_batch_writes_nothing(svc: Hippocampus) -> None:
    svc.remember(C, NewMemory(content="first", id="ticket-1", source=OPERATOR))
    with pytest.raises(ConflictError):
        svc.remember_many(
            C,
            [
                NewMemory(content="second", id="ticket-2", source=OPERATOR),
                NewMemory(content="x", id="ticket-1", source=OPERATOR),
            ],
        )
    assert svc.stats(C).memories == 1


@pytest.mark.parametrize(
    ("item", "field"),
    [
        (NewMemory(content="x" * 32_001), "content"),
        (NewMemory(content="ok", id="bad\nid"), "id"),
        (NewMemory(content="ok", category="Not A Category!"), "category"),
        (NewMemory(content="ok", tags=["t"] * 51), "tags"),
    ],
)
def test_bad_input_is_refused_with_its_field(svc: Hippocampus, item: NewMemory, field: str) -> None:
    with pytest.raises(InvalidInputError) as e:
        svc.remember(C, item)
    assert e.value.field == field


def test_oversized_batch_is_refused(svc: Hippocampus) -> None:
    with pytest.raises(LimitExceededError):
        svc.remember_many(C, [NewMemory(content=f"m{i}") for i in range(1001)])


def test_bad_collection_name_is_refused(svc: Hippocampus) -> None:
    with pytest.raises(InvalidInputError) as e:
        svc.remember("../etc", NewMemory(content="x"))
    assert e.value.field == "collection"


def test_embedding_failure_stores_memory_flagged_and_reindex_embeds_it(
    svc: Hippocampus, embedder: CountingEmbedder
) -> None:
    embedder.failing = True
    out = svc.remember(C, NewMemory(content="Connection pool exhausted under load"))
    assert out.created and not out.embedded and out.reasons
    assert svc.get(C, out.memory.id).needs_embedding
    assert svc.stats(C).pending_embeddings == 1
    embedder.failing = False
    assert svc.recall(C, "connection pool exhausted", recipe="DENSE").hits == []
    by_text = svc.recall(C, "connection pool exhausted", recipe="HYBRID").hits  # found by BM25
    assert [(h.memory.id, h.similarity) for h in by_text] == [(out.memory.id, None)]
    assert svc.reindex(C) == 1
    assert svc.stats(C).pending_embeddings == 0
    hits = svc.recall(C, "connection pool exhausted", recipe="DENSE").hits
    assert [h.memory.id for h in hits] == [out.memory.id]


def test_update_reembeds_only_when_content_changes(
    svc: Hippocampus, embedder: CountingEmbedder
) -> None:
    mem = svc.remember(C, NewMemory(content="Cache TTL was zero")).memory
    before = embedder.texts
    svc.update(C, mem.id, MemoryPatch(importance=0.9, tags=["cache"]))
    svc.update(C, mem.id, MemoryPatch(content="cache ttl was ZERO"))  # same normalized text
    assert embedder.texts == before
    updated = svc.update(C, mem.id, MemoryPatch(content="Payment gateway timeouts at checkout"))
    # The new text once, then the names of hubs it introduced (never the old text).
    assert embedder.seen.count("Payment gateway timeouts at checkout") == 1
    assert embedder.seen.count("Cache TTL was zero") == 1
    assert updated.importance == 0.9 and updated.tags == ["cache"]
    assert "payments" in updated.retrieval.domains
    targets = {e.target for e in svc.store.edges_of(C, mem.id)}
    assert "checkout" in targets and "cache ttl" not in targets
    assert svc.recall(C, "gateway timeouts at checkout").hits[0].memory.id == mem.id


def test_update_of_unknown_memory_is_not_found(svc: Hippocampus) -> None:
    with pytest.raises(NotFoundError):
        svc.update(C, "nope", MemoryPatch(importance=0.1))


def test_forget_removes_memory_and_edges(svc: Hippocampus) -> None:
    mem = svc.remember(C, NewMemory(content="Team lunch moved to Friday")).memory
    svc.forget(C, mem.id)
    with pytest.raises(NotFoundError):
        svc.get(C, mem.id)
    assert svc.store.edges_of(C, mem.id) == []
    assert svc.stats(C).edges == {} or sum(svc.stats(C).edges.values()) == 0
    with pytest.raises(NotFoundError):
        svc.forget(C, mem.id)


def test_recall_ranks_the_closest_memory_first(svc: Hippocampus) -> None:
    svc.remember_many(
        C,
        [
            NewMemory(content="Payment gateway timeouts during checkout"),
            NewMemory(content="Team lunch moved to Friday"),
            NewMemory(content="Redis cache eviction evicted hot session keys"),
        ],
    )
    hits = svc.recall(C, "checkout payment gateway timeouts", limit=2).hits
    assert len(hits) == 2
    assert hits[0].memory.content == "Payment gateway timeouts during checkout"
    assert hits[0].score >= hits[1].score


def test_recall_filters_by_category_tags_domains_and_conversation(svc: Hippocampus) -> None:
    a, b, c = svc.remember_many(
        C,
        [
            NewMemory(content="Slow checkout page fixed", category="bug_fix", tags=["web"]),
            NewMemory(content="Slow checkout decided to cache", category="decision"),
            NewMemory(content="Slow checkout again", conversation_id="conv-7", domains=["ops"]),
        ],
    )
    q = "slow checkout"

    def ids(filters: RecallFilters) -> set[str]:
        return {h.memory.id for h in svc.recall(C, q, filters=filters).hits}

    assert ids(RecallFilters(categories=["bug_fix"])) == {a.memory.id}
    assert ids(RecallFilters(tags=["web"])) == {a.memory.id}
    assert ids(RecallFilters(domains=["ops"])) == {c.memory.id}
    assert ids(RecallFilters(exclude_conversation_id="conv-7")) == {a.memory.id, b.memory.id}


def test_archived_memories_are_found_only_when_asked(svc: Hippocampus) -> None:
    mem = svc.remember(C, NewMemory(content="Old deploy checklist")).memory
    svc.update(C, mem.id, MemoryPatch(tier=Tier.ARCHIVED))
    assert svc.recall(C, "deploy checklist").hits == []
    found = svc.recall(
        C, "deploy checklist", filters=RecallFilters(tiers=[Tier.ACTIVE, Tier.ARCHIVED])
    ).hits
    assert [h.memory.id for h in found] == [mem.id]


def test_recall_min_score_drops_weak_results(svc: Hippocampus) -> None:
    svc.remember_many(
        C, [NewMemory(content="kafka consumer lag"), NewMemory(content="team offsite in May")]
    )
    assert len(svc.recall(C, "kafka consumer lag").hits) == 2
    strong = svc.recall(C, "kafka consumer lag", min_score=0.5).hits
    assert [h.memory.content for h in strong] == ["kafka consumer lag"]


def test_collections_never_see_each_other(svc: Hippocampus) -> None:
    mem = svc.remember("org:one", NewMemory(content="secret plan for the launch")).memory
    assert svc.recall("org:two", "secret plan for the launch").hits == []
    with pytest.raises(NotFoundError):
        svc.get("org:two", mem.id)
    with pytest.raises(NotFoundError):
        svc.forget("org:two", mem.id)
    assert svc.stats("org:two").memories == 0
    assert list(svc.export("org:two"))[1:] == []


def test_bad_recall_requests_are_refused(svc: Hippocampus) -> None:
    with pytest.raises(InvalidInputError):
        svc.recall(C, "   ")
    with pytest.raises(LimitExceededError):
        svc.recall(C, "q" * 2001)
    with pytest.raises(InvalidInputError):
        svc.recall(C, "ok", limit=0)


def test_export_then_import_gives_back_identical_memories_vectors_and_edges(
    svc: Hippocampus, tmp_path: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    svc.remember_many(
        C,
        [
            NewMemory(content="Payment gateway timeouts during checkout", tags=["pay"]),
            NewMemory(content="Mobile dashboard takes 5s to load", importance=0.8),
        ],
        now=T0,
    )
    records = list(svc.export(C))
    target = Hippocampus(EmbeddedStore(tmp_path / "other"), HashingEmbedder(), spacy_extractor)
    try:
        report = target.import_records(C, records)
        assert report.memories == 2
        before = {m.id: m for m in svc.store.iter_memories(C)}
        after = {m.id: m for m in target.store.iter_memories(C)}
        assert before == after
        for mid in before:
            assert np.array_equal(
                svc.store.get_vectors(C, [mid])[mid], target.store.get_vectors(C, [mid])[mid]
            )
            assert set(svc.store.edges_of(C, mid)) == set(target.store.edges_of(C, mid))
        assert target.import_records(C, records).skipped_existing == 2
    finally:
        target.close()


def test_import_names_the_bad_line(svc: Hippocampus) -> None:
    with pytest.raises(InvalidInputError) as e:
        svc.import_records(C, [{"type": "memory", "memory": {"id": "x"}}])
    assert e.value.field == "line 1"


def test_switching_models_leaves_memories_pending_until_reindexed(
    tmp_path: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    data = tmp_path / "data"
    first = Hippocampus(EmbeddedStore(data), CountingEmbedder("model-a"), spacy_extractor)
    first.remember_many(C, [NewMemory(content=f"incident {i} in billing") for i in range(5)])
    first.close()
    second = Hippocampus(EmbeddedStore(data), CountingEmbedder("model-b"), spacy_extractor)
    try:
        assert second.recall(C, "incident in billing", recipe="DENSE").hits == []
        assert second.reindex(C, batch_size=2) == 5
        assert {m.embedding_model for m in second.store.iter_memories(C)} == {"model-b"}
        assert len(second.recall(C, "incident in billing", recipe="DENSE").hits) == 5
    finally:
        second.close()


def test_edges_to_proper_names_start_stronger(svc: Hippocampus) -> None:
    text = "Brand is a verse tragedy by the playwright Henrik Ibsen, first staged in Stockholm."
    out = svc.remember(C, NewMemory(content=text), now=T0)
    names = set(out.memory.retrieval.names)
    assert "henrik ibsen" in names
    about = {
        e.target: e.weight for e in svc.store.edges_of(C, out.memory.id) if e.type == EdgeType.ABOUT
    }
    assert {about[n] for n in names} == {NAME_WEIGHT}
    assert {w for n, w in about.items() if n not in names} == {CONCEPT_WEIGHT}
    # An edit that keeps the content keeps them; one that names other concepts
    # keeps those the text names as names.
    edited = svc.update(C, out.memory.id, MemoryPatch(concepts=["Henrik Ibsen", "theatre"]))
    assert edited.retrieval.names == ["henrik ibsen"]
    about = {
        e.target: e.weight for e in svc.store.edges_of(C, out.memory.id) if e.type == EdgeType.ABOUT
    }
    assert about == {"henrik ibsen": NAME_WEIGHT, "theatre": CONCEPT_WEIGHT}


def test_a_collection_where_similarity_misreads_the_queries_learns_to_lean_on_words(
    svc: Hippocampus,
) -> None:
    # A model that misreads every question here: each query vector places the
    # one note holding the question's rare word six deviations below the mean
    # of its best similarities. Each recall leans on that word match for
    # itself; a run of such recalls teaches the collection that words guide
    # better in it, and its recalls lean further from then on.
    facts = [
        "parked behind the bakery on Elm street",
        "signed by both auditors last spring",
        "stored in the blue cabinet upstairs",
        "replaced after the router failed twice",
        "owned by the payments squad in Lisbon",
        "rotated every ninety days by cron",
        "printed on recycled paper for the board",
        "hosted on a spare laptop under a desk",
        "translated into Polish by a contractor",
        "priced at four dollars per seat monthly",
        "archived to tape at the end of each quarter",
        "watered on Mondays by the office manager",
    ]
    rare = [f"zq{chr(97 + i)}x" for i in range(len(facts))]
    wanted = [f"The {word} is {fact}" for word, fact in zip(rare, facts, strict=True)]
    topics = ["invoices", "deploys", "backups", "tickets", "alerts", "reviews"]
    notes = [f"Weekly note {i} about {topics[i % 6]} and chores" for i in range(300)]
    for collection in (C, "org:beta"):
        svc.remember_many(collection, [NewMemory(content=t) for t in [*notes, *wanted]])
    stored = svc.embedder.encode([*notes, *wanted])
    stored /= np.linalg.norm(stored, axis=1, keepdims=True)
    rng = np.random.default_rng(3)
    queries = []
    for target in stored[len(notes) :]:
        query = rng.standard_normal(svc.embedder.dim).astype(np.float32)
        query /= np.linalg.norm(query)
        best = np.sort(stored @ query)[-20:]
        query += (best.mean() - 6.0 * best.std() - query @ target) * target
        queries.append(query)

    # Without the graph, whose lift through the word's own hub would blur the
    # measure.
    direct = ASSOCIATIVE.model_copy(update={"graph": False})

    def lead(collection: str, i: int) -> float:
        """What the rare word adds to its note's score, over its similarity."""
        question = f"where is the {rare[i]}"
        hits = svc.recall(
            collection, question, limit=20, query_vector=queries[i], learn=False, recipe=direct
        ).hits
        hit = next(h for h in hits if h.memory.content == wanted[i])
        assert hit.similarity is not None
        return hit.score - hit.similarity

    first = lead(C, 0)
    assert svc.corroboration(C).median is None
    for i in range(1, len(rare)):
        lead(C, i)
    measured = svc.corroboration(C)
    assert measured.recalls == len(rare) and measured.median is not None
    assert measured.median < -2.0 * ASSOCIATIVE.collection_uncorroborated
    assert measured.lexical_lean > 2.0
    assert lead(C, 0) > 2.0 * first
    # Another collection has learned nothing yet.
    assert lead("org:beta", 0) == pytest.approx(first)
    assert svc.corroboration("org:beta").lexical_lean == 1.0
