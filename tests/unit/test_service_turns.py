"""Remembering conversations through the facade: each memory's time and speaker,
and its turns linked in the order they happened, whatever order they arrive in."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hippocampus.embed import HashingEmbedder
from hippocampus.errors import InvalidInputError, NotFoundError
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.extract.quality import QualityConfig
from hippocampus.model import EdgeType, MemoryPatch, NewMemory, RecallFilters
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore

C = "persona:ada"
T0 = datetime(2025, 6, 2, 14, 0, tzinfo=UTC)
OPERATOR = "operator"


@pytest.fixture
def svc(tmp_path: Path, spacy_extractor: SpacyConceptExtractor) -> Iterator[Hippocampus]:
    service = Hippocampus(
        EmbeddedStore(tmp_path / "data"),
        HashingEmbedder(),
        spacy_extractor,
        quality=QualityConfig(source_trust={OPERATOR: 1.0}),
    )
    yield service
    service.close()


def said(memory_id: str, minute: int, text: str, speaker: str = "user") -> NewMemory:
    return NewMemory(
        id=memory_id,
        content=text,
        source=OPERATOR,
        conversation_id="chat-9",
        occurred_at=T0 + timedelta(minutes=minute),
        speaker=speaker,
    )


def chain(svc: Hippocampus) -> list[tuple[str, str]]:
    return sorted((e.source, e.target) for e in svc.store.iter_edges(C) if e.type is EdgeType.NEXT)


def test_turns_imported_after_the_fact_splice_into_the_order(svc: Hippocampus) -> None:
    svc.remember_many(
        C,
        [
            said("t3", 3, "I moved the staging cluster to the new region on Monday"),
            said("t1", 1, "Which region should the staging cluster run in?", "assistant"),
        ],
        now=T0 + timedelta(days=30),
    )
    assert chain(svc) == [("t1", "t3")]
    svc.remember(C, said("t2", 2, "Frankfurt, close to the customers"), now=T0 + timedelta(days=31))
    assert chain(svc) == [("t1", "t2"), ("t2", "t3")]
    window = svc.turns(C, "t2", before=1, after=1)
    assert [m.id for m in window.before] == ["t1"] and [m.id for m in window.after] == ["t3"]
    assert window.memory.occurred_at == T0 + timedelta(minutes=2)
    assert window.memory.created_at == T0 + timedelta(days=31)
    assert window.before[0].speaker == "assistant"

    svc.forget(C, "t2")
    assert chain(svc) == [("t1", "t3")]


def test_correcting_the_time_moves_the_turn(svc: Hippocampus) -> None:
    for n, text in enumerate(
        (
            "The invoice export fails for accounts with a euro sign in the name",
            "It is the CSV writer: it assumes ASCII",
            "Switching the writer to UTF-8 fixed the export",
        )
    ):
        svc.remember(C, said(f"t{n}", n, text))
    svc.update(C, "t0", MemoryPatch(occurred_at=T0 + timedelta(minutes=9), speaker="support"))
    assert chain(svc) == [("t1", "t2"), ("t2", "t0")]
    assert svc.get(C, "t0").speaker == "support"


def test_speaker_and_window_are_checked(svc: Hippocampus) -> None:
    with pytest.raises(InvalidInputError) as bad:
        svc.remember(C, said("x", 0, "a perfectly fine sentence about queues", "\u202eevil"))
    assert bad.value.field == "speaker"
    with pytest.raises(InvalidInputError) as bad:
        svc.remember(C, said("x", 0, "a perfectly fine sentence about queues", "x" * 101))
    assert bad.value.field == "speaker"
    svc.remember(C, said("ok", 0, "a perfectly fine sentence about queues", "  ada  "))
    assert svc.get(C, "ok").speaker == "ada"
    with pytest.raises(InvalidInputError) as bad:
        svc.turns(C, "ok", before=51)
    assert bad.value.field == "before"
    with pytest.raises(NotFoundError):
        svc.turns(C, "absent")


def test_a_naive_time_is_taken_as_utc_and_recall_filters_by_it(svc: Hippocampus) -> None:
    naive = datetime(2025, 6, 2, 14, 5)
    svc.remember(
        C,
        NewMemory(
            id="n",
            content="The message queue drops messages larger than one megabyte",
            source=OPERATOR,
            occurred_at=naive,
        ),
    )
    assert svc.get(C, "n").occurred_at == naive.replace(tzinfo=UTC)
    hits = svc.recall(
        C,
        "message queue drops large messages",
        filters=RecallFilters(occurred_before=datetime(2025, 6, 2, 14, 5)),
    ).hits
    assert hits == []
    hits = svc.recall(
        C,
        "message queue drops large messages",
        filters=RecallFilters(occurred_after=datetime(2025, 6, 2, 14, 5, tzinfo=UTC)),
    ).hits
    assert [h.memory.id for h in hits] == ["n"]


def test_repeated_recalls_and_decay_leave_turn_links_alone(svc: Hippocampus) -> None:
    for n, text in enumerate(
        (
            "The nightly backup job copies the Postgres WAL to object storage",
            "The backup job failed because the object storage token expired",
        )
    ):
        svc.remember(C, said(f"b{n}", n, text), now=T0)
    for _ in range(5):
        svc.recall(C, "postgres backup job object storage")
    svc.flush_learning()
    assert svc.decay(C, now=T0 + timedelta(days=3650)) >= 0
    (link,) = [e for e in svc.store.iter_edges(C) if e.type is EdgeType.NEXT]
    assert (link.source, link.target, link.weight, link.co_occurrences) == ("b0", "b1", 1.0, 0)
