"""Proactive surfacing over a store: messages in, 0-3 insights out, engagement
back. The pure parts (state, models, rules, metrics, outcomes) are its neighbours in
:mod:`hippocampus.surface`.

Per message: the conversation state takes the message in (topics, type,
domain, momentum), the topic model learns the transition from the previous
message and predicts the coming topics, the need model adds the topics such
conversations came to need (learned from their explicit recalls), the recent
messages and the predicted topics retrieve candidates (the default recall
recipe), and each candidate gets a confidence:
the confidence model's chance that it will be used, from its similarity, its
graph support, how many of its triggers and concepts are among the predicted
topics, its own confidence, how its kind fares in this kind of conversation
(a Thompson sample from the kind bandit, so untried kinds get tried) and
whether it is due for spaced repetition, and how much of its match is
foreseen rather than said. The gates (DESIGN.md) then decide; a foreseen
memory meets its type's separate bar for foreseen offers.

Each insight says why in words (the words of the conversation it matched, the
said topic that led to each topic it matched ahead of the conversation, due
for review) and whether it was foreseen.

Engagement applies the seed's rules to the memory, and teaches the bandit, the
confidence model and the threshold of the conversation's type (its bar for
foreseen offers when the offer was foreseen). What it teaches the graph stays
within what the conversation was about (its last few messages' topics): a
used memory is linked to the concepts said beside its own topics, two used
memories are linked only when both are on those topics, and a dismissal marks
the memory irrelevant for them (apart from its own), not for a conversation
type.

An explicit recall in a conversation teaches too: when none of its top results
had been offered there but the confidence bar alone had held some back, the
bar missed a need and comes down, so that a bar that offers nothing does not
stay where it is for want of engagement.

With ``SurfaceConfig.learn`` off nothing is learned: fixed thresholds, the
prior confidence model, no bandit (a neutral 0.5), no transitions, no needs,
no edges.
"""

from __future__ import annotations

import logging
import random
import re
import threading
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple, cast

from hippocampus.errors import ConflictError, InvalidInputError, LimitExceededError, NotFoundError
from hippocampus.extract import ConceptExtractor, Extraction
from hippocampus.extract.recent import RecentExtractions, pieces
from hippocampus.extract.sanitize import has_control_characters
from hippocampus.learn.rules import REAL_USE, co_use_updates
from hippocampus.locks import StripedLock
from hippocampus.model import HUB_EDGE, Event, HubKind, Memory, RecallFilters, faded_dismissals
from hippocampus.model.association import EdgeUpdate
from hippocampus.retrieve.config import (
    DEFAULT_RECIPE,
    EMBEDDER_DOWN_WARNING,
    RECIPES,
    without_dense,
)
from hippocampus.retrieve.pipeline import Candidate, retrieve
from hippocampus.schedule import Engagement, Scheduler
from hippocampus.store import GraphStore, Learned, Vector
from hippocampus.surface.conversation import ConversationState, HeldBack, SurfacedItem
from hippocampus.surface.metrics import SurfaceCounters, SurfaceMetrics
from hippocampus.surface.outcomes import (
    CONVERSATION_PREFIX,
    SURFACE_COUNTERS_KEY,
    SURFACE_MODEL_KEY,
    SURFACING_PREFIX,
    ConversationView,
    EngagementOutcome,
    Gate,
    Insight,
    MessageOutcome,
    Surfacing,
)
from hippocampus.surface.predict import SurfaceModel, odds
from hippocampus.surface.rules import (
    CONVERSATION_TYPES,
    ENGAGEMENT_RULES,
    SurfaceConfig,
    engaged,
    irrelevant_context,
    irrelevant_here,
)

logger = logging.getLogger(__name__)

