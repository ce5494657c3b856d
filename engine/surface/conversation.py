"""Conversation state: what a conversation is about, how fast it moves, what
kind it is, and what has been offered in it."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from hippocampus.surface.rules import CONVERSATION_TYPES

_CUES: dict[str, tuple[str, ...]] = {
    "debugging": (
        "error", "bug", "exception", "traceback", "stack trace", "crash", "fails",
        "failing", "failed", "broken", "debug", "timeout", "leak", "regression",
        "doesn't work", "not working", "500", "segfault", "panic",
        "logged out", "401", "403", "404", "502", "503", "504", "stack", "throws",
        "thrown", "broke", "breaks", "wrong", "unexpected", "repro", "reproduce",
        "investigate", "logs", "outage", "oom", "out of memory", "deadlock", "hangs",
        "root cause", "rollback", "rolled back", "rolling back", "didn't help",
        "still happening", "keeps happening", "workaround", "expired", "invalid",
    ),
    "help-seeking": (
        "how do i", "how can i", "how should i", "can you", "could you", "help",
        "stuck", "what should", "advice", "please", "is there a way", "any idea",
    ),
    "exploration": (
        "what if", "idea", "explore", "consider", "design", "alternative",
        "compare", "brainstorm", "trade-off", "tradeoff", "architecture",
        "could we", "imagine", "approach", "options",
    ),
    "casual": (
        "hi", "hello", "hey", "thanks", "thank you", "lol", "haha", "weekend",
        "coffee", "lunch", "cool", "nice", "how are you", "good morning",
    ),
}  # fmt: skip
_WORD_CUES = {
    t: re.compile(r"\b(?:" + "|".join(map(re.escape, c)) + r")\b") for t, c in _CUES.items()
}
_MOMENTUM_WINDOW = 5


def type_votes(text: str) -> dict[str, int]:
    """How many cues of each conversation type the text carries. Casual cues count
    only in a message with no other kind: a greeting that opens a bug report
    does not make it small talk."""
    lowered = text.casefold()
    votes = {t: n for t, rx in _WORD_CUES.items() if (n := len(rx.findall(lowered)))}
    if len(votes) > 1:
        votes.pop("casual", None)
    return votes


class SurfacedItem(BaseModel):
    """A memory offered in a conversation, and at which message."""

    model_config = ConfigDict(extra="forbid")

    memory_id: str
    surfacing_id: str
    message: int


class HeldBack(BaseModel):
    """A memory the confidence bar alone kept from a conversation: it passed every
    other gate. Should the conversation then ask for it, the bar was too high."""

    model_config = ConfigDict(extra="forbid")

    memory_id: str
    message: int
    features: list[float]
    conversation_type: str
    foreseen: bool
    """Which bar held it: the conversation type's bar for foreseen offers, or its
    own."""


_HELD_KEPT = 60
"""Most held-back offers a conversation keeps (the latest): a few messages'
worth."""


class ConversationState(BaseModel):
    """One conversation as the engine sees it.

    Attributes:
        id: the conversation's id.
        messages: messages seen so far (the next one's index).
        given_type: the type the caller said, if any (wins over inference).
        type_votes: cues of each type seen so far.
        topics: topics (concepts and triggers) of each recent message, oldest first.
        domain_votes: domains seen so far, counted.
        times: timestamps of the recent messages, for momentum.
        participants: roles that have spoken.
        surfaced: what was offered, in order.
        held: what the confidence bar alone held back, at which message, latest
            last.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    messages: int = 0
    given_type: str | None = None
    type_votes: dict[str, int] = Field(default_factory=dict)
    topics: list[list[str]] = Field(default_factory=list)
    concepts: list[str] = Field(default_factory=list)
    texts: list[str] = Field(default_factory=list)
    domain_votes: dict[str, int] = Field(default_factory=dict)
    times: list[datetime] = Field(default_factory=list)
    participants: list[str] = Field(default_factory=list)
    surfaced: list[SurfacedItem] = Field(default_factory=list)
    held: list[HeldBack] = Field(default_factory=list)

    @property
    def type(self) -> str:
        """The given type, else the type with the most cues (``general`` if none)."""
        if self.given_type:
            return self.given_type
        if not self.type_votes:
            return "general"
        order = {t: i for i, t in enumerate(CONVERSATION_TYPES)}
        return max(self.type_votes.items(), key=lambda kv: (kv[1], -order.get(kv[0], 99)))[0]

    @property
    def domain(self) -> str | None:
        """The domain mentioned most so far."""
        if not self.domain_votes:
            return None
        return max(self.domain_votes.items(), key=lambda kv: (kv[1], kv[0]))[0]

    @property
    def momentum(self) -> float:
        """Messages per minute over the last few messages (0 with fewer than two)."""
        times = self.times[-_MOMENTUM_WINDOW:]
        if len(times) < 2:
            return 0.0
        # Messages in the same second count as a second apart: a burst, but finite.
        minutes = max((times[-1] - times[0]).total_seconds(), 1.0) / 60.0
        return (len(times) - 1) / minutes

    def about(self, messages: int) -> list[str]:
        """What the conversation is about now: the topics of its last ``messages``
        messages, latest first. What engagement teaches is scoped to it."""
        recent = self.topics[-messages:] if messages > 0 else []
        return list(dict.fromkeys(t for topics in reversed(recent) for t in topics))

    def said(self) -> set[str]:
        """Every topic said in the messages the state keeps."""
        return {t for topics in self.topics for t in topics}

    def concepts_near(self, hubs: Collection[str], messages: int) -> list[str]:
        """The concepts said in those of the last ``messages`` messages that name
        one of ``hubs`` (a memory's triggers and concepts), latest first: what
        the conversation said about that memory's subject, and nothing it said
        about something else."""
        wanted, known = set(hubs), set(self.concepts)
        recent = self.topics[-messages:] if messages > 0 else []
        near = (topics for topics in reversed(recent) if wanted.intersection(topics))
        return list(dict.fromkeys(t for topics in near for t in topics if t in known))

    def surfaced_ids(self) -> set[str]:
        return {s.memory_id for s in self.surfaced}

    def hold(self, held: list[HeldBack]) -> None:
        """Note what the bar held back at this message (the latest kept)."""
        self.held = [*self.held, *held][-_HELD_KEPT:]

    def held_before(self, message: int) -> dict[str, HeldBack]:
        """Each memory the bar held back before ``message``, as last weighed."""
        return {h.memory_id: h for h in self.held if h.message < message}

    def observe(
        self,
        *,
        text: str,
        role: str,
        at: datetime,
        topics: list[str],
        concepts: list[str],
        domains: list[str],
        conversation_type: str | None,
        window: int,
    ) -> None:
        """Take one message into the state."""
        self.messages += 1
        if conversation_type:
            self.given_type = conversation_type
        for t, n in type_votes(text).items():
            self.type_votes[t] = self.type_votes.get(t, 0) + n
        self.topics = [*self.topics, topics][-window:]
        self.concepts = list(dict.fromkeys([*concepts, *self.concepts]))[: 4 * window]
        self.texts = [*self.texts, text[:2000]][-window:]
        votes = Counter(self.domain_votes)
        votes.update(domains)
        self.domain_votes = dict(votes)
        self.times = [*self.times, at][-_MOMENTUM_WINDOW:]
        if role not in self.participants:
            self.participants = [*self.participants, role][-20:]
