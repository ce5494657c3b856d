"""Proactive surfacing over a store: messages in, 0-3 insights out, engagement
back. The pure parts (state, models, rules, metrics, outcomes, the choice of
offers) are its neighbours in :mod:`hippocampus.surface`, and so are the writes
of learned state (``learning``) and what an engagement writes (``engagement``).

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
foreseen rather than said. The gates (docs/surfacing.md) then decide; a foreseen
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
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import NamedTuple

from hippocampus.errors import InvalidInputError, LimitExceededError, NotFoundError
from hippocampus.extract import ConceptExtractor, Extraction
from hippocampus.extract.recent import RecentExtractions, pieces
from hippocampus.extract.sanitize import has_control_characters
from hippocampus.locks import StripedLock
from hippocampus.model import Event, Memory, RecallFilters
from hippocampus.model.association import EdgeUpdate
from hippocampus.retrieve.config import (
    DEFAULT_RECIPE,
    EMBEDDER_DOWN_WARNING,
    RECIPES,
    without_dense,
)
from hippocampus.retrieve.pipeline import Candidate, retrieve
from hippocampus.schedule import Scheduler
from hippocampus.store import GraphStore, Vector
from hippocampus.surface.conversation import ConversationState, HeldBack
from hippocampus.surface.engagement import Engaging, engagement_effects, other_offers
from hippocampus.surface.learning import (
    LearnedWrites,
    Learning,
    message_learning,
    recall_learning,
    recalled,
)
from hippocampus.surface.metrics import SurfaceCounters, SurfaceMetrics
from hippocampus.surface.offers import (
    Offering,
    Scored,
    choose,
    on_topic,
    record_offers,
    surfacing_events,
)
from hippocampus.surface.outcomes import (
    SURFACE_COUNTERS_KEY,
    SURFACE_MODEL_KEY,
    ConversationView,
    EngagementOutcome,
    MessageOutcome,
    Surfacing,
    conversation_key,
    conversation_view,
    surfacing_key,
)
from hippocampus.surface.predict import SurfaceModel, predicted_topics
from hippocampus.surface.rules import CONVERSATION_TYPES, ENGAGEMENT_RULES, SurfaceConfig

logger = logging.getLogger(__name__)

# \Z, not $: $ also matches before a final newline.
_ID = re.compile(r"^[^\x00-\x1f\x7f/\\]{1,200}\Z")
_ROLE = re.compile(r"^[A-Za-z0-9_.:@\- ]{1,64}\Z")
_MODEL_KEY = SURFACE_MODEL_KEY
_COUNTERS_KEY = SURFACE_COUNTERS_KEY
_QUERY_CHARS = 4000
"""How much of the recent messages the "now" search reads."""


Embed = Callable[[str], Vector | None]
Engaged = Callable[[str, Memory, Memory], None]


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
        self._writes = LearnedWrites(store)

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
        body = _checked_message(conversation_id, text, role, at, conversation_type, max_chars)
        cfg = self.config
        extraction = self._recent.extract_many([body])[0]
        topics = list(dict.fromkeys([*extraction.concepts, *extraction.triggers]))

        key = conversation_key(conversation_id)
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
            predicted, heading = predicted_topics(learned, state, cfg)
            ctype = state.type
            answer = self._answer(collection, state, learned, predicted, heading, at)
            state.hold(answer.below_bar)
            records = record_offers(state, answer.chosen, at, cfg)
            # This message's learning goes onto what is stored then, not onto the
            # snapshot, so that concurrent messages keep each other's; and only if
            # no other message of this conversation was written meanwhile, here or
            # in another process (else take it in afresh: its index, recent
            # topics and what was surfaced changed).
            with lock:
                applied = self._writes.apply(
                    collection,
                    Learning(
                        message_learning(cfg.learn, ctype, previous, topics, len(answer.chosen)),
                        {**records, key: state.model_dump(mode="json")},
                        surfacing_events(state, answer.chosen, at),
                        expect={key: seen},
                    ),
                )
            if applied:
                break
            logger.debug("conversation %s moved on meanwhile; again", conversation_id)
        return MessageOutcome(
            insights=[item.insight for item in answer.chosen],
            conversation=conversation_view(state, predicted),
            held_back=answer.held_back,
            warnings=answer.warnings,
            candidates=answer.candidates,
        )

    def _answer(
        self,
        collection: str,
        state: ConversationState,
        learned: SurfaceModel,
        predicted: list[str],
        heading: list[str],
        at: datetime,
    ) -> _Answer:
        """What a message offers, unless the conversation goes too fast to be
        interrupted (then why not, in ``held_back``)."""
        cfg = self.config
        ctype = state.type
        threshold = learned.thresholds.value(ctype, cfg.threshold(ctype))
        warnings: list[str] = []
        if state.momentum > cfg.max_momentum:
            held_back = (
                f"momentum {state.momentum:.1f} messages/minute is above {cfg.max_momentum}"
                " (a fast exchange is not interrupted; when replaying a conversation, "
                "give each message the time it was said as `at`)"
            )
            return _Answer([], None, [], held_back, warnings)
        chosen, candidates, below_bar = self._offer(
            collection, state, learned, predicted, heading, threshold, at, warnings
        )
        return _Answer(chosen, candidates, below_bar, None, warnings)

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
    ) -> tuple[list[Scored], int, list[HeldBack]]:
        """The insights to offer, how many memories retrieval weighed for them, and
        those the confidence bar alone held back. Writes nothing: the caller
        records the offers with the conversation."""
        candidates, memories = self._candidates(collection, state, predicted, heading, at, warnings)
        surfaced = state.surfaced_ids()
        rng = random.Random(f"{self.random_seed}:{collection}:{state.id}:{state.messages}")
        offering = Offering(
            state=state,
            learned=learned,
            config=self.config,
            scheduler=self.scheduler,
            predicted=set(predicted),
            foreseen=set(heading),
            threshold=threshold,
            at=at,
            rng=rng,
        )
        scored: list[Scored] = []
        held_back: list[HeldBack] = []
        for c in candidates:
            memory = memories.get(c.memory_id)
            if memory is None or memory.id in surfaced:
                continue
            judged = offering.judge(memory, c.similarity, c.graph)
            if isinstance(judged, HeldBack):
                held_back.append(judged)
            elif judged is not None:
                scored.append(judged)
        return choose(scored, self.config), len(candidates), held_back

    def _candidates(
        self,
        collection: str,
        state: ConversationState,
        predicted: list[str],
        heading: list[str],
        at: datetime,
        warnings: list[str],
    ) -> tuple[list[Candidate], dict[str, Memory]]:
        """What the conversation's three looks retrieve, best first (each memory at
        its best score), and the memories of them all. Notes in ``warnings``
        when the embedder failed."""
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
        # a pool that the offers pick from on their own terms, and a near
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
        wanted = [c.memory_id for c in candidates if c.memory_id not in memories]
        memories.update(self.store.get_memories(collection, wanted))
        return candidates, memories

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
        key = surfacing_key(surfacing_id)
        # Which memory and conversation an offer belongs to never changes: read
        # them first to know what to lock, then read the record again under it.
        first = self.store.get_states(collection, [key]).get(key)
        if first is None:
            raise NotFoundError(f"no surfacing {surfacing_id!r} in this collection")
        offer = Surfacing.model_validate(first)
        engaging = self._engaging(collection, offer, key, surfacing_id, engagement, at)
        self.store.learn(
            collection,
            memory_ids=[offer.memory_id],
            state_keys=[key, _MODEL_KEY, _COUNTERS_KEY, *sorted(engaging.others)],
            change=engaging.change,
        )
        seen = engaging.seen
        if self.on_engaged is not None:
            self.on_engaged(collection, seen["before"], seen["after"])
        return EngagementOutcome(
            surfacing_id=surfacing_id,
            engagement=engagement,
            memory=seen["after"],
            threshold=seen["threshold"],
        )

    def _engaging(
        self,
        collection: str,
        offer: Surfacing,
        key: str,
        surfacing_id: str,
        engagement: str,
        at: datetime,
    ) -> Engaging:
        """The engagement of ``offer``, with what its change reads beforehand: the
        conversation, and the other offers used in it."""
        cfg = self.config
        rule = ENGAGEMENT_RULES[engagement]
        # What the conversation is about now, and was when the offer was made:
        # what this engagement teaches stays within it.
        state = self._conversation_state(collection, offer.conversation_id)
        about = list(
            dict.fromkeys([*(state.about(cfg.about_messages) if state else []), *offer.about])
        )
        # Offers used in the same conversation were used together: the others of
        # the conversation are read (and locked) with this one, so that of two
        # engaged at once the second sees the first.
        others = other_offers(state, offer) if state and cfg.learn and rule.counts_as_use else {}
        # Which topics the other memories are on: only those on what the
        # conversation is about now are linked to this one.
        held_others = (
            self.store.get_memories(collection, sorted(set(others.values()))) if others else {}
        )
        least = cfg.min_trigger_matches
        return Engaging(
            key=key,
            surfacing_id=surfacing_id,
            engagement=engagement,
            at=at,
            config=cfg,
            state=state,
            about=about,
            others=others,
            on_topic={mid for mid, m in held_others.items() if on_topic(m, about, least)},
            engaged=self.engaged,
        )

    def _conversation_state(
        self, collection: str, conversation_id: str
    ) -> ConversationState | None:
        key = conversation_key(conversation_id)
        held = self.store.get_states(collection, [key])
        return ConversationState.model_validate(held[key]) if key in held else None

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
        return engagement_effects(
            memory, engagement, about, concepts, at, config=self.config, scheduler=self.scheduler
        )

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
        need (:func:`~hippocampus.surface.learning.learn_missed`).

        Returns:
            ``(memory id, lead in messages)`` for each top result surfaced before.
        """
        _check_id(conversation_id, "conversation_id")
        memory_ids = [m.id for m in found]
        key = conversation_key(conversation_id)
        # Only the learned state and the counters change; the conversation is
        # only read.
        held = self.store.get_states(collection, [key])
        before: list[tuple[str, int]] = []
        missed: list[tuple[HeldBack, float]] = []
        early: list[list[str]] = []
        if key in held:
            state = ConversationState.model_validate(held[key])
            before, missed, early = recalled(state, memory_ids, self.config.need_horizon)
        change = recall_learning(self.config, before, missed, early, found)
        self._writes.apply(collection, Learning(change, {}))
        return before

    # -- reading ---------------------------------------------------------------------

    def conversation(self, collection: str, conversation_id: str) -> ConversationView:
        _check_id(conversation_id, "conversation_id")
        key = conversation_key(conversation_id)
        held = self.store.get_states(collection, [key, _MODEL_KEY])
        if key not in held:
            raise NotFoundError(f"no conversation {conversation_id!r} in this collection")
        state = ConversationState.model_validate(held[key])
        learned = SurfaceModel.model_validate(held.get(_MODEL_KEY, {}))
        return conversation_view(state, predicted_topics(learned, state, self.config)[0])

    def metrics(self, collection: str) -> SurfaceMetrics:
        held = self.store.get_states(collection, [_COUNTERS_KEY])
        return SurfaceCounters.model_validate(held.get(_COUNTERS_KEY, {})).summary()


class _Answer(NamedTuple):
    """What a message offers (see :meth:`Surfacer._answer`)."""

    chosen: list[Scored]
    candidates: int | None
    below_bar: list[HeldBack]
    held_back: str | None
    warnings: list[str]


def _checked_message(
    conversation_id: str,
    text: str,
    role: str,
    at: datetime,
    conversation_type: str | None,
    max_chars: int,
) -> str:
    """The message's text, stripped, once the message is found well formed.

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
    return body


def _check_id(value: str, field: str) -> None:
    # The rule of Hippocampus.check_id: zero-width and bidirectional characters
    # are refused too.
    if not _ID.match(value) or has_control_characters(value):
        raise InvalidInputError(
            f"{field} is 1-200 characters, no control characters or slashes", field=field
        )