# \Z, not $: $ also matches before a final newline.
_ID = re.compile(r"^[^\x00-\x1f\x7f/\\]{1,200}\Z")
_ROLE = re.compile(r"^[A-Za-z0-9_.:@\- ]{1,64}\Z")
_MODEL_KEY = SURFACE_MODEL_KEY
_COUNTERS_KEY = SURFACE_COUNTERS_KEY
_QUERY_CHARS = 4000
"""How much of the recent messages the "now" search reads."""


_NO_USE = ENGAGEMENT_RULES["ignored"]
_DUE = 6
"""Where a candidate's features say whether its memory was due for spaced
repetition (resurfaced): counted at engagement for decay effectiveness."""
_FORESIGHT = 7
"""Where they say how much of its match is foreseen."""


def _conversation_key(conversation_id: str) -> str:
    return f"{CONVERSATION_PREFIX}{conversation_id}"


def _surfacing_key(surfacing_id: str) -> str:
    return f"{SURFACING_PREFIX}{surfacing_id}"


def _foreseen(conversation_type: str) -> str:
    """The key of a conversation type's bar for foreseen offers: tuned apart, so
    that guesses about where a conversation goes, which miss more often, do not
    raise the bar for what it is about now."""
    return f"{conversation_type}+foreseen"


class _Scored(NamedTuple):
    """A candidate that passed the gates, with what its surfacing record keeps."""

    insight: Insight
    features: list[float]
    bar: float
    foreseen: bool


Embed = Callable[[str], Vector | None]
Engaged = Callable[[str, Memory, Memory], None]
Learn = Callable[[SurfaceModel, SurfaceCounters], bool]
"""A change to a collection's learned state (the model and the counters, as
stored now); says whether it changed the model."""


class _Learning:
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


