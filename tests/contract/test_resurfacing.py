"""The store contract: memories due for spaced repetition, from the due dates
every write keeps (``GraphStore.due_memories``), agree with a scan that asks the
scheduler about each memory."""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import datetime, timedelta

import pytest

from hippocampus.errors import InvalidInputError
from hippocampus.model import Memory, Review, Tier
from hippocampus.schedule import FsrsScheduler, IndexedSchedule, Scheduler, SeedScheduler
from hippocampus.store import GraphStore, Learned, MemoryRecord
from tests.contract.helpers import T0, memory, record, vec

SCHEDULERS: dict[IndexedSchedule, Scheduler] = {"seed": SeedScheduler(), "fsrs": FsrsScheduler()}


def _scan(
    store: GraphStore, collection: str, schedule: IndexedSchedule, now: datetime, limit: int
) -> list[str]:
    """What a scan finds: every active memory the scheduler calls due, by value,
    then urgency, then id."""
    scheduler = SCHEDULERS[schedule]
    due = [
        (-m.retrieval.confidence * m.importance, -scheduler.urgency(m, now), m.id)
        for m in store.iter_memories(collection)
        if m.tier == Tier.ACTIVE and scheduler.urgency(m, now) >= 1.0
    ]
    return [memory_id for _, _, memory_id in sorted(due)[:limit]]


def _due(
    store: GraphStore, collection: str, schedule: IndexedSchedule, now: datetime, limit: int = 50
) -> list[str]:
    return [m.id for m in store.due_memories(collection, schedule=schedule, now=now, limit=limit)]


def _varied(memory_id: str, collection: str, rng: random.Random) -> Memory:
    """A memory of random age, use, review state, confidence and importance."""
    m = memory(memory_id, collection, minutes=-rng.randrange(0, 60 * 24 * 60))
    uses = rng.choice([0, 0, 1, 3, 8])
    last_used = m.created_at + timedelta(hours=rng.randrange(1, 24 * 30)) if uses else None
    review = None
    if rng.random() < 0.4:
        review = Review(
            stability=rng.uniform(0.2, 40.0),
            difficulty=rng.uniform(1.0, 10.0),
            last_review=m.created_at + timedelta(hours=rng.randrange(1, 24 * 40)),
        )
    return m.model_copy(
        update={
            "importance": rng.choice([0.5, 0.5, 0.2, 0.9, round(rng.random(), 3)]),
            "tier": rng.choice([Tier.ACTIVE] * 8 + [Tier.ARCHIVED, Tier.QUARANTINED]),
            "retrieval": m.retrieval.model_copy(
                update={
                    "confidence": rng.choice([0.5, 0.5, 0.3, round(rng.random(), 3)]),
                    "usage_count": uses,
                    "last_used": last_used,
                    "review": review,
                }
            ),
        }
    )


@pytest.mark.parametrize("schedule", ["seed", "fsrs"])
def test_due_memories_agree_with_a_scan_asking_the_scheduler(
    store: GraphStore, collection: str, schedule: IndexedSchedule
) -> None:
    rng = random.Random(5)
    store.add_memories(
        collection, [record(_varied(f"m{i:03d}", collection, rng)) for i in range(120)]
    )
    for days in (-20, 0, 3, 30, 400):
        now = T0 + timedelta(days=days)
        for limit in (1, 10, 200):
            assert _due(store, collection, schedule, now, limit) == _scan(
                store, collection, schedule, now, limit
            ), (days, limit)


def test_the_most_valuable_come_first_then_the_most_overdue_then_by_id(
    store: GraphStore, collection: str
) -> None:
    def aged(memory_id: str, days: int, importance: float = 0.5) -> Memory:
        return memory(memory_id, collection, minutes=-days * 24 * 60).model_copy(
            update={"importance": importance}
        )

    store.add_memories(
        collection,
        [
            record(aged("old", 30)),
            record(aged("older", 60)),
            record(aged("precious", 10, importance=0.9)),
            record(aged("twin-b", 20)),
            record(aged("twin-a", 20)),
            record(aged("fresh", 0, importance=1.0)),
        ],
    )
    # Under the seed rule a memory never used is due 0.7 days after it was made.
    assert _due(store, collection, "seed", T0) == [
        "precious",
        "older",
        "old",
        "twin-a",
        "twin-b",
    ]
    assert _due(store, collection, "seed", T0, limit=2) == ["precious", "older"]
    # Nothing is due before it was made.
    assert _due(store, collection, "seed", T0 - timedelta(days=90)) == []


