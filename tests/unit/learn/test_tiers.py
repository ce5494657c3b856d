"""The tier policy: archive idle memories, quarantine bad ones, restore used ones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hippocampus.learn.tiers import TierPolicy, last_activity, lifecycle, tier_change
from hippocampus.model import Memory, RetrievalMeta, Tier

NOW = datetime(2026, 6, 1, tzinfo=UTC)
POLICY = TierPolicy()


def _memory(
    *,
    age_days: float = 10,
    tier: Tier = Tier.ACTIVE,
    source: str | None = None,
    **retrieval: object,
) -> Memory:
    at = NOW - timedelta(days=age_days)
    return Memory(
        id="m",
        collection="c",
        content="text",
        tier=tier,
        source=source,
        created_at=at,
        updated_at=at,
        content_hash="h",
        retrieval=RetrievalMeta.model_validate(retrieval),
    )


def test_a_fresh_memory_stays_active() -> None:
    assert tier_change(_memory(), NOW, POLICY) is None


def test_old_and_rarely_used_memories_are_archived() -> None:
    change = tier_change(_memory(age_days=200, usage_count=1), NOW, POLICY)
    assert change is not None and change.after == Tier.ARCHIVED
    assert change.reason == "used 1 time, idle for 200 days"


def test_old_but_well_used_or_recently_used_memories_stay_active() -> None:
    assert tier_change(_memory(age_days=400, usage_count=5), NOW, POLICY) is None
    recent = _memory(age_days=400, usage_count=0, last_used=NOW - timedelta(days=3))
    assert tier_change(recent, NOW, POLICY) is None


def test_repeated_dismissals_quarantine() -> None:
    change = tier_change(_memory(recent_dismissals=4.0), NOW, POLICY)
    assert change is not None and change.after == Tier.QUARANTINED
    assert "dismissed" in change.reason
    assert tier_change(_memory(recent_dismissals=3.0), NOW, POLICY) is None


def test_dismissals_that_have_faded_no_longer_quarantine() -> None:
    # Dismissed twice (4) two weeks ago: halved twice, 1 is left.
    old = _memory(recent_dismissals=4.0, dismissed_at=NOW - timedelta(days=14))
    assert tier_change(old, NOW, POLICY) is None
    fresh = _memory(recent_dismissals=4.0, dismissed_at=NOW)
    assert tier_change(fresh, NOW, POLICY) is not None


def test_quality_collapse_quarantines_unless_the_source_is_exempt() -> None:
    collapsed = _memory(quality_score=0.1)
    change = tier_change(collapsed, NOW, POLICY)
    assert change is not None and change.after == Tier.QUARANTINED
    assert change.reason == "quality collapsed to 0.10 (below 0.15)"
    assert tier_change(collapsed, NOW, POLICY, quality_exempt=True) is None
    assert tier_change(_memory(quality_score=0.2), NOW, POLICY) is None


def test_archived_memories_used_since_come_back_and_quarantined_ones_stay() -> None:
    archived = _memory(age_days=300, tier=Tier.ARCHIVED, last_used=NOW - timedelta(days=1))
    change = tier_change(archived, NOW, POLICY)
    assert change is not None and change.after == Tier.ACTIVE
    untouched = _memory(age_days=300, tier=Tier.ARCHIVED, last_used=NOW - timedelta(days=301))
    assert tier_change(untouched, NOW, POLICY) is None
    quarantined = _memory(age_days=300, tier=Tier.QUARANTINED, last_used=NOW)
    assert tier_change(quarantined, NOW, POLICY) is None


def test_records_of_an_application_are_never_moved() -> None:
    record = _memory(age_days=900, source="resource", recent_dismissals=10.0)
    assert tier_change(record, NOW, POLICY) is None


def test_the_policy_is_configurable() -> None:
    strict = TierPolicy(archive_after_days=30, archive_max_uses=3)
    change = tier_change(_memory(age_days=40, usage_count=3), NOW, strict)
    assert change is not None and change.after == Tier.ARCHIVED


def test_last_activity_is_the_latest_of_use_edit_and_creation() -> None:
    m = _memory(age_days=100, last_used=NOW - timedelta(days=5))
    assert last_activity(m) == NOW - timedelta(days=5)


def test_high_useful_use_promotes_and_a_promoted_memory_is_never_archived() -> None:
    earned = {"usage_count": 5, "usefulness": 0.8, "confidence": 0.9}
    change = tier_change(_memory(**earned), NOW, POLICY)
    assert change is not None and change.promote is True
    assert change.after == Tier.ACTIVE and change.stages == ("active", "promoted")
    assert tier_change(_memory(**{**earned, "usefulness": 0.7}), NOW, POLICY) is None
    promoted = _memory(age_days=400, **earned, promoted_at=NOW - timedelta(days=300))
    assert lifecycle(promoted) == "promoted"
    assert tier_change(promoted, NOW, POLICY) is None  # idle a year, still in rotation


def test_a_promoted_memory_that_stops_helping_loses_the_mark() -> None:
    fallen = _memory(
        usage_count=9, usefulness=0.4, confidence=0.9, promoted_at=NOW - timedelta(days=3)
    )
    change = tier_change(fallen, NOW, POLICY)
    assert change is not None and change.promote is False
    assert change.stages == ("promoted", "active")