def _message_learning(
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


def _learned_batch(batch: Sequence[_Learning], held: Mapping[str, dict[str, Any]]) -> Learned:
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


class Surfacer:
    """Proactive surfacing over one store (see the module docstring).

    Args:
        store / extractor: the engine's.
        embed: embeds a query text (``None`` when the embedder fails).
        model: the embedder's name (whose vectors to search).
        scheduler: spaced repetition, for the "due" feature.
        config: gates, thresholds, learning.
        random_seed: makes exploration reproducible: each message's draws are
            seeded by (random_seed, collection, conversation, message index).
        on_engaged: called with ``(collection, before, after)`` once an
            engagement's changes to a memory are written (the quality gate counts
            the memories that have feedback).
    """

    def __init__(
        self,
        store: GraphStore,
        extractor: ConceptExtractor,
        embed: Embed,
        *,
        model: Callable[[], str],
        scheduler: Scheduler,
        config: SurfaceConfig | None = None,
        random_seed: int = 0,
        on_engaged: Engaged | None = None,
    ) -> None:
        self.store = store
        self.extractor = extractor
        # A message is read once: the later messages' searches merge the
        # extractions of the recent messages they ask about.
        self._recent = RecentExtractions(extractor)
        self.embed = embed
        self.model = model
        self.scheduler = scheduler
        self.config = config or SurfaceConfig()
        self.random_seed = random_seed
        self.on_engaged = on_engaged
        # Held only around reads and writes of state documents, never across a
        # search, so that a slow message holds up neither other conversations
        # nor engagements. Taken in this order: a conversation's, then the
        # collection's learned state. They only batch and order this process's
        # writes: every update of learned state is atomic in the store.
        self._conversation_lock = StripedLock()
        self._learned: dict[str, tuple[threading.Lock, list[_Learning]]] = {}
        self._learned_guard = threading.Lock()

    def _learn(self, collection: str, item: _Learning) -> bool:
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
                        change=lambda _memories, held: _learned_batch(batch, held),
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

    # -- messages -----------------------------------------------------------------

    def message(
        self,
        collection: str,
        conversation_id: str,
        text: str,
        *,
        role: str,
        at: datetime,
        conversation_type: str | None = None,
        max_chars: int = 8_000,
    ) -> MessageOutcome:
        """Take one message in and return what to offer.

        Raises:
            InvalidInputError: a bad id, empty text, unknown role or type.
        """
        _check_id(conversation_id, "conversation_id")
        body = text.strip()
        if not body:
            raise InvalidInputError("text is empty", field="text")
        if len(body) > max_chars:
            raise LimitExceededError(
                f"text has {len(body)} characters; the limit is {max_chars}", field="text"
            )
        if not _ROLE.match(role):
            raise InvalidInputError("role is 1-64 letters, digits or _.:@- ", field="role")
        if conversation_type is not None and conversation_type not in CONVERSATION_TYPES:
            raise InvalidInputError(
                f"conversation_type is one of {', '.join(CONVERSATION_TYPES)}",
                field="conversation_type",
            )
        if at.tzinfo is None:
            raise InvalidInputError("at needs a timezone", field="at")
        cfg = self.config
        extraction = self._recent.extract_many([body])[0]
        topics = list(dict.fromkeys([*extraction.concepts, *extraction.triggers]))

        key = _conversation_key(conversation_id)
        lock = self._conversation_lock(collection, conversation_id)
        while True:
            # Read the conversation and a snapshot of what was learned, search and
            # score without a lock, then write back only if no other message of
            # this conversation was written meanwhile (else take it in afresh:
            # its index, recent topics and what was surfaced changed).
            with lock:
                held = self.store.get_states(collection, [key, _MODEL_KEY])
            seen = held.get(key)
            state = (
                ConversationState.model_validate(seen)
                if seen is not None
                else ConversationState(id=conversation_id)
            )
            learned = SurfaceModel.model_validate(held.get(_MODEL_KEY, {}))
            previous = state.topics[-1] if state.topics else None
            if cfg.learn and previous is not None:
                learned.topics.learn(previous, topics)
            state.observe(
                text=body,
                role=role,
                at=at,
                topics=topics,
                concepts=list(extraction.concepts),
                domains=list(extraction.domains),
                conversation_type=conversation_type,
                window=cfg.topic_window,
            )
            predicted, heading = self._predict(learned, state)
            ctype = state.type
            threshold = learned.thresholds.value(ctype, cfg.threshold(ctype))
            chosen: list[_Scored] = []
            below_bar: list[HeldBack] = []
            candidates: int | None = None
            held_back = None
            warnings: list[str] = []
            if state.momentum > cfg.max_momentum:
                held_back = (
                    f"momentum {state.momentum:.1f} messages/minute is above {cfg.max_momentum}"
                    " (a fast exchange is not interrupted; when replaying a conversation, "
                    "give each message the time it was said as `at`)"
                )
            else:
                chosen, candidates, below_bar = self._offer(
                    collection, state, learned, predicted, heading, threshold, at, warnings
                )
            state.hold(below_bar)
            records = self._record(state, chosen, at)
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
            # This message's learning goes onto what is stored then, not onto the
            # snapshot, so that concurrent messages keep each other's; and only if
            # no other message of this conversation was written meanwhile, here or
            # in another process (else take it in afresh: its index, recent
            # topics and what was surfaced changed).
            with lock:
                applied = self._learn(
                    collection,
                    _Learning(
                        _message_learning(cfg.learn, ctype, previous, topics, len(chosen)),
                        {**records, key: state.model_dump(mode="json")},
                        events,
                        expect={key: seen},
                    ),
                )
            if applied:
                break
            logger.debug("conversation %s moved on meanwhile; again", conversation_id)
        insights = [item.insight for item in chosen]
        return MessageOutcome(
            insights=insights,
            conversation=_view(state, predicted),
            held_back=held_back,
            warnings=warnings,
            candidates=candidates,
        )

    def _predict(
        self, learned: SurfaceModel, state: ConversationState
    ) -> tuple[list[str], list[str]]:
        """The predicted topics (the coming messages' likeliest, then those the
        conversation will come to need), and the latter alone."""
        cfg = self.config
        if cfg.learn:
            ranked = learned.topics.predict(state.topics, cfg.predicted_topics)
            heading = [
                t
                for t, _ in learned.needs.predict(
                    state.topics, cfg.ahead_topics, weight=learned.topics.specificity
                )
            ]
            return list(dict.fromkeys([*(t for t, _ in ranked), *heading])), heading
        # The baseline expects the conversation to stay on what was just said.
        recent = [t for topics in state.topics[-2:] for t in topics]
        return list(dict.fromkeys(reversed(recent)))[: cfg.predicted_topics], []

    def _offer(
        self,
        collection: str,
        state: ConversationState,
        learned: SurfaceModel,
        predicted: list[str],
        heading: list[str],
        threshold: float,
        at: datetime,
        warnings: list[str],
    ) -> tuple[list[_Scored], int, list[HeldBack]]:
        """The insights to offer, how many memories retrieval weighed for them, and
        those the confidence bar alone held back. Writes nothing: the caller
        records the offers with the conversation."""
        cfg = self.config
        # Three looks: what the conversation is about now, the topics predicted
        # next that it has not mentioned lately, and what it will come to need.
        recent = state.texts[-cfg.context_messages :]
        now_query = " ".join(recent)[:_QUERY_CHARS]
        said = {t for topics in state.topics[-4:] for t in topics}
        next_up = [t for t in predicted if t not in said and t not in heading][:8]
        # What the first query names: the recent messages' extractions merged
        # (each message was read as it came in). The topic queries are short
        # and read as they are.
        now_names = self._recent.together(pieces(recent, _QUERY_CHARS))
        queries: list[tuple[str, Extraction | None]] = [(now_query, now_names)]
        queries += [(" ".join(q), None) for q in (next_up, heading) if q]
        # The seed's predictive retrieval asks more of a graph-only candidate
        # (path strength 0.6) than recall does (0.5). A conversation's words
        # for time ("the deploy broke yesterday") tell when its own events
        # happened, not when the insights it needs were learned: no time lean.
        # Nor variety: it shapes a list read at once, where these candidates are
        # a pool that the offers below pick from on their own terms, and a near
        # repeat of the best match may be the one worth offering.
        recipe = RECIPES[DEFAULT_RECIPE].model_copy(
            update={
                "min_path_strength": cfg.min_path_strength,
                "time_lean": 0.0,
                "mmr_lambda": None,
            }
        )
        best: dict[str, Candidate] = {}
        memories: dict[str, Memory] = {}
        for query, names in queries:
            vector = self.embed(query)
            if vector is None and not warnings:
                warnings.append(EMBEDDER_DOWN_WARNING)
            found = retrieve(
                self.store,
                self.extractor,
                collection,
                query,
                vector,
                model=self.model(),
                config=recipe if vector is not None else without_dense(recipe),
                filters=RecallFilters(),
                limit=cfg.candidates,
                now=at,
                extraction=names,
            )
            memories.update(found.memories)
            for c in found.candidates:
                held = best.get(c.memory_id)
                if held is None or c.score > held.score:
                    best[c.memory_id] = c
        candidates = sorted(best.values(), key=lambda c: (-c.score, c.memory_id))
        surfaced = state.surfaced_ids()
        wanted = [c.memory_id for c in candidates if c.memory_id not in memories]
        memories.update(self.store.get_memories(collection, wanted))
        rng = random.Random(f"{self.random_seed}:{collection}:{state.id}:{state.messages}")
        predicted_set, foreseen = set(predicted), set(heading)
        ctype = state.type
        said, about = state.said(), state.about(cfg.about_messages)
        specific = learned.topics.specificity if cfg.learn else None
        scored: list[_Scored] = []
        held_back: list[HeldBack] = []
        for c in candidates:
            memory = memories.get(c.memory_id)
            if memory is None or memory.id in surfaced:
                continue
            meta = memory.retrieval
            matched = sorted(predicted_set.intersection(_hubs(memory)))
            taste = learned.kinds.sample(ctype, memory.category, rng) if cfg.learn else 0.5
            # The draw explores; the odds count what the bandit has learned, so two
            # tenants with the same history get the same offers on a cold start.
            rate = learned.kinds.mean(ctype, memory.category) if cfg.learn else 0.5
            due = 1.0 if self.scheduler.urgency(memory, at) >= 1.0 else 0.0
            # Keep in step with _DUE, the place of "due" read back at engagement.
            features = [
                1.0,
                max(0.0, c.similarity or 0.0),
                min(1.0, c.graph or 0.0),
                min(len(matched), 4) / 4.0,
                meta.confidence,
                taste,
                due,
                len(foreseen.intersection(matched)) / len(matched) if matched else 0.0,
                odds(rate),
            ]
            confidence = learned.confidence.predict(features)
            foresight = features[_FORESIGHT] > 0.5
            bar = (
                learned.thresholds.value(_foreseen(ctype), cfg.threshold(ctype))
                if foresight
                else threshold
            )
            dismissals = faded_dismissals(memory, at, cfg.dismissal_half_life_days)
            irrelevant = irrelevant_here(meta.irrelevant_contexts, about, specific)
            fits = (
                len(matched) >= cfg.min_trigger_matches
                and dismissals <= cfg.max_recent_dismissals
                and irrelevant is None
            )
            if fits and confidence < bar:
                held_back.append(
                    HeldBack(
                        memory_id=memory.id,
                        message=state.messages,
                        features=features,
                        conversation_type=ctype,
                        foreseen=foresight,
                    )
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
                continue
            gates = [
                Gate(name="confidence", value=confidence, limit=bar),
                Gate(name="trigger_matches", value=len(matched), limit=cfg.min_trigger_matches),
                Gate(name="momentum", value=state.momentum, limit=cfg.max_momentum),
                Gate(name="recent_dismissals", value=dismissals, limit=cfg.max_recent_dismissals),
            ]
            told = [t for t in matched if t in said]
            ahead = [t for t in matched if t not in said]
            insight = Insight(
                surfacing_id=uuid.uuid4().hex,
                memory=memory,
                confidence=confidence,
                matched_topics=told,
                foreseen_topics=ahead,
                foreseen=foresight,
                reason=_reason(state, learned, told, ahead, foreseen, due=due >= 0.5),
                gates=gates,
            )
            scored.append(_Scored(insight, features, bar, foresight))
        scored.sort(key=lambda item: (-item.insight.confidence, item.insight.memory.id))
        # Foreseen memories are a guess about where the conversation goes: a few
        # at a time, so that what it is about now keeps its place.
        chosen: list[_Scored] = []
        foreseen_taken = 0
        for item in scored:
            if len(chosen) == cfg.max_insights:
                break
            if item.foreseen:
                if foreseen_taken == cfg.max_foreseen:
                    continue
                foreseen_taken += 1
            chosen.append(item)
        return chosen, len(candidates), held_back

    def _record(
        self, state: ConversationState, chosen: Sequence[_Scored], at: datetime
    ) -> dict[str, dict[str, Any]]:
        """The surfacing records of the chosen offers, by state key; the
        conversation notes them as surfaced."""
        ctype, about = state.type, state.about(self.config.about_messages)
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
                concepts=_near(state, memory, self.config),
                features=features,
                confidence=insight.confidence,
                threshold=bar,
                foreseen=foresight,
            )
            records[_surfacing_key(record.id)] = record.model_dump(mode="json")
            state.surfaced.append(
                SurfacedItem(memory_id=memory.id, surfacing_id=record.id, message=state.messages)
            )
        return records

    # -- engagement ----------------------------------------------------------------

    def engage(
        self, collection: str, surfacing_id: str, engagement: str, *, at: datetime
    ) -> EngagementOutcome:
        """Record how an offer was received and learn from it, all or nothing: the
        memory's rule update, its edges, the surfacing record, the learned model
        and counters and the event are one learning update
        (:meth:`GraphStore.learn`). A retry after a crash finds the engagement
        either recorded (a conflict) or not applied at all, never applied twice.

        Raises:
            NotFoundError: no such surfacing (or its memory is gone).
            ConflictError: its engagement was already recorded.
            InvalidInputError: an unknown engagement.
        """
        _check_id(surfacing_id, "surfacing_id")
        if engagement not in ENGAGEMENT_RULES:
            raise InvalidInputError(
                f"engagement is one of {', '.join(ENGAGEMENT_RULES)}", field="engagement"
            )
        cfg = self.config
        rule = ENGAGEMENT_RULES[engagement]
        key = _surfacing_key(surfacing_id)
        # Which memory and conversation an offer belongs to never changes: read
        # them first to know what to lock, then read the record again under it.
        first = self.store.get_states(collection, [key]).get(key)
        if first is None:
            raise NotFoundError(f"no surfacing {surfacing_id!r} in this collection")
        offer = Surfacing.model_validate(first)
        # What the conversation is about now, and was when the offer was made:
        # what this engagement teaches stays within it.
        state = self._conversation_state(collection, offer.conversation_id)
        about = list(
            dict.fromkeys([*(state.about(cfg.about_messages) if state else []), *offer.about])
        )
        # Offers used in the same conversation were used together: the others of
        # the conversation are read (and locked) with this one, so that of two
        # engaged at once the second sees the first.
        others = (
            self._other_offers(state, offer) if state and cfg.learn and rule.counts_as_use else {}
        )
        # Which topics the other memories are on: only those on what the
        # conversation is about now are linked to this one.
        held_others = (
            self.store.get_memories(collection, sorted(set(others.values()))) if others else {}
        )
        least = cfg.min_trigger_matches
        on_topic = {mid for mid, m in held_others.items() if _on(m, about, least)}
        seen: dict[str, Any] = {}

        def change(memories: Mapping[str, Memory], held: Mapping[str, dict[str, Any]]) -> Learned:
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
            on = _on(memory, about, least)
            near = [*(record.concepts if record.about else []), *_near(state, memory, cfg)]
            updated, reinforce, event = self.engaged(
                memory, engagement, about, list(dict.fromkeys(near)) if on else [], at
            )
            used = sorted(
                {
                    str(held[other]["memory_id"])
                    for other in others
                    if other in held
                    and ENGAGEMENT_RULES.get(
                        str(held[other].get("engagement")), _NO_USE
                    ).counts_as_use
                }
                - {record.memory_id}
            )
            # Each pair once: the pairs among the earlier ones were linked when the
            # later of them was engaged. Only memories both on what the
            # conversation is about: two used in one conversation on different
            # subjects are not about each other.
            if on:
                for other in used:
                    if other in on_topic:
                        reinforce.extend(co_use_updates([record.memory_id, other], at, REAL_USE))
            record.engagement = engagement
            record.engaged_at = at
            learned = SurfaceModel.model_validate(held.get(_MODEL_KEY, {}))
            counters = SurfaceCounters.model_validate(held.get(_COUNTERS_KEY, {}))
            ctype = record.conversation_type
            bar_key = _foreseen(ctype) if record.foreseen else ctype
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
            due = len(record.features) > _DUE and record.features[_DUE] >= 0.5
            counters.add_engagement(record.confidence, bool(success), due=due)
            states = {
                key: record.model_dump(mode="json"),
                _COUNTERS_KEY: counters.model_dump(mode="json"),
            }
            if cfg.learn:
                states[_MODEL_KEY] = learned.model_dump(mode="json")
            seen.update(
                before=memory,
                after=updated,
                threshold=learned.thresholds.value(bar_key, cfg.threshold(ctype)),
            )
            return Learned(memories=[updated], states=states, reinforce=reinforce, events=[event])

        self.store.learn(
            collection,
            memory_ids=[offer.memory_id],
            state_keys=[key, _MODEL_KEY, _COUNTERS_KEY, *sorted(others)],
            change=change,
        )
        if self.on_engaged is not None:
            self.on_engaged(collection, seen["before"], seen["after"])
        return EngagementOutcome(
            surfacing_id=surfacing_id,
            engagement=engagement,
            memory=seen["after"],
            threshold=seen["threshold"],
        )

    def _conversation_state(
        self, collection: str, conversation_id: str
    ) -> ConversationState | None:
        key = _conversation_key(conversation_id)
        held = self.store.get_states(collection, [key])
        return ConversationState.model_validate(held[key]) if key in held else None

    @staticmethod
    def _other_offers(state: ConversationState, offer: Surfacing) -> dict[str, str]:
        """The other offers of ``offer``'s conversation (of other memories), as the
        conversation lists them now: their state keys, and the memory of each."""
        return {
            _surfacing_key(item.surfacing_id): item.memory_id
            for item in sorted(state.surfaced, key=lambda item: item.surfacing_id)
            if item.surfacing_id != offer.id and item.memory_id != offer.memory_id
        }

    def engaged(
        self,
        memory: Memory,
        engagement: str,
        about: Sequence[str],
        concepts: Sequence[str],
        at: datetime,
    ) -> tuple[Memory, list[EdgeUpdate], Event]:
        """What one engagement does, to be written in one learning update: the
        memory after the seed's metadata rules and its review (a dismissal marks
        it irrelevant for what the conversation was ``about``, apart from its own
        topics); its edges to ``concepts``, created at 0.3 when absent (used /
        helpful, when learning); the event. Pure: reads and writes nothing."""
        context = irrelevant_context(about, _hubs(memory))
        updated = engaged(memory, engagement, context, at, self.config.dismissal_half_life_days)
        review = self.scheduler.reviewed(memory, cast(Engagement, engagement), at)
        updated = updated.model_copy(
            update={"retrieval": updated.retrieval.model_copy(update={"review": review})}
        )
        reinforce: list[EdgeUpdate] = []
        if self.config.learn and ENGAGEMENT_RULES[engagement].counts_as_use and concepts:
            anchors = [(HUB_EDGE[HubKind.CONCEPT], name) for name in concepts]
            reinforce = co_use_updates([memory.id], at, REAL_USE, anchors=anchors)
        event = Event(
            type="engagement",
            at=at,
            memory_ids=[memory.id],
            payload={"engagement": engagement, "context": context},
        )
        return updated, reinforce, event

    # -- explicit recall -------------------------------------------------------------

    def explicit_recall(
        self, collection: str, conversation_id: str, found: Sequence[Memory]
    ) -> list[tuple[str, int]]:
        """Count an explicit recall made in a conversation: which of its top results
        had been surfaced there, and how many messages earlier. Feeds
        recall-before-search and lead time. When learning, what was found
        teaches the need model what conversations like this one come to need;
        and when none of its top results had been offered but the confidence
        bar alone had held some back in this conversation, the bar missed a
        need (:meth:`_missed`).

        Returns:
            ``(memory id, lead in messages)`` for each top result surfaced before.
        """
        _check_id(conversation_id, "conversation_id")
        memory_ids = [m.id for m in found]
        key = _conversation_key(conversation_id)
        # Only the learned state and the counters change; the conversation is
        # only read.
        held = self.store.get_states(collection, [key])
        before: list[tuple[str, int]] = []
        missed: list[tuple[HeldBack, float]] = []
        early: list[list[str]] = []
        if key in held:
            state = ConversationState.model_validate(held[key])
            early = state.topics[: -self.config.need_horizon]
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
                    (kept[mid], 1.0 / (1 + rank))
                    for rank, mid in enumerate(memory_ids)
                    if mid in kept
                ]
                total = sum(w for _, w in ranked)
                missed = [(h, w / total) for h, w in ranked]

        def change(learned: SurfaceModel, counters: SurfaceCounters) -> bool:
            counters.explicit_recalls += 1
            if before:
                counters.surfaced_before_search += 1
                counters.add_lead(max(lead for _, lead in before))
            if not self.config.learn:
                return False
            for miss, weight in missed:
                self._missed(learned, miss, weight)
            for rank, memory in enumerate(found if early else ()):
                meta = memory.retrieval
                learned.needs.learn(early, [*meta.concepts, *meta.triggers], 1.0 / (1 + rank))
            return bool(early or missed)

        self._learn(collection, _Learning(change, {}))
        return before

    def _missed(self, learned: SurfaceModel, miss: HeldBack, weight: float) -> None:
        """Learn from a need the bar held back: the bar that held it comes down
        (:meth:`ThresholdTuner.missed`). Without this the engine learns only
        from what it offered: a bar above every candidate offers nothing, hears
        nothing, and stays there. The confidence model is left alone: it sees
        the outcomes of offers, and a need the bar held back is a success below
        the bar whose failures nobody reports."""
        cfg = self.config
        ctype = miss.conversation_type
        learned.thresholds.missed(
            _foreseen(ctype) if miss.foreseen else ctype,
            weight,
            start=cfg.threshold(ctype),
            target=cfg.target_dismissal_rate,
            step=cfg.threshold_step,
            bounds=cfg.threshold_bounds,
        )

    # -- reading ---------------------------------------------------------------------

    def conversation(self, collection: str, conversation_id: str) -> ConversationView:
        _check_id(conversation_id, "conversation_id")
        key = _conversation_key(conversation_id)
        held = self.store.get_states(collection, [key, _MODEL_KEY])
        if key not in held:
            raise NotFoundError(f"no conversation {conversation_id!r} in this collection")
        state = ConversationState.model_validate(held[key])
        learned = SurfaceModel.model_validate(held.get(_MODEL_KEY, {}))
        return _view(state, self._predict(learned, state)[0])

    def metrics(self, collection: str) -> SurfaceMetrics:
        held = self.store.get_states(collection, [_COUNTERS_KEY])
        return SurfaceCounters.model_validate(held.get(_COUNTERS_KEY, {})).summary()


