"""Concurrent changes to one memory's metadata: none is lost.

Feedback, engagement, merged repeats and edits each change what was learned of
a memory; run from several threads at once (as the API's thread pool does),
every increment must land. No lock of the process orders them but an edit's:
learning updates are atomic in the store.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hippocampus.embed import HashingEmbedder
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.extract.quality import QualityConfig
from hippocampus.model import MemoryPatch, NewMemory
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore

C = "team:race"
OPERATOR = "operator"
THREADS = 6
EACH = 15


@pytest.fixture
def svc(tmp_path: Path, spacy_extractor: SpacyConceptExtractor) -> Iterator[Hippocampus]:
    service = Hippocampus(
        EmbeddedStore(tmp_path / "data", synchronous="NORMAL"),
        HashingEmbedder(),
        spacy_extractor,
        quality=QualityConfig(source_trust={OPERATOR: 1.0}),
    )
    yield service
    service.close()


def _together(*jobs: Callable[[], None]) -> None:
    """Run the jobs in threads released at the same moment; re-raise a failure."""
    start = threading.Barrier(len(jobs))
    failures: list[BaseException] = []

    def run(job: Callable[[], None]) -> None:
        start.wait()
        try:
            job()
        except BaseException as e:
            failures.append(e)

    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread is stuck"
    if failures:
        raise failures[0]


def _memory(svc: Hippocampus) -> str:
    out = svc.remember(C, NewMemory(content="Raise the redis pool size", source=OPERATOR))
    assert out.memory is not None
    return out.memory.id


def test_concurrent_helpful_feedback_counts_every_use(svc: Hippocampus) -> None:
    memory_id = _memory(svc)

    def feedback() -> None:
        for _ in range(EACH):
            svc.feedback(C, memory_id, helpful=True, context=["redis"])

    _together(*[feedback] * THREADS)
    memory = svc.get(C, memory_id)
    assert memory.retrieval.usage_count == THREADS * EACH
    about = [e for e in svc.store.edges_of(C, memory_id) if e.target == "redis"]
    assert [e.co_occurrences for e in about] == [THREADS * EACH]


def test_an_edit_beside_feedback_keeps_both(svc: Hippocampus) -> None:
    memory_id = _memory(svc)

    def feedback() -> None:
        for _ in range(EACH):
            svc.feedback(C, memory_id, helpful=True)

    def edit() -> None:
        for i in range(EACH):
            svc.update(C, memory_id, MemoryPatch(tags=[f"tag-{i}"]))

    _together(*[feedback] * (THREADS - 2), edit, edit)
    memory = svc.get(C, memory_id)
    assert memory.retrieval.usage_count == (THREADS - 2) * EACH
    assert memory.tags == [f"tag-{EACH - 1}"]


def test_repeats_merged_at_once_are_all_counted_beside_feedback(svc: Hippocampus) -> None:
    memory_id = _memory(svc)

    def repeat(n: int) -> Callable[[], None]:
        def job() -> None:
            for i in range(EACH):
                out = svc.remember(
                    C,
                    NewMemory(
                        content="Raise the redis pool size",
                        source=OPERATOR,
                        conversation_id=f"chat-{n}-{i}",
                    ),
                )
                assert out.duplicate_of == memory_id

        return job

    def feedback() -> None:
        for _ in range(EACH):
            svc.feedback(C, memory_id, helpful=True)

    _together(*[repeat(n) for n in range(THREADS - 2)], feedback, feedback)
    meta = svc.get(C, memory_id).retrieval
    assert meta.duplicates == (THREADS - 2) * EACH
    assert len(meta.conversation_ids) == (THREADS - 2) * EACH
    assert meta.usage_count == 2 * EACH
