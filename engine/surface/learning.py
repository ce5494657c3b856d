"""The learned state of a collection's surfacing, written in batches: a change
waiting for the surface model and counters, with its own writes, and the
writer that applies every change waiting for a collection in one learning
update of the store."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hippocampus.model import Event, Memory
from hippocampus.store import GraphStore, Learned
from hippocampus.surface.conversation import ConversationState, HeldBack
from hippocampus.surface.metrics import SurfaceCounters
from hippocampus.surface.offers import foreseen_key
from hippocampus.surface.outcomes import SURFACE_COUNTERS_KEY, SURFACE_MODEL_KEY
from hippocampus.surface.predict import SurfaceModel
from hippocampus.surface.rules import SurfaceConfig

_MODEL_KEY = SURFACE_MODEL_KEY
_COUNTERS_KEY = SURFACE_COUNTERS_KEY

Learn = Callable[[SurfaceModel, SurfaceCounters], bool]
"""A change to a collection's learned state (the model and the counters, as
stored now); says whether it changed the model."""


class Learning:
    """A change waiting for the collection's learned state, with its own writes.

    ``expect`` holds state documents as the change's caller last read them: the
    change applies only if they are still so when the learned state is written
    (else it is ``stale`` and the caller takes its input in afresh).
    """

    def __init__(
        self,
        change: Learn,
        writes: dict[str, dict[str, Any]],
        events: Sequence[Event] = (),
        expect: dict[str, dict[str, Any] | None] | None = None,
    ) -> None:
        self.change = change
        self.writes = writes
        self.events = events
        self.expect = expect or {}
        self.stale = False
        self.done = False
        self.failure: BaseException | None = None


def message_learning(
    learn: bool, conversation_type: str, previous: list[str] | None, topics: list[str], offered: int
) -> Learn:
    """What a message teaches: its offers count, and (when learning) the transition
    from the previous message's topics to its own."""

    def change(model: SurfaceModel, counters: SurfaceCounters) -> bool:
        if offered:
            counters.of(conversation_type).surfaced += offered
        if learn and previous is not None:
            model.topics.learn(previous, topics)
        return learn

    return change


def learned_batch(batch: Sequence[Learning], held: Mapping[str, dict[str, Any]]) -> Learned:
    """What a batch of waiting changes writes, applied in order to the learned
    state as ``held`` now: each change that is not stale, with its writes and
    events."""
    current = dict(held)
    learned = SurfaceModel.model_validate(current.get(_MODEL_KEY, {}))
    counters = SurfaceCounters.model_validate(current.get(_COUNTERS_KEY, {}))
    states: dict[str, dict[str, Any]] = {}
    events: list[Event] = []
    model_changed = False
    for item in batch:
        item.stale = any(current.get(k) != doc for k, doc in item.expect.items())
        if item.stale:
            continue
        model_changed |= item.change(learned, counters)
        states.update(item.writes)
        current.update(item.writes)
        events.extend(item.events)
    states[_COUNTERS_KEY] = counters.model_dump(mode="json")
    if model_changed:
        states[_MODEL_KEY] = learned.model_dump(mode="json")
    return Learned(states=states, events=events)


def recalled(
    state: ConversationState, memory_ids: Sequence[str], need_horizon: int
) -> tuple[list[tuple[str, int]], list[tuple[HeldBack, float]], list[list[str]]]:
    """What an explicit recall in the conversation ``state`` found: those of its
    top results ``memory_ids`` offered before, with their lead in messages; the
    needs the bar missed, with their weights; and the topics of the messages
    before the last ``need_horizon``, which the need model learns from."""
    missed: list[tuple[HeldBack, float]] = []
    early = state.topics[:-need_horizon]
    first: dict[str, int] = {}
    for item in state.surfaced:
        first.setdefault(item.memory_id, item.message)
    # Offered in answer to the very message that asked: not before.
    before = [
        (mid, state.messages - first[mid])
        for mid in memory_ids
        if mid in first and first[mid] < state.messages
    ]
    # Nothing found had been offered, and the bar alone had held some of
    # it back: a need it missed. One recall is one need, shared among
    # those by rank, as the need model weighs what was found.
    kept = state.held_before(state.messages)
    if not before:
        ranked = [
            (kept[mid], 1.0 / (1 + rank)) for rank, mid in enumerate(memory_ids) if mid in kept
        ]
        total = sum(w for _, w in ranked)
        missed = [(h, w / total) for h, w in ranked]
    return before, missed, early