def _view(state: ConversationState, predicted: list[str]) -> ConversationView:
    recent = [t for topics in reversed(state.topics[-3:]) for t in topics]
    return ConversationView(
        id=state.id,
        messages=state.messages,
        type=state.type,
        type_given=state.given_type is not None,
        domain=state.domain,
        momentum=round(state.momentum, 3),
        recent_topics=list(dict.fromkeys(recent))[:20],
        predicted_topics=predicted,
        participants=state.participants,
    )


def _quoted(topics: Sequence[str]) -> str:
    return ", ".join(f'"{t}"' for t in topics)


def _reason(
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


def _hubs(memory: Memory) -> list[str]:
    """A memory's topics: its triggers and concepts."""
    return [*memory.retrieval.triggers, *memory.retrieval.concepts]


def _on(memory: Memory, about: Collection[str], least: int) -> bool:
    """Whether the memory is on what a conversation is ``about``: at least
    ``least`` of its topics are (the offer gate's number of topic matches), so
    that one word every subject uses does not make it so."""
    return len(set(about).intersection(_hubs(memory))) >= least


def _near(state: ConversationState | None, memory: Memory, cfg: SurfaceConfig) -> list[str]:
    """The concepts the conversation's recent messages said beside the memory's
    own topics: those a use of it links it to."""
    return state.concepts_near(_hubs(memory), cfg.about_messages) if state else []


def _check_id(value: str, field: str) -> None:
    # The rule of Hippocampus.check_id: zero-width and bidirectional characters
    # are refused too.
    if not _ID.match(value) or has_control_characters(value):
        raise InvalidInputError(
            f"{field} is 1-200 characters, no control characters or slashes", field=field
        )
