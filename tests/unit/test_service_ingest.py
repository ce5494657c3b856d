"""Ingest as a stream of batches (remember_batches): extraction and embedding run
ahead of the writes, and what is stored is what remember_many, batch after
batch, stores."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from bench.synth import memories
from hippocampus.embed import HashingEmbedder
from hippocampus.errors import ConflictError, EmbeddingError, InvalidInputError
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.extract.quality import QualityConfig
from hippocampus.model import EdgeType, NewMemory
from hippocampus.service import Hippocampus, RememberOutcome
from hippocampus.services import remembering
from hippocampus.store import MemoryRecord
from hippocampus.store.embedded import EmbeddedStore

C = "org:acme"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
POOLING = "Use connection pooling for the billing database"
LONG = "\n\n".join(
    f"Paragraph {i}: the reconciliation job compares ledger rows with the bank export "
    f"because totals drifted by {i} cents in region {i % 7}, so the nightly check now "
    "sums every account twice and alerts the payments team on a mismatch."
    for i in range(40)
)


class LoggingEmbedder(HashingEmbedder):
    """The hashing embedder, noting in a shared log each text it embeds; fails
    while ``down``."""

    def __init__(self, log: list[tuple[str, str]]) -> None:
        super().__init__()
        self.log = log
        self.down = False
        self.awaited: set[str] = set()
        self.seen_awaited = threading.Event()

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.down:
            raise EmbeddingError("model crashed")
        self.log.extend(("embed", t) for t in texts)
        if self.awaited.intersection(texts):
            self.seen_awaited.set()
        return super().encode(texts)


class LoggingStore(EmbeddedStore):
    """The embedded store, noting in a shared log each memory it adds."""

    def __init__(self, path: Path, log: list[tuple[str, str]]) -> None:
        super().__init__(path)
        self.log = log
        self.hold: threading.Event | None = None

    def add_memories(self, collection: str, records: Sequence[MemoryRecord]) -> None:
        if self.hold is not None:
            self.hold.wait(timeout=10)
        super().add_memories(collection, records)
        self.log.extend(("write", r.memory.content) for r in records)


@dataclass
class Engine:
    service: Hippocampus
    embedder: LoggingEmbedder
    log: list[tuple[str, str]]


@pytest.fixture
def engines(
    tmp_path: Path, spacy_extractor: SpacyConceptExtractor
) -> Iterator[tuple[Engine, Engine]]:
    built = []
    for name in ("sequential", "stream"):
        log: list[tuple[str, str]] = []
        embedder = LoggingEmbedder(log)
        service = Hippocampus(
            LoggingStore(tmp_path / name, log),
            embedder,
            spacy_extractor,
            quality=QualityConfig(source_trust={"human": 1.0}),
            embed_batch_size=4,
        )
        built.append(Engine(service, embedder, log))
    yield built[0], built[1]
    for engine in built:
        engine.service.close()


@pytest.fixture
def small_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs of a few memories, so a short stream has many of them in flight."""
    monkeypatch.setattr(remembering, "STREAM_AHEAD", 20)
    monkeypatch.setattr(remembering, "EMBED_RUN", 6)


def _batches() -> list[list[NewMemory]]:
    """Batches whose outcomes depend on the ones before them being written."""
    notes = [
        NewMemory(content=m.content, category=m.category, tags=list(m.tags))
        for m in memories(24, seed=11)
    ]
    return [
        [
            NewMemory(content=notes[0].content, id="first", conversation_id="c-1"),
            NewMemory(content=POOLING, source="human"),
            *notes[1:4],
        ],
        [
            # An exact repeat of a memory the batch before stored.
            NewMemory(content=notes[0].content, conversation_id="c-2", tags=["again"]),
            # A near repeat of one without an id.
            NewMemory(content=notes[2].content + " Confirmed again"),
            # The opposite of one stored just before.
            NewMemory(content="Don't use connection pooling for the billing database"),
            # Provenance naming a memory the batch before stored.
            NewMemory(
                content="Every incident review this quarter named a missing index as the "
                "first cause; we now add one before a table passes a million rows.",
                synthesized_from=["first"],
                source="human",
            ),
            NewMemory(content="fixed it"),  # rejected by the gate
            *notes[4:7],
        ],
        [
            NewMemory(content=LONG, id="long", concepts=["ledger drift"], domains=["finance"]),
            *notes[7:12],
            NewMemory(content=notes[8].content),  # repeated within the batch
        ],
        [],
        *([n] for n in notes[12:18]),
        notes[18:24],
    ]