def recall_learning(
    config: SurfaceConfig,
    before: list[tuple[str, int]],
    missed: list[tuple[HeldBack, float]],
    early: list[list[str]],
    found: Sequence[Memory],
) -> Learn:
    """What an explicit recall teaches (see :func:`recalled`): it counts, with its
    lead when its results were offered before; and when learning, the bar comes
    down for the needs it missed, and the need model learns what was ``found``."""

    def change(learned: SurfaceModel, counters: SurfaceCounters) -> bool:
        counters.explicit_recalls += 1
        if before:
            counters.surfaced_before_search += 1
            counters.add_lead(max(lead for _, lead in before))
        if not config.learn:
            return False
        for miss, weight in missed:
            learn_missed(learned, miss, weight, config)
        for rank, memory in enumerate(found if early else ()):
            meta = memory.retrieval
            learned.needs.learn(early, [*meta.concepts, *meta.triggers], 1.0 / (1 + rank))
        return bool(early or missed)

    return change


def learn_missed(
    learned: SurfaceModel, miss: HeldBack, weight: float, config: SurfaceConfig
) -> None:
    """Learn from a need the bar held back: the bar that held it comes down
    (:meth:`ThresholdTuner.missed`). Without this the engine learns only
    from what it offered: a bar above every candidate offers nothing, hears
    nothing, and stays there. The confidence model is left alone: it sees
    the outcomes of offers, and a need the bar held back is a success below
    the bar whose failures nobody reports."""
    ctype = miss.conversation_type
    learned.thresholds.missed(
        foreseen_key(ctype) if miss.foreseen else ctype,
        weight,
        start=config.threshold(ctype),
        target=config.target_dismissal_rate,
        step=config.threshold_step,
        bounds=config.threshold_bounds,
    )


class LearnedWrites:
    """The writes of learned state over one store, batched per collection."""

    def __init__(self, store: GraphStore) -> None:
        self.store = store
        self._learned: dict[str, tuple[threading.Lock, list[Learning]]] = {}
        self._learned_guard = threading.Lock()

    def apply(self, collection: str, item: Learning) -> bool:
        """Apply ``item``'s change to the collection's surface model and counters
        as stored now, and write them with its writes and events in one
        all-or-nothing learning update (:meth:`GraphStore.learn`): atomic in the
        store, so that updates from other threads and other API processes are
        merged, never overwritten.

        Whoever takes the collection's lock here applies every change waiting
        for it in one update, so that a busy collection writes its learned state
        once per turn of the lock rather than once per message (each change
        still lands, with its writes, all or nothing). The lock is never held
        across a search.

        Returns:
            Whether the change applied: ``False`` when a document it expected
            had changed (``item.stale``), and nothing of it was written.

        Raises:
            whatever reading or writing raised, to every caller in that write.
        """
        with self._learned_guard:
            lock, waiting = self._learned.setdefault(collection, (threading.Lock(), []))
            waiting.append(item)
        with lock:
            if not item.done:
                with self._learned_guard:
                    batch = list(waiting)
                    waiting.clear()
                expected = {key for queued in batch for key in queued.expect}
                try:
                    self.store.learn(
                        collection,
                        state_keys=[_MODEL_KEY, _COUNTERS_KEY, *sorted(expected)],
                        change=lambda _memories, held: learned_batch(batch, held),
                    )
                except BaseException as e:
                    for queued in batch:
                        queued.failure = e
                    raise
                finally:
                    for queued in batch:
                        queued.done = True
        if item.failure is not None:
            raise item.failure
        return not item.stale