def test_every_write_keeps_the_due_dates_in_step(store: GraphStore, collection: str) -> None:
    """Added, used (edited), archived, restored, re-embedded and deleted: the due
    memories are always those a scan finds."""
    rng = random.Random(11)
    made = [_varied(f"m{i:02d}", collection, rng) for i in range(40)]
    store.add_memories(collection, [record(m) for m in made])
    now = T0 + timedelta(days=5)

    def agree() -> None:
        for schedule in ("seed", "fsrs"):
            assert _due(store, collection, schedule, now) == _scan(
                store, collection, schedule, now, 50
            ), schedule

    agree()
    for m in made[:10]:
        # Just used and reviewed: not due any more.
        used = m.model_copy(
            update={
                "tier": Tier.ACTIVE,
                "retrieval": m.retrieval.model_copy(
                    update={
                        "usage_count": m.retrieval.usage_count + 1,
                        "last_used": now,
                        "review": Review(stability=4.0, difficulty=5.0, last_review=now),
                        "confidence": 0.9,
                    }
                ),
            }
        )
        store.replace_memory(collection, MemoryRecord(memory=used), replace_edges=False)
    agree()
    assert not {m.id for m in made[:10]} & set(_due(store, collection, "fsrs", now))
    for m in made[10:20]:
        store.replace_memory(
            collection,
            MemoryRecord(memory=m.model_copy(update={"tier": Tier.ARCHIVED}), drop_vector=True),
            replace_edges=False,
        )
    agree()
    for m in made[10:15]:
        store.replace_memory(
            collection,
            record(
                m.model_copy(
                    update={
                        "tier": Tier.ACTIVE,
                        "importance": 1.0,
                        "retrieval": m.retrieval.model_copy(update={"confidence": 1.0}),
                    }
                )
            ),
            replace_edges=False,
        )
    store.set_vectors(collection, [(m.id, vec(m.id), "other-model") for m in made[20:25]])
    for m in made[25:30]:
        assert store.delete_memory(collection, m.id)
    agree()
    # A learning update (an engagement) moves due dates as any write does.
    learned_ids = [m.id for m in made[30:36]]

    def reviewed(memories: Mapping[str, Memory], _states: object) -> Learned:
        return Learned(
            memories=[
                m.model_copy(
                    update={
                        "tier": Tier.ACTIVE,
                        "retrieval": m.retrieval.model_copy(
                            update={
                                "last_used": now,
                                "review": Review(stability=4.0, difficulty=5.0, last_review=now),
                            }
                        ),
                    }
                )
                for m in memories.values()
            ]
        )

    store.learn(collection, memory_ids=learned_ids, change=reviewed)
    agree()
    assert not set(learned_ids) & set(_due(store, collection, "fsrs", now))
    seed_due = _due(store, collection, "seed", now)
    assert not set(seed_due) & {m.id for m in made[15:20]}  # archived
    restored = [i for i in seed_due if i in {m.id for m in made[10:15]}]
    assert restored and seed_due[: len(restored)] == restored  # value 1.0: first


def test_due_memories_keep_to_their_collection(
    store: GraphStore, collection: str, other: str
) -> None:
    store.add_memories(collection, [record(memory("a", collection, minutes=-5 * 24 * 60))])
    store.add_memories(other, [record(memory("b", other, minutes=-5 * 24 * 60))])
    assert _due(store, collection, "fsrs", T0) == ["a"]
    assert _due(store, other, "fsrs", T0) == ["b"]
    assert _due(store, f"{collection}-none", "fsrs", T0) == []


def test_an_unknown_schedule_is_refused(store: GraphStore, collection: str) -> None:
    with pytest.raises(InvalidInputError):
        store.due_memories(collection, schedule="weekly", now=T0, limit=5)  # type: ignore[arg-type]
