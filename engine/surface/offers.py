"""Which memories a message offers, and why: each candidate's features and
confidence, the gates it must pass, the few chosen among those that do, and
the reason for each in words. Pure: the surfacer retrieves the candidates and
reads their memories, and records what is offered.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from hippocampus.model import Event, Memory, faded_dismissals
from hippocampus.schedule import Scheduler
from hippocampus.surface.conversation import ConversationState, HeldBack, SurfacedItem
from hippocampus.surface.outcomes import Gate, Insight, Surfacing, surfacing_key
from hippocampus.surface.predict import SurfaceModel, odds
from hippocampus.surface.rules import SurfaceConfig, irrelevant_here

logger = logging.getLogger(__name__)

DUE = 6
"""Where a candidate's features say whether its memory was due for spaced
repetition (resurfaced): counted at engagement for decay effectiveness."""
FORESIGHT = 7
"""Where they say how much of its match is foreseen."""


def foreseen_key(conversation_type: str) -> str:
    """The key of a conversation type's bar for foreseen offers: tuned apart, so
    that guesses about where a conversation goes, which miss more often, do not
    raise the bar for what it is about now."""
    return f"{conversation_type}+foreseen"


class Scored(NamedTuple):
    """A candidate that passed the gates, with what its surfacing record keeps."""

    insight: Insight
    features: list[float]
    bar: float
    foreseen: bool


@dataclass
class Offering:
    """What one message asks of each candidate memory: the conversation as it
    is, what was learned, the predicted topics (``foreseen``: those it will come
    to need) and the confidence bar of its type."""

    state: ConversationState
    learned: SurfaceModel
    config: SurfaceConfig
    scheduler: Scheduler
    predicted: set[str]
    foreseen: set[str]
    threshold: float
    at: datetime
    rng: random.Random
    said: set[str] = field(init=False)
    about: list[str] = field(init=False)
    specific: Callable[[str], float] | None = field(init=False)

    def __post_init__(self) -> None:
        cfg = self.config
        self.said, self.about = self.state.said(), self.state.about(cfg.about_messages)
        self.specific = self.learned.topics.specificity if cfg.learn else None

    def judge(
        self, memory: Memory, similarity: float | None, graph: float | None
    ) -> Scored | HeldBack | None:
        """The candidate scored, when it passes the gates; held back, when only the
        confidence bar stops it; else ``None``."""
        cfg, state, learned, at = self.config, self.state, self.learned, self.at
        ctype = state.type
        meta = memory.retrieval
        matched = sorted(self.predicted.intersection(hubs(memory)))
        features = self._features(memory, similarity, graph, matched)
        confidence = learned.confidence.predict(features)
        foresight = features[FORESIGHT] > 0.5
        bar = (
            learned.thresholds.value(foreseen_key(ctype), cfg.threshold(ctype))
            if foresight
            else self.threshold
        )
        dismissals = faded_dismissals(memory, at, cfg.dismissal_half_life_days)
        irrelevant = irrelevant_here(meta.irrelevant_contexts, self.about, self.specific)
        fits = (
            len(matched) >= cfg.min_trigger_matches
            and dismissals <= cfg.max_recent_dismissals
            and irrelevant is None
        )
        if not fits or confidence < bar:
            logger.debug(
                "held back %s in %s: confidence %.3f (bar %.3f), %d topic matches,"
                " %.2f recent dismissals, irrelevant here: %s",
                memory.id,
                state.id,
                confidence,
                bar,
                len(matched),
                dismissals,
                irrelevant is not None,
            )
            if not fits:
                return None
            return HeldBack(
                memory_id=memory.id,
                message=state.messages,
                features=features,
                conversation_type=ctype,
                foreseen=foresight,
            )
        gates = [
            Gate(name="confidence", value=confidence, limit=bar),
            Gate(name="trigger_matches", value=len(matched), limit=cfg.min_trigger_matches),
            Gate(name="momentum", value=state.momentum, limit=cfg.max_momentum),
            Gate(name="recent_dismissals", value=dismissals, limit=cfg.max_recent_dismissals),
        ]
        told = [t for t in matched if t in self.said]
        ahead = [t for t in matched if t not in self.said]
        insight = Insight(
            surfacing_id=uuid.uuid4().hex,
            memory=memory,
            confidence=confidence,
            matched_topics=told,
            foreseen_topics=ahead,
            foreseen=foresight,
            reason=reason(state, learned, told, ahead, self.foreseen, due=features[DUE] >= 0.5),
            gates=gates,
        )
        return Scored(insight, features, bar, foresight)

    def _features(
        self, memory: Memory, similarity: float | None, graph: float | None, matched: list[str]
    ) -> list[float]:
        """What the confidence model reads of a candidate, in the places
        :data:`DUE` and :data:`FORESIGHT` name."""
        cfg, learned, ctype = self.config, self.learned, self.state.type
        taste = learned.kinds.sample(ctype, memory.category, self.rng) if cfg.learn else 0.5
        # The draw explores; the odds count what the bandit has learned, so two
        # tenants with the same history get the same offers on a cold start.
        rate = learned.kinds.mean(ctype, memory.category) if cfg.learn else 0.5
        due = 1.0 if self.scheduler.urgency(memory, self.at) >= 1.0 else 0.0
        # Keep in step with DUE, the place of "due" read back at engagement.
        return [
            1.0,
            max(0.0, similarity or 0.0),
            min(1.0, graph or 0.0),
            min(len(matched), 4) / 4.0,
            memory.retrieval.confidence,
            taste,
            due,
            len(self.foreseen.intersection(matched)) / len(matched) if matched else 0.0,
            odds(rate),
        ]


def choose(scored: list[Scored], config: SurfaceConfig) -> list[Scored]:
    """The offers, most confident first: at most ``max_insights``, of them at most
    ``max_foreseen`` foreseen."""
    scored.sort(key=lambda item: (-item.insight.confidence, item.insight.memory.id))
    # Foreseen memories are a guess about where the conversation goes: a few
    # at a time, so that what it is about now keeps its place.
    chosen: list[Scored] = []
    foreseen_taken = 0
    for item in scored:
        if len(chosen) == config.max_insights:
            break
        if item.foreseen:
            if foreseen_taken == config.max_foreseen:
                continue
            foreseen_taken += 1
        chosen.append(item)
    return chosen


def record_offers(
    state: ConversationState, chosen: Sequence[Scored], at: datetime, config: SurfaceConfig
) -> dict[str, dict[str, Any]]:
    """The surfacing records of the chosen offers, by state key; the
    conversation notes them as surfaced."""
    ctype, about = state.type, state.about(config.about_messages)
    records: dict[str, dict[str, Any]] = {}
    for insight, features, bar, foresight in chosen:
        memory = insight.memory
        record = Surfacing(
            id=insight.surfacing_id,
            conversation_id=state.id,
            memory_id=memory.id,
            message=state.messages,
            at=at,
            conversation_type=ctype,
            kind=memory.category,
            about=about,
            concepts=near(state, memory, config),
            features=features,
            confidence=insight.confidence,
            threshold=bar,
            foreseen=foresight,
        )
        records[surfacing_key(record.id)] = record.model_dump(mode="json")
        state.surfaced.append(
            SurfacedItem(memory_id=memory.id, surfacing_id=record.id, message=state.messages)
        )
    return records


def surfacing_events(
    state: ConversationState, chosen: Sequence[Scored], at: datetime
) -> list[Event]:
    """The event of a message's offers; none when it offers nothing."""
    events = []
    if chosen:
        events.append(
            Event(
                type="surfacing",
                at=at,
                memory_ids=[item.insight.memory.id for item in chosen],
                payload={"conversation_id": state.id, "message": state.messages},
            )
        )
    return events