def _snapshot(svc: Hippocampus) -> dict[str, Any]:
    """All that a collection holds, with generated ids replaced by contents."""
    store = svc.store
    stored = list(store.iter_memories(C))
    name = _names(svc)

    def memory(m: Any) -> dict[str, Any]:
        return _named_ids(m.model_dump(mode="json", exclude={"id"}), name)

    ids = [m.id for m in stored]
    vectors = store.get_vectors(C, ids)
    passages = store.get_passages(C, ids)
    return {
        "memories": sorted((name[m.id], memory(m)) for m in stored),
        "edges": sorted(
            (name.get(e.source, e.source), e.type.value, name.get(e.target, e.target), e.weight)
            for e in store.iter_edges(C)
        ),
        "vectors": {name[i]: v.round(6).tolist() for i, v in vectors.items()},
        "passages": {name[i]: v.round(6).tolist() for i, v in passages.items()},
        "hubs": sorted((kind, n, model) for kind, n, _, model in store.iter_hub_vectors(C)),
        "events": sorted(
            (e.type, tuple(name.get(i, i) for i in e.memory_ids)) for e in store.iter_events(C)
        ),
    }


def _named_ids(data: dict[str, Any], name: dict[str, str]) -> dict[str, Any]:
    """A dumped memory with the memory ids it names (provenance, superseding
    memories) replaced by their names."""
    for key in ("synthesized_from", "superseded_by"):
        data["retrieval"][key] = [name.get(i, i) for i in data["retrieval"][key]]
    return data


def _names(svc: Hippocampus) -> dict[str, str]:
    """Each stored memory's id, or its content where the id was generated (two
    runs generate different ones)."""
    return {
        m.id: m.id if m.id in {"first", "long"} or not _generated(m.id) else f"<{m.content}>"
        for m in svc.store.iter_memories(C)
    }


def _generated(memory_id: str) -> bool:
    return len(memory_id) == 36 and memory_id.count("-") == 4


def _outcomes(outcomes: Sequence[RememberOutcome], svc: Hippocampus) -> list[tuple[Any, ...]]:
    names = _names(svc)

    def name(memory_id: str | None) -> str | None:
        return names.get(memory_id, memory_id) if memory_id is not None else None

    def said(reason: str) -> str:
        for memory_id, shown in names.items():
            reason = reason.replace(memory_id, shown)
        return reason

    return [
        (
            name(o.memory.id) if o.memory is not None else None,
            o.created,
            name(o.duplicate_of),
            o.embedded,
            o.rejected,
            o.quality,
            [name(c) for c in o.conflicts_with],
            [name(c) for c in o.supersedes],
            [said(r) for r in o.reasons],
            _named_ids(o.memory.model_dump(mode="json", exclude={"id"}), names)
            if o.memory is not None
            else None,
        )
        for o in outcomes
    ]


def test_a_stream_stores_exactly_what_batch_after_batch_stores(
    engines: tuple[Engine, Engine], small_runs: None
) -> None:
    sequential, stream = engines
    batches = _batches()
    expected = [sequential.service.remember_many(C, b, now=T0) for b in batches]
    got = list(stream.service.remember_batches(C, batches, now=T0))

    assert [_outcomes(o, stream.service) for o in got] == [
        _outcomes(o, sequential.service) for o in expected
    ]
    want = _snapshot(sequential.service)
    assert _snapshot(stream.service) == want
    # The batches were not trivially alike: each thing a later batch depends on
    # the earlier ones for happened.
    flat = list(itertools.chain.from_iterable(expected))
    assert sum(o.duplicate_of is not None for o in flat) >= 3
    assert any(o.conflicts_with for o in flat) and any(o.rejected for o in flat)
    assert any(edge[1] == EdgeType.SYNTHESIZED_FROM.value for edge in want["edges"])
    assert len(want["passages"]["long"]) >= 3 and want["hubs"]


