"""What recording one engagement writes: the change a learning update of the
store applies to the offer's record, its memory, the edges of what was used
together and the learned model and counters. The surfacer reads what the
change needs beforehand and hands it to the store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from hippocampus.errors import ConflictError, NotFoundError
from hippocampus.learn.rules import REAL_USE, co_use_updates
from hippocampus.model import HUB_EDGE, Event, HubKind, Memory
from hippocampus.model.association import EdgeUpdate
from hippocampus.schedule import Engagement, Scheduler
from hippocampus.store import Learned
from hippocampus.surface.conversation import ConversationState
from hippocampus.surface.metrics import SurfaceCounters
from hippocampus.surface.offers import DUE, foreseen_key, hubs, near, on_topic
from hippocampus.surface.outcomes import (
    SURFACE_COUNTERS_KEY,
    SURFACE_MODEL_KEY,
    Surfacing,
    surfacing_key,
)
from hippocampus.surface.predict import SurfaceModel
from hippocampus.surface.rules import ENGAGEMENT_RULES, SurfaceConfig, engaged, irrelevant_context

_MODEL_KEY = SURFACE_MODEL_KEY
_COUNTERS_KEY = SURFACE_COUNTERS_KEY
_NO_USE = ENGAGEMENT_RULES["ignored"]

ApplyEngagement = Callable[
    [Memory, str, Sequence[str], Sequence[str], datetime], tuple[Memory, list[EdgeUpdate], Event]
]
"""What one engagement does to a memory (:meth:`Surfacer.engaged`)."""


def engagement_effects(
    memory: Memory,
    engagement: str,
    about: Sequence[str],
    concepts: Sequence[str],
    at: datetime,
    *,
    config: SurfaceConfig,
    scheduler: Scheduler,
) -> tuple[Memory, list[EdgeUpdate], Event]:
    """What one engagement does (:meth:`Surfacer.engaged`), under ``config``, with
    ``scheduler`` reviewing the memory."""
    context = irrelevant_context(about, hubs(memory))
    updated = engaged(memory, engagement, context, at, config.dismissal_half_life_days)
    review = scheduler.reviewed(memory, cast(Engagement, engagement), at)
    updated = updated.model_copy(
        update={"retrieval": updated.retrieval.model_copy(update={"review": review})}
    )
    reinforce: list[EdgeUpdate] = []
    if config.learn and ENGAGEMENT_RULES[engagement].counts_as_use and concepts:
        anchors = [(HUB_EDGE[HubKind.CONCEPT], name) for name in concepts]
        reinforce = co_use_updates([memory.id], at, REAL_USE, anchors=anchors)
    event = Event(
        type="engagement",
        at=at,
        memory_ids=[memory.id],
        payload={"engagement": engagement, "context": context},
    )
    return updated, reinforce, event


def other_offers(state: ConversationState, offer: Surfacing) -> dict[str, str]:
    """The other offers of ``offer``'s conversation (of other memories), as the
    conversation lists them now: their state keys, and the memory of each."""
    return {
        surfacing_key(item.surfacing_id): item.memory_id
        for item in sorted(state.surfaced, key=lambda item: item.surfacing_id)
        if item.surfacing_id != offer.id and item.memory_id != offer.memory_id
    }


@dataclass
class Engaging:
    """One engagement on its way into the store.

    ``about`` is what the conversation is about now and was when the offer was
    made: what the engagement teaches stays within it. ``others`` are the other
    offers of the conversation (state key: memory) read with this one, and
    ``on_topic`` those of their memories that are on what it is about. ``seen``
    keeps the memory before and after, and the bar after, once applied.
    """

    key: str
    surfacing_id: str
    engagement: str
    at: datetime
    config: SurfaceConfig
    state: ConversationState | None
    about: list[str]
    others: dict[str, str]
    on_topic: set[str]
    engaged: ApplyEngagement
    seen: dict[str, Any] = field(default_factory=dict)

    def change(self, memories: Mapping[str, Memory], held: Mapping[str, dict[str, Any]]) -> Learned:
        """The learning update, from the memory and the state documents as the
        store holds them now."""
        key, surfacing_id, cfg, at = self.key, self.surfacing_id, self.config, self.at
        if key not in held:
            raise NotFoundError(f"no surfacing {surfacing_id!r} in this collection")
        record = Surfacing.model_validate(held[key])
        if record.engagement is not None:
            raise ConflictError(
                f"surfacing {surfacing_id!r} was already marked {record.engagement!r}"
            )
        memory = memories.get(record.memory_id)
        if memory is None:
            raise NotFoundError(f"memory {record.memory_id!r} is gone")
        # The concepts said beside the memory's own topics, when it was offered
        # (records from before kept every concept of the conversation: not
        # those) and now; none when the memory is not on what the
        # conversation is about.
        on = on_topic(memory, self.about, cfg.min_trigger_matches)
        beside = [*(record.concepts if record.about else []), *near(self.state, memory, cfg)]
        updated, reinforce, event = self.engaged(
            memory, self.engagement, self.about, list(dict.fromkeys(beside)) if on else [], at
        )
        used = self._used(record, held)
        # Each pair once: the pairs among the earlier ones were linked when the
        # later of them was engaged. Only memories both on what the
        # conversation is about: two used in one conversation on different
        # subjects are not about each other.
        if on:
            for other in used:
                if other in self.on_topic:
                    reinforce.extend(co_use_updates([record.memory_id, other], at, REAL_USE))
        record.engagement = self.engagement
        record.engaged_at = at
        states, threshold = self._teach(record, held)
        self.seen.update(before=memory, after=updated, threshold=threshold)
        return Learned(memories=[updated], states=states, reinforce=reinforce, events=[event])

    def _used(self, record: Surfacing, held: Mapping[str, dict[str, Any]]) -> list[str]:
        """The memories of the conversation's other offers that were used."""
        return sorted(
            {
                str(held[other]["memory_id"])
                for other in self.others
                if other in held
                and ENGAGEMENT_RULES.get(str(held[other].get("engagement")), _NO_USE).counts_as_use
            }
            - {record.memory_id}
        )

    def _teach(
        self, record: Surfacing, held: Mapping[str, dict[str, Any]]
    ) -> tuple[dict[str, dict[str, Any]], float]:
        """The engaged record, the counters and (when learning) the model taught by
        the engagement, by state key; and the bar of the offer's kind after it."""
        cfg, engagement = self.config, self.engagement
        rule = ENGAGEMENT_RULES[engagement]
        learned = SurfaceModel.model_validate(held.get(_MODEL_KEY, {}))
        counters = SurfaceCounters.model_validate(held.get(_COUNTERS_KEY, {}))
        ctype = record.conversation_type
        bar_key = foreseen_key(ctype) if record.foreseen else ctype
        success = 1.0 if rule.counts_as_use else 0.0
        if cfg.learn:
            learned.kinds.update(ctype, record.kind, success)
            learned.confidence.update(record.features, success)
            learned.thresholds.update(
                bar_key,
                rule.miss,
                start=cfg.threshold(ctype),
                target=cfg.target_dismissal_rate,
                step=cfg.threshold_step,
                bounds=cfg.threshold_bounds,
            )
        counts = counters.of(ctype)
        setattr(counts, engagement, getattr(counts, engagement) + 1)
        due = len(record.features) > DUE and record.features[DUE] >= 0.5
        counters.add_engagement(record.confidence, bool(success), due=due)
        states = {
            self.key: record.model_dump(mode="json"),
            _COUNTERS_KEY: counters.model_dump(mode="json"),
        }
        if cfg.learn:
            states[_MODEL_KEY] = learned.model_dump(mode="json")
        return states, learned.thresholds.value(bar_key, cfg.threshold(ctype))