def _quoted(topics: Sequence[str]) -> str:
    return ", ".join(f'"{t}"' for t in topics)


def reason(
    state: ConversationState,
    learned: SurfaceModel,
    told: Sequence[str],
    ahead: Sequence[str],
    needed: Collection[str],
    *,
    due: bool,
) -> str:
    """Why a memory is offered, in words: the words of the conversation it
    matched (those of the latest message first), the said topic that led to each
    topic it matched ahead of the conversation (what such conversations came to
    need, or what has followed), and whether it was due for review."""
    parts: list[str] = []
    if told:
        latest = set(state.topics[-1]) if state.topics else set()
        now = [t for t in told if t in latest]
        before = [t for t in told if t not in latest]
        said = [f"this message said {_quoted(now)}"] if now else []
        said += [f"the conversation said {_quoted(before)}"] if before else []
        parts.append(" and ".join(said))
    for topic in ahead:
        if topic in needed:
            source = learned.needs.source(state.topics, topic)
            parts.append(
                f'foreseen: conversations on "{source}" came to need "{topic}"'
                if source
                else f'foreseen: such conversations came to need "{topic}"'
            )
        else:
            source = learned.topics.source(state.topics, topic)
            parts.append(
                f'expected next: "{topic}" has followed "{source}"'
                if source
                else f'expected next: "{topic}"'
            )
    if due:
        parts.append("due for review")
    text = "; ".join(parts)
    return text[:1].upper() + text[1:] + "." if text else ""


def hubs(memory: Memory) -> list[str]:
    """A memory's topics: its triggers and concepts."""
    return [*memory.retrieval.triggers, *memory.retrieval.concepts]


def on_topic(memory: Memory, about: Collection[str], least: int) -> bool:
    """Whether the memory is on what a conversation is ``about``: at least
    ``least`` of its topics are (the offer gate's number of topic matches), so
    that one word every subject uses does not make it so."""
    return len(set(about).intersection(hubs(memory))) >= least


def near(state: ConversationState | None, memory: Memory, cfg: SurfaceConfig) -> list[str]:
    """The concepts the conversation's recent messages said beside the memory's
    own topics: those a use of it links it to."""
    return state.concepts_near(hubs(memory), cfg.about_messages) if state else []
