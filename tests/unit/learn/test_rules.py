from datetime import UTC, datetime, timedelta

import pytest

from hippocampus.learn import (
    BARE_RETRIEVAL,
    REAL_USE,
    DecayPolicy,
    Reinforcement,
    co_use_updates,
    decay_period,
    decayed_weight,
    reinforced_weight,
)
from hippocampus.model import EdgeType

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def test_real_use_adds_a_tenth_and_new_edges_start_at_three_tenths() -> None:
    assert reinforced_weight(None, REAL_USE) == 0.3
    assert reinforced_weight(0.3, REAL_USE) == pytest.approx(0.4)


def test_real_use_caps_at_one() -> None:
    assert reinforced_weight(0.95, REAL_USE) == 1.0
    assert reinforced_weight(1.0, REAL_USE) == 1.0


def test_bare_retrieval_moves_no_weight_and_creates_no_edge() -> None:
    weight: float | None = 0.3
    for _ in range(1000):
        weight = reinforced_weight(weight, BARE_RETRIEVAL)
    assert weight == 0.3
    assert reinforced_weight(None, BARE_RETRIEVAL) is None
    assert BARE_RETRIEVAL.delta < REAL_USE.delta


def test_weaker_evidence_never_lowers_a_strong_edge() -> None:
    assert reinforced_weight(0.9, BARE_RETRIEVAL) == 0.9


def test_a_rule_that_may_not_create_leaves_missing_edges_missing() -> None:
    assert (
        reinforced_weight(None, Reinforcement(delta=0.1, cap=1, initial=0.3, create=False)) is None
    )


def test_decay_removes_five_hundredths_after_six_months_unused() -> None:
    policy = DecayPolicy()
    old = NOW - timedelta(days=183)
    assert decayed_weight(0.5, old, NOW, policy) == pytest.approx(0.45)


def test_decay_leaves_edges_used_within_six_months() -> None:
    assert decayed_weight(0.5, NOW - timedelta(days=179), NOW, DecayPolicy()) == 0.5


def test_six_months_are_the_seeds_six_30_day_months_and_idle_must_exceed_them() -> None:
    assert decayed_weight(0.5, NOW - timedelta(days=180), NOW, DecayPolicy()) == 0.5
    idle = NOW - timedelta(days=180, seconds=1)
    assert decayed_weight(0.5, idle, NOW, DecayPolicy()) == pytest.approx(0.45)
    assert DecayPolicy().edge_types == (EdgeType.ASSOCIATED,)


def test_decay_never_goes_below_the_floor() -> None:
    old = NOW - timedelta(days=400)
    assert decayed_weight(0.12, old, NOW, DecayPolicy()) == pytest.approx(0.1)
    assert decayed_weight(0.1, old, NOW, DecayPolicy()) == 0.1


def test_decay_period_is_one_utc_day() -> None:
    assert decay_period(NOW) == decay_period(NOW + timedelta(hours=11))
    assert decay_period(NOW) != decay_period(NOW + timedelta(hours=12))


def test_co_use_pairs_every_memory_and_links_each_to_the_anchors() -> None:
    updates = co_use_updates(
        ["b", "a", "c", "a"], NOW, REAL_USE, anchors=[(EdgeType.ABOUT, "redis")]
    )
    pairs = {(u.source, u.target) for u in updates if u.type == EdgeType.ASSOCIATED}
    assert pairs == {("a", "b"), ("a", "c"), ("b", "c")}
    about = {u.source for u in updates if u.type == EdgeType.ABOUT}
    assert about == {"a", "b", "c"}
    assert all(u.delta == 0.1 and u.cap == 1.0 and u.initial == 0.3 for u in updates)
    assert all(u.at == NOW for u in updates)
