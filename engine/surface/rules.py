"""The seed's numbers for proactive surfacing and engagement, in one place.

Engagement (seed): used / helpful raise a memory's confidence by 0.1 (cap
1.0), count a use and stamp ``last_used``; ignored lowers it by 0.02 (floor
0.3) and adds 1 recent dismissal; dismissed lowers it by 0.15 (floor 0.2), adds
2 recent dismissals and marks the context irrelevant: what the conversation was
about, apart from the memory's own topics (:func:`irrelevant_context`). The
memory is held back where a conversation is on those topics again, not in every
conversation of a type.

"Recent" dismissals fade with a half-life (7 days by default): the stored
count is the value at ``dismissed_at``, and what the gate reads is that value
halved for every half-life since. A memory dismissed twice today (4) is offered
again after about a week (2, the gate's limit) if nothing else holds it back.
A use or a helpful vote clears them: a memory someone used after it was waved
away was waved away for where it was offered, not for what it is, and where
that was stays marked irrelevant. Without this, a memory a team uses often
(and so is offered often, and now and then turned down) is held back in the
very conversation that needs it.

Usefulness (seed 001: "computed from feedback") is the helpful share of a
memory's votes with a prior of one helpful and one unhelpful pseudo-vote: used
and helpful vote helpful, dismissed votes unhelpful, ignored half unhelpful.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from hippocampus.model import Memory, faded_dismissals

CONVERSATION_TYPES = ("debugging", "help-seeking", "exploration", "casual", "general")
"""The kinds of conversation; ``general`` when nothing marks it as another."""


@dataclass(frozen=True)
class EngagementRule:
    """What one engagement does to a memory's metadata."""

    confidence_delta: float
    confidence_bound: float
    dismissals: float
    counts_as_use: bool
    marks_irrelevant: bool
    miss: float
    """How much it counts as a miss when thresholds are tuned."""
    helpful_vote: float = 0.0
    unhelpful_vote: float = 0.0
    """What it adds to the memory's helpful / unhelpful feedback (usefulness)."""


ENGAGEMENT_RULES: dict[str, EngagementRule] = {
    "used": EngagementRule(
        0.1, 1.0, 0.0, counts_as_use=True, marks_irrelevant=False, miss=0.0, helpful_vote=1.0
    ),
    "helpful": EngagementRule(
        0.1, 1.0, 0.0, counts_as_use=True, marks_irrelevant=False, miss=0.0, helpful_vote=1.0
    ),
    "ignored": EngagementRule(
        -0.02, 0.3, 1.0, counts_as_use=False, marks_irrelevant=False, miss=0.5, unhelpful_vote=0.5
    ),
    "dismissed": EngagementRule(
        -0.15, 0.2, 2.0, counts_as_use=False, marks_irrelevant=True, miss=1.0, unhelpful_vote=1.0
    ),
}


class SurfaceConfig(BaseModel):
    """Gates, thresholds and learning rates of proactive surfacing.

    Attributes:
        thresholds: starting confidence threshold per conversation type (the
            seed's), tuned from engagement when ``learn``.
        default_threshold: for a type not named in ``thresholds``.
        min_trigger_matches: the memory's triggers and concepts that must be
            among the predicted next topics.
        max_momentum: messages per minute above which nothing is offered.
        max_recent_dismissals: a memory with more (faded) dismissals is held back.
        max_insights: most insights offered per message.
        dismissal_half_life_days: how fast recent dismissals fade.
        target_dismissal_rate: what threshold tuning steers toward, per type (an
            ignored offer counts as half a dismissal there).
        threshold_step: how far one engagement moves a threshold.
        threshold_bounds: thresholds stay within these.
        candidates: memories retrieved per message to judge.
        context_messages: how many recent messages make the retrieval query.
        about_messages: how many recent messages say what a conversation is
            about at an engagement. A memory is on it when
            ``min_trigger_matches`` of its topics are among theirs; a used one
            is then linked to the concepts of those that name its topics, two
            used in one conversation are linked only when both are on it, and a
            dismissal marks the memory irrelevant for their topics.
        topic_window: messages of topic history kept per conversation.
        predicted_topics: how many next topics prediction returns.
        ahead_topics: how many topics the conversation will come to need (not yet
            said, from the need model) are predicted besides.
        need_horizon: an explicit recall in a conversation teaches what it needed
            to the topics of the messages at least this many before it (the
            asking message counts as one), so the need is foreseen that early.
        max_foreseen: most foreseen insights (matched mostly on topics not yet
            said) offered per message; they have their own threshold per type.
        min_path_strength: the path strength a candidate reached only through
            the graph needs (unless two anchors reach it): the seed's 0.6 for
            predictive retrieval, above recall's 0.5.
        learn: learn from engagement and trajectories (off: the fixed baseline).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    thresholds: dict[str, Annotated[float, Field(ge=0.0, le=1.0)]] = Field(
        default_factory=lambda: {
            "debugging": 0.6,
            "help-seeking": 0.5,
            "exploration": 0.8,
            "casual": 0.9,
        }
    )
    default_threshold: float = Field(default=0.7, ge=0.0, le=1.0)
    min_trigger_matches: int = Field(default=2, ge=0)
    max_momentum: float = Field(default=5.0, gt=0.0)
    max_recent_dismissals: float = Field(default=2.0, ge=0.0)
    max_insights: int = Field(default=3, ge=0)
    dismissal_half_life_days: float = Field(default=7.0, gt=0.0)
    target_dismissal_rate: float = Field(default=0.2, ge=0.0, le=1.0)
    threshold_step: float = Field(default=0.02, ge=0.0, le=1.0)
    threshold_bounds: tuple[float, float] = (0.3, 0.97)
    candidates: int = Field(default=20, ge=1)
    context_messages: int = Field(default=2, ge=1)
    about_messages: int = Field(default=3, ge=1)
    topic_window: int = Field(default=12, ge=1)
    predicted_topics: int = Field(default=16, ge=0)
    ahead_topics: int = Field(default=4, ge=0)
    need_horizon: int = Field(default=3, ge=1)
    max_foreseen: int = Field(default=2, ge=0)
    min_path_strength: float = Field(default=0.6, ge=0.0)
    learn: bool = True

    def threshold(self, conversation_type: str) -> float:
        return self.thresholds.get(conversation_type, self.default_threshold)


USEFULNESS_PRIOR = (1.0, 1.0)
"""Pseudo-votes (helpful, unhelpful) every memory starts with: no feedback reads
0.5, and one vote moves usefulness to 0.67 or 0.33, not to 1 or 0."""


def usefulness(
    helpful: float, unhelpful: float, prior: tuple[float, float] = USEFULNESS_PRIOR
) -> float:
    """The seed's usefulness: the helpful share of a memory's feedback, with a
    prior so that a few votes do not swing it to an extreme (the mean of a Beta
    posterior: ``(helpful + a) / (helpful + unhelpful + a + b)``)."""
    a, b = prior
    return (helpful + a) / (helpful + unhelpful + a + b)


IRRELEVANT_PREFIX = "about:"
"""How a context a dismissal marked irrelevant starts: the topics follow, joined
by ``|``. Entries in another form (a conversation type and domain, as once kept)
are history: the gate reads only these."""
_CONTEXT_TOPICS = 12
"""Most topics a dismissal records as the context it marks irrelevant."""


def irrelevant_context(about: Sequence[str], hubs: Collection[str]) -> str:
    """The context a dismissal marks irrelevant: what the conversation was about
    (its recent topics, latest first) apart from the memory's own triggers and
    concepts (``hubs``), which made it look relevant. So the mark reads "not
    for talk about these", and a later conversation about the memory's own
    subject is not held back by it. All of ``about`` when every topic was the
    memory's own; ``""`` (nothing marked) when nothing was said."""
    own = set(hubs)
    rest = [t for t in about if t not in own] or list(about)
    if not rest:
        return ""
    return IRRELEVANT_PREFIX + "|".join(sorted(dict.fromkeys(rest[:_CONTEXT_TOPICS])))