def test_a_stream_embeds_and_extracts_ahead_of_its_writes(
    engines: tuple[Engine, Engine], small_runs: None
) -> None:
    _, stream = engines
    batches = _batches()
    # The first write waits (up to ten seconds) for a memory of the second batch
    # to be embedded: a stream that embeds a batch only at its turn never gets there.
    later = batches[1][2].content
    stream.embedder.awaited = {later}
    store = stream.service.store
    assert isinstance(store, LoggingStore)
    store.hold = stream.embedder.seen_awaited
    got = list(stream.service.remember_batches(C, batches, now=T0))
    first_write = next(i for i, (kind, _) in enumerate(stream.log) if kind == "write")
    assert ("embed", later) in stream.log[:first_write]
    assert stream.log[first_write] == ("write", batches[0][0].content)
    assert all(o.embedded for batch in got for o in batch if not o.rejected)


def test_a_refused_batch_stops_the_stream_after_the_ones_before_it(
    engines: tuple[Engine, Engine], small_runs: None
) -> None:
    _, stream = engines
    notes = [NewMemory(content=m.content) for m in memories(9, seed=5)]
    batches = [notes[0:3], [notes[3], NewMemory(content="x", id="a/b")], notes[4:6], notes[6:9]]
    outcomes = stream.service.remember_batches(C, batches, now=T0)
    assert len(next(outcomes)) == 3
    with pytest.raises(InvalidInputError) as refused:
        next(outcomes)
    assert refused.value.field == "memories[1].id"
    assert stream.service.stats(C).memories == 3
    assert not [t for t in threading.enumerate() if t.name.startswith("hippo-ingest")]


def test_an_id_that_exists_refuses_its_batch_at_its_turn(
    engines: tuple[Engine, Engine], small_runs: None
) -> None:
    _, stream = engines
    notes = [NewMemory(content=m.content) for m in memories(6, seed=6)]
    batches = [
        [NewMemory(content=notes[0].content, id="kept"), notes[1]],
        [notes[2], NewMemory(content=notes[3].content, id="kept")],
        notes[4:6],
    ]
    outcomes = stream.service.remember_batches(C, batches)
    next(outcomes)
    with pytest.raises(ConflictError):
        next(outcomes)
    assert stream.service.stats(C).memories == 2


def test_letting_go_of_a_stream_stops_its_threads_and_writes_no_more(
    engines: tuple[Engine, Engine], small_runs: None
) -> None:
    _, stream = engines
    notes = [NewMemory(content=m.content) for m in memories(40, seed=8)]
    outcomes = stream.service.remember_batches(C, [notes[i : i + 2] for i in range(0, 40, 2)])
    next(outcomes)
    next(outcomes)
    outcomes.close()
    assert stream.service.stats(C).memories == 4
    assert not [t for t in threading.enumerate() if t.name.startswith("hippo-ingest")]


def test_a_failing_embedder_stores_the_stream_for_re_embedding(
    engines: tuple[Engine, Engine], small_runs: None
) -> None:
    _, stream = engines
    stream.embedder.down = True
    notes = [NewMemory(content=m.content) for m in memories(8, seed=9)]
    got = list(stream.service.remember_batches(C, [notes[:4], notes[4:]]))
    assert all(o.created and not o.embedded for batch in got for o in batch)
    assert stream.service.stats(C).memories == 8
    assert stream.service.store.count_pending_embeddings(C, stream.embedder.name) == 8


def test_a_bad_collection_is_refused_at_once(engines: tuple[Engine, Engine]) -> None:
    _, stream = engines
    with pytest.raises(InvalidInputError):
        stream.service.remember_batches("no/slashes", [])
