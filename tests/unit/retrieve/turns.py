"""Conversation turns remembered in order, on a hashing embedder: what the turn
and speaker tests of recall share."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hippocampus.embed import HashingEmbedder
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.model import NewMemory
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def hashing_service(path: Path, extractor: SpacyConceptExtractor) -> Iterator[Hippocampus]:
    """A service on an embedded store at ``path``, closed when the fixture ends."""
    svc = Hippocampus(EmbeddedStore(path), HashingEmbedder(), extractor)
    try:
        yield svc
    finally:
        svc.close()


def remember_turns(
    svc: Hippocampus,
    collection: str,
    turns: Sequence[tuple[str | None, str]],
    conversation: str | None,
) -> list[str]:
    """Remember ``(speaker, text)`` turns a minute apart; their ids, in order."""
    outcomes = svc.remember_many(
        collection,
        [
            NewMemory(
                content=text,
                conversation_id=conversation,
                speaker=speaker,
                occurred_at=T0 + timedelta(minutes=i),
                source="human",
            )
            for i, (speaker, text) in enumerate(turns)
        ],
    )
    ids = []
    for outcome in outcomes:
        assert outcome.memory is not None
        ids.append(outcome.memory.id)
    return ids
