"""Surfacing under concurrent requests: a message's search holds up no other
conversation and no engagement, and concurrent messages keep each other's
learning.

A message's retrieval is held inside the engine (the ``retrieve`` the surfacer
calls waits on an event or a barrier) to make the interleavings certain.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hippocampus.embed import HashingEmbedder
from hippocampus.errors import NotFoundError, StoreUnavailableError
from hippocampus.extract import SpacyConceptExtractor
from hippocampus.model import NewMemory
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore
from hippocampus.surface import SurfaceConfig
from hippocampus.surface import surfacer as surfacing
from hippocampus.surface.outcomes import SURFACE_MODEL_KEY, EngagementOutcome, MessageOutcome
from hippocampus.surface.predict import SurfaceModel

C = "team:payments"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
MESSAGE = "the redis connection pool is exhausted during the checkout load test"
LOW = {t: 0.05 for t in ("debugging", "help-seeking", "exploration", "casual")}
WAIT = 60.0


@pytest.fixture
def svc(tmp_path: Path, spacy_extractor: SpacyConceptExtractor) -> Iterator[Hippocampus]:
    service = Hippocampus(
        EmbeddedStore(tmp_path / "data"),
        HashingEmbedder(),
        spacy_extractor,
        surfacing=SurfaceConfig(thresholds=LOW, default_threshold=0.05),
        random_seed=3,
    )
    topics = [*service.extractor.extract_many([MESSAGE])[0].concepts][:3]
    service.remember_many(
        C,
        [
            NewMemory(
                id="pool",
                content="Raise the redis connection pool before checkout load tests",
                concepts=topics,
                triggers=[],
            )
        ],
        now=T0,
    )
    yield service
    service.close()


def say(svc: Hippocampus, conversation: str, text: str, minute: float) -> MessageOutcome:
    at = T0 + timedelta(minutes=minute)
    return svc.message(C, conversation, text, at=at, conversation_type="debugging")


def hold_retrieval(monkeypatch: pytest.MonkeyPatch, wait: Callable[[], object]) -> None:
    """Call ``wait`` before a thread's first retrieval (a message retrieves up
    to three times)."""
    real = surfacing.retrieve
    local = threading.local()

    def held(*args: Any, **kwargs: Any) -> Any:
        if not getattr(local, "waited", False):
            local.waited = True
            wait()
        return real(*args, **kwargs)

    monkeypatch.setattr(surfacing, "retrieve", held)


class Job(threading.Thread):
    """A call in its own thread that keeps its result or its failure."""

    def __init__(self, call: Callable[[], object]) -> None:
        super().__init__(daemon=True)
        self.call = call
        self.result: object = None
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.call()
        except BaseException as e:
            self.failure = e

    def finish(self) -> object:
        self.join(timeout=WAIT)
        assert not self.is_alive(), "still waiting"
        if self.failure is not None:
            raise self.failure
        return self.result


def test_a_held_search_holds_up_neither_another_conversation_nor_an_engagement(
    svc: Hippocampus, monkeypatch: pytest.MonkeyPatch
) -> None:
    earlier = say(svc, "c0", MESSAGE, 0).insights[0]
    searching, release = threading.Event(), threading.Event()
    slow_thread: list[threading.Thread] = []

    def wait() -> None:
        # Only the first conversation's search is held.
        if threading.current_thread() in slow_thread:
            searching.set()
            assert release.wait(WAIT)

    hold_retrieval(monkeypatch, wait)
    slow = Job(lambda: say(svc, "c1", MESSAGE, 0))
    slow_thread.append(slow)
    slow.start()
    try:
        assert searching.wait(WAIT)
        other = Job(lambda: say(svc, "c2", MESSAGE, 0))
        engage = Job(lambda: svc.engage(C, earlier.surfacing_id, "used", now=T0))
        other.start()
        engage.start()
        offered = other.finish()
        engaged = engage.finish()
        assert slow.is_alive() and not release.is_set()
    finally:
        release.set()
    assert isinstance(offered, MessageOutcome)
    assert [i.memory.id for i in offered.insights] == ["pool"]
    assert isinstance(engaged, EngagementOutcome) and engaged.engagement == "used"
    held = slow.finish()
    assert isinstance(held, MessageOutcome)
    assert [i.memory.id for i in held.insights] == ["pool"]
    metrics = svc.surfacing_metrics(C)
    assert metrics.surfaced == 3 and metrics.engagements["used"] == 1


def test_concurrent_messages_of_different_conversations_keep_both_learnings(
    svc: Hippocampus, monkeypatch: pytest.MonkeyPatch
) -> None:
    say(svc, "c1", "the checkout service is slow today", 0)
    say(svc, "c2", "the checkout service is slow today", 0)
    # Both searches run at once: each message read the learned state before
    # either wrote it back.
    both = threading.Barrier(2, timeout=WAIT)
    hold_retrieval(monkeypatch, both.wait)
    jobs = [Job(lambda c=c: say(svc, c, MESSAGE, 2)) for c in ("c1", "c2")]
    for job in jobs:
        job.start()
    for job in jobs:
        out = job.finish()
        assert isinstance(out, MessageOutcome)
        assert [i.memory.id for i in out.insights] == ["pool"]
    assert svc.surfacing_metrics(C).surfaced == 2
    learned = SurfaceModel.model_validate(
        svc.store.get_states(C, [SURFACE_MODEL_KEY])[SURFACE_MODEL_KEY]
    )
    assert learned.topics.messages == 2


def test_two_messages_of_one_conversation_at_once_are_both_taken_in(
    svc: Hippocampus, monkeypatch: pytest.MonkeyPatch
) -> None:
    both = threading.Barrier(2, timeout=WAIT)
    hold_retrieval(monkeypatch, both.wait)
    jobs = [Job(lambda m=m: say(svc, "c1", MESSAGE, m)) for m in (0, 2)]
    for job in jobs:
        job.start()
    offered = []
    for job in jobs:
        out = job.finish()
        assert isinstance(out, MessageOutcome)
        offered += [i.memory.id for i in out.insights]
    # One of them was taken in again after the other: it saw the offer made.
    assert offered == ["pool"]
    assert svc.conversation(C, "c1").messages == 2
    assert svc.surfacing_metrics(C).surfaced == 1


def test_a_failed_write_of_learned_state_leaves_the_message_unrecorded(
    svc: Hippocampus, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(collection: str, **update: object) -> None:
        raise StoreUnavailableError("disk gone")

    with monkeypatch.context() as m:
        m.setattr(svc.store, "learn", refuse)
        with pytest.raises(StoreUnavailableError):
            say(svc, "c1", MESSAGE, 0)
    with pytest.raises(NotFoundError):
        svc.conversation(C, "c1")
    assert svc.surfacing_metrics(C).surfaced == 0
    # Nothing was left waiting: the next message is taken in and counted.
    assert [i.memory.id for i in say(svc, "c1", MESSAGE, 2).insights] == ["pool"]
    assert svc.surfacing_metrics(C).surfaced == 1


def test_concurrent_engagements_and_feedback_on_one_memory_lose_nothing(
    svc: Hippocampus,
) -> None:
    # No lock of this process orders them: each is one learning update, atomic
    # in the store.
    offers = [say(svc, f"c{n}", MESSAGE, n).insights[0] for n in range(6)]
    assert {o.memory.id for o in offers} == {"pool"}
    start = threading.Barrier(12)

    def engage(surfacing_id: str) -> object:
        start.wait(WAIT)
        return svc.engage(C, surfacing_id, "used", now=T0 + timedelta(hours=1))

    def helpful() -> object:
        start.wait(WAIT)
        return svc.feedback(C, "pool", helpful=True, now=T0 + timedelta(hours=1))

    jobs = [Job(lambda s=o.surfacing_id: engage(s)) for o in offers]
    jobs += [Job(helpful) for _ in range(6)]
    for job in jobs:
        job.start()
    for job in jobs:
        job.finish()
    meta = svc.get(C, "pool").retrieval
    assert (meta.usage_count, meta.helpful_votes) == (12, 12.0)
    assert meta.confidence == pytest.approx(1.0)
    metrics = svc.surfacing_metrics(C)
    assert metrics.engagements["used"] == 6
    events = [e for e in svc.store.iter_events(C) if e.type == "engagement"]
    assert len(events) == 12
