"""What surfacing learns: which topics follow which, which kinds of insight get
engaged in which kind of conversation, how confident to be, and how high to set
each conversation type's bar. Every model here is a plain JSON-able state so
the store can keep it and several API processes can share it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hippocampus.surface.conversation import ConversationState
from hippocampus.surface.rules import SurfaceConfig

FEATURES = (
    "bias",
    "similarity",
    "graph",
    "matches",
    "confidence",
    "taste",
    "due",
    "foresight",
    "taste_odds",
)
"""Inputs of the confidence model, in order. ``foresight`` is the share of a
memory's matched topics that the conversation has not reached yet (foreseen
from what such conversations came to need). ``taste_odds`` is the kind
bandit's learned rate (its posterior mean, not the draw) as log-odds
(:func:`odds`): the bandit estimates a chance of engagement, and a logistic
model adds chances as log-odds, so that a kind that lands one time in ten
counts against an offer as strongly as the bandit has learned, not by a weight
learned slowly over ``taste``'s 0-1. The draw in ``taste`` does the exploring;
the odds of an untried kind are even and add nothing."""

PRIOR_WEIGHTS = (-4.0, 4.0, 1.0, 2.0, 1.0, 2.0, 0.3, 0.0, 1.0)
"""Cold-start weights: a memory close to the conversation (similarity 0.6), on
two of the predicted topics, of a kind with no record yet (even odds), lands
near 0.7; a
loosely related one (0.3, one topic) near 0.25. A foreseen memory starts less
sure than one on what is being said. Engagement moves them."""


def odds(p: float) -> float:
    """The log-odds of a chance, kept finite (within about ±7)."""
    q = min(1.0 - 1e-3, max(1e-3, p))
    return math.log(q / (1.0 - q))


class TopicModel(BaseModel):
    """Next-topic prediction learned online: counts of topic ``b`` appearing in
    the message after one mentioning ``a``, across all conversations.

    A topic's successors are capped (the weakest dropped) so the model stays
    small however long it runs.
    """

    model_config = ConfigDict(extra="forbid")

    follows: dict[str, dict[str, float]] = Field(default_factory=dict)
    seen: dict[str, float] = Field(default_factory=dict)
    messages: float = 0.0
    max_successors: int = 48
    max_topics: int = 20_000

    def specificity(self, topic: str) -> float:
        """0-1: how rare the topic is across the messages seen (1 for a topic never
        seen, near 0 for one in every message), so that "look" and "thanks" do not
        crowd the prediction."""
        if self.messages < 1.0:
            return 1.0
        rare = math.log1p(self.messages / (1.0 + self.seen.get(topic, 0.0)))
        return min(1.0, rare / math.log1p(self.messages))

    def learn(self, before: Sequence[str], after: Sequence[str]) -> None:
        """One transition: the topics of a message, then those of the next."""
        targets = [b for b in dict.fromkeys(after)]
        if not targets:
            return
        self.messages += 1.0
        for b in targets:
            self.seen[b] = self.seen.get(b, 0.0) + 1.0
        if len(self.seen) > self.max_topics:
            keep = sorted(self.seen.items(), key=lambda kv: (-kv[1], kv[0]))[: self.max_topics]
            self.seen = dict(keep)
        for a in dict.fromkeys(before):
            row = self.follows.get(a)
            if row is None:
                if len(self.follows) >= self.max_topics:
                    continue
                row = self.follows[a] = {}
            for b in targets:
                if b != a:
                    row[b] = row.get(b, 0.0) + 1.0
            if len(row) > self.max_successors:
                keep = sorted(row.items(), key=lambda kv: (-kv[1], kv[0]))[: self.max_successors]
                self.follows[a] = dict(keep)

    def predict(self, history: Sequence[Sequence[str]], k: int) -> list[tuple[str, float]]:
        """The ``k`` likeliest topics of the coming messages, from the topics of the
        recent ones (oldest first): what was just said (it tends to persist) and
        what has followed it before, recent messages weighing more, specific
        topics more than common ones."""
        scores: dict[str, float] = {}
        for age, topics in enumerate(reversed(history[-4:])):
            recency = 0.6**age
            for a in topics:
                scores[a] = scores.get(a, 0.0) + recency
                row = self.follows.get(a)
                if not row:
                    continue
                total = sum(row.values())
                # Trust a transition in proportion to how often it was seen.
                evidence = total / (total + 3.0)
                for b, n in row.items():
                    scores[b] = scores.get(b, 0.0) + recency * evidence * 2.0 * n / total
        weighted = {t: v * (0.3 + 0.7 * self.specificity(t)) for t, v in scores.items()}
        return sorted(weighted.items(), key=lambda kv: (-kv[1], kv[0]))[:k]

    def source(self, history: Sequence[Sequence[str]], topic: str) -> str | None:
        """The topic of the recent messages (as :meth:`predict` reads them) whose
        transitions gave ``topic`` the most weight: what it has followed."""
        best: tuple[float, str] | None = None
        for age, topics in enumerate(reversed(history[-4:])):
            for a in topics:
                row = self.follows.get(a)
                if not row or a == topic or topic not in row:
                    continue
                total = sum(row.values())
                score = 0.6**age * total / (total + 3.0) * row[topic] / total
                if best is None or (score, a) > best:
                    best = (score, a)
        return best[1] if best else None


class NeedModel(BaseModel):
    """Which topics a conversation will come to need, learned from what was
    asked for: when a conversation recalls memories explicitly, the concepts of
    what it found are counted against the topics said before (the caller picks
    which messages: those well before the asking, to foresee that early).

    Prediction ranks the concepts not yet said by how much likelier they are to
    be needed after the conversation's topics than in any conversation (lift,
    its chance smoothed toward the base rate), times that chance and how rare
    the concept is among needs: the stock words of a kind of memory have a lift
    near 1 and drop out, and so do pairings seen fewer than three times.
    """

    model_config = ConfigDict(extra="forbid")

    given: dict[str, dict[str, float]] = Field(default_factory=dict)
    after: dict[str, float] = Field(default_factory=dict)
    needed: dict[str, float] = Field(default_factory=dict)
    needs: float = 0.0
    min_needs: float = 20.0
    smoothing: float = 5.0
    max_concepts: int = 64
    max_topics: int = 20_000

    def learn(
        self, context: Sequence[Sequence[str]], concepts: Sequence[str], weight: float = 1.0
    ) -> None:
        """One need: the topics of the messages before it, and the concepts of
        what was needed."""
        wanted = list(dict.fromkeys(concepts))
        topics = list(dict.fromkeys(t for message in context for t in message))
        if not wanted or not topics or weight <= 0.0:
            return
        self.needs += weight
        for c in wanted:
            self.needed[c] = self.needed.get(c, 0.0) + weight
        for a in topics:
            row = self.given.get(a)
            if row is None:
                if len(self.given) >= self.max_topics:
                    continue
                row = self.given[a] = {}
            self.after[a] = self.after.get(a, 0.0) + weight
            for c in wanted:
                row[c] = row.get(c, 0.0) + weight
            if len(row) > self.max_concepts:
                keep = sorted(row.items(), key=lambda kv: (-kv[1], kv[0]))[: self.max_concepts]
                self.given[a] = dict(keep)

    def predict(
        self,
        history: Sequence[Sequence[str]],
        k: int,
        weight: Callable[[str], float] | None = None,
    ) -> list[tuple[str, float]]:
        """The ``k`` concepts likeliest to be needed and not said yet in
        ``history`` (the conversation's topics, oldest first), each score times
        ``weight(concept)`` when given. Nothing until ``min_needs`` needs were
        seen; the chances are smoothed toward the base rate, so a pairing seen a
        few times counts for little."""
        if self.needs < self.min_needs:
            return []
        said = {t for topics in history for t in topics}
        scores: dict[str, float] = {}
        for a in said:
            row = self.given.get(a)
            if not row:
                continue
            total = self.after[a]
            for c, n in row.items():
                if c in said or n < 3.0:
                    continue
                base = self.needed[c] / self.needs
                p = (n + self.smoothing * base) / (total + self.smoothing)
                if p > base:
                    # How much likelier, times how telling: a concept most needs
                    # carry (a kind's stock words) says little about the subject.
                    scores[c] = scores.get(c, 0.0) + p * math.log(p / base) * -math.log(base)
        if weight is not None:
            scores = {c: v * weight(c) for c, v in scores.items()}
        return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]

    def source(self, history: Sequence[Sequence[str]], concept: str) -> str | None:
        """The said topic after which ``concept`` was likeliest to be needed (as
        :meth:`predict` counts it): what foresaw it."""
        if concept not in self.needed or self.needs <= 0.0:
            return None
        base = self.needed[concept] / self.needs
        best: tuple[float, str] | None = None
        for a in {t for topics in history for t in topics}:
            n = self.given.get(a, {}).get(concept, 0.0)
            if n < 3.0 or a == concept:
                continue
            p = (n + self.smoothing * base) / (self.after[a] + self.smoothing)
            if p > base and (best is None or (p, a) > best):
                best = (p, a)
        return best[1] if best else None


class KindBandit(BaseModel):
    """Which kinds of insight (memory categories) get engaged in which kind of
    conversation: a Beta posterior per (conversation type, kind), sampled for
    exploration (Thompson sampling)."""

    model_config = ConfigDict(extra="forbid")

    arms: dict[str, tuple[float, float]] = Field(default_factory=dict)
    prior: tuple[float, float] = (1.0, 1.0)

    @staticmethod
    def _key(conversation_type: str, kind: str) -> str:
        return f"{conversation_type}|{kind}"

    def mean(self, conversation_type: str, kind: str) -> float:
        a, b = self.arms.get(self._key(conversation_type, kind), self.prior)
        return a / (a + b)

    def sample(self, conversation_type: str, kind: str, rng: random.Random) -> float:
        a, b = self.arms.get(self._key(conversation_type, kind), self.prior)
        return rng.betavariate(a, b)

    def update(self, conversation_type: str, kind: str, reward: float) -> None:
        key = self._key(conversation_type, kind)
        a, b = self.arms.get(key, self.prior)
        self.arms[key] = (a + reward, b + 1.0 - reward)


class ConfidenceModel(BaseModel):
    """The chance an offered memory gets used: logistic regression over
    :data:`FEATURES`, starting from :data:`PRIOR_WEIGHTS` and updated online by
    each engagement (gradient steps, pulled gently back toward the prior so a
    few outcomes cannot swing it far)."""

    model_config = ConfigDict(extra="forbid")

    weights: list[float] = Field(default_factory=lambda: list(PRIOR_WEIGHTS))
    updates: int = 0
    rate: float = 0.05
    prior_pull: float = 0.01

    @model_validator(mode="after")
    def _all_features(self) -> ConfidenceModel:
        # A model kept before a feature was added starts that feature at its prior.
        if len(self.weights) < len(PRIOR_WEIGHTS):
            self.weights = [*self.weights, *PRIOR_WEIGHTS[len(self.weights) :]]
        return self

    def predict(self, x: Sequence[float]) -> float:
        z = sum(w * v for w, v in zip(self.weights, _padded(x), strict=True))
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    def update(self, x: Sequence[float], outcome: float) -> None:
        error = outcome - self.predict(x)
        rate = self.rate / math.sqrt(1.0 + self.updates / 50.0)
        self.weights = [
            w + rate * (error * v - self.prior_pull * (w - p))
            for w, v, p in zip(self.weights, _padded(x), PRIOR_WEIGHTS, strict=True)
        ]
        self.updates += 1


def _padded(x: Sequence[float]) -> list[float]:
    """Features recorded before a feature was added read it as 0."""
    return [*x, *[0.0] * (len(FEATURES) - len(x))]


class ThresholdTuner(BaseModel):
    """Per conversation type, the confidence bar, moved after each engagement by
    ``step × (miss - target)``, where a dismissal is a whole miss, an ignored
    offer half of one and a use none: it rises where offers annoy and falls
    where they land. A need it held back (:meth:`missed`) brings it down too,
    so that a bar that offers nothing still learns it is too high."""

    model_config = ConfigDict(extra="forbid")

    thresholds: dict[str, float] = Field(default_factory=dict)

    def value(self, conversation_type: str, start: float) -> float:
        return self.thresholds.get(conversation_type, start)

    def update(
        self,
        conversation_type: str,
        miss: float,
        *,
        start: float,
        target: float,
        step: float,
        bounds: tuple[float, float],
    ) -> None:
        value = self.value(conversation_type, start)
        value += step * (miss - target)
        self.thresholds[conversation_type] = max(bounds[0], min(bounds[1], value))

    def missed(
        self,
        conversation_type: str,
        weight: float,
        *,
        start: float,
        target: float,
        step: float,
        bounds: tuple[float, float],
    ) -> None:
        """A need the bar held back: a memory it kept from a conversation that the
        conversation then asked for. The bar comes down as far as a dismissal
        takes it up (``step × (1 - target)``), times ``weight``: silence when
        something was needed counts against the bar as an unwanted offer counts
        for it, so the bar settles between the two rather than only ever
        rising where offers miss."""
        value = self.value(conversation_type, start)
        value -= step * (1.0 - target) * weight
        self.thresholds[conversation_type] = max(bounds[0], min(bounds[1], value))


class SurfaceModel(BaseModel):
    """Everything surfacing has learned in one collection."""

    model_config = ConfigDict(extra="forbid")

    topics: TopicModel = Field(default_factory=TopicModel)
    needs: NeedModel = Field(default_factory=NeedModel)
    kinds: KindBandit = Field(default_factory=KindBandit)
    confidence: ConfidenceModel = Field(default_factory=ConfidenceModel)
    thresholds: ThresholdTuner = Field(default_factory=ThresholdTuner)


def predicted_topics(
    learned: SurfaceModel, state: ConversationState, config: SurfaceConfig
) -> tuple[list[str], list[str]]:
    """The predicted topics (the coming messages' likeliest, then those the
    conversation will come to need), and the latter alone."""
    if config.learn:
        ranked = learned.topics.predict(state.topics, config.predicted_topics)
        heading = [
            t
            for t, _ in learned.needs.predict(
                state.topics, config.ahead_topics, weight=learned.topics.specificity
            )
        ]
        return list(dict.fromkeys([*(t for t, _ in ranked), *heading])), heading
    # The baseline expects the conversation to stay on what was just said.
    recent = [t for topics in state.topics[-2:] for t in topics]
    return list(dict.fromkeys(reversed(recent)))[: config.predicted_topics], []
