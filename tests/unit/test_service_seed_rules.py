"""The seed's rules reachable through the engine: usefulness from feedback, co-use,
lifecycle, summary, provenance and the learned state that travels with a collection."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hippocampus.embed import HashingEmbedder
from hippocampus.errors import InvalidInputError
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.extract.quality import QualityConfig
from hippocampus.learn.tiers import lifecycle
from hippocampus.model import EdgeType, MemoryPatch, NewMemory
from hippocampus.service import Hippocampus
from hippocampus.store import MemoryRecord
from hippocampus.store.embedded import EmbeddedStore
from hippocampus.store.embedded.store import DB_FILE
from hippocampus.surface.conversation import ConversationState, SurfacedItem
from hippocampus.surface.outcomes import Surfacing

C = "team:seed"
T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
OPERATOR = "operator"


def _service(path: Path, extractor: SpacyConceptExtractor) -> Hippocampus:
    return Hippocampus(
        EmbeddedStore(path),
        HashingEmbedder(),
        extractor,
        quality=QualityConfig(source_trust={OPERATOR: 1.0}),
    )


@pytest.fixture
def svc(tmp_path: Path, spacy_extractor: SpacyConceptExtractor) -> Iterator[Hippocampus]:
    service = _service(tmp_path / "data", spacy_extractor)
    yield service
    service.close()


def _remember(svc: Hippocampus, text: str, **extra: object) -> str:
    out = svc.remember(C, NewMemory(content=text, source=OPERATOR, **extra), now=T0)  # type: ignore[arg-type]
    return out.memory.id


def test_usefulness_moves_with_feedback_and_reorders_the_seed_composite(
    svc: Hippocampus,
) -> None:
    first = _remember(svc, "Retry the payment webhook with exponential backoff and jitter")
    second = _remember(svc, "Retry the payment webhook after a fixed delay of five seconds")
    query = "retry the payment webhook"
    before = svc.recall(C, query, limit=2, recipe="SEED_COMPOSITE", learn=False, now=T0)
    top, other = (h.memory.id for h in before.hits)

    for day in range(3):
        at = T0 + timedelta(hours=day + 1)
        svc.feedback(C, top, helpful=False, now=at)
        svc.feedback(C, other, helpful=True, now=at)

    assert svc.get(C, other).retrieval.usefulness == pytest.approx(4 / 5)
    assert svc.get(C, top).retrieval.usefulness == pytest.approx(1 / 5)
    after = svc.recall(C, query, limit=2, recipe="SEED_COMPOSITE", learn=False, now=T0)
    assert [h.memory.id for h in after.hits] == [other, top]
    assert {first, second} == {top, other}


def _offer(svc: Hippocampus, conversation: str, memory_ids: list[str]) -> list[str]:
    """Offers of the memories in one conversation, as surfacing stores them; its
    last message named every topic of theirs."""
    found = svc.store.get_memories(C, memory_ids).values()
    about = [t for m in found for t in (*m.retrieval.triggers, *m.retrieval.concepts)]
    state = ConversationState(id=conversation, messages=len(memory_ids), topics=[about])
    records: dict[str, dict[str, Any]] = {}
    for i, mid in enumerate(memory_ids):
        sid = f"s-{conversation}-{i}"
        state.surfaced.append(SurfacedItem(memory_id=mid, surfacing_id=sid, message=i))
        records[f"surfacing:{sid}"] = Surfacing(
            id=sid,
            conversation_id=conversation,
            memory_id=mid,
            message=i,
            at=T0,
            conversation_type="debugging",
            kind="insight",
            context="checkout",
            concepts=[],
            features=[0.0] * 8,
            confidence=0.8,
            threshold=0.6,
        ).model_dump(mode="json")
    records[f"conversation:{conversation}"] = state.model_dump(mode="json")
    svc.store.put_states(C, records)
    return [f"s-{conversation}-{i}" for i in range(len(memory_ids))]


def _associated(svc: Hippocampus, a: str, b: str) -> float | None:
    for edge in svc.store.edges_of(C, a):
        if edge.type == EdgeType.ASSOCIATED and b in (edge.source, edge.target):
            return edge.weight
    return None


def test_insights_used_in_one_conversation_are_linked(svc: Hippocampus) -> None:
    a = _remember(svc, "Raise the redis pool size before the holiday sale")
    b = _remember(svc, "Add a wait timeout to the pgbouncer connection queue")
    c = _remember(svc, "The office plants need water on Mondays")
    sa, sb, sc = _offer(svc, "chat-1", [a, b, c])
    svc.engage(C, sa, "used", now=T0)
    assert _associated(svc, a, b) is None
    svc.engage(C, sc, "dismissed", now=T0)
    svc.engage(C, sb, "helpful", now=T0)
    assert _associated(svc, a, b) == pytest.approx(0.3)
    assert _associated(svc, a, c) is None and _associated(svc, b, c) is None
    # Three offers at 0.8, two of them used: the confidence overstates use by 0.8 - 2/3.
    metrics = svc.surfacing_metrics(C)
    assert metrics.calibration_error == pytest.approx(0.8 - 2 / 3)
    assert metrics.decay_effectiveness is None


CONVERSATION = [
    "checkout is failing with errors since the sale started",
    "the redis connection pool looks exhausted at checkout",
    "we tried restarting the workers, no luck",
    "how did we fix the redis pool exhaustion last time?",
]
LATER = [
    "checkout errors again, the redis pool is exhausted",
    "payments webhook retries are piling up at checkout",
    "the pgbouncer connection queue is full",
]
SURFACED_MEMORIES = [
    "Redis connection pool exhausted at checkout: raise the pool size and add a wait timeout",
    "Checkout webhook retries pile up when the payments queue is slow: add jitter",
    "Pgbouncer connection queue full at checkout: raise max_client_conn",
    "The office plants need water on Mondays",
]


def _offers(svc: Hippocampus, conversation: str, texts: list[str], start: int) -> list[Any]:
    seen = []
    for i, text in enumerate(texts):
        out = svc.message(C, conversation, text, at=T0 + timedelta(minutes=start + 2 * i))
        seen.append(
            (
                [(x.memory.id, round(x.confidence, 9)) for x in out.insights],
                out.conversation.predicted_topics,
                out.held_back,
            )
        )
    return seen


def test_export_then_import_keeps_surfacing_behaviour(
    tmp_path: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    source = _service(tmp_path / "a", spacy_extractor)
    for text in SURFACED_MEMORIES:
        _remember(source, text)
    for n in range(3):
        out = [
            source.message(C, f"past-{n}", text, at=T0 + timedelta(hours=n, minutes=2 * i))
            for i, text in enumerate(CONVERSATION)
        ]
        for j, insight in enumerate(x for o in out for x in o.insights):
            source.engage(C, insight.surfacing_id, ("used", "dismissed", "ignored")[j % 3])
    source.message(C, "open", CONVERSATION[0], at=T0 + timedelta(hours=5))
    records = list(source.export(C))
    assert {"type": "section", "name": "learned", "version": 1} in records
    assert any(r.get("key") == "surface:model" for r in records)
    assert any(str(r.get("key", "")).startswith("conversation:") for r in records)

    target = _service(tmp_path / "b", spacy_extractor)
    target.import_records(C, records)
    try:
        assert target.surfacing_metrics(C) == source.surfacing_metrics(C)
        for svc in (source, target):
            svc.embed_hubs(C)
        start = 6 * 60
        assert _offers(target, "open", LATER, start) == _offers(source, "open", LATER, start)
        assert _offers(target, "new", LATER, start) == _offers(source, "new", LATER, start)
    finally:
        source.close()
        target.close()


def _scanned_quality(svc: Hippocampus) -> float:
    scores = [
        m.retrieval.quality_score
        for m in svc.store.iter_memories(C)
        if m.retrieval.quality_score is not None
    ]
    return sum(scores) / len(scores)


def test_stats_keep_average_quality_and_retrievals_as_running_totals(
    tmp_path: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    svc = _service(tmp_path / "data", spacy_extractor)
    try:
        assert svc.stats(C).average_quality is None
        ids = [
            svc.remember(C, NewMemory(content=text), now=T0).memory.id  # type: ignore[union-attr]
            for text in (
                "Retry the payment webhook with exponential backoff because bursts overload it",
                "Store money as integer cents so that rounding never loses a cent",
                "Pin the database driver version: 5.2 broke connection pooling in production",
            )
        ]
        assert svc.stats(C).average_quality == pytest.approx(_scanned_quality(svc))
        svc.forget(C, ids[0])
        svc.update(C, ids[1], MemoryPatch(content="cents"), now=T0)
        assert svc.stats(C).average_quality == pytest.approx(_scanned_quality(svc))
        svc.recall(C, "payment webhook", now=T0)
        svc.recall(C, "database driver", now=T0)
        assert svc.stats(C).retrieval_count == 2
    finally:
        svc.close()
    reopened = _service(tmp_path / "data", spacy_extractor)
    try:
        stats = reopened.stats(C)
        assert stats.retrieval_count == 2
        assert stats.average_quality == pytest.approx(_scanned_quality(reopened))
    finally:
        reopened.close()


def test_running_totals_count_what_a_database_held_before_they_existed(
    tmp_path: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    svc = _service(tmp_path / "data", spacy_extractor)
    try:
        _remember(svc, "Retry the payment webhook with exponential backoff and jitter")
        svc.recall(C, "payment webhook", now=T0)
        expected = _scanned_quality(svc)
    finally:
        svc.close()
    with sqlite3.connect(tmp_path / "data" / DB_FILE) as conn:
        conn.execute("DROP TABLE quality_totals")
        conn.execute("DROP TABLE event_totals")
        conn.execute("DELETE FROM meta WHERE key IN ('quality_totals', 'event_totals')")
    reopened = _service(tmp_path / "data", spacy_extractor)
    try:
        stats = reopened.stats(C)
        assert stats.average_quality == pytest.approx(expected)
        assert stats.retrieval_count == 1
    finally:
        reopened.close()


def test_the_tier_pass_promotes_a_memory_that_keeps_helping(svc: Hippocampus) -> None:
    mid = _remember(svc, "Retry the payment webhook with exponential backoff and jitter")
    for hour in range(6):
        svc.feedback(C, mid, helpful=True, now=T0 + timedelta(hours=hour))
    report = svc.apply_tiers(C, now=T0 + timedelta(days=1))
    assert report.promoted == 1 and report.restored == 0
    assert report.changes[0]["to"] == "promoted"
    memory = svc.get(C, mid)
    assert lifecycle(memory) == "promoted" and memory.tier == "active"
    later = svc.apply_tiers(C, now=T0 + timedelta(days=400))
    assert later.archived == 0 and lifecycle(svc.get(C, mid)) == "promoted"


def test_embedding_generated_at_says_when_each_vector_was_made(svc: Hippocampus) -> None:
    mid = _remember(svc, "Retry the payment webhook with exponential backoff and jitter")
    assert svc.get(C, mid).embedding_generated_at == T0
    later = T0 + timedelta(days=2)
    svc.update(C, mid, MemoryPatch(content="Retry the payment webhook with jitter"), now=later)
    assert svc.get(C, mid).embedding_generated_at == later
    svc.update(C, mid, MemoryPatch(tags=["payments"]), now=later + timedelta(days=1))
    assert svc.get(C, mid).embedding_generated_at == later  # content unchanged: no new vector
    svc.store.replace_memory(
        C,
        MemoryRecord(
            memory=svc.get(C, mid).model_copy(
                update={"embedding_model": None, "embedding_generated_at": None}
            ),
            drop_vector=True,
        ),
        replace_edges=False,
    )
    before = datetime.now(UTC)
    assert svc.reindex(C) == 1
    stamped = svc.get(C, mid).embedding_generated_at
    assert stamped is not None and stamped >= before


def test_decay_fades_associations_and_keeps_what_a_memory_is_about(svc: Hippocampus) -> None:
    a = _remember(svc, "Raise the redis pool size", concepts=["redis", "pool"])
    b = _remember(svc, "Add a wait timeout to pgbouncer", concepts=["pgbouncer"])
    svc.record_use(C, [a, b], now=T0)
    hubs_before = {(e.type, e.target): e.weight for e in svc.store.edges_of(C, a)}
    idle = T0 + timedelta(days=181)
    decayed = sum(svc.decay(C, now=idle + timedelta(days=d)) for d in range(3))
    assert decayed == 3  # the one association, once a day
    after = {(e.type, e.target): e.weight for e in svc.store.edges_of(C, a)}
    assert after.pop((EdgeType.ASSOCIATED, b)) == pytest.approx(0.15)
    hubs_before.pop((EdgeType.ASSOCIATED, b))
    assert after == hubs_before and (EdgeType.ABOUT, "redis") in after
    assert svc.decay(C, now=T0 + timedelta(days=179)) == 0


def test_associate_sorts_by_path_strength_or_by_the_seeds_confidence(svc: Hippocampus) -> None:
    both = _remember(svc, "Pool and redis notes", concepts=["redis", "connection pool"])
    one = _remember(svc, "Redis only notes", concepts=["redis"])
    for hour in range(3):
        svc.feedback(C, one, helpful=True, now=T0 + timedelta(hours=hour))
    context = ["redis", "connection pool"]
    by_strength = svc.associate(C, context).results
    assert [a.memory.id for a in by_strength] == [both, one]
    by_confidence = svc.associate(C, context, sort="confidence").results
    assert [a.memory.id for a in by_confidence] == [one, both]
    assert [a.memory.id for a in svc.associate(C, context, limit=1, sort="confidence").results] == [
        one
    ]
    with pytest.raises(InvalidInputError):
        svc.associate(C, context, sort="age")


def test_remember_records_what_a_memory_was_synthesized_from(svc: Hippocampus) -> None:
    a = _remember(svc, "Redis pool ran out during the sale")
    b = _remember(svc, "Pgbouncer queue filled during the sale")
    out = svc.remember(
        C,
        NewMemory(
            content="Connection limits, not CPU, bound checkout during sales",
            source=OPERATOR,
            synthesized_from=[a, b, a],
        ),
        now=T0,
    )
    assert out.memory is not None
    assert out.memory.retrieval.synthesized_from == [a, b]
    edges = {(e.type, e.target) for e in svc.store.edges_of(C, out.memory.id)}
    assert {(EdgeType.SYNTHESIZED_FROM, a), (EdgeType.SYNTHESIZED_FROM, b)} <= edges
    with pytest.raises(InvalidInputError) as bad:
        svc.remember(C, NewMemory(content="From nothing at all, really", synthesized_from=["x"]))
    assert bad.value.field == "synthesized_from"
    assert svc.stats(C).memories == 3