def context_topics(context: str) -> list[str]:
    """The topics of a context :func:`irrelevant_context` made; none for an entry
    in another form."""
    if not context.startswith(IRRELEVANT_PREFIX):
        return []
    return [t for t in context[len(IRRELEVANT_PREFIX) :].split("|") if t]


def irrelevant_here(
    contexts: Sequence[str], about: Collection[str], weight: Callable[[str], float] | None = None
) -> str | None:
    """The first of a memory's irrelevant ``contexts`` that the conversation is on
    again: at least half of the context's topics (each counted by ``weight``, e.g.
    how specific it is, so that words every conversation uses count little) are
    among what it is about now (``about``). ``None`` when none is.
    """
    now = set(about)
    for context in contexts:
        topics = context_topics(context)
        if not topics:
            continue
        w = [weight(t) if weight else 1.0 for t in topics]
        total = sum(w)
        shared = sum(x for t, x in zip(topics, w, strict=True) if t in now)
        if total > 0 and shared >= total / 2:
            return context
    return None


def engaged(
    memory: Memory, engagement: str, context: str, now: datetime, half_life_days: float
) -> Memory:
    """The memory after one engagement, by the seed's rules (see the module
    docstring). ``context`` (from :func:`irrelevant_context`) is recorded as
    irrelevant on a dismissal."""
    rule = ENGAGEMENT_RULES[engagement]
    meta = memory.retrieval
    confidence = meta.confidence + rule.confidence_delta
    confidence = (
        min(rule.confidence_bound, confidence)
        if rule.confidence_delta > 0
        else max(rule.confidence_bound, confidence)
    )
    if rule.confidence_delta < 0 and meta.confidence < rule.confidence_bound:
        confidence = meta.confidence  # already below the floor: not raised by a penalty
    update: dict[str, object] = {"confidence": confidence}
    if rule.helpful_vote or rule.unhelpful_vote:
        helpful = meta.helpful_votes + rule.helpful_vote
        unhelpful = meta.unhelpful_votes + rule.unhelpful_vote
        update["helpful_votes"] = helpful
        update["unhelpful_votes"] = unhelpful
        update["usefulness"] = usefulness(helpful, unhelpful)
    if rule.counts_as_use:
        update["usage_count"] = meta.usage_count + 1
        update["last_used"] = now
    if rule.dismissals:
        update["recent_dismissals"] = (
            faded_dismissals(memory, now, half_life_days) + rule.dismissals
        )
        update["dismissed_at"] = now
    elif rule.counts_as_use and meta.recent_dismissals > 0.0:
        update["recent_dismissals"] = 0.0
    if rule.marks_irrelevant and context and context not in meta.irrelevant_contexts:
        update["irrelevant_contexts"] = [*meta.irrelevant_contexts, context][-50:]
    return memory.model_copy(
        update={"retrieval": meta.model_copy(update=update), "updated_at": memory.updated_at}
    )
