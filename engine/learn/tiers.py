"""Tiers: which memories stay in rotation.

- **active**: retrieved.
- **archived**: rarely used and old; searched only when a request asks for it.
  Used again since it was archived (its ``last_used`` after the edit that
  archived it), it comes back.
- **quarantined**: its quality collapsed, or people kept dismissing it; never
  returned. Only an explicit edit brings it back.

Pure: :func:`tier_change` takes the memory and ``now`` and says where it goes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

from engine.model import Memory, Tier, faded_dismissals


class TierPolicy(BaseModel):
    """When memories move between tiers.

    Attributes:
        archive_after_days: a memory neither used nor edited for this long...
        archive_max_uses: ...and used at most this many times is archived.
        quarantine_dismissals: recent dismissals at which a memory is
            quarantined (a dismissal counts 2, an ignore 1), faded as surfacing
            fades them (halved every ``dismissal_half_life_days``).
        quarantine_quality: a quality score below this is a collapse.
        exempt_sources: sources whose memories the policy never moves (records
            an application indexes follow its status, not their use).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    archive_after_days: float = Field(default=180.0, gt=0.0)
    archive_max_uses: int = Field(default=1, ge=0)
    quarantine_dismissals: float = Field(default=4.0, gt=0.0)
    dismissal_half_life_days: float = Field(default=7.0, gt=0.0)
    quarantine_quality: float = Field(default=0.15, ge=0.0, le=1.0)
    exempt_sources: tuple[str, ...] = ("resource",)


@dataclass(frozen=True)
class TierChange:
    """A memory moving tier, and why (in words a person can read)."""

    memory_id: str
    before: Tier
    after: Tier
    reason: str


def last_activity(memory: Memory) -> datetime:
    """When the memory was last used, edited or stored, whichever is latest."""
    moments = [memory.updated_at, memory.created_at]
    if memory.retrieval.last_used is not None:
        moments.append(memory.retrieval.last_used)
    return max(moments)


def tier_change(
    memory: Memory, now: datetime, policy: TierPolicy, *, quality_exempt: bool = False
) -> TierChange | None:
    """Where the policy moves ``memory`` at ``now``; ``None`` when it stays.

    Args:
        quality_exempt: its source is trusted enough that low quality alone never
            quarantines it (see ``QualityConfig.exempt_trust``).
    """
    if memory.source is not None and memory.source in policy.exempt_sources:
        return None
    tier = Tier(memory.tier)
    if tier == Tier.QUARANTINED:
        return None
    r = memory.retrieval
    dismissals = faded_dismissals(memory, now, policy.dismissal_half_life_days)
    if dismissals >= policy.quarantine_dismissals:
        return TierChange(
            memory.id,
            tier,
            Tier.QUARANTINED,
            f"repeatedly dismissed (recent dismissals {dismissals:.2g})",
        )
    q = r.quality_score
    if not quality_exempt and q is not None and q < policy.quarantine_quality:
        return TierChange(
            memory.id,
            tier,
            Tier.QUARANTINED,
            f"quality collapsed to {q:.2f} (below {policy.quarantine_quality:g})",
        )
    idle = now - last_activity(memory)
    stale = idle > timedelta(days=policy.archive_after_days)
    if tier == Tier.ACTIVE and stale and r.usage_count <= policy.archive_max_uses:
        return TierChange(
            memory.id,
            tier,
            Tier.ARCHIVED,
            f"used {r.usage_count} time{'s' if r.usage_count != 1 else ''}, "
            f"idle for {idle.days} days",
        )
    # Archiving (by this policy or by hand) sets updated_at: a use after it is new.
    if tier == Tier.ARCHIVED and r.last_used is not None and r.last_used > memory.updated_at:
        return TierChange(memory.id, tier, Tier.ACTIVE, "used again since it was archived")
    return None


__all__ = ["TierChange", "TierPolicy", "last_activity", "tier_change"]
