"""The seed's numbers for surfacing and engagement, the schedulers, and what the
learned models do with evidence."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import pytest

from hippocampus.model import Memory, RetrievalMeta, content_hash
from hippocampus.retrieve import DEFAULT_RECIPE, RECIPES
from hippocampus.schedule import FsrsScheduler, SeedScheduler, seed_decay_score
from hippocampus.surface.conversation import ConversationState, HeldBack, type_votes
from hippocampus.surface.predict import (
    PRIOR_WEIGHTS,
    ConfidenceModel,
    KindBandit,
    NeedModel,
    ThresholdTuner,
    TopicModel,
    odds,
)
from hippocampus.surface.rules import (
    ENGAGEMENT_RULES,
    SurfaceConfig,
    engaged,
    faded_dismissals,
    irrelevant_context,
    irrelevant_here,
)

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def memory(**meta: object) -> Memory:
    return Memory(
        id="m1",
        collection="org:acme",
        content="Raise the pool size",
        created_at=T0,
        updated_at=T0,
        content_hash=content_hash("Raise the pool size"),
        retrieval=RetrievalMeta.model_validate(meta),
    )


def test_thresholds_start_at_the_seed_values() -> None:
    cfg = SurfaceConfig()
    assert cfg.threshold("debugging") == 0.6
    assert cfg.threshold("help-seeking") == 0.5
    assert cfg.threshold("exploration") == 0.8
    assert cfg.threshold("casual") == 0.9
    assert cfg.threshold("general") == 0.7
    assert (cfg.min_trigger_matches, cfg.max_momentum, cfg.max_recent_dismissals) == (2, 5.0, 2.0)
    assert cfg.max_insights == 3
    # Threshold tuning counts a dismissal as a miss, an ignore as half of one.
    assert {k: r.miss for k, r in ENGAGEMENT_RULES.items()} == {
        "used": 0.0,
        "helpful": 0.0,
        "ignored": 0.5,
        "dismissed": 1.0,
    }


def test_predictive_retrieval_asks_a_graph_only_candidate_for_the_seeds_path_strength() -> None:
    # Seed 004 calls its graph retrieval with minPathStrength 0.6 when predicting,
    # above the 0.5 that explicit recall keeps (the function's default).
    assert SurfaceConfig().min_path_strength == 0.6
    assert RECIPES[DEFAULT_RECIPE].min_path_strength == 0.5


@pytest.mark.parametrize("kind", ["used", "helpful"])
def test_use_raises_confidence_by_a_tenth_up_to_one_and_counts(kind: str) -> None:
    after = engaged(memory(confidence=0.5, usage_count=2), kind, "about:redis", T0, 7.0)
    assert after.retrieval.confidence == pytest.approx(0.6)
    assert after.retrieval.usage_count == 3
    assert after.retrieval.last_used == T0
    capped = engaged(memory(confidence=0.95), kind, "about:redis", T0, 7.0)
    assert capped.retrieval.confidence == 1.0


def test_ignored_costs_two_hundredths_down_to_a_floor_of_three_tenths() -> None:
    after = engaged(memory(confidence=0.5), "ignored", "ctx", T0, 7.0)
    assert after.retrieval.confidence == pytest.approx(0.48)
    assert after.retrieval.recent_dismissals == 1.0
    assert after.retrieval.usage_count == 0
    assert after.retrieval.irrelevant_contexts == []
    assert engaged(memory(confidence=0.31), "ignored", "ctx", T0, 7.0).retrieval.confidence == 0.3


def test_dismissed_costs_fifteen_hundredths_to_a_floor_of_two_tenths_and_marks_the_context() -> (
    None
):
    after = engaged(memory(confidence=0.5), "dismissed", "about:billing|export", T0, 7.0)
    assert after.retrieval.confidence == pytest.approx(0.35)
    assert after.retrieval.recent_dismissals == 2.0
    assert after.retrieval.dismissed_at == T0
    assert after.retrieval.irrelevant_contexts == ["about:billing|export"]
    assert engaged(memory(confidence=0.3), "dismissed", "c", T0, 7.0).retrieval.confidence == 0.2
    # A penalty never raises a confidence already below its floor.
    low = engaged(memory(confidence=0.1), "dismissed", "c", T0, 7.0)
    assert low.retrieval.confidence == pytest.approx(0.1)


def test_a_dismissal_marks_what_the_talk_was_about_apart_from_the_memory_s_own_topics() -> None:
    about = ["billing export", "nightly run", "redis", "fail"]
    context = irrelevant_context(about, ["redis", "fail", "pool"])
    assert context == "about:billing export|nightly run"
    # All of it when the talk was only on the memory's own topics; nothing said,
    # nothing marked.
    assert irrelevant_context(["redis"], ["redis"]) == "about:redis"
    assert irrelevant_context([], ["redis"]) == ""


def test_a_memory_is_irrelevant_where_half_of_a_marked_context_is_talked_about_again() -> None:
    marked = ["debugging:debugging", "about:billing export|nightly run|job|run"]
    # The old mark by conversation type is history: it holds nothing back.
    assert irrelevant_here(marked[:1], ["debugging", "redis"]) is None
    assert irrelevant_here(marked, ["billing export", "nightly run", "redis"]) == marked[1]
    assert irrelevant_here(marked, ["checkout", "redis", "pool", "job"]) is None
    # Weighed by how specific each topic is: the stock words alone are not enough.
    stock = {"job": 0.1, "run": 0.1}
    assert irrelevant_here(marked, ["job", "run", "redis"], lambda t: stock.get(t, 1.0)) is None
    assert irrelevant_here(marked, ["job", "run", "redis"]) == marked[1]


def test_recent_dismissals_halve_every_half_life() -> None:
    m = memory(recent_dismissals=4.0, dismissed_at=T0)
    assert faded_dismissals(m, T0, 7.0) == 4.0
    assert faded_dismissals(m, T0 + timedelta(days=7), 7.0) == pytest.approx(2.0)
    assert faded_dismissals(m, T0 + timedelta(days=14), 7.0) == pytest.approx(1.0)
    # A new dismissal adds to what is left, not to the old count.
    again = engaged(m, "ignored", "c", T0 + timedelta(days=7), 7.0)
    assert again.retrieval.recent_dismissals == pytest.approx(3.0)


@pytest.mark.parametrize("kind", ["used", "helpful"])
def test_a_use_clears_recent_dismissals_and_keeps_the_contexts_marked(kind: str) -> None:
    m = engaged(memory(), "dismissed", "about:billing export", T0, 7.0)
    m = engaged(m, "ignored", "", T0 + timedelta(hours=1), 7.0)
    assert faded_dismissals(m, T0 + timedelta(hours=2), 7.0) > SurfaceConfig().max_recent_dismissals
    after = engaged(m, kind, "about:redis", T0 + timedelta(hours=2), 7.0)
    assert faded_dismissals(after, T0 + timedelta(hours=2), 7.0) == 0.0
    assert after.retrieval.irrelevant_contexts == ["about:billing export"]
    # Turned down again after that: counted from nothing.
    again = engaged(after, "dismissed", "about:checkout", T0 + timedelta(hours=3), 7.0)
    assert again.retrieval.recent_dismissals == 2.0


def test_seed_decay_score_is_days_since_use_over_uses_plus_one() -> None:
    m = memory(usage_count=4, last_used=T0)
    assert seed_decay_score(m, T0 + timedelta(days=10)) == pytest.approx(2.0)
    seed = SeedScheduler()
    # Due at 0.7: 3.5 days with 4 uses.
    assert seed.urgency(m, T0 + timedelta(days=3.4)) < 1.0
    assert seed.urgency(m, T0 + timedelta(days=3.5)) == pytest.approx(1.0)


def test_fsrs_helpful_pushes_the_next_due_date_out_and_a_dismissal_pulls_it_in() -> None:
    fsrs = FsrsScheduler()
    first = fsrs.reviewed(memory(), "used", T0)
    assert first.stability == pytest.approx(fsrs.parameters[2])  # FSRS-6: a first "good"
    assert (first.reviews, first.lapses) == (1, 0)
    m = memory(review=first.model_dump())
    later = T0 + timedelta(days=2)
    helpful = fsrs.reviewed(m, "helpful", later)
    used = fsrs.reviewed(m, "used", later)
    dismissed = fsrs.reviewed(m, "dismissed", later)
    due_before = fsrs.due_at(first)
    assert fsrs.due_at(helpful) > fsrs.due_at(used) > due_before
    # A lapse: the next interval is shorter than the one before it.
    assert dismissed.stability < first.stability
    assert dismissed.lapses == 1 and dismissed.difficulty > first.difficulty
    assert used.reviews == 2
    # Retention 0.9: due exactly one stability after the review, when the
    # forgetting curve reaches 0.9.
    at_due = T0 + timedelta(days=first.stability)
    assert fsrs.urgency(m, at_due) == pytest.approx(1.0)
    assert fsrs.retrievability(first, at_due) == pytest.approx(0.9)


def test_fsrs_grows_a_kept_memory_s_interval_and_more_the_later_the_review() -> None:
    fsrs = FsrsScheduler()
    first = fsrs.reviewed(memory(), "used", T0)
    m = memory(review=first.model_dump())
    due = T0 + timedelta(days=first.stability)  # at R = 0.9
    on_time = fsrs.reviewed(m, "used", due)
    late = fsrs.reviewed(m, "used", due + timedelta(days=8))
    hard = fsrs.reviewed(m, "ignored", due)
    # A good review on time more than doubles the interval, as FSRS's defaults do;
    # a hard one still grows it, by less.
    assert on_time.stability > 2 * first.stability
    assert late.stability > on_time.stability
    assert first.stability < hard.stability < on_time.stability


def test_fsrs_reviews_are_the_fsrs_package_s_own() -> None:
    import fsrs as library

    ours = FsrsScheduler()
    theirs = library.Scheduler(learning_steps=(), relearning_steps=(), enable_fuzzing=False)
    card, _ = theirs.review_card(library.Card(), library.Rating.Good, T0)
    later = T0 + timedelta(days=5)
    card, _ = theirs.review_card(card, library.Rating.Easy, later)
    first = ours.reviewed(memory(), "used", T0)
    second = ours.reviewed(memory(review=first.model_dump()), "helpful", later)
    assert (second.stability, second.difficulty) == pytest.approx((card.stability, card.difficulty))


def test_fsrs_never_engaged_memories_come_back_after_the_first_interval() -> None:
    fsrs = FsrsScheduler(first_interval_days=6.0)
    m = memory(last_used=T0)
    assert fsrs.urgency(m, T0 + timedelta(days=3)) == pytest.approx(0.5)
    assert fsrs.urgency(m, T0 + timedelta(days=6)) == pytest.approx(1.0)
    with pytest.warns(DeprecationWarning, match="initial_stability"):
        old = FsrsScheduler(initial_stability=(0.5, 1.5, 6.0, 10.0))
    assert old.first_interval_days == 6.0
    with pytest.raises(ValueError, match="first_interval_days"):
        FsrsScheduler(first_interval_days=0.0)


def test_topic_model_learns_what_follows_what() -> None:
    model = TopicModel()
    for _ in range(5):
        model.learn(["redis", "cache"], ["postgres", "deadlock"])
        model.learn(["noise"], ["look"])
    predicted = [t for t, _ in model.predict([["redis"]], 5)]
    assert predicted[0] == "redis"  # what was just said persists
    assert set(predicted[1:3]) == {"postgres", "deadlock"}
    assert "look" not in predicted


def test_need_model_foresees_what_such_conversations_came_to_need() -> None:
    model = NeedModel()
    for i in range(8):
        # Cache talk ends up needing database memories; every memory says "fixed".
        model.learn([["redis", "look"], ["ttl"]], ["postgres", "deadlock", "fixed"])
        model.learn([["oauth", "look"]], ["react", "bundle size", "fixed"])
        model.learn([["kafka", "look"]], [f"once-{i}", "fixed"])
    ahead = [t for t, _ in model.predict([["redis"], ["look"]], 5)]
    assert set(ahead) == {"postgres", "deadlock"}  # not "fixed": needed everywhere
    assert [t for t, _ in model.predict([["oauth"]], 5)] == ["bundle size", "react"]
    # Said already: not foreseen; seen after one conversation only: not either.
    assert [t for t, _ in model.predict([["redis"], ["postgres"]], 5)] == ["deadlock"]
    assert model.predict([["kafka"]], 5) == []


def test_need_model_waits_for_evidence() -> None:
    model = NeedModel()
    for _ in range(6):
        model.learn([["redis"]], ["postgres"])
        model.learn([["oauth"]], ["react"])
    assert model.needs == 12 and model.predict([["redis"]], 5) == []  # too few needs yet
    for _ in range(4):
        model.learn([["redis"]], ["postgres"])
        model.learn([["oauth"]], ["react"])
    assert [t for t, _ in model.predict([["redis"]], 5)] == ["postgres"]


def test_confidence_model_reads_a_stored_model_without_the_newest_feature() -> None:
    old = ConfidenceModel.model_validate({"weights": list(PRIOR_WEIGHTS[:-1]), "updates": 3})
    assert old.weights == list(PRIOR_WEIGHTS)
    x = [1.0, 0.6, 0.0, 0.5, 0.5, 0.5, 0.0]  # features recorded before "foresight"
    assert old.predict(x) == old.predict([*x, 0.0])
    old.update(x, 1.0)
    assert len(old.weights) == len(PRIOR_WEIGHTS)


def test_the_kind_bandit_s_learned_rate_weighs_as_log_odds() -> None:
    assert odds(0.5) == 0.0 and odds(0.1) == pytest.approx(-math.log(9))
    assert -7.0 < odds(0.0) < odds(1.0) < 7.0  # finite at the ends
    model = ConfidenceModel()

    def offer(taste: float) -> list[float]:
        return [1.0, 0.6, 0.0, 0.5, 0.5, taste, 0.0, 0.0, odds(taste)]

    # A kind that lands one time in ten, against one that lands nine in ten:
    # the gap is the bandit's odds, not only the slow weight over 0-1.
    gap = math.log(model.predict(offer(0.9)) / (1 - model.predict(offer(0.9))))
    gap -= math.log(model.predict(offer(0.1)) / (1 - model.predict(offer(0.1))))
    assert gap == pytest.approx(2.0 * 0.8 + 2 * math.log(9))


def test_kind_bandit_learns_which_kind_lands_where() -> None:
    bandit = KindBandit()
    for _ in range(20):
        bandit.update("debugging", "bug_fix", 1.0)
        bandit.update("debugging", "decision", 0.0)
    assert bandit.mean("debugging", "bug_fix") > 0.9 > 0.1 > bandit.mean("debugging", "decision")
    assert bandit.mean("exploration", "decision") == 0.5  # untried: the prior
    rng = random.Random(1)
    draws = [bandit.sample("exploration", "decision", rng) for _ in range(200)]
    assert min(draws) < 0.2 and max(draws) > 0.8  # untried kinds get explored


def test_confidence_model_moves_toward_outcomes_from_its_prior() -> None:
    model = ConfidenceModel()
    assert model.weights == list(PRIOR_WEIGHTS)
    x = [1.0, 0.6, 0.0, 0.5, 0.5, 0.5, 0.0, 0.0]
    before = model.predict(x)
    for _ in range(50):
        model.update(x, 0.0)
    assert model.predict(x) < before


def test_threshold_tuner_rises_on_dismissals_and_falls_on_use() -> None:
    tuner = ThresholdTuner()
    kw = {"start": 0.6, "target": 0.2, "step": 0.02, "bounds": (0.3, 0.97)}
    tuner.update("debugging", 1.0, **kw)
    assert tuner.value("debugging", 0.6) == pytest.approx(0.6 + 0.02 * 0.8)
    for _ in range(100):
        tuner.update("debugging", 0.0, **kw)
    assert tuner.value("debugging", 0.6) == 0.3  # bounded
    assert tuner.value("casual", 0.9) == 0.9  # untouched types keep their start


def test_a_need_the_bar_held_back_brings_the_bar_down_as_a_dismissal_takes_it_up() -> None:
    tuner = ThresholdTuner()
    kw = {"start": 0.6, "target": 0.2, "step": 0.02, "bounds": (0.3, 0.97)}
    tuner.update("debugging", 1.0, **kw)
    tuner.missed("debugging", 1.0, **kw)
    assert tuner.value("debugging", 0.6) == pytest.approx(0.6)
    tuner.missed("debugging", 0.5, **kw)
    assert tuner.value("debugging", 0.6) == pytest.approx(0.6 - 0.5 * 0.02 * 0.8)
    for _ in range(100):
        tuner.missed("debugging", 1.0, **kw)
    assert tuner.value("debugging", 0.6) == 0.3  # bounded


def test_models_say_which_said_topic_led_to_a_predicted_one() -> None:
    topics = TopicModel()
    for _ in range(5):
        topics.learn(["redis"], ["postgres"])
        topics.learn(["oauth"], ["react"])
    assert topics.source([["oauth"], ["redis", "look"]], "postgres") == "redis"
    assert topics.source([["oauth"]], "postgres") is None
    needs = NeedModel()
    for _ in range(12):
        needs.learn([["redis", "look"]], ["postgres"])
        needs.learn([["oauth", "look"]], ["react"])
    assert needs.source([["look"], ["redis"]], "postgres") == "redis"
    assert needs.source([["look"]], "postgres") is None  # "look" precedes every need


def test_conversation_keeps_what_it_is_about_and_what_the_bar_held_back() -> None:
    state = ConversationState(id="c1")
    said = [
        (["friday", "freeze", "hotfix"], ["friday", "freeze", "hotfix"]),
        (["monday"], ["monday"]),
        (["s3", "upload", "deny"], ["s3", "upload"]),
    ]
    for i, (topics, concepts) in enumerate(said):
        state.observe(
            text="-",
            role="user",
            at=T0 + timedelta(minutes=i),
            topics=topics,
            concepts=concepts,
            domains=[],
            conversation_type=None,
            window=12,
        )
    assert state.about(2) == ["s3", "upload", "deny", "monday"]
    assert state.said() == {"friday", "freeze", "hotfix", "monday", "s3", "upload", "deny"}
    # The concepts said beside a memory's topics, not those said about other things.
    assert state.concepts_near(["upload", "acl"], 3) == ["s3", "upload"]
    assert state.concepts_near(["freeze"], 3) == ["friday", "freeze", "hotfix"]
    assert state.concepts_near(["freeze"], 2) == []

    def held(mid: str, message: int) -> HeldBack:
        return HeldBack(
            memory_id=mid,
            message=message,
            features=[1.0],
            conversation_type="debugging",
            foreseen=False,
        )

    state.hold([held("a", 1), held("b", 1)])
    state.hold([held("a", 2)])
    # Before the message that asks: as last weighed before it.
    assert {m: h.message for m, h in state.held_before(2).items()} == {"a": 1, "b": 1}
    assert {m: h.message for m, h in state.held_before(3).items()} == {"a": 2, "b": 1}
    state.hold([held(f"m{i}", 3) for i in range(70)])
    assert len(state.held) == 60 and state.held[-1].memory_id == "m69"


def test_conversation_type_momentum_and_domain() -> None:
    assert type_votes("the deploy is failing with an error") == {"debugging": 2}
    state = ConversationState(id="c1")
    for i, text in enumerate(["hi there", "the build is failing", "error again, a crash"]):
        state.observe(
            text=text,
            role="user",
            at=T0 + timedelta(seconds=30 * i),
            topics=[],
            concepts=[],
            domains=["devops"],
            conversation_type=None,
            window=12,
        )
    assert state.type == "debugging"
    assert state.domain == "devops"
    assert state.momentum == pytest.approx(2.0)  # 2 messages in one minute
    state.observe(
        text="ok",
        role="assistant",
        at=T0 + timedelta(minutes=2),
        topics=[],
        concepts=[],
        domains=[],
        conversation_type="casual",
        window=12,
    )
    assert state.type == "casual"  # given wins
    assert state.participants == ["user", "assistant"]
