"""Tiers: which memories stay in rotation.

- **active**: retrieved.
- **archived**: rarely used and old; searched only when a request asks for it.
  Used again since it was archived (its ``last_used`` after the edit that
  archived it), it comes back.
- **quarantined**: its quality collapsed, or people kept dismissing it; never
  returned. Only an explicit edit brings it back.

Within the active tier a memory may be **promoted** (the seed's lifecycle: NEW →
ACTIVE → IMPROVED by feedback → PROMOTED by high usage): used at least
``promote_uses`` times, usefulness at least ``promote_usefulness`` and
confidence at least ``promote_confidence``. It is retrieved like any active
memory and never archived for idleness: what proved itself stays in rotation.
It loses the mark when its usefulness or confidence falls below
``demote_below``, or when it leaves the active tier.

Pure: :func:`tier_change` takes the memory and ``now`` and says where it goes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

from hippocampus.model import Memory, Tier, faded_dismissals


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
        promote_uses / promote_usefulness / promote_confidence: what promotes
            an active memory.
        demote_below: a promoted memory whose usefulness or confidence falls
            below this loses the mark.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    archive_after_days: float = Field(default=180.0, gt=0.0)
    archive_max_uses: int = Field(default=1, ge=0)
    quarantine_dismissals: float = Field(default=4.0, gt=0.0)
    dismissal_half_life_days: float = Field(default=7.0, gt=0.0)
    quarantine_quality: float = Field(default=0.15, ge=0.0, le=1.0)
    exempt_sources: tuple[str, ...] = ("resource",)
    promote_uses: int = Field(default=5, ge=1)
    promote_usefulness: float = Field(default=0.75, ge=0.0, le=1.0)
    promote_confidence: float = Field(default=0.8, ge=0.0, le=1.0)
    demote_below: float = Field(default=0.5, ge=0.0, le=1.0)


@dataclass(frozen=True)
class TierChange:
    """A memory moving tier, and why (in words a person can read)."""

    memory_id: str
    before: Tier
    after: Tier
    reason: str
    promote: bool | None = None
    """True: promoted; False: loses the mark; None: the mark is unchanged (it
    goes, all the same, with a move out of the active tier)."""

    @property
    def stages(self) -> tuple[str, str]:
        """The lifecycle stages it moves between (``promoted`` within active)."""
        if self.promote is None:
            return self.before.value, self.after.value
        return ("active", "promoted") if self.promote else ("promoted", "active")


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
    promoted = r.promoted_at is not None
    if (
        tier == Tier.ACTIVE
        and not promoted
        and (
            r.usage_count >= policy.promote_uses
            and r.usefulness >= policy.promote_usefulness
            and r.confidence >= policy.promote_confidence
        )
    ):
        return TierChange(
            memory.id,
            tier,
            tier,
            f"promoted: used {r.usage_count} times, usefulness {r.usefulness:.2f}, "
            f"confidence {r.confidence:.2f}",
            promote=True,
        )
    if promoted and min(r.usefulness, r.confidence) < policy.demote_below:
        return TierChange(
            memory.id,
            tier,
            tier,
            f"no longer promoted: usefulness {r.usefulness:.2f}, confidence {r.confidence:.2f}",
            promote=False,
        )
    idle = now - last_activity(memory)
    stale = idle > timedelta(days=policy.archive_after_days)
    if tier == Tier.ACTIVE and not promoted and stale and r.usage_count <= policy.archive_max_uses:
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


def lifecycle(memory: Memory) -> str:
    """The memory's lifecycle stage: its tier, or ``promoted`` within active."""
    if memory.tier == Tier.ACTIVE and memory.retrieval.promoted_at is not None:
        return "promoted"
    return Tier(memory.tier).value


__all__ = ["TierChange", "TierPolicy", "last_activity", "lifecycle", "tier_change"]
