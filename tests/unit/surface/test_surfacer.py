"""Proactive surfacing end to end on the real engine: gates, engagement, and
recall-before-search."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hippocampus.embed import HashingEmbedder
from hippocampus.errors import ConflictError, InvalidInputError, NotFoundError
from hippocampus.extract import Extraction, SpacyConceptExtractor
from hippocampus.model import EdgeType, NewMemory
from hippocampus.service import Hippocampus
from hippocampus.store.embedded import EmbeddedStore
from hippocampus.surface import SurfaceConfig
from hippocampus.surface.outcomes import MessageOutcome

C = "team:payments"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
MESSAGE = "the redis connection pool is exhausted during the checkout load test"
LOW = {t: 0.05 for t in ("debugging", "help-seeking", "exploration", "casual")}


def service(tmp_path: Path, extractor: SpacyConceptExtractor, **config: object) -> Hippocampus:
    settings = {"thresholds": LOW, "default_threshold": 0.05, **config}
    return Hippocampus(
        EmbeddedStore(tmp_path / "data"),
        HashingEmbedder(),
        extractor,
        surfacing=SurfaceConfig(**settings),  # type: ignore[arg-type]
        random_seed=3,
    )


@pytest.fixture
def svc(tmp_path: Path, spacy_extractor: SpacyConceptExtractor) -> Iterator[Hippocampus]:
    s = service(tmp_path, spacy_extractor)
    yield s
    s.close()


def topics_of(svc: Hippocampus, text: str) -> list[str]:
    e = svc.extractor.extract_many([text])[0]
    return [*e.concepts, *e.triggers]


def add(svc: Hippocampus, mid: str, content: str, concepts: list[str], **kw: object) -> None:
    svc.remember_many(
        C, [NewMemory(id=mid, content=content, concepts=concepts, triggers=[], **kw)], now=T0
    )


def say(svc: Hippocampus, conversation: str, text: str, minute: float) -> MessageOutcome:
    at = T0 + timedelta(minutes=minute)
    return svc.message(C, conversation, text, at=at, conversation_type="debugging")


def test_an_on_topic_memory_is_offered_with_the_gates_it_passed(svc: Hippocampus) -> None:
    topics = topics_of(svc, MESSAGE)
    add(svc, "pool", "Raise the redis connection pool before checkout load tests", topics[:3])
    add(svc, "grafana", "Dashboards for the deploy live in grafana", ["grafana", "dashboard"])
    out = say(svc, "c1", MESSAGE, 0)
    assert [i.memory.id for i in out.insights] == ["pool"]
    insight = out.insights[0]
    assert len(insight.matched_topics) >= 2
    # Why, in words: the words of the message it matched; nothing foreseen.
    assert set(insight.matched_topics) <= set(topics)
    assert insight.reason.startswith("This message said ")
    assert all(f'"{t}"' in insight.reason for t in insight.matched_topics)
    assert not insight.foreseen and insight.foreseen_topics == []
    gates = {g.name: g for g in insight.gates}
    assert set(gates) == {"confidence", "trigger_matches", "momentum", "recent_dismissals"}
    assert gates["confidence"].value >= gates["confidence"].limit
    assert out.conversation.type == "debugging" and out.conversation.type_given
    # Never the same memory twice in one conversation; a new one may get it.
    assert say(svc, "c1", MESSAGE, 2).insights == []
    assert [i.memory.id for i in say(svc, "c2", MESSAGE, 4).insights] == ["pool"]


def test_one_matching_topic_is_not_enough(svc: Hippocampus) -> None:
    add(svc, "pool", "Raise the redis connection pool before checkout load tests", ["checkout"])
    out = say(svc, "c1", MESSAGE, 0)
    assert out.insights == []
    # Weighed and held back: the collection has memories, this one did not fit.
    assert out.candidates == 1


def test_a_message_in_a_collection_without_memories_weighs_none(svc: Hippocampus) -> None:
    out = say(svc, "c1", MESSAGE, 0)
    assert out.insights == [] and out.candidates == 0


def test_a_fast_conversation_is_not_interrupted(svc: Hippocampus) -> None:
    add(svc, "pool", "Raise the redis connection pool", topics_of(svc, MESSAGE)[:3])
    for i in range(5):
        out = say(svc, "c1", f"{MESSAGE} {i}", i * 0.1)
    assert out.insights == []
    assert out.held_back is not None and "momentum" in out.held_back
    assert out.candidates is None  # held back before retrieval looked


def test_the_confidence_bar_holds_weak_offers_back(
    tmp_path: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    strict = service(tmp_path, spacy_extractor, thresholds={"debugging": 0.999})
    try:
        add(strict, "pool", "Raise the redis connection pool", topics_of(strict, MESSAGE)[:3])
        assert say(strict, "c1", MESSAGE, 0).insights == []
    finally:
        strict.close()


def test_a_need_the_bar_held_back_brings_the_bar_down(
    tmp_path: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    strict = service(tmp_path, spacy_extractor, thresholds={"debugging": 0.95})
    try:
        add(strict, "pool", "Raise the redis connection pool", topics_of(strict, MESSAGE)[:3])
        add(strict, "dash", "Grafana dashboards for the deploy", ["grafana", "dashboard"])
        assert say(strict, "c1", MESSAGE, 0).insights == []  # held back by the bar alone
        say(strict, "c1", "still looking at it", 2)

        def learned() -> tuple[float | None, list[float]]:
            model = strict.store.get_states(C, ["surface:model"])["surface:model"]
            bar = model["thresholds"]["thresholds"].get("debugging")
            return bar, model["confidence"]["weights"]

        _, weights = learned()
        # A recall of what no gate weighed teaches the bar nothing.
        strict.recall(C, "grafana dashboard", limit=1, conversation_id="c1", learn=False)
        assert learned() == (None, weights)
        # The conversation asks for the memory the bar kept from it: the bar was
        # too high. The confidence model hears only how offers fared.
        strict.recall(C, "redis connection pool", limit=1, conversation_id="c1", learn=False)
        bar, after = learned()
        assert bar == pytest.approx(0.95 - 0.02 * 0.8)
        assert after == weights
        # A recall that finds something offered before missed nothing, whatever
        # else the bar held back.
        state = strict.store.get_states(C, ["conversation:c1"])["conversation:c1"]
        state["surfaced"] = [{"memory_id": "dash", "surfacing_id": "s1", "message": 1}]
        strict.store.put_states(C, {"conversation:c2": {**state, "id": "c2"}})
        found = strict.store.get_memories(C, ["dash", "pool"])
        strict.surfacer.explicit_recall(C, "c2", [found["dash"], found["pool"]])
        assert learned() == (bar, after)
    finally:
        strict.close()


def test_at_most_three_insights_per_message(svc: Hippocampus) -> None:
    topics = topics_of(svc, MESSAGE)[:3]
    for i in range(6):
        add(svc, f"m{i}", f"Note {i}: the redis connection pool at checkout load", topics)
    assert len(say(svc, "c1", MESSAGE, 0).insights) == 3


OTHER_JOB = "the billing export job fails: redis hits a pool limit on the nightly run"
POOL_BUG = "checkout fails: the redis connection pool is exhausted under load"


def test_a_dismissal_holds_a_memory_back_where_the_talk_is_on_the_same_topics_only(
    tmp_path: Path, spacy_extractor: SpacyConceptExtractor
) -> None:
    # Fixed bars and no bandit: only the gates this test is about decide.
    svc = service(tmp_path, spacy_extractor, learn=False)
    try:
        add(svc, "pool", "Redis pool exhausted at checkout", ["redis", "pool", "exhaust", "fail"])
        first = say(svc, "c1", OTHER_JOB, 0).insights[0]
        out = svc.engage(C, first.surfacing_id, "dismissed", now=T0 + timedelta(minutes=1))
        assert out.memory.retrieval.recent_dismissals == 2.0
        assert out.memory.retrieval.confidence == pytest.approx(0.35)
        # Marked irrelevant for what that conversation was about, not for its
        # type, and not for the memory's own topics, which made it look relevant.
        (context,) = out.memory.retrieval.irrelevant_contexts
        assert context.startswith("about:") and "billing export job" in context
        assert not {"redis", "fail"} & set(context.removeprefix("about:").split("|"))
        # Another debugging conversation on the same job: held back.
        assert say(svc, "c2", OTHER_JOB, 10).insights == []
        # A debugging conversation describing the memory's own bug: offered.
        bug = say(svc, "c3", POOL_BUG, 20)
        assert [i.memory.id for i in bug.insights] == ["pool"]
        # Dismissals still add up: past 2 recent ones, it is held back everywhere.
        svc.engage(C, bug.insights[0].surfacing_id, "ignored", now=T0 + timedelta(minutes=21))
        assert say(svc, "c4", POOL_BUG, 30).insights == []
    finally:
        svc.close()


def test_feedback_not_helpful_marks_the_memory_irrelevant_for_the_context_given(
    svc: Hippocampus,
) -> None:
    add(svc, "pool", "Redis pool exhausted at checkout", ["redis", "pool", "exhaust", "fail"])
    after = svc.feedback(C, "pool", helpful=False, context=["billing export job", "redis"])
    assert after.retrieval.irrelevant_contexts == ["about:billing export job"]


def test_use_strengthens_edges_to_the_conversation_and_is_recorded_once(
    svc: Hippocampus,
) -> None:
    conversation = set(svc.extractor.extract_many([MESSAGE])[0].concepts)
    known = sorted(conversation)[:2]
    add(svc, "pool", "Raise the redis connection pool", [*known, "pool"])
    insight = say(svc, "c1", MESSAGE, 0).insights[0]
    out = svc.engage(C, insight.surfacing_id, "used", now=T0 + timedelta(minutes=1))
    assert out.memory.retrieval.confidence == pytest.approx(0.6)
    assert out.memory.retrieval.usage_count == 1
    assert out.memory.retrieval.review is not None
    about = {e.target: e.weight for e in svc.store.edges_of(C, "pool") if e.type == EdgeType.ABOUT}
    created = conversation - set(known)
    assert created and all(about[c] == pytest.approx(0.3) for c in created)
    with pytest.raises(ConflictError):
        svc.engage(C, insight.surfacing_id, "helpful")
    with pytest.raises(NotFoundError):
        svc.engage(C, "nope", "used")
    with pytest.raises(InvalidInputError):
        svc.engage(C, insight.surfacing_id, "loved")


def associated(svc: Hippocampus, a: str, b: str) -> bool:
    return any(
        e.type == EdgeType.ASSOCIATED and {e.source, e.target} == {a, b}
        for e in svc.store.edges_of(C, a)
    )


def about(svc: Hippocampus, mid: str) -> set[str]:
    return {e.target for e in svc.store.edges_of(C, mid) if e.type == EdgeType.ABOUT}


def use_all(svc: Hippocampus, out: MessageOutcome, minute: float) -> set[str]:
    for insight in out.insights:
        svc.engage(C, insight.surfacing_id, "used", now=T0 + timedelta(minutes=minute))
    return {i.memory.id for i in out.insights}


def test_memories_used_in_one_conversation_on_different_subjects_are_not_linked(
    svc: Hippocampus,
) -> None:
    add(svc, "freeze", "No deploys on Friday: the freeze holds", ["friday", "deploy", "freeze"])
    add(svc, "s3", "S3 upload access denied: the role lacked it", ["s3", "access", "upload"])
    said = "friday deploy freeze: can we ship the payment hotfix"
    assert use_all(svc, say(svc, "c1", said, 0), 1) == {"freeze"}
    say(svc, "c1", "fine, it waits until monday", 3)
    say(svc, "c1", "another thing while you are here", 6)
    # One word of the freeze again ("deploy") does not put the talk back on it.
    s3_talk = "the s3 upload fails with access denied since the deploy"
    assert use_all(svc, say(svc, "c1", s3_talk, 9), 10) == {"s3"}
    # Used in one conversation, but on different subjects: not about each other,
    # and neither learned the other's words.
    assert not associated(svc, "freeze", "s3")
    assert "payment hotfix" in about(svc, "freeze") and not {"s3", "upload"} & about(svc, "freeze")
    assert not {"friday", "payment hotfix", "monday"} & about(svc, "s3")
    # A recall about the S3 error reaches the freeze by no path of the graph.
    hits = {h.memory.id: h for h in svc.recall(C, "s3 upload access denied", learn=False).hits}
    assert not hits["freeze"].graph


def test_memories_used_on_what_the_conversation_is_about_are_linked(svc: Hippocampus) -> None:
    add(svc, "pool", "Raise the redis pool size", ["redis", "pool", "exhaust"])
    add(svc, "load", "Checkout load tests need a warm cache", ["checkout", "load", "fail"])
    used = use_all(svc, say(svc, "c1", POOL_BUG, 0), 1)
    assert used == {"pool", "load"}
    assert associated(svc, "pool", "load")


def test_a_memory_due_for_review_says_so(svc: Hippocampus) -> None:
    add(svc, "pool", "Raise the redis connection pool", topics_of(svc, MESSAGE)[:3])
    (insight,) = say(svc, "c1", MESSAGE, 60 * 24 * 30).insights
    assert insight.reason.endswith("; due for review.")


def test_an_explicit_recall_counts_what_was_surfaced_before_and_the_lead(
    svc: Hippocampus,
) -> None:
    add(svc, "pool", "Raise the redis connection pool", topics_of(svc, MESSAGE)[:3])
    say(svc, "c1", MESSAGE, 0)
    say(svc, "c1", "still looking at it", 2)
    say(svc, "c1", "how did we fix the redis pool last time", 4)
    result = svc.recall(C, "redis connection pool fix", conversation_id="c1", learn=False)
    assert [(b.memory_id, b.lead) for b in result.surfaced_before] == [("pool", 2)]
    metrics = svc.surfacing_metrics(C)
    assert metrics.explicit_recalls == 1 and metrics.recall_before_search == 1.0
    assert metrics.median_lead_time == 2
    assert metrics.surfaced == 1 and metrics.precision == 0.0


def test_bad_messages_are_refused_with_their_field(svc: Hippocampus) -> None:
    for kwargs, field in [
        ({"conversation_id": "a/b", "text": "x"}, "conversation_id"),
        ({"conversation_id": "c", "text": "  "}, "text"),
        ({"conversation_id": "c", "text": "x", "conversation_type": "chatty"}, "conversation_type"),
        ({"conversation_id": "c", "text": "x", "role": "bad\nrole"}, "role"),
    ]:
        with pytest.raises(InvalidInputError) as e:
            svc.message(C, **kwargs)  # type: ignore[arg-type]
        assert e.value.field == field


def test_what_such_conversations_came_to_need_is_offered_before_it_is_said(
    svc: Hippocampus,
) -> None:
    add(svc, "pg", "Postgres deadlock on the orders row lock", ["postgres", "deadlock", "row lock"])
    add(
        svc, "react", "React hydration loop in the login form", ["react", "hydration", "login form"]
    )
    add(svc, "redis", "Redis cache misses climb when the ttl is short", ["redis", "cache miss"])
    talks = {
        "pg": ("the redis cache misses keep climbing", "postgres deadlock row lock"),
        "react": ("the oauth token refresh fails", "react hydration login form"),
    }
    minute = 0.0
    for n in range(12):
        for need, (opening, query) in talks.items():
            conversation = f"{need}-{n}"
            for text in (opening, "still looking at the graphs", "nothing obvious yet", "hmm"):
                say(svc, conversation, text, minute)
                minute += 2
            svc.recall(C, query, limit=1, conversation_id=conversation, learn=False)
            minute += 60

    out = say(svc, "fresh", "the redis cache misses keep climbing", minute)
    foreseen = {i.memory.id: i for i in out.insights if "postgres" in i.foreseen_topics}
    assert "pg" in foreseen and "react" not in {i.memory.id for i in out.insights}
    assert {"postgres", "deadlock"} <= set(out.conversation.predicted_topics)
    # It says so, and which topic of the conversation foresaw it; what it matched
    # is only what was said.
    pg = foreseen["pg"]
    assert pg.foreseen and "postgres" not in pg.matched_topics
    said = set(topics_of(svc, "the redis cache misses keep climbing"))
    assert set(pg.matched_topics) <= said
    source = re.search(r'conversations on "([^"]+)" came to need "postgres"', pg.reason)
    assert source is not None and source.group(1) in said
    # A foreseen offer is judged against its own bar, which its engagement moves.
    engaged = svc.engage(C, foreseen["pg"].surfacing_id, "dismissed")
    model = svc.store.get_states(C, ["surface:model"])["surface:model"]
    assert model["thresholds"]["thresholds"]["debugging+foreseen"] == engaged.threshold
    assert "debugging" not in model["thresholds"]["thresholds"]


class Reading(SpacyConceptExtractor):
    """The spaCy extractor, noting every text it reads."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[str] = []

    def extract_many(self, texts: Sequence[str]) -> list[Extraction]:
        self.read.extend(texts)
        return super().extract_many(texts)


def test_each_message_is_read_once_however_many_later_searches_ask_about_it(
    tmp_path: Path,
) -> None:
    extractor = Reading()
    svc = service(tmp_path, extractor)
    try:
        add(svc, "pool", "Raise the redis connection pool before checkout load tests", ["redis"])
        extractor.read.clear()
        said = [
            MESSAGE,
            "the payment worker retries every failed webhook twice",
            "grafana shows the queue depth climbing after the deploy",
        ]
        for n, text in enumerate(said):
            say(svc, "c1", text, 2 * n)
        # Every search asks about the recent messages together; none reads them again.
        assert [t for t in extractor.read if t in said] == said
        assert not [t for t in extractor.read if said[0] in t and t != said[0]]
    finally:
        svc.close()
